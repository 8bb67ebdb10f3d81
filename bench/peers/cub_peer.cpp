// cub_peer.cpp - NVIDIA CUB's caching allocator behind a C interface.
// Compiled with g++ -std=c++17 -I<cuda>/include/cccl; no nvcc needed.
#include "cub_peer.h"

#include <cub/util_allocator.cuh>

#include <mutex>
#include <new>

struct cub_peer {
    cub::CachingDeviceAllocator alloc;
    // Default bins, exactly as `cub::CachingDeviceAllocator()` builds them.
    cub_peer() : alloc() {}
    // Every size binned: bin_growth 2, min_bin 1 (2 B), max_bin 40 (1 TiB),
    // no limit on cached bytes.
    explicit cub_peer(int) : alloc(2, 1, 40, cub::CachingDeviceAllocator::INVALID_SIZE) {}
};

extern "C" cub_peer_t *cub_peer_create(int all_bins)
{
    if (all_bins)
        return new (std::nothrow) cub_peer(1);
    return new (std::nothrow) cub_peer();
}

extern "C" void cub_peer_destroy(cub_peer_t *c)
{
    delete c;
}

extern "C" cudaError_t cub_peer_malloc(cub_peer_t *c, void **p, size_t size, cudaStream_t s)
{
    return c->alloc.DeviceAllocate(p, size, s);
}

extern "C" cudaError_t cub_peer_free(cub_peer_t *c, void *p)
{
    return c->alloc.DeviceFree(p);
}

extern "C" size_t cub_peer_held_bytes(cub_peer_t *c)
{
    std::lock_guard<std::mutex> guard(c->alloc.mutex);
    size_t held = 0;
    for (const auto &dev : c->alloc.cached_bytes)
        held += dev.second.free + dev.second.live;
    return held;
}
