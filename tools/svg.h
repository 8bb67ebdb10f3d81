/* svg.h - pictures of a run as SVG documents (docs/replay.md, "Pictures"):
 * a timeline of a replay (live and reserved bytes over the run, one colour
 * per configuration, its first out-of-memory marked) and a segment map
 * (segments as bars, blocks coloured by state, free blocks drawn as holes).
 *
 * A document holds panels stacked top to bottom. Every panel's scale is
 * written into it, so a reader (or a test) can turn bytes and events into
 * pixels without this code:
 *   timeline: <rect class="plot" x y width height data-events="N"
 *             data-max-bytes="B">: event i at x + i * width / (N - 1)
 *             (x alone when N is 1), b bytes at y + height - b * height / B;
 *   segments: <g class="segmap" data-bytes-per-px="S">: a bar or a box of
 *             b bytes is b / S px wide.
 * Elements: <polyline class="live|reserved" data-conf="LABEL">, <line
 * class="oom" data-conf data-event data-row> (event: the index above; row:
 * the file's data row, as cca-replay prints it), <line class="device">, <rect
 * class="segment" data-size>, <rect class="block" data-state data-size>. */
#ifndef CCA_SVG_H
#define CCA_SVG_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "replay.h"
#include "segmap.h"

typedef struct svg_doc svg_doc_t;

/* NULL when out of host memory. */
svg_doc_t *svg_open(void);
/* Writes the document to path and frees it (also on failure): 0, or -1 with errno set. */
int svg_save(svg_doc_t *d, const char *path);
void svg_discard(svg_doc_t *d);

typedef struct svg_line {
    const char *label;
    const replay_series_t *series;       /* series->n buckets over the run's events */
    long long oom_event;                 /* event index of the first refusal; -1: none */
    long long oom_row;                   /* its data row in the file (what cca-replay prints) */
    int colour;                          /* the configuration's place, so colours stay put */
} svg_line_t;

/* One timeline panel: n_events events, device_bytes the memory cca can
 * have (the device less the reserve; 0: not known, no line drawn). */
void svg_timeline(svg_doc_t *d, const char *title, size_t n_events, uint64_t device_bytes,
                  const svg_line_t *lines, int n_lines);

/* The length of the valid UTF-8 sequence at s (no overlongs, surrogates
 * or code points past U+10FFFF), 0 if there is none (s NUL-terminated). */
int svg_utf8_len(const unsigned char *s);

/* One segment-map panel. */
void svg_segments(svg_doc_t *d, const char *title, const svg_segmap_t *m);

#endif
