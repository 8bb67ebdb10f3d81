/* test_sim_control.c - the simulator's controls and the runtime's per-thread
 * state: fault injection, call counters, latency, devices and capacities,
 * current device and last error per thread, error names, reset. */
#include <cca_sim.h>

#include <string.h>

#include "test_sim_util.h"

static void setup(void) { cca_sim_reset(); }

TestSuite(sim_control, .init = setup);

Test(sim_control, fault_fails_once_then_works)
{
    void *p[4];
    cca_sim_fail(CCA_SIM_MALLOC, 2, cudaErrorMemoryAllocation);
    CUDA_OK(cudaMalloc(&p[0], 512));
    CUDA_OK(cudaMalloc(&p[1], 512));
    cr_assert_eq(cudaMalloc(&p[2], 512), cudaErrorMemoryAllocation);
    cr_assert_eq(cca_sim_live_allocations(0), 2, "the failed call allocated nothing");
    cr_assert_eq(cudaGetLastError(), cudaErrorMemoryAllocation);
    cr_assert_eq(cudaGetLastError(), cudaSuccess, "not sticky");
    CUDA_OK(cudaMalloc(&p[2], 512));
    CUDA_OK(cudaMalloc(&p[3], 512));
    cr_assert_eq(cudaGetLastError(), cudaSuccess);
    cr_assert_eq(cca_sim_calls(CCA_SIM_MALLOC), 5);
    for (int i = 0; i < 4; i++) CUDA_OK(cudaFree(p[i]));
}

Test(sim_control, fault_counts_successful_calls_only)
{
    void *p, *q;
    cca_sim_fail(CCA_SIM_MALLOC, 1, cudaErrorLaunchFailure);
    cr_assert_eq(cudaMalloc(NULL, 512), cudaErrorInvalidValue);     /* a failure: not counted */
    CUDA_OK(cudaMalloc(&p, 512));
    cr_assert_eq(cudaMalloc(&q, 512), cudaErrorLaunchFailure);
    cr_assert_eq(cudaPeekAtLastError(), cudaErrorLaunchFailure);
    CUDA_OK(cudaMalloc(&q, 512));
    CUDA_OK(cudaFree(p));
    CUDA_OK(cudaFree(q));
}

Test(sim_control, fault_replaced_and_cleared)
{
    void *p[3];
    for (int i = 0; i < 3; i++) CUDA_OK(cudaMalloc(&p[i], 512));
    cca_sim_fail(CCA_SIM_FREE, 0, cudaErrorInvalidValue);
    cca_sim_fail(CCA_SIM_FREE, 1, cudaErrorLaunchFailure);     /* replaces */
    CUDA_OK(cudaFree(p[0]));
    cr_assert_eq(cudaFree(p[1]), cudaErrorLaunchFailure);
    cr_assert_eq(cca_sim_live_allocations(0), 2, "the failed cudaFree freed nothing");
    CUDA_OK(cudaFree(p[1]));
    cca_sim_fail(CCA_SIM_FREE, 0, cudaErrorLaunchFailure);
    cca_sim_fail(CCA_SIM_FREE, 0, cudaSuccess);                /* clears */
    CUDA_OK(cudaFree(p[2]));
    cr_assert_eq(cca_sim_live_allocations(0), 0);
}

