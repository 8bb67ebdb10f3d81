/* internal.h - everything the allocator's files share, one header per
 * role, each grouping its prototypes by the file that defines them:
 * types.h (the glossary, then the data), view/cca_view.h (what stats/
 * sees), core.h (the allocator as a whole, all locked), counters.h (the
 * counters unit), streams.h (address maps, streams,
 * events), blocks.h (blocks, bins, parking, transitions' deltas), vmm.h
 * (the virtual-memory layer under expandable segments). Prefix: cca_
 * public, _cca_ internal (the file that defines a function names it:
 * _cca_bins_*, _cca_ptrmap_*, _cca_ctr_* / _cca_counters_*, _cca_vmm_*,
 * _cca_x_* for expand.c, ...).
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
