/* replay_main.c - cca-replay: a recorded run (a trace CSV, a PyTorch memory
 * snapshot pickle, or cca's own) replayed through cca on the simulated
 * device, at any device size and configuration, to say whether it fits
 * and, where it does not, where and why (docs/replay.md). The program and
 * the Python package (cca.replay) run this same function:
 * cca_replay_main, the one name libcca_replay.so exports besides
 * cca_replay_version.
 *
 * For each trace and configuration: one replay on the given device (or,
 * with none, on one large enough for the whole run) that goes on past a
 * refusal as the recorded run did: peak live, peak reserved, device
 * allocations, and whether it fits - if not, the event, time, verdict and
 * advice of its first out-of-memory; then a bisection for the smallest
 * device it fits on (the reserve included; each try stops at its first
 * refusal). Requests the recorded run was refused ("allocate failure")
 * are made again: served on a larger device, each is freed at once. */
#include <errno.h>
#include <pthread.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cca.h>
#include "alloc_ops.h"
#include "balance.h"
#include "pickle.h"
#include "replay.h"
#include "sim_ctl.h"
#include "snapshot_csv.h"
#include "svg.h"
#include "trace.h"

#define EXPORT __attribute__((visibility("default")))
#define MIB ((uint64_t)1 << 20)
#define MAX_CONFS 16
#define REPLAY_JSON_VERSION 1

typedef struct conf { char label[64]; const char *conf; } conf_t;

typedef struct opts {
    const char *traces[256];
    int n_traces;
    uint64_t device_memory;          /* 0: the recording's, where it says */
    uint64_t reserve;
    conf_t confs[MAX_CONFS];
    int n_confs, n_given, only, quiet;
    const char *json, *to_csv, *svg, *segments_svg;
    int n_batches;                   /* --batch: traces[i] recorded at batch[i] */
    uint64_t batch[BALANCE_MAX_RECS];
    unsigned accumulate;
} opts_t;

typedef struct outcome {
    uint64_t peak_live, peak_reserved, min_device, device, device_allocs;
    size_t first_oom;                /* event index of the first refusal */
    int fits;                        /* -1: no device to fit (none given or recorded) */
    size_t oom_event;                /* data row of the first refusal */
    uint64_t oom_time_us, oom_size;
    char verdict[32], advice[400], error[300];
    replay_series_t series;          /* --svg: over the replay on the device */
    svg_segmap_t oom_map;            /* --svg: cca's segments at the first refusal */
    int have_map;
} outcome_t;

/* ---- sizes ------------------------------------------------------------ */

/* "24GiB", "24 GB", "80e9", "1073741824": bytes; 0 with *ok = 0 for anything else. */
static uint64_t parse_size(const char *s, int *ok)
{
    static const struct { const char *unit; double mul; } units[] = {
        {"KiB", 1024.0}, {"MiB", 1048576.0}, {"GiB", 1073741824.0}, {"TiB", 1099511627776.0},
        {"KB", 1e3}, {"MB", 1e6}, {"GB", 1e9}, {"TB", 1e12}, {"B", 1.0}, {"", 1.0}};
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    *ok = 0;
    if (end == s || errno || !(v >= 0))
        return 0;
    while (*end == ' ')
        end++;
    for (size_t i = 0; i < sizeof units / sizeof units[0]; i++)
        if (!strcmp(end, units[i].unit)) {
            double b = v * units[i].mul;
            if (b >= 1.8e19)
                return 0;
            *ok = 1;
            return (uint64_t)(b + 0.5);
        }
    return 0;
}

static const char *show_size(uint64_t b, char *out, size_t len)
{
    if (b >= ((uint64_t)1 << 30))
        snprintf(out, len, "%.2f GiB", (double)b / (double)((uint64_t)1 << 30));
    else
        snprintf(out, len, "%.1f MiB", (double)b / (double)MIB);
    return out;
}

/* ---- the command line -------------------------------------------------- */

static int usage(FILE *f)
{
    fprintf(f, "usage: cca-replay TRACE... [--device-memory SIZE] [--reserve SIZE] [--cca LABEL=CONF]... [--only]\n"
               "                  [--json FILE] [--svg FILE] [--quiet]\n"
               "       cca-replay --batch B=TRACE --batch B=TRACE [--batch B=TRACE]... [--accumulate K] [options]\n"
               "       cca-replay --to-csv DIR SNAPSHOT...\n"
               "       cca-replay --segments-svg FILE SNAPSHOT...\n"
               "TRACE: a trace CSV (RMM's logging layout, as cca_trace_start writes it), or a PyTorch memory\n"
               "snapshot pickle (torch.cuda.memory._dump_snapshot, cca.dump_snapshot): every device in it.\n"
               "SIZE: bytes, or a number with KiB/MiB/GiB/TiB (binary) or KB/MB/GB/TB (decimal).\n"
               "  --device-memory SIZE  the device to fit (default: the recording's, where it says)\n"
               "  --reserve SIZE        memory the CUDA context and other libraries hold (default 512MiB)\n"
               "  --cca LABEL=CONF      also replay cca with configuration CONF (CCA_CONF's syntax)\n"
               "  --only                replay only the --cca configurations (default: also pytorch, expandable, lean)\n"
               "  --json FILE           also write the results as JSON\n"
               "  --to-csv DIR          write each trace (each device of a pickle) as DIR/NAME.devN.csv; no replay\n"
               "  --svg FILE            also draw each replay's timeline (and, where a configuration runs out of\n"
               "                        memory, its segments then; for a snapshot, its segments) as SVG\n"
               "  --batch B=TRACE       TRACE records the step at batch size B: with two or more, the largest batch\n"
               "                        that fits the device under each configuration (fitted on the first two;\n"
               "                        the others are held out and the fit's error on them is said)\n"
               "  --accumulate K        with --batch: a batch B run as K micro-batches of B/K (held-out traces\n"
               "                        then record such runs)\n"
               "  --segments-svg FILE   draw each snapshot's segments and blocks as SVG; no replay\n"
               "  --quiet               print nothing (with --json)\n"
               "Exit status: 0 every configuration fits (with --batch: the balance point was found), 1 one does\n"
               "not, 2 bad input.\n");
    return 2;
}

