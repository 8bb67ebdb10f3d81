/* sim.c - the simulated CUDA device: the CUDA runtime functions that cca and
 * its peers call, over a small model of a GPU, plus the cca_sim_* controls.
 *
 * Model, in short:
 * - Memory: per device, address space reserved with mmap(PROT_NONE,
 *   MAP_NORESERVE) and carved first fit (sim_mem.c); capacity is counted in
 *   requested bytes, apart from addresses.
 * - Work: each stream numbers the work enqueued on it (event records, waits,
 *   the "kernel" a hold starts) 1, 2, 3... An event stands for (stream, n).
 *   Item n of a stream is complete unless a hold blocks it (items after the
 *   hold's start) or one of the stream's waits before n points at work that
 *   is not complete. Completion is evaluated lazily and memoised per stream
 *   (`done`), and is monotonic. A synchronizing call forces items (and,
 *   transitively, what they wait for) complete. With no hold anywhere,
 *   everything is complete, which is the fast path of every call.
 * - The legacy default stream synchronizes with the blocking streams of its
 *   device (as the runtime's): its work waits for their work enqueued before
 *   it, and theirs for its (only bookkept while some stream is held).
 * - Locking: one mutex for the model; call counters and latencies are relaxed
 *   atomics; the current device and last error are thread-local.
 */
#undef CUDA_API_PER_THREAD_DEFAULT_STREAM
#include "sim_internal.h"
#include <cuda.h>

#include <cca_sim.h>

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#define SIM_API __attribute__((visibility("default")))

#define MAX_DEVICES      32
#define DEFAULT_CAPACITY ((size_t)80 << 30)
#define CARVE_ALIGN      ((size_t)512)
#define MAX_RANGES       8
#define NO_SLOT          UINT32_MAX

/* Handles of created streams and events: tagged indexes, never dereferenced. */
#define STREAM_TAG ((uintptr_t)0x5c5100000000ull)
#define EVENT_TAG  ((uintptr_t)0x5c5e00000000ull)
#define TAG_SPAN   ((uintptr_t)1 << 36)        /* 2^32 slots of 16 bytes */

enum { ST_FREE, ST_LIVE, ST_ZOMBIE };             /* zombie: destroyed, work pending */
enum { SK_USER, SK_LEGACY, SK_PTDS };

typedef struct target { uint32_t slot; uint64_t uid; uint64_t seq; } target_t;  /* uid 0: complete */
typedef struct wait { uint64_t k; target_t t; } wait_t;  /* items > k wait for t */

typedef struct stream {
    int state, kind, dev;
    unsigned flags;
    uint64_t uid;                   /* cudaStreamGetId; never reused */
    uint64_t submitted;             /* items enqueued */
    uint64_t done;                  /* items 1..done known complete */
    bool held;
    int capture;                    /* cudaStreamCaptureStatus: none or active */
    uint64_t capture_id;            /* cudaStreamGetCaptureInfo's id of the capture under way */
    int priority;                   /* cudaStreamCreateWithPriority's, clamped */
    uint64_t hold_from;             /* while held, items > hold_from are blocked */
    wait_t *waits;                  /* ascending k, from whead */
    size_t whead, wcount, wcap;
} stream_t;

typedef struct event { bool live; int dev; unsigned flags; target_t t; } event_t;

typedef struct device {
    size_t capacity, used;
    unsigned long live;
    unsigned long syncs;
    struct { uintptr_t base; size_t size; } ranges[MAX_RANGES];
    int nranges;
    bool carving;                   /* free extents built for this world */
    sim_extents_t free;
    uint32_t legacy;                /* slot of the legacy default stream */
} device_t;

#define DEV_INIT { .capacity = DEFAULT_CAPACITY, .legacy = NO_SLOT }
#define CACHELINE 64
typedef struct { _Atomic unsigned long v; char pad[CACHELINE - sizeof(unsigned long)]; } padded_counter_t;

static struct {
    pthread_mutex_t lock;
    _Atomic uint64_t gen;           /* world generation, bumped by cca_sim_reset */
    _Atomic int ndev;
    _Atomic int nfaults;            /* armed faults, to skip the check cheaply (no_driver counts as one) */
    _Atomic int no_driver;          /* cca_sim_set_no_driver: every call that can fail fails */
    _Atomic long nth_left;          /* cca_sim_fail_nth: failable calls until the one that fails; 0: off */
    _Atomic int nth_err;
    int nheld;                      /* streams held (zombies included) */
    unsigned nzombies;
    uint64_t next_uid;
    device_t dev[MAX_DEVICES];
    stream_t *streams;
    uint32_t nstreams, capstreams;
    uint32_t *sfree;
    uint32_t nsfree;
    event_t *events;
    uint32_t nevents, capevents;
    uint32_t *efree;
    uint32_t nefree;
    sim_ptrmap_t allocs;
    unsigned long fault_left[CCA_SIM_API_COUNT];   /* successful calls before the armed fault fires */
    unsigned long fault_times[CCA_SIM_API_COUNT];  /* calls it fails, one after another, once it fires */
    cudaError_t fault_err[CCA_SIM_API_COUNT];
    _Atomic unsigned long latency[CCA_SIM_API_COUNT];
    padded_counter_t calls[CCA_SIM_API_COUNT];
} g = {
    .lock = PTHREAD_MUTEX_INITIALIZER,
    .gen = 1,
    .ndev = 1,
    .next_uid = 1,
    .dev = { DEV_INIT, DEV_INIT, DEV_INIT, DEV_INIT, DEV_INIT, DEV_INIT, DEV_INIT, DEV_INIT,
             DEV_INIT, DEV_INIT, DEV_INIT, DEV_INIT, DEV_INIT, DEV_INIT, DEV_INIT, DEV_INIT },
};

/* ------------------------------------------------------------------ */
/* per-thread state                                                    */

typedef struct tls {
    uint64_t gen;                   /* world this state belongs to */
    int dev;
    cudaError_t err;
    cudaError_t forced;             /* cca_sim_fail_nth chose this thread's current call */
    uint32_t ptds[MAX_DEVICES];     /* per-thread default stream slots */
} tls_t;

static _Thread_local tls_t tls;
static pthread_key_t exit_key;
static pthread_once_t exit_once = PTHREAD_ONCE_INIT;

static void tls_renew(uint64_t gen)
{
    tls.gen = gen;
    tls.dev = 0;
    tls.err = cudaSuccess;
    tls.forced = cudaSuccess;
    for (int i = 0; i < MAX_DEVICES; i++) tls.ptds[i] = NO_SLOT;
}

