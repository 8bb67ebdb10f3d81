/* sim_vmm.c - CUDA's virtual memory management, as the driver API serves
 * it through cudaGetDriverEntryPointByVersion (under the simulated device's
 * lock and with its fault and latency machinery), and the virtual memory
 * controls of include/cca_sim.h. What an allocator can observe:
 * - granularity: 2 MiB, minimum and recommended;
 * - reservations (cuMemAddressReserve): address space only, no capacity,
 *   at most va_limit bytes in the process (64 TiB by default, as a real
 *   process's address space allows; lowered for ThreadSanitizer runs), a
 *   multiple of the granularity; CUDA_ERROR_OUT_OF_MEMORY past the limit;
 *   cuMemAddressFree takes a whole reservation with nothing mapped in it;
 * - physical handles (cuMemCreate): a multiple of the granularity, counted
 *   against the device's capacity until released and unmapped (a handle
 *   released while mapped is freed at its last unmap);
 * - mappings (cuMemMap): a whole handle (offset 0, size its size) at a
 *   granularity-aligned address inside one reservation, not overlapping
 *   another mapping; cuMemUnmap takes whole mappings only, never a
 *   sub-range; a new mapping has no access until cuMemSetAccess;
 *   cuMemGetAccess reads it back.
 * Two rules are stricter than the driver's documentation, deliberately (an
 * allocator that keeps them runs on a real GPU; the facts state
 * them): a handle is mapped whole (the driver also allows a prefix), and a
 * reservation is a multiple of the granularity (the driver: of the host
 * page). The entry point serves the driver of the CUDA headers it was built
 * with (CUDA_VERSION): a later cudaVersion is cudaErrorInvalidValue.
 * A fault injected through cca_sim_fail / cca_sim_fail_nth comes back as the
 * CUresult with the same number (cudaErrorMemoryAllocation is
 * CUDA_ERROR_OUT_OF_MEMORY, cudaErrorInvalidValue CUDA_ERROR_INVALID_VALUE).
 * Driver calls leave the runtime's last error alone. */
#include "sim_internal.h"

#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#define VMM_GRANULARITY ((size_t)2 << 20)
#define VMM_VA_LIMIT    ((size_t)64 << 40)
#define VMM_VA_MAX      ((size_t)128 << 40)   /* a process's whole user address space */

typedef struct vmm_res { uintptr_t base; size_t size; } vmm_res_t;
typedef struct vmm_handle {
    uint64_t id;                    /* (serial << 32) | slot; 0: free slot */
    int dev;
    size_t size;
    unsigned maps;                  /* mappings of it */
    bool released;                  /* cuMemRelease'd: freed at the last unmap */
} vmm_handle_t;
typedef struct vmm_map {
    uintptr_t addr;
    size_t size;
    uint64_t handle;
    unsigned long long access;      /* CUmemAccess_flags */
} vmm_map_t;

static struct {
    vmm_res_t *res;
    size_t nres, capres;
    size_t va_used, va_limit;
    vmm_handle_t *h;
    size_t nh, caph;
    uint32_t *hfree;                /* free slots below nh */
    size_t nhfree, caphfree;
    uint64_t next_id;               /* serial: never reused, resets included */
    vmm_map_t *maps;                /* by address */
    size_t nmaps, capmaps;
} vmm = { .va_limit = VMM_VA_LIMIT, .next_id = 1 };

static bool vmm_grow(void **p, size_t *cap, size_t need, size_t elem)
{
    if (need <= *cap) return true;
    size_t n = *cap ? *cap * 2 : 16;
    while (n < need) n *= 2;
    void *q = realloc(*p, n * elem);
    if (!q) return false;
    *p = q;
    *cap = n;
    return true;
}

/* Under the lock: the fault to inject into a driver call, as a CUresult. */
static CUresult vmm_enter(cca_sim_api_t api)
{
    enter(api);
    lock();
    return (CUresult)sim_fault_now(api);
}

static CUresult vmm_leave(cca_sim_api_t api, CUresult r)
{
    if (r == CUDA_SUCCESS) fault_ok(api);
    unlock();
    return r;
}

