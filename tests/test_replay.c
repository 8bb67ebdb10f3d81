/* test_replay.c - regression tests on real allocation traces: every trace
 * in $CCA_TRACES (default ../shared/traces) replays on a simulated device of
 * four times its peak live bytes with no OOM, cca_check clean and every byte
 * returned; for the traces known here, peak reserved / peak live and the
 * device calls stay under the figures recorded below. Skips, saying so,
 * where the traces are absent. No timing. */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "common.h"
#include "replay.h"
#include "trace.h"

typedef struct bound { double ratio; unsigned long mallocs, frees; } bound_t;
typedef struct known { const char *name; bound_t pytorch, lean; } known_t;

/* Recorded on this code with the same replay (default rules, then preset:lean):
 * peak reserved / peak live, cudaMalloc calls, cudaFree calls. */
static const known_t known[] = {
    {"bert_large_offload.dev0.csv", {1.1487, 82, 0}, {1.0660, 156, 126}},
    {"cs336_bench_win.csv", {1.0115, 240, 0}, {1.0558, 129, 8}},
    {"cs336_compiled.csv", {1.0819, 142, 0}, {1.0263, 53, 17}},
    {"cs336_ctx128_forward.csv", {1.0092, 516, 0}, {1.0080, 164, 0}},
    {"cs336_ctx128_forward_mixed.csv", {1.0099, 688, 0}, {1.0053, 198, 0}},
    {"cs336_ctx128_fullstep.csv", {1.1124, 1010, 0}, {1.0260, 444, 5}},
    {"cs336_ctx128_fwd_bf16.csv", {1.1032, 43, 0}, {1.1059, 30, 4}},
    {"cs336_ctx128_fwd_fp32.csv", {1.0931, 29, 0}, {1.0517, 21, 0}},
    {"cs336_ctx256_forward.csv", {1.0017, 623, 0}, {1.0192, 196, 5}},
    {"cs336_ctx256_forward_mixed.csv", {1.0159, 827, 0}, {1.0181, 247, 8}},
    {"cs336_ctx256_fullstep.csv", {1.1121, 1029, 0}, {1.0258, 445, 9}},
    {"cs336_ctx512_forward.csv", {1.0034, 650, 0}, {1.0228, 307, 8}},
    {"cs336_ctx512_forward_mixed.csv", {1.0130, 868, 0}, {1.0261, 392, 56}},
    {"cs336_forward_bf16.csv", {1.0260, 1684, 0}, {1.0169, 366, 0}},
    {"cs336_forward_fp32.csv", {1.0172, 1497, 0}, {1.0324, 376, 0}},
    {"cs336_medium_ctx1024_infer.csv", {1.1100, 108, 0}, {1.0736, 137, 97}},
    {"cs336_medium_ctx1024_train.csv", {1.0393, 404, 0}, {1.0207, 250, 58}},
    {"cs336_medium_ctx128_infer.csv", {1.0142, 98, 0}, {1.0540, 36, 0}},
    {"cs336_medium_ctx128_train.csv", {1.0278, 374, 0}, {1.0433, 101, 26}},
    {"cs336_medium_ctx256_infer.csv", {1.0359, 101, 0}, {1.0499, 34, 0}},
    {"cs336_medium_ctx256_train.csv", {1.0221, 507, 0}, {1.0219, 93, 1}},
    {"cs336_medium_ctx512_infer.csv", {1.0156, 101, 0}, {1.0726, 36, 0}},
    {"cs336_small_forward.csv", {1.0743, 30, 0}, {1.0458, 30, 3}},
    {"cs336_tiny.csv", {1.1637, 9, 0}, {1.0392, 11, 2}},
    {"llama_lora_4bit.csv", {1.1035, 230, 0}, {1.0240, 85, 14}},
    {"nca_seg_a.csv", {1.2874, 17, 0}, {1.0012, 176, 165}},
    {"nca_seg_b.csv", {1.4989, 15, 0}, {1.0002, 15, 12}},
    {"nca_seg_c.csv", {1.6155, 22, 0}, {1.0006, 57, 52}},
    {"nca_seg_d.csv", {1.3236, 13, 0}, {1.0003, 112, 104}},
    {"nca_seg_e.csv", {1.6085, 21, 0}, {1.0196, 56, 50}},
    {"qwen3_train_3gpu.dev0.csv", {1.0941, 204, 0}, {1.0168, 94, 24}},
    {"qwen3_train_3gpu.dev1.csv", {1.0728, 40, 0}, {1.0020, 65, 15}},
    {"qwen3_train_3gpu.dev2.csv", {1.0409, 78, 0}, {1.0097, 112, 22}},
};

