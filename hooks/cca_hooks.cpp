// cca_hooks.cpp - the functions PyTorch's pluggable-allocator hook loads
// (torch.cuda.memory.CUDAPluggableAllocator), with C linkage, over the
// per-device default allocators of libcca (cca_default: the same ones the
// Python package reads). torch checks no result (a NULL becomes a tensor at
// address 0): a failure must be a C++ exception, and only
// c10::OutOfMemoryError becomes torch.OutOfMemoryError. That type lives in
// the running torch's libc10, so this library, built without torch, throws
// it through a raiser registered at run time (cca_hooks_set_oom_raiser:
// cca_torch_oom.cpp, which cca.allocators.torch builds against the running
// torch); without one an OOM is a std::runtime_error, which torch turns into
// a RuntimeError, with the same text: torch's first line ("CUDA out of
// memory. Tried to allocate ...") and cca's report. The library stays C;
// only this shim is C++.
#include <atomic>
#include <cstdint>
#include <cstdio>
#include <mutex>
#include <stdexcept>
#include <string>

#include <cuda_runtime_api.h>
#include "cca.h"

#define CCA_HOOK extern "C" __attribute__((visibility("default")))

namespace {

constexpr int kMaxDevices = 64;

// Raised by torch's begin-allocate-to-pool hook (CUDA-graph capture), which
// also blocks the allocator cache below, so that only then do allocations
// take the slow path and ask the runtime whether their stream is
// capturing: no CUDA call, and no test, per allocation otherwise.
std::atomic<int> pools_open{0};
std::atomic<int> device_count{0};

// Throws c10::OutOfMemoryError with the text it is given; never returns
// (cca_torch_oom.cpp). Set once torch is loaded; read only on an OOM.
using oom_raiser_t = void (*)(const char *message);
std::atomic<oom_raiser_t> oom_raiser{nullptr};

// A size as torch's messages write it (c10's format_size).
std::string torch_size(size_t n)
{
    char b[64];
    if (n <= 1024) snprintf(b, sizeof b, "%zu bytes", n);
    else if (n <= 1048576) snprintf(b, sizeof b, "%.2f KiB", n / 1024.0);
    else if (n <= 1073741824) snprintf(b, sizeof b, "%.2f MiB", n / 1048576.0);
    else snprintf(b, sizeof b, "%.2f GiB", n / 1073741824.0);
    return b;
}

// torch's first line, from cca's figures (what it tried to obtain, the
// device, the cap, allocated and reserved-but-unallocated after
// release-and-retry), then cca's report.
std::string oom_text(const cca_oom_report_t &r)
{
    char text[2048] = "";
    cca_oom_report_format(&r, text, sizeof text);
    std::string msg = "CUDA out of memory. Tried to allocate " + torch_size(r.segment_size ? r.segment_size : r.rounded) +
                      ". GPU " + std::to_string(r.device) + " has a total capacity of " + torch_size(r.device_total) +
                      " of which " + torch_size(r.device_free) + " is free. ";
    if (r.cap) msg += torch_size(r.cap) + " allowed; ";
    msg += "Of the allocated memory " + torch_size(r.allocated) + " is allocated by PyTorch, and " +
           torch_size(r.reserved > r.allocated ? r.reserved - r.allocated : 0) +
           " is reserved by PyTorch but unallocated.\n";
    return msg + text;
}

[[noreturn]] __attribute__((noinline, cold)) void throw_oom(const cca_oom_report_t &r)
{
    std::string msg = oom_text(r);
    if (oom_raiser_t raise = oom_raiser.load(std::memory_order_acquire)) raise(msg.c_str());
    throw std::runtime_error(msg);
}

[[noreturn]] __attribute__((noinline, cold)) void throw_last_error()
{
    throw std::runtime_error(std::string("cca: ") + cca_last_error_string());
}

// The default allocators, cached here: one load on the hot path, read
// without a lock (cca_default never replaces a device's allocator).
std::atomic<cca_allocator_t *> cached[kMaxDevices];

// While a graph pool is open every slot holds kBlocked, which sends each
// call down the slow path (and its capture check). A slot only ever goes
// empty -> allocator (by compare-and-swap, so it cannot overwrite
// kBlocked) and, under pool_lock, anything -> kBlocked -> empty: no thread
// ever sees an allocator in a slot after begin has returned.
cca_allocator_t *const kBlocked = reinterpret_cast<cca_allocator_t *>(uintptr_t{1});
std::mutex pool_lock;

inline bool usable(const cca_allocator_t *a) { return reinterpret_cast<uintptr_t>(a) > 1; }

void cache_store(int device, cca_allocator_t *a)
{
    if ((unsigned)device >= (unsigned)kMaxDevices) return;
    cca_allocator_t *empty = nullptr;
    cached[device].compare_exchange_strong(empty, a, std::memory_order_acq_rel, std::memory_order_relaxed);
}

__attribute__((noinline)) cca_allocator_t *allocator_slow(int device)
{
    cca_allocator_t *a = nullptr;
    if (cca_default(device, &a) != CCA_OK) throw_last_error();
    cache_store(device, a);
    return a;
}

inline cca_allocator_t *allocator_of(int device)
{
    cca_allocator_t *a = (unsigned)device < (unsigned)kMaxDevices ? cached[device].load(std::memory_order_acquire) : nullptr;
    return __builtin_expect(usable(a), 1) ? a : allocator_slow(device);
}

// The allocator of `device` if it exists (never creates one).
inline cca_allocator_t *existing(int device)
{
    if ((unsigned)device >= (unsigned)kMaxDevices) return nullptr;
    cca_allocator_t *a = cached[device].load(std::memory_order_acquire);
    if (usable(a)) return a;
    a = nullptr;
    if (cca_default_existing(device, &a) == CCA_OK && a) cache_store(device, a);
    return a;
}

__attribute__((noinline, cold)) void refuse_capture(cudaStream_t stream)
{
    cudaStreamCaptureStatus st = cudaStreamCaptureStatusNone;
    cudaError_t e = cudaStreamIsCapturing(stream, &st);
    if (e != cudaSuccess) (void)cudaGetLastError();
    if (e == cudaSuccess && st == cudaStreamCaptureStatusNone) return;
    throw std::runtime_error("cca: CUDA graph pools are not supported by cca yet (torch.cuda.graph, "
                             "torch.compile(mode=\"reduce-overhead\"), torch.cuda.MemPool); use torch's native "
                             "allocator for graph capture");
}

}  // namespace

