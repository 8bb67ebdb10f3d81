/* vmm.c - the virtual-memory layer under expandable segments: CUDA's
 * virtual memory calls, reached through cudaGetDriverEntryPointByVersion
 * (cca never links libcuda); reserving address space; creating, mapping,
 * unmapping and releasing handles; the address-space table (reservations,
 * mapped handles by address, handles held unmapped) and its lookups; the
 * driver's result names; the teardown of it all in cca_destroy. The
 * figures of handles (reserved_bytes, unmapped_bytes, the device and handle
 * calls) change here with the table. All locked. It knows nothing of where
 * a request goes or of segments: that policy is expand.c's, which calls it
 * (and never the other way round). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "internal.h"

#define X_VERSION 12000                               /* the driver API version of the calls we ask for */
#define X_RES_FACTOR 2                                /* a reservation: twice the device's memory */

static bool vmm_grow_array(cca_allocator_t *a, void **p, size_t *cap, size_t need, size_t elem)
{
    if (need <= *cap) return true;
    size_t n = *cap ? *cap * 2 : 16;
    while (n < need) n *= 2;
    void *q = realloc(*p, n * elem);
    if (!q) return false;
    a->host_bytes += (int64_t)((n - *cap) * elem);
    *p = q;
    *cap = n;
    return true;
}

bool _cca_vmm_room_maps(cca_allocator_t *a)
{
    struct cca_xvmm *x = a->xv;
    return vmm_grow_array(a, (void **)&x->maps, &x->capmaps, x->nmaps + 1, sizeof *x->maps);
}

bool _cca_vmm_room_held(cca_allocator_t *a)
{
    struct cca_xvmm *x = a->xv;
    return vmm_grow_array(a, (void **)&x->held, &x->capheld, x->nheld + 1, sizeof *x->held);
}

/* ---- loading ------------------------------------------------------------ */

static void *vmm_entry(cca_allocator_t *a, const char *name, cca_status_t *s)
{
    void *fn = NULL;
    enum cudaDriverEntryPointQueryResult q = cudaDriverEntryPointSymbolNotFound;
    cudaError_t e = cudaGetDriverEntryPointByVersion(name, &fn, X_VERSION, cudaEnableDefault, &q);
    if (*s == CCA_OK && (e != cudaSuccess || q != cudaDriverEntryPointSuccess || !fn)) {   /* a missing one: success and NULL */
        _cca_errors_clear();
        *s = _cca_errors_fail(CCA_ERROR_CUDA, "cca_create: expandable_segments needs the driver's %s on device %d, which it lacks (%s)",
                       name, a->cfg.device, e != cudaSuccess ? cudaGetErrorName(e) : "not found");
    }
    return fn;
}

cca_status_t _cca_vmm_init(cca_allocator_t *a)
{
    struct cca_xvmm *x = calloc(1, sizeof *x);
    if (!x) return _cca_errors_fail(CCA_ERROR_OUT_OF_MEMORY, "cca_create: out of host memory");
    cca_status_t s = CCA_OK;
    x->granularity = (PFN_cuMemGetAllocationGranularity_v10020)vmm_entry(a, "cuMemGetAllocationGranularity", &s);
    x->reserve = (PFN_cuMemAddressReserve_v10020)vmm_entry(a, "cuMemAddressReserve", &s);
    x->address_free = (PFN_cuMemAddressFree_v10020)vmm_entry(a, "cuMemAddressFree", &s);
    x->create = (PFN_cuMemCreate_v10020)vmm_entry(a, "cuMemCreate", &s);
    x->release = (PFN_cuMemRelease_v10020)vmm_entry(a, "cuMemRelease", &s);
    x->map = (PFN_cuMemMap_v10020)vmm_entry(a, "cuMemMap", &s);
    x->unmap = (PFN_cuMemUnmap_v10020)vmm_entry(a, "cuMemUnmap", &s);
    x->set_access = (PFN_cuMemSetAccess_v10020)vmm_entry(a, "cuMemSetAccess", &s);
    x->get_access = (PFN_cuMemGetAccess_v10020)vmm_entry(a, "cuMemGetAccess", &s);
    if (s != CCA_OK) {
        free(x);
        return s;
    }
    x->prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    x->prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    x->prop.location.id = a->cfg.device;
    size_t g = 0;
    CUresult r = x->granularity(&g, &x->prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM);
    if (r != CUDA_SUCCESS || !g || (CCA_ROUND_LARGE % g && g % CCA_ROUND_LARGE)) {
        free(x);
        return _cca_errors_fail(CCA_ERROR_CUDA, "cca_create: expandable_segments: cuMemGetAllocationGranularity on device %d %s %zu",
                         a->cfg.device, r != CUDA_SUCCESS ? "failed, error" : "gives a granularity cca cannot use:",
                         r != CUDA_SUCCESS ? (size_t)r : g);
    }
    x->gran = g > CCA_ROUND_LARGE ? g : CCA_ROUND_LARGE;   /* segments stay 2 MiB multiples (the address map's chunks) */
    size_t total = a->device_total ? a->device_total : x->gran;
    x->res_size = total > SIZE_MAX / X_RES_FACTOR / 2 ? _cca_vmm_down(x, SIZE_MAX / 2) : _cca_vmm_up(x, total * X_RES_FACTOR);
    a->xv = x;
    a->host_bytes += (int64_t)sizeof *x;
    return CCA_OK;
}

