/* vmm.h - the virtual-memory layer under expandable segments (vmm.c): the
 * driver's cuMem* calls (found at run time), the address-space table
 * (reservations, mapped handles by address, handles held unmapped) and its
 * lookups. All locked. The policy above it (expand.c) reads the table;
 * only vmm.c calls the driver or changes the table. */
#ifndef CCA_VMM_H
#define CCA_VMM_H

#include <cuda.h>
#include <cudaTypedefs.h>
#include "core.h"                                     /* cca_kept_t */

typedef struct cca_xmap {                             /* a mapped handle */
    uintptr_t addr;
    size_t size;
    CUmemGenericAllocationHandle h;
    int pool;                                         /* strays only: the pool it counts in */
    bool stray;                                       /* mapped, but no access and no segment: could not be unmapped */
} cca_xmap_t;
typedef struct cca_xheld { CUmemGenericAllocationHandle h; size_t size; int pool; } cca_xheld_t;
typedef struct cca_xres { uintptr_t base; size_t size; } cca_xres_t;

struct cca_xvmm {                                     /* a->xv */
    PFN_cuMemGetAllocationGranularity_v10020 granularity;   /* the driver's calls: vmm.c's alone */
    PFN_cuMemAddressReserve_v10020 reserve;
    PFN_cuMemAddressFree_v10020 address_free;
    PFN_cuMemCreate_v10020 create;
    PFN_cuMemRelease_v10020 release;
    PFN_cuMemMap_v10020 map;
    PFN_cuMemUnmap_v10020 unmap;
    PFN_cuMemSetAccess_v10020 set_access;
    PFN_cuMemGetAccess_v10020 get_access;
    CUmemAllocationProp prop;
    size_t gran, res_size;
    cca_xres_t *res;                                  /* reservations */
    size_t nres, capres;
    cca_xmap_t *maps;                                 /* mapped handles, by address */
    size_t nmaps, capmaps;
    cca_xheld_t *held;                                /* handles held unmapped */
    size_t nheld, capheld;
};

static inline size_t _cca_vmm_up(const struct cca_xvmm *x, size_t n) { return (n + x->gran - 1) / x->gran * x->gran; }
static inline size_t _cca_vmm_down(const struct cca_xvmm *x, size_t n) { return n / x->gran * x->gran; }

/* Mappings by address: the allocator's own (_cca_vmm_maps), or a layout's
 * that is only looked at (the OOM report's, with free handles unmapped). */
typedef struct cca_xmaps { const cca_xmap_t *v; size_t n; } cca_xmaps_t;
static inline cca_xmaps_t _cca_vmm_maps(const struct cca_xvmm *x) { return (cca_xmaps_t){ x->maps, x->nmaps }; }

cca_status_t _cca_vmm_init(cca_allocator_t *a);       /* the driver's calls and granularity (cca_create) */
void         _cca_vmm_destroy(cca_allocator_t *a, cca_kept_t *kept);   /* unmaps and releases everything it can */
void         _cca_vmm_result_name(int r, char *buf, size_t len);       /* "CUDA_ERROR_OUT_OF_MEMORY", ... */
size_t       _cca_vmm_gran(const cca_allocator_t *a);

/* Lookups: the first mapping of m at or above addr (m's own index: the
 * allocator's table, _cca_vmm_map_index); the unmapped address space from
 * addr up (to the next mapping or the end of its reservation) and right
 * below it (down to the mapping below or the reservation's start); the
 * largest unmapped gap of any reservation (its length; *start, and *below:
 * something lies below it in its reservation). */
size_t _cca_vmm_index(const cca_xmaps_t *m, uintptr_t addr);
size_t _cca_vmm_map_index(const struct cca_xvmm *x, uintptr_t addr);
size_t _cca_vmm_room_at(const struct cca_xvmm *x, const cca_xmaps_t *m, uintptr_t addr);
size_t _cca_vmm_room_below(const struct cca_xvmm *x, const cca_xmaps_t *m, uintptr_t addr);
size_t _cca_vmm_largest_gap(const struct cca_xvmm *x, const cca_xmaps_t *m, uintptr_t *start, bool *below);

/* Host memory for one more mapping or held handle, made before a change
 * that must not fail halfway (false: none; ctx and text left to the caller). */
bool _cca_vmm_room_maps(cca_allocator_t *a);
bool _cca_vmm_room_held(cca_allocator_t *a);

/* Changes. A new reservation of at least `need` bytes (the last of
 * x->res). Holding handle h (room made first); taking held[i] back out.
 * A new handle of *hs bytes counted in pool (want: the size tried where the
 * device refuses *hs, then in *hs). Mapping h (hs bytes, counted in hpool,
 * from now in pool) at `at` (room made first): on failure it is held
 * unmapped, a caller's handle never lost. Unmapping maps[mi] (room for its
 * hold made first; the caller holds its handle): false, nothing changed,
 * when the driver refuses. Releasing held handles from index `from` on,
 * those the driver keeps staying held; unmapping strays (mapped, no
 * access) into held ones, tried again whenever memory is given back. */
cca_status_t _cca_vmm_reserve(cca_allocator_t *a, size_t need, cca_oom_ctx_t *ctx);
void         _cca_vmm_hold(cca_allocator_t *a, CUmemGenericAllocationHandle h, size_t size, int pool);
cca_xheld_t  _cca_vmm_take_held(cca_allocator_t *a, size_t i);
cca_status_t _cca_vmm_create(cca_allocator_t *a, int pool, size_t *hs, size_t want, CUmemGenericAllocationHandle *h,
                             cca_oom_ctx_t *ctx);
cca_status_t _cca_vmm_map(cca_allocator_t *a, uintptr_t at, CUmemGenericAllocationHandle h, size_t hs, int hpool, int pool,
                          cca_oom_ctx_t *ctx);
bool         _cca_vmm_unmap(cca_allocator_t *a, size_t mi);
void         _cca_vmm_release_held(cca_allocator_t *a, size_t from);
void         _cca_vmm_retry_strays(cca_allocator_t *a);
CUresult     _cca_vmm_get_access(const struct cca_xvmm *x, uintptr_t at, unsigned long long *flags);   /* cuMemGetAccess */

#endif /* CCA_VMM_H */
