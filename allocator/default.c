/* default.c - one allocator per device for callers that do not manage
 * their own (framework hooks), configured once from CCA_CONF. */
#include <pthread.h>
#include <stdlib.h>
#include "internal.h"

#define MAX_DEVICES 64

static pthread_mutex_t default_lock = PTHREAD_MUTEX_INITIALIZER;
static cca_allocator_t *defaults[MAX_DEVICES];
static bool conf_read;
static cca_status_t conf_status;
static cca_config_t conf;
static char conf_error[400];

cca_status_t cca_default(int device, cca_allocator_t **out)
{
    if (!out) return _cca_fail(CCA_ERROR_INVALID_ARGUMENT, "cca_default: out is NULL");
    *out = NULL;
    if (device < 0 || device >= MAX_DEVICES)
        return _cca_fail(CCA_ERROR_INVALID_ARGUMENT, "cca_default: device %d out of range", device);
    pthread_mutex_lock(&default_lock);
    if (!conf_read) {
        conf_read = true;
        cca_config_init(&conf);
        conf_status = cca_config_parse(&conf, getenv("CCA_CONF"), conf_error, sizeof conf_error);
    }
    cca_status_t s = conf_status;
    if (s != CCA_OK) {
        pthread_mutex_unlock(&default_lock);
        return _cca_fail(s, "CCA_CONF: %s", conf_error);
    }
    if (!defaults[device]) {
        cca_config_t c = conf;
        c.device = device;
        s = cca_create(&c, &defaults[device]);
    }
    *out = defaults[device];
    pthread_mutex_unlock(&default_lock);
    return s;
}
