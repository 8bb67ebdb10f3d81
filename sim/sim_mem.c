/* sim_mem.c - address carving (free extents) and the allocation map of the
 * simulated CUDA device. Callers hold the simulator's lock. */
#include "sim_internal.h"

#include <stdlib.h>

/* ---- free extents: treap by address, augmented with the largest size ---- */

static size_t mx(const sim_ext_t *t) { return t ? t->maxsz : 0; }

static void upd(sim_ext_t *t)
{
    size_t m = t->size;
    if (mx(t->l) > m) m = mx(t->l);
    if (mx(t->r) > m) m = mx(t->r);
    t->maxsz = m;
}

static uint32_t prio_of(uintptr_t a)
{
    uint64_t z = (uint64_t)a + 0x9E3779B97F4A7C15ull;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return (uint32_t)(z ^ (z >> 31));
}

/* a: addresses < key, b: addresses >= key */
static void split(sim_ext_t *t, uintptr_t key, sim_ext_t **a, sim_ext_t **b)
{
    if (!t) { *a = *b = NULL; return; }
    if (t->addr < key) { split(t->r, key, &t->r, b); *a = t; }
    else               { split(t->l, key, a, &t->l); *b = t; }
    upd(t);
}

static sim_ext_t *merge(sim_ext_t *a, sim_ext_t *b)
{
    if (!a) return b;
    if (!b) return a;
    if (a->prio > b->prio) { a->r = merge(a->r, b); upd(a); return a; }
    b->l = merge(a, b->l); upd(b); return b;
}

static void insert(sim_extents_t *x, sim_ext_t *n)
{
    sim_ext_t *l, *r;
    n->l = n->r = NULL;
    n->prio = prio_of(n->addr);
    upd(n);
    split(x->root, n->addr, &l, &r);
    x->root = merge(merge(l, n), r);
    x->count++;
}

static sim_ext_t *detach(sim_extents_t *x, uintptr_t addr)
{
    sim_ext_t *l, *m, *r;
    split(x->root, addr, &l, &r);
    split(r, addr + 1, &m, &r);
    x->root = merge(l, r);
    if (m) x->count--;
    return m;
}

/* After a node's size (or its address, within its neighbours) changed in
 * place: recompute the largest sizes on the path from the root to it. */
static void refresh(sim_ext_t *t, uintptr_t addr)
{
    if (t->addr != addr) refresh(addr < t->addr ? t->l : t->r, addr);
    upd(t);
}

uintptr_t sim_ext_take(sim_extents_t *x, size_t size)
{
    sim_ext_t *t = x->root;
    if (size == 0 || mx(t) < size) return 0;
    while (t) {
        if (mx(t->l) >= size) t = t->l;
        else if (t->size >= size) break;
        else t = t->r;
    }
    if (!t) return 0;
    uintptr_t addr = t->addr;
    if (t->size > size) {
        t->addr += size;             /* still between its neighbours: stays in place */
        t->size -= size;
        refresh(x->root, t->addr);
    } else {
        free(detach(x, addr));
    }
    return addr;
}

int sim_ext_give(sim_extents_t *x, uintptr_t addr, size_t size)
{
    sim_ext_t *p = NULL, *s = NULL, *t;
    for (t = x->root; t;) {
        if (t->addr < addr) { p = t; t = t->r; } else t = t->l;
    }
    for (t = x->root; t;) {
        if (t->addr > addr) { s = t; t = t->l; } else t = t->r;
    }
    int with_p = p && p->addr + p->size == addr;
    int with_s = s && addr + size == s->addr;
    if (with_p && with_s) {          /* p grows over the range and s */
        size_t ssize = s->size;
        free(detach(x, s->addr));
        p->size += size + ssize;
        refresh(x->root, p->addr);
    } else if (with_p) {
        p->size += size;
        refresh(x->root, p->addr);
    } else if (with_s) {             /* s starts earlier, still after p */
        s->addr = addr;
        s->size += size;
        refresh(x->root, s->addr);
    } else {
        sim_ext_t *n = malloc(sizeof *n);
        if (!n) return -1;
        n->addr = addr;
        n->size = size;
        insert(x, n);
    }
    return 0;
}

static void free_tree(sim_ext_t *t)
{
    while (t) {
        sim_ext_t *r = t->r;
        free_tree(t->l);
        free(t);
        t = r;
    }
}

void sim_ext_clear(sim_extents_t *x)
{
    free_tree(x->root);
    x->root = NULL;
    x->count = 0;
}

size_t sim_ext_largest(const sim_extents_t *x) { return mx(x->root); }

/* ---- allocation map ---- */

CCA_U64MAP_DEFINE(sim_allocs, sim_ptrmap_t, sim_alloc_t, addr, cca_u64map_home_addr, 1, 2)

int sim_map_put(sim_ptrmap_t *m, const sim_alloc_t *a)
{
    if (!sim_allocs_reserve(m)) return -1;
    *sim_allocs_add(m, a->addr) = *a;
    return 0;
}

int sim_map_take(sim_ptrmap_t *m, uintptr_t addr, sim_alloc_t *out)
{
    sim_alloc_t *s = m->slots && addr ? sim_allocs_find(m, addr) : NULL;
    if (!s) return 0;
    *out = *s;
    sim_allocs_erase(m, s);
    return 1;
}

void sim_map_clear(sim_ptrmap_t *m)
{
    sim_allocs_fini(m);
}
