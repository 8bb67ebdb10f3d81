/* sim_internal.h - internals of the simulated CUDA device (not installed). */
#ifndef CCA_SIM_INTERNAL_H
#define CCA_SIM_INTERNAL_H

#include <stddef.h>
#include <stdint.h>
#include "cca_u64map.h"

#define SIM_HIDDEN __attribute__((visibility("hidden")))

/* Free address extents of one device: a treap ordered by address, each node
 * knowing the largest extent below it, so that first fit (the lowest address
 * that fits) and coalescing with both neighbours are O(log n). Deterministic:
 * priorities are a hash of the address. */
typedef struct sim_ext {
    uintptr_t addr;
    size_t size, maxsz;
    uint32_t prio;
    struct sim_ext *l, *r;
} sim_ext_t;

typedef struct sim_extents { sim_ext_t *root; size_t count; } sim_extents_t;

/* Lowest-address extent of at least size bytes, carved from its start; 0 if none. */
SIM_HIDDEN uintptr_t sim_ext_take(sim_extents_t *x, size_t size);
/* Returns [addr, addr+size) to the free extents, merging with neighbours.
 * -1 if a node could not be allocated (the range is then lost). */
SIM_HIDDEN int  sim_ext_give(sim_extents_t *x, uintptr_t addr, size_t size);
SIM_HIDDEN void sim_ext_clear(sim_extents_t *x);
SIM_HIDDEN size_t sim_ext_largest(const sim_extents_t *x);

/* Live allocations, by base address: the shared map (common/cca_u64map.h:
 * linear probing, backward-shift deletion), grown at half load. */
typedef struct sim_alloc {
    uintptr_t addr;        /* 0: empty slot */
    size_t size;           /* bytes requested (counted against capacity) */
    size_t carved;         /* bytes of address space taken */
    int dev;
} sim_alloc_t;

typedef struct sim_ptrmap { CCA_U64MAP_FIELDS(sim_alloc_t); } sim_ptrmap_t;

SIM_HIDDEN int  sim_map_put(sim_ptrmap_t *m, const sim_alloc_t *a);   /* 0, or -1: no host memory */
SIM_HIDDEN int  sim_map_take(sim_ptrmap_t *m, uintptr_t addr, sim_alloc_t *out); /* 1: found and removed */
SIM_HIDDEN void sim_map_clear(sim_ptrmap_t *m);

#endif
