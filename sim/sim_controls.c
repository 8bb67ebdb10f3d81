/* sim_controls.c - the simulated device's state and the machinery every call
 * goes through (call counters, latency, injected faults: cca_sim_fail,
 * cca_sim_fail_nth, cca_sim_set_no_driver), the reset, and the cca_sim_*
 * controls of include/cca_sim.h that configure the device, hold streams and
 * read the counters (the virtual memory ones are sim_vmm.c's). */
#include "sim_internal.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

#define DEV_INIT { .capacity = DEFAULT_CAPACITY, .legacy = NO_SLOT }

sim_state_t sim_g = {
    .lock = PTHREAD_MUTEX_INITIALIZER,
    .gen = 1,
    .ndev = 1,
    .next_uid = 1,
    .dev = { DEV_INIT, DEV_INIT, DEV_INIT, DEV_INIT, DEV_INIT, DEV_INIT, DEV_INIT, DEV_INIT,
             DEV_INIT, DEV_INIT, DEV_INIT, DEV_INIT, DEV_INIT, DEV_INIT, DEV_INIT, DEV_INIT },
};

/* ------------------------------------------------------------------ */
/* per-thread state                                                    */

_Thread_local tls_t sim_tls;

void sim_tls_renew(uint64_t gen)
{
    sim_tls.gen = gen;
    sim_tls.dev = 0;
    sim_tls.err = cudaSuccess;
    sim_tls.forced = cudaSuccess;
    for (int i = 0; i < MAX_DEVICES; i++) sim_tls.ptds[i] = NO_SLOT;
}

/* ------------------------------------------------------------------ */
/* calls, latency, faults                                              */

void sim_spin_ns(unsigned long ns)
{
    struct timespec a, b;
    clock_gettime(CLOCK_MONOTONIC, &a);
    do {
        clock_gettime(CLOCK_MONOTONIC, &b);
    } while ((unsigned long)((b.tv_sec - a.tv_sec) * 1000000000L + (b.tv_nsec - a.tv_nsec)) < ns);
}

/* cca_sim_fail_nth: whether this call (one that can fail) is the chosen one. */
void sim_count_nth(void)
{
    long left = atomic_load_explicit(&sim_g.nth_left, memory_order_relaxed);
    while (left > 0 && !atomic_compare_exchange_weak_explicit(&sim_g.nth_left, &left, left - 1, memory_order_relaxed,
                                                              memory_order_relaxed)) {}
    if (left == 1) me()->forced = (cudaError_t)atomic_load_explicit(&sim_g.nth_err, memory_order_relaxed);
}

/* Under the lock: the error to inject into this call, or cudaSuccess. */
cudaError_t sim_fault_now(cca_sim_api_t api)
{
    tls_t *t = me();
    if (atomic_load_explicit(&sim_g.no_driver, memory_order_relaxed)) return cudaErrorInsufficientDriver;
    if (t->forced) {                                  /* cca_sim_fail_nth's call */
        cudaError_t e = t->forced;
        t->forced = cudaSuccess;
        return e;
    }
    if (!sim_g.fault_err[api] || sim_g.fault_left[api] != 0) return cudaSuccess;
    cudaError_t e = sim_g.fault_err[api];
    if (--sim_g.fault_times[api] == 0) {              /* the last call it fails */
        sim_g.fault_err[api] = cudaSuccess;
        atomic_fetch_sub_explicit(&sim_g.nfaults, 1, memory_order_relaxed);
    }
    return e;
}

/* For calls that do not take the lock otherwise. */
cudaError_t sim_fault_now_unlocked(cca_sim_api_t api)
{
    if (!faults_armed() && !me()->forced) return cudaSuccess;
    pthread_mutex_lock(&sim_g.lock);
    cudaError_t e = sim_fault_now(api);
    pthread_mutex_unlock(&sim_g.lock);
    return e;
}

