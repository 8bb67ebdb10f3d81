/* sim_runtime.c - the CUDA runtime calls of the simulated device that cca and
 * its peers make: devices, memory (cudaMalloc, cudaFree, cudaMemGetInfo:
 * address space carved per device), streams and graph capture, events, the
 * last error and error texts, and the per-thread default stream variants
 * (_ptsz). Each is counted, spends its latency and takes an injected fault
 * (sim_controls.c); stream order is sim_order.c's. */
#include "sim_internal.h"

#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#define CARVE_ALIGN      ((size_t)512)

/* ------------------------------------------------------------------ */
/* devices                                                             */

SIM_API cudaError_t cudaGetDeviceCount(int *count)
{
    enter(CCA_SIM_GET_DEVICE_COUNT);
    tls_t *t = me();
    cudaError_t f = sim_fault_now_unlocked(CCA_SIM_GET_DEVICE_COUNT);
    if (f) return fail(t, f);
    if (!count) return fail(t, cudaErrorInvalidValue);
    *count = atomic_load_explicit(&sim_g.ndev, memory_order_relaxed);
    sim_fault_ok_unlocked(CCA_SIM_GET_DEVICE_COUNT);
    return cudaSuccess;
}

SIM_API cudaError_t cudaGetDevice(int *device)
{
    enter(CCA_SIM_GET_DEVICE);
    tls_t *t = me();
    cudaError_t f = sim_fault_now_unlocked(CCA_SIM_GET_DEVICE);
    if (f) return fail(t, f);
    if (!device) return fail(t, cudaErrorInvalidValue);
    *device = t->dev;
    sim_fault_ok_unlocked(CCA_SIM_GET_DEVICE);
    return cudaSuccess;
}

SIM_API cudaError_t cudaSetDevice(int device)
{
    enter(CCA_SIM_SET_DEVICE);
    tls_t *t = me();
    cudaError_t f = sim_fault_now_unlocked(CCA_SIM_SET_DEVICE);
    if (f) return fail(t, f);
    if (device < 0 || device >= atomic_load_explicit(&sim_g.ndev, memory_order_relaxed))
        return fail(t, cudaErrorInvalidDevice);
    t->dev = device;
    sim_fault_ok_unlocked(CCA_SIM_SET_DEVICE);
    return cudaSuccess;
}

SIM_API cudaError_t cudaDeviceSynchronize(void)
{
    enter(CCA_SIM_DEVICE_SYNCHRONIZE);
    tls_t *t = me();
    lock();
    cudaError_t e = sim_fault_now(CCA_SIM_DEVICE_SYNCHRONIZE);
    if (!e && !dev_ok(t)) e = cudaErrorInvalidDevice;
    if (!e) {
        sim_device_sync(t->dev);
        fault_ok(CCA_SIM_DEVICE_SYNCHRONIZE);
    }
    unlock();
    return e ? fail(t, e) : cudaSuccess;
}

/* ------------------------------------------------------------------ */
/* memory                                                              */

static size_t sat_mul(size_t a, size_t b) { return (b && a > SIZE_MAX / b) ? SIZE_MAX : a * b; }