Test(sim_control, fault_times_fails_calls_in_a_row_then_works)
{
    void *p[4];
    for (int i = 0; i < 4; i++) CUDA_OK(cudaMalloc(&p[i], 512));
    cca_sim_fail_times(CCA_SIM_FREE, 1, 3, cudaErrorLaunchFailure);
    CUDA_OK(cudaFree(p[0]));                                    /* the one successful call before it */
    for (int i = 0; i < 3; i++) {
        cr_assert_eq(cudaFree(p[1]), cudaErrorLaunchFailure, "call %d of the 3 in a row", i + 1);
        cr_assert_eq(cudaGetLastError(), cudaErrorLaunchFailure);
    }
    cr_assert_eq(cca_sim_live_allocations(0), 3, "the failed calls freed nothing");
    CUDA_OK(cudaFree(p[1]));                                    /* the fourth works again */
    CUDA_OK(cudaFree(p[2]));
    cr_assert_eq(cca_sim_calls(CCA_SIM_FREE), 6);
    cca_sim_fail_times(CCA_SIM_FREE, 0, 5, cudaErrorLaunchFailure);
    cr_assert_eq(cudaFree(p[3]), cudaErrorLaunchFailure);
    cr_assert_eq(cudaGetLastError(), cudaErrorLaunchFailure);
    cca_sim_fail_times(CCA_SIM_FREE, 0, 0, cudaErrorLaunchFailure);   /* times 0 disarms */
    CUDA_OK(cudaFree(p[3]));
    cr_assert_eq(cudaGetLastError(), cudaSuccess);
    void *q;
    cca_sim_fail_times(CCA_SIM_MALLOC, 0, 2, cudaErrorMemoryAllocation);
    cca_sim_fail(CCA_SIM_MALLOC, 0, cudaErrorMemoryAllocation);  /* replaces: once only */
    cr_assert_eq(cudaMalloc(&q, 512), cudaErrorMemoryAllocation);
    cr_assert_eq(cudaGetLastError(), cudaErrorMemoryAllocation);
    CUDA_OK(cudaMalloc(&q, 512));
    cca_sim_fail_times(CCA_SIM_MALLOC, 0, 2, cudaSuccess);       /* cudaSuccess disarms */
    void *r;
    CUDA_OK(cudaMalloc(&r, 512));
    CUDA_OK(cudaFree(q));
    CUDA_OK(cudaFree(r));
    cca_sim_fail_times(CCA_SIM_FREE, 0, 2, cudaErrorLaunchFailure);
    cca_sim_reset();                                            /* a reset disarms too */
    CUDA_OK(cudaMalloc(&q, 512));
    CUDA_OK(cudaFree(q));
    cr_assert_eq(cudaGetLastError(), cudaSuccess);
}

/* One call of each API, with valid arguments. */
static cudaError_t call_api(cca_sim_api_t api, cudaStream_t s, cudaEvent_t e, void **scratch)
{
    size_t f, t;
    int d;
    unsigned long long id;
    cudaStream_t ns;
    cudaEvent_t ne;
    switch (api) {
    case CCA_SIM_MALLOC: return cudaMalloc(scratch, 512);
    case CCA_SIM_FREE: return cudaFree(*scratch);
    case CCA_SIM_MEM_GET_INFO: return cudaMemGetInfo(&f, &t);
    case CCA_SIM_EVENT_CREATE: return cudaEventCreate(&ne);
    case CCA_SIM_EVENT_RECORD: return cudaEventRecord(e, s);
    case CCA_SIM_EVENT_QUERY: return cudaEventQuery(e);
    case CCA_SIM_EVENT_SYNCHRONIZE: return cudaEventSynchronize(e);
    case CCA_SIM_EVENT_DESTROY: {
        cudaEvent_t x;
        cudaEventCreate(&x);
        return cudaEventDestroy(x);
    }
    case CCA_SIM_STREAM_SYNCHRONIZE: return cudaStreamSynchronize(s);
    case CCA_SIM_STREAM_WAIT_EVENT: return cudaStreamWaitEvent(s, e, 0);
    case CCA_SIM_DEVICE_SYNCHRONIZE: return cudaDeviceSynchronize();
    case CCA_SIM_GET_DEVICE: return cudaGetDevice(&d);
    case CCA_SIM_SET_DEVICE: return cudaSetDevice(0);
    case CCA_SIM_GET_DEVICE_COUNT: return cudaGetDeviceCount(&d);
    case CCA_SIM_STREAM_CREATE: return cudaStreamCreate(&ns);
    case CCA_SIM_STREAM_DESTROY: {
        cudaStream_t x;
        cudaStreamCreate(&x);
        return cudaStreamDestroy(x);
    }
    case CCA_SIM_STREAM_QUERY: return cudaStreamQuery(s);
    case CCA_SIM_STREAM_GET_ID: return cudaStreamGetId(s, &id);
    case CCA_SIM_GET_LAST_ERROR: return cudaGetLastError();
    case CCA_SIM_PEEK_AT_LAST_ERROR: return cudaPeekAtLastError();
    case CCA_SIM_STREAM_BEGIN_CAPTURE: return cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal);
    case CCA_SIM_STREAM_END_CAPTURE: {
        cudaStream_t x;
        cudaGraph_t g;
        cudaStreamCreate(&x);
        cudaStreamBeginCapture(x, cudaStreamCaptureModeGlobal);   /* not the faulted API */
        return cudaStreamEndCapture(x, &g);
    }
    case CCA_SIM_STREAM_IS_CAPTURING: {
        enum cudaStreamCaptureStatus st;
        return cudaStreamIsCapturing(s, &st);
    }
    case CCA_SIM_GET_DRIVER_ENTRY_POINT: {
        void *fn;
        return cudaGetDriverEntryPointByVersion("cuMemCreate", &fn, 12000, 0, NULL);
    }
    default: return cudaErrorUnknown;
    }
}