static int bad(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int bad(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("cca-replay: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputs("\n", stderr);
    va_end(ap);
    return 2;
}

/* --batch B=TRACE */
static int parse_batch(opts_t *o, const char *v)
{
    const char *eq = strchr(v, '=');
    char *end;
    errno = 0;
    unsigned long long b = strtoull(v, &end, 10);
    if (!eq || end != eq || eq == v || errno || b == 0 || v[0] < '0' || v[0] > '9' || !eq[1])
        return bad("--batch: '%s' is not B=TRACE with B a batch size of at least 1 (e.g. --batch 32=step32.csv)", v);
    if (b > BALANCE_MAX_BATCH)
        return bad("--batch: batch size %llu is more than %llu", b, (unsigned long long)BALANCE_MAX_BATCH);
    if (o->n_traces > o->n_batches)
        return bad("--batch: with --batch, every trace is given as --batch B=TRACE");
    if (o->n_batches == BALANCE_MAX_RECS)
        return bad("--batch: at most %d recordings", BALANCE_MAX_RECS);
    for (int k = 0; k < o->n_batches; k++)
        if (o->batch[k] == b)
            return bad("--batch: batch size %llu given twice", b);
    o->batch[o->n_batches++] = b;
    o->traces[o->n_traces++] = eq + 1;
    return 0;
}

static int parse_args(int argc, const char *const *argv, opts_t *o)
{
    memset(o, 0, sizeof *o);
    o->reserve = 512 * MIB;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        int ok;
        if (!strcmp(a, "--help") || !strcmp(a, "-h"))
            return usage(stdout) - 2 - 1;                          /* -1: done, exit 0 */
        if (!strcmp(a, "--only")) { o->only = 1; continue; }
        if (!strcmp(a, "--quiet")) { o->quiet = 1; continue; }
        int takes = !strcmp(a, "--device-memory") || !strcmp(a, "--reserve") || !strcmp(a, "--cca") ||
                    !strcmp(a, "--json") || !strcmp(a, "--to-csv") || !strcmp(a, "--svg") ||
                    !strcmp(a, "--segments-svg") || !strcmp(a, "--batch") || !strcmp(a, "--accumulate");
        if (takes && i + 1 >= argc)
            return bad("%s needs a value", a);
        if (!strcmp(a, "--device-memory") || !strcmp(a, "--reserve")) {
            uint64_t v = parse_size(argv[++i], &ok);
            if (!ok)
                return bad("%s: '%s' is not a size (bytes, or a number with KiB, MiB, GiB, TiB, KB, MB, GB, TB)",
                           a, argv[i]);
            if (a[2] == 'd' && v == 0)
                return bad("--device-memory: a device of 0 bytes");
            *(a[2] == 'd' ? &o->device_memory : &o->reserve) = v;
        } else if (!strcmp(a, "--cca")) {
            const char *v = argv[++i], *eq = strchr(v, '=');
            if (!eq || eq == v || (size_t)(eq - v) >= sizeof o->confs[0].label)
                return bad("--cca: '%s' is not LABEL=CONF (e.g. --cca big=max_split_size_mb:512)", v);
            if (o->n_given == MAX_CONFS - 3)
                return bad("--cca: at most %d configurations", MAX_CONFS - 3);
            conf_t *c = &o->confs[3 + o->n_given++];
            snprintf(c->label, sizeof c->label, "%.*s", (int)(eq - v), v);
            c->conf = eq + 1;
            cca_config_t cfg;
            char err[300];
            cca_config_init(&cfg);
            if (cca_config_parse(&cfg, c->conf, err, sizeof err) != CCA_OK)
                return bad("--cca %s: %s", c->label, err);
            if (cfg.trace_file[0])
                return bad("--cca %s: trace_file has no place in a replay", c->label);
        } else if (!strcmp(a, "--json")) {
            o->json = argv[++i];
        } else if (!strcmp(a, "--to-csv")) {
            o->to_csv = argv[++i];
        } else if (!strcmp(a, "--svg")) {
            o->svg = argv[++i];
        } else if (!strcmp(a, "--segments-svg")) {
            o->segments_svg = argv[++i];
        } else if (!strcmp(a, "--accumulate")) {
            char *end;
            errno = 0;
            unsigned long k = strtoul(argv[++i], &end, 10);
            if (*end || end == argv[i] || errno || k < 1 || k > 4096 || argv[i][0] == '-')
                return bad("--accumulate: '%s' is not a number of micro-batches from 1 to 4096", argv[i]);
            o->accumulate = (unsigned)k;
        } else if (!strcmp(a, "--batch")) {
            if (parse_batch(o, argv[++i]))
                return 2;
        } else if (a[0] == '-' && a[1]) {
            return bad("unknown option '%s' (the options: --device-memory, --reserve, --cca, --only, --json, "
                       "--svg, --batch, --accumulate, --to-csv, --segments-svg, --quiet, --help)", a);
        } else {
            if (o->n_batches)
                return bad("%s: with --batch, every trace is given as --batch B=TRACE", a);
            if (o->n_traces == (int)(sizeof o->traces / sizeof o->traces[0]))
                return bad("at most 256 traces");
            o->traces[o->n_traces++] = a;
        }
    }
    if (!o->n_traces)
        return bad("no TRACE given (cca-replay --help)");
    if (o->n_batches == 1)
        return bad("--batch: give two or more recordings at different batch sizes");
    if (o->accumulate && !o->n_batches)
        return bad("--accumulate goes with --batch");
    if ((o->to_csv != NULL) + (o->segments_svg != NULL) + (o->svg != NULL || o->json || o->n_batches) > 1)
        return bad("--to-csv and --segments-svg each go alone (no --svg, --json or --batch with them, nor each other)");
    if (o->only && !o->n_given)
        return bad("--only keeps the --cca configurations, and none is given");
    static const conf_t builtin[3] = {{"pytorch", ""}, {"expandable", "preset:expandable"}, {"lean", "preset:lean"}};
    int k = 0;
    if (!o->only)
        for (; k < 3; k++)
            o->confs[k] = builtin[k];
    for (int g = 0; g < o->n_given; g++)
        o->confs[k++] = o->confs[3 + g];
    o->n_confs = k;
    return 0;
}

/* ---- loading: CSV or pickle ------------------------------------------- */

typedef struct loaded { trace_t t; char file[1024]; int device, from_pickle; } loaded_t;

static char *read_all(const char *path, size_t *len, char *err, size_t errlen)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
        return NULL;
    }
    size_t cap = 1 << 16, n = 0, got;
    char *buf = malloc(cap + 1);
    while (buf && (got = fread(buf + n, 1, cap - n, f)) > 0) {
        n += got;
        if (n == cap) {
            char *b = realloc(buf, cap * 2 + 1);
            if (!b)
                free(buf);
            buf = b;
            cap *= 2;
        }
    }
    int failed = ferror(f);
    fclose(f);
    if (!buf || failed) {
        free(buf);
        snprintf(err, errlen, "%s: %s", path, failed ? "read error" : "out of memory");
        return NULL;
    }
    buf[n] = 0;
    *len = n;
    return buf;
}

