/* sim_order.c - streams and events of the simulated device: stream slots,
 * the order of the work enqueued on them and its completion (lazy, memoised,
 * forced by synchronizing calls), holds, destroyed streams whose work is
 * pending, the default streams (legacy and per-thread), and the resolution
 * of stream and event handles. All under the lock (sim_internal.h has the
 * model in short). */
#include "sim_internal.h"

#include <stdlib.h>
#include <string.h>

static pthread_key_t exit_key;
static pthread_once_t exit_once = PTHREAD_ONCE_INIT;

static void thread_exit(void *arg);
static void make_exit_key(void) { pthread_key_create(&exit_key, thread_exit); }

uint32_t sim_stream_new(int dev, int kind, unsigned flags)
{
    uint32_t i;
    if (sim_g.nsfree) {
        i = sim_g.sfree[--sim_g.nsfree];
    } else {
        if (sim_g.nstreams == sim_g.capstreams) {
            uint32_t ncap = sim_g.capstreams ? sim_g.capstreams * 2 : 64;
            stream_t *ns = realloc(sim_g.streams, ncap * sizeof *ns);
            if (!ns) return NO_SLOT;
            uint32_t *nf = realloc(sim_g.sfree, ncap * sizeof *nf);
            if (!nf) { sim_g.streams = ns; return NO_SLOT; }
            sim_g.streams = ns;
            sim_g.sfree = nf;
            sim_g.capstreams = ncap;
        }
        i = sim_g.nstreams++;
    }
    stream_t *s = &sim_g.streams[i];
    memset(s, 0, sizeof *s);
    s->state = ST_LIVE;
    s->kind = kind;
    s->dev = dev;
    s->flags = flags;
    s->uid = sim_g.next_uid++;
    return i;
}

void sim_stream_free(uint32_t i)
{
    stream_t *s = &sim_g.streams[i];
    free(s->waits);
    memset(s, 0, sizeof *s);
    s->state = ST_FREE;
    sim_g.sfree[sim_g.nsfree++] = i;
}

/* Is item t.seq of its stream complete? Evaluates only what t needs. */
bool sim_complete(target_t t)
{
    if (t.uid == 0) return true;
    stream_t *s = &sim_g.streams[t.slot];
    if (s->state == ST_FREE || s->uid != t.uid) return true;   /* gone only when drained */
    if (t.seq <= s->done) return true;
    uint64_t lim = t.seq;
    if (s->held && s->hold_from < lim) lim = s->hold_from;
    while (s->wcount) {
        wait_t w = s->waits[s->whead];
        if (w.k >= lim) break;
        if (!sim_complete(w.t)) { lim = w.k; break; }
        s->whead++;
        s->wcount--;
    }
    if (s->wcount == 0) s->whead = 0;
    if (lim > s->done) s->done = lim;
    return t.seq <= s->done;
}

/* Complete item t.seq and everything it waits for (a synchronizing call). */
void sim_force(target_t t)
{
    if (t.uid == 0) return;
    stream_t *s = &sim_g.streams[t.slot];
    if (s->state == ST_FREE || s->uid != t.uid || t.seq <= s->done) return;
    while (s->wcount && s->waits[s->whead].k < t.seq) {
        wait_t w = s->waits[s->whead];
        s->whead++;
        s->wcount--;
        sim_force(w.t);
    }
    if (s->wcount == 0) s->whead = 0;
    s->done = t.seq;
    if (s->held && s->hold_from < t.seq) {
        /* the hold lasts: work after this point is blocked again */
        s->hold_from = t.seq;
        if (s->hold_from >= s->submitted) s->submitted = s->hold_from + 1;  /* the running kernel */
    }
}

static int push_wait(stream_t *s, uint64_t k, target_t t)
{
    if (s->whead + s->wcount == s->wcap) {
        if (s->whead > 0) {
            memmove(s->waits, s->waits + s->whead, s->wcount * sizeof *s->waits);
            s->whead = 0;
        }
        if (s->wcount == s->wcap) {
            size_t ncap = s->wcap ? s->wcap * 2 : 8;
            wait_t *nw = realloc(s->waits, ncap * sizeof *nw);
            if (!nw) return -1;
            s->waits = nw;
            s->wcap = ncap;
        }
    }
    s->waits[s->whead + s->wcount++] = (wait_t){ k, t };
    return 0;
}

/* Enqueue one item on stream i (it also waits for `extra`, and for what the
 * legacy stream's implicit synchronization requires). Returns its number,
 * or 0 when host memory ran out. */
