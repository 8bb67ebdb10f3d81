/* create.c - creating an allocator for a device (its configuration
 * checked, the device's size read) and destroying it, which returns every
 * segment to the device, live allocations included. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include "internal.h"

static _Atomic uint64_t next_allocator_id = 1;

/* The effective cap from the configuration's fraction and limit (the
 * smaller wins), and whether garbage collection runs (it needs a cap). */
static void create_set_cap(cca_allocator_t *a)
{
    a->cap = SIZE_MAX;
    if (a->cfg.memory_fraction > 0.0) a->cap = (size_t)(a->cfg.memory_fraction * (double)a->device_total);
    if (a->cfg.memory_limit && a->cfg.memory_limit < a->cap) a->cap = a->cfg.memory_limit;
    a->gc_enabled = a->cap != SIZE_MAX && a->cfg.garbage_collection_threshold > 0.0;
}

static cca_status_t create_device_total(cca_allocator_t *a, size_t *total)
{
    int count = 0;
    cudaError_t e = cudaGetDeviceCount(&count);
    if (e != cudaSuccess || a->cfg.device >= count) {
        _cca_errors_clear();
        if (e != cudaSuccess)
            return _cca_errors_fail_cuda(e, "cca_create: device %d not available (cudaGetDeviceCount: %s)", a->cfg.device,
                                  cudaGetErrorName(e));
        if (count <= 0)
            return _cca_errors_fail(CCA_ERROR_INVALID_ARGUMENT, "cca_create: device %d not available: the runtime has no device",
                             a->cfg.device);
        return _cca_errors_fail(CCA_ERROR_INVALID_ARGUMENT, "cca_create: device %d not available: the runtime has %d device%s (%s%d)",
                         a->cfg.device, count, count == 1 ? "" : "s", count == 1 ? "" : "0..", count - 1);
    }
    size_t free_b = 0;
    dev_guard_t g;
    e = _cca_segment_device_enter(a, &g);
    if (e == cudaSuccess) e = cudaMemGetInfo(&free_b, total);
    _cca_segment_device_leave(&g);
    if (e != cudaSuccess) {
        _cca_errors_clear();
        return _cca_errors_fail_cuda(e, "cca_create: cudaMemGetInfo on device %d failed: %s",
                         a->cfg.device, cudaGetErrorName(e));
    }
    return CCA_OK;
}

uint64_t cca_allocator_id(const cca_allocator_t *a) { return a ? a->id : 0; }

cca_status_t cca_create_sized(const cca_config_t *cfg, size_t cfg_size, cca_allocator_t **out)
{
    if (!out) return _cca_errors_fail(CCA_ERROR_INVALID_ARGUMENT, "cca_create: out is NULL");
    *out = NULL;
    if (cfg && cfg_size < CCA_V1_CONFIG)
        return _cca_errors_fail(CCA_ERROR_INVALID_ARGUMENT, "cca_create: a config of %zu bytes is no cca_config_t", cfg_size);
    cca_config_t c;
    cca_config_init(&c);
    if (cfg) memcpy(&c, cfg, cfg_size < sizeof c ? cfg_size : sizeof c);   /* fields it lacks keep their defaults */
    cca_status_t s = _cca_config_check(&c, 0);
    if (s != CCA_OK) return s;
    cca_allocator_t *a = calloc(1, sizeof *a);
    if (!a) return _cca_errors_fail(CCA_ERROR_OUT_OF_MEMORY, "cca_create: out of host memory");
    _cca_lock_init(&a->lock);
    _cca_lock_init(&a->seg_lock);
    _cca_lock_init(&a->spare_lock);
    a->id = atomic_fetch_add(&next_allocator_id, 1);
    a->acct.ops = &_cca_stats_ops;
    a->cfg = c;
    a->plain_rounding = true;
    for (int i = 0; i < CCA_ROUNDUP_INTERVALS; i++) a->plain_rounding &= c.roundup_power2_divisions[i] <= 1;
    if ((s = create_device_total(a, &a->device_total)) != CCA_OK || (s = _cca_config_check(&c, a->device_total)) != CCA_OK) {
        free(a);
        return s;
    }
    if (!_cca_segmap_init(a)) {
        free(a);
        return _cca_errors_fail(CCA_ERROR_OUT_OF_MEMORY, "cca_create: out of host memory");
    }
    a->fit_msz = a->split_msz = c.max_split_size;
    a->large_split_min = CCA_SMALL_SIZE + 1;
    if (c.expandable_segments) {                      /* PyTorch's rule there: any rest of 512 B splits off */
        if ((s = _cca_vmm_init(a)) != CCA_OK) {
            _cca_segmap_fini(a);
            free(a);
            return s;
        }
        a->fit_msz = a->split_msz = SIZE_MAX;
        a->large_split_min = CCA_MIN_BLOCK;
    }
    a->host_bytes += (int64_t)sizeof *a;
    create_set_cap(a);
    _cca_stream_registry_add(a);
    if (c.trace_file[0] && (s = cca_trace_start(a, c.trace_file)) != CCA_OK) {
        char why[512];
        snprintf(why, sizeof why, "%s", cca_last_error_string());
        cca_destroy(a);                               /* not one that forgets what it was asked to record */
        return _cca_errors_fail(s, "cca_create: trace_file: %s", why);
    }
    *out = a;
    return CCA_OK;
}