size_t _cca_vmm_gran(const cca_allocator_t *a) { return a->xv->gran; }

/* ---- the address space: lookups ------------------------------------------ */

size_t _cca_vmm_index(const cca_xmaps_t *m, uintptr_t addr)
{
    size_t lo = 0, hi = m->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (m->v[mid].addr < addr) lo = mid + 1;
        else hi = mid;
    }
    return lo;
}

size_t _cca_vmm_map_index(const struct cca_xvmm *x, uintptr_t addr)
{
    cca_xmaps_t m = _cca_vmm_maps(x);
    return _cca_vmm_index(&m, addr);
}

static const cca_xres_t *vmm_res_of(const struct cca_xvmm *x, uintptr_t addr)
{
    for (size_t i = 0; i < x->nres; i++)
        if (addr >= x->res[i].base && addr - x->res[i].base < x->res[i].size) return &x->res[i];
    return NULL;
}

size_t _cca_vmm_room_at(const struct cca_xvmm *x, const cca_xmaps_t *m, uintptr_t addr)
{
    const cca_xres_t *r = vmm_res_of(x, addr);
    if (!r) return 0;
    uintptr_t end = r->base + r->size;
    size_t i = _cca_vmm_index(m, addr);
    if (i < m->n && m->v[i].addr < end) end = m->v[i].addr;
    return end > addr ? end - addr : 0;
}

size_t _cca_vmm_room_below(const struct cca_xvmm *x, const cca_xmaps_t *m, uintptr_t addr)
{
    const cca_xres_t *r = vmm_res_of(x, addr);
    if (!r || addr == r->base) return 0;
    uintptr_t lo = r->base;
    size_t i = _cca_vmm_index(m, addr);
    if (i && m->v[i - 1].addr + m->v[i - 1].size > lo) lo = m->v[i - 1].addr + m->v[i - 1].size;
    return addr > lo ? addr - lo : 0;
}

size_t _cca_vmm_largest_gap(const struct cca_xvmm *x, const cca_xmaps_t *m, uintptr_t *start, bool *below)
{
    uintptr_t gs = 0;
    size_t glen = 0;
    bool under = false;
    for (size_t r = 0; r < x->nres; r++) {
        uintptr_t at = x->res[r].base, end = x->res[r].base + x->res[r].size;
        for (size_t i = _cca_vmm_index(m, at); i <= m->n; i++) {
            uintptr_t to = i < m->n && m->v[i].addr < end ? m->v[i].addr : end;
            if (to - at > glen) {
                gs = at;
                glen = to - at;
                under = at != x->res[r].base;
            }
            if (to == end) break;
            at = m->v[i].addr + m->v[i].size;
        }
    }
    *start = gs;
    *below = under;
    return glen;
}

CUresult _cca_vmm_get_access(const struct cca_xvmm *x, uintptr_t at, unsigned long long *flags)
{
    return x->get_access(flags, &x->prop.location, (CUdeviceptr)at);
}

/* ---- the address space: changes ------------------------------------------ */