static inline tls_t *me(void)
{
    uint64_t gen = atomic_load_explicit(&g.gen, memory_order_acquire);
    if (tls.gen != gen) tls_renew(gen);
    return &tls;
}

static inline cudaError_t fail(tls_t *t, cudaError_t e)
{
    t->err = e;
    return e;
}

/* ------------------------------------------------------------------ */
/* calls, latency, faults                                              */

static void spin_ns(unsigned long ns)
{
    struct timespec a, b;
    clock_gettime(CLOCK_MONOTONIC, &a);
    do {
        clock_gettime(CLOCK_MONOTONIC, &b);
    } while ((unsigned long)((b.tv_sec - a.tv_sec) * 1000000000L + (b.tv_nsec - a.tv_nsec)) < ns);
}

/* cca_sim_fail_nth: whether this call (one that can fail) is the chosen one. */
static void count_nth(void)
{
    long left = atomic_load_explicit(&g.nth_left, memory_order_relaxed);
    while (left > 0 && !atomic_compare_exchange_weak_explicit(&g.nth_left, &left, left - 1, memory_order_relaxed,
                                                              memory_order_relaxed)) {}
    if (left == 1) me()->forced = (cudaError_t)atomic_load_explicit(&g.nth_err, memory_order_relaxed);
}

static inline void enter(cca_sim_api_t api)
{
    atomic_fetch_add_explicit(&g.calls[api].v, 1, memory_order_relaxed);
    if (api != CCA_SIM_GET_ERROR_STRING && api != CCA_SIM_GET_ERROR_NAME && api != CCA_SIM_GET_LAST_ERROR &&
        api != CCA_SIM_PEEK_AT_LAST_ERROR && atomic_load_explicit(&g.nth_left, memory_order_relaxed) > 0)
        count_nth();
    unsigned long ns = atomic_load_explicit(&g.latency[api], memory_order_relaxed);
    if (ns) spin_ns(ns);
}

/* Under the lock: the error to inject into this call, or cudaSuccess. */
static cudaError_t fault_now(cca_sim_api_t api)
{
    tls_t *t = me();
    if (atomic_load_explicit(&g.no_driver, memory_order_relaxed)) return cudaErrorInsufficientDriver;
    if (t->forced) {                                  /* cca_sim_fail_nth's call */
        cudaError_t e = t->forced;
        t->forced = cudaSuccess;
        return e;
    }
    if (!g.fault_err[api] || g.fault_left[api] != 0) return cudaSuccess;
    cudaError_t e = g.fault_err[api];
    if (--g.fault_times[api] == 0) {                  /* the last call it fails */
        g.fault_err[api] = cudaSuccess;
        atomic_fetch_sub_explicit(&g.nfaults, 1, memory_order_relaxed);
    }
    return e;
}

/* Under the lock: this call succeeded. */
static inline void fault_ok(cca_sim_api_t api)
{
    if (g.fault_err[api] && g.fault_left[api] > 0) g.fault_left[api]--;
}

static inline bool faults_armed(void)
{
    return atomic_load_explicit(&g.nfaults, memory_order_relaxed) != 0;
}

/* For calls that do not take the lock otherwise. */
static cudaError_t fault_now_unlocked(cca_sim_api_t api)
{
    if (!faults_armed() && !me()->forced) return cudaSuccess;
    pthread_mutex_lock(&g.lock);
    cudaError_t e = fault_now(api);
    pthread_mutex_unlock(&g.lock);
    return e;
}

static void fault_ok_unlocked(cca_sim_api_t api)
{
    if (!faults_armed()) return;
    pthread_mutex_lock(&g.lock);
    fault_ok(api);
    pthread_mutex_unlock(&g.lock);
}

static inline void lock(void) { pthread_mutex_lock(&g.lock); }
static inline void unlock(void) { pthread_mutex_unlock(&g.lock); }

/* ------------------------------------------------------------------ */
/* streams: slots, completion                                          */

static bool complete(target_t t);

static void thread_exit(void *arg);
static void make_exit_key(void) { pthread_key_create(&exit_key, thread_exit); }

static uint32_t stream_new(int dev, int kind, unsigned flags)
{
    uint32_t i;
    if (g.nsfree) {
        i = g.sfree[--g.nsfree];
    } else {
        if (g.nstreams == g.capstreams) {
            uint32_t ncap = g.capstreams ? g.capstreams * 2 : 64;
            stream_t *ns = realloc(g.streams, ncap * sizeof *ns);
            if (!ns) return NO_SLOT;
            uint32_t *nf = realloc(g.sfree, ncap * sizeof *nf);
            if (!nf) { g.streams = ns; return NO_SLOT; }
            g.streams = ns;
            g.sfree = nf;
            g.capstreams = ncap;
        }
        i = g.nstreams++;
    }
    stream_t *s = &g.streams[i];
    memset(s, 0, sizeof *s);
    s->state = ST_LIVE;
    s->kind = kind;
    s->dev = dev;
    s->flags = flags;
    s->uid = g.next_uid++;
    return i;
}

static void stream_free(uint32_t i)
{
    stream_t *s = &g.streams[i];
    free(s->waits);
    memset(s, 0, sizeof *s);
    s->state = ST_FREE;
    g.sfree[g.nsfree++] = i;
}

/* Is item t.seq of its stream complete? Evaluates only what t needs. */
static bool complete(target_t t)
{
    if (t.uid == 0) return true;
    stream_t *s = &g.streams[t.slot];
    if (s->state == ST_FREE || s->uid != t.uid) return true;   /* gone only when drained */
    if (t.seq <= s->done) return true;
    uint64_t lim = t.seq;
    if (s->held && s->hold_from < lim) lim = s->hold_from;
    while (s->wcount) {
        wait_t w = s->waits[s->whead];
        if (w.k >= lim) break;
        if (!complete(w.t)) { lim = w.k; break; }
        s->whead++;
        s->wcount--;
    }
    if (s->wcount == 0) s->whead = 0;
    if (lim > s->done) s->done = lim;
    return t.seq <= s->done;
}

static inline target_t tail_of(uint32_t i)
{
    stream_t *s = &g.streams[i];
    return (target_t){ i, s->uid, s->submitted };
}

