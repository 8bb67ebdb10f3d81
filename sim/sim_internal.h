/* sim_internal.h - internals of the simulated CUDA device (not installed):
 * the free extents and live allocations (sim_mem.c), and the model's state,
 * the per-call machinery and the functions its files share. The files:
 * sim_order.c (streams and events: the order of work and its completion),
 * sim_runtime.c (the runtime calls: devices, memory, streams, events,
 * errors), sim_vmm.c (the driver's virtual memory calls), sim_framework.c
 * (what a framework's start-up and compute path call), sim_controls.c (the
 * state, fault injection, counters and the cca_sim_* controls).
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
#ifndef CCA_SIM_INTERNAL_H
#define CCA_SIM_INTERNAL_H

#include <stddef.h>
#include <stdint.h>
#include "cca_u64map.h"

#define SIM_HIDDEN __attribute__((visibility("hidden")))

/* Free address extents of one device: a treap ordered by address, each node
 * knowing the largest extent below it, so that first fit (the lowest address
 * that fits) and coalescing with both neighbours are O(log n). Deterministic:
 * priorities are a hash of the address. */
typedef struct sim_ext {
    uintptr_t addr;
    size_t size, maxsz;
    uint32_t prio;
    struct sim_ext *l, *r;
} sim_ext_t;

typedef struct sim_extents { sim_ext_t *root; size_t count; } sim_extents_t;

/* Lowest-address extent of at least size bytes, carved from its start; 0 if none. */
SIM_HIDDEN uintptr_t sim_ext_take(sim_extents_t *x, size_t size);
/* Returns [addr, addr+size) to the free extents, merging with neighbours.
 * -1 if a node could not be allocated (the range is then lost). */
SIM_HIDDEN int  sim_ext_give(sim_extents_t *x, uintptr_t addr, size_t size);
SIM_HIDDEN void sim_ext_clear(sim_extents_t *x);
SIM_HIDDEN size_t sim_ext_largest(const sim_extents_t *x);

/* Live allocations, by base address: the shared map (common/cca_u64map.h:
 * linear probing, backward-shift deletion), grown at half load. */
typedef struct sim_alloc {
    uintptr_t addr;        /* 0: empty slot */
    size_t size;           /* bytes requested (counted against capacity) */
    size_t carved;         /* bytes of address space taken */
    int dev;
} sim_alloc_t;

typedef struct sim_ptrmap { CCA_U64MAP_FIELDS(sim_alloc_t); } sim_ptrmap_t;

SIM_HIDDEN int  sim_map_put(sim_ptrmap_t *m, const sim_alloc_t *a);   /* 0, or -1: no host memory */
SIM_HIDDEN int  sim_map_take(sim_ptrmap_t *m, uintptr_t addr, sim_alloc_t *out); /* 1: found and removed */
SIM_HIDDEN void sim_map_clear(sim_ptrmap_t *m);

/* ------------------------------------------------------------------ */
/* the model's state and what its files share                          */

#undef CUDA_API_PER_THREAD_DEFAULT_STREAM
#include <cuda.h>

#include <cca_sim.h>

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>

#define SIM_API __attribute__((visibility("default")))

#define MAX_DEVICES      32
#define DEFAULT_CAPACITY ((size_t)80 << 30)
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

#define CACHELINE 64
typedef struct { _Atomic unsigned long v; char pad[CACHELINE - sizeof(unsigned long)]; } padded_counter_t;

/* The model, under lock (the atomics excepted); defined in sim_controls.c. */
typedef struct sim_state {
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
} sim_state_t;

extern SIM_HIDDEN sim_state_t sim_g;

/* Per-thread state (sim_controls.c). */
typedef struct tls {
    uint64_t gen;                   /* world this state belongs to */
    int dev;
    cudaError_t err;
    cudaError_t forced;             /* cca_sim_fail_nth chose this thread's current call */
    uint32_t ptds[MAX_DEVICES];     /* per-thread default stream slots */
} tls_t;

extern SIM_HIDDEN _Thread_local tls_t sim_tls;

SIM_HIDDEN void sim_tls_renew(uint64_t gen);

static inline tls_t *me(void)
{
    uint64_t gen = atomic_load_explicit(&sim_g.gen, memory_order_acquire);
    if (sim_tls.gen != gen) sim_tls_renew(gen);
    return &sim_tls;
}

static inline cudaError_t fail(tls_t *t, cudaError_t e)
{
    t->err = e;
    return e;
}

/* ---- calls, latency, faults (sim_controls.c) ---- */

SIM_HIDDEN void sim_spin_ns(unsigned long ns);
/* cca_sim_fail_nth: whether this call (one that can fail) is the chosen one. */
SIM_HIDDEN void sim_count_nth(void);

static inline void enter(cca_sim_api_t api)
{
    atomic_fetch_add_explicit(&sim_g.calls[api].v, 1, memory_order_relaxed);
    if (api != CCA_SIM_GET_ERROR_STRING && api != CCA_SIM_GET_ERROR_NAME && api != CCA_SIM_GET_LAST_ERROR &&
        api != CCA_SIM_PEEK_AT_LAST_ERROR && atomic_load_explicit(&sim_g.nth_left, memory_order_relaxed) > 0)
        sim_count_nth();
    unsigned long ns = atomic_load_explicit(&sim_g.latency[api], memory_order_relaxed);
    if (ns) sim_spin_ns(ns);
}

