/* old_program.c - a program built against today's cca.h, run against a
 * library whose public structs all grew by a field (tests/grown/: the
 * library is compiled with grow_header.py's cca.h) and against the real
 * one. Every call that takes or fills a struct is made three ways - the
 * plain name (the header's inline wrapper), a pointer to the plain name,
 * and the exported plain symbol as a program linked before the wrappers
 * calls it (abi_v1.h) - and each must succeed, write nothing past the
 * caller's struct (the symbol: nothing past the first version), and give
 * the same fields. The program prints every field of every struct it got,
 * by the header's own field lists, so that the two runs can be compared
 * (compare.sh); addresses are printed from the first segment's. It exits 1
 * at the first failed check, naming it. */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cca.h>
#include <cca_sim.h>
#include "abi_v1.h"

#define MiB ((size_t)1 << 20)
#define PAD 0xA5
#define SLACK 64                                      /* canary bytes after each struct */

/* The first versions (CCA_V1_* in the library), as this program's header has them. */
#define V1_CONFIG offsetof(cca_config_t, expandable_segments)
#define V1_STATS offsetof(cca_stats_t, oversize_allocations)
#define V1_FRAG offsetof(cca_frag_t, unmapped)
#define V1_SEG offsetof(cca_segment_info_t, is_expandable)
#define V1_BLOCK offsetof(cca_block_info_t, tag)
#define V1_OOM offsetof(cca_oom_report_t, need_cap)
#define V1_SCOPE offsetof(cca_scope_result_t, left_allocated)
#define V1_HISTORY offsetof(cca_history_entry_t, context)

static void check(int ok, const char *what)
{
    if (ok) return;
    fprintf(stderr, "old_program: FAILED: %s (%s)\n", what, cca_last_error_string());
    exit(1);
}

static int all_pad(const void *p, size_t from, size_t to)
{
    for (size_t i = from; i < to; i++)
        if (((const unsigned char *)p)[i] != PAD) return 0;
    return 1;
}

/* A buffer for one struct of n bytes and its canary. */
static unsigned char *padded(unsigned char *buf, size_t n)
{
    memset(buf, PAD, n + SLACK);
    return buf;
}

/* The three results of one call: the wrapper's (w), through a pointer (p),
 * the exported symbol's (s); n is sizeof in this program, v1 the first version. */
static void same_three(const char *what, const unsigned char *w, const unsigned char *p, const unsigned char *s,
                       size_t n, size_t v1)
{
    char t[160];
    snprintf(t, sizeof t, "%s: the wrapper wrote past the caller's struct", what);
    check(all_pad(w, n, n + SLACK), t);
    snprintf(t, sizeof t, "%s: a call through &plain_name wrote past the caller's struct", what);
    check(all_pad(p, n, n + SLACK), t);
    snprintf(t, sizeof t, "%s: a call through &plain_name filled other fields than the wrapper", what);
    check(memcmp(w, p, n) == 0, t);
    snprintf(t, sizeof t, "%s: the exported plain symbol wrote past the first version", what);
    check(all_pad(s, v1, n + SLACK), t);
    snprintf(t, sizeof t, "%s: the exported plain symbol filled other first-version fields", what);
    check(memcmp(w, s, v1) == 0, t);
}

/* How the allocator ran (CCA_PROFILE: every call counts, so each call sees
 * other figures) is no figure to compare: set to 0. */
static void profile_zero(cca_stats_t *v)
{
#define PROFILE_ZERO_CCA_PROFILE(f) (f) = 0;
#define PROFILE_ZERO_CCA_POOLED(f)
#define PROFILE_ZERO_CCA_STAT(f)
#define PROFILE_ZERO_CCA_COUNTER(f)
#define PROFILE_ZERO_CCA_GAUGE(f)
#define PROFILE_ZERO_CCA_SETTING(f)
#define PROFILE_ZERO_(kind, name, doc) PROFILE_ZERO_##kind(v->name)
    CCA_STATS_FIELDS(PROFILE_ZERO_)
#undef PROFILE_ZERO_
}