namespace {

// A failed cca_malloc: this thread's own OOM report names the size and the
// device (another thread may have failed on the allocator meanwhile), so
// the hot path keeps nothing alive across its call.
[[noreturn]] __attribute__((noinline, cold)) void malloc_failed(cca_status_t s)
{
    cca_oom_report_t r;
    if (s == CCA_ERROR_OUT_OF_MEMORY && cca_thread_last_oom_report(&r) == CCA_OK && r.verdict != CCA_OOM_NONE)
        throw_oom(r);
    throw_last_error();
}

// Everything but a cached allocator: the first allocation on a device, and
// every allocation while a graph pool is open (opening one blocks the
// cache), which checks for capture.
__attribute__((noinline)) void *malloc_slow(size_t size, int device, cudaStream_t stream)
{
    if (size == 0) return nullptr;
    if (pools_open.load(std::memory_order_relaxed) != 0) refuse_capture(stream);
    cca_allocator_t *a = allocator_of(device);
    void *p = nullptr;
    cca_status_t s = cca_malloc(a, &p, size, stream);
    if (s != CCA_OK) malloc_failed(s);
    return p;
}

}  // namespace

// torch: void*(size_t size, int device, cudaStream_t stream). Size 0 gives NULL.
CCA_HOOK void *cca_torch_malloc(size_t size, int device, cudaStream_t stream)
{
    cca_allocator_t *a = (unsigned)device < (unsigned)kMaxDevices ? cached[device].load(std::memory_order_acquire) : nullptr;
    if (__builtin_expect(!usable(a), 0)) return malloc_slow(size, device, stream);
    void *p;
    cca_status_t s = cca_malloc(a, &p, size, stream);   /* size 0: OK and NULL */
    if (__builtin_expect(s != CCA_OK, 0)) malloc_failed(s);
    return p;
}

// torch: void(void *ptr, size_t size, int device, cudaStream_t stream), with
// the size, device and allocation stream of the malloc. Called from tensor
// deleters, so it never throws; a failure stays in cca_last_error_string().
namespace {
__attribute__((noinline)) void free_slow(void *ptr, int device)
{
    cca_allocator_t *a = existing(device);
    if (a) (void)cca_free(a, ptr);
}
}  // namespace

CCA_HOOK void cca_torch_free(void *ptr, size_t size, int device, cudaStream_t stream)
{
    (void)size;
    (void)stream;
    cca_allocator_t *a = (unsigned)device < (unsigned)kMaxDevices ? cached[device].load(std::memory_order_acquire) : nullptr;
    if (__builtin_expect(!usable(a), 0)) return free_slow(ptr, device);
    cca_free(a, ptr);                                 /* NULL is a no-op there */
}

// torch: void(void *ptr, cudaStream_t stream), from any thread; the owner
// is whichever default allocator holds ptr.
CCA_HOOK void cca_torch_record_stream(void *ptr, cudaStream_t stream)
{
    for (int d = 0; d < kMaxDevices; d++) {
        cca_allocator_t *a = existing(d);
        if (!a) continue;
        cca_status_t s = cca_record_stream(a, ptr, stream);
        if (s == CCA_OK) return;
        if (s != CCA_ERROR_INVALID_POINTER) throw_last_error();
    }
    throw std::runtime_error("cca: record_stream of a pointer cca did not allocate");
}

