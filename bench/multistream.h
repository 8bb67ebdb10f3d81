/* multistream.h - synthetic training steps on several streams, for the
 * multistream scenario: the shared traces all use one stream, real programs
 * with offloading, prefetching or communication streams do not. Each
 * workload is a trace_t (with TRACE_RECORD events: a block used on another
 * stream, cca_record_stream), generated the same way every run. */
#ifndef BENCH_MULTISTREAM_H
#define BENCH_MULTISTREAM_H

#include "trace.h"

#include <stddef.h>

/* How many workloads there are: 0 "multistream-offload" (weights
 * prefetched on four streams, used on the compute stream), 1
 * "multistream-comm" (gradient buckets on two communication streams), 2
 * "multistream-pipeline" (ten streams: weights prefetched on eight,
 * activations offloaded to the host and back on one). */
size_t multistream_count(void);

/* Workload `kind` over `steps` training steps into *t (trace_free it);
 * -1 with t->error set. */
int multistream_trace(size_t kind, unsigned steps, trace_t *t);

/* The same with another draw of the random sizes (seed 0: the one above),
 * for cca-robustness's variants. */
int multistream_trace_seeded(size_t kind, unsigned steps, unsigned seed, trace_t *t);

#endif
