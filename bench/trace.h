/* trace.h - allocation traces in the CSV layout of RAPIDS RMM's
 * logging_resource_adaptor (Thread,Time,Action,Pointer,Size,Stream), loaded
 * into a compact event list: frees are paired with their allocates by the
 * Pointer column at load time, so that a replay indexes an array. */
#ifndef BENCH_TRACE_H
#define BENCH_TRACE_H

#include <stddef.h>
#include <stdint.h>

enum { TRACE_ALLOC = 0, TRACE_FREE = 1, TRACE_RECORD = 2 };   /* RECORD: the slot used on `stream` too */

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
    size_t n_events;               /* allocates and paired frees */
    size_t n_slots;                /* allocates */
    size_t n_rows;                 /* data rows read */
    size_t n_failures;             /* "allocate failure" rows, skipped */
    size_t n_unpaired_frees;       /* frees of pointers not live, skipped */
    size_t n_live_at_end;          /* allocations never freed */
    long long *stream_ids;         /* distinct Stream values, first seen first */
    size_t n_streams;
    uint64_t peak_live_bytes;      /* largest sum of live sizes */
    char error[512];               /* why trace_load failed */
} trace_t;

/* 0 on success; -1 with out->error set (out needs no trace_free then). */
int  trace_load(const char *path, trace_t *out);
void trace_free(trace_t *t);

#endif