/* Reserve one more address range for a device (at least `need` bytes). */
static int reserve_range(int dev, size_t need)
{
    device_t *d = &sim_g.dev[dev];
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
    device_t *d = &sim_g.dev[dev];
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
    cudaError_t e = sim_fault_now(CCA_SIM_MALLOC);
    if (e) goto out;
    if (!devPtr) { e = cudaErrorInvalidValue; goto out; }
    if (!dev_ok(t)) { e = cudaErrorInvalidDevice; goto out; }
    if (size == 0) {
        *devPtr = NULL;
        goto out;
    }
    device_t *d = &sim_g.dev[t->dev];
    if (d->used > d->capacity || size > d->capacity - d->used) { e = cudaErrorMemoryAllocation; goto out; }
    size_t carved = round_up(size, CARVE_ALIGN);
    uintptr_t a = carve(t->dev, carved);
    if (!a) { e = cudaErrorMemoryAllocation; goto out; }
    sim_alloc_t rec = { a, size, carved, t->dev };
    if (sim_map_put(&sim_g.allocs, &rec) != 0) {
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
    cudaError_t e = sim_fault_now(CCA_SIM_FREE);
    if (e || !devPtr) goto out;
    if (!dev_ok(t)) { e = cudaErrorInvalidDevice; goto out; }
    sim_alloc_t rec;
    if (!sim_map_take(&sim_g.allocs, (uintptr_t)devPtr, &rec)) { e = cudaErrorInvalidValue; goto out; }
    sim_device_sync(t->dev);        /* cudaFree synchronizes the device */
    device_t *d = &sim_g.dev[rec.dev];
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
    cudaError_t e = sim_fault_now(CCA_SIM_MEM_GET_INFO);
    if (!e && (!free || !total)) e = cudaErrorInvalidValue;
    if (!e && !dev_ok(t)) e = cudaErrorInvalidDevice;
    if (!e) {
        device_t *d = &sim_g.dev[t->dev];
        *free = d->capacity > d->used ? d->capacity - d->used : 0;
        *total = d->capacity;
        fault_ok(CCA_SIM_MEM_GET_INFO);
    }
    unlock();
    return e ? fail(t, e) : cudaSuccess;
}

/* ------------------------------------------------------------------ */
/* streams                                                             */

cudaError_t sim_stream_create(cudaStream_t *pStream, unsigned int flags, int priority)
{
    enter(CCA_SIM_STREAM_CREATE);
    tls_t *t = me();
    lock();
    cudaError_t e = sim_fault_now(CCA_SIM_STREAM_CREATE);
    if (e) goto out;
    if (!pStream || (flags & ~(unsigned)cudaStreamNonBlocking)) { e = cudaErrorInvalidValue; goto out; }
    if (!dev_ok(t)) { e = cudaErrorInvalidDevice; goto out; }
    sim_reap_zombies();
    uint32_t i = sim_stream_new(t->dev, SK_USER, flags);
    if (i == NO_SLOT) { e = cudaErrorMemoryAllocation; goto out; }
    sim_g.streams[i].priority = priority;
    *pStream = (cudaStream_t)(STREAM_TAG + ((uintptr_t)i << 4));
    fault_ok(CCA_SIM_STREAM_CREATE);
out:
    unlock();
    return e ? fail(t, e) : cudaSuccess;
}

SIM_API cudaError_t cudaStreamCreate(cudaStream_t *pStream) { return sim_stream_create(pStream, 0, 0); }

SIM_API cudaError_t cudaStreamCreateWithFlags(cudaStream_t *pStream, unsigned int flags)
{
    return sim_stream_create(pStream, flags, 0);
}

SIM_API cudaError_t cudaStreamDestroy(cudaStream_t stream)
{
    enter(CCA_SIM_STREAM_DESTROY);
    tls_t *t = me();
    lock();
    cudaError_t e = sim_fault_now(CCA_SIM_STREAM_DESTROY);
    if (!e) {
        uint32_t i = NO_SLOT;
        if (stream != NULL && stream != cudaStreamLegacy && stream != cudaStreamPerThread)
            i = sim_resolve_stream(t, stream, false, false);
        if (i == NO_SLOT) {
            e = cudaErrorInvalidResourceHandle;
        } else {
            sim_stream_destroy_slot(i);
            fault_ok(CCA_SIM_STREAM_DESTROY);
        }
    }
    unlock();
    return e ? fail(t, e) : cudaSuccess;
}

/* The common start of a call on one stream: counted, its latency spent,
 * locked, a pending fault taken, the device and the stream checked. The
 * lock is held on return whatever the result; finish with sim_call_end. */
cudaError_t sim_stream_call_begin(cca_sim_api_t api, cudaStream_t stream, bool ptsz, tls_t **t, uint32_t *slot)
{
    enter(api);
    *t = me();
    lock();
    cudaError_t e = sim_fault_now(api);
    if (!e && !dev_ok(*t)) e = cudaErrorInvalidDevice;
    if (!e && (*slot = sim_resolve_stream(*t, stream, ptsz, false)) == NO_SLOT) e = cudaErrorInvalidResourceHandle;
    return e;
}

cudaError_t sim_call_end(tls_t *t, cudaError_t e)
{
    unlock();
    return e ? fail(t, e) : cudaSuccess;
}

static cudaError_t stream_sync(cudaStream_t stream, bool ptsz)
{
    tls_t *t;
    uint32_t i;
    cudaError_t e = sim_stream_call_begin(CCA_SIM_STREAM_SYNCHRONIZE, stream, ptsz, &t, &i);
    if (!e) {
        if (sim_g.nheld) sim_force(tail_of(i));
        fault_ok(CCA_SIM_STREAM_SYNCHRONIZE);
    }
    return sim_call_end(t, e);
}

/* Graph capture: only its state, which is what an allocator can observe
 * (cudaStreamIsCapturing); the graph EndCapture returns is a token, not a
 * graph the simulator could launch. */
char sim_graph_token;
static uint64_t next_capture_id = 1;

static cudaError_t begin_capture(cudaStream_t stream, enum cudaStreamCaptureMode mode, bool ptsz)
{
    tls_t *t;
    uint32_t i;
    cudaError_t e = sim_stream_call_begin(CCA_SIM_STREAM_BEGIN_CAPTURE, stream, ptsz, &t, &i);
    if (!e && (unsigned)mode > (unsigned)cudaStreamCaptureModeRelaxed) e = cudaErrorInvalidValue;
    if (!e && sim_g.streams[i].kind == SK_LEGACY) e = cudaErrorStreamCaptureUnsupported;
    if (!e && sim_g.streams[i].capture != cudaStreamCaptureStatusNone) e = cudaErrorIllegalState;
    if (!e) {
        sim_g.streams[i].capture = cudaStreamCaptureStatusActive;
        sim_g.streams[i].capture_id = next_capture_id++;
        fault_ok(CCA_SIM_STREAM_BEGIN_CAPTURE);
    }
    return sim_call_end(t, e);
}

static cudaError_t end_capture(cudaStream_t stream, cudaGraph_t *graph, bool ptsz)
{
    tls_t *t;
    uint32_t i;
    cudaError_t e = sim_stream_call_begin(CCA_SIM_STREAM_END_CAPTURE, stream, ptsz, &t, &i);
    if (!e && !graph) e = cudaErrorInvalidValue;
    if (!e && sim_g.streams[i].capture != cudaStreamCaptureStatusActive) e = cudaErrorIllegalState;
    if (!e) {
        sim_g.streams[i].capture = cudaStreamCaptureStatusNone;
        *graph = (cudaGraph_t)(void *)&sim_graph_token;
        fault_ok(CCA_SIM_STREAM_END_CAPTURE);
    }
    return sim_call_end(t, e);
}

static cudaError_t is_capturing(cudaStream_t stream, enum cudaStreamCaptureStatus *status, bool ptsz)
{
    tls_t *t;
    uint32_t i;
    cudaError_t e = sim_stream_call_begin(CCA_SIM_STREAM_IS_CAPTURING, stream, ptsz, &t, &i);
    if (!e && !status) e = cudaErrorInvalidValue;
    if (!e) {
        *status = (enum cudaStreamCaptureStatus)sim_g.streams[i].capture;
        fault_ok(CCA_SIM_STREAM_IS_CAPTURING);
    }
    return sim_call_end(t, e);
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
    cudaError_t e = sim_stream_call_begin(CCA_SIM_STREAM_QUERY, stream, ptsz, &t, &i);
    if (!e) {
        if (sim_g.nheld && (sim_g.streams[i].held || !sim_complete(tail_of(i)))) e = cudaErrorNotReady;
        else fault_ok(CCA_SIM_STREAM_QUERY);
    }
    return sim_call_end(t, e);
}

static cudaError_t stream_wait_event(cudaStream_t stream, cudaEvent_t event, unsigned int flags, bool ptsz)
{
    enter(CCA_SIM_STREAM_WAIT_EVENT);
    tls_t *t = me();
    lock();
    cudaError_t e = sim_fault_now(CCA_SIM_STREAM_WAIT_EVENT);
    if (e) goto out;
    if (flags & ~(unsigned)cudaEventWaitExternal) { e = cudaErrorInvalidValue; goto out; }
    if (!dev_ok(t)) { e = cudaErrorInvalidDevice; goto out; }
    event_t *ev = sim_resolve_event(event);
    uint32_t i = sim_resolve_stream(t, stream, ptsz, false);
    if (!ev || i == NO_SLOT) { e = cudaErrorInvalidResourceHandle; goto out; }
    if (sim_g.nheld && !sim_complete(ev->t) && sim_enqueue(i, ev->t) == 0) { e = cudaErrorMemoryAllocation; goto out; }
    fault_ok(CCA_SIM_STREAM_WAIT_EVENT);
out:
    unlock();
    return e ? fail(t, e) : cudaSuccess;
}

static cudaError_t stream_get_id(cudaStream_t stream, unsigned long long *id, bool ptsz)
{
    tls_t *t;
    uint32_t i;
    cudaError_t e = sim_stream_call_begin(CCA_SIM_STREAM_GET_ID, stream, ptsz, &t, &i);
    if (!e && !id) e = cudaErrorInvalidValue;
    if (!e) {
        *id = sim_g.streams[i].uid;
        fault_ok(CCA_SIM_STREAM_GET_ID);
    }
    return sim_call_end(t, e);
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
    cudaError_t e = sim_fault_now(CCA_SIM_EVENT_CREATE);
    if (e) goto out;
    const unsigned known = cudaEventBlockingSync | cudaEventDisableTiming | cudaEventInterprocess;
    if (!event || (flags & ~known) ||
        ((flags & cudaEventInterprocess) && !(flags & cudaEventDisableTiming))) {
        e = cudaErrorInvalidValue;
        goto out;
    }
    if (!dev_ok(t)) { e = cudaErrorInvalidDevice; goto out; }
    uint32_t i;
    if (sim_g.nefree) {
        i = sim_g.efree[--sim_g.nefree];
    } else {
        if (sim_g.nevents == sim_g.capevents) {
            uint32_t ncap = sim_g.capevents ? sim_g.capevents * 2 : 64;
            event_t *ne = realloc(sim_g.events, ncap * sizeof *ne);
            if (!ne) { e = cudaErrorMemoryAllocation; goto out; }
            sim_g.events = ne;
            uint32_t *nf = realloc(sim_g.efree, ncap * sizeof *nf);
            if (!nf) { e = cudaErrorMemoryAllocation; goto out; }
            sim_g.efree = nf;
            sim_g.capevents = ncap;
        }
        i = sim_g.nevents++;
    }
    sim_g.events[i] = (event_t){ .live = true, .dev = t->dev, .flags = flags };
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

cudaError_t sim_event_record(cudaEvent_t event, cudaStream_t stream, bool ptsz)
{
    enter(CCA_SIM_EVENT_RECORD);
    tls_t *t = me();
    lock();
    cudaError_t e = sim_fault_now(CCA_SIM_EVENT_RECORD);
    if (e) goto out;
    if (!dev_ok(t)) { e = cudaErrorInvalidDevice; goto out; }
    event_t *ev = sim_resolve_event(event);
    uint32_t i = sim_resolve_stream(t, stream, ptsz, false);
    if (!ev || i == NO_SLOT || sim_g.streams[i].dev != ev->dev) { e = cudaErrorInvalidResourceHandle; goto out; }
    if (sim_g.nheld == 0) {
        ev->t = (target_t){ 0, 0, 0 };  /* nothing held: the work is done */
    } else {
        uint64_t n = sim_enqueue(i, (target_t){ 0, 0, 0 });
        if (n == 0) { e = cudaErrorMemoryAllocation; goto out; }
        ev->t = (target_t){ i, sim_g.streams[i].uid, n };
    }
    fault_ok(CCA_SIM_EVENT_RECORD);
out:
    unlock();
    return e ? fail(t, e) : cudaSuccess;
}

SIM_API cudaError_t cudaEventRecord(cudaEvent_t event, cudaStream_t stream)
{
    return sim_event_record(event, stream, false);
}

/* The common start of a call on one event (as sim_stream_call_begin). */
static cudaError_t event_call_begin(cca_sim_api_t api, cudaEvent_t event, tls_t **t, event_t **ev)
{
    enter(api);
    *t = me();
    lock();
    cudaError_t e = sim_fault_now(api);
    if (!e && !(*ev = sim_resolve_event(event))) e = cudaErrorInvalidResourceHandle;
    return e;
}

SIM_API cudaError_t cudaEventQuery(cudaEvent_t event)
{
    tls_t *t;
    event_t *ev;
    cudaError_t e = event_call_begin(CCA_SIM_EVENT_QUERY, event, &t, &ev);
    if (!e) {
        if (sim_g.nheld && !sim_complete(ev->t)) e = cudaErrorNotReady;
        else fault_ok(CCA_SIM_EVENT_QUERY);
    }
    return sim_call_end(t, e);
}

SIM_API cudaError_t cudaEventSynchronize(cudaEvent_t event)
{
    tls_t *t;
    event_t *ev;
    cudaError_t e = event_call_begin(CCA_SIM_EVENT_SYNCHRONIZE, event, &t, &ev);
    if (!e) {
        if (sim_g.nheld) sim_force(ev->t);
        fault_ok(CCA_SIM_EVENT_SYNCHRONIZE);
    }
    return sim_call_end(t, e);
}

SIM_API cudaError_t cudaEventDestroy(cudaEvent_t event)
{
    tls_t *t;
    event_t *ev;
    cudaError_t e = event_call_begin(CCA_SIM_EVENT_DESTROY, event, &t, &ev);
    if (!e) {
        ev->live = false;
        sim_g.efree[sim_g.nefree++] = (uint32_t)(ev - sim_g.events);
        fault_ok(CCA_SIM_EVENT_DESTROY);
    }
    return sim_call_end(t, e);
}

/* ------------------------------------------------------------------ */
/* errors                                                              */

SIM_API cudaError_t cudaGetLastError(void)
{
    enter(CCA_SIM_GET_LAST_ERROR);
    tls_t *t = me();
    cudaError_t f = sim_fault_now_unlocked(CCA_SIM_GET_LAST_ERROR);
    if (f) return f;
    cudaError_t e = t->err;
    t->err = cudaSuccess;
    sim_fault_ok_unlocked(CCA_SIM_GET_LAST_ERROR);
    return e;
}

SIM_API cudaError_t cudaPeekAtLastError(void)
{
    enter(CCA_SIM_PEEK_AT_LAST_ERROR);
    tls_t *t = me();
    cudaError_t f = sim_fault_now_unlocked(CCA_SIM_PEEK_AT_LAST_ERROR);
    if (f) return f;
    sim_fault_ok_unlocked(CCA_SIM_PEEK_AT_LAST_ERROR);
    return t->err;
}

const char *sim_error_name(int code)
{
    switch (code) {
#define SIM_ERR(c, name, text) case c: return name;
#include "sim_errors.inc"
#undef SIM_ERR
    default: return "unrecognized error code";
    }
}

const char *sim_error_text(int code)
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
    return sim_error_text((int)error);
}

SIM_API const char *cudaGetErrorName(cudaError_t error)
{
    enter(CCA_SIM_GET_ERROR_NAME);
    return sim_error_name((int)error);
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
cudaError_t cudaEventRecord_ptsz(cudaEvent_t event, cudaStream_t stream)
{
    return sim_event_record(event, stream, true);
}

