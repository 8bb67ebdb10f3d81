/* notice.c - the process's queue of notices (watch crossings, out-of-memory
 * reports) for bindings' delivery threads: a crossing pushed by the thread
 * whose call crossed, still all locked (so the queue holds every thread's
 * crossings in the order they happened), a report after it unlocked; taken
 * in order by
 * cca_notice_wait, which a binding calls without holding anything the
 * allocating threads need. One mutex and one condition variable; a FIFO
 * ring that grows by doubling (a push that finds no host memory is counted
 * as dropped). */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <time.h>
#include "stats_internal.h"

typedef cca_notice_t notice_t;

static struct {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    notice_t *ring;
    size_t cap, head, n;                              /* oldest at ring[head] */
    uint64_t queued, dropped;
} nq = { PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, NULL, 0, 0, 0, 0, 0 };

static bool notice_grow(void)
{
    size_t cap = nq.cap ? nq.cap * 2 : 64;
    notice_t *r = malloc(cap * sizeof *r);
    if (!r) return false;
    for (size_t i = 0; i < nq.n; i++) r[i] = nq.ring[(nq.head + i) % nq.cap];
    free(nq.ring);
    nq.ring = r;
    nq.cap = cap;
    nq.head = 0;
    return true;
}

static void notice_push(const notice_t *x)
{
    pthread_mutex_lock(&nq.mu);
    if (nq.n == nq.cap && !notice_grow()) {
        nq.dropped++;
    } else {
        nq.ring[(nq.head + nq.n) % nq.cap] = *x;
        nq.n++;
        nq.queued++;
        pthread_cond_signal(&nq.cv);
    }
    pthread_mutex_unlock(&nq.mu);
}

void _cca_notice_watch(int device, uint64_t allocator, uint64_t id, cca_watch_kind_t which, size_t threshold,
                       size_t bytes, int rising)
{
    notice_push(&(notice_t){ .kind = CCA_NOTICE_WATCH, .device = device, .allocator = allocator, .id = id,
                             .which = which, .rising = rising, .threshold = threshold, .bytes = bytes });
}

void _cca_notice_oom(int device, uint64_t allocator, uint64_t seq)
{
    notice_push(&(notice_t){ .kind = CCA_NOTICE_OOM, .device = device, .allocator = allocator, .id = seq });
}

/* The oldest notice, waiting up to timeout_ms (kind NONE: none came). */
static notice_t notice_take(int timeout_ms)
{
    struct timespec until;
    if (timeout_ms > 0) {
        clock_gettime(CLOCK_REALTIME, &until);
        until.tv_sec += timeout_ms / 1000;
        until.tv_nsec += (long)(timeout_ms % 1000) * 1000000L;
        if (until.tv_nsec >= 1000000000L) { until.tv_sec++; until.tv_nsec -= 1000000000L; }
    }
    pthread_mutex_lock(&nq.mu);
    while (!nq.n && timeout_ms != 0) {
        if (timeout_ms < 0) pthread_cond_wait(&nq.cv, &nq.mu);
        else if (pthread_cond_timedwait(&nq.cv, &nq.mu, &until) == ETIMEDOUT) break;
    }
    notice_t x = { .kind = CCA_NOTICE_NONE };
    if (nq.n) {
        x = nq.ring[nq.head];
        nq.head = (nq.head + 1) % nq.cap;
        nq.n--;
    }
    pthread_mutex_unlock(&nq.mu);
    return x;
}

cca_notice_kind_t cca_notice_take_sized(int timeout_ms, cca_notice_t *out, size_t out_size)
{
    if (!out || out_size < CCA_V1_NOTICE) return CCA_NOTICE_NONE;
    notice_t x = notice_take(timeout_ms);
    _cca_copy_out(out, out_size, &x, sizeof x);
    return x.kind;
}

cca_notice_kind_t cca_notice_wait(int timeout_ms, int *device, uint64_t *id, cca_watch_kind_t *which,
                                  size_t *threshold, size_t *bytes, int *rising)
{
    notice_t x = notice_take(timeout_ms);
    if (x.kind != CCA_NOTICE_NONE) {
        if (device) *device = x.device;
        if (id) *id = x.id;
        if (which) *which = x.which;
        if (threshold) *threshold = x.threshold;
        if (bytes) *bytes = x.bytes;
        if (rising) *rising = x.rising;
    }
    return x.kind;
}

size_t cca_notice_pending(uint64_t *queued, uint64_t *dropped)
{
    pthread_mutex_lock(&nq.mu);
    size_t n = nq.n;
    if (queued) *queued = nq.queued;
    if (dropped) *dropped = nq.dropped;
    pthread_mutex_unlock(&nq.mu);
    return n;
}
