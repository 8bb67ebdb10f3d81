/* internal.h - everything the allocator's files share, one header per
 * role: model.h (the data), core.h (the allocator as a whole, all locked),
 * counters.h (the counters unit), streams.h (address maps, streams,
 * events), blocks.h (blocks, bins, parking, transitions' deltas), vmm.h
 * (the virtual-memory layer under expandable segments). Prefix: cca_
 * public, _cca_ internal (the file that defines a function names it:
 * _cca_bins_*, _cca_ptrmap_*, _cca_ctr_* / _cca_counters_*, _cca_vmm_*,
 * _cca_x_* for expand.c, ...).
 *
 * Glossary
 *   pool          small (requests up to 1 MiB, 2 MiB segments) or large;
 *                 numbered as the public API numbers them (CCA_POOL_SMALL,
 *                 CCA_POOL_LARGE; CCA_POOL_ALL is their sum).
 *   segment       one cudaMalloc; split into blocks, never merged across.
 *   hot path      a malloc or free served under its stream's lock alone.
 *   all locked    the allocator's lock and every stream's: the slow path,
 *                 statistics, walks (_cca_lock_all).
 *   delta         what a block transition (take, free, release, settle,
 *                 park) does to its stream's figures; block code computes
 *                 it, the counters unit applies it.
 *   lease         how far a stream may raise a figure without the others'
 *                 locks; all streams' leases add up to at most the peak,
 *                 which keeps peaks exact with no shared write.
 *   room          lease - current: what the hot path actually keeps and
 *                 checks (a sign test).
 *   trigger       the stream just served, which gets the rounding rest
 *                 when leases are dealt anew (rebalance).
 *   park          a hot-path free that defers its merge and falling
 *                 figures, so that the next request can be carved out of
 *                 the merged block in place; "vacate" applies the deferred
 *                 figures, "flush" frees the parked block for real.
 *   pending       freed, awaiting events on streams that used the block.
 *   husk          a retired stream's small record, kept for reuse.
 *   rung          one step of the growth ladder (segment.c).
 *   view          the consistent moment through which stats/ reads the
 *                 allocator (view.c).
 */
#ifndef CCA_INTERNAL_H
#define CCA_INTERNAL_H

#include "model.h"
#include "core.h"
#include "counters.h"
#include "streams.h"
#include "blocks.h"
#include "vmm.h"

#endif /* CCA_INTERNAL_H */
