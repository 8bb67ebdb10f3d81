/* replay.h - replays a loaded trace against one allocator (any
 * bench_alloc_ops_t), mapping the trace's Stream column to real streams
 * (0: the legacy default stream, NULL). Small C interface, usable from
 * tests: no printing unless opts->progress. */
#ifndef BENCH_REPLAY_H
#define BENCH_REPLAY_H

#include "alloc_ops.h"
#include "sim_ctl.h"
#include "trace.h"

#include <stdint.h>

typedef struct replay_opts {
    size_t capacity;     /* sim: reset the device to this capacity first (0: leave it) */
    int modelled;        /* sim: latency model on during the event loop */
    int stop_at_oom;     /* abort at the first refused allocation */
    int track_peak;      /* sample reserved_bytes after each allocation when the
                            allocator keeps no peak of its own */
    int check;           /* run ops->check after the event loop */
    int progress;        /* a progress line on stderr for long traces */
    int failures;        /* make the trace's "allocate failure" requests too (freed at once when served) */
    size_t reserve;      /* sim: bytes taken by cudaMalloc outside the allocator first (the CUDA
                            context and other libraries), given back at the end */
    /* Optional: called with the allocator's context after the event loop,
     * before the blocks still live are freed (its figures as the run left them). */
    void (*inspect)(void *ctx, void *arg);
    void *inspect_arg;
    /* Optional: called with the allocator's context at its first refusal. */
    void (*at_oom)(void *ctx, void *arg);
    /* Optional: live and reserved bytes over the run (see replay_series_t). */
    struct replay_series *series;
} replay_opts_t;

/* Live and reserved bytes after each event, kept in n buckets of
 * consecutive events (event i in bucket i * n / events): per bucket the
 * lowest and highest value and the last, and which of the lowest and the
 * highest came first, so a line through them keeps every peak exact. The
 * caller sets n and the arrays (n entries each, zeroed); replay fills them. */
typedef struct replay_point { uint64_t lo, hi, last; unsigned char lo_first, used; } replay_point_t;
typedef struct replay_series {
    size_t n;
    replay_point_t *live, *reserved;
} replay_series_t;

typedef struct replay_result {
    int ok;                  /* 0: a hard error stopped it (see error) */
    char error[256];
    size_t events;           /* events replayed */
    size_t ooms;             /* allocations the allocator refused */
    size_t first_oom;        /* the event index of the first refusal (SIZE_MAX: none) */
    uint64_t peak_live;      /* most bytes live that the allocator served (sizes as asked) */
    size_t skipped_frees;    /* frees of refused allocations */
    int aborted;             /* stopped at the first OOM (stop_at_oom) */
    uint64_t ns;             /* wall time of the event loop */
    uint64_t peak_reserved;  /* bytes; 0 unless tracked or kept by the allocator */
    simctl_calls_t calls;    /* runtime calls during the event loop (totals) */
    int check_failed;
    char check_msg[256];
} replay_result_t;

replay_result_t replay(const trace_t *t, const bench_alloc_ops_t *ops, const char *conf,
                       const replay_opts_t *opts);

/* The "large device" of the unconstrained replays: 4x the trace's peak
 * live bytes, at least 80 GiB. */
size_t replay_big_capacity(const trace_t *t);

#endif