/* NAME of path/NAME.ext */
static void stem(const char *path, char *out, size_t len)
{
    const char *b = strrchr(path, '/');
    b = b ? b + 1 : path;
    const char *dot = strrchr(b, '.');
    snprintf(out, len, "%.*s", (int)(dot && dot != b ? dot - b : (int)strlen(b)), b);
}

/* Appends every trace of path to *L (*n of them). 0, or 2 with the reason printed. */
static int load(const char *path, loaded_t **L, int *n)
{
    char err[600];
    size_t len;
    char *buf = read_all(path, &len, err, sizeof err);
    if (!buf)
        return bad("%s", err);
    snapshot_csv_t *csv = NULL;
    size_t n_csv = 0;
    int pickled = pickle_looks_like(buf, len);
    if (pickled && snapshot_csv_from_pickle(buf, len, &csv, &n_csv, err, sizeof err) != 0) {
        free(buf);
        return bad("%s: %s", path, err);
    }
    size_t want = pickled ? n_csv : 1;
    loaded_t *grown = realloc(*L, (size_t)(*n + (int)want) * sizeof **L);
    if (!grown) {
        free(buf);
        snapshot_csv_free(csv, n_csv);
        return bad("out of host memory");
    }
    *L = grown;
    int rc = 0;
    for (size_t i = 0; i < want && !rc; i++) {
        loaded_t *l = &(*L)[*n];
        memset(l, 0, sizeof *l);
        int r;
        if (pickled) {
            char name[300], s[256];
            stem(path, s, sizeof s);
            snprintf(name, sizeof name, "%s.dev%d.csv", s, csv[i].device);
            r = trace_load_text(csv[i].csv, name, &l->t);
            snprintf(l->file, sizeof l->file, "%s", path);
            l->device = csv[i].device;
            l->from_pickle = 1;
        } else {
            r = trace_load_text(buf, path, &l->t);
            snprintf(l->file, sizeof l->file, "%s", path);
            l->device = l->t.device;
        }
        if (r != 0)
            rc = bad("%s", l->t.error);
        else
            (*n)++;
    }
    if (!pickled && !rc && (*L)[*n - 1].t.n_rows == 0 && !(*L)[*n - 1].t.version)
        rc = bad("%s: no trace rows (a trace CSV has the header Thread,Time,Action,Pointer,Size,Stream)", path);
    free(buf);
    snapshot_csv_free(csv, n_csv);
    return rc;
}

/* ---- --to-csv ---------------------------------------------------------- */