void sim_fault_ok_unlocked(cca_sim_api_t api)
{
    if (!faults_armed()) return;
    pthread_mutex_lock(&sim_g.lock);
    fault_ok(api);
    pthread_mutex_unlock(&sim_g.lock);
}

/* ------------------------------------------------------------------ */
/* controls                                                            */

static void sim_reset(bool keep_handles)
{
    lock();
    if (keep_handles) {                               /* every stream idle and unheld, every event complete */
        for (uint32_t j = 0; j < sim_g.nstreams; j++) {
            stream_t *st = &sim_g.streams[j];
            if (st->state == ST_FREE) continue;
            st->wcount = st->whead = 0;
            st->held = false;
            st->done = st->submitted;
            st->capture = cudaStreamCaptureStatusNone;
            st->capture_id = 0;
            if (st->state == ST_ZOMBIE || st->kind == SK_PTDS)   /* per-thread ones: renewed below */
                sim_stream_free(j);
        }
        for (uint32_t j = 0; j < sim_g.nevents; j++) sim_g.events[j].t = (target_t){ 0, 0, 0 };
    } else {
        for (uint32_t j = 0; j < sim_g.nstreams; j++) free(sim_g.streams[j].waits);
        free(sim_g.streams);
        free(sim_g.sfree);
        free(sim_g.events);
        free(sim_g.efree);
        sim_g.streams = NULL;
        sim_g.sfree = NULL;
        sim_g.events = NULL;
        sim_g.efree = NULL;
        sim_g.nstreams = sim_g.capstreams = sim_g.nsfree = 0;
        sim_g.nevents = sim_g.capevents = sim_g.nefree = 0;
    }
    sim_g.nheld = 0;
    sim_g.nzombies = 0;
    sim_map_clear(&sim_g.allocs);
    if (!keep_handles) sim_vmm_reset();               /* kept: reservations, handles and mappings are handles too */
    sim_framework_reset();
    for (int d = 0; d < MAX_DEVICES; d++) {
        device_t *dv = &sim_g.dev[d];
        sim_ext_clear(&dv->free);   /* address ranges stay reserved */
        dv->carving = false;
        dv->capacity = DEFAULT_CAPACITY;
        dv->used = 0;
        if (keep_handles) dv->used += sim_vmm_handle_bytes(d);   /* what live physical handles hold stays held */
        dv->live = 0;
        dv->syncs = 0;
        if (!keep_handles) dv->legacy = NO_SLOT;
    }
    atomic_store_explicit(&sim_g.ndev, 1, memory_order_relaxed);
    for (int a = 0; a < CCA_SIM_API_COUNT; a++) {
        sim_g.fault_err[a] = cudaSuccess;
        sim_g.fault_left[a] = 0;
        sim_g.fault_times[a] = 0;
        atomic_store_explicit(&sim_g.latency[a], 0, memory_order_relaxed);
        atomic_store_explicit(&sim_g.calls[a].v, 0, memory_order_relaxed);
    }
    atomic_store_explicit(&sim_g.nfaults, 0, memory_order_relaxed);
    atomic_store_explicit(&sim_g.no_driver, 0, memory_order_relaxed);
    atomic_store_explicit(&sim_g.nth_left, 0, memory_order_relaxed);
    uint64_t gen = atomic_load_explicit(&sim_g.gen, memory_order_relaxed) + 1;
    atomic_store_explicit(&sim_g.gen, gen, memory_order_release);
    sim_tls_renew(gen);
    unlock();
}

SIM_API void cca_sim_reset(void) { sim_reset(false); }

SIM_API void cca_sim_set_no_driver(int on)
{
    lock();
    int was = atomic_exchange_explicit(&sim_g.no_driver, on != 0, memory_order_relaxed);
    if ((on != 0) != (was != 0)) atomic_fetch_add_explicit(&sim_g.nfaults, on ? 1 : -1, memory_order_relaxed);
    unlock();
}
SIM_API void cca_sim_reset_keeping_handles(void) { sim_reset(true); }

