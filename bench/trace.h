/* trace.h - allocation traces in the CSV layout of RAPIDS RMM's
 * logging_resource_adaptor (Thread,Time,Action,Pointer,Size,Stream), loaded
 * into a compact event list: frees are paired with their allocates by the
 * Pointer column at load time, so that a replay indexes an array. */
#ifndef BENCH_TRACE_H
#define BENCH_TRACE_H

#include <stddef.h>
#include <stdint.h>

/* RECORD: the slot used on `stream` too (synthetic workloads); FAILURE: an
 * "allocate failure" row, a request the recorded run was refused (size,
 * stream; no slot), which a replay makes only when asked (replay_opts_t). */
enum { TRACE_ALLOC = 0, TRACE_FREE = 1, TRACE_RECORD = 2, TRACE_FAILURE = 3 };

typedef struct trace_event {
    uint64_t size;       /* bytes asked for (TRACE_ALLOC) */
    uint32_t slot;       /* the allocation: 0 .. n_slots-1 */
    uint16_t stream;     /* index into trace_t.stream_ids */
    uint8_t op;          /* TRACE_ALLOC, TRACE_FREE or TRACE_RECORD (synthetic workloads) */
} trace_event_t;

typedef struct trace {
    char path[1024];
    char name[256];                /* file name without directory */
    trace_event_t *events;
    size_t n_events;               /* allocates, paired frees and failures */
    uint64_t *time_us;             /* each event's Time (0 where the file has none) */
    uint32_t *row;                 /* each event's data row in the file, from 0 */
    size_t n_slots;                /* allocates */
    size_t n_rows;                 /* data rows read */
    size_t n_failures;             /* "allocate failure" rows (TRACE_FAILURE events) */
    size_t n_unpaired_frees;       /* frees of pointers not live, skipped */
    size_t n_live_at_end;          /* allocations never freed */
    long long *stream_ids;         /* distinct Stream values, first seen first */
    size_t n_streams;
    uint64_t peak_live_bytes;      /* largest sum of live sizes */
    int version;                   /* the "#cca-trace N" line's N; 0: none (RMM's own layout) */
    int device;                    /* the recording's device; -1: not said */
    uint64_t device_memory;        /* the recording device's memory; 0: not said */
    char error[512];               /* why trace_load failed */
} trace_t;

/* A file written by cca (cca_trace_start, cca-replay --to-csv) opens with
 * "#cca-trace 1 device=D device_memory=BYTES" (each key optional); files
 * without it are read as RMM writes them. A newer layout is refused. */
#define TRACE_LAYOUT_VERSION 1

/* 0 on success; -1 with out->error set (out needs no trace_free then). */
int  trace_load(const char *path, trace_t *out);
/* The same from text in memory (modified in place; NUL-terminated), named `name`. */
int  trace_load_text(char *text, const char *name, trace_t *out);
void trace_free(trace_t *t);

#endif