static int to_csv(const opts_t *o)
{
    struct stat st;
    if (stat(o->to_csv, &st) != 0 || !S_ISDIR(st.st_mode))
        return bad("--to-csv: %s is not a folder", o->to_csv);
    for (int i = 0; i < o->n_traces; i++) {
        char err[600], s[256], out[2048];
        size_t len, n = 0;
        char *buf = read_all(o->traces[i], &len, err, sizeof err);
        if (!buf)
            return bad("%s", err);
        if (!pickle_looks_like(buf, len)) {
            free(buf);
            return bad("%s: not a pickle; --to-csv converts PyTorch memory snapshots (a CSV is a trace already)",
                       o->traces[i]);
        }
        snapshot_csv_t *csv = NULL;
        int r = snapshot_csv_from_pickle(buf, len, &csv, &n, err, sizeof err);
        free(buf);
        if (r != 0)
            return bad("%s: %s", o->traces[i], err);
        stem(o->traces[i], s, sizeof s);
        for (size_t k = 0; k < n; k++) {
            snprintf(out, sizeof out, "%s/%s.dev%d.csv", o->to_csv, s, csv[k].device);
            FILE *f = fopen(out, "wb");
            int ok = f && fwrite(csv[k].csv, 1, csv[k].len, f) == csv[k].len;
            ok = f && fclose(f) == 0 && ok;
            if (!ok) {
                snapshot_csv_free(csv, n);
                return bad("%s: %s", out, strerror(errno));
            }
            if (!o->quiet)
                printf("%s: device %d, %zu rows (%zu alive when recording began)\n", out, csv[k].device,
                       csv[k].events, csv[k].preexisting);
        }
        snapshot_csv_free(csv, n);
    }
    return 0;
}

/* ---- the replays ------------------------------------------------------- */

typedef struct seen {
    cca_oom_report_t r;
    int have_oom;
    cca_stats_t st;
    int have_stats;
    svg_segmap_t *map;               /* --svg: filled at the first refusal */
    int map_failed;
} seen_t;

static int map_seg(const cca_segment_info_t *g, void *arg)
{
    seen_t *s = arg;
    s->map_failed |= svg_map_segment(s->map, g->address, g->total_size, g->pool == CCA_POOL_LARGE,
                                     (long long)(uintptr_t)g->stream);
    return s->map_failed;
}

static int map_block(const cca_block_info_t *b, void *arg)
{
    seen_t *s = arg;
    int state = b->state == CCA_STATE_ACTIVE_ALLOCATED ? SVG_ALLOCATED
                : b->state == CCA_STATE_ACTIVE_PENDING_FREE ? SVG_PENDING_FREE : SVG_INACTIVE;
    s->map_failed |= svg_map_block(s->map, b->address - b->segment_address, b->size, state);
    return s->map_failed;
}

static void take_oom(void *ctx, void *arg)
{
    seen_t *s = arg;
    s->have_oom = cca_last_oom_report(ctx, &s->r) == CCA_OK && s->r.verdict != CCA_OOM_NONE;
    if (s->map && (cca_snapshot_walk(ctx, map_seg, map_block, s) != CCA_OK || s->map_failed))
        svg_map_free(s->map);        /* no picture of it rather than a wrong one */
}

static void take_stats(void *ctx, void *arg)
{
    seen_t *s = arg;
    s->have_stats = cca_get_stats(ctx, &s->st) == CCA_OK;
}

/* One replay on a device of `device` bytes with the reserve; 1 fits, 0 not, -1 error. */
static int try_device(const trace_t *t, const char *conf, uint64_t device, uint64_t reserve, int stop,
                      replay_result_t *out, seen_t *seen, replay_series_t *series, char *err, size_t errlen)
{
    if (device <= reserve) {
        memset(out, 0, sizeof *out);
        out->first_oom = 0;
        return 0;
    }
    replay_opts_t ro = {.capacity = (size_t)device, .reserve = (size_t)reserve, .stop_at_oom = stop, .failures = 1,
                        .inspect = seen ? take_stats : NULL, .at_oom = seen ? take_oom : NULL, .inspect_arg = seen,
                        .series = series};
    *out = replay(t, &bench_ops_cca, conf, &ro);
    if (!out->ok) {
        snprintf(err, errlen, "%s", out->error);
        return -1;
    }
    return out->ooms == 0;
}

/* The figures of the replay on the given device, as the recorded run saw
 * them there (it goes on past a refusal, as the run did); with no device,
 * on one large enough for the whole run. Then the smallest device. */
