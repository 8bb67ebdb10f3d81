/* sim_demo.c - what the simulated device looks like from a CUDA program.
 *
 * Uses only CUDA runtime calls, so the same program runs on a real GPU
 * (built with -Ddevice=cuda). Built with -Ddevice=sim, CCA_DEMO_SIM is
 * defined: the device then gets a small capacity, and a stream is kept busy
 * with the simulator's hold; on a GPU a host function that waits for a flag
 * keeps it busy instead.
 *
 *  1. cudaMalloc 1 GiB chunks until the device refuses: how many fit, the
 *     error, cudaMemGetInfo; then free them all.
 *  2. A busy stream and an event recorded on it: queried from two threads,
 *     cudaErrorNotReady; after cudaStreamSynchronize, cudaSuccess.
 * Exits 0 when everything behaved as on a GPU. */
#include <cuda_runtime_api.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>

#ifdef CCA_DEMO_SIM
#include <cca_sim.h>
#endif

#define GIB ((size_t)1 << 30)
#define MAX_CHUNKS 4096

static int failures;

static void check(int ok, const char *what)
{
    printf("  [%s] %s\n", ok ? "ok" : "FAILED", what);
    if (!ok) failures++;
}

/* ---- keeping a stream busy ---- */

#ifdef CCA_DEMO_SIM
static void make_busy(cudaStream_t s) { cca_sim_stream_hold(s); }
static void let_go_before_sync(cudaStream_t s) { (void)s; }     /* a sync completes held work */
static void end_busy(cudaStream_t s) { cca_sim_stream_release(s); }
#else
static atomic_int go;

static void CUDART_CB wait_for_go(void *arg)
{
    (void)arg;
    while (!atomic_load(&go)) {
    }
}

static void make_busy(cudaStream_t s)
{
    atomic_store(&go, 0);
    if (cudaLaunchHostFunc(s, wait_for_go, NULL) != cudaSuccess) {
        printf("  cudaLaunchHostFunc: %s\n", cudaGetErrorName(cudaGetLastError()));
        failures++;
    }
}
static void let_go_before_sync(cudaStream_t s) { (void)s; atomic_store(&go, 1); }
static void end_busy(cudaStream_t s) { (void)s; }
#endif

struct query { cudaEvent_t e; cudaError_t answer; };

static void *query_thread(void *p)
{
    struct query *q = p;
    q->answer = cudaEventQuery(q->e);
    (void)cudaGetLastError();                /* NotReady also lands in the thread's last error */
    return NULL;
}

int main(void)
{
    int n = 0;
    cudaError_t e = cudaGetDeviceCount(&n);
    if (e != cudaSuccess || n < 1) {
        printf("no CUDA device (%s): nothing to show\n", cudaGetErrorName(e));
        return 77;
    }
#ifdef CCA_DEMO_SIM
    cca_sim_set_capacity(0, 8 * GIB + 300 * ((size_t)1 << 20));
    printf("simulated device: 1 device, capacity set to 8.3 GiB\n");
#else
    printf("real device: %d device(s)\n", n);
#endif
    if (cudaSetDevice(0) != cudaSuccess) return 1;

    /* 1. out of memory */
    size_t free_b = 0, total_b = 0;
    cudaMemGetInfo(&free_b, &total_b);
    printf("\n1. cudaMalloc 1 GiB chunks until the device refuses (free %zu of %zu bytes)\n", free_b, total_b);
    static void *chunk[MAX_CHUNKS];
    int fit = 0;
    while (fit < MAX_CHUNKS && (e = cudaMalloc(&chunk[fit], GIB)) == cudaSuccess) fit++;
    printf("  %d chunks fit; chunk %d: %s (\"%s\")\n", fit, fit + 1, cudaGetErrorName(e), cudaGetErrorString(e));
    check(e == cudaErrorMemoryAllocation, "the refusal is cudaErrorMemoryAllocation");
    check(cudaGetLastError() == cudaErrorMemoryAllocation, "and it is the thread's last error");
    check(cudaGetLastError() == cudaSuccess, "which cudaGetLastError clears");
    size_t f2 = 0, t2 = 0;
    cudaMemGetInfo(&f2, &t2);
    printf("  cudaMemGetInfo: free %zu, total %zu\n", f2, t2);
    check(t2 == total_b && f2 < GIB, "less than a chunk is left");
    for (int i = 0; i < fit; i++) cudaFree(chunk[i]);
    cudaMemGetInfo(&f2, &t2);
#ifdef CCA_DEMO_SIM
    check(f2 == free_b, "after freeing them, free memory is back where it was");
#else
    check(f2 + GIB > free_b, "after freeing them, free memory is back (within a chunk)");
#endif

    /* 2. a busy stream */
    printf("\n2. an event recorded on a busy stream, queried from two threads\n");
    cudaStream_t s;
    cudaEvent_t ev;
    if (cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking) != cudaSuccess ||
        cudaEventCreateWithFlags(&ev, cudaEventDisableTiming) != cudaSuccess) {
        printf("  cannot create a stream and an event\n");
        return 1;
    }
    make_busy(s);
    cudaEventRecord(ev, s);
    struct query q[2] = { { ev, cudaSuccess }, { ev, cudaSuccess } };
    pthread_t th[2];
    for (int i = 0; i < 2; i++) pthread_create(&th[i], NULL, query_thread, &q[i]);
    for (int i = 0; i < 2; i++) pthread_join(th[i], NULL);
    for (int i = 0; i < 2; i++) printf("  thread %d: cudaEventQuery -> %s\n", i + 1, cudaGetErrorName(q[i].answer));
    check(q[0].answer == cudaErrorNotReady && q[1].answer == cudaErrorNotReady, "pending in both threads");
    check(cudaStreamQuery(s) == cudaErrorNotReady, "cudaStreamQuery: the stream is busy");
    (void)cudaGetLastError();
    let_go_before_sync(s);
    e = cudaStreamSynchronize(s);
    printf("  cudaStreamSynchronize -> %s\n", cudaGetErrorName(e));
    e = cudaEventQuery(ev);
    printf("  cudaEventQuery -> %s\n", cudaGetErrorName(e));
    check(e == cudaSuccess, "complete after the synchronize");
    end_busy(s);
    check(cudaStreamQuery(s) == cudaSuccess, "the stream is idle");
    cudaEventDestroy(ev);
    cudaStreamDestroy(s);

    printf("\n%s\n", failures ? "FAILED: the device did not behave as a GPU" : "everything behaved as on a GPU");
    return failures ? 1 : 0;
}