SIM_API void cca_sim_set_device_count(int n)
{
    if (n < 1 || n > MAX_DEVICES) return;
    lock();
    atomic_store_explicit(&sim_g.ndev, n, memory_order_relaxed);
    unlock();
}

SIM_API void cca_sim_set_capacity(int device, size_t bytes)
{
    if (device < 0 || device >= MAX_DEVICES) return;
    lock();
    sim_g.dev[device].capacity = bytes;
    unlock();
}

SIM_API void cca_sim_stream_hold(cudaStream_t s)
{
    tls_t *t = me();
    lock();
    if (dev_ok(t)) {
        uint32_t i = sim_resolve_stream(t, s, false, true);
        if (i != NO_SLOT) sim_hold_slot(i);
    }
    unlock();
}

SIM_API void cca_sim_stream_release(cudaStream_t s)
{
    tls_t *t = me();
    lock();
    if (dev_ok(t)) {
        uint32_t i = sim_resolve_stream(t, s, false, true);
        if (i != NO_SLOT) sim_release_slot(i);
    }
    unlock();
}

SIM_API void cca_sim_fail_times(cca_sim_api_t api, unsigned long after, unsigned long times, cudaError_t err)
{
    if ((int)api < 0 || api >= CCA_SIM_API_COUNT) return;
    if (!times) err = cudaSuccess;
    lock();
    bool was = sim_g.fault_err[api] != cudaSuccess;
    sim_g.fault_err[api] = err;
    sim_g.fault_left[api] = after;
    sim_g.fault_times[api] = err != cudaSuccess ? times : 0;
    bool is = err != cudaSuccess;
    if (is && !was) atomic_fetch_add_explicit(&sim_g.nfaults, 1, memory_order_relaxed);
    if (!is && was) atomic_fetch_sub_explicit(&sim_g.nfaults, 1, memory_order_relaxed);
    unlock();
}

SIM_API void cca_sim_fail(cca_sim_api_t api, unsigned long after, cudaError_t err)
{
    cca_sim_fail_times(api, after, 1, err);
}

SIM_API void cca_sim_fail_nth(unsigned long k, cudaError_t err)
{
    atomic_store_explicit(&sim_g.nth_err, (int)err, memory_order_relaxed);
    atomic_store_explicit(&sim_g.nth_left, err == cudaSuccess ? 0 : (long)k, memory_order_relaxed);
}

SIM_API unsigned long cca_sim_fail_nth_left(void)
{
    long left = atomic_load_explicit(&sim_g.nth_left, memory_order_relaxed);
    return left > 0 ? (unsigned long)left : 0;
}

SIM_API unsigned long cca_sim_calls(cca_sim_api_t api)
{
    if ((int)api < 0 || api >= CCA_SIM_API_COUNT) return 0;
    return atomic_load_explicit(&sim_g.calls[api].v, memory_order_relaxed);
}

SIM_API void cca_sim_set_latency_ns(cca_sim_api_t api, unsigned long ns)
{
    if ((int)api < 0 || api >= CCA_SIM_API_COUNT) return;
    atomic_store_explicit(&sim_g.latency[api], ns, memory_order_relaxed);
}

SIM_API size_t cca_sim_used_bytes(int device)
{
    if (device < 0 || device >= MAX_DEVICES) return 0;
    lock();
    size_t v = sim_g.dev[device].used;
    unlock();
    return v;
}

SIM_API unsigned long cca_sim_live_allocations(int device)
{
    if (device < 0 || device >= MAX_DEVICES) return 0;
    lock();
    unsigned long v = sim_g.dev[device].live;
    unlock();
    return v;
}

SIM_API unsigned long cca_sim_device_syncs(int device)
{
    if (device < 0 || device >= MAX_DEVICES) return 0;
    lock();
    unsigned long v = sim_g.dev[device].syncs;
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
