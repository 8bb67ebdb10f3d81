// torch_peer.cpp - PyTorch's CUDACachingAllocator behind a C interface
// (torch_peer.h), from a torch installation's headers and libc10_cuda.so.
#include "torch_peer.h"

#include <c10/core/AllocatorConfig.h>
#include <c10/cuda/CUDACachingAllocator.h>
#include <c10/cuda/CUDAStream.h>
#include <c10/cuda/PeerToPeerAccess.h>
#include <c10/util/Exception.h>
#include <torch/headeronly/version.h>

#include <cstdio>
#include <exception>
#include <string>

namespace alloc = c10::cuda::CUDACachingAllocator;

// libtorch_cuda registers the primary-context check c10 asks before it sets
// a device; driving c10 alone, register one: the driver's answer.
namespace c10::cuda::_internal {
C10_CUDA_API void setHasPrimaryContext(bool (*func)(DeviceIndex));
}

typedef int (*ctx_state_fn)(int, unsigned *, int *);
static ctx_state_fn ctx_state;                        // set once in torch_peer_create, before c10 may ask

static bool has_primary_context(c10::DeviceIndex device)
{
    unsigned flags = 0;
    int active = 0;
    return ctx_state && ctx_state(device, &flags, &active) == 0 && active;
}

static bool initialized;
static c10::DeleterFnPtr deleter;

static int failed(const std::exception &e, char *err, size_t len)
{
    std::string what = e.what();
    size_t nl = what.find('\n');                      // torch's messages end with a C++ trace: its first line
    std::snprintf(err, len, "%s", what.substr(0, nl).c_str());
    return -1;
}

extern "C" int torch_peer_create(int expandable, char *err, size_t len)
{
    try {
        c10::CachingAllocator::setAllocatorSettings(expandable ? "expandable_segments:True"
                                                               : "expandable_segments:False");
        if (!initialized) {
            int n = 0;
            if (cudaGetDeviceCount(&n) != cudaSuccess || n < 1) {
                std::snprintf(err, len, "no CUDA device");
                return -1;
            }
            void *fn = nullptr;
            cudaDriverEntryPointQueryResult q;
            if (cudaGetDriverEntryPointByVersion("cuDevicePrimaryCtxGetState", &fn, 12000, cudaEnableDefault, &q) ==
                cudaSuccess)
                ctx_state = (ctx_state_fn)fn;
            c10::cuda::_internal::setHasPrimaryContext(has_primary_context);
            alloc::init(n);
            c10::cuda::detail::init_p2p_access_cache(n);   // as torch's lazy init: expandable segments ask it
            deleter = alloc::get()->raw_deleter();
            initialized = true;
        }
        alloc::emptyCache();
        auto held = alloc::getDeviceStats(0).reserved_bytes[0].current;
        if (held != 0) {                              // the simulator's reset would forget what it still holds
            std::snprintf(err, len, "torch still holds %lld bytes after emptyCache: a run before did not free all",
                          (long long)held);
            return -1;
        }
        alloc::resetPeakStats(0);
        alloc::resetAccumulatedStats(0);
        return 0;
    } catch (const std::exception &e) {
        return failed(e, err, len);
    } catch (...) {
        std::snprintf(err, len, "torch threw something that is not a std::exception");
        return -1;
    }
}

extern "C" void torch_peer_destroy(void)
{
    try {
        if (initialized) alloc::emptyCache();
    } catch (...) {                                   // a failure here shows at the next create
    }
}

extern "C" int torch_peer_malloc(void **p, size_t size, cudaStream_t s, char *err, size_t len)
{
    try {
        *p = alloc::raw_alloc_with_stream(size, s);
        return 0;
    } catch (const c10::OutOfMemoryError &) {
        *p = nullptr;
        return 1;
    } catch (const std::exception &e) {
        *p = nullptr;
        return failed(e, err, len);
    }
}

extern "C" int torch_peer_free(void *p, char *err, size_t len)
{
    try {
        alloc::raw_delete(p);
        return 0;
    } catch (const std::exception &e) {
        return failed(e, err, len);
    }
}

extern "C" int torch_peer_record_stream(void *p, cudaStream_t s, char *err, size_t len)
{
    try {
        c10::cuda::CUDAStream stream = c10::cuda::getStreamFromExternal(s, 0);
        c10::DataPtr dp(p, p, deleter, c10::Device(c10::DeviceType::CUDA, 0));
        struct keep {                                 // the caller still owns p: never freed here, even if torch throws
            c10::DataPtr &d;
            ~keep() { (void)d.release_context(); }
        } k{dp};
        alloc::recordStream(dp, stream);
        return 0;
    } catch (const std::exception &e) {
        return failed(e, err, len);
    }
}

extern "C" size_t torch_peer_reserved(void)
{
    try {
        return (size_t)alloc::getDeviceStats(0).reserved_bytes[0].current;
    } catch (...) {
        return 0;
    }
}

extern "C" size_t torch_peer_peak_reserved(void)
{
    try {
        return (size_t)alloc::getDeviceStats(0).reserved_bytes[0].peak;
    } catch (...) {
        return 0;
    }
}

extern "C" const char *torch_peer_version(void) { return TORCH_VERSION; }