/* cudaFree as cca_destroy makes it: tried CCA_RELEASE_TRIES times (the
 * call and 3 retries); the runtime's last-error slot is left clean. */
static cudaError_t create_destroy_free(void *p)
{
    cudaError_t e = cudaSuccess;
    for (int t = 0; t < CCA_RELEASE_TRIES; t++) {
        if ((e = cudaFree(p)) == cudaSuccess) break;
        _cca_errors_clear();
    }
    return e;
}

typedef struct text { char buf[1024]; size_t at; } text_t;

static void create_destroy_put(text_t *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void create_destroy_put(text_t *t, const char *fmt, ...)
{
    if (t->at >= sizeof t->buf) return;
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(t->buf + t->at, sizeof t->buf - t->at, fmt, ap);
    va_end(ap);
    if (n > 0) t->at += (size_t)n;
}

/* One part of the text: "<call> failed for N <what>s (B bytes): <error>". */
static void create_destroy_part(text_t *t, const char **sep, const char *call, const char *what, const cca_kept_part_t *p,
                         bool driver)
{
    if (!p->calls) return;
    char name[48];
    if (driver) _cca_vmm_result_name(p->err, name, sizeof name);
    else snprintf(name, sizeof name, "%s", cudaGetErrorName((cudaError_t)p->err));
    create_destroy_put(t, "%s%s failed for %lu %s%s (%zu bytes): %s", *sep, call, p->calls, what, p->calls == 1 ? "" : "s",
                p->bytes, name);
    *sep = "; ";
}

/* Sets the thread's last error text to what cca_destroy could not give
 * back (nothing when everything went back). */
static void create_destroy_report(int device, const cca_kept_t *k)
{
    if (!k->device_bytes && !k->va_bytes) return;
    text_t t = { .at = 0 };
    create_destroy_put(&t, "cca_destroy: device %d kept ", device);
    if (k->device_bytes)
        create_destroy_put(&t, "%zu bytes (%.2f MiB) of device memory", k->device_bytes, (double)k->device_bytes / (1 << 20));
    if (k->va_bytes) create_destroy_put(&t, "%s%zu bytes of address space", k->device_bytes ? " and " : "", k->va_bytes);
    create_destroy_put(&t, " after %d tries per call: ", CCA_RELEASE_TRIES);
    const char *sep = "";
    create_destroy_part(&t, &sep, "cudaFree", "segment", &k->free, false);
    create_destroy_part(&t, &sep, "cuMemUnmap", "mapping", &k->unmap, true);
    if (k->still_mapped.calls) {
        create_destroy_put(&t, "%s%lu reservation%s (%zu bytes) not freed: mappings remain in %s", sep, k->still_mapped.calls,
                    k->still_mapped.calls == 1 ? "" : "s", k->still_mapped.bytes,
                    k->still_mapped.calls == 1 ? "it" : "them");
        sep = "; ";
    }
    create_destroy_part(&t, &sep, "cuMemRelease", "handle", &k->release, true);
    create_destroy_part(&t, &sep, "cuMemAddressFree", "reservation", &k->address_free, true);
    _cca_errors_fail(CCA_ERROR_CUDA, "%s", t.buf);
}

void cca_destroy(cca_allocator_t *a)
{
    if (!a) return;
    _cca_errors_clear_text();                  /* "" unless something could not be given back */
    cca_kept_t kept = { 0 };
    int device = a->cfg.device;
    _cca_stream_registry_remove(a);                  /* exiting threads no longer touch it */
    atomic_store_explicit(&a->dead_pending, false, memory_order_relaxed);
    _cca_alloc_lock_all(a);
    dev_guard_t g;
    if (_cca_segment_device_enter(a, &g) != cudaSuccess) _cca_errors_clear();
    _cca_events_destroy(a);
    for (cca_segment_t *s = a->segments, *next; s; s = next) {
        next = s->next;
        cudaError_t e = s->expandable ? cudaSuccess : create_destroy_free((void *)s->addr);
        if (e != cudaSuccess) {               /* kept: its record goes, the device holds it */
            kept.free.calls++;
            kept.free.bytes += s->size;
            kept.free.err = (int)e;
            kept.device_bytes += s->size;
        }
        for (cca_block_t *b = s->first, *bn; b; b = bn) { bn = b->next; free(b->uses); free(b); }
        free(s);
    }
    a->segments = NULL;
    _cca_vmm_destroy(a, &kept);
    _cca_segment_device_leave(&g);
    a->acct.ops->destroy(&a->acct);
    _cca_history_destroy(a);
    _cca_tracefile_destroy(a);
    cca_stream_t *st = a->streams;
    a->streams = NULL;
    a->all_locked = false;
    _cca_unlock(&a->lock);
    while (st) {                          /* their locks are held; nobody else can reach them */
        cca_stream_t *next = st->next;
        _cca_stream_free(st);
        st = next;
    }
    for (st = a->husks; st;) {
        cca_stream_t *next = st->next;
        _cca_stream_free(st);
        st = next;
    }
    _cca_segment_destroy_all(a);
    _cca_segmap_fini(a);
    _cca_stream_table_free(a);
    free(a);
    create_destroy_report(device, &kept);
}

/* ---- the cap at run time ------------------------------------------------ */

/* Applies a new fraction or limit (all locked): effective for the next
 * growth; memory reserved above it stays until cca_empty_cache (as PyTorch). */
static cca_status_t create_change_cap(cca_allocator_t *a, const char *what, const double *fraction, const size_t *limit)
{
    _cca_alloc_lock_all(a);
    double old_f = a->cfg.memory_fraction;
    size_t old_l = a->cfg.memory_limit;
    if (fraction) a->cfg.memory_fraction = *fraction;
    if (limit) a->cfg.memory_limit = *limit;
    create_set_cap(a);
    if (a->cap < CCA_SMALL_BUFFER) {          /* not even one small segment would fit */
        a->cfg.memory_fraction = old_f;
        a->cfg.memory_limit = old_l;
        size_t cap = a->cap;
        create_set_cap(a);
        _cca_alloc_unlock_all(a, NULL);
        return _cca_errors_fail(CCA_ERROR_INVALID_ARGUMENT,
                         "%s: a cap of %zu bytes on device %d leaves no room for one 2 MiB segment", what, cap,
                         a->cfg.device);
    }
    _cca_alloc_unlock_all(a, NULL);
    return CCA_OK;
}

/* The defaults, to check one setting against the key table. */
static void create_probe_config(cca_config_t *c) { cca_config_init_sized(c, sizeof *c); }

cca_status_t cca_set_memory_fraction(cca_allocator_t *a, double fraction)
{
    if (!a) return _cca_errors_fail(CCA_ERROR_INVALID_ARGUMENT, "cca_set_memory_fraction: allocator is NULL");
    cca_config_t probe;
    char why[256];
    create_probe_config(&probe);
    probe.memory_fraction = fraction;
    if (!_cca_config_key_ok(&probe, "memory_fraction", why, sizeof why))
        return _cca_errors_fail(CCA_ERROR_INVALID_ARGUMENT, "cca_set_memory_fraction: %s", why);
    return create_change_cap(a, "cca_set_memory_fraction", &fraction, NULL);
}

cca_status_t cca_set_memory_limit(cca_allocator_t *a, size_t bytes)
{
    if (!a) return _cca_errors_fail(CCA_ERROR_INVALID_ARGUMENT, "cca_set_memory_limit: allocator is NULL");
    cca_config_t probe;
    char why[256];
    create_probe_config(&probe);
    probe.memory_limit = bytes > (size_t)INT64_MAX ? (size_t)INT64_MAX : bytes;   /* past 2^63: no cap, as always */
    if (!_cca_config_key_ok(&probe, "memory_limit_mb", why, sizeof why))
        return _cca_errors_fail(CCA_ERROR_INVALID_ARGUMENT, "cca_set_memory_limit: %s", why);
    return create_change_cap(a, "cca_set_memory_limit", NULL, &bytes);
}

cca_status_t cca_get_memory_cap(cca_allocator_t *a, size_t *bytes, double *fraction, size_t *limit)
{
    if (!a) return _cca_errors_fail(CCA_ERROR_INVALID_ARGUMENT, "cca_get_memory_cap: allocator is NULL");
    _cca_alloc_lock_all(a);
    if (bytes) *bytes = a->cap == SIZE_MAX ? 0 : a->cap;
    if (fraction) *fraction = a->cfg.memory_fraction;
    if (limit) *limit = a->cfg.memory_limit;
    _cca_alloc_unlock_all(a, NULL);
    return CCA_OK;
}

cca_status_t cca_get_config_sized(cca_allocator_t *a, cca_config_t *out, size_t out_size)
{
    if (!a || !out) return _cca_errors_fail(CCA_ERROR_INVALID_ARGUMENT, "cca_get_config: %s is NULL", a ? "out" : "allocator");
    if (out_size < CCA_V1_CONFIG)
        return _cca_errors_fail(CCA_ERROR_INVALID_ARGUMENT, "cca_get_config: %zu bytes is no cca_config_t", out_size);
    _cca_lock(&a->lock);                              /* the cap's setters hold it */
    cca_config_t c = a->cfg;
    _cca_unlock(&a->lock);
    _cca_copy_out(out, out_size, &c, sizeof c);
    return CCA_OK;
}
