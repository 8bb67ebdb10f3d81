/* segmap.h - the segments and blocks of an allocator's state, as a
 * segment map draws them (svg_segments): read from a snapshot pickle
 * (snapshot_segmaps_from_pickle, snapshot_csv.h) or from a live cca
 * allocator (replay_main.c). */
#ifndef CCA_SEGMAP_H
#define CCA_SEGMAP_H

#include <stddef.h>
#include <stdint.h>

enum { SVG_ALLOCATED, SVG_PENDING_FREE, SVG_INACTIVE };
typedef struct svg_block { uint64_t offset, size; int state; } svg_block_t;
typedef struct svg_segment {
    uint64_t address, size;
    int large;                           /* the large pool (else the small one) */
    long long stream;
    size_t first_block, n_blocks;        /* into the map's blocks, by address */
} svg_segment_t;
typedef struct svg_segmap {
    int device;
    svg_segment_t *segs;
    size_t n_segs, cap_segs;
    svg_block_t *blocks;
    size_t n_blocks, cap_blocks;
} svg_segmap_t;

/* Building a map: a segment, then its blocks (offsets from its start). 0, or -1 out of memory. */
int svg_map_segment(svg_segmap_t *m, uint64_t address, uint64_t size, int large, long long stream);
int svg_map_block(svg_segmap_t *m, uint64_t offset, uint64_t size, int state);
void svg_map_free(svg_segmap_t *m);

#endif
