// cca_torch_oom.cpp - throws torch's own out-of-memory exception for cca.
//
// Only c10::OutOfMemoryError becomes torch.OutOfMemoryError in Python, and
// its type lives in the running torch's libc10. So this one function is
// built against the headers and libc10 of the torch that is running: by
// cca.allocators.torch.install() on first use, cached per torch build
// (python/cca/allocators/torch_oom.py), or by hand:
//   c++ -std=c++17 -O2 -shared -fPIC -I$TORCH/include -L$TORCH/lib -lc10 \
//       -D_GLIBCXX_USE_CXX11_ABI=<torch._C._GLIBCXX_USE_CXX11_ABI> \
//       cca_torch_oom.cpp -o libcca_torch_oom.so
// libcca_hooks.so calls it through cca_hooks_set_oom_raiser, on an OOM only.
// It needs nothing of cca: no cca header, no CUDA header.
#include <cstdint>
#include <string>

#include <c10/util/Exception.h>

extern "C" __attribute__((visibility("default"))) [[noreturn]] void cca_torch_raise_oom(const char *message)
{
    throw c10::OutOfMemoryError(c10::SourceLocation{__func__, __FILE__, static_cast<uint32_t>(__LINE__)},
                                std::string(message ? message : "CUDA out of memory"));
}