static void run_one(const trace_t *t, const conf_t *c, const opts_t *o, uint64_t device, outcome_t *res)
{
    memset(res, 0, sizeof *res);
    res->device = device;
    res->fits = -1;
    replay_result_t r;
    uint64_t big = (uint64_t)replay_big_capacity(t), refused = 0;   /* room for the largest refused request too */
    for (size_t i = 0; i < t->n_events; i++)
        if (t->events[i].op == TRACE_FAILURE && t->events[i].size > refused)
            refused = t->events[i].size;
    if (2 * (t->peak_live_bytes + refused) > big)
        big = 2 * (t->peak_live_bytes + refused);
    big += o->reserve;
    if (device > big)
        big = device;
    seen_t seen = {0};
    replay_series_t *series = NULL;
    if (o->svg && t->n_events) {
        size_t n = t->n_events < 1200 ? t->n_events : 1200;
        res->series = (replay_series_t){n, calloc(n, sizeof(replay_point_t)), calloc(n, sizeof(replay_point_t))};
        if (!res->series.live || !res->series.reserved) {
            snprintf(res->error, sizeof res->error, "out of host memory");
            return;
        }
        series = &res->series;
        seen.map = &res->oom_map;
    }
    int f = try_device(t, c->conf, device ? device : big, o->reserve, 0, &r, &seen, series, res->error,
                       sizeof res->error);
    res->have_map = res->oom_map.n_segs > 0;
    if (f < 0)
        return;
    res->peak_live = r.peak_live;
    res->peak_reserved = r.peak_reserved;
    res->device_allocs = seen.have_stats ? (uint64_t)seen.st.num_device_alloc : 0;
    if (device) {
        res->fits = f;
        if (!f) {
            size_t e = r.first_oom < t->n_events ? r.first_oom : 0;
            res->first_oom = e;
            res->oom_event = t->n_events ? t->row[e] : 0;
            res->oom_time_us = t->n_events ? t->time_us[e] : 0;
            res->oom_size = t->n_events ? t->events[e].size : 0;
            if (seen.have_oom) {
                snprintf(res->verdict, sizeof res->verdict, "%s", cca_oom_verdict_string(seen.r.verdict));
                snprintf(res->advice, sizeof res->advice, "%s", seen.r.advice);
            } else {
                snprintf(res->verdict, sizeof res->verdict, "external");
                snprintf(res->advice, sizeof res->advice, "the reserve alone does not fit on the device");
            }
        }
    }
    /* the smallest device: it fits at big (where not even there: none);
     * below peak live + the reserve nothing can */
    if (try_device(t, c->conf, big, o->reserve, 1, &r, NULL, NULL, res->error, sizeof res->error) != 1)
        return;
    uint64_t lo = t->peak_live_bytes + o->reserve, hi = big;
    if (res->fits == 1 && device < hi)
        hi = device;                                  /* the given device fits: the smallest is no larger */
    if (lo > hi)
        lo = hi;
    f = try_device(t, c->conf, lo, o->reserve, 1, &r, NULL, NULL, res->error, sizeof res->error);
    if (f < 0)
        return;
    if (f)
        hi = lo;
    while (hi - lo > MIB && hi - lo > hi / 2000) {
        uint64_t mid = lo + (hi - lo) / 2;
        f = try_device(t, c->conf, mid, o->reserve, 1, &r, NULL, NULL, res->error, sizeof res->error);
        if (f < 0)
            return;
        *(f ? &hi : &lo) = mid;
    }
    res->min_device = hi;
}

static void show_time(uint64_t us, char *out, size_t len)
{
    snprintf(out, len, "%02" PRIu64 ":%02" PRIu64 ":%02" PRIu64 ".%06" PRIu64, us / 3600000000u,
             us / 60000000u % 60, us / 1000000u % 60, us % 1000000u);
}

/* A JSON string; a byte that is not UTF-8 is written as the lone surrogate
 * U+DC80+byte, as Python's surrogateescape reads file names (os.fsencode
 * gives the bytes back). */
static void json_str(FILE *f, const char *str)
{
    const unsigned char *s = (const unsigned char *)str;
    fputc('"', f);
    while (*s) {
        int n = svg_utf8_len(s);
        if (*s == '"' || *s == '\\')
            fprintf(f, "\\%c", *s);
        else if (*s < 0x20)
            fprintf(f, "\\u%04x", *s);
        else if (n == 0)
            fprintf(f, "\\u%04x", 0xdc00 + *s);
        else
            fwrite(s, 1, (size_t)n, f);
        s += n ? n : 1;
    }
    fputc('"', f);
}

static void print_trace(const opts_t *o, const loaded_t *l, uint64_t device, const outcome_t *res)
{
    char a[32], b[32], c[32], d[32];
    char dev[16] = "not said";
    if (l->device >= 0)
        snprintf(dev, sizeof dev, "%d", l->device);
    printf("%s: device %s, %zu events, peak live %s", l->t.name, dev, l->t.n_events, show_size(l->t.peak_live_bytes, a, sizeof a));
    if (device)
        printf("; on a %s device, %s reserved for the CUDA context and other libraries\n",
               show_size(device, b, sizeof b), show_size(o->reserve, c, sizeof c));
    else
        printf("; no device size (none given, and the recording names none): %s reserved\n",
               show_size(o->reserve, c, sizeof c));
    printf("  %-16s %12s %14s %16s  %s\n", "configuration", "peak live", "peak reserved", "smallest device",
           device ? "fits" : "");
    for (int k = 0; k < o->n_confs; k++) {
        const outcome_t *r = &res[k];
        if (*r->error) {
            printf("  %-16s failed: %s\n", o->confs[k].label, r->error);
            continue;
        }
        printf("  %-16s %12s %14s %16s  ", o->confs[k].label, show_size(r->peak_live, a, sizeof a),
               show_size(r->peak_reserved, b, sizeof b),
               r->min_device ? show_size(r->min_device, c, sizeof c) : "never");
        if (r->fits == 1)
            printf("yes");
        else if (r->fits == 0) {
            show_time(r->oom_time_us, d, sizeof d);
            printf("no: out of memory at event %zu (%s), allocating %s: %s", r->oom_event, d,
                   show_size(r->oom_size, a, sizeof a), r->verdict);
        }
        printf("\n");
        if (r->fits == 0 && *r->advice)
            printf("  %-16s   advice: %s\n", "", r->advice);
    }
}

