/* allocators.h - which allocators run: cca in its default configuration
 * and each named better configuration, then the peers. */
#ifndef BENCH_ALLOCATORS_H
#define BENCH_ALLOCATORS_H

#include "bench.h"

/* Fills o->allocs. model_all: also a (modelled) row for cca and CUB, not
 * only raw. filters: labels or label prefixes to keep (none: all).
 * -1 with a message on stderr when a filter matches nothing. */
int allocators_select(bench_opts_t *o, int model_all, const char *const *filters,
                      size_t n_filters);

#endif