/* Halved (not below need) while the address space refuses. */
cca_status_t _cca_vmm_reserve(cca_allocator_t *a, size_t need, cca_oom_ctx_t *ctx)
{
    struct cca_xvmm *x = a->xv;
    if (!vmm_grow_array(a, (void **)&x->res, &x->capres, x->nres + 1, sizeof *x->res)) {
        ctx->host_failed = true;
        return _cca_errors_fail(CCA_ERROR_OUT_OF_MEMORY, "cca: host memory for expandable segments ran out");
    }
    size_t size = need > x->res_size ? _cca_vmm_up(x, need) : x->res_size;
    for (;;) {
        CUdeviceptr p = 0;
        CUresult r = x->reserve(&p, size, x->gran, 0, 0);
        if (r == CUDA_SUCCESS) {
            x->res[x->nres++] = (cca_xres_t){ (uintptr_t)p, size };
            return CCA_OK;
        }
        if (r != CUDA_ERROR_OUT_OF_MEMORY)
            return _cca_errors_fail(CCA_ERROR_CUDA, "cca: cuMemAddressReserve(%zu) on device %d failed: error %d", size,
                             a->cfg.device, (int)r);
        if (size / 2 < need) break;
        size = _cca_vmm_up(x, size / 2);
    }
    ctx->device_refused = true;                       /* the process's address space, not the device's memory */
    return _cca_errors_fail(CCA_ERROR_OUT_OF_MEMORY, "cca: no address space left for %zu bytes of expandable segments", need);
}

/* Moves handle bytes between pools' reserved figures. */
static void vmm_move_reserved(cca_allocator_t *a, int from, int to, size_t size)
{
    if (from == to) return;
    _cca_stat_add(a->stats.reserved_bytes, from, -(int64_t)size);
    _cca_stat_add(a->stats.reserved_bytes, to, (int64_t)size);
}

void _cca_vmm_hold(cca_allocator_t *a, CUmemGenericAllocationHandle h, size_t size, int pool)
{
    struct cca_xvmm *x = a->xv;                       /* room was made first */
    x->held[x->nheld++] = (cca_xheld_t){ h, size, pool };
    _cca_stat_update(&a->stats.unmapped_bytes, (int64_t)size);
}

cca_xheld_t _cca_vmm_take_held(cca_allocator_t *a, size_t i)
{
    struct cca_xvmm *x = a->xv;
    cca_xheld_t hd = x->held[i];
    x->held[i] = x->held[--x->nheld];
    _cca_stat_update(&a->stats.unmapped_bytes, -(int64_t)hd.size);
    return hd;
}

static void vmm_map_insert(struct cca_xvmm *x, cca_xmap_t m)
{
    size_t i = _cca_vmm_map_index(x, m.addr);        /* room was made first */
    memmove(&x->maps[i + 1], &x->maps[i], (x->nmaps - i) * sizeof *x->maps);
    x->maps[i] = m;
    x->nmaps++;
}

static void vmm_map_remove(struct cca_xvmm *x, size_t i)
{
    memmove(&x->maps[i], &x->maps[i + 1], (x->nmaps - i - 1) * sizeof *x->maps);
    x->nmaps--;
}

/* A driver call that gives memory back (a CUresult expression), tried up
 * to CCA_RELEASE_TRIES times until it succeeds: its last result. */
#define X_TRIES(call)                                                    \
    __extension__({                                                      \
        CUresult r_ = CUDA_SUCCESS;                                      \
        for (int t_ = 0; t_ < CCA_RELEASE_TRIES; t_++)                   \
            if ((r_ = (call)) == CUDA_SUCCESS) break;                    \
        r_;                                                              \
    })

static cca_status_t vmm_cuda_fail(cca_allocator_t *a, cca_oom_ctx_t *ctx, const char *call, CUresult r, size_t size)
{
    if (r == CUDA_ERROR_OUT_OF_MEMORY) {
        ctx->device_refused = true;
        return CCA_ERROR_OUT_OF_MEMORY;
    }
    return _cca_errors_fail(CCA_ERROR_CUDA, "cca: %s(%zu) on device %d failed: error %d", call, size, a->cfg.device, (int)r);
}

cca_status_t _cca_vmm_create(cca_allocator_t *a, int pool, size_t *hs, size_t want, CUmemGenericAllocationHandle *h,
                             cca_oom_ctx_t *ctx)
{
    struct cca_xvmm *x = a->xv;
    CUresult r = x->create(h, *hs, &x->prop, 0);
    if (r == CUDA_ERROR_OUT_OF_MEMORY && *hs > want) r = x->create(h, *hs = want, &x->prop, 0);
    if (r != CUDA_SUCCESS) return vmm_cuda_fail(a, ctx, "cuMemCreate", r, *hs);
    a->stats.num_handle_create++;
    _cca_stat_add(a->stats.reserved_bytes, pool, (int64_t)*hs);
    return CCA_OK;
}