static void json_trace(FILE *f, const opts_t *o, const loaded_t *l, const outcome_t *res, int first)
{
    fprintf(f, "%s\n    {\"file\": ", first ? "" : ",");
    json_str(f, l->file);
    fprintf(f, ", \"trace\": ");
    json_str(f, l->t.name);
    if (l->device >= 0)
        fprintf(f, ", \"device\": %d", l->device);
    else
        fprintf(f, ", \"device\": null");
    fprintf(f, ", \"events\": %zu, \"configurations\": [", l->t.n_events);
    for (int k = 0; k < o->n_confs; k++) {
        const outcome_t *r = &res[k];
        fprintf(f, "%s\n      {\"label\": ", k ? "," : "");
        json_str(f, o->confs[k].label);
        fprintf(f, ", \"conf\": ");
        json_str(f, o->confs[k].conf);
        if (*r->error) {
            fprintf(f, ", \"error\": ");
            json_str(f, r->error);
            fprintf(f, "}");
            continue;
        }
        fprintf(f, ", \"peak_live_bytes\": %" PRIu64 ", \"peak_reserved_bytes\": %" PRIu64
                ", \"num_device_alloc\": %" PRIu64, r->peak_live, r->peak_reserved, r->device_allocs);
        if (r->min_device)
            fprintf(f, ", \"min_device_bytes\": %" PRIu64, r->min_device);
        else
            fprintf(f, ", \"min_device_bytes\": null");
        fprintf(f, ", \"fits\": %s", r->fits < 0 ? "null" : r->fits ? "true" : "false");
        if (r->fits == 0)
            fprintf(f, ", \"oom_event\": %zu, \"oom_time_us\": %" PRIu64 ", \"verdict\": ", r->oom_event,
                    r->oom_time_us);
        else
            fprintf(f, ", \"oom_event\": null, \"oom_time_us\": null, \"verdict\": ");
        if (r->fits == 0)
            json_str(f, r->verdict);
        else
            fputs("null", f);
        fprintf(f, ", \"advice\": ");
        if (r->fits == 0)
            json_str(f, r->advice);
        else
            fputs("null", f);
        fprintf(f, "}");
    }
    fprintf(f, "]}");
}

/* ---- pictures ---------------------------------------------------------- */

/* The segment maps of the snapshot pickle at path (device < 0: every device) as panels of d. */
static int snapshot_panels(svg_doc_t *d, const char *path, int device)
{
    char err[600], title[1200];
    size_t len, n = 0;
    char *buf = read_all(path, &len, err, sizeof err);
    if (!buf)
        return bad("%s", err);
    if (!pickle_looks_like(buf, len)) {
        free(buf);
        return bad("%s: not a pickle; --segments-svg draws PyTorch memory snapshots", path);
    }
    svg_segmap_t *maps = NULL;
    int r = snapshot_segmaps_from_pickle(buf, len, &maps, &n, err, sizeof err);
    free(buf);
    if (r != 0)
        return bad("%s: %s", path, err);
    if (n == 0 && device < 0) {                       /* a snapshot with no segments: a panel that says so */
        svg_segmap_t none = {0};
        const char *base = strrchr(path, '/');
        snprintf(title, sizeof title, "%s: no segments", base ? base + 1 : path);
        svg_segments(d, title, &none);
    }
    for (size_t k = 0; k < n; k++)
        if (device < 0 || maps[k].device == device) {
            const char *base = strrchr(path, '/');
            snprintf(title, sizeof title, "%s, device %d: the segments when the snapshot was taken",
                     base ? base + 1 : path, maps[k].device);
            svg_segments(d, title, &maps[k]);
        }
    snapshot_segmaps_free(maps, n);
    return 0;
}

static int segments_svg(const opts_t *o)
{
    svg_doc_t *d = svg_open();
    if (!d)
        return bad("out of host memory");
    for (int i = 0; i < o->n_traces; i++)
        if (snapshot_panels(d, o->traces[i], -1)) {
            svg_discard(d);
            return 2;
        }
    if (svg_save(d, o->segments_svg) != 0)
        return bad("--segments-svg: cannot write %s: %s", o->segments_svg, strerror(errno));
    if (!o->quiet)
        printf("%s: the segments of %d snapshot%s\n", o->segments_svg, o->n_traces, o->n_traces > 1 ? "s" : "");
    return 0;
}

/* The trace's timeline, each configuration's segments at its first
 * refusal, and a snapshot's own segments. */
static int trace_panels(svg_doc_t *d, const opts_t *o, const loaded_t *l, uint64_t device, const outcome_t *res)
{
    char title[1400], a[32];
    svg_line_t lines[MAX_CONFS];
    int n = 0;
    for (int k = 0; k < o->n_confs; k++)
        if (!*res[k].error && res[k].series.n)
            lines[n++] = (svg_line_t){o->confs[k].label, &res[k].series,
                                      res[k].fits == 0 ? (long long)res[k].first_oom : -1,
                                      (long long)res[k].oom_event, k};
    if (device)
        snprintf(title, sizeof title, "%s: bytes over the run on a %s device", l->t.name, show_size(device, a, sizeof a));
    else
        snprintf(title, sizeof title, "%s: bytes over the run", l->t.name);
    svg_timeline(d, title, l->t.n_events, device > o->reserve ? device - o->reserve : 0, lines, n);
    for (int k = 0; k < o->n_confs; k++)
        if (res[k].have_map) {
            snprintf(title, sizeof title, "%s, %s: the segments at the first out-of-memory (event %zu)", l->t.name,
                     o->confs[k].label, res[k].oom_event);
            svg_segments(d, title, &res[k].oom_map);
        }
    return l->from_pickle ? snapshot_panels(d, l->file, l->device) : 0;
}

