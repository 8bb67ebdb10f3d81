/* test_floor.c - the ideal page allocator of bench/floor.h on synthetic
 * traces whose page counts are worked out by hand in each test's comment:
 * rounding, one address space per stream and pool, blocks straddling
 * pages, best fit over first fit, holes merging and the top lowering. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "common.h"
#include "floor.h"
#include "trace.h"

#define M (1024ull * 1024)

/* A trace from "a|f ADDR SIZE STREAM" lines (ADDR names the allocation). */
static void pages_of(const char *ops, uint64_t *peak, uint64_t *end)
{
    size_t cap = 8 * strlen(ops) + 1024;              /* a row per op, each far under 8x its op */
    char *text = malloc(cap);
    cr_assert_not_null(text);
    size_t n = (size_t)snprintf(text, cap, "Thread,Time,Action,Pointer,Size,Stream\n");
    char op;
    unsigned long long addr, size;
    int stream, used, row = 0;
    for (const char *p = ops; sscanf(p, " %c %llx %llu %d%n", &op, &addr, &size, &stream, &used) == 4; p += used)
        n += (size_t)snprintf(text + n, cap - n, "0,00:00:00.%06d,%s,0x%llx,%llu,%d\n", row++,
                              op == 'a' ? "allocate" : "free", addr, size, stream);
    cr_assert_lt(n, cap);
    trace_t t;
    cr_assert_eq(trace_load_text(text, "synthetic", &t), 0, "%s", t.error);
    cr_assert_eq(floor_pages(&t, peak, end), 0);
    trace_free(&t);
    free(text);
}

TestSuite(floor);

/* 3 MiB (large) at 0: pages 0-1; 1 MiB (small, its own space): page 0
 * there - 3 pages; the 3 MiB freed, the top back to 0; 2 MiB at 0: page 0
 * - 2 pages at the end. */
Test(floor, pools_have_their_own_address_spaces)
{
    uint64_t peak, end;
    pages_of("a 1 3145728 0  a 2 1048576 0  f 1 3145728 0  a 3 2097152 0", &peak, &end);
    cr_assert_eq(peak, 3);
    cr_assert_eq(end, 2);
}

/* Two streams: 1 MiB + 1 MiB on stream 0 share page 0; the same on stream 1
 * is another space, page 0 there - 2 pages. */
Test(floor, streams_have_their_own_address_spaces)
{
    uint64_t peak, end;
    pages_of("a 1 1048576 0  a 2 1048576 0  a 3 1048576 7  a 4 1048576 7", &peak, &end);
    cr_assert_eq(peak, 2);
    cr_assert_eq(end, 2);
}

/* Requests round up to 512 B (small space): 4,096 blocks of 1 B end at
 * 2 MiB exactly (page 0), the 4,097th starts page 1: 2 pages, 1 once it
 * is freed. */
Test(floor, requests_round_up_to_512_bytes)
{
    char *ops = malloc(4100 * 32);
    cr_assert_not_null(ops);
    size_t n = 0;
    for (int i = 1; i <= 4097; i++) n += (size_t)sprintf(ops + n, "a %x 1 0 ", i);
    sprintf(ops + n, "f %x 1 0", 4097);
    uint64_t peak, end;
    pages_of(ops, &peak, &end);
    cr_assert_eq(peak, 2);
    cr_assert_eq(end, 1);
    free(ops);
}

/* A block straddling a page boundary touches both: 1.5 MiB (large) at 0,
 * then 1.5 MiB at 1.5 MiB: pages 0-1 - 2 pages. */
Test(floor, a_block_across_a_page_boundary_touches_both)
{
    uint64_t peak, end;
    pages_of("a 1 1572864 0  a 2 1572864 0", &peak, &end);
    cr_assert_eq(peak, 2);
    cr_assert_eq(end, 2);
}

/* Large space, in MiB: a1 3 at 0 (pages 0-1), a2 2 at 3 (1-2), a3 1.5 at 5
 * (2-3), a4 2 at 6.5 (3-4): 5 pages. a1 and a3 freed: holes [0,3) and
 * [5,6.5); a2, a4 live: pages 1-4, 4. b 1.5: best fit is [5,6.5), pages
 * 2-3, still 4 (first fit would take [0,1.5), page 0: 5). */
Test(floor, best_fit_takes_the_smallest_hole)
{
    uint64_t peak, end;
    pages_of("a 1 3145728 0  a 2 2097152 0  a 3 1572864 0  a 4 2097152 0  "
             "f 1 3145728 0  f 3 1572864 0  a 5 1572864 0", &peak, &end);
    cr_assert_eq(peak, 5);
    cr_assert_eq(end, 4);
}

/* Large space, in MiB: a1 3 at 0 (pages 0-1), a2 2 at 3 (1-2), a3 2 at 5
 * (2-3). a2 and a3 freed merge into [3,7): b 3.5 fits there, at 3, pages
 * 1-3, with a1 4 pages (unmerged, b would go at 7: pages 0-1 and 3-5, 5). */
Test(floor, freed_neighbours_merge)
{
    uint64_t peak, end;
    pages_of("a 1 3145728 0  a 2 2097152 0  a 3 2097152 0  f 2 2097152 0  f 3 2097152 0  a 4 3670016 0", &peak, &end);
    cr_assert_eq(peak, 4);
    cr_assert_eq(end, 4);
}

/* Large space, in MiB: a1 2 at 0 (page 0), a2 1.5 at 2 (page 1); a2 freed
 * at the top, which falls back to 2: b 3 goes there, pages 1-2, 3 in all
 * (a hole left at the top would send b to 3.5: pages 1-3, 4). Everything
 * freed, the space starts again at 0. */
Test(floor, a_free_at_the_top_lowers_it)
{
    uint64_t peak, end;
    pages_of("a 1 2097152 0  a 2 1572864 0  f 2 1572864 0  a 3 3145728 0", &peak, &end);
    cr_assert_eq(peak, 3);
    cr_assert_eq(end, 3);
    pages_of("a 1 2097152 0  a 2 1572864 0  f 2 1572864 0  a 3 3145728 0  f 3 3145728 0  f 1 2097152 0  "
             "a 4 1572864 0", &peak, &end);
    cr_assert_eq(end, 1);
}
