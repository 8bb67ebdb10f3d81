/* allocators.c - see allocators.h. */
#include "allocators.h"
#include "sim_ctl.h"

#include <cca.h>
#include <stdio.h>
#include <string.h>

#ifdef BENCH_TORCH_SKIPPED
const char bench_torch_skipped[] = BENCH_TORCH_SKIPPED;
#else
const char bench_torch_skipped[] = "";
#endif

/* cca's configurations: {name, CCA_CONF string given to cca_config_parse}.
 * "default" first: the ratios and goals are computed for every entry. */
static const struct { const char *name, *conf; } cca_configs[] = {
    {"default", ""},
    {"lean", "preset:lean"},       /* release_before_grow, max_split_size_mb:128 */
    {"expandable", "preset:expandable"},   /* expandable_segments:True */
};

/* --cca LABEL=CONF: the user's own configurations, after cca's. */
#define MAX_EXTRA 6                       /* with every peer (torch's too) and --model-all: at most BENCH_MAX_ALLOCS (28) rows */
static struct { char name[33]; char conf[400]; } extra[MAX_EXTRA];
static size_t n_extra;

int allocators_add_cca(const char *spec, char *err, size_t len)
{
    const char *eq = spec ? strchr(spec, '=') : NULL;
    size_t nl = eq ? (size_t)(eq - spec) : 0;
    if (!eq || nl == 0 || nl >= sizeof extra[0].name) {
        snprintf(err, len, "--cca %s: expected LABEL=CONF with a label of 1 to 32 characters", spec ? spec : "");
        return -1;
    }
    for (size_t i = 0; i < nl; i++)
        if (!(spec[i] == '-' || spec[i] == '_' || spec[i] == '.' || (spec[i] >= '0' && spec[i] <= '9') ||
              ((spec[i] | 32) >= 'a' && (spec[i] | 32) <= 'z'))) {
            snprintf(err, len, "--cca %s: a label is letters, digits, '-', '_' and '.'", spec);
            return -1;
        }
    if (strlen(eq + 1) >= sizeof extra[0].conf) {
        snprintf(err, len, "--cca %.*s: the configuration is longer than %zu bytes", (int)nl, spec, sizeof extra[0].conf - 1);
        return -1;
    }
    char name[33];
    memcpy(name, spec, nl);
    name[nl] = 0;
    for (size_t i = 0; i < sizeof cca_configs / sizeof cca_configs[0]; i++)
        if (!strcmp(cca_configs[i].name, name)) {
            snprintf(err, len, "--cca %s: cca:%s is one of cca's own configurations", spec, name);
            return -1;
        }
    for (size_t i = 0; i < n_extra; i++)
        if (!strcmp(extra[i].name, name)) {
            snprintf(err, len, "--cca %s: the label %s is given twice", spec, name);
            return -1;
        }
    if (n_extra == MAX_EXTRA) {
        snprintf(err, len, "--cca %s: at most %d configurations", spec, MAX_EXTRA);
        return -1;
    }
    cca_config_t c;
    cca_config_init(&c);
    char why[256];
    if (cca_config_parse(&c, eq + 1, why, sizeof why) != CCA_OK) {
        snprintf(err, len, "--cca %s: %s", spec, why);
        return -1;
    }
    snprintf(extra[n_extra].name, sizeof extra[n_extra].name, "%s", name);
    snprintf(extra[n_extra].conf, sizeof extra[n_extra].conf, "%s", eq + 1);
    n_extra++;
    return 0;
}

/* Appends s to buf in single quotes, safe for the shell. */
static size_t shell_quote(char *buf, size_t at, size_t len, const char *s)
{
    at += (size_t)snprintf(buf + (at < len ? at : len), at < len ? len - at : 0, "'");
    for (; *s; s++)
        at += (size_t)snprintf(buf + (at < len ? at : len), at < len ? len - at : 0, *s == '\'' ? "'\\''" : "%c", *s);
    return at + (size_t)snprintf(buf + (at < len ? at : len), at < len ? len - at : 0, "'");
}

