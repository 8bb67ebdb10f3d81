/* test_sim_stress.c - a plain program (no Criterion, so that it also runs
 * under ThreadSanitizer): several threads use the simulated device at once,
 * with holds, cross-thread waits, synchronizations, stream churn and
 * allocations, then everything must be complete and all memory returned.
 * Prints "N passed, N failed"; exits 0 when all passed.
 * usage: test_sim_stress [threads [iterations]] */
#include <cca_sim.h>

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

enum { MAX_THREADS = 16, KEEP = 32 };

static int nthreads = 4, iters = 20000;
static cudaEvent_t events[MAX_THREADS];      /* one per thread, recorded by its owner */
static atomic_long unexpected;
static atomic_long not_ready;

static void expect(cudaError_t e, int allow_not_ready)
{
    if (e == cudaSuccess) return;
    if (allow_not_ready && e == cudaErrorNotReady) {
        atomic_fetch_add_explicit(&not_ready, 1, memory_order_relaxed);
        (void)cudaGetLastError();
        return;
    }
    atomic_fetch_add(&unexpected, 1);
    fprintf(stderr, "unexpected %s\n", cudaGetErrorName(e));
}

static void *worker(void *arg)
{
    int id = (int)(intptr_t)arg;
    unsigned seed = 12345u + (unsigned)id * 7919u;
    cudaStream_t s[2];
    expect(cudaStreamCreate(&s[0]), 0);
    expect(cudaStreamCreateWithFlags(&s[1], cudaStreamNonBlocking), 0);
    void *live[KEEP] = { 0 };
    int held = 0;
    for (int i = 0; i < iters; i++) {
        int r = rand_r(&seed) % 100;
        int k = rand_r(&seed) % KEEP;
        cudaStream_t st = s[rand_r(&seed) % 2];
        if (r < 30) {
            if (live[k]) {
                expect(cudaFree(live[k]), 0);
                live[k] = NULL;
            } else {
                expect(cudaMalloc(&live[k], (size_t)(rand_r(&seed) % 100000 + 1)), 0);
            }
        } else if (r < 50) {
            expect(cudaEventRecord(events[id], st), 0);
        } else if (r < 65) {
            expect(cudaEventQuery(events[rand_r(&seed) % nthreads]), 1);
        } else if (r < 72) {
            expect(cudaStreamWaitEvent(st, events[rand_r(&seed) % nthreads], 0), 0);
        } else if (r < 80) {
            if (held) cca_sim_stream_release(s[0]);
            else cca_sim_stream_hold(s[0]);
            held = !held;
        } else if (r < 86) {
            expect(cudaStreamQuery(st), 1);
        } else if (r < 90) {
            expect(cudaStreamSynchronize(st), 0);
        } else if (r < 91) {
            expect(cudaDeviceSynchronize(), 0);
        } else if (r < 95) {
            /* churn: replace the non-blocking stream */
            expect(cudaStreamDestroy(s[1]), 0);
            expect(cudaStreamCreateWithFlags(&s[1], cudaStreamNonBlocking), 0);
        } else if (r < 98) {
            unsigned long long sid;
            expect(cudaStreamGetId(cudaStreamPerThread, &sid), 0);
            expect(cudaEventRecord(events[id], cudaStreamPerThread), 0);
        } else {
            cudaEvent_t tmp;
            expect(cudaEventCreate(&tmp), 0);
            expect(cudaEventRecord(tmp, NULL), 0);
            expect(cudaEventQuery(tmp), 1);
            expect(cudaEventDestroy(tmp), 0);
        }
    }
    if (held) cca_sim_stream_release(s[0]);
    for (int k = 0; k < KEEP; k++)
        if (live[k]) expect(cudaFree(live[k]), 0);
    expect(cudaStreamDestroy(s[0]), 0);
    expect(cudaStreamDestroy(s[1]), 0);
    return NULL;
}

static int passed, failed;

static void check(int ok, const char *what)
{
    printf("%s %s\n", ok ? "ok  " : "FAIL", what);
    if (ok) passed++;
    else failed++;
}

int main(int argc, char **argv)
{
    if (argc > 1) nthreads = atoi(argv[1]);
    if (argc > 2) iters = atoi(argv[2]);
    if (nthreads < 1 || nthreads > MAX_THREADS || iters < 1) {
        fprintf(stderr, "usage: %s [threads (1..%d) [iterations]]\n", argv[0], MAX_THREADS);
        return 2;
    }
    cca_sim_reset();
    cca_sim_set_capacity(0, (size_t)4 << 30);
    for (int i = 0; i < nthreads; i++) cudaEventCreateWithFlags(&events[i], cudaEventDisableTiming);
    pthread_t th[MAX_THREADS];
    for (int i = 0; i < nthreads; i++) pthread_create(&th[i], NULL, worker, (void *)(intptr_t)i);
    for (int i = 0; i < nthreads; i++) pthread_join(th[i], NULL);

    printf("%d threads x %d operations, %ld answers were cudaErrorNotReady\n", nthreads, iters,
           atomic_load(&not_ready));
    check(atomic_load(&unexpected) == 0, "no unexpected error");
    int complete = 1;
    for (int i = 0; i < nthreads; i++) complete &= cudaEventQuery(events[i]) == cudaSuccess;
    check(complete, "with every hold released, every event is complete");
    check(cudaStreamQuery(NULL) == cudaSuccess, "the legacy stream is idle");
    check(cca_sim_live_allocations(0) == 0 && cca_sim_used_bytes(0) == 0, "all memory returned");
    size_t f = 0, t = 0;
    cudaMemGetInfo(&f, &t);
    check(f == t && t == ((size_t)4 << 30), "cudaMemGetInfo: free == total");
    check(cudaGetLastError() == cudaSuccess, "no error left in the main thread");
    cca_sim_reset();
    printf("%d passed, %d failed\n", passed, failed);
    return failed ? 1 : 0;
}