Test(sim_control, every_api_can_be_made_to_fail)
{
    cudaStream_t s;
    cudaEvent_t e;
    CUDA_OK(cudaStreamCreate(&s));
    CUDA_OK(cudaEventCreate(&e));
    for (int a = 0; a < CCA_SIM_API_COUNT; a++) {
        if (a == CCA_SIM_GET_ERROR_STRING || a == CCA_SIM_GET_ERROR_NAME) continue;
        if (a > CCA_SIM_GET_DRIVER_ENTRY_POINT) continue;   /* driver calls: test_sim_vmm.c */
        void *scratch = NULL;
        CUDA_OK(cudaMalloc(&scratch, 512));
        cca_sim_fail((cca_sim_api_t)a, 0, cudaErrorLaunchFailure);
        cr_assert_eq(call_api((cca_sim_api_t)a, s, e, &scratch), cudaErrorLaunchFailure, "%s", cca_sim_api_name(a));
        cudaError_t last = cudaGetLastError();
        if (a != CCA_SIM_GET_LAST_ERROR && a != CCA_SIM_PEEK_AT_LAST_ERROR)
            cr_assert_eq(last, cudaErrorLaunchFailure, "%s sets the last error", cca_sim_api_name(a));
        cr_assert_eq(call_api((cca_sim_api_t)a, s, e, &scratch), cudaSuccess, "%s works again", cca_sim_api_name(a));
        cr_assert_eq(cudaGetLastError(), cudaSuccess);
    }
}

Test(sim_control, call_counters_are_exact)
{
    for (int a = 0; a < CCA_SIM_API_COUNT; a++) cr_assert_eq(cca_sim_calls((cca_sim_api_t)a), 0);
    void *p;
    cudaStream_t s;
    cudaEvent_t e, e2;
    unsigned long long id;
    int d;
    size_t f, t;
    CUDA_OK(cudaMalloc(&p, 512));
    cr_assert_eq(cudaMalloc(NULL, 512), cudaErrorInvalidValue);
    CUDA_OK(cudaFree(p));
    CUDA_OK(cudaFree(NULL));
    cr_assert_eq(cudaFree(p), cudaErrorInvalidValue);
    CUDA_OK(cudaMemGetInfo(&f, &t));
    CUDA_OK(cudaEventCreate(&e));
    CUDA_OK(cudaEventCreateWithFlags(&e2, cudaEventDisableTiming));
    CUDA_OK(cudaStreamCreate(&s));
    CUDA_OK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    CUDA_OK(cudaStreamCreateWithFlags(&s, 0));
    cca_sim_stream_hold(s);                       /* controls are not counted */
    CUDA_OK(cudaEventRecord(e, s));
    CUDA_OK(cudaEventRecord(e2, cudaStreamPerThread));
    cr_assert_eq(cudaEventQuery(e), cudaErrorNotReady);
    CUDA_OK(cudaEventQuery(e2));
    CUDA_OK(cudaStreamWaitEvent(NULL, e, 0));
    cr_assert_eq(cudaStreamQuery(NULL), cudaErrorNotReady);
    CUDA_OK(cudaEventSynchronize(e));
    CUDA_OK(cudaStreamSynchronize(s));
    CUDA_OK(cudaDeviceSynchronize());
    cca_sim_stream_release(s);
    CUDA_OK(cudaStreamGetId(s, &id));
    CUDA_OK(cudaStreamDestroy(s));
    CUDA_OK(cudaEventDestroy(e));
    CUDA_OK(cudaEventDestroy(e2));
    CUDA_OK(cudaGetDevice(&d));
    CUDA_OK(cudaSetDevice(0));
    cr_assert_eq(cudaSetDevice(5), cudaErrorInvalidDevice);
    CUDA_OK(cudaGetDeviceCount(&d));
    cudaGetLastError();
    cudaPeekAtLastError();
    cudaPeekAtLastError();
    cudaGetErrorString(cudaErrorNotReady);
    cudaGetErrorName(cudaErrorNotReady);
    cudaGetErrorName(cudaSuccess);
    static const unsigned long want[CCA_SIM_API_COUNT] = {
        [CCA_SIM_MALLOC] = 2, [CCA_SIM_FREE] = 3, [CCA_SIM_MEM_GET_INFO] = 1,
        [CCA_SIM_EVENT_CREATE] = 2, [CCA_SIM_EVENT_RECORD] = 2, [CCA_SIM_EVENT_QUERY] = 2,
        [CCA_SIM_EVENT_SYNCHRONIZE] = 1, [CCA_SIM_EVENT_DESTROY] = 2,
        [CCA_SIM_STREAM_SYNCHRONIZE] = 1, [CCA_SIM_STREAM_WAIT_EVENT] = 1,
        [CCA_SIM_DEVICE_SYNCHRONIZE] = 1, [CCA_SIM_GET_DEVICE] = 1, [CCA_SIM_SET_DEVICE] = 2,
        [CCA_SIM_GET_DEVICE_COUNT] = 1, [CCA_SIM_STREAM_CREATE] = 3, [CCA_SIM_STREAM_DESTROY] = 1,
        [CCA_SIM_STREAM_QUERY] = 1, [CCA_SIM_STREAM_GET_ID] = 1, [CCA_SIM_GET_LAST_ERROR] = 1,
        [CCA_SIM_PEEK_AT_LAST_ERROR] = 2, [CCA_SIM_GET_ERROR_STRING] = 1, [CCA_SIM_GET_ERROR_NAME] = 2,
    };
    for (int a = 0; a < CCA_SIM_API_COUNT; a++)
        cr_assert_eq(cca_sim_calls((cca_sim_api_t)a), want[a], "%s: %lu calls, expected %lu",
                     cca_sim_api_name(a), cca_sim_calls((cca_sim_api_t)a), want[a]);
    cca_sim_reset();
    for (int a = 0; a < CCA_SIM_API_COUNT; a++) cr_assert_eq(cca_sim_calls((cca_sim_api_t)a), 0);
    cr_assert_eq(cca_sim_calls(CCA_SIM_API_COUNT), 0, "out of range");
}