/* cuMemMap and cuMemSetAccess of handle h at `at`: CUDA_SUCCESS, else the
 * failing call in *call; a mapping that can neither get access nor be
 * unmapped is kept aside as held (*stray). */
static CUresult vmm_map_device(cca_allocator_t *a, uintptr_t at, CUmemGenericAllocationHandle h, size_t hs, int hpool,
                             const char **call, bool *stray)
{
    struct cca_xvmm *x = a->xv;
    *call = "cuMemMap";
    *stray = false;
    CUresult r = x->map((CUdeviceptr)at, hs, 0, h, 0);
    if (r == CUDA_SUCCESS) {
        CUmemAccessDesc d = { .location = x->prop.location, .flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE };
        *call = "cuMemSetAccess";
        r = x->set_access((CUdeviceptr)at, hs, &d, 1);
        if (r != CUDA_SUCCESS && X_TRIES(x->unmap((CUdeviceptr)at, hs)) != CUDA_SUCCESS) {   /* mapped without access: kept aside, never used */
            vmm_map_insert(x, (cca_xmap_t){ at, hs, h, hpool, true });
            _cca_stat_update(&a->stats.unmapped_bytes, (int64_t)hs);
            a->stats.num_device_alloc++;
            *stray = true;
        }
    }
    return r;
}

cca_status_t _cca_vmm_map(cca_allocator_t *a, uintptr_t at, CUmemGenericAllocationHandle h, size_t hs, int hpool, int pool,
                          cca_oom_ctx_t *ctx)
{
    const char *call;
    bool stray;
    CUresult r = vmm_map_device(a, at, h, hs, hpool, &call, &stray);
    if (r != CUDA_SUCCESS) {
        if (!stray) _cca_vmm_hold(a, h, hs, hpool);
        return vmm_cuda_fail(a, ctx, call, r, hs);
    }
    vmm_map_insert(a->xv, (cca_xmap_t){ at, hs, h, pool, false });
    a->stats.num_device_alloc++;
    vmm_move_reserved(a, hpool, pool, hs);
    return CCA_OK;
}

bool _cca_vmm_unmap(cca_allocator_t *a, size_t mi)
{
    struct cca_xvmm *x = a->xv;
    if (x->unmap((CUdeviceptr)x->maps[mi].addr, x->maps[mi].size) != CUDA_SUCCESS) return false;
    vmm_map_remove(x, mi);
    a->stats.num_device_free++;
    return true;
}

void _cca_vmm_release_held(cca_allocator_t *a, size_t from)
{
    struct cca_xvmm *x = a->xv;
    size_t keep = from;
    for (size_t i = from; i < x->nheld; i++) {
        cca_xheld_t hd = x->held[i];
        if (x->release(hd.h) != CUDA_SUCCESS) {
            x->held[keep++] = hd;
            continue;
        }
        a->stats.num_handle_release++;
        _cca_stat_update(&a->stats.unmapped_bytes, -(int64_t)hd.size);
        _cca_stat_add(a->stats.reserved_bytes, hd.pool, -(int64_t)hd.size);
    }
    x->nheld = keep;
}

void _cca_vmm_retry_strays(cca_allocator_t *a)
{
    struct cca_xvmm *x = a->xv;
    for (size_t i = 0; i < x->nmaps;) {
        cca_xmap_t m = x->maps[i];
        if (!m.stray || !_cca_vmm_room_held(a) || x->unmap((CUdeviceptr)m.addr, m.size) != CUDA_SUCCESS) {
            i++;
            continue;
        }
        vmm_map_remove(x, i);
        a->stats.num_device_free++;
        _cca_stat_update(&a->stats.unmapped_bytes, -(int64_t)m.size);   /* _cca_vmm_hold counts it again */
        _cca_vmm_hold(a, m.h, m.size, m.pool);
    }
}

/* ---- result names and teardown --------------------------------------------- */

static void vmm_keep(cca_kept_part_t *p, size_t bytes, CUresult r)
{
    p->calls++;
    p->bytes += bytes;
    p->err = (int)r;
}