static vmm_handle_t *vmm_handle(uint64_t id)
{
    size_t slot = (size_t)(id & 0xffffffffu);
    return id && slot < vmm.nh && vmm.h[slot].id == id ? &vmm.h[slot] : NULL;
}

static vmm_res_t *vmm_res_of(uintptr_t addr, size_t size)
{
    for (size_t i = 0; i < vmm.nres; i++)
        if (addr >= vmm.res[i].base && size <= vmm.res[i].size && addr - vmm.res[i].base <= vmm.res[i].size - size)
            return &vmm.res[i];
    return NULL;
}

/* The first mapping ending after addr (the one that may hold it). */
static size_t vmm_map_at(uintptr_t addr)
{
    size_t lo = 0, hi = vmm.nmaps;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (vmm.maps[mid].addr + vmm.maps[mid].size <= addr) lo = mid + 1;
        else hi = mid;
    }
    return lo;
}

static void vmm_handle_drop(vmm_handle_t *h)
{
    if (!h->released || h->maps) return;
    device_t *d = &sim_g.dev[h->dev];
    d->used -= h->size;
    h->id = 0;
    vmm.hfree[vmm.nhfree++] = (uint32_t)(h - vmm.h);  /* room was made when the slot was */
}

static bool vmm_prop_ok(const CUmemAllocationProp *prop, int *dev)
{
    if (!prop || prop->type != CU_MEM_ALLOCATION_TYPE_PINNED || prop->location.type != CU_MEM_LOCATION_TYPE_DEVICE)
        return false;
    if (prop->location.id < 0 || prop->location.id >= atomic_load_explicit(&sim_g.ndev, memory_order_relaxed))
        return false;
    *dev = prop->location.id;
    return true;
}

static CUresult CUDAAPI sim_cuMemGetAllocationGranularity(size_t *granularity, const CUmemAllocationProp *prop,
                                                          CUmemAllocationGranularity_flags option)
{
    CUresult r = vmm_enter(CCA_SIM_MEM_GET_GRANULARITY);
    int dev;
    if (!r && (!granularity || !vmm_prop_ok(prop, &dev) ||
               (option != CU_MEM_ALLOC_GRANULARITY_MINIMUM && option != CU_MEM_ALLOC_GRANULARITY_RECOMMENDED)))
        r = CUDA_ERROR_INVALID_VALUE;
    if (!r) *granularity = VMM_GRANULARITY;
    return vmm_leave(CCA_SIM_MEM_GET_GRANULARITY, r);
}