Test(sim_control, api_names)
{
    cr_assert_str_eq(cca_sim_api_name(CCA_SIM_MALLOC), "cudaMalloc");
    cr_assert_str_eq(cca_sim_api_name(CCA_SIM_EVENT_CREATE), "cudaEventCreate");
    cr_assert_str_eq(cca_sim_api_name(CCA_SIM_STREAM_GET_ID), "cudaStreamGetId");
    cr_assert_str_eq(cca_sim_api_name(CCA_SIM_GET_ERROR_NAME), "cudaGetErrorName");
    for (int a = 0; a < CCA_SIM_API_COUNT; a++) {
        const char *n = cca_sim_api_name((cca_sim_api_t)a);
        cr_assert(n && (strncmp(n, "cuda", 4) == 0 || strncmp(n, "__cuda", 6) == 0 ||
                        (a > CCA_SIM_GET_DRIVER_ENTRY_POINT && strncmp(n, "cu", 2) == 0)),
                  "api %d", a);
        for (int b = 0; b < a; b++) cr_assert_str_neq(n, cca_sim_api_name((cca_sim_api_t)b));
    }
}

Test(sim_control, devices_have_their_own_capacity)
{
    int n = 0;
    cca_sim_set_capacity(1, 2 * GiB);            /* may be set before the device exists */
    cca_sim_set_device_count(3);
    cca_sim_set_capacity(0, GiB);
    CUDA_OK(cudaGetDeviceCount(&n));
    cr_assert_eq(n, 3);
    size_t want[3] = { GiB, 2 * GiB, (size_t)80 << 30 };
    for (int d = 0; d < 3; d++) {
        size_t f, t;
        CUDA_OK(cudaSetDevice(d));
        CUDA_OK(cudaMemGetInfo(&f, &t));
        cr_assert_eq(t, want[d]);
        cr_assert_eq(f, want[d]);
    }
    CUDA_OK(cudaSetDevice(1));
    void *p, *q;
    CUDA_OK(cudaMalloc(&p, GiB + 5));
    cr_assert_eq(cca_sim_used_bytes(1), GiB + 5);
    cr_assert_eq(cca_sim_used_bytes(0), 0);
    cr_assert_eq(cudaMalloc(&q, GiB), cudaErrorMemoryAllocation);
    CUDA_OK(cudaSetDevice(0));
    CUDA_OK(cudaMalloc(&q, GiB));                  /* device 0 still has its 1 GiB */
    size_t f, t;
    CUDA_OK(cudaMemGetInfo(&f, &t));
    cr_assert_eq(f, 0);
    cr_assert_eq(t, GiB);
    cr_assert((uintptr_t)p + GiB + 5 <= (uintptr_t)q || (uintptr_t)q + GiB <= (uintptr_t)p, "disjoint");
    CUDA_OK(cudaFree(p));                          /* freed whatever device is current */
    cr_assert_eq(cca_sim_used_bytes(1), 0);
    CUDA_OK(cudaFree(q));
    cr_assert_eq(cudaSetDevice(3), cudaErrorInvalidDevice);
    cr_assert_eq(cudaSetDevice(-1), cudaErrorInvalidDevice);
    cr_assert_eq(cudaGetLastError(), cudaErrorInvalidDevice);
    int d = -1;
    CUDA_OK(cudaGetDevice(&d));
    cr_assert_eq(d, 0, "a refused cudaSetDevice changes nothing");
    cca_sim_set_device_count(0);                   /* out of range: ignored */
    cca_sim_set_device_count(33);
    CUDA_OK(cudaGetDeviceCount(&n));
    cr_assert_eq(n, 3);
    cca_sim_set_device_count(32);
    CUDA_OK(cudaSetDevice(31));
    CUDA_OK(cudaMemGetInfo(&f, &t));
    cr_assert_eq(t, (size_t)80 << 30);
}

