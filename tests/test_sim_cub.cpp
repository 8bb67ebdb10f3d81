// test_sim_cub.cpp - C++ callers link against the simulated device: NVIDIA
// CUB's cub::CachingDeviceAllocator (header-only, calls the runtime directly)
// allocates, caches, reuses in stream order and frees through libcca_sim.
// A plain program: prints what it checks, exits 0 when all passed.
#include <cub/util_allocator.cuh>

#include <cca_sim.h>

#include <cstdio>

static int failures = 0;

#define CHECK(cond)                                                          \
    do {                                                                     \
        if (cond) {                                                          \
            std::printf("ok   %s\n", #cond);                                 \
        } else {                                                             \
            std::printf("FAIL %s (line %d)\n", #cond, __LINE__);             \
            failures++;                                                      \
        }                                                                    \
    } while (0)

int main()
{
    cca_sim_reset();
    cudaStream_t s1, s2;
    CHECK(cudaStreamCreate(&s1) == cudaSuccess);
    CHECK(cudaStreamCreate(&s2) == cudaSuccess);
    {
        cub::CachingDeviceAllocator cub_alloc;   // bins 512 B .. 2 MiB
        void *a = nullptr, *b = nullptr, *c = nullptr;
        CHECK(cub_alloc.DeviceAllocate(&a, 1000, s1) == cudaSuccess);
        CHECK(a != nullptr && reinterpret_cast<uintptr_t>(a) % 512 == 0);
        CHECK(cca_sim_calls(CCA_SIM_MALLOC) == 1);
        CHECK(cub_alloc.DeviceFree(a) == cudaSuccess);
        CHECK(cca_sim_calls(CCA_SIM_EVENT_RECORD) == 1);
        CHECK(cub_alloc.DeviceAllocate(&b, 1000, s1) == cudaSuccess);
        CHECK(b == a);                                    // same stream: reused at once
        CHECK(cca_sim_calls(CCA_SIM_MALLOC) == 1);

        cca_sim_stream_hold(s1);                          // a kernel still uses b on s1
        CHECK(cub_alloc.DeviceFree(b) == cudaSuccess);
        CHECK(cub_alloc.DeviceAllocate(&c, 1000, s2) == cudaSuccess);
        CHECK(c != b);                                    // its event is pending: not reusable on s2
        CHECK(cca_sim_calls(CCA_SIM_MALLOC) == 2);
        CHECK(cca_sim_calls(CCA_SIM_EVENT_QUERY) == 1);
        (void)cudaGetLastError();                         // CUB leaves the NotReady there
        cca_sim_stream_release(s1);
        void *d = nullptr;
        CHECK(cub_alloc.DeviceFree(c) == cudaSuccess);
        CHECK(cub_alloc.DeviceAllocate(&d, 1000, s2) == cudaSuccess);
        CHECK(d == b);                                    // s1's work is done: b is reusable on s2
        CHECK(cca_sim_calls(CCA_SIM_EVENT_QUERY) == 2);
        CHECK(cca_sim_calls(CCA_SIM_MALLOC) == 2);
        CHECK(cub_alloc.DeviceFree(d) == cudaSuccess);

        void *big = nullptr;                              // above the largest bin: straight to the device
        CHECK(cub_alloc.DeviceAllocate(&big, 64 << 20, s1) == cudaSuccess);
        CHECK(cca_sim_used_bytes(0) == (64u << 20) + 2 * 4096);   // two 4 KiB bins
        CHECK(cub_alloc.DeviceFree(big) == cudaSuccess);
        CHECK(cca_sim_live_allocations(0) == 2);
        CHECK(cub_alloc.FreeAllCached() == cudaSuccess);
        CHECK(cca_sim_live_allocations(0) == 0);
    }
    CHECK(cudaStreamDestroy(s1) == cudaSuccess);
    CHECK(cudaStreamDestroy(s2) == cudaSuccess);
    CHECK(cudaGetLastError() == cudaSuccess);
    std::printf("%s: %d failed\n", failures ? "FAILED" : "PASSED", failures);
    return failures ? 1 : 0;
}
