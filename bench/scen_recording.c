/* scen_recording.c - what recording a trace file costs (cca_trace_start,
 * the trace_file key): cca's default with and without recording, on the
 * 64 KiB pingpong and the mixed workload. The rows go to /dev/null, so
 * the figure is cca's own work (formatting, buffering, one write per
 * 64 KiB) without the disk's. Off, recording costs nothing: the hot path
 * only tests the hook word it tested before (scripts/instructions.sh). */
#include "bench.h"
#include "measure.h"
#include "report_table.h"
#include "workload.h"

#include <stdio.h>
#include <string.h>

#define REC_SIZE (64u << 10)
#define REC_LIVE 1000
#define REC_STEPS 65536

void scen_recording(const bench_opts_t *o)
{
    const bench_alloc_t *base = NULL;
    for (size_t i = 0; i < o->n_allocs && !base; i++)
        if (!strcmp(o->allocs[i].label, "cca:default"))
            base = &o->allocs[i];
    printf("\n== recording: cca's default with a trace file written (to /dev/null) and without ==\n");
    if (!base) {
        printf("  skipped: cca:default is not among the allocators run (--alloc)\n");
        return;
    }
    bench_opts_t two = *o;
    two.allocs[0] = *base;
    two.allocs[1] = *base;
    snprintf(two.allocs[1].label, sizeof two.allocs[1].label, "cca:recording");
    two.allocs[1].conf = "trace_file:/dev/null";
    two.n_allocs = 2;
    size_t size = REC_SIZE;
    mixed_seq_t m;
    if (mixed_seq_make(&m, REC_LIVE, REC_STEPS, 7) != 0) {
        printf("  skipped: out of host memory\n");
        return;
    }
    bench_case_t cases[2] = {
        {.scenario = "recording", .name = "pingpong-64KiB", .unit = "ns/pair", .run = scen_pingpong_run, .arg = &size,
         .calib_iters = 64, .max_iters = 2000000},
        {.scenario = "recording", .name = "mixed-1000-live", .unit = "ns/op", .run = scen_mixed_run, .arg = &m,
         .calib_iters = 64, .max_iters = REC_STEPS},
    };
    for (int k = 0; k < 2; k++) {
        bench_figure_t figs[BENCH_MAX_ALLOCS];
        measure_case(&cases[k], &two, figs);
        record_case(&cases[k], &two, figs);
        table_case(stdout, cases[k].scenario, cases[k].name,
                   k ? "ns per operation (a free or an allocation)" : "ns per alloc+free pair", &two);
    }
    mixed_seq_free(&m);
}