struct thread_state { int dev; cudaError_t last, peek, after; int set_dev; cudaError_t set_rc; };

static void *state_thread(void *p)
{
    struct thread_state *s = p;
    cudaGetDevice(&s->dev);
    s->peek = cudaPeekAtLastError();
    s->last = cudaGetLastError();
    s->set_rc = cudaSetDevice(s->set_dev);
    cudaMalloc(NULL, 1);                     /* leaves InvalidValue in this thread */
    s->after = cudaPeekAtLastError();
    return NULL;
}

Test(sim_control, device_and_last_error_are_per_thread)
{
    cca_sim_set_device_count(3);
    CUDA_OK(cudaSetDevice(1));
    cr_assert_eq(cudaSetDevice(7), cudaErrorInvalidDevice);
    struct thread_state a = { .dev = -1, .set_dev = 2 };
    run_in_thread(state_thread, &a);
    cr_assert_eq(a.dev, 0, "a new thread starts on device 0");
    cr_assert_eq(a.peek, cudaSuccess, "and with no error");
    cr_assert_eq(a.last, cudaSuccess);
    cr_assert_eq(a.set_rc, cudaSuccess);
    cr_assert_eq(a.after, cudaErrorInvalidValue);
    int d = -1;
    CUDA_OK(cudaGetDevice(&d));
    cr_assert_eq(d, 1, "our device is ours");
    cr_assert_eq(cudaPeekAtLastError(), cudaErrorInvalidDevice, "our error is ours");
    cr_assert_eq(cudaPeekAtLastError(), cudaErrorInvalidDevice, "peek does not clear");
    cr_assert_eq(cudaGetLastError(), cudaErrorInvalidDevice);
    cr_assert_eq(cudaGetLastError(), cudaSuccess);
    cr_assert_eq(cudaPeekAtLastError(), cudaSuccess);
}

Test(sim_control, successful_calls_keep_the_last_error)
{
    void *p;
    cr_assert_eq(cudaMalloc(NULL, 1), cudaErrorInvalidValue);
    CUDA_OK(cudaMalloc(&p, 1));
    CUDA_OK(cudaFree(p));
    cr_assert_eq(cudaGetLastError(), cudaErrorInvalidValue);
}

Test(sim_control, null_out_arguments)
{
    cr_assert_eq(cudaGetDeviceCount(NULL), cudaErrorInvalidValue);
    cr_assert_eq(cudaGetDevice(NULL), cudaErrorInvalidValue);
    cr_assert_eq(cudaStreamGetId(NULL, NULL), cudaErrorInvalidValue);
    cr_assert_eq(cudaGetLastError(), cudaErrorInvalidValue);
}

