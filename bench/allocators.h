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

/* --cca LABEL=CONF: adds cca with the configuration CONF (CCA_CONF's
 * syntax), labelled cca:LABEL, after cca's own; -1 with the reason in err
 * for a bad label (1 to 32 of letters, digits, '-', '_', '.'; not one of
 * cca's own nor given twice) or a configuration cca_config_parse refuses. */
int allocators_add_cca(const char *spec, char *err, size_t len);

/* " --cca 'LABEL=CONF'" for each, quoted for the shell (for the programs
 * this one starts); the length it wanted, as snprintf. */
size_t allocators_cca_args(char *buf, size_t len);

#endif