static void outcome_free(outcome_t *r)
{
    free(r->series.live);
    free(r->series.reserved);
    svg_map_free(&r->oom_map);
}

/* ---- the balance point's replays ------------------------------------------ */

/* The step made at batch b, replayed under configuration k: its smallest
 * device (0: none) and peak live. 0, or -1 with r->error set. */
static int made_step(const opts_t *o, const balance_in_t *in, balance_out_t *bo, int k, uint64_t b, uint64_t *min_dev,
                     uint64_t *peak)
{
    trace_t t;
    balance_conf_t *r = &bo->conf[k];
    if (balance_synth(in, bo, b, &t) != 0) {
        snprintf(r->error, sizeof r->error, "out of host memory");
        return -1;
    }
    opts_t plain = *o;
    plain.svg = NULL;
    outcome_t res;
    run_one(&t, &o->confs[k], &plain, in->device, &res);
    *min_dev = res.min_device;
    *peak = t.peak_live_bytes;
    trace_free(&t);
    outcome_free(&res);
    if (*res.error) {
        snprintf(r->error, sizeof r->error, "%s", res.error);
        return -1;
    }
    return 0;
}

/* 1: the step made at batch b fits the device under configuration k; 0 not; -1 error. */
static int made_fits(const opts_t *o, const balance_in_t *in, balance_out_t *bo, int k, uint64_t b)
{
    trace_t t;
    replay_result_t rr;
    balance_conf_t *r = &bo->conf[k];
    if (balance_synth(in, bo, b, &t) != 0) {
        snprintf(r->error, sizeof r->error, "out of host memory");
        return -1;
    }
    int f = try_device(&t, o->confs[k].conf, in->device, o->reserve, 1, &rr, NULL, NULL, r->error, sizeof r->error);
    trace_free(&t);
    return f;
}

/* The largest m with the made step at m * K fitting, searched from 1 by
 * doubling then halving (lo fits, hi does not): 0 none, -1 error, and
 * UINT64_MAX where it still fits at BALANCE_MAX_BATCH. */
static int64_t search_batch(const opts_t *o, const balance_in_t *in, balance_out_t *bo, int k, uint64_t K,
                            uint64_t *largest)
{
    uint64_t lo = 1, hi = 2, cap = BALANCE_MAX_BATCH / K;
    int f = made_fits(o, in, bo, k, K);
    if (f <= 0) {
        *largest = 0;
        return f;
    }
    while ((f = made_fits(o, in, bo, k, (hi < cap ? hi : cap) * K)) == 1) {
        if (hi >= cap) {
            *largest = UINT64_MAX;
            return 1;
        }
        lo = hi;
        hi *= 2;
    }
    hi = hi < cap ? hi : cap;
    while (f >= 0 && hi - lo > 1) {
        uint64_t mid = lo + (hi - lo) / 2;
        if ((f = made_fits(o, in, bo, k, mid * K)) >= 0)
            *(f ? &lo : &hi) = mid;
    }
    *largest = lo;
    return f < 0 ? -1 : 1;
}

/* Paired recordings: the largest batch (a multiple of K) whose made step
 * fits, its margin, the next batch's need, and the held-out predictions.
 * Where the made step fits even at BALANCE_MAX_BATCH, the largest is
 * "any" (UINT64_MAX). */
static void predict(const opts_t *o, const balance_in_t *in, balance_out_t *bo, int k)
{
    balance_conf_t *r = &bo->conf[k];
    uint64_t K = in->accumulate ? in->accumulate : 1, m, peak, dev;
    if (search_batch(o, in, bo, k, K, &m) < 0)
        return;
    if (m == UINT64_MAX) {
        r->largest = UINT64_MAX;
    } else {
        r->largest = m * K;
        if (m && made_step(o, in, bo, k, m * K, &dev, &peak) == 0)
            r->margin = (int64_t)in->device - (int64_t)dev;
        if (!*r->error && made_step(o, in, bo, k, (m + 1) * K, &dev, &peak) == 0)
            r->need_next = dev;                     /* 0: fits on no device */
    }
    for (int i = 2; i < in->n_recs && !*r->error; i++)
        if (made_step(o, in, bo, k, in->batch[i], &r->held_pred[i], &r->held_peak[i]) == 0)
            r->held_min[i] = in->min_device[k][i];
}

EXPORT int cca_replay_version(void) { return REPLAY_JSON_VERSION; }

static int replay_main(int argc, const char *const *argv);

/* Flushes what it printed before returning: a caller may have pointed
 * stdout and stderr at files for the call (cca.replay). */
EXPORT int cca_replay_main(int argc, const char *const *argv)
{
    static pthread_mutex_t one = PTHREAD_MUTEX_INITIALIZER;   /* the simulator inside is one device world */
    pthread_mutex_lock(&one);
    int rc = replay_main(argc, argv);
    fflush(stdout);
    fflush(stderr);
    pthread_mutex_unlock(&one);
    return rc;
}

