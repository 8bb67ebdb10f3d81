/* floor.h - the smallest device of an ideal page allocator, defined without
 * cca (issue 27): every request rounded up to 512 B and placed best fit -
 * the smallest hole that fits, the lowest such, else at the top - in one
 * address space per stream and pool (small: up to 1 MiB), nothing cached
 * (a freed block's bytes are a hole at once; freed bytes at the top lower
 * it). The device it needs is the peak number of distinct 2 MiB pages that
 * live blocks touch, summed over the address spaces, times 2 MiB. */
#ifndef BENCH_FLOOR_H
#define BENCH_FLOOR_H

#include <stdint.h>
#include "trace.h"

#define FLOOR_PAGE  ((uint64_t)2 << 20)
#define FLOOR_ROUND ((uint64_t)512)
#define FLOOR_SMALL ((uint64_t)1 << 20)

/* The peak page count of t's allocations and frees (other events are
 * ignored), and the count after the last event (end_pages may be NULL);
 * 0 on success, -1 if host memory ran out. */
int floor_pages(const trace_t *t, uint64_t *peak_pages, uint64_t *end_pages);

#endif /* BENCH_FLOOR_H */
