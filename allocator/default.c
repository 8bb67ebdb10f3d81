/* default.c - one allocator per device for callers that do not manage
 * their own (the framework hooks, the Python package): configured once,
 * from cca_default_configure() if the program called it before first use,
 * else from CCA_CONF. Looked up without a lock once created: the hooks
 * call this on every allocation. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "internal.h"

#define MAX_DEVICES 64

static pthread_mutex_t default_lock = PTHREAD_MUTEX_INITIALIZER;
static cca_allocator_t *_Atomic defaults[MAX_DEVICES];
static bool conf_read, in_use;
static cca_status_t conf_status;
static cca_config_t conf;
static char conf_error[400];
static const char *conf_origin = "CCA_CONF";
static size_t history_max;                            /* cca_default_record_history's bound; 0: off */
static char trace_path[CCA_TRACE_PATH_MAX];           /* cca_default_trace_start's path; "": off */

/* Reads the configuration once (default_lock held). */
static void default_read_conf(void)
{
    if (conf_read) return;
    conf_read = true;
    cca_config_init(&conf);
    conf_status = cca_config_parse(&conf, getenv("CCA_CONF"), conf_error, sizeof conf_error);
}

cca_status_t cca_default_configure(const char *config)
{
    pthread_mutex_lock(&default_lock);
    if (in_use) {
        pthread_mutex_unlock(&default_lock);
        return _cca_errors_fail(CCA_ERROR_INVALID_ARGUMENT,
                         "cca_default_configure: the default allocators are in use already; configure before the first one");
    }
    cca_config_t c;
    cca_config_init(&c);
    char err[400];
    cca_status_t s = cca_config_parse(&c, config, err, sizeof err);
    if (s == CCA_OK) {                                /* replaces CCA_CONF, which is then not read */
        conf = c;
        conf_read = true;
        conf_status = CCA_OK;
        conf_origin = "cca_default_configure";
    }
    pthread_mutex_unlock(&default_lock);
    return s == CCA_OK ? CCA_OK : _cca_errors_fail(s, "cca_default_configure: %s", err);
}

static cca_status_t default_create_default(int device, cca_allocator_t **out)
{
    pthread_mutex_lock(&default_lock);
    default_read_conf();
    cca_status_t s = conf_status;
    cca_allocator_t *a = atomic_load_explicit(&defaults[device], memory_order_relaxed);
    if (s != CCA_OK) {
        pthread_mutex_unlock(&default_lock);
        return _cca_errors_fail(s, "%s: %s", conf_origin, conf_error);
    }
    if (!a) {
        cca_config_t c = conf;
        c.device = device;
        s = cca_create(&c, &a);
        if (s == CCA_OK && history_max && (s = cca_record_history(a, history_max)) != CCA_OK) {
            cca_destroy(a);                           /* not one that forgets what it was asked to record */
            a = NULL;
        }
        if (s == CCA_OK && trace_path[0] && !a->trace && (s = cca_trace_start(a, trace_path)) != CCA_OK) {
            char why[512];
            snprintf(why, sizeof why, "%s", cca_last_error_string());
            cca_destroy(a);
            a = NULL;
            s = _cca_errors_fail(s, "%s", why);
        }
        if (s == CCA_OK) atomic_store_explicit(&defaults[device], a, memory_order_release);
    }
    if (a) in_use = true;                             /* a failed creation leaves configure possible */
    pthread_mutex_unlock(&default_lock);
    *out = a;
    return s;
}

cca_status_t cca_default(int device, cca_allocator_t **out)
{
    if (!out) return _cca_errors_fail(CCA_ERROR_INVALID_ARGUMENT, "cca_default: out is NULL");
    if (device < 0 || device >= MAX_DEVICES) {
        *out = NULL;
        return _cca_errors_fail(CCA_ERROR_INVALID_ARGUMENT, "cca_default: device %d out of range", device);
    }
    cca_allocator_t *a = atomic_load_explicit(&defaults[device], memory_order_acquire);
    if (__builtin_expect(a != NULL, 1)) {
        *out = a;
        return CCA_OK;
    }
    *out = NULL;
    return default_create_default(device, out);
}

cca_status_t cca_default_existing(int device, cca_allocator_t **out)
{
    if (!out) return _cca_errors_fail(CCA_ERROR_INVALID_ARGUMENT, "cca_default_existing: out is NULL");
    *out = device >= 0 && device < MAX_DEVICES ? atomic_load_explicit(&defaults[device], memory_order_acquire) : NULL;
    return CCA_OK;
}

cca_status_t cca_default_record_history(size_t max_entries)
{
    pthread_mutex_lock(&default_lock);
    cca_status_t s = CCA_OK;
    int d = 0;
    for (; d < MAX_DEVICES && s == CCA_OK; d++) {
        cca_allocator_t *a = atomic_load_explicit(&defaults[d], memory_order_relaxed);
        if (a) s = cca_record_history(a, max_entries);
    }
    if (s == CCA_OK) {
        history_max = max_entries;
    } else {                                          /* host memory ran out: the ones changed go back */
        char why[256];
        snprintf(why, sizeof why, "%s", cca_last_error_string());
        for (int k = 0; k < d - 1; k++) {
            cca_allocator_t *a = atomic_load_explicit(&defaults[k], memory_order_relaxed);
            if (a && cca_record_history(a, history_max) != CCA_OK) (void)cca_record_history(a, 0);
        }
        s = _cca_errors_fail(s, "%s", why);
    }
    pthread_mutex_unlock(&default_lock);
    return s;
}

cca_status_t cca_default_trace_start(const char *path)
{
    if (path && strlen(path) >= sizeof trace_path)
        return _cca_errors_fail(CCA_ERROR_INVALID_ARGUMENT, "cca_default_trace_start: the path is longer than %zu bytes",
                         sizeof trace_path - 1);
    pthread_mutex_lock(&default_lock);
    cca_status_t s = CCA_OK;
    int d = 0;
    if (!path || !*path) {                            /* stop every one; the first error is the answer */
        trace_path[0] = 0;
        char why[512] = "";
        for (; d < MAX_DEVICES; d++) {
            cca_allocator_t *a = atomic_load_explicit(&defaults[d], memory_order_relaxed);
            cca_status_t t = a ? cca_trace_stop(a) : CCA_OK;
            if (t != CCA_OK && s == CCA_OK) {
                s = t;
                snprintf(why, sizeof why, "%s", cca_last_error_string());
            }
        }
        pthread_mutex_unlock(&default_lock);
        return s == CCA_OK ? CCA_OK : _cca_errors_fail(s, "cca_default_trace_start: %s", why);
    }
    for (; d < MAX_DEVICES && s == CCA_OK; d++) {
        cca_allocator_t *a = atomic_load_explicit(&defaults[d], memory_order_relaxed);
        if (a) s = cca_trace_start(a, path);
    }
    if (s == CCA_OK) {
        snprintf(trace_path, sizeof trace_path, "%s", path ? path : "");
    } else {                                          /* the ones it started stop again */
        char why[512];
        snprintf(why, sizeof why, "%s", cca_last_error_string());
        for (int k = 0; k < d - 1; k++) {
            cca_allocator_t *a = atomic_load_explicit(&defaults[k], memory_order_relaxed);
            if (a) (void)cca_trace_stop(a);
        }
        s = _cca_errors_fail(s, "cca_default_trace_start: %s", why);
    }
    pthread_mutex_unlock(&default_lock);
    return s;
}