/* Under the lock: the error to inject into this call, or cudaSuccess. */
SIM_HIDDEN cudaError_t sim_fault_now(cca_sim_api_t api);

/* Under the lock: this call succeeded. */
static inline void fault_ok(cca_sim_api_t api)
{
    if (sim_g.fault_err[api] && sim_g.fault_left[api] > 0) sim_g.fault_left[api]--;
}

static inline bool faults_armed(void)
{
    return atomic_load_explicit(&sim_g.nfaults, memory_order_relaxed) != 0;
}

/* For calls that do not take the lock otherwise. */
SIM_HIDDEN cudaError_t sim_fault_now_unlocked(cca_sim_api_t api);
SIM_HIDDEN void sim_fault_ok_unlocked(cca_sim_api_t api);

static inline void lock(void) { pthread_mutex_lock(&sim_g.lock); }
static inline void unlock(void) { pthread_mutex_unlock(&sim_g.lock); }

static inline size_t round_up(size_t v, size_t a) { return (v + a - 1) & ~(a - 1); }

/* ---- streams and events: order and completion (sim_order.c), under the lock ---- */

SIM_HIDDEN uint32_t sim_stream_new(int dev, int kind, unsigned flags);
SIM_HIDDEN void sim_stream_free(uint32_t i);
/* Is item t.seq of its stream complete? Evaluates only what t needs. */
SIM_HIDDEN bool sim_complete(target_t t);
/* Complete item t.seq and everything it waits for (a synchronizing call). */
SIM_HIDDEN void sim_force(target_t t);
/* Enqueue one item on stream i (it also waits for `extra`, and for what the
 * legacy stream's implicit synchronization requires). Returns its number,
 * or 0 when host memory ran out. */
SIM_HIDDEN uint64_t sim_enqueue(uint32_t i, target_t extra);
SIM_HIDDEN void sim_stream_destroy_slot(uint32_t i);
SIM_HIDDEN void sim_reap_zombies(void);
SIM_HIDDEN void sim_hold_slot(uint32_t i);
SIM_HIDDEN void sim_release_slot(uint32_t i);
SIM_HIDDEN void sim_device_sync(int dev);
/* Resolve a stream handle. `ptsz`: the NULL handle names the per-thread
 * default stream. `zombies`: accept destroyed streams whose work is pending
 * (for the controls). NO_SLOT when invalid. */
SIM_HIDDEN uint32_t sim_resolve_stream(tls_t *t, cudaStream_t h, bool ptsz, bool zombies);
SIM_HIDDEN event_t *sim_resolve_event(cudaEvent_t h);

static inline target_t tail_of(uint32_t i)
{
    stream_t *s = &sim_g.streams[i];
    return (target_t){ i, s->uid, s->submitted };
}

static inline bool dev_ok(const tls_t *t)
{
    return t->dev < atomic_load_explicit(&sim_g.ndev, memory_order_relaxed);
}

/* ---- the runtime calls' shared parts (sim_runtime.c) ---- */

SIM_HIDDEN cudaError_t sim_stream_create(cudaStream_t *pStream, unsigned int flags, int priority);
/* The common start of a call on one stream: counted, its latency spent,
 * locked, a pending fault taken, the device and the stream checked. The
 * lock is held on return whatever the result; finish with sim_call_end. */
SIM_HIDDEN cudaError_t sim_stream_call_begin(cca_sim_api_t api, cudaStream_t stream, bool ptsz, tls_t **t,
                                             uint32_t *slot);
SIM_HIDDEN cudaError_t sim_call_end(tls_t *t, cudaError_t e);
SIM_HIDDEN cudaError_t sim_event_record(cudaEvent_t event, cudaStream_t stream, bool ptsz);
/* The graph EndCapture returns: a token, not a graph the simulator could launch. */
extern SIM_HIDDEN char sim_graph_token;
SIM_HIDDEN const char *sim_error_name(int code);
SIM_HIDDEN const char *sim_error_text(int code);

/* ---- virtual memory (sim_vmm.c), under the lock ---- */

/* cca_sim_reset's part: every reservation, handle and mapping goes. */
SIM_HIDDEN void sim_vmm_reset(void);
/* Bytes the live physical handles of device dev hold. */
SIM_HIDDEN size_t sim_vmm_handle_bytes(int dev);
/* The device of the mapping holding addr, or -1. */
SIM_HIDDEN int sim_vmm_device_of(uintptr_t addr);
/* The mapping holding addr: its start and size (left as they are if none). */
SIM_HIDDEN void sim_vmm_mapping_of(uintptr_t addr, uintptr_t *base, size_t *size);
/* Is [addr, addr+len) mapped read-write, mapping after mapping? */
SIM_HIDDEN bool sim_vmm_readwrite(uintptr_t addr, size_t len);
/* The function of a virtual memory call's name (cuMemMap, ...), or NULL. */
SIM_HIDDEN void *sim_vmm_symbol(const char *symbol);

/* ---- framework support (sim_framework.c) ---- */

/* cca_sim_reset's part (under the lock). */
SIM_HIDDEN void sim_framework_reset(void);
/* The function a driver symbol names (its base name: cuCtxPushCurrent, not
 * ..._v2, as cuGetProcAddress takes it), or NULL. */
SIM_HIDDEN void *sim_driver_symbol(const char *symbol);

#endif
