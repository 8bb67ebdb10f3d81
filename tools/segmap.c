/* segmap.c - building a segment map (segmap.h). */
#include "segmap.h"

#include <stdlib.h>
#include <string.h>

/* Room for one more of *n elements of elem bytes at *p (capacity *cap, first `first`): 0, or -1. */
static int grow(void **p, size_t n, size_t *cap, size_t elem, size_t first)
{
    if (n < *cap)
        return 0;
    size_t c = *cap ? 2 * *cap : first;
    void *q = realloc(*p, c * elem);
    if (!q)
        return -1;
    *p = q;
    *cap = c;
    return 0;
}

int svg_map_segment(svg_segmap_t *m, uint64_t address, uint64_t size, int large, long long stream)
{
    if (grow((void **)&m->segs, m->n_segs, &m->cap_segs, sizeof *m->segs, 64))
        return -1;
    m->segs[m->n_segs++] = (svg_segment_t){address, size, large, stream, m->n_blocks, 0};
    return 0;
}

int svg_map_block(svg_segmap_t *m, uint64_t offset, uint64_t size, int state)
{
    if (!m->n_segs || grow((void **)&m->blocks, m->n_blocks, &m->cap_blocks, sizeof *m->blocks, 256))
        return -1;
    m->blocks[m->n_blocks++] = (svg_block_t){offset, size, state};
    m->segs[m->n_segs - 1].n_blocks++;
    return 0;
}

void svg_map_free(svg_segmap_t *m)
{
    free(m->segs);
    free(m->blocks);
    memset(m, 0, sizeof *m);
}

