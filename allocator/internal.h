/* internal.h - everything the allocator's files share, one header per
 * role, each grouping its prototypes by the file that defines them:
 * types.h (the glossary, then the data), view/cca_view.h (what stats/
 * sees), core.h (the allocator as a whole, all locked), counters.h (the
 * counters unit), streams.h (address maps, streams,
 * events), blocks.h (blocks, bins, parking, transitions' deltas), vmm.h
 * (the virtual-memory layer under expandable segments). One prefix
 * scheme: cca_ public; _cca_FILE_ for a function FILE.c defines
 * (_cca_alloc_lock_all, _cca_bins_best_fit, _cca_errors_fail,
 * _cca_expand_grow, ...) or that a header keeps inline beside it for the
 * hot path (_cca_park_unpark, _cca_ptrmap_find); FILE_ for its statics.
 * The exceptions are the shared data helpers of types.h and blocks.h
 * (_cca_stat_*, the transitions' _cca_*_delta) and lock.h's _cca_lock*.
 */
#ifndef CCA_INTERNAL_H
#define CCA_INTERNAL_H

#include "types.h"
#include "core.h"
#include "counters.h"
#include "streams.h"
#include "blocks.h"
#include "vmm.h"

#endif /* CCA_INTERNAL_H */