// torch.cuda.empty_cache(): every device's cache.
CCA_HOOK void cca_torch_empty_cache(void)
{
    for (int d = 0; d < kMaxDevices; d++) {
        cca_allocator_t *a = existing(d);
        if (a) (void)cca_empty_cache(a);
    }
}

// torch calls it once with the number of devices; the allocators are made
// on first use of each device (making them here would touch every device).
CCA_HOOK void cca_torch_init(int count) { device_count.store(count, std::memory_order_relaxed); }

// torch.cuda.set_per_process_memory_fraction(fraction, device).
CCA_HOOK void cca_torch_set_memory_fraction(double fraction, int device)
{
    cca_allocator_t *a = allocator_of(device);
    if (fraction == 0.0)
        throw std::runtime_error("cca: a memory fraction of 0 leaves no memory; cca needs room for one 2 MiB segment");
    if (cca_set_memory_fraction(a, fraction) != CCA_OK) throw std::invalid_argument(cca_last_error_string());
}

// CUDA-graph pool hooks: begin raises the flag, end lowers it.
CCA_HOOK void cca_torch_begin_allocate_to_pool_c(int device)
{
    (void)device;
    std::lock_guard<std::mutex> g(pool_lock);
    pools_open.fetch_add(1, std::memory_order_relaxed);
    for (auto &c : cached) c.store(kBlocked, std::memory_order_seq_cst);   /* every allocation checks now */
}

CCA_HOOK void cca_torch_end_allocate_to_pool_c(int device)
{
    (void)device;
    std::lock_guard<std::mutex> g(pool_lock);
    if (pools_open.load(std::memory_order_relaxed) == 0) return;   /* an end without a begin */
    if (pools_open.fetch_sub(1, std::memory_order_relaxed) == 1)
        for (auto &c : cached) c.store(nullptr, std::memory_order_seq_cst);   /* the slow path caches again */
}

// The same with torch's C++ signatures (set_begin_allocate_to_pool,
// set_end_allocate_to_pool_fn, set_release_pool): a MempoolId_t is
// std::pair<unsigned long long, unsigned long long>, the filter a
// std::function. Their addresses are what torch's setters take.
#include <functional>
#include <utility>
using cca_mempool_id = std::pair<unsigned long long, unsigned long long>;

CCA_HOOK void cca_torch_begin_allocate_to_pool(int device, cca_mempool_id id, std::function<bool(cudaStream_t)> filter)
{
    (void)id;
    (void)filter;
    cca_torch_begin_allocate_to_pool_c(device);
}

CCA_HOOK void cca_torch_end_allocate_to_pool(int device, cca_mempool_id id)
{
    (void)id;
    cca_torch_end_allocate_to_pool_c(device);
}

CCA_HOOK void cca_torch_release_pool(int device, cca_mempool_id id)
{
    (void)device;
    (void)id;
}

// Which exception an OOM becomes: 1 once a raiser of c10::OutOfMemoryError
// is registered, 0 while it is std::runtime_error.
CCA_HOOK int cca_hooks_throws_torch_oom(void) { return oom_raiser.load(std::memory_order_acquire) != nullptr; }

// Registers (or, with NULL, removes) the function that throws torch's OOM
// exception with the message it is given.
CCA_HOOK void cca_hooks_set_oom_raiser(oom_raiser_t raise) { oom_raiser.store(raise, std::memory_order_release); }

// ---- CuPy's CFunctionAllocator ----------------------------------------------
// cupy.cuda.memory.CFunctionAllocator(param, malloc, free, owner) calls these
// from plain Cython code: no stream (the legacy default stream here), no
// check of the result, and an exception would abort the process. So they
// never throw: a failure is NULL, with cca's text (and, for an
// out-of-memory, its report's first line) in cca_last_error_string(). For
// default-stream programs; cca.allocators.cupy.install() allocates on
// CuPy's current stream instead.

CCA_HOOK void *cca_cupy_malloc(void *param, size_t size, int device) noexcept
{
    (void)param;
    cca_allocator_t *a = nullptr;
    void *p = nullptr;
    if (cca_default(device, &a) != CCA_OK || cca_malloc(a, &p, size, nullptr) != CCA_OK) return nullptr;
    return p;
}

CCA_HOOK void cca_cupy_free(void *param, void *ptr, int device) noexcept
{
    (void)param;
    cca_allocator_t *a = nullptr;
    if (ptr && cca_default(device, &a) == CCA_OK) cca_free(a, ptr);   /* a bad pointer: a status, nothing else */
}
