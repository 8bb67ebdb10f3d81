/* tags.c - tag names (a process-wide registry: ids 1 .. CCA_TAG_MAX - 1,
 * names never freed, so that a name looked up once stays valid), this
 * thread's own tag (kept in _cca_thread_streams) and the process's shared
 * one. The hot path reads them through _cca_tag_now (streams.h). */
#include <pthread.h>
#include <stdlib.h>
#include "internal.h"

_Atomic uint32_t _cca_tag_common;

static pthread_mutex_t tags_mu = PTHREAD_MUTEX_INITIALIZER;
static char *tags_names[CCA_TAG_MAX];
static _Atomic uint32_t tags_count = 1;               /* ids in use are 1 .. count - 1 */

static bool tags_valid(const char *name, size_t *len)
{
    size_t n = 0;
    for (; name[n]; n++)
        if ((unsigned char)name[n] < 0x20 || name[n] == 0x7f || n >= 255) return false;
    *len = n;
    return n > 0;
}

cca_status_t cca_tag_id(const char *name, uint32_t *id)
{
    size_t len;
    if (!name || !id) return _cca_errors_fail(CCA_ERROR_INVALID_ARGUMENT, "cca_tag_id: %s is NULL", name ? "id" : "name");
    if (!tags_valid(name, &len))
        return _cca_errors_fail(CCA_ERROR_INVALID_ARGUMENT, "cca_tag_id: a tag is 1 to 255 bytes without control characters");
    pthread_mutex_lock(&tags_mu);
    uint32_t n = atomic_load_explicit(&tags_count, memory_order_relaxed);
    for (uint32_t i = 1; i < n; i++)
        if (!strcmp(tags_names[i], name)) {
            pthread_mutex_unlock(&tags_mu);
            *id = i;
            return CCA_OK;
        }
    char *copy = n < CCA_TAG_MAX ? malloc(len + 1) : NULL;
    if (!copy) {
        pthread_mutex_unlock(&tags_mu);
        return _cca_errors_fail(CCA_ERROR_OUT_OF_MEMORY, n < CCA_TAG_MAX ? "cca_tag_id: out of host memory"
                                                                   : "cca_tag_id: %d tag names exist already",
                         CCA_TAG_MAX - 1);
    }
    memcpy(copy, name, len + 1);
    tags_names[n] = copy;
    atomic_store_explicit(&tags_count, n + 1, memory_order_release);   /* the name is written before its id is valid */
    pthread_mutex_unlock(&tags_mu);
    *id = n;
    return CCA_OK;
}

const char *cca_tag_name(uint32_t id)
{
    return id && id < atomic_load_explicit(&tags_count, memory_order_acquire) ? tags_names[id] : NULL;
}

static uint32_t tags_known(uint32_t id)
{
    return id < atomic_load_explicit(&tags_count, memory_order_acquire) ? id : 0;
}

uint32_t cca_tag_thread(uint32_t id)
{
    uint32_t prev = _cca_thread_streams.tag;
    _cca_thread_streams.tag = tags_known(id);
    return prev;
}

uint32_t cca_tag_shared(uint32_t id)
{
    return atomic_exchange_explicit(&_cca_tag_common, tags_known(id), memory_order_relaxed);
}
