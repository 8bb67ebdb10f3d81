/* floor.c - the ideal page allocator of floor.h. Each address space keeps
 * its holes twice, sorted by address (to merge a freed block with its
 * neighbours) and by size then address (best fit: a binary search), and a
 * count of live blocks per 2 MiB page; a page counts while that is above
 * zero. Holes never reach the top: a freed block ending there lowers it. */
#include "floor.h"

#include <stdlib.h>
#include <string.h>

typedef struct hole { uint64_t addr, size; } hole_t;

typedef struct space {
    hole_t *by_addr, *by_size;
    size_t n, cap;
    uint64_t top;
    uint32_t *live;                  /* live blocks per page */
    size_t n_pages;
} space_t;

typedef struct place { uint64_t addr, size; uint32_t space; int live; } place_t;

static int size_less(hole_t a, hole_t b) { return a.size < b.size || (a.size == b.size && a.addr < b.addr); }

/* First index whose hole is not before h, in each order. */
static size_t lower_size(const space_t *s, hole_t h)
{
    size_t lo = 0, hi = s->n;
    while (lo < hi) {
        size_t m = lo + (hi - lo) / 2;
        if (size_less(s->by_size[m], h)) lo = m + 1;
        else hi = m;
    }
    return lo;
}

static size_t lower_addr(const space_t *s, uint64_t addr)
{
    size_t lo = 0, hi = s->n;
    while (lo < hi) {
        size_t m = lo + (hi - lo) / 2;
        if (s->by_addr[m].addr < addr) lo = m + 1;
        else hi = m;
    }
    return lo;
}

static int hole_add(space_t *s, hole_t h)
{
    if (s->n == s->cap) {
        size_t cap = s->cap ? 2 * s->cap : 64;
        hole_t *a = realloc(s->by_addr, cap * sizeof *a);
        if (!a) return -1;
        s->by_addr = a;
        hole_t *b = realloc(s->by_size, cap * sizeof *b);
        if (!b) return -1;
        s->by_size = b;
        s->cap = cap;
    }
    size_t i = lower_addr(s, h.addr), j = lower_size(s, h);
    memmove(&s->by_addr[i + 1], &s->by_addr[i], (s->n - i) * sizeof *s->by_addr);
    memmove(&s->by_size[j + 1], &s->by_size[j], (s->n - j) * sizeof *s->by_size);
    s->by_addr[i] = h;
    s->by_size[j] = h;
    s->n++;
    return 0;
}

static void hole_remove(space_t *s, hole_t h)
{
    size_t i = lower_addr(s, h.addr), j = lower_size(s, h);
    memmove(&s->by_addr[i], &s->by_addr[i + 1], (s->n - i - 1) * sizeof *s->by_addr);
    memmove(&s->by_size[j], &s->by_size[j + 1], (s->n - j - 1) * sizeof *s->by_size);
    s->n--;
}

/* Adds d (+1, -1) to the live count of every page [addr, addr + size)
 * touches; *pages follows the pages with a count above zero. */
static int pages_add(space_t *s, uint64_t addr, uint64_t size, int d, uint64_t *pages)
{
    size_t first = (size_t)(addr / FLOOR_PAGE), last = (size_t)((addr + size - 1) / FLOOR_PAGE);
    if (last >= s->n_pages) {
        size_t n = s->n_pages ? s->n_pages : 16;
        while (n <= last) n *= 2;
        uint32_t *l = realloc(s->live, n * sizeof *l);
        if (!l) return -1;
        memset(l + s->n_pages, 0, (n - s->n_pages) * sizeof *l);
        s->live = l;
        s->n_pages = n;
    }
    for (size_t p = first; p <= last; p++) {
        if (d > 0 && s->live[p]++ == 0) ++*pages;
        if (d < 0 && --s->live[p] == 0) --*pages;
    }
    return 0;
}

static int space_alloc(space_t *s, uint64_t size, uint64_t *addr)
{
    size_t j = lower_size(s, (hole_t){ 0, size });
    if (j == s->n) {                   /* no hole fits: the top */
        *addr = s->top;
        s->top += size;
        return 0;
    }
    hole_t h = s->by_size[j];
    hole_remove(s, h);
    *addr = h.addr;
    return h.size > size ? hole_add(s, (hole_t){ h.addr + size, h.size - size }) : 0;
}

static int space_free(space_t *s, uint64_t addr, uint64_t size)
{
    hole_t m = { addr, size };
    size_t i = lower_addr(s, addr);
    if (i > 0 && s->by_addr[i - 1].addr + s->by_addr[i - 1].size == addr) {   /* the hole below */
        hole_t below = s->by_addr[i - 1];
        hole_remove(s, below);
        m.addr = below.addr;
        m.size += below.size;
        i--;
    }
    if (i < s->n && s->by_addr[i].addr == addr + size) {   /* the hole above */
        hole_t above = s->by_addr[i];
        hole_remove(s, above);
        m.size += above.size;
    }
    if (m.addr + m.size == s->top) {
        s->top = m.addr;
        return 0;
    }
    return hole_add(s, m);
}

int floor_pages(const trace_t *t, uint64_t *peak_pages, uint64_t *end_pages)
{
    size_t n_spaces = 2 * (t->n_streams ? t->n_streams : 1);
    space_t *sp = calloc(n_spaces, sizeof *sp);
    place_t *pl = calloc(t->n_slots ? t->n_slots : 1, sizeof *pl);
    uint64_t pages = 0, peak = 0;
    int rc = sp && pl ? 0 : -1;
    for (size_t k = 0; !rc && k < t->n_events; k++) {
        const trace_event_t *e = &t->events[k];
        if (e->op == TRACE_ALLOC) {
            uint64_t size = e->size < FLOOR_ROUND ? FLOOR_ROUND : (e->size + FLOOR_ROUND - 1) / FLOOR_ROUND * FLOOR_ROUND;
            uint32_t si = (uint32_t)(2 * e->stream + (size > FLOOR_SMALL));
            place_t *p = &pl[e->slot];
            *p = (place_t){ 0, size, si, 1 };
            rc = space_alloc(&sp[si], size, &p->addr) || pages_add(&sp[si], p->addr, size, 1, &pages);
            if (pages > peak) peak = pages;
        } else if (e->op == TRACE_FREE && pl[e->slot].live) {
            place_t *p = &pl[e->slot];
            p->live = 0;
            rc = pages_add(&sp[p->space], p->addr, p->size, -1, &pages) || space_free(&sp[p->space], p->addr, p->size);
        }
    }
    for (size_t i = 0; sp && i < n_spaces; i++) {
        free(sp[i].by_addr);
        free(sp[i].by_size);
        free(sp[i].live);
    }
    free(sp);
    free(pl);
    *peak_pages = peak;
    if (end_pages) *end_pages = pages;
    return rc;
}
