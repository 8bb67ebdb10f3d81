/* tree.c - the free blocks of one stream and pool, ordered by (size, addr):
 * a treap, so best fit is a lower-bound search in O(log n) expected. The
 * priority comes from the block's address, so layouts are deterministic. */
#include "internal.h"

static inline bool tree_key_less(const cca_block_t *a, const cca_block_t *b)
{
    return a->size < b->size || (a->size == b->size && a->addr < b->addr);
}

static uint32_t tree_addr_prio(uintptr_t addr)
{
    uint64_t x = (uint64_t)addr * 0x9E3779B97F4A7C15ull;
    x ^= x >> 29;
    return (uint32_t)(x >> 32) | 1u;
}

static cca_block_t *tree_merge(cca_block_t *l, cca_block_t *r)
{
    if (!l) return r;
    if (!r) return l;
    if (l->prio > r->prio) {
        l->right = tree_merge(l->right, r);
        return l;
    }
    r->left = tree_merge(l, r->left);
    return r;
}

void _cca_tree_insert(cca_block_t **root, cca_block_t *b)
{
    b->prio = tree_addr_prio(b->addr);
    b->left = b->right = NULL;
    cca_block_t **link = root;
    while (*link && (*link)->prio > b->prio)
        link = tree_key_less(b, *link) ? &(*link)->left : &(*link)->right;
    /* split the subtree at *link around b's key */
    cca_block_t *t = *link, **l = &b->left, **r = &b->right;
    while (t) {
        if (tree_key_less(t, b)) { *l = t; l = &t->right; t = t->right; }
        else                { *r = t; r = &t->left;  t = t->left; }
    }
    *l = *r = NULL;
    *link = b;
}

void _cca_tree_remove(cca_block_t **root, cca_block_t *b)
{
    cca_block_t **link = root;
    while (*link != b)
        link = tree_key_less(b, *link) ? &(*link)->left : &(*link)->right;
    *link = tree_merge(b->left, b->right);
    b->left = b->right = NULL;
}

static cca_block_t *tree_leftmost(cca_block_t *t) { while (t->left) t = t->left; return t; }
static cca_block_t *tree_rightmost(cca_block_t *t) { while (t->right) t = t->right; return t; }

/* Gives tree node `old` the key (new_size, new_addr), carried by `nu` (old
 * itself, or a block taking its place). The hot path's split and merge only
 * shrink or grow one free block, which rarely changes its rank: then nu just
 * takes old's place, saving a remove and an insert. */
void _cca_tree_rekey(cca_block_t **root, cca_block_t *old, cca_block_t *nu, uintptr_t new_addr, size_t new_size)
{
    cca_block_t **link = root, *pred = NULL, *succ = NULL;
    while (*link != old) {
        if (tree_key_less(old, *link)) { succ = *link; link = &(*link)->left; }
        else                      { pred = *link; link = &(*link)->right; }
    }
    if (old->left) pred = tree_rightmost(old->left);
    if (old->right) succ = tree_leftmost(old->right);
    cca_block_t *l = old->left, *r = old->right;
    uint32_t prio = old->prio;
    old->left = old->right = NULL;
    nu->addr = new_addr;
    nu->size = new_size;
    if ((!pred || tree_key_less(pred, nu)) && (!succ || tree_key_less(nu, succ))) {
        nu->left = l;
        nu->right = r;
        nu->prio = prio;
        *link = nu;
        return;
    }
    *link = tree_merge(l, r);
    _cca_tree_insert(root, nu);
}

cca_block_t *_cca_tree_lower_bound(cca_block_t *t, size_t size)
{
    cca_block_t *best = NULL;
    while (t) {
        if (t->size >= size) { best = t; t = t->left; }
        else t = t->right;
    }
    return best;
}

cca_block_t *_cca_tree_max(cca_block_t *t)
{
    while (t && t->right) t = t->right;
    return t;
}

void _cca_tree_visit(cca_block_t *t, cca_tree_visit_fn fn, void *arg)
{
    while (t) {                      /* in order; recursion on the left only */
        _cca_tree_visit(t->left, fn, arg);
        cca_block_t *right = t->right;
        fn(t, arg);                  /* fn may not change the tree */
        t = right;
    }
}
