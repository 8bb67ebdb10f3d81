/* ops_cca.c - cca behind the benchmark's allocator interface. */
#include "alloc_ops.h"

#include <cca.h>
#include <stdio.h>

static void *cca_init(const char *conf, char *err, size_t err_len)
{
    cca_config_t cfg;
    cca_allocator_t *a = NULL;
    cca_config_init(&cfg);
    if (cca_config_parse(&cfg, conf, err, err_len) != CCA_OK)
        return NULL;
    cca_status_t st = cca_create(&cfg, &a);
    if (st != CCA_OK) {
        snprintf(err, err_len, "cca_create: %s (%s)", cca_status_string(st),
                 cca_last_error_string());
        return NULL;
    }
    return a;
}

static int status(const char *what, cca_status_t st)
{
    if (st == CCA_OK)
        return BENCH_OK;
    bench_ops_set_error("%s: %s (%s)", what, cca_status_string(st), cca_last_error_string());
    return BENCH_ERR;
}

static int cca_op_malloc(void *ctx, void **p, size_t size, cudaStream_t s)
{
    cca_status_t st = cca_malloc(ctx, p, size, s);
    return st == CCA_ERROR_OUT_OF_MEMORY ? BENCH_OOM : status("cca_malloc", st);
}

static int cca_op_free(void *ctx, void *p)
{
    return status("cca_free", cca_free(ctx, p));
}

static int cca_op_record(void *ctx, void *p, cudaStream_t s)
{
    return status("cca_record_stream", cca_record_stream(ctx, p, s));
}

static size_t cca_reserved(void *ctx)
{
    cca_stats_t st;
    if (cca_get_stats(ctx, &st) != CCA_OK)
        return 0;
    return (size_t)st.reserved_bytes[CCA_POOL_ALL].current;
}

static size_t cca_peak(void *ctx)
{
    cca_stats_t st;
    if (cca_get_stats(ctx, &st) != CCA_OK)
        return 0;
    return (size_t)st.reserved_bytes[CCA_POOL_ALL].peak;
}

static int cca_op_check(void *ctx, char *msg, size_t msg_len)
{
    cca_status_t st = cca_check(ctx);
    if (st == CCA_OK)
        return BENCH_OK;
    snprintf(msg, msg_len, "cca_check: %s: %s", cca_status_string(st), cca_last_error_string());
    return BENCH_ERR;
}

static int cca_op_profile(void *ctx, bench_profile_t *out)
{
    cca_stats_t st;
    if (cca_get_stats(ctx, &st) != CCA_OK)
        return BENCH_ERR;
    out->all_locked = (double)st.num_all_locked;
#define PROFILE_LOCK_(i, cls)                                                 \
    out->acquisitions[i] = (double)st.lock_##cls##_acquisitions,              \
    out->contended[i] = (double)st.lock_##cls##_contended,                    \
    out->wait_ns_total[i] = (double)st.lock_##cls##_wait_ns_total,            \
    out->wait_ns_max[i] = (double)st.lock_##cls##_wait_ns_max
    PROFILE_LOCK_(0, allocator);
    PROFILE_LOCK_(1, streams);
    PROFILE_LOCK_(2, segments);
    PROFILE_LOCK_(3, headroom);
#undef PROFILE_LOCK_
    return BENCH_OK;
}

static void cca_fini(void *ctx)
{
    cca_destroy(ctx);
}

const bench_alloc_ops_t bench_ops_cca = {
    .name = "cca",
    .init = cca_init,
    .malloc = cca_op_malloc,
    .free = cca_op_free,
    .record_stream = cca_op_record,
    .reserved_bytes = cca_reserved,
    .peak_reserved = cca_peak,
    .check = cca_op_check,
    .profile = cca_op_profile,
    .fini = cca_fini,
};
