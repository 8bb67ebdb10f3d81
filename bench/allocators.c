/* allocators.c - see allocators.h. */
#include "allocators.h"
#include "sim_ctl.h"

#include <stdio.h>
#include <string.h>

/* cca's configurations: {name, CCA_CONF string given to cca_config_parse}.
 * "default" first: the ratios and goals are computed for every entry. */
static const struct { const char *name, *conf; } cca_configs[] = {
    {"default", ""},
    {"lean", "preset:lean"},       /* release_before_grow, max_split_size_mb:128, segment_growth_percent:10 */
};

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
#ifdef BENCH_HAVE_CUB
    add(all, &n, "cub-default", &bench_ops_cub, "default", 0, model);
    add(all, &n, "cub-all", &bench_ops_cub, "all", 0, model);
#endif
    add(all, &n, "raw", &bench_ops_raw, "", 0, model);
#ifdef BENCH_DEVICE_CUDA
    if (!model)
        add(all, &n, "cudaMallocAsync", &bench_ops_async, "", 0, 0);
#endif
    return n;
}

static int wanted(const bench_alloc_t *a, const char *const *filters, size_t n)
{
    if (n == 0)
        return 1;
    for (size_t i = 0; i < n; i++)
        if (strncmp(a->label, filters[i], strlen(filters[i])) == 0)
            return 1;
    return 0;
}

int allocators_select(bench_opts_t *o, int model_all, const char *const *filters,
                      size_t n_filters)
{
    bench_alloc_t plain[BENCH_MAX_ALLOCS], modelled[BENCH_MAX_ALLOCS];
    size_t np = candidates(plain, 0), nm = simctl_is_sim() ? candidates(modelled, 1) : 0;
    o->n_allocs = 0;
    for (size_t i = 0; i < np; i++)
        if (wanted(&plain[i], filters, n_filters))
            o->allocs[o->n_allocs++] = plain[i];
    for (size_t i = 0; i < nm && o->n_allocs < BENCH_MAX_ALLOCS; i++)
        if ((model_all || modelled[i].ops == &bench_ops_raw) &&
            wanted(&modelled[i], filters, n_filters))
            o->allocs[o->n_allocs++] = modelled[i];
    if (o->n_allocs == 0) {
        fprintf(stderr, "cca-bench: --alloc matches no allocator\n");
        return -1;
    }
    return 0;
}
