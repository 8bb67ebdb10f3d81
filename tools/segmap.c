/* segmap.c - building a segment map (segmap.h). */
#include "segmap.h"

#include <stdlib.h>
#include <string.h>

int svg_map_segment(svg_segmap_t *m, uint64_t address, uint64_t size, int large, long long stream)
{
    if (m->n_segs == m->cap_segs) {
        size_t cap = m->cap_segs ? 2 * m->cap_segs : 64;
        svg_segment_t *s = realloc(m->segs, cap * sizeof *s);
        if (!s)
            return -1;
        m->segs = s;
        m->cap_segs = cap;
    }
    m->segs[m->n_segs++] = (svg_segment_t){address, size, large, stream, m->n_blocks, 0};
    return 0;
}

int svg_map_block(svg_segmap_t *m, uint64_t offset, uint64_t size, int state)
{
    if (!m->n_segs)
        return -1;
    if (m->n_blocks == m->cap_blocks) {
        size_t cap = m->cap_blocks ? 2 * m->cap_blocks : 256;
        svg_block_t *b = realloc(m->blocks, cap * sizeof *b);
        if (!b)
            return -1;
        m->blocks = b;
        m->cap_blocks = cap;
    }
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