/* Complete item t.seq and everything it waits for (a synchronizing call). */
static void force(target_t t)
{
    if (t.uid == 0) return;
    stream_t *s = &g.streams[t.slot];
    if (s->state == ST_FREE || s->uid != t.uid || t.seq <= s->done) return;
    while (s->wcount && s->waits[s->whead].k < t.seq) {
        wait_t w = s->waits[s->whead];
        s->whead++;
        s->wcount--;
        force(w.t);
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
static uint64_t enqueue(uint32_t i, target_t extra)
{
    stream_t *s = &g.streams[i];
    uint64_t k = s->submitted;
    if (s->kind == SK_LEGACY) {
        for (uint32_t j = 0; j < g.nstreams; j++) {
            stream_t *o = &g.streams[j];
            if (j == i || o->state == ST_FREE || o->dev != s->dev || (o->flags & cudaStreamNonBlocking))
                continue;
            target_t ot = tail_of(j);
            if (!complete(ot) && push_wait(s, k, ot) != 0) return 0;
        }
    } else if (!(s->flags & cudaStreamNonBlocking)) {
        uint32_t l = g.dev[s->dev].legacy;
        if (l != NO_SLOT) {
            target_t lt = tail_of(l);
            if (!complete(lt) && push_wait(s, k, lt) != 0) return 0;
        }
    }
    if (!complete(extra) && push_wait(s, k, extra) != 0) return 0;
    s->submitted = k + 1;
    return s->submitted;
}

static bool drained(uint32_t i)
{
    stream_t *s = &g.streams[i];
    return !s->held && complete(tail_of(i));
}

static void stream_destroy_slot(uint32_t i)
{
    if (drained(i)) {
        stream_free(i);
    } else {
        g.streams[i].state = ST_ZOMBIE;
        g.nzombies++;
    }
}

static void reap_zombies(void)
{
    if (!g.nzombies) return;
    for (uint32_t j = 0; j < g.nstreams; j++) {
        if (g.streams[j].state == ST_ZOMBIE && drained(j)) {
            stream_free(j);
            g.nzombies--;
        }
    }
}

static void hold_slot(uint32_t i)
{
    stream_t *s = &g.streams[i];
    if (s->held) return;
    uint64_t n = enqueue(i, (target_t){ 0, 0, 0 });    /* the "kernel" */
    if (n == 0) return;
    s->held = true;
    s->hold_from = n - 1;
    g.nheld++;
}

static void release_slot(uint32_t i)
{
    stream_t *s = &g.streams[i];
    if (!s->held) return;
    s->held = false;
    g.nheld--;
}

static void device_sync(int dev)
{
    g.dev[dev].syncs++;
    if (g.nheld == 0) {             /* nothing can be pending */
        reap_zombies();
        return;
    }
    for (uint32_t j = 0; j < g.nstreams; j++) {
        stream_t *s = &g.streams[j];
        if (s->state != ST_FREE && s->dev == dev) force(tail_of(j));
    }
    reap_zombies();
}

static uint32_t legacy_of(int dev)
{
    device_t *d = &g.dev[dev];
    if (d->legacy == NO_SLOT) d->legacy = stream_new(dev, SK_LEGACY, 0);
    return d->legacy;
}

static uint32_t ptds_of(tls_t *t, int dev)
{
    if (t->ptds[dev] == NO_SLOT) {
        pthread_once(&exit_once, make_exit_key);
        t->ptds[dev] = stream_new(dev, SK_PTDS, 0);
        pthread_setspecific(exit_key, (void *)1);
    }
    return t->ptds[dev];
}

static void thread_exit(void *arg)
{
    (void)arg;
    lock();
    if (tls.gen == atomic_load_explicit(&g.gen, memory_order_relaxed)) {
        for (int d = 0; d < MAX_DEVICES; d++) {
            if (tls.ptds[d] != NO_SLOT) {
                stream_destroy_slot(tls.ptds[d]);
                tls.ptds[d] = NO_SLOT;
            }
        }
    }
    unlock();
}

/* Resolve a stream handle (under the lock). `ptsz`: the NULL handle names the
 * per-thread default stream. `zombies`: accept destroyed streams whose work
 * is pending (for the controls). NO_SLOT when invalid. */
static uint32_t resolve_stream(tls_t *t, cudaStream_t h, bool ptsz, bool zombies)
{
    uintptr_t v = (uintptr_t)h;
    if (v == 0) return ptsz ? ptds_of(t, t->dev) : legacy_of(t->dev);
    if (h == cudaStreamLegacy) return legacy_of(t->dev);
    if (h == cudaStreamPerThread) return ptds_of(t, t->dev);
    if (v < STREAM_TAG || v >= STREAM_TAG + TAG_SPAN || (v & 15)) return NO_SLOT;
    uintptr_t i = (v - STREAM_TAG) >> 4;
    if (i >= g.nstreams) return NO_SLOT;
    stream_t *s = &g.streams[i];
    if (s->kind != SK_USER) return NO_SLOT;
    if (s->state == ST_LIVE || (zombies && s->state == ST_ZOMBIE)) return (uint32_t)i;
    return NO_SLOT;
}

static event_t *resolve_event(cudaEvent_t h)
{
    uintptr_t v = (uintptr_t)h;
    if (v < EVENT_TAG || v >= EVENT_TAG + TAG_SPAN || (v & 15)) return NULL;
    uintptr_t i = (v - EVENT_TAG) >> 4;
    if (i >= g.nevents || !g.events[i].live) return NULL;
    return &g.events[i];
}

static inline bool dev_ok(const tls_t *t)
{
    return t->dev < atomic_load_explicit(&g.ndev, memory_order_relaxed);
}

/* ------------------------------------------------------------------ */
/* devices                                                             */

SIM_API cudaError_t cudaGetDeviceCount(int *count)
{
    enter(CCA_SIM_GET_DEVICE_COUNT);
    tls_t *t = me();
    cudaError_t f = fault_now_unlocked(CCA_SIM_GET_DEVICE_COUNT);
    if (f) return fail(t, f);
    if (!count) return fail(t, cudaErrorInvalidValue);
    *count = atomic_load_explicit(&g.ndev, memory_order_relaxed);
    fault_ok_unlocked(CCA_SIM_GET_DEVICE_COUNT);
    return cudaSuccess;
}

SIM_API cudaError_t cudaGetDevice(int *device)
{
    enter(CCA_SIM_GET_DEVICE);
    tls_t *t = me();
    cudaError_t f = fault_now_unlocked(CCA_SIM_GET_DEVICE);
    if (f) return fail(t, f);
    if (!device) return fail(t, cudaErrorInvalidValue);
    *device = t->dev;
    fault_ok_unlocked(CCA_SIM_GET_DEVICE);
    return cudaSuccess;
}

SIM_API cudaError_t cudaSetDevice(int device)
{
    enter(CCA_SIM_SET_DEVICE);
    tls_t *t = me();
    cudaError_t f = fault_now_unlocked(CCA_SIM_SET_DEVICE);
    if (f) return fail(t, f);
    if (device < 0 || device >= atomic_load_explicit(&g.ndev, memory_order_relaxed))
        return fail(t, cudaErrorInvalidDevice);
    t->dev = device;
    fault_ok_unlocked(CCA_SIM_SET_DEVICE);
    return cudaSuccess;
}

SIM_API cudaError_t cudaDeviceSynchronize(void)
{
    enter(CCA_SIM_DEVICE_SYNCHRONIZE);
    tls_t *t = me();
    lock();
    cudaError_t e = fault_now(CCA_SIM_DEVICE_SYNCHRONIZE);
    if (!e && !dev_ok(t)) e = cudaErrorInvalidDevice;
    if (!e) {
        device_sync(t->dev);
        fault_ok(CCA_SIM_DEVICE_SYNCHRONIZE);
    }
    unlock();
    return e ? fail(t, e) : cudaSuccess;
}

/* ------------------------------------------------------------------ */
/* memory                                                              */

static size_t sat_mul(size_t a, size_t b) { return (b && a > SIZE_MAX / b) ? SIZE_MAX : a * b; }

static size_t round_up(size_t v, size_t a) { return (v + a - 1) & ~(a - 1); }

/* Reserve one more address range for a device (at least `need` bytes). */
static int reserve_range(int dev, size_t need)
{
    device_t *d = &g.dev[dev];
    if (d->nranges == MAX_RANGES) return -1;
    const size_t max_range = (size_t)16 << 40, unit = (size_t)2 << 20;
    size_t want = sat_mul(d->capacity, 4);
    if (want < ((size_t)1 << 30)) want = (size_t)1 << 30;
    if (want > max_range) want = max_range;
    if (need > SIZE_MAX - unit) return -1;
    need = round_up(need, unit);
    if (want < need) want = need;
    want = round_up(want, unit);
    /* The first range of a device asks for the same place run after run
     * (a plain hint: the kernel takes it when it is free, and sanitizers may
     * drop it), so that addresses are the same from one run to the next. */
    void *hint = d->nranges == 0 ? (void *)((uintptr_t)0x200000000000ull + (uintptr_t)dev * ((uintptr_t)1 << 40)) : NULL;
    void *p = mmap(hint, want, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED && want > need) {
        want = need;
        p = mmap(NULL, want, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    }
    if (p == MAP_FAILED) return -1;
    d->ranges[d->nranges].base = (uintptr_t)p;
    d->ranges[d->nranges].size = want;
    d->nranges++;
    if (d->carving && sim_ext_give(&d->free, (uintptr_t)p, want) != 0) return -1;
    return 0;
}

static uintptr_t carve(int dev, size_t carved)
{
    device_t *d = &g.dev[dev];
    if (!d->carving) {
        for (int r = 0; r < d->nranges; r++)
            if (sim_ext_give(&d->free, d->ranges[r].base, d->ranges[r].size) != 0) return 0;
        d->carving = true;
    }
    uintptr_t a = sim_ext_take(&d->free, carved);
    if (!a && reserve_range(dev, carved) == 0) a = sim_ext_take(&d->free, carved);
    return a;
}

SIM_API cudaError_t cudaMalloc(void **devPtr, size_t size)
{
    enter(CCA_SIM_MALLOC);
    tls_t *t = me();
    lock();
    cudaError_t e = fault_now(CCA_SIM_MALLOC);
    if (e) goto out;
    if (!devPtr) { e = cudaErrorInvalidValue; goto out; }
    if (!dev_ok(t)) { e = cudaErrorInvalidDevice; goto out; }
    if (size == 0) {
        *devPtr = NULL;
        goto out;
    }
    device_t *d = &g.dev[t->dev];
    if (d->used > d->capacity || size > d->capacity - d->used) { e = cudaErrorMemoryAllocation; goto out; }
    size_t carved = round_up(size, CARVE_ALIGN);
    uintptr_t a = carve(t->dev, carved);
    if (!a) { e = cudaErrorMemoryAllocation; goto out; }
    sim_alloc_t rec = { a, size, carved, t->dev };
    if (sim_map_put(&g.allocs, &rec) != 0) {
        sim_ext_give(&d->free, a, carved);
        e = cudaErrorMemoryAllocation;
        goto out;
    }
    d->used += size;
    d->live++;
    *devPtr = (void *)a;
out:
    if (!e) fault_ok(CCA_SIM_MALLOC);
    unlock();
    return e ? fail(t, e) : cudaSuccess;
}

SIM_API cudaError_t cudaFree(void *devPtr)
{
    enter(CCA_SIM_FREE);
    tls_t *t = me();
    lock();
    cudaError_t e = fault_now(CCA_SIM_FREE);
    if (e || !devPtr) goto out;
    if (!dev_ok(t)) { e = cudaErrorInvalidDevice; goto out; }
    sim_alloc_t rec;
    if (!sim_map_take(&g.allocs, (uintptr_t)devPtr, &rec)) { e = cudaErrorInvalidValue; goto out; }
    device_sync(t->dev);            /* cudaFree synchronizes the device */
    device_t *d = &g.dev[rec.dev];
    sim_ext_give(&d->free, rec.addr, rec.carved);
    d->used -= rec.size;
    d->live--;
out:
    if (!e) fault_ok(CCA_SIM_FREE);
    unlock();
    return e ? fail(t, e) : cudaSuccess;
}

SIM_API cudaError_t cudaMemGetInfo(size_t *free, size_t *total)
{
    enter(CCA_SIM_MEM_GET_INFO);
    tls_t *t = me();
    lock();
    cudaError_t e = fault_now(CCA_SIM_MEM_GET_INFO);
    if (!e && (!free || !total)) e = cudaErrorInvalidValue;
    if (!e && !dev_ok(t)) e = cudaErrorInvalidDevice;
    if (!e) {
        device_t *d = &g.dev[t->dev];
        *free = d->capacity > d->used ? d->capacity - d->used : 0;
        *total = d->capacity;
        fault_ok(CCA_SIM_MEM_GET_INFO);
    }
    unlock();
    return e ? fail(t, e) : cudaSuccess;
}

/* ------------------------------------------------------------------ */
/* streams                                                             */

static cudaError_t stream_create(cudaStream_t *pStream, unsigned int flags, int priority)
{
    enter(CCA_SIM_STREAM_CREATE);
    tls_t *t = me();
    lock();
    cudaError_t e = fault_now(CCA_SIM_STREAM_CREATE);
    if (e) goto out;
    if (!pStream || (flags & ~(unsigned)cudaStreamNonBlocking)) { e = cudaErrorInvalidValue; goto out; }
    if (!dev_ok(t)) { e = cudaErrorInvalidDevice; goto out; }
    reap_zombies();
    uint32_t i = stream_new(t->dev, SK_USER, flags);
    if (i == NO_SLOT) { e = cudaErrorMemoryAllocation; goto out; }
    g.streams[i].priority = priority;
    *pStream = (cudaStream_t)(STREAM_TAG + ((uintptr_t)i << 4));
    fault_ok(CCA_SIM_STREAM_CREATE);
out:
    unlock();
    return e ? fail(t, e) : cudaSuccess;
}

SIM_API cudaError_t cudaStreamCreate(cudaStream_t *pStream) { return stream_create(pStream, 0, 0); }

SIM_API cudaError_t cudaStreamCreateWithFlags(cudaStream_t *pStream, unsigned int flags)
{
    return stream_create(pStream, flags, 0);
}

SIM_API cudaError_t cudaStreamDestroy(cudaStream_t stream)
{
    enter(CCA_SIM_STREAM_DESTROY);
    tls_t *t = me();
    lock();
    cudaError_t e = fault_now(CCA_SIM_STREAM_DESTROY);
    if (!e) {
        uint32_t i = NO_SLOT;
        if (stream != NULL && stream != cudaStreamLegacy && stream != cudaStreamPerThread)
            i = resolve_stream(t, stream, false, false);
        if (i == NO_SLOT) {
            e = cudaErrorInvalidResourceHandle;
        } else {
            stream_destroy_slot(i);
            fault_ok(CCA_SIM_STREAM_DESTROY);
        }
    }
    unlock();
    return e ? fail(t, e) : cudaSuccess;
}

/* The common start of a call on one stream: counted, its latency spent,
 * locked, a pending fault taken, the device and the stream checked. The
 * lock is held on return whatever the result; finish with call_end. */
static cudaError_t stream_call_begin(cca_sim_api_t api, cudaStream_t stream, bool ptsz, tls_t **t, uint32_t *slot)
{
    enter(api);
    *t = me();
    lock();
    cudaError_t e = fault_now(api);
    if (!e && !dev_ok(*t)) e = cudaErrorInvalidDevice;
    if (!e && (*slot = resolve_stream(*t, stream, ptsz, false)) == NO_SLOT) e = cudaErrorInvalidResourceHandle;
    return e;
}

static cudaError_t call_end(tls_t *t, cudaError_t e)
{
    unlock();
    return e ? fail(t, e) : cudaSuccess;
}

static cudaError_t stream_sync(cudaStream_t stream, bool ptsz)
{
    tls_t *t;
    uint32_t i;
    cudaError_t e = stream_call_begin(CCA_SIM_STREAM_SYNCHRONIZE, stream, ptsz, &t, &i);
    if (!e) {
        if (g.nheld) force(tail_of(i));
        fault_ok(CCA_SIM_STREAM_SYNCHRONIZE);
    }
    return call_end(t, e);
}

/* Graph capture: only its state, which is what an allocator can observe
 * (cudaStreamIsCapturing); the graph EndCapture returns is a token, not a
 * graph the simulator could launch. */
static char graph_token;
static uint64_t next_capture_id = 1;

static cudaError_t begin_capture(cudaStream_t stream, enum cudaStreamCaptureMode mode, bool ptsz)
{
    tls_t *t;
    uint32_t i;
    cudaError_t e = stream_call_begin(CCA_SIM_STREAM_BEGIN_CAPTURE, stream, ptsz, &t, &i);
    if (!e && (unsigned)mode > (unsigned)cudaStreamCaptureModeRelaxed) e = cudaErrorInvalidValue;
    if (!e && g.streams[i].kind == SK_LEGACY) e = cudaErrorStreamCaptureUnsupported;
    if (!e && g.streams[i].capture != cudaStreamCaptureStatusNone) e = cudaErrorIllegalState;
    if (!e) {
        g.streams[i].capture = cudaStreamCaptureStatusActive;
        g.streams[i].capture_id = next_capture_id++;
        fault_ok(CCA_SIM_STREAM_BEGIN_CAPTURE);
    }
    return call_end(t, e);
}

static cudaError_t end_capture(cudaStream_t stream, cudaGraph_t *graph, bool ptsz)
{
    tls_t *t;
    uint32_t i;
    cudaError_t e = stream_call_begin(CCA_SIM_STREAM_END_CAPTURE, stream, ptsz, &t, &i);
    if (!e && !graph) e = cudaErrorInvalidValue;
    if (!e && g.streams[i].capture != cudaStreamCaptureStatusActive) e = cudaErrorIllegalState;
    if (!e) {
        g.streams[i].capture = cudaStreamCaptureStatusNone;
        *graph = (cudaGraph_t)(void *)&graph_token;
        fault_ok(CCA_SIM_STREAM_END_CAPTURE);
    }
    return call_end(t, e);
}

static cudaError_t is_capturing(cudaStream_t stream, enum cudaStreamCaptureStatus *status, bool ptsz)
{
    tls_t *t;
    uint32_t i;
    cudaError_t e = stream_call_begin(CCA_SIM_STREAM_IS_CAPTURING, stream, ptsz, &t, &i);
    if (!e && !status) e = cudaErrorInvalidValue;
    if (!e) {
        *status = (enum cudaStreamCaptureStatus)g.streams[i].capture;
        fault_ok(CCA_SIM_STREAM_IS_CAPTURING);
    }
    return call_end(t, e);
}

SIM_API cudaError_t cudaStreamBeginCapture(cudaStream_t stream, enum cudaStreamCaptureMode mode)
{
    return begin_capture(stream, mode, false);
}
SIM_API cudaError_t cudaStreamEndCapture(cudaStream_t stream, cudaGraph_t *pGraph) { return end_capture(stream, pGraph, false); }
SIM_API cudaError_t cudaStreamIsCapturing(cudaStream_t stream, enum cudaStreamCaptureStatus *pCaptureStatus)
{
    return is_capturing(stream, pCaptureStatus, false);
}

static cudaError_t stream_query(cudaStream_t stream, bool ptsz)
{
    tls_t *t;
    uint32_t i;
    cudaError_t e = stream_call_begin(CCA_SIM_STREAM_QUERY, stream, ptsz, &t, &i);
    if (!e) {
        if (g.nheld && (g.streams[i].held || !complete(tail_of(i)))) e = cudaErrorNotReady;
        else fault_ok(CCA_SIM_STREAM_QUERY);
    }
    return call_end(t, e);
}

static cudaError_t stream_wait_event(cudaStream_t stream, cudaEvent_t event, unsigned int flags, bool ptsz)
{
    enter(CCA_SIM_STREAM_WAIT_EVENT);
    tls_t *t = me();
    lock();
    cudaError_t e = fault_now(CCA_SIM_STREAM_WAIT_EVENT);
    if (e) goto out;
    if (flags & ~(unsigned)cudaEventWaitExternal) { e = cudaErrorInvalidValue; goto out; }
    if (!dev_ok(t)) { e = cudaErrorInvalidDevice; goto out; }
    event_t *ev = resolve_event(event);
    uint32_t i = resolve_stream(t, stream, ptsz, false);
    if (!ev || i == NO_SLOT) { e = cudaErrorInvalidResourceHandle; goto out; }
    if (g.nheld && !complete(ev->t) && enqueue(i, ev->t) == 0) { e = cudaErrorMemoryAllocation; goto out; }
    fault_ok(CCA_SIM_STREAM_WAIT_EVENT);
out:
    unlock();
    return e ? fail(t, e) : cudaSuccess;
}

static cudaError_t stream_get_id(cudaStream_t stream, unsigned long long *id, bool ptsz)
{
    tls_t *t;
    uint32_t i;
    cudaError_t e = stream_call_begin(CCA_SIM_STREAM_GET_ID, stream, ptsz, &t, &i);
    if (!e && !id) e = cudaErrorInvalidValue;
    if (!e) {
        *id = g.streams[i].uid;
        fault_ok(CCA_SIM_STREAM_GET_ID);
    }
    return call_end(t, e);
}

SIM_API cudaError_t cudaStreamSynchronize(cudaStream_t stream) { return stream_sync(stream, false); }
SIM_API cudaError_t cudaStreamQuery(cudaStream_t stream) { return stream_query(stream, false); }
SIM_API cudaError_t cudaStreamWaitEvent(cudaStream_t stream, cudaEvent_t event, unsigned int flags)
{
    return stream_wait_event(stream, event, flags, false);
}
SIM_API cudaError_t cudaStreamGetId(cudaStream_t hStream, unsigned long long *streamId)
{
    return stream_get_id(hStream, streamId, false);
}

/* ------------------------------------------------------------------ */
/* events                                                              */

static cudaError_t event_create(cudaEvent_t *event, unsigned int flags)
{
    enter(CCA_SIM_EVENT_CREATE);
    tls_t *t = me();
    lock();
    cudaError_t e = fault_now(CCA_SIM_EVENT_CREATE);
    if (e) goto out;
    const unsigned known = cudaEventBlockingSync | cudaEventDisableTiming | cudaEventInterprocess;
    if (!event || (flags & ~known) ||
        ((flags & cudaEventInterprocess) && !(flags & cudaEventDisableTiming))) {
        e = cudaErrorInvalidValue;
        goto out;
    }
    if (!dev_ok(t)) { e = cudaErrorInvalidDevice; goto out; }
    uint32_t i;
    if (g.nefree) {
        i = g.efree[--g.nefree];
    } else {
        if (g.nevents == g.capevents) {
            uint32_t ncap = g.capevents ? g.capevents * 2 : 64;
            event_t *ne = realloc(g.events, ncap * sizeof *ne);
            if (!ne) { e = cudaErrorMemoryAllocation; goto out; }
            g.events = ne;
            uint32_t *nf = realloc(g.efree, ncap * sizeof *nf);
            if (!nf) { e = cudaErrorMemoryAllocation; goto out; }
            g.efree = nf;
            g.capevents = ncap;
        }
        i = g.nevents++;
    }
    g.events[i] = (event_t){ .live = true, .dev = t->dev, .flags = flags };
    *event = (cudaEvent_t)(EVENT_TAG + ((uintptr_t)i << 4));
    fault_ok(CCA_SIM_EVENT_CREATE);
out:
    unlock();
    return e ? fail(t, e) : cudaSuccess;
}

SIM_API cudaError_t cudaEventCreate(cudaEvent_t *event) { return event_create(event, 0); }
SIM_API cudaError_t cudaEventCreateWithFlags(cudaEvent_t *event, unsigned int flags)
{
    return event_create(event, flags);
}

static cudaError_t event_record(cudaEvent_t event, cudaStream_t stream, bool ptsz)
{
    enter(CCA_SIM_EVENT_RECORD);
    tls_t *t = me();
    lock();
    cudaError_t e = fault_now(CCA_SIM_EVENT_RECORD);
    if (e) goto out;
    if (!dev_ok(t)) { e = cudaErrorInvalidDevice; goto out; }
    event_t *ev = resolve_event(event);
    uint32_t i = resolve_stream(t, stream, ptsz, false);
    if (!ev || i == NO_SLOT || g.streams[i].dev != ev->dev) { e = cudaErrorInvalidResourceHandle; goto out; }
    if (g.nheld == 0) {
        ev->t = (target_t){ 0, 0, 0 };  /* nothing held: the work is done */
    } else {
        uint64_t n = enqueue(i, (target_t){ 0, 0, 0 });
        if (n == 0) { e = cudaErrorMemoryAllocation; goto out; }
        ev->t = (target_t){ i, g.streams[i].uid, n };
    }
    fault_ok(CCA_SIM_EVENT_RECORD);
out:
    unlock();
    return e ? fail(t, e) : cudaSuccess;
}

SIM_API cudaError_t cudaEventRecord(cudaEvent_t event, cudaStream_t stream) { return event_record(event, stream, false); }

/* The common start of a call on one event (as stream_call_begin). */
static cudaError_t event_call_begin(cca_sim_api_t api, cudaEvent_t event, tls_t **t, event_t **ev)
{
    enter(api);
    *t = me();
    lock();
    cudaError_t e = fault_now(api);
    if (!e && !(*ev = resolve_event(event))) e = cudaErrorInvalidResourceHandle;
    return e;
}

SIM_API cudaError_t cudaEventQuery(cudaEvent_t event)
{
    tls_t *t;
    event_t *ev;
    cudaError_t e = event_call_begin(CCA_SIM_EVENT_QUERY, event, &t, &ev);
    if (!e) {
        if (g.nheld && !complete(ev->t)) e = cudaErrorNotReady;
        else fault_ok(CCA_SIM_EVENT_QUERY);
    }
    return call_end(t, e);
}

SIM_API cudaError_t cudaEventSynchronize(cudaEvent_t event)
{
    tls_t *t;
    event_t *ev;
    cudaError_t e = event_call_begin(CCA_SIM_EVENT_SYNCHRONIZE, event, &t, &ev);
    if (!e) {
        if (g.nheld) force(ev->t);
        fault_ok(CCA_SIM_EVENT_SYNCHRONIZE);
    }
    return call_end(t, e);
}

SIM_API cudaError_t cudaEventDestroy(cudaEvent_t event)
{
    tls_t *t;
    event_t *ev;
    cudaError_t e = event_call_begin(CCA_SIM_EVENT_DESTROY, event, &t, &ev);
    if (!e) {
        ev->live = false;
        g.efree[g.nefree++] = (uint32_t)(ev - g.events);
        fault_ok(CCA_SIM_EVENT_DESTROY);
    }
    return call_end(t, e);
}

/* ------------------------------------------------------------------ */
/* errors                                                              */

SIM_API cudaError_t cudaGetLastError(void)
{
    enter(CCA_SIM_GET_LAST_ERROR);
    tls_t *t = me();
    cudaError_t f = fault_now_unlocked(CCA_SIM_GET_LAST_ERROR);
    if (f) return f;
    cudaError_t e = t->err;
    t->err = cudaSuccess;
    fault_ok_unlocked(CCA_SIM_GET_LAST_ERROR);
    return e;
}

SIM_API cudaError_t cudaPeekAtLastError(void)
{
    enter(CCA_SIM_PEEK_AT_LAST_ERROR);
    tls_t *t = me();
    cudaError_t f = fault_now_unlocked(CCA_SIM_PEEK_AT_LAST_ERROR);
    if (f) return f;
    fault_ok_unlocked(CCA_SIM_PEEK_AT_LAST_ERROR);
    return t->err;
}

static const char *error_name(int code)
{
    switch (code) {
#define SIM_ERR(c, name, text) case c: return name;
#include "sim_errors.inc"
#undef SIM_ERR
    default: return "unrecognized error code";
    }
}

static const char *error_text(int code)
{
    switch (code) {
#define SIM_ERR(c, name, text) case c: return text;
#include "sim_errors.inc"
#undef SIM_ERR
    default: return "unrecognized error code";
    }
}

/* These cannot fail; an injected fault is ignored (they are still counted). */
SIM_API const char *cudaGetErrorString(cudaError_t error)
{
    enter(CCA_SIM_GET_ERROR_STRING);
    return error_text((int)error);
}

SIM_API const char *cudaGetErrorName(cudaError_t error)
{
    enter(CCA_SIM_GET_ERROR_NAME);
    return error_name((int)error);
}

/* ------------------------------------------------------------------ */
/* per-thread default stream variants (callers built with                */
/* CUDA_API_PER_THREAD_DEFAULT_STREAM / nvcc --default-stream per-thread) */

SIM_API cudaError_t cudaStreamSynchronize_ptsz(cudaStream_t stream);
SIM_API cudaError_t cudaStreamQuery_ptsz(cudaStream_t stream);
SIM_API cudaError_t cudaStreamWaitEvent_ptsz(cudaStream_t stream, cudaEvent_t event, unsigned int flags);
SIM_API cudaError_t cudaStreamGetId_ptsz(cudaStream_t hStream, unsigned long long *streamId);
SIM_API cudaError_t cudaEventRecord_ptsz(cudaEvent_t event, cudaStream_t stream);
SIM_API cudaError_t cudaStreamBeginCapture_ptsz(cudaStream_t stream, enum cudaStreamCaptureMode mode);
SIM_API cudaError_t cudaStreamEndCapture_ptsz(cudaStream_t stream, cudaGraph_t *pGraph);
SIM_API cudaError_t cudaStreamIsCapturing_ptsz(cudaStream_t stream, enum cudaStreamCaptureStatus *pCaptureStatus);
cudaError_t cudaStreamBeginCapture_ptsz(cudaStream_t stream, enum cudaStreamCaptureMode mode)
{
    return begin_capture(stream, mode, true);
}
cudaError_t cudaStreamEndCapture_ptsz(cudaStream_t stream, cudaGraph_t *pGraph) { return end_capture(stream, pGraph, true); }
cudaError_t cudaStreamIsCapturing_ptsz(cudaStream_t stream, enum cudaStreamCaptureStatus *pCaptureStatus)
{
    return is_capturing(stream, pCaptureStatus, true);
}

cudaError_t cudaStreamSynchronize_ptsz(cudaStream_t stream) { return stream_sync(stream, true); }
cudaError_t cudaStreamQuery_ptsz(cudaStream_t stream) { return stream_query(stream, true); }
cudaError_t cudaStreamWaitEvent_ptsz(cudaStream_t stream, cudaEvent_t event, unsigned int flags)
{
    return stream_wait_event(stream, event, flags, true);
}
cudaError_t cudaStreamGetId_ptsz(cudaStream_t hStream, unsigned long long *streamId)
{
    return stream_get_id(hStream, streamId, true);
}
cudaError_t cudaEventRecord_ptsz(cudaEvent_t event, cudaStream_t stream) { return event_record(event, stream, true); }

/* ------------------------------------------------------------------ */
/* controls                                                            */

#include "sim_vmm.inc"
#include "sim_framework.inc"

static void sim_reset(bool keep_handles)
{
    lock();
    if (keep_handles) {                               /* every stream idle and unheld, every event complete */
        for (uint32_t j = 0; j < g.nstreams; j++) {
            stream_t *st = &g.streams[j];
            if (st->state == ST_FREE) continue;
            st->wcount = st->whead = 0;
            st->held = false;
            st->done = st->submitted;
            st->capture = cudaStreamCaptureStatusNone;
            st->capture_id = 0;
            if (st->state == ST_ZOMBIE || st->kind == SK_PTDS) stream_free(j);   /* per-thread ones: renewed below */
        }
        for (uint32_t j = 0; j < g.nevents; j++) g.events[j].t = (target_t){ 0, 0, 0 };
    } else {
        for (uint32_t j = 0; j < g.nstreams; j++) free(g.streams[j].waits);
        free(g.streams);
        free(g.sfree);
        free(g.events);
        free(g.efree);
        g.streams = NULL;
        g.sfree = NULL;
        g.events = NULL;
        g.efree = NULL;
        g.nstreams = g.capstreams = g.nsfree = 0;
        g.nevents = g.capevents = g.nefree = 0;
    }
    g.nheld = 0;
    g.nzombies = 0;
    sim_map_clear(&g.allocs);
    if (!keep_handles) vmm_reset();                   /* kept: reservations, handles and mappings are handles too */
    framework_reset();
    for (int d = 0; d < MAX_DEVICES; d++) {
        device_t *dv = &g.dev[d];
        sim_ext_clear(&dv->free);   /* address ranges stay reserved */
        dv->carving = false;
        dv->capacity = DEFAULT_CAPACITY;
        dv->used = 0;
        if (keep_handles)                             /* what live physical handles hold stays held */
            for (size_t h = 0; h < vmm.nh; h++)
                if (vmm.h[h].id && vmm.h[h].dev == d) dv->used += vmm.h[h].size;
        dv->live = 0;
        dv->syncs = 0;
        if (!keep_handles) dv->legacy = NO_SLOT;
    }
    atomic_store_explicit(&g.ndev, 1, memory_order_relaxed);
    for (int a = 0; a < CCA_SIM_API_COUNT; a++) {
        g.fault_err[a] = cudaSuccess;
        g.fault_left[a] = 0;
        g.fault_times[a] = 0;
        atomic_store_explicit(&g.latency[a], 0, memory_order_relaxed);
        atomic_store_explicit(&g.calls[a].v, 0, memory_order_relaxed);
    }
    atomic_store_explicit(&g.nfaults, 0, memory_order_relaxed);
    atomic_store_explicit(&g.no_driver, 0, memory_order_relaxed);
    atomic_store_explicit(&g.nth_left, 0, memory_order_relaxed);
    uint64_t gen = atomic_load_explicit(&g.gen, memory_order_relaxed) + 1;
    atomic_store_explicit(&g.gen, gen, memory_order_release);
    tls_renew(gen);
    unlock();
}

SIM_API void cca_sim_reset(void) { sim_reset(false); }

SIM_API void cca_sim_set_no_driver(int on)
{
    lock();
    int was = atomic_exchange_explicit(&g.no_driver, on != 0, memory_order_relaxed);
    if ((on != 0) != (was != 0)) atomic_fetch_add_explicit(&g.nfaults, on ? 1 : -1, memory_order_relaxed);
    unlock();
}
SIM_API void cca_sim_reset_keeping_handles(void) { sim_reset(true); }

SIM_API void cca_sim_set_device_count(int n)
{
    if (n < 1 || n > MAX_DEVICES) return;
    lock();
    atomic_store_explicit(&g.ndev, n, memory_order_relaxed);
    unlock();
}

SIM_API void cca_sim_set_capacity(int device, size_t bytes)
{
    if (device < 0 || device >= MAX_DEVICES) return;
    lock();
    g.dev[device].capacity = bytes;
    unlock();
}

SIM_API void cca_sim_stream_hold(cudaStream_t s)
{
    tls_t *t = me();
    lock();
    if (dev_ok(t)) {
        uint32_t i = resolve_stream(t, s, false, true);
        if (i != NO_SLOT) hold_slot(i);
    }
    unlock();
}

SIM_API void cca_sim_stream_release(cudaStream_t s)
{
    tls_t *t = me();
    lock();
    if (dev_ok(t)) {
        uint32_t i = resolve_stream(t, s, false, true);
        if (i != NO_SLOT) release_slot(i);
    }
    unlock();
}

SIM_API void cca_sim_fail_times(cca_sim_api_t api, unsigned long after, unsigned long times, cudaError_t err)
{
    if ((int)api < 0 || api >= CCA_SIM_API_COUNT) return;
    if (!times) err = cudaSuccess;
    lock();
    bool was = g.fault_err[api] != cudaSuccess;
    g.fault_err[api] = err;
    g.fault_left[api] = after;
    g.fault_times[api] = err != cudaSuccess ? times : 0;
    bool is = err != cudaSuccess;
    if (is && !was) atomic_fetch_add_explicit(&g.nfaults, 1, memory_order_relaxed);
    if (!is && was) atomic_fetch_sub_explicit(&g.nfaults, 1, memory_order_relaxed);
    unlock();
}

SIM_API void cca_sim_fail(cca_sim_api_t api, unsigned long after, cudaError_t err)
{
    cca_sim_fail_times(api, after, 1, err);
}

SIM_API void cca_sim_fail_nth(unsigned long k, cudaError_t err)
{
    atomic_store_explicit(&g.nth_err, (int)err, memory_order_relaxed);
    atomic_store_explicit(&g.nth_left, err == cudaSuccess ? 0 : (long)k, memory_order_relaxed);
}

SIM_API unsigned long cca_sim_fail_nth_left(void)
{
    long left = atomic_load_explicit(&g.nth_left, memory_order_relaxed);
    return left > 0 ? (unsigned long)left : 0;
}

SIM_API unsigned long cca_sim_calls(cca_sim_api_t api)
{
    if ((int)api < 0 || api >= CCA_SIM_API_COUNT) return 0;
    return atomic_load_explicit(&g.calls[api].v, memory_order_relaxed);
}

SIM_API void cca_sim_set_latency_ns(cca_sim_api_t api, unsigned long ns)
{
    if ((int)api < 0 || api >= CCA_SIM_API_COUNT) return;
    atomic_store_explicit(&g.latency[api], ns, memory_order_relaxed);
}

SIM_API size_t cca_sim_used_bytes(int device)
{
    if (device < 0 || device >= MAX_DEVICES) return 0;
    lock();
    size_t v = g.dev[device].used;
    unlock();
    return v;
}

SIM_API unsigned long cca_sim_live_allocations(int device)
{
    if (device < 0 || device >= MAX_DEVICES) return 0;
    lock();
    unsigned long v = g.dev[device].live;
    unlock();
    return v;
}

SIM_API unsigned long cca_sim_device_syncs(int device)
{
    if (device < 0 || device >= MAX_DEVICES) return 0;
    lock();
    unsigned long v = g.dev[device].syncs;
    unlock();
    return v;
}

SIM_API const char *cca_sim_api_name(cca_sim_api_t api)
{
    static const char *const names[CCA_SIM_API_COUNT] = {
#define SIM_API_NAME(id, name) [id] = name,
        CCA_SIM_API_LIST(SIM_API_NAME)
#undef SIM_API_NAME
    };
    if ((int)api < 0 || api >= CCA_SIM_API_COUNT) return "unknown";
    return names[api];
}