Test(sim_control, error_names_and_strings)
{
    static const struct { cudaError_t e; const char *name, *text; } t[] = {
        { cudaSuccess, "cudaSuccess", "no error" },
        { cudaErrorInvalidValue, "cudaErrorInvalidValue", "invalid argument" },
        { cudaErrorMemoryAllocation, "cudaErrorMemoryAllocation", "out of memory" },
        { cudaErrorInitializationError, "cudaErrorInitializationError", "initialization error" },
        { cudaErrorInsufficientDriver, "cudaErrorInsufficientDriver",
          "CUDA driver version is insufficient for CUDA runtime version" },
        { cudaErrorNoDevice, "cudaErrorNoDevice", "no CUDA-capable device is detected" },
        { cudaErrorInvalidDevice, "cudaErrorInvalidDevice", "invalid device ordinal" },
        { cudaErrorInvalidResourceHandle, "cudaErrorInvalidResourceHandle", "invalid resource handle" },
        { cudaErrorNotReady, "cudaErrorNotReady", "device not ready" },
        { cudaErrorIllegalAddress, "cudaErrorIllegalAddress", "an illegal memory access was encountered" },
        { cudaErrorLaunchFailure, "cudaErrorLaunchFailure", "unspecified launch failure" },
        { cudaErrorUnknown, "cudaErrorUnknown", "unknown error" },
    };
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
        cr_assert_str_eq(cudaGetErrorName(t[i].e), t[i].name);
        cr_assert_str_eq(cudaGetErrorString(t[i].e), t[i].text);
    }
    cr_assert_str_eq(cudaGetErrorName((cudaError_t)12345), "unrecognized error code");
    cr_assert_str_eq(cudaGetErrorString((cudaError_t)12345), "unrecognized error code");
    cr_assert_str_eq(cudaGetErrorName((cudaError_t)-1), "unrecognized error code");
    cr_assert_eq(cudaGetLastError(), cudaSuccess, "none of this is an error");
}

struct lat_arg { double seconds; };

static void *slow_malloc_thread(void *p)
{
    struct lat_arg *a = p;
    double t0 = now_s();
    void *q;
    cudaMalloc(&q, 512);
    a->seconds = now_s() - t0;
    cudaFree(q);
    return NULL;
}

Test(sim_control, latency_is_spent_outside_the_lock)
{
    cca_sim_set_latency_ns(CCA_SIM_MALLOC, 500 * 1000 * 1000ul);
    pthread_t th;
    struct lat_arg a = { 0 };
    cr_assert_eq(pthread_create(&th, NULL, slow_malloc_thread, &a), 0);
    struct timespec ms20 = { 0, 20 * 1000 * 1000 };
    nanosleep(&ms20, NULL);
    double t0 = now_s();
    size_t f, t;
    void *q;
    CUDA_OK(cudaMemGetInfo(&f, &t));
    CUDA_OK(cudaStreamQuery(NULL));
    double other = now_s() - t0;
    pthread_join(th, NULL);
    cr_assert_geq(a.seconds, 0.5, "the malloc took %f s", a.seconds);
    cr_assert_lt(other, 0.3, "other calls went on meanwhile (%f s)", other);
    t0 = now_s();
    CUDA_OK(cudaFree(NULL));
    cr_assert_lt(now_s() - t0, 0.3, "latency is per API");
    cca_sim_set_latency_ns(CCA_SIM_MALLOC, 0);
    t0 = now_s();
    CUDA_OK(cudaMalloc(&q, 512));
    cr_assert_lt(now_s() - t0, 0.3);
    cca_sim_set_latency_ns(CCA_SIM_FREE, 500 * 1000 * 1000ul);
    cca_sim_reset();                          /* clears latency */
    t0 = now_s();
    CUDA_OK(cudaFree(NULL));
    cr_assert_lt(now_s() - t0, 0.3);
}

