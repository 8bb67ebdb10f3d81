// test_hooks.cpp - libcca_hooks.so loaded by path and called through
// std::function exactly as torch's CUDAPluggableAllocator does: size 0,
// an OOM thrown with torch's prefix, free with the allocation stream,
// record_stream delaying reuse until the other stream's work is done,
// CUDA-graph capture refused only while the pool flag is up (also with
// another thread allocating meanwhile), empty_cache,
// the memory fraction; and the bytes seen by libcca's own default
// allocator (one cca per process). A plain program: "N passed, N failed".
// Usage: test_hooks PATH/libcca_hooks.so
#include <dlfcn.h>
#include <cstdio>
#include <cstring>
#include <functional>
#include <stdexcept>
#include <string>
#include <atomic>
#include <thread>
#include <utility>

#include <cuda_runtime_api.h>
#include "cca.h"
#include "cca_sim.h"

using MempoolId = std::pair<unsigned long long, unsigned long long>;

static int passed, failed;

#define CHECK(cond, what)                                                     \
    do {                                                                      \
        if (cond) {                                                           \
            passed++;                                                         \
        } else {                                                              \
            failed++;                                                         \
            std::printf("FAIL %s:%d: %s (%s)\n", __FILE__, __LINE__, what, #cond); \
        }                                                                     \
    } while (0)

template <typename F> static std::function<F> sym(void *h, const char *name)
{
    void *p = dlsym(h, name);
    if (!p) {
        std::printf("FAIL: %s not exported\n", name);
        failed++;
        return {};
    }
    return std::function<F>(reinterpret_cast<F *>(p));       // as torch's setters do
}

int main(int argc, char **argv)
{
    if (argc < 2) return 2;
    cca_sim_reset();
    cca_sim_set_capacity(0, 64u << 20);
    void *h = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);            // as ctypes.CDLL
    if (!h) {
        std::printf("FAIL dlopen: %s\n0 passed, 1 failed\n", dlerror());
        return 1;
    }
    auto alloc = sym<void *(size_t, int, cudaStream_t)>(h, "cca_torch_malloc");
    auto dealloc = sym<void(void *, size_t, int, cudaStream_t)>(h, "cca_torch_free");
    auto record = sym<void(void *, cudaStream_t)>(h, "cca_torch_record_stream");
    auto reset = sym<void()>(h, "cca_torch_empty_cache");
    auto init = sym<void(int)>(h, "cca_torch_init");
    auto fraction = sym<void(double, int)>(h, "cca_torch_set_memory_fraction");
    auto begin_pool = sym<void(int, MempoolId, std::function<bool(cudaStream_t)>)>(h, "cca_torch_begin_allocate_to_pool");
    auto end_pool = sym<void(int, MempoolId)>(h, "cca_torch_end_allocate_to_pool");
    auto release_pool = sym<void(int, MempoolId)>(h, "cca_torch_release_pool");
    if (failed) {
        std::printf("%d passed, %d failed\n", passed, failed);
        return 1;
    }
    cudaStream_t s1, s2;
    cudaStreamCreate(&s1);
    cudaStreamCreate(&s2);
    init(1);

    // size 0: NULL, no throw
    CHECK(alloc(0, 0, s1) == nullptr, "size 0 gives NULL");

    // one cca per process: the hook's bytes are libcca's default allocator's
    void *p = alloc(1 << 20, 0, s1);
    cca_allocator_t *a = nullptr;
    CHECK(p != nullptr && cca_default(0, &a) == CCA_OK, "an allocation");
    cca_stats_t st;
    cca_get_stats(a, &st);
    CHECK(st.allocated_bytes[CCA_POOL_ALL].current == (1 << 20), "seen by cca_default(0)");
    CHECK(st.requested_bytes[CCA_POOL_ALL].current == (1 << 20), "requested bytes too");
    dealloc(p, 1 << 20, 0, s1);                                  // the allocation stream, as torch passes it
    cca_get_stats(a, &st);
    CHECK(st.allocated_bytes[CCA_POOL_ALL].current == 0, "freed");

    // OOM: an exception with torch's prefix and cca's report
    bool threw = false;
    try {
        alloc(100u << 20, 0, s1);
    } catch (const std::runtime_error &e) {
        threw = std::strncmp(e.what(), "CUDA out of memory. ", 20) == 0 && std::strstr(e.what(), "cca: out of memory") &&
                std::strstr(e.what(), "advice: ");
        if (!threw) std::printf("  what(): %s\n", e.what());
    }
    CHECK(threw, "OOM throws runtime_error(\"CUDA out of memory. ...\") with the report");

    // record_stream: reuse waits for the other stream's work
    void *q = alloc(4096, 0, s1);
    record(q, s2);
    cca_sim_stream_hold(s2);
    dealloc(q, 4096, 0, s1);
    void *r = alloc(4096, 0, s1);
    CHECK(r != q, "not reused while s2's work is pending");
    dealloc(r, 4096, 0, s1);
    cca_sim_stream_release(s2);
    void *again = alloc(4096, 0, s1);
    CHECK(again == q, "reused once s2's work is done");
    dealloc(again, 4096, 0, s1);
    threw = false;
    try {
        int host;
        record(&host, s2);
    } catch (const std::runtime_error &) {
        threw = true;
    }
    CHECK(threw, "record_stream of a foreign pointer throws");

    // graph capture: asked only while the pool flag is up
    unsigned long asked = cca_sim_calls(CCA_SIM_STREAM_IS_CAPTURING);
    cudaStreamBeginCapture(s2, cudaStreamCaptureModeRelaxed);
    void *c = alloc(4096, 0, s2);
    CHECK(c != nullptr && cca_sim_calls(CCA_SIM_STREAM_IS_CAPTURING) == asked, "no capture check without the flag");
    dealloc(c, 4096, 0, s2);
    begin_pool(0, MempoolId{1, 0}, [](cudaStream_t) { return true; });
    threw = false;
    try {
        alloc(4096, 0, s2);
    } catch (const std::runtime_error &e) {
        threw = std::strstr(e.what(), "graph pools are not supported by cca yet") != nullptr;
    }
    CHECK(threw, "an allocation on a capturing stream throws while the flag is up");
    void *d = alloc(4096, 0, s1);
    CHECK(d != nullptr, "other streams still allocate while the flag is up");
    dealloc(d, 4096, 0, s1);
    end_pool(0, MempoolId{1, 0});
    release_pool(0, MempoolId{1, 0});

    // the flag raced against another thread's first allocation, which
    // caches the allocator: after begin returns, no cached fast path may
    // skip the capture check
    {
        std::atomic<bool> stop{false};
        std::thread other([&] {
            while (!stop.load()) {
                void *q = alloc(4096, 0, s1);
                dealloc(q, 4096, 0, s1);
            }
        });
        int missed = 0;
        for (int i = 0; i < 5000; i++) {
            begin_pool(0, MempoolId{2, 0}, [](cudaStream_t) { return true; });
            bool refused = false;
            try {
                void *q = alloc(4096, 0, s2);
                dealloc(q, 4096, 0, s2);
            } catch (const std::runtime_error &) {
                refused = true;
            }
            missed += !refused;
            end_pool(0, MempoolId{2, 0});                  // the other thread may cache again
        }
        stop.store(true);
        other.join();
        release_pool(0, MempoolId{2, 0});
        if (missed) std::printf("missed %d\n", missed);
        CHECK(missed == 0, "the capture check survives a racing first allocation");
    }
    cudaGraph_t g;
    cudaStreamEndCapture(s2, &g);
    asked = cca_sim_calls(CCA_SIM_STREAM_IS_CAPTURING);
    void *e2 = alloc(4096, 0, s2);
    CHECK(e2 != nullptr && cca_sim_calls(CCA_SIM_STREAM_IS_CAPTURING) == asked, "the flag is down again");
    dealloc(e2, 4096, 0, s2);

    // empty_cache and the memory fraction
    reset();
    cca_get_stats(a, &st);
    CHECK(st.reserved_bytes[CCA_POOL_ALL].current == 0, "empty_cache returns every free segment");
    fraction(0.5, 0);
    size_t cap = 0;
    cca_get_memory_cap(a, &cap, nullptr, nullptr);
    CHECK(cap == (32u << 20), "set_per_process_memory_fraction(0.5)");
    threw = false;
    try {
        fraction(0.0, 0);
    } catch (const std::exception &) {
        threw = true;
    }
    CHECK(threw, "a fraction of 0 is refused with an exception");

    CHECK(cca_check(a) == CCA_OK, cca_last_error_string());
    cudaStreamDestroy(s1);
    cudaStreamDestroy(s2);
    std::printf("%d passed, %d failed\n", passed, failed);
    return failed != 0;
}