/* ---- printing every field ------------------------------------------------- */

static uintptr_t base;                                /* the first segment's address */

static void field(const char *st, const char *name, const void *p, size_t n)
{
    if (!strcmp(name, "host_bytes") || !strcmp(name, "time_us")) return;   /* not the same from run to run */
    printf("%s.%s =", st, name);
    if ((!strcmp(name, "address") || !strcmp(name, "addr") || !strcmp(name, "segment_address")) && n == sizeof(uintptr_t)) {
        uintptr_t v;
        memcpy(&v, p, sizeof v);
        printf(" base+%#lx\n", (unsigned long)(v ? v - base : 0));
        return;
    }
    for (size_t i = 0; i < n; i++) printf(" %02x", ((const unsigned char *)p)[i]);
    printf("\n");
}

#define FIELD4_(type, name, dims, doc) field(st, #name, &v->name, sizeof v->name);
#define STAT3_(kind, name, doc) if (strcmp(#kind, "CCA_PROFILE")) field(st, #name, &v->name, sizeof v->name);

static void print_config(const char *st, const cca_config_t *v) { CCA_CONFIG_FIELDS(FIELD4_) }
static void print_stats(const char *st, const cca_stats_t *v)
{
    CCA_STATS_FIELDS(STAT3_)
}
static void print_frag(const char *st, const cca_frag_t *v) { CCA_FRAG_FIELDS(FIELD4_) }
static void print_seg(const char *st, const cca_segment_info_t *v) { CCA_SEGMENT_INFO_FIELDS(FIELD4_) }
static void print_block(const char *st, const cca_block_info_t *v) { CCA_BLOCK_INFO_FIELDS(FIELD4_) }
static void print_oom(const char *st, const cca_oom_report_t *v) { CCA_OOM_REPORT_FIELDS(FIELD4_) }
static void print_scope(const char *st, const cca_scope_result_t *v) { CCA_SCOPE_RESULT_FIELDS(FIELD4_) }
static void print_history(const char *st, const cca_history_entry_t *v) { CCA_HISTORY_ENTRY_FIELDS(FIELD4_) }

/* ---- callbacks: what each way of walking saw ----------------------------- */

#define MAXW 16
typedef struct walked {
    size_t seg_size, block_size;                      /* bytes of each record the caller reads */
    unsigned char segs[MAXW][sizeof(cca_segment_info_t)], blocks[MAXW][sizeof(cca_block_info_t)];
    int nseg, nblock;
} walked_t;

static int on_seg(const cca_segment_info_t *s, void *arg)
{
    walked_t *w = arg;
    if (w->nseg < MAXW) memcpy(w->segs[w->nseg++], s, w->seg_size);
    return 0;
}

static int on_block(const cca_block_info_t *b, void *arg)
{
    walked_t *w = arg;
    if (w->nblock < MAXW) memcpy(w->blocks[w->nblock++], b, w->block_size);
    return 0;
}

typedef struct hist { size_t size; unsigned char e[MAXW][sizeof(cca_history_entry_t)]; int n; } hist_t;

static int on_entry(const cca_history_entry_t *e, void *arg)
{
    hist_t *h = arg;
    if (h->n < MAXW) memcpy(h->e[h->n++], e, h->size);
    return 0;
}

static size_t oom_seen_size;
static unsigned char oom_seen[sizeof(cca_oom_report_t)];
static void on_oom(const cca_oom_report_t *r, void *arg)
{
    (void)arg;
    memcpy(oom_seen, r, oom_seen_size);
}

/* ---- the program ------------------------------------------------------------ */

static unsigned char w_[8192], p_[8192], s_[8192];