void _cca_vmm_result_name(int r, char *buf, size_t len)
{
    static const struct { int r; const char *name; } names[] = {
        { CUDA_ERROR_INVALID_VALUE, "CUDA_ERROR_INVALID_VALUE" },
        { CUDA_ERROR_OUT_OF_MEMORY, "CUDA_ERROR_OUT_OF_MEMORY" },
        { CUDA_ERROR_NOT_INITIALIZED, "CUDA_ERROR_NOT_INITIALIZED" },
        { CUDA_ERROR_DEINITIALIZED, "CUDA_ERROR_DEINITIALIZED" },
        { CUDA_ERROR_NO_DEVICE, "CUDA_ERROR_NO_DEVICE" },
        { CUDA_ERROR_INVALID_DEVICE, "CUDA_ERROR_INVALID_DEVICE" },
        { CUDA_ERROR_INVALID_CONTEXT, "CUDA_ERROR_INVALID_CONTEXT" },
        { CUDA_ERROR_INVALID_HANDLE, "CUDA_ERROR_INVALID_HANDLE" },
        { CUDA_ERROR_ILLEGAL_ADDRESS, "CUDA_ERROR_ILLEGAL_ADDRESS" },
        { CUDA_ERROR_LAUNCH_FAILED, "CUDA_ERROR_LAUNCH_FAILED" },
        { CUDA_ERROR_NOT_PERMITTED, "CUDA_ERROR_NOT_PERMITTED" },
        { CUDA_ERROR_NOT_SUPPORTED, "CUDA_ERROR_NOT_SUPPORTED" },
        { CUDA_ERROR_UNKNOWN, "CUDA_ERROR_UNKNOWN" },
    };
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (names[i].r == r) {
            snprintf(buf, len, "%s", names[i].name);
            return;
        }
    snprintf(buf, len, "CUresult %d", r);
}

/* Unmaps and releases everything, frees the reservations (cca_destroy);
 * *kept gets what the driver refused on every try. A mapping that could
 * not be unmapped still has its handle released (the driver allows it:
 * the memory is freed at the handle's last unmap; cca never names the
 * handle again), and its reservation is not freed: address space freed
 * with a mapping still in it could be reserved again and overlap that
 * mapping. Its bytes count as kept device memory, the reservation's as
 * kept address space. */
void _cca_vmm_destroy(cca_allocator_t *a, cca_kept_t *kept)
{
    struct cca_xvmm *x = a->xv;
    if (!x) return;
    size_t stay = 0;                                  /* the mappings that stay: maps[nmaps - stay, nmaps) */
    for (size_t i = x->nmaps; i-- > 0;) {             /* from the top: a driver keeping mappings in order moves nothing */
        cca_xmap_t m = x->maps[i];
        CUresult r = X_TRIES(x->unmap((CUdeviceptr)m.addr, m.size));
        bool mapped = r != CUDA_SUCCESS;
        if (mapped) {
            vmm_keep(&kept->unmap, m.size, r);
            kept->device_bytes += m.size;
            x->maps[x->nmaps - 1 - stay++] = m;       /* at i or above: what was read already */
        }
        if ((r = X_TRIES(x->release(m.h))) != CUDA_SUCCESS) {
            vmm_keep(&kept->release, m.size, r);
            if (!mapped) kept->device_bytes += m.size;
        }
    }
    for (size_t i = 0; i < x->nheld; i++) {
        CUresult r = X_TRIES(x->release(x->held[i].h));
        if (r != CUDA_SUCCESS) {
            vmm_keep(&kept->release, x->held[i].size, r);
            kept->device_bytes += x->held[i].size;
        }
    }
    for (size_t i = 0; i < x->nres; i++) {
        const cca_xres_t *res = &x->res[i];
        bool in_use = false;
        for (size_t k = x->nmaps - stay; k < x->nmaps && !in_use; k++) in_use = x->maps[k].addr - res->base < res->size;
        CUresult r = in_use ? CUDA_SUCCESS : X_TRIES(x->address_free((CUdeviceptr)res->base, res->size));
        if (in_use || r != CUDA_SUCCESS) {
            vmm_keep(in_use ? &kept->still_mapped : &kept->address_free, res->size, r);
            kept->va_bytes += res->size;
        }
    }
    free(x->maps);
    free(x->held);
    free(x->res);
    free(x);
    a->xv = NULL;
}