size_t allocators_cca_args(char *buf, size_t len)
{
    size_t at = 0;
    if (len) buf[0] = 0;
    for (size_t i = 0; i < n_extra; i++) {
        char spec[440];
        snprintf(spec, sizeof spec, "%.32s=%.399s", extra[i].name, extra[i].conf);
        at += (size_t)snprintf(buf + (at < len ? at : len), at < len ? len - at : 0, " --cca ");
        at = shell_quote(buf, at, len, spec);
    }
    return at;
}

static void add(bench_alloc_t *all, size_t *n, const char *label, const bench_alloc_ops_t *ops,
                const char *conf, int is_cca, int modelled)
{
    if (*n == BENCH_MAX_ALLOCS)
        return;
    bench_alloc_t *a = &all[(*n)++];
    snprintf(a->label, sizeof a->label, "%.36s%s", label, modelled ? "(modelled)" : "");
    a->ops = ops;
    a->conf = conf;
    a->is_cca = is_cca;
    a->modelled = modelled;
}

static size_t candidates(bench_alloc_t *all, int model)
{
    size_t n = 0;
    char label[48];
    for (size_t i = 0; i < sizeof cca_configs / sizeof cca_configs[0]; i++) {
        snprintf(label, sizeof label, "cca:%s", cca_configs[i].name);
        add(all, &n, label, &bench_ops_cca, cca_configs[i].conf, 1, model);
    }
    for (size_t i = 0; i < n_extra; i++) {
        snprintf(label, sizeof label, "cca:%.32s", extra[i].name);
        add(all, &n, label, &bench_ops_cca, extra[i].conf, 1, model);
    }
#ifdef BENCH_HAVE_CUB
    add(all, &n, "cub-default", &bench_ops_cub, "default", 0, model);
    add(all, &n, "cub-all", &bench_ops_cub, "all", 0, model);
#endif
#ifdef BENCH_HAVE_TORCH
    add(all, &n, "torch-native", &bench_ops_torch, "native", 0, model);
    add(all, &n, "torch-expandable", &bench_ops_torch, "expandable", 0, model);
#endif
    add(all, &n, "raw", &bench_ops_raw, "", 0, model);
#ifdef BENCH_DEVICE_CUDA
    if (!model)
        add(all, &n, "cudaMallocAsync", &bench_ops_async, "", 0, 0);
#endif
    return n;
}

/* A filter names a label exactly when some candidate has it (cca:d is the
 * --cca label d, not every label starting so), else it is a prefix. */
static int wanted(const bench_alloc_t *a, const char *const *filters, size_t n, const bench_alloc_t *all, size_t n_all)
{
    if (n == 0)
        return 1;
    for (size_t i = 0; i < n; i++) {
        int exact = 0;
        for (size_t k = 0; k < n_all && !exact; k++)
            exact = !strcmp(all[k].label, filters[i]);
        if (exact ? !strcmp(a->label, filters[i]) : strncmp(a->label, filters[i], strlen(filters[i])) == 0)
            return 1;
    }
    return 0;
}

int allocators_select(bench_opts_t *o, int model_all, const char *const *filters,
                      size_t n_filters)
{
    bench_alloc_t plain[BENCH_MAX_ALLOCS], modelled[BENCH_MAX_ALLOCS];
    size_t np = candidates(plain, 0), nm = simctl_is_sim() ? candidates(modelled, 1) : 0;
    o->n_allocs = 0;
    for (size_t i = 0; i < np; i++)
        if (wanted(&plain[i], filters, n_filters, plain, np))
            o->allocs[o->n_allocs++] = plain[i];
    for (size_t i = 0; i < nm; i++)
        if ((model_all || modelled[i].ops == &bench_ops_raw) &&
            wanted(&modelled[i], filters, n_filters, modelled, nm)) {
            if (o->n_allocs == BENCH_MAX_ALLOCS) {
                fprintf(stderr, "cca-bench: more than %d allocators; %s and the modelled ones after it left out\n",
                        BENCH_MAX_ALLOCS, modelled[i].label);
                break;
            }
            o->allocs[o->n_allocs++] = modelled[i];
        }
    if (o->n_allocs == 0) {
        fprintf(stderr, "cca-bench: --alloc matches no allocator\n");
        return -1;
    }
    return 0;
}