static CUresult CUDAAPI sim_cuMemAddressReserve(CUdeviceptr *ptr, size_t size, size_t alignment, CUdeviceptr addr,
                                                unsigned long long flags)
{
    CUresult r = vmm_enter(CCA_SIM_MEM_ADDRESS_RESERVE);
    (void)addr;                                       /* a hint, which the driver may ignore: ignored */
    if (!r && (!ptr || !size || size % VMM_GRANULARITY || flags ||
               (alignment && (alignment & (alignment - 1) || alignment > ((size_t)1 << 40)))))
        r = CUDA_ERROR_INVALID_VALUE;
    size_t align = alignment > VMM_GRANULARITY ? alignment : VMM_GRANULARITY;
    if (!r && size > SIZE_MAX - align) r = CUDA_ERROR_OUT_OF_MEMORY;
    if (!r && (vmm.va_used > vmm.va_limit || size > vmm.va_limit - vmm.va_used)) r = CUDA_ERROR_OUT_OF_MEMORY;
    if (!r && !vmm_grow((void **)&vmm.res, &vmm.capres, vmm.nres + 1, sizeof *vmm.res)) r = CUDA_ERROR_OUT_OF_MEMORY;
    void *p = MAP_FAILED;
    if (!r) {                                         /* the address space itself: never touched */
        p = mmap(NULL, size + align, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        if (p == MAP_FAILED) r = CUDA_ERROR_OUT_OF_MEMORY;
    }
    if (!r) {                                         /* aligned as asked (the granularity at least): trim both ends */
        uintptr_t base = round_up((uintptr_t)p, align), end = (uintptr_t)p + size + align;
        if (base > (uintptr_t)p) munmap(p, base - (uintptr_t)p);
        if (end > base + size) munmap((void *)(base + size), end - (base + size));
        vmm.res[vmm.nres++] = (vmm_res_t){ base, size };
        vmm.va_used += size;
        *ptr = (CUdeviceptr)base;
    }
    return vmm_leave(CCA_SIM_MEM_ADDRESS_RESERVE, r);
}

static CUresult CUDAAPI sim_cuMemAddressFree(CUdeviceptr ptr, size_t size)
{
    CUresult r = vmm_enter(CCA_SIM_MEM_ADDRESS_FREE);
    size_t i = 0;
    while (!r && i < vmm.nres && vmm.res[i].base != (uintptr_t)ptr) i++;
    if (!r && (i == vmm.nres || vmm.res[i].size != size)) r = CUDA_ERROR_INVALID_VALUE;
    if (!r) {
        size_t m = vmm_map_at((uintptr_t)ptr);
        if (m < vmm.nmaps && vmm.maps[m].addr < (uintptr_t)ptr + size) r = CUDA_ERROR_INVALID_VALUE;   /* still mapped */
    }
    if (!r) {
        munmap((void *)vmm.res[i].base, vmm.res[i].size);
        vmm.va_used -= size;
        vmm.res[i] = vmm.res[--vmm.nres];
    }
    return vmm_leave(CCA_SIM_MEM_ADDRESS_FREE, r);
}

static CUresult CUDAAPI sim_cuMemCreate(CUmemGenericAllocationHandle *handle, size_t size,
                                        const CUmemAllocationProp *prop, unsigned long long flags)
{
    CUresult r = vmm_enter(CCA_SIM_MEM_CREATE);
    int dev = 0;
    if (!r && (!handle || !size || size % VMM_GRANULARITY || flags || !vmm_prop_ok(prop, &dev)))
        r = CUDA_ERROR_INVALID_VALUE;
    device_t *d = &sim_g.dev[dev];
    if (!r && (d->used > d->capacity || size > d->capacity - d->used)) r = CUDA_ERROR_OUT_OF_MEMORY;
    size_t slot = vmm.nhfree ? vmm.hfree[vmm.nhfree - 1] : vmm.nh;
    if (!r && slot == vmm.nh && (vmm.nh >= UINT32_MAX ||
                                 !vmm_grow((void **)&vmm.h, &vmm.caph, vmm.nh + 1, sizeof *vmm.h) ||
                                 !vmm_grow((void **)&vmm.hfree, &vmm.caphfree, vmm.nh + 1, sizeof *vmm.hfree)))
        r = CUDA_ERROR_OUT_OF_MEMORY;
    if (!r) {
        if (slot == vmm.nh) vmm.nh++;
        else vmm.nhfree--;
        vmm.h[slot] = (vmm_handle_t){ (vmm.next_id++ << 32) | slot, dev, size, 0, false };
        d->used += size;
        *handle = (CUmemGenericAllocationHandle)vmm.h[slot].id;
    }
    return vmm_leave(CCA_SIM_MEM_CREATE, r);
}

static CUresult CUDAAPI sim_cuMemRelease(CUmemGenericAllocationHandle handle)
{
    CUresult r = vmm_enter(CCA_SIM_MEM_RELEASE);
    vmm_handle_t *h = r ? NULL : vmm_handle((uint64_t)handle);
    if (!r && (!h || h->released)) r = CUDA_ERROR_INVALID_VALUE;
    if (!r) {
        h->released = true;
        vmm_handle_drop(h);
    }
    return vmm_leave(CCA_SIM_MEM_RELEASE, r);
}

static CUresult CUDAAPI sim_cuMemMap(CUdeviceptr ptr, size_t size, size_t offset, CUmemGenericAllocationHandle handle,
                                     unsigned long long flags)
{
    CUresult r = vmm_enter(CCA_SIM_MEM_MAP);
    vmm_handle_t *h = r ? NULL : vmm_handle((uint64_t)handle);
    uintptr_t a = (uintptr_t)ptr;
    if (!r && (!h || h->released || offset || flags || size != h->size || a % VMM_GRANULARITY ||
               !vmm_res_of(a, size)))
        r = CUDA_ERROR_INVALID_VALUE;
    size_t m = r ? 0 : vmm_map_at(a);
    if (!r && m < vmm.nmaps && vmm.maps[m].addr < a + size) r = CUDA_ERROR_INVALID_VALUE;   /* overlaps a mapping */
    if (!r && !vmm_grow((void **)&vmm.maps, &vmm.capmaps, vmm.nmaps + 1, sizeof *vmm.maps)) r = CUDA_ERROR_OUT_OF_MEMORY;
    if (!r) {
        memmove(&vmm.maps[m + 1], &vmm.maps[m], (vmm.nmaps - m) * sizeof *vmm.maps);
        vmm.maps[m] = (vmm_map_t){ a, size, h->id, CU_MEM_ACCESS_FLAGS_PROT_NONE };
        vmm.nmaps++;
        h->maps++;
    }
    return vmm_leave(CCA_SIM_MEM_MAP, r);
}

/* Mappings [*first, *first + *n) exactly cover [a, a + size), contiguous. */
static bool vmm_whole_maps(uintptr_t a, size_t size, size_t *first, size_t *n)
{
    size_t m = vmm_map_at(a), k = m;
    uintptr_t at = a;
    if (!size || a + size < a) return false;
    while (k < vmm.nmaps && at < a + size && vmm.maps[k].addr == at) at += vmm.maps[k++].size;
    if (at != a + size || k == m) return false;
    *first = m;
    *n = k - m;
    return true;
}

static CUresult CUDAAPI sim_cuMemUnmap(CUdeviceptr ptr, size_t size)
{
    CUresult r = vmm_enter(CCA_SIM_MEM_UNMAP);
    size_t first = 0, n = 0;
    if (!r && !vmm_whole_maps((uintptr_t)ptr, size, &first, &n)) r = CUDA_ERROR_INVALID_VALUE;
    if (!r) {
        for (size_t k = first; k < first + n; k++) {
            vmm_handle_t *h = vmm_handle(vmm.maps[k].handle);
            h->maps--;
            vmm_handle_drop(h);
        }
        memmove(&vmm.maps[first], &vmm.maps[first + n], (vmm.nmaps - first - n) * sizeof *vmm.maps);
        vmm.nmaps -= n;
    }
    return vmm_leave(CCA_SIM_MEM_UNMAP, r);
}

static CUresult CUDAAPI sim_cuMemSetAccess(CUdeviceptr ptr, size_t size, const CUmemAccessDesc *desc, size_t count)
{
    CUresult r = vmm_enter(CCA_SIM_MEM_SET_ACCESS);
    size_t first = 0, n = 0;
    if (!r && (!desc || !count)) r = CUDA_ERROR_INVALID_VALUE;
    for (size_t i = 0; !r && i < count; i++)
        if (desc[i].location.type != CU_MEM_LOCATION_TYPE_DEVICE || desc[i].location.id < 0 ||
            desc[i].location.id >= atomic_load_explicit(&sim_g.ndev, memory_order_relaxed) ||
            (desc[i].flags != CU_MEM_ACCESS_FLAGS_PROT_NONE && desc[i].flags != CU_MEM_ACCESS_FLAGS_PROT_READ &&
             desc[i].flags != CU_MEM_ACCESS_FLAGS_PROT_READWRITE))
            r = CUDA_ERROR_INVALID_VALUE;
    if (!r && !vmm_whole_maps((uintptr_t)ptr, size, &first, &n)) r = CUDA_ERROR_INVALID_VALUE;   /* fully mapped */
    if (!r)                                           /* the device holding the memory: the last word for it */
        for (size_t k = first; k < first + n; k++)
            for (size_t i = 0; i < count; i++)
                if (desc[i].location.id == vmm_handle(vmm.maps[k].handle)->dev) vmm.maps[k].access = desc[i].flags;
    return vmm_leave(CCA_SIM_MEM_SET_ACCESS, r);
}

static CUresult CUDAAPI sim_cuMemGetAccess(unsigned long long *flags, const CUmemLocation *location, CUdeviceptr ptr)
{
    CUresult r = vmm_enter(CCA_SIM_MEM_GET_ACCESS);
    size_t m = r ? 0 : vmm_map_at((uintptr_t)ptr);
    if (!r && (!flags || !location || location->type != CU_MEM_LOCATION_TYPE_DEVICE || m == vmm.nmaps ||
               vmm.maps[m].addr > (uintptr_t)ptr))
        r = CUDA_ERROR_INVALID_VALUE;
    if (!r) *flags = location->id == vmm_handle(vmm.maps[m].handle)->dev ? vmm.maps[m].access : CU_MEM_ACCESS_FLAGS_PROT_NONE;
    return vmm_leave(CCA_SIM_MEM_GET_ACCESS, r);
}

static const struct { const char *name; void *fn; } vmm_symbols[] = {
    { "cuMemGetAllocationGranularity", (void *)sim_cuMemGetAllocationGranularity },
    { "cuMemAddressReserve", (void *)sim_cuMemAddressReserve },
    { "cuMemAddressFree", (void *)sim_cuMemAddressFree },
    { "cuMemCreate", (void *)sim_cuMemCreate },
    { "cuMemRelease", (void *)sim_cuMemRelease },
    { "cuMemMap", (void *)sim_cuMemMap },
    { "cuMemUnmap", (void *)sim_cuMemUnmap },
    { "cuMemSetAccess", (void *)sim_cuMemSetAccess },
    { "cuMemGetAccess", (void *)sim_cuMemGetAccess },
};

void *sim_vmm_symbol(const char *symbol)
{
    for (size_t i = 0; i < sizeof vmm_symbols / sizeof vmm_symbols[0]; i++)
        if (!strcmp(symbol, vmm_symbols[i].name)) return vmm_symbols[i].fn;
    return NULL;
}

static cudaError_t entry_point(const char *symbol, void **funcPtr, unsigned int cudaVersion, unsigned long long flags,
                               enum cudaDriverEntryPointQueryResult *driverStatus)
{
    enter(CCA_SIM_GET_DRIVER_ENTRY_POINT);
    tls_t *t = me();
    cudaError_t e = sim_fault_now_unlocked(CCA_SIM_GET_DRIVER_ENTRY_POINT);
    if (!e && (!symbol || !funcPtr || flags > cudaEnablePerThreadDefaultStream || cudaVersion > CUDA_VERSION))
        e = cudaErrorInvalidValue;                    /* a version past the (simulated) driver's: as the runtime */
    if (e) return fail(t, e);
    *funcPtr = NULL;
    enum cudaDriverEntryPointQueryResult st = cudaDriverEntryPointSymbolNotFound;
    bool vmm_call = false;
    for (size_t i = 0; i < sizeof vmm_symbols / sizeof vmm_symbols[0]; i++)
        if (!strcmp(symbol, vmm_symbols[i].name)) vmm_call = true;
    void *fn = sim_driver_symbol(symbol);         /* sim_framework.c: the VMM calls and the rest */
    if (fn && vmm_call && cudaVersion < 10020) {      /* the VMM calls came with CUDA 10.2 */
        st = cudaDriverEntryPointVersionNotSufficent;
    } else if (fn) {
        *funcPtr = fn;
        st = cudaDriverEntryPointSuccess;
    }
    if (driverStatus) *driverStatus = st;
    sim_fault_ok_unlocked(CCA_SIM_GET_DRIVER_ENTRY_POINT);
    return cudaSuccess;                               /* a missing symbol too: NULL and the status say so */
}

SIM_API cudaError_t cudaGetDriverEntryPointByVersion(const char *symbol, void **funcPtr, unsigned int cudaVersion,
                                                     unsigned long long flags,
                                                     enum cudaDriverEntryPointQueryResult *driverStatus)
{
    return entry_point(symbol, funcPtr, cudaVersion, flags, driverStatus);
}

/* The older call (CUDA 11.3 on; deprecated): the driver's own version. */
SIM_API cudaError_t cudaGetDriverEntryPoint(const char *symbol, void **funcPtr, unsigned long long flags,
                                            enum cudaDriverEntryPointQueryResult *driverStatus)
{
    return entry_point(symbol, funcPtr, CUDA_VERSION, flags, driverStatus);
}

SIM_API cudaError_t cudaGetDriverEntryPoint_ptsz(const char *symbol, void **funcPtr, unsigned long long flags,
                                                 enum cudaDriverEntryPointQueryResult *driverStatus)
{
    return entry_point(symbol, funcPtr, CUDA_VERSION, flags, driverStatus);
}

SIM_API cudaError_t cudaGetDriverEntryPointByVersion_ptsz(const char *symbol, void **funcPtr, unsigned int cudaVersion,
                                                          unsigned long long flags,
                                                          enum cudaDriverEntryPointQueryResult *driverStatus)
{
    return entry_point(symbol, funcPtr, cudaVersion, flags, driverStatus);
}

/* ---- what the other files of the simulated device read (under the lock) ---- */

size_t sim_vmm_handle_bytes(int dev)
{
    size_t n = 0;
    for (size_t h = 0; h < vmm.nh; h++)
        if (vmm.h[h].id && vmm.h[h].dev == dev) n += vmm.h[h].size;
    return n;
}

int sim_vmm_device_of(uintptr_t a)
{
    size_t m = vmm_map_at(a);
    if (m < vmm.nmaps && vmm.maps[m].addr <= a) {
        vmm_handle_t *h = vmm_handle(vmm.maps[m].handle);
        if (h) return h->dev;
    }
    return -1;
}

void sim_vmm_mapping_of(uintptr_t a, uintptr_t *base, size_t *size)
{
    size_t m = vmm_map_at(a);
    if (m < vmm.nmaps && vmm.maps[m].addr <= a) *base = vmm.maps[m].addr, *size = vmm.maps[m].size;
}

bool sim_vmm_readwrite(uintptr_t a, size_t len)
{
    uintptr_t at = a;
    for (size_t m = vmm_map_at(a); m < vmm.nmaps && at < a + len; m++) {
        if (vmm.maps[m].addr > at || vmm.maps[m].access != CU_MEM_ACCESS_FLAGS_PROT_READWRITE) break;
        at = vmm.maps[m].addr + vmm.maps[m].size;
    }
    return at >= a + len;
}

/* cca_sim_reset's part: every reservation, handle and mapping goes (under the lock). */
void sim_vmm_reset(void)
{
    for (size_t i = 0; i < vmm.nres; i++) munmap((void *)vmm.res[i].base, vmm.res[i].size);
    free(vmm.res);
    free(vmm.h);
    free(vmm.hfree);
    free(vmm.maps);
    size_t limit = vmm.va_limit;
    uint64_t next = vmm.next_id;                      /* a handle from before never matches a new one */
    memset(&vmm, 0, sizeof vmm);
    vmm.va_limit = limit;
    vmm.next_id = next;
}

SIM_API void cca_sim_set_va_limit(size_t bytes)
{
    lock();
    vmm.va_limit = bytes && bytes < VMM_VA_MAX ? bytes : bytes ? VMM_VA_MAX : VMM_VA_LIMIT;
    unlock();
}

SIM_API size_t cca_sim_va_reserved(void)
{
    lock();
    size_t v = vmm.va_used;
    unlock();
    return v;
}

SIM_API unsigned long cca_sim_live_handles(int device)
{
    unsigned long n = 0;
    lock();
    for (size_t i = 0; i < vmm.nh; i++)
        if (vmm.h[i].id && vmm.h[i].dev == device) n++;
    unlock();
    return n;
}

SIM_API int cca_sim_accessible(const void *ptr, size_t len)
{
    uintptr_t a = (uintptr_t)ptr;
    if (!len || a + len < a) return 0;
    lock();
    int ok = 0;
    sim_alloc_t rec;                                  /* inside a live cudaMalloc result? */
    for (size_t i = 0; !ok && sim_g.allocs.slots && i <= sim_g.allocs.mask; i++) {
        rec = sim_g.allocs.slots[i];
        if (rec.addr && a >= rec.addr && a - rec.addr <= rec.size && len <= rec.size - (a - rec.addr)) ok = 1;
    }
    if (!ok) ok = sim_vmm_readwrite(a, len);         /* else mapped read-write, mapping after mapping */
    unlock();
    return ok;
}