Test(sim_control, reset_restores_defaults)
{
    cca_sim_set_device_count(4);
    cca_sim_set_capacity(0, 1000);
    CUDA_OK(cudaSetDevice(2));
    cudaStream_t s;
    cudaEvent_t e;
    CUDA_OK(cudaStreamCreate(&s));
    CUDA_OK(cudaEventCreate(&e));
    cca_sim_stream_hold(s);
    cca_sim_stream_hold(NULL);
    cca_sim_fail(CCA_SIM_MALLOC, 0, cudaErrorMemoryAllocation);
    cca_sim_set_latency_ns(CCA_SIM_MEM_GET_INFO, 1000);
    cr_assert_eq(cudaSetDevice(9), cudaErrorInvalidDevice);
    cca_sim_reset();
    int n = 0, d = -1;
    CUDA_OK(cudaGetDeviceCount(&n));
    cr_assert_eq(n, 1);
    CUDA_OK(cudaGetDevice(&d));
    cr_assert_eq(d, 0);
    cr_assert_eq(cudaPeekAtLastError(), cudaSuccess);
    size_t f, t;
    CUDA_OK(cudaMemGetInfo(&f, &t));
    cr_assert_eq(t, (size_t)80 << 30);
    cr_assert_eq(f, (size_t)80 << 30);
    void *p;
    CUDA_OK(cudaMalloc(&p, 512));            /* no fault */
    cudaEvent_t e2;
    CUDA_OK(cudaEventCreate(&e2));
    CUDA_OK(cudaEventRecord(e2, NULL));      /* nothing held */
    CUDA_OK(cudaEventQuery(e2));
    CUDA_OK(cudaStreamQuery(NULL));
    cr_assert_eq(cca_sim_calls(CCA_SIM_MALLOC), 1);
    cr_assert_eq(cca_sim_calls(CCA_SIM_SET_DEVICE), 0);
}

struct reset_arg { int dev_before, dev_after; cudaError_t err_after; int go; pthread_mutex_t m; pthread_cond_t c; };

static void *stale_thread(void *p)
{
    struct reset_arg *a = p;
    cudaSetDevice(1);
    cudaMalloc(NULL, 1);
    cudaGetDevice(&a->dev_before);
    pthread_mutex_lock(&a->m);
    a->go = 1;
    pthread_cond_broadcast(&a->c);
    while (a->go != 2) pthread_cond_wait(&a->c, &a->m);
    pthread_mutex_unlock(&a->m);
    cudaGetDevice(&a->dev_after);
    a->err_after = cudaGetLastError();
    return NULL;
}

Test(sim_control, reset_resets_other_threads_state_too)
{
    cca_sim_set_device_count(2);
    struct reset_arg a = { .m = PTHREAD_MUTEX_INITIALIZER, .c = PTHREAD_COND_INITIALIZER };
    pthread_t th;
    cr_assert_eq(pthread_create(&th, NULL, stale_thread, &a), 0);
    pthread_mutex_lock(&a.m);
    while (a.go != 1) pthread_cond_wait(&a.c, &a.m);
    cca_sim_reset();
    a.go = 2;
    pthread_cond_broadcast(&a.c);
    pthread_mutex_unlock(&a.m);
    pthread_join(th, NULL);
    cr_assert_eq(a.dev_before, 1);
    cr_assert_eq(a.dev_after, 0);
    cr_assert_eq(a.err_after, cudaSuccess);
}

Test(sim_control, fail_nth_fails_the_kth_call_of_any_api_once)
{
    void *p = NULL;
    int dev = -1;
    cca_sim_fail_nth(3, cudaErrorMemoryAllocation);
    cr_assert_eq(cca_sim_fail_nth_left(), 3);
    cr_assert_eq(cudaGetDevice(&dev), cudaSuccess);                        /* 1 */
    (void)cudaGetErrorName(cudaSuccess);                                    /* cannot fail: not counted */
    (void)cudaGetLastError();                                               /* nor this */
    cr_assert_eq(cudaMalloc(&p, 4096), cudaSuccess);                        /* 2 */
    cr_assert_eq(cudaFree(p), cudaErrorMemoryAllocation, "the third call"); /* 3 */
    cr_assert_eq(cudaGetLastError(), cudaErrorMemoryAllocation, "sets the last error like any failure");
    cr_assert_eq(cca_sim_fail_nth_left(), 0);
    cr_assert_eq(cudaFree(p), cudaSuccess, "once");
    cca_sim_fail_nth(1, cudaErrorInvalidValue);
    cca_sim_fail_nth(0, cudaErrorInvalidValue);                             /* disarmed */
    cr_assert_eq(cudaMalloc(&p, 4096), cudaSuccess);
    cca_sim_fail_nth(1, cudaErrorInvalidValue);
    cca_sim_reset();                                                        /* reset disarms too */
    cr_assert_eq(cudaMalloc(&p, 4096), cudaSuccess);
    cr_assert_eq(cudaFree(p), cudaSuccess);
}