static const known_t *known_of(const char *name)
{
    for (size_t i = 0; i < sizeof known / sizeof known[0]; i++)
        if (strcmp(known[i].name, name) == 0) return &known[i];
    return NULL;
}

static const char *traces_dir(void)
{
    const char *d = getenv("CCA_TRACES");
    return d && *d ? d : "../shared/traces";
}

static int by_name(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* The .csv files of the trace folder, sorted; NULL when it is absent. */
static char **list_traces(size_t *n)
{
    DIR *d = opendir(traces_dir());
    if (!d) return NULL;
    char **names = NULL;
    size_t cap = 0;
    *n = 0;
    for (struct dirent *e; (e = readdir(d));) {
        size_t len = strlen(e->d_name);
        if (len < 5 || strcmp(e->d_name + len - 4, ".csv") != 0) continue;
        if (*n == cap) names = realloc(names, (cap = cap ? cap * 2 : 64) * sizeof *names);
        names[(*n)++] = strdup(e->d_name);
    }
    closedir(d);
    if (*n) qsort(names, *n, sizeof *names, by_name);
    return names;
}

static void replay_all(const char *conf, int lean)
{
    size_t n = 0;
    char **names = list_traces(&n);
    if (!names || n == 0) {
        free(names);
        cr_skip_test("no traces in %s (set CCA_TRACES): skipped", traces_dir());
    }
    size_t known_seen = 0;
    for (size_t i = 0; i < n; i++) {
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", traces_dir(), names[i]);
        trace_t t;
        cr_assert_eq(trace_load(path, &t), 0, "%s: %s", names[i], t.error);
        replay_opts_t o = { .capacity = (size_t)(4 * t.peak_live_bytes), .check = 1 };
        replay_result_t r = replay(&t, &bench_ops_cca, conf, &o);
        cr_assert(r.ok, "%s: %s", names[i], r.error);
        cr_assert_eq(r.ooms, 0, "%s: %zu OOMs with room to spare", names[i], r.ooms);
        cr_assert_not(r.check_failed, "%s: %s", names[i], r.check_msg);
        cr_assert_eq(cca_sim_live_allocations(0), 0, "%s: memory not returned", names[i]);
        double ratio = (double)r.peak_reserved / (double)t.peak_live_bytes;
        cr_assert_geq(ratio, 1.0, "%s: reserved below live", names[i]);
        const known_t *k = known_of(names[i]);
        if (k) {
            const bound_t *b = lean ? &k->lean : &k->pytorch;
            cr_assert_leq(ratio, b->ratio + 0.0001, "%s: peak reserved / live %.4f above %.4f", names[i], ratio, b->ratio);
            cr_assert_leq((unsigned long)r.calls.malloc, b->mallocs, "%s: %lu cudaMalloc, recorded %lu",
                          names[i], (unsigned long)r.calls.malloc, b->mallocs);
            cr_assert_leq((unsigned long)r.calls.free, b->frees, "%s: %lu cudaFree, recorded %lu",
                          names[i], (unsigned long)r.calls.free, b->frees);
            known_seen++;
        }
        trace_free(&t);
        free(names[i]);
    }
    free(names);
    cr_log_info("%zu traces replayed, %zu with recorded bounds", n, known_seen);
    if (__lsan_do_recoverable_leak_check) cr_assert_eq(__lsan_do_recoverable_leak_check(), 0);
}

Test(replay, pytorch_rules_replay_every_trace, .timeout = 600) { replay_all("", 0); }
Test(replay, lean_preset_replays_every_trace, .timeout = 600) { replay_all("preset:lean", 1); }