uint64_t sim_enqueue(uint32_t i, target_t extra)
{
    stream_t *s = &sim_g.streams[i];
    uint64_t k = s->submitted;
    if (s->kind == SK_LEGACY) {
        for (uint32_t j = 0; j < sim_g.nstreams; j++) {
            stream_t *o = &sim_g.streams[j];
            if (j == i || o->state == ST_FREE || o->dev != s->dev || (o->flags & cudaStreamNonBlocking))
                continue;
            target_t ot = tail_of(j);
            if (!sim_complete(ot) && push_wait(s, k, ot) != 0) return 0;
        }
    } else if (!(s->flags & cudaStreamNonBlocking)) {
        uint32_t l = sim_g.dev[s->dev].legacy;
        if (l != NO_SLOT) {
            target_t lt = tail_of(l);
            if (!sim_complete(lt) && push_wait(s, k, lt) != 0) return 0;
        }
    }
    if (!sim_complete(extra) && push_wait(s, k, extra) != 0) return 0;
    s->submitted = k + 1;
    return s->submitted;
}

static bool drained(uint32_t i)
{
    stream_t *s = &sim_g.streams[i];
    return !s->held && sim_complete(tail_of(i));
}

void sim_stream_destroy_slot(uint32_t i)
{
    if (drained(i)) {
        sim_stream_free(i);
    } else {
        sim_g.streams[i].state = ST_ZOMBIE;
        sim_g.nzombies++;
    }
}

void sim_reap_zombies(void)
{
    if (!sim_g.nzombies) return;
    for (uint32_t j = 0; j < sim_g.nstreams; j++) {
        if (sim_g.streams[j].state == ST_ZOMBIE && drained(j)) {
            sim_stream_free(j);
            sim_g.nzombies--;
        }
    }
}

void sim_hold_slot(uint32_t i)
{
    stream_t *s = &sim_g.streams[i];
    if (s->held) return;
    uint64_t n = sim_enqueue(i, (target_t){ 0, 0, 0 });    /* the "kernel" */
    if (n == 0) return;
    s->held = true;
    s->hold_from = n - 1;
    sim_g.nheld++;
}

void sim_release_slot(uint32_t i)
{
    stream_t *s = &sim_g.streams[i];
    if (!s->held) return;
    s->held = false;
    sim_g.nheld--;
}

void sim_device_sync(int dev)
{
    sim_g.dev[dev].syncs++;
    if (sim_g.nheld == 0) {         /* nothing can be pending */
        sim_reap_zombies();
        return;
    }
    for (uint32_t j = 0; j < sim_g.nstreams; j++) {
        stream_t *s = &sim_g.streams[j];
        if (s->state != ST_FREE && s->dev == dev) sim_force(tail_of(j));
    }
    sim_reap_zombies();
}

static uint32_t legacy_of(int dev)
{
    device_t *d = &sim_g.dev[dev];
    if (d->legacy == NO_SLOT) d->legacy = sim_stream_new(dev, SK_LEGACY, 0);
    return d->legacy;
}

static uint32_t ptds_of(tls_t *t, int dev)
{
    if (t->ptds[dev] == NO_SLOT) {
        pthread_once(&exit_once, make_exit_key);
        t->ptds[dev] = sim_stream_new(dev, SK_PTDS, 0);
        pthread_setspecific(exit_key, (void *)1);
    }
    return t->ptds[dev];
}

static void thread_exit(void *arg)
{
    (void)arg;
    lock();
    if (sim_tls.gen == atomic_load_explicit(&sim_g.gen, memory_order_relaxed)) {
        for (int d = 0; d < MAX_DEVICES; d++) {
            if (sim_tls.ptds[d] != NO_SLOT) {
                sim_stream_destroy_slot(sim_tls.ptds[d]);
                sim_tls.ptds[d] = NO_SLOT;
            }
        }
    }
    unlock();
}

/* Resolve a stream handle (under the lock). `ptsz`: the NULL handle names the
 * per-thread default stream. `zombies`: accept destroyed streams whose work
 * is pending (for the controls). NO_SLOT when invalid. */
uint32_t sim_resolve_stream(tls_t *t, cudaStream_t h, bool ptsz, bool zombies)
{
    uintptr_t v = (uintptr_t)h;
    if (v == 0) return ptsz ? ptds_of(t, t->dev) : legacy_of(t->dev);
    if (h == cudaStreamLegacy) return legacy_of(t->dev);
    if (h == cudaStreamPerThread) return ptds_of(t, t->dev);
    if (v < STREAM_TAG || v >= STREAM_TAG + TAG_SPAN || (v & 15)) return NO_SLOT;
    uintptr_t i = (v - STREAM_TAG) >> 4;
    if (i >= sim_g.nstreams) return NO_SLOT;
    stream_t *s = &sim_g.streams[i];
    if (s->kind != SK_USER) return NO_SLOT;
    if (s->state == ST_LIVE || (zombies && s->state == ST_ZOMBIE)) return (uint32_t)i;
    return NO_SLOT;
}

event_t *sim_resolve_event(cudaEvent_t h)
{
    uintptr_t v = (uintptr_t)h;
    if (v < EVENT_TAG || v >= EVENT_TAG + TAG_SPAN || (v & 15)) return NULL;
    uintptr_t i = (v - EVENT_TAG) >> 4;
    if (i >= sim_g.nevents || !sim_g.events[i].live) return NULL;
    return &sim_g.events[i];
}

