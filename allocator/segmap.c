/* segmap.c - the allocator-wide address map: device address -> the segment
 * that holds it, so that a free or record_stream from any thread finds the
 * owning stream without scanning. A radix tree over 2 MiB chunks (every
 * segment is at least 2 MiB, so a chunk meets at most two segments: one
 * covering its first byte, one starting inside it). Written only when a
 * segment is created or released (all locked, or by a growing stream
 * holding its lock and the segment-list lock), never per block; read
 * without a lock. Nodes are never freed before the allocator, and segment
 * records are recycled rather than freed, so a reader that raced with a
 * release reads a stale but valid record and is corrected under the stream
 * lock it then takes. */
#include <stdlib.h>
#include "internal.h"

bool _cca_segmap_init(cca_allocator_t *a)
{
    a->segmap = calloc((size_t)1 << CCA_SEGMAP_L0_BITS, sizeof *a->segmap);
    if (!a->segmap) return false;
    a->host_bytes += ((size_t)1 << CCA_SEGMAP_L0_BITS) * sizeof *a->segmap;
    return true;
}

void _cca_segmap_fini(cca_allocator_t *a)
{
    if (!a->segmap) return;
    for (size_t i = 0; i < ((size_t)1 << CCA_SEGMAP_L0_BITS); i++) {
        struct cca_segmap_node *n1 = atomic_load_explicit(&a->segmap[i], memory_order_relaxed);
        if (!n1) continue;
        for (size_t j = 0; j < (1u << CCA_SEGMAP_L1_BITS); j++) {
            struct cca_segmap_node *n2 = atomic_load_explicit(&n1->child[j], memory_order_relaxed);
            if (!n2) continue;
            for (size_t k = 0; k < (1u << CCA_SEGMAP_L2_BITS); k++) free(atomic_load_explicit(&n2->child[k], memory_order_relaxed));
            free(n2);
        }
        free(n1);
    }
    free((void *)a->segmap);
    a->segmap = NULL;
}

/* The child at *slot, created if absent (a writer: see above); NULL if host memory ran out. */
static void *segmap_child(cca_allocator_t *a, void *_Atomic *slot, size_t size)
{
    void *c = atomic_load_explicit(slot, memory_order_relaxed);
    if (c) return c;
    if (!(c = calloc(1, size))) return NULL;
    a->host_bytes += size;
    atomic_store_explicit(slot, c, memory_order_release);   /* readers see it zeroed */
    return c;
}

static struct cca_segmap_leaf *segmap_leaf_of(cca_allocator_t *a, uint64_t c, bool create)
{
    void *_Atomic *s0 = (void *_Atomic *)&a->segmap[_cca_segmap_idx0(c)];
    struct cca_segmap_node *n1 = create ? segmap_child(a, s0, sizeof *n1) : atomic_load_explicit(s0, memory_order_acquire);
    if (!n1) return NULL;
    struct cca_segmap_node *n2 = create ? segmap_child(a, &n1->child[_cca_segmap_idx1(c)], sizeof *n2)
                                        : atomic_load_explicit(&n1->child[_cca_segmap_idx1(c)], memory_order_acquire);
    if (!n2) return NULL;
    return create ? segmap_child(a, &n2->child[_cca_segmap_idx2(c)], sizeof(struct cca_segmap_leaf))
                  : atomic_load_explicit(&n2->child[_cca_segmap_idx2(c)], memory_order_acquire);
}

/* Makes room for a segment at [addr, addr + size) before it is created, so
 * that publishing it cannot fail (a writer): one walk per leaf. */
bool _cca_segmap_reserve(cca_allocator_t *a, uintptr_t addr, size_t size)
{
    for (uint64_t c = addr >> CCA_SEGMAP_CHUNK_BITS, last = (addr + size - 1) >> CCA_SEGMAP_CHUNK_BITS; c <= last; c = (c | CCA_SEGMAP_LEAF_MASK) + 1)
        if (!segmap_leaf_of(a, c, true)) return false;
    return true;
}

/* Publishes seg (or, with seg NULL, withdraws the segment at the range),
 * a leaf at a time: one walk per leaf, then its entries in a row. */
static void segmap_set_range(cca_allocator_t *a, uintptr_t addr, size_t size, cca_segment_t *seg)
{
    uint64_t first = addr >> CCA_SEGMAP_CHUNK_BITS, last = (addr + size - 1) >> CCA_SEGMAP_CHUNK_BITS;
    for (uint64_t c = first; c <= last;) {
        struct cca_segmap_leaf *l = segmap_leaf_of(a, c, false);   /* reserved before */
        uint64_t end = (c | CCA_SEGMAP_LEAF_MASK) < last ? (c | CCA_SEGMAP_LEAF_MASK) : last;   /* the range's last chunk in this leaf */
        for (; c <= end; c++) {
            size_t i = _cca_segmap_idxl(c);
            if (c == first && (addr & (((uintptr_t)1 << CCA_SEGMAP_CHUNK_BITS) - 1))) {
                atomic_store_explicit(&l->e[i].hi_addr, seg ? addr : 0, memory_order_relaxed);
                atomic_store_explicit(&l->e[i].hi, seg, memory_order_release);
            } else {
                atomic_store_explicit(&l->e[i].lo, seg, memory_order_release);
            }
        }
    }
}

void _cca_segmap_insert(cca_allocator_t *a, cca_segment_t *seg) { segmap_set_range(a, seg->addr, seg->size, seg); }
void _cca_segmap_set(cca_allocator_t *a, uintptr_t addr, size_t size, cca_segment_t *seg) { segmap_set_range(a, addr, size, seg); }
void _cca_segmap_remove(cca_allocator_t *a, cca_segment_t *seg) { segmap_set_range(a, seg->addr, seg->size, NULL); }
