/* bins.c - the free blocks of one stream and pool, by size class: about 32
 * classes per doubling (exact below 32 KiB), a two-level bitmap of the
 * non-empty ones, and in each class a treap by (size, addr). Best fit is a
 * lower bound in the request's class, else the smallest block of the next
 * non-empty class: O(1) bitmap work plus a search in one small tree. */
#include "internal.h"

static inline unsigned bins_bin_of(size_t size)
{
    uint64_t units = (uint64_t)size >> 9;            /* sizes are multiples of 512 B */
    if (units < CCA_BIN_EXACT) return (unsigned)units;
    unsigned e = 63u - (unsigned)__builtin_clzll(units);   /* >= log2(CCA_BIN_EXACT) */
    unsigned sub = (unsigned)(units >> (e - CCA_BIN_SUB_BITS)) & (CCA_BIN_SUBS - 1);
    unsigned bin = CCA_BIN_EXACT + (e - CCA_BIN_EXACT_BITS) * CCA_BIN_SUBS + sub;
    return bin < CCA_BIN_COUNT ? bin : CCA_BIN_COUNT - 1;
}

static inline void bins_mark(cca_bins_t *bs, unsigned bin)
{
    bs->words[bin / 64] |= 1ull << (bin % 64);
    bs->summary |= 1ull << (bin / 64);
}

static inline void bins_unmark_if_empty(cca_bins_t *bs, unsigned bin)
{
    if (bs->root[bin]) return;
    bs->words[bin / 64] &= ~(1ull << (bin % 64));
    if (!bs->words[bin / 64]) bs->summary &= ~(1ull << (bin / 64));
}

/* The first non-empty bin at or above `bin`, or CCA_BIN_COUNT. */
static unsigned bins_next_bin(const cca_bins_t *bs, unsigned bin)
{
    if (bin >= CCA_BIN_COUNT) return CCA_BIN_COUNT;
    unsigned w = bin / 64;
    uint64_t bits = bs->words[w] & (~0ull << (bin % 64));
    if (bits) return w * 64 + (unsigned)__builtin_ctzll(bits);
    uint64_t rest = w + 1 < 64 ? bs->summary & (~0ull << (w + 1)) : 0;
    if (!rest) return CCA_BIN_COUNT;
    w = (unsigned)__builtin_ctzll(rest);
    return w * 64 + (unsigned)__builtin_ctzll(bs->words[w]);
}

void _cca_bins_insert(cca_bins_t *bs, cca_block_t *b)
{
    unsigned bin = bins_bin_of(b->size);
    _cca_tree_insert(&bs->root[bin], b);
    bins_mark(bs, bin);
    bs->count++;
}

void _cca_bins_remove(cca_bins_t *bs, cca_block_t *b)
{
    unsigned bin = bins_bin_of(b->size);
    _cca_tree_remove(&bs->root[bin], b);
    bins_unmark_if_empty(bs, bin);
    bs->count--;
}

void _cca_bins_rekey(cca_bins_t *bs, cca_block_t *old, cca_block_t *nu, uintptr_t new_addr, size_t new_size)
{
    unsigned from = bins_bin_of(old->size), to = bins_bin_of(new_size);
    if (from == to) {
        _cca_tree_rekey(&bs->root[from], old, nu, new_addr, new_size);
        return;
    }
    if (bs->root[from] == old && !old->left && !old->right && !bs->root[to]) {
        bs->root[from] = NULL;                       /* alone in its class, moving to an empty one */
        nu->left = nu->right = NULL;
        nu->prio = old->prio;
        if (nu != old) old->left = old->right = NULL;
    } else {
        _cca_tree_remove(&bs->root[from], old);
    }
    bins_unmark_if_empty(bs, from);
    nu->addr = new_addr;
    nu->size = new_size;
    if (bs->root[to]) _cca_tree_insert(&bs->root[to], nu);
    else bs->root[to] = nu;
    bins_mark(bs, to);
}

cca_block_t *_cca_bins_best_fit(const cca_bins_t *bs, size_t size)
{
    unsigned bin = bins_bin_of(size);
    if (bs->root[bin]) {
        cca_block_t *b = _cca_tree_lower_bound(bs->root[bin], size);
        if (b) return b;
        bin++;
    }
    bin = bins_next_bin(bs, bin);
    if (bin == CCA_BIN_COUNT) return NULL;
    cca_block_t *t = bs->root[bin];
    while (t->left) t = t->left;
    return t;
}

cca_block_t *_cca_bins_largest(const cca_bins_t *bs)
{
    if (!bs->summary) return NULL;
    unsigned w = 63u - (unsigned)__builtin_clzll(bs->summary);
    unsigned bin = w * 64 + 63u - (unsigned)__builtin_clzll(bs->words[w]);
    return _cca_tree_max(bs->root[bin]);
}

bool _cca_bins_contains(const cca_bins_t *bs, const cca_block_t *b)
{
    const cca_block_t *t = bs->root[bins_bin_of(b->size)];
    while (t && t != b)
        t = (b->size < t->size || (b->size == t->size && b->addr < t->addr)) ? t->left : t->right;
    return t == b;
}

void _cca_bins_visit(const cca_bins_t *bs, cca_tree_visit_fn fn, void *arg)
{
    for (unsigned bin = bins_next_bin(bs, 0); bin < CCA_BIN_COUNT; bin = bins_next_bin(bs, bin + 1))
        _cca_tree_visit(bs->root[bin], fn, arg);
}

/* The free block right after b in (size, addr) order, or NULL. */
cca_block_t *_cca_bins_next(const cca_bins_t *bs, const cca_block_t *b)
{
    unsigned bin = bins_bin_of(b->size);
    cca_block_t *t = bs->root[bin], *best = NULL;
    while (t) {
        if (b->size < t->size || (b->size == t->size && b->addr < t->addr)) { best = t; t = t->left; }
        else t = t->right;
    }
    if (best) return best;
    bin = bins_next_bin(bs, bin + 1);
    if (bin == CCA_BIN_COUNT) return NULL;
    for (t = bs->root[bin]; t->left; t = t->left) {}
    return t;
}