static int replay_main(int argc, const char *const *argv)
{
    opts_t o;
    int rc = parse_args(argc, argv, &o);
    if (rc == -1)
        return 0;
    if (rc)
        return rc;
    if (o.to_csv)
        return to_csv(&o);
    if (o.segments_svg)
        return segments_svg(&o);
    if (!simctl_is_sim())
        return bad("needs the simulated device (this build replays on a real GPU's runtime)");
    loaded_t *L = NULL;
    int n = 0;
    for (int i = 0; i < o.n_traces && !rc; i++) {
        int before = n;
        rc = load(o.traces[i], &L, &n);
        if (!rc && o.n_batches && n - before != 1)
            rc = bad("--batch %" PRIu64 "=%s: %d devices in it; a recording is one device's (cca-replay --to-csv "
                     "DIR %s first)", o.batch[i], o.traces[i], n - before, o.traces[i]);
    }
    FILE *jf = NULL;
    if (!rc && o.json && !(jf = fopen(o.json, "w")))
        rc = bad("--json: cannot write %s: %s", o.json, strerror(errno));
    if (jf) {
        char dm[32] = "null";
        if (o.device_memory)
            snprintf(dm, sizeof dm, "%" PRIu64, o.device_memory);
        fprintf(jf, "{\"version\": %d, \"reserve_bytes\": %" PRIu64 ", \"device_memory_bytes\": %s, \"traces\": [",
                REPLAY_JSON_VERSION, o.reserve, dm);
    }
    svg_doc_t *svg = NULL;
    if (!rc && o.svg && !(svg = svg_open()))
        rc = bad("out of host memory");
    if (svg && !rc) {                                 /* an unwritable path said before the replays, not after */
        int existed = access(o.svg, F_OK) == 0;
        FILE *probe = fopen(o.svg, "a");
        if (!probe)
            rc = bad("--svg: cannot write %s: %s", o.svg, strerror(errno));
        else if (fclose(probe) == 0 && !existed)
            remove(o.svg);
    }
    balance_in_t bal = {.n_recs = n, .n_confs = o.n_confs, .device = o.device_memory, .reserve = o.reserve,
                        .accumulate = o.accumulate ? o.accumulate : 1};
    int all_fit = 1, failed = 0;
    for (int i = 0; i < n && !rc; i++) {
        uint64_t device = o.device_memory ? o.device_memory : L[i].t.device_memory;
        outcome_t res[MAX_CONFS];
        if (o.n_batches) {
            bal.batch[i] = o.batch[i];
            bal.trace[i] = &L[i].t;
            if (!bal.device)
                bal.device = device;
        }
        for (int k = 0; k < o.n_confs; k++) {
            if (!o.quiet && L[i].t.n_events > (1u << 18))
                fprintf(stderr, "cca-replay: %s: %s ...\n", L[i].t.name, o.confs[k].label);
            run_one(&L[i].t, &o.confs[k], &o, device, &res[k]);
            all_fit &= res[k].fits != 0;
            failed |= *res[k].error != 0;
            if (o.n_batches) {
                bal.label[k] = o.confs[k].label;
                bal.min_device[k][i] = res[k].min_device;
            }
        }
        if (svg)
            rc = trace_panels(svg, &o, &L[i], device, res);
        if (!o.quiet)
            print_trace(&o, &L[i], device, res);
        else
            for (int k = 0; k < o.n_confs; k++)
                if (*res[k].error)
                    fprintf(stderr, "cca-replay: %s, %s: %s\n", L[i].t.name, o.confs[k].label, res[k].error);
        if (jf)
            json_trace(jf, &o, &L[i], res, i == 0);
        for (int k = 0; k < o.n_confs; k++)
            outcome_free(&res[k]);
    }
    balance_out_t bo;
    memset(&bo, 0, sizeof bo);
    if (!rc && !failed && o.n_batches) {
        if (balance_fit(&bal, &bo) != 0)
            rc = bad("%s", bo.error);
        for (int k = 0; !rc && bo.paired && k < o.n_confs; k++) {
            if (!o.quiet && L[0].t.n_events > (1u << 16))
                fprintf(stderr, "cca-replay: the balance point: %s ...\n", o.confs[k].label);
            predict(&o, &bal, &bo, k);
            failed |= *bo.conf[k].error != 0;
        }
        if (!rc && !o.quiet)
            balance_print(stdout, &bal, &bo);
    }
    if (jf) {
        fprintf(jf, "\n]");
        if (!rc && o.n_batches && bo.kind)
            balance_json(jf, &bal, &bo, json_str);
        fprintf(jf, "}\n");
        if (fclose(jf) != 0 && !rc)
            rc = bad("--json: cannot write %s: %s", o.json, strerror(errno));
    }
    balance_free(&bo);
    if (svg && !rc && svg_save(svg, o.svg) != 0)
        rc = bad("--svg: cannot write %s: %s", o.svg, strerror(errno));
    else if (svg && rc)
        svg_discard(svg);
    for (int i = 0; i < n; i++)
        trace_free(&L[i].t);
    free(L);
    if (rc)
        return rc;
    return failed ? 2 : o.n_batches || all_fit ? 0 : 1;
}