int main(void)
{
    cca_sim_reset();
    cca_sim_set_capacity(0, 256 * MiB);
    size_t nl = 0;                                    /* the library's own sizes: compare.sh checks they grew */
    const cca_struct_layout_t *lay = cca_struct_layouts(&nl);
    for (size_t i = 0; i < nl; i++) printf("layout %s %zu\n", lay[i].name, lay[i].size);

    /* configuration: init, parse, create, get_config */
    void (*p_init)(cca_config_t *) = &cca_config_init;
    cca_config_init((cca_config_t *)padded(w_, sizeof(cca_config_t)));
    p_init((cca_config_t *)padded(p_, sizeof(cca_config_t)));
    v1_cca_config_init((cca_config_t *)padded(s_, sizeof(cca_config_t)));
    same_three("cca_config_init", w_, p_, s_, sizeof(cca_config_t), V1_CONFIG);
    const char *conf = "max_split_size_mb:64,garbage_collection_threshold:0.5,memory_limit_mb:200,roundup_power2_divisions:[1:1,>:4]";
    cca_status_t (*p_parse)(cca_config_t *, const char *, char *, size_t) = &cca_config_parse;
    char err[256];
    check(cca_config_parse((cca_config_t *)(void *)w_, conf, err, sizeof err) == CCA_OK, "cca_config_parse");
    check(p_parse((cca_config_t *)(void *)p_, conf, err, sizeof err) == CCA_OK, "cca_config_parse through a pointer");
    check(v1_cca_config_parse((cca_config_t *)(void *)s_, conf, err, sizeof err) == CCA_OK, "the exported cca_config_parse");
    same_three("cca_config_parse", w_, p_, s_, sizeof(cca_config_t), V1_CONFIG);
    cca_config_t cfg;
    memcpy(&cfg, w_, sizeof cfg);
    check(cfg.max_split_size == 64 * MiB && cfg.memory_limit == 200 * MiB && cfg.roundup_power2_divisions[0] == 1 &&
          cfg.roundup_power2_divisions[1] == 4 && cfg.roundup_power2_divisions[15] == 4 && cfg.garbage_collection_threshold == 0.5, "parsed fields");
    print_config("config", &cfg);

    cca_allocator_t *a = NULL, *b = NULL, *c = NULL;
    cca_status_t (*p_create)(const cca_config_t *, cca_allocator_t **) = &cca_create;
    check(cca_create(&cfg, &a) == CCA_OK, "cca_create");
    check(p_create(&cfg, &b) == CCA_OK, "cca_create through a pointer");
    check(v1_cca_create(&cfg, &c) == CCA_OK, "the exported cca_create");
    cca_allocator_t *all[3] = { a, b, c };
    for (int i = 0; i < 3; i++) {
        cca_status_t (*p_getc)(cca_allocator_t *, cca_config_t *) = &cca_get_config;
        check(cca_get_config(all[i], (cca_config_t *)padded(w_, sizeof(cca_config_t))) == CCA_OK, "cca_get_config");
        check(p_getc(all[i], (cca_config_t *)padded(p_, sizeof(cca_config_t))) == CCA_OK, "cca_get_config through a pointer");
        check(v1_cca_get_config(all[i], (cca_config_t *)padded(s_, sizeof(cca_config_t))) == CCA_OK, "the exported cca_get_config");
        same_three("cca_get_config", w_, p_, s_, sizeof(cca_config_t), V1_CONFIG);
        check(memcmp(w_, &cfg, sizeof cfg) == 0, "every allocator has the configuration it was created with");
    }
    cca_destroy(b);
    cca_destroy(c);

    /* a state: history on, three scopes, blocks in both pools (rounded to quarters of a power of two above
     * 2 MiB: 1024 B, 5 MiB, 3.5 MiB and an oversize 80 MiB in segments of 2, 20 and 80 MiB), a free, and
     * three out-of-memory failures (300 MiB rounds to 320 MiB, over the 200 MiB cap), one for each way
     * of setting the OOM callback */
    check(cca_record_history(a, 64) == CCA_OK, "cca_record_history");
    uint64_t wid;
    check(cca_watch_threshold_queued(a, CCA_WATCH_ALLOCATED, 50 * MiB, &wid) == CCA_OK, "cca_watch_threshold_queued");
    check(cca_oom_notices(a, 1) == CCA_OK, "cca_oom_notices");
    uint64_t tok[3];
    for (int i = 0; i < 3; i++) check(cca_scope_begin(a, &tok[i]) == CCA_OK, "cca_scope_begin");
    void *q[4];
    const size_t sizes[4] = { 1000, 5 * MiB, 3 * MiB + 100, 70 * MiB };
    for (int i = 0; i < 4; i++) check(cca_malloc(a, &q[i], sizes[i], 0) == CCA_OK, "cca_malloc");
    check(cca_free(a, q[1]) == CCA_OK, "cca_free");

    cca_status_t (*p_setcb)(cca_allocator_t *, cca_oom_fn, void *) = &cca_set_oom_callback;
    unsigned char seen[3][sizeof(cca_oom_report_t) + SLACK];
    for (int way = 0; way < 3; way++) {
        memset(oom_seen, PAD, sizeof oom_seen);
        oom_seen_size = way == 2 ? V1_OOM : sizeof(cca_oom_report_t);
        int st = way == 0 ? (int)cca_set_oom_callback(a, on_oom, NULL)
               : way == 1 ? (int)p_setcb(a, on_oom, NULL) : v1_cca_set_oom_callback(a, on_oom, NULL);
        check(st == CCA_OK, "cca_set_oom_callback");
        void *big = NULL;
        check(cca_malloc(a, &big, 300 * MiB, 0) == CCA_ERROR_OUT_OF_MEMORY, "the scenario's out-of-memory");
        memset(seen[way], PAD, sizeof seen[way]);
        memcpy(seen[way], oom_seen, oom_seen_size);
        check(cca_last_oom_report(a, (cca_oom_report_t *)padded(w_, sizeof(cca_oom_report_t))) == CCA_OK, "cca_last_oom_report");
        check(memcmp(seen[way], w_, oom_seen_size) == 0, "the callback's report is the last report");
        check(all_pad(seen[way], oom_seen_size, sizeof seen[way]), "the callback's report, past what it reads");
    }
    check(cca_set_oom_callback(a, NULL, NULL) == CCA_OK, "cca_set_oom_callback(NULL)");

    /* notices: the watch's rising crossing (at the 80 MiB block), then the three reports; two taken each way */
    cca_notice_kind_t (*p_take)(int, cca_notice_t *) = &cca_notice_take;
    for (int k = 0; k < 4; k++) {
        unsigned char *buf = k % 2 ? p_ : w_;
        cca_notice_kind_t kind = k % 2 ? p_take(0, (cca_notice_t *)padded(buf, sizeof(cca_notice_t)))
                                       : cca_notice_take(0, (cca_notice_t *)padded(buf, sizeof(cca_notice_t)));
        check(all_pad(buf, sizeof(cca_notice_t), sizeof(cca_notice_t) + SLACK), "cca_notice_take wrote past the caller's struct");
        cca_notice_t n;
        memcpy(&n, buf, sizeof n);
        check(kind == (k ? CCA_NOTICE_OOM : CCA_NOTICE_WATCH) && n.kind == kind, "the notices' kinds, in order");
        check(n.allocator == cca_allocator_id(a) && n.device == 0, "a notice names its allocator");
        check(k ? n.id == (uint64_t)k : n.id == wid && n.rising == 1 && n.threshold == 50 * MiB, "the notice's figures");
        printf("notice %d: kind %d, id %llu, which %d, rising %d, threshold %zu, bytes %zu\n", k, (int)n.kind,
               (unsigned long long)n.id, (int)n.which, n.rising, n.threshold, n.bytes);
    }
    check(cca_notice_take(0, (cca_notice_t *)padded(w_, sizeof(cca_notice_t))) == CCA_NOTICE_NONE, "no more notices");
    check(cca_oom_notices(a, 0) == CCA_OK && cca_unwatch(a, wid) == CCA_OK, "notices off");

    /* statistics */
    cca_status_t (*p_stats)(cca_allocator_t *, cca_stats_t *) = &cca_get_stats;
    check(cca_get_stats(a, (cca_stats_t *)padded(w_, sizeof(cca_stats_t))) == CCA_OK, "cca_get_stats");
    check(p_stats(a, (cca_stats_t *)padded(p_, sizeof(cca_stats_t))) == CCA_OK, "cca_get_stats through a pointer");
    check(v1_cca_get_stats(a, (cca_stats_t *)padded(s_, sizeof(cca_stats_t))) == CCA_OK, "the exported cca_get_stats");
    profile_zero((cca_stats_t *)w_), profile_zero((cca_stats_t *)p_);   /* s_: the first version's fields only */
    same_three("cca_get_stats", w_, p_, s_, sizeof(cca_stats_t), V1_STATS);
    cca_stats_t stats;
    memcpy(&stats, w_, sizeof stats);
    check(stats.allocated_bytes[CCA_POOL_ALL].current == (int64_t)(1024 + 3 * MiB + MiB / 2 + 80 * MiB), "allocated bytes");
    check(stats.allocation[CCA_POOL_ALL].current == 3 && stats.num_ooms == 3 && stats.max_split_size == (int64_t)(64 * MiB),
          "allocations, out-of-memory count, max_split_size");
    check(stats.host_bytes > 0, "host bytes");
    print_stats("stats", &stats);

    /* fragmentation */
    cca_status_t (*p_frag)(cca_allocator_t *, cca_frag_t *) = &cca_get_fragmentation;
    check(cca_get_fragmentation(a, (cca_frag_t *)padded(w_, sizeof(cca_frag_t))) == CCA_OK, "cca_get_fragmentation");
    check(p_frag(a, (cca_frag_t *)padded(p_, sizeof(cca_frag_t))) == CCA_OK, "cca_get_fragmentation through a pointer");
    check(v1_cca_get_fragmentation(a, (cca_frag_t *)padded(s_, sizeof(cca_frag_t))) == CCA_OK, "the exported cca_get_fragmentation");
    same_three("cca_get_fragmentation", w_, p_, s_, sizeof(cca_frag_t), V1_FRAG);
    cca_frag_t frag;
    memcpy(&frag, w_, sizeof frag);
    check(frag.reserved == (size_t)stats.reserved_bytes[CCA_POOL_ALL].current && frag.allocated == 1024 + 3 * MiB + MiB / 2 + 80 * MiB,
          "fragmentation figures");

    /* the snapshot walk */
    static walked_t ww, wp, ws;
    ww = (walked_t){ .seg_size = sizeof(cca_segment_info_t), .block_size = sizeof(cca_block_info_t) };
    wp = ww;
    ws = (walked_t){ .seg_size = V1_SEG, .block_size = V1_BLOCK };
    memset(ws.segs, PAD, sizeof ws.segs);
    memset(ws.blocks, PAD, sizeof ws.blocks);
    cca_status_t (*p_walk)(cca_allocator_t *, cca_segment_fn, cca_block_fn, void *) = &cca_snapshot_walk;
    check(cca_snapshot_walk(a, on_seg, on_block, &ww) == CCA_OK, "cca_snapshot_walk");
    check(p_walk(a, on_seg, on_block, &wp) == CCA_OK, "cca_snapshot_walk through a pointer");
    check(v1_cca_snapshot_walk(a, on_seg, on_block, &ws) == CCA_OK, "the exported cca_snapshot_walk");
    check(ww.nseg == 3 && ww.nblock == 6 && wp.nseg == ww.nseg && wp.nblock == ww.nblock && ws.nseg == ww.nseg &&
          ws.nblock == ww.nblock, "segments and blocks walked");
    check(memcmp(&ww.segs, &wp.segs, sizeof ww.segs) == 0 && memcmp(&ww.blocks, &wp.blocks, sizeof ww.blocks) == 0,
          "the walk through a pointer saw the same");
    for (int i = 0; i < ww.nseg; i++) check(memcmp(ww.segs[i], ws.segs[i], V1_SEG) == 0, "the exported walk's segments");
    for (int i = 0; i < ww.nblock; i++) check(memcmp(ww.blocks[i], ws.blocks[i], V1_BLOCK) == 0, "the exported walk's blocks");
    memcpy(&base, ww.segs[0] + offsetof(cca_segment_info_t, address), sizeof base);
    for (int i = 0; i < ww.nseg; i++) print_seg("segment", (const cca_segment_info_t *)(const void *)ww.segs[i]);
    for (int i = 0; i < ww.nblock; i++) print_block("block", (const cca_block_info_t *)(const void *)ww.blocks[i]);
    print_frag("frag", &frag);

    /* the OOM report: last, this thread's, formatted, judged */
    cca_status_t (*p_last)(cca_allocator_t *, cca_oom_report_t *) = &cca_last_oom_report;
    check(cca_last_oom_report(a, (cca_oom_report_t *)padded(w_, sizeof(cca_oom_report_t))) == CCA_OK, "cca_last_oom_report");
    check(p_last(a, (cca_oom_report_t *)padded(p_, sizeof(cca_oom_report_t))) == CCA_OK, "cca_last_oom_report through a pointer");
    check(v1_cca_last_oom_report(a, (cca_oom_report_t *)padded(s_, sizeof(cca_oom_report_t))) == CCA_OK, "the exported cca_last_oom_report");
    same_three("cca_last_oom_report", w_, p_, s_, sizeof(cca_oom_report_t), V1_OOM);
    cca_oom_report_t rep;
    memcpy(&rep, w_, sizeof rep);
    check(rep.requested == 300 * MiB && rep.seq == 3 && rep.verdict != CCA_OOM_NONE, "the report's figures");
    print_oom("oom", &rep);
    cca_status_t (*p_thread)(cca_oom_report_t *) = &cca_thread_last_oom_report;
    check(cca_thread_last_oom_report((cca_oom_report_t *)padded(w_, sizeof(cca_oom_report_t))) == CCA_OK, "cca_thread_last_oom_report");
    check(p_thread((cca_oom_report_t *)padded(p_, sizeof(cca_oom_report_t))) == CCA_OK, "cca_thread_last_oom_report through a pointer");
    check(v1_cca_thread_last_oom_report((cca_oom_report_t *)padded(s_, sizeof(cca_oom_report_t))) == CCA_OK,
          "the exported cca_thread_last_oom_report");
    same_three("cca_thread_last_oom_report", w_, p_, s_, sizeof(cca_oom_report_t), V1_OOM);
    check(memcmp(w_, &rep, sizeof rep) == 0, "this thread's report is the allocator's last");

    char t1[2048], t2[2048], t3[2048];
    size_t (*p_fmt)(const cca_oom_report_t *, char *, size_t) = &cca_oom_report_format;
    size_t n1 = cca_oom_report_format(&rep, t1, sizeof t1), n2 = p_fmt(&rep, t2, sizeof t2);
    size_t n3 = v1_cca_oom_report_format(&rep, t3, sizeof t3);
    check(n1 > 0 && n1 == n2 && !strcmp(t1, t2), "cca_oom_report_format through a pointer");
    check(n3 > 0 && strstr(t3, "out of memory") != NULL, "the exported cca_oom_report_format");
    printf("format =\n%s\n", t1);

    cca_oom_report_t cut = rep;                       /* judged again from its figures */
    cut.verdict = CCA_OOM_NONE, cut.shortfall = 0, cut.advice[0] = 0;
    void (*p_judge)(cca_oom_report_t *) = &cca_oom_judge;
    memcpy(padded(w_, sizeof cut), &cut, sizeof cut);
    memcpy(padded(p_, sizeof cut), &cut, sizeof cut);
    memcpy(padded(s_, sizeof cut), &cut, sizeof cut);
    memset(s_ + V1_OOM, PAD, sizeof cut - V1_OOM);    /* a first-version program's struct ends there */
    cca_oom_judge((cca_oom_report_t *)(void *)w_);
    p_judge((cca_oom_report_t *)(void *)p_);
    v1_cca_oom_judge((cca_oom_report_t *)(void *)s_);
    same_three("cca_oom_judge", w_, p_, s_, sizeof cut, V1_OOM);
    check(((cca_oom_report_t *)(void *)w_)->verdict == rep.verdict && !strcmp(((cca_oom_report_t *)(void *)w_)->advice, rep.advice),
          "judged again: the same verdict and advice");

    /* the history */
    static hist_t hw, hp, hs;
    hw = (hist_t){ .size = sizeof(cca_history_entry_t) };
    hp = hw;
    hs = (hist_t){ .size = V1_HISTORY };
    uint64_t dw = 7, dp = 7, ds = 7;
    cca_status_t (*p_hist)(cca_allocator_t *, cca_history_fn, void *, uint64_t *) = &cca_history_walk;
    check(cca_history_walk(a, on_entry, &hw, &dw) == CCA_OK, "cca_history_walk");
    check(p_hist(a, on_entry, &hp, &dp) == CCA_OK, "cca_history_walk through a pointer");
    check(v1_cca_history_walk(a, on_entry, &hs, &ds) == CCA_OK, "the exported cca_history_walk");
    check(hw.n == 12 && hp.n == hw.n && hs.n == hw.n && dw == 0 && dp == 0 && ds == 0, "history entries");
    check(memcmp(hw.e, hp.e, sizeof hw.e) == 0, "the history through a pointer");
    for (int i = 0; i < hw.n; i++) check(memcmp(hw.e[i], hs.e[i], V1_HISTORY) == 0, "the exported history walk");
    for (int i = 0; i < hw.n; i++) print_history("history", (const cca_history_entry_t *)(const void *)hw.e[i]);

    /* the scopes */
    cca_status_t (*p_scope)(cca_allocator_t *, uint64_t, cca_scope_result_t *) = &cca_scope_end;
    check(cca_scope_end(a, tok[0], (cca_scope_result_t *)padded(w_, sizeof(cca_scope_result_t))) == CCA_OK, "cca_scope_end");
    check(p_scope(a, tok[1], (cca_scope_result_t *)padded(p_, sizeof(cca_scope_result_t))) == CCA_OK, "cca_scope_end through a pointer");
    check(v1_cca_scope_end(a, tok[2], (cca_scope_result_t *)padded(s_, sizeof(cca_scope_result_t))) == CCA_OK, "the exported cca_scope_end");
    same_three("cca_scope_end", w_, p_, s_, sizeof(cca_scope_result_t), V1_SCOPE);
    cca_scope_result_t sc;
    memcpy(&sc, w_, sizeof sc);
    check(sc.allocations == 4 && sc.frees == 1 && sc.left_allocations == 3, "the scope's figures");
    print_scope("scope", &sc);

    for (int i = 0; i < 4; i++)
        if (i != 1) check(cca_free(a, q[i]) == CCA_OK, "cca_free");
    check(cca_check(a) == CCA_OK, "cca_check");
    cca_destroy(a);
    check(cca_sim_used_bytes(0) == 0 && !cca_last_error_string()[0], "everything back to the device, nothing to report");
    printf("old_program: every call passed\n");
    return 0;
}
