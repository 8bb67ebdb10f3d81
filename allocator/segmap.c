/* segmap.c - the allocator-wide address map: device address -> the segment
 * that holds it, so that a free or record_stream from any thread finds the
 * owning stream without scanning. A radix tree over 2 MiB chunks (every
 * segment is at least 2 MiB, so a chunk meets at most two segments: one
 * covering its first byte, one starting inside it). Written only when a
 * segment is created or released (all locked), never per block; read
 * without a lock. Nodes are never freed before the allocator, and segment
 * records are recycled rather than freed, so a reader that raced with a
 * release reads a stale but valid record and is corrected under the stream
 * lock it then takes. */
#include <stdlib.h>
#include "internal.h"

#define CHUNK_BITS 21
#define L0_BITS 12
#define L1_BITS 11
#define L2_BITS 11
#define LEAF_BITS 9                             /* 12 + 11 + 11 + 9 + 21 = 64 */
#define LEAF_MASK (((uint64_t)1 << LEAF_BITS) - 1)  /* a chunk number's place in its leaf */

struct cca_segmap_leaf {
    struct {
        _Atomic uintptr_t hi_addr;              /* where `hi` starts; 0: none */
        cca_segment_t *_Atomic hi;              /* the segment starting inside the chunk */
        cca_segment_t *_Atomic lo;              /* the segment covering the chunk's first byte */
    } e[1u << LEAF_BITS];
};
struct cca_segmap_node { void *_Atomic child[1u << L1_BITS]; };  /* L1 and L2 have the same width */

_Static_assert(L1_BITS == L2_BITS, "one node type for both inner levels");

static inline size_t segmap_idx0(uint64_t c) { return (size_t)(c >> (L1_BITS + L2_BITS + LEAF_BITS)); }
static inline size_t segmap_idx1(uint64_t c) { return (size_t)(c >> (L2_BITS + LEAF_BITS)) & ((1u << L1_BITS) - 1); }
static inline size_t segmap_idx2(uint64_t c) { return (size_t)(c >> LEAF_BITS) & ((1u << L2_BITS) - 1); }
static inline size_t segmap_idxl(uint64_t c) { return (size_t)c & ((1u << LEAF_BITS) - 1); }

bool _cca_segmap_init(cca_allocator_t *a)
{
    a->segmap = calloc((size_t)1 << L0_BITS, sizeof *a->segmap);
    if (!a->segmap) return false;
    a->host_bytes += ((size_t)1 << L0_BITS) * sizeof *a->segmap;
    return true;
}

void _cca_segmap_fini(cca_allocator_t *a)
{
    if (!a->segmap) return;
    for (size_t i = 0; i < ((size_t)1 << L0_BITS); i++) {
        struct cca_segmap_node *n1 = atomic_load_explicit(&a->segmap[i], memory_order_relaxed);
        if (!n1) continue;
        for (size_t j = 0; j < (1u << L1_BITS); j++) {
            struct cca_segmap_node *n2 = atomic_load_explicit(&n1->child[j], memory_order_relaxed);
            if (!n2) continue;
            for (size_t k = 0; k < (1u << L2_BITS); k++) free(atomic_load_explicit(&n2->child[k], memory_order_relaxed));
            free(n2);
        }
        free(n1);
    }
    free((void *)a->segmap);
    a->segmap = NULL;
}

/* The child at *slot, created if absent (all locked); NULL if host memory ran out. */
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
    void *_Atomic *s0 = (void *_Atomic *)&a->segmap[segmap_idx0(c)];
    struct cca_segmap_node *n1 = create ? segmap_child(a, s0, sizeof *n1) : atomic_load_explicit(s0, memory_order_acquire);
    if (!n1) return NULL;
    struct cca_segmap_node *n2 = create ? segmap_child(a, &n1->child[segmap_idx1(c)], sizeof *n2)
                                        : atomic_load_explicit(&n1->child[segmap_idx1(c)], memory_order_acquire);
    if (!n2) return NULL;
    return create ? segmap_child(a, &n2->child[segmap_idx2(c)], sizeof(struct cca_segmap_leaf))
                  : atomic_load_explicit(&n2->child[segmap_idx2(c)], memory_order_acquire);
}

/* Makes room for a segment at [addr, addr + size) before it is created, so
 * that publishing it cannot fail (all locked): one walk per leaf. */
bool _cca_segmap_reserve(cca_allocator_t *a, uintptr_t addr, size_t size)
{
    for (uint64_t c = addr >> CHUNK_BITS, last = (addr + size - 1) >> CHUNK_BITS; c <= last; c = (c | LEAF_MASK) + 1)
        if (!segmap_leaf_of(a, c, true)) return false;
    return true;
}

/* Publishes seg (or, with seg NULL, withdraws the segment at the range),
 * a leaf at a time: one walk per leaf, then its entries in a row. */
static void segmap_set_range(cca_allocator_t *a, uintptr_t addr, size_t size, cca_segment_t *seg)
{
    uint64_t first = addr >> CHUNK_BITS, last = (addr + size - 1) >> CHUNK_BITS;
    for (uint64_t c = first; c <= last;) {
        struct cca_segmap_leaf *l = segmap_leaf_of(a, c, false);   /* reserved before */
        uint64_t end = (c | LEAF_MASK) < last ? (c | LEAF_MASK) : last;   /* the range's last chunk in this leaf */
        for (; c <= end; c++) {
            size_t i = segmap_idxl(c);
            if (c == first && (addr & (((uintptr_t)1 << CHUNK_BITS) - 1))) {
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

cca_segment_t *_cca_segmap_find(const cca_allocator_t *a, uintptr_t p)
{
    uint64_t c = p >> CHUNK_BITS;
    struct cca_segmap_node *n1 = atomic_load_explicit(&a->segmap[segmap_idx0(c)], memory_order_acquire);
    if (!n1) return NULL;
    struct cca_segmap_node *n2 = atomic_load_explicit(&n1->child[segmap_idx1(c)], memory_order_acquire);
    if (!n2) return NULL;
    struct cca_segmap_leaf *l = atomic_load_explicit(&n2->child[segmap_idx2(c)], memory_order_acquire);
    if (!l) return NULL;
    size_t i = segmap_idxl(c);
    uintptr_t hi = atomic_load_explicit(&l->e[i].hi_addr, memory_order_relaxed);
    if (hi && p >= hi) return atomic_load_explicit(&l->e[i].hi, memory_order_acquire);
    return atomic_load_explicit(&l->e[i].lo, memory_order_acquire);
}
