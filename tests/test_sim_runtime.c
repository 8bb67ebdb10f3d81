/* test_sim_runtime.c - each CUDA runtime function that the simulator exports,
 * called through cuda_runtime_api.h as any C caller would: proves that the
 * symbols link, and checks behaviour that holds on a real GPU as well (this
 * suite is built in both modes and skips without a device). */
#include "crit.h"
#include <cuda_runtime_api.h>
#include <pthread.h>
#include <stdint.h>
#include <string.h>

#define CUDA_OK(call) cr_assert_eq((call), cudaSuccess, "%s failed", #call)

Test(runtime, devices)
{
    int n = 0, d = -1;
    CUDA_OK(cudaGetDeviceCount(&n));
    cr_assert_geq(n, 1);
    CUDA_OK(cudaGetDevice(&d));
    cr_assert_eq(d, 0);
    CUDA_OK(cudaSetDevice(n - 1));
    CUDA_OK(cudaGetDevice(&d));
    cr_assert_eq(d, n - 1);
    cr_assert_eq(cudaSetDevice(n), cudaErrorInvalidDevice);
    cr_assert_eq(cudaPeekAtLastError(), cudaErrorInvalidDevice);
    cr_assert_eq(cudaGetLastError(), cudaErrorInvalidDevice);
    cr_assert_eq(cudaGetLastError(), cudaSuccess);
    CUDA_OK(cudaSetDevice(0));
    CUDA_OK(cudaDeviceSynchronize());
}

Test(runtime, memory)
{
    size_t f0, t0, f1, t1;
    CUDA_OK(cudaMemGetInfo(&f0, &t0));
    cr_assert_gt(t0, 0);
    cr_assert_leq(f0, t0);
    void *p = NULL;
    CUDA_OK(cudaMalloc(&p, 64 << 20));
    cr_assert_not_null(p);
    cr_assert_eq((uintptr_t)p % 256, 0);
    CUDA_OK(cudaMemGetInfo(&f1, &t1));
    cr_assert_eq(t1, t0);
    cr_assert_lt(f1, f0);
    CUDA_OK(cudaFree(p));
    CUDA_OK(cudaFree(NULL));
    cr_assert_eq(cudaMalloc(&p, SIZE_MAX / 2), cudaErrorMemoryAllocation);
    cr_assert_eq(cudaGetLastError(), cudaErrorMemoryAllocation);
    cr_assert_eq(cudaGetLastError(), cudaSuccess);
}

Test(runtime, streams_and_events)
{
    cudaStream_t s, nb;
    cudaEvent_t e, e2;
    CUDA_OK(cudaStreamCreate(&s));
    CUDA_OK(cudaStreamCreateWithFlags(&nb, cudaStreamNonBlocking));
    CUDA_OK(cudaEventCreate(&e));
    CUDA_OK(cudaEventCreateWithFlags(&e2, cudaEventDisableTiming));
    CUDA_OK(cudaEventQuery(e));                     /* never recorded */
    CUDA_OK(cudaEventRecord(e, s));
    CUDA_OK(cudaStreamWaitEvent(nb, e, 0));
    CUDA_OK(cudaEventRecord(e2, nb));
    CUDA_OK(cudaEventSynchronize(e2));
    CUDA_OK(cudaEventQuery(e2));
    CUDA_OK(cudaStreamSynchronize(s));
    CUDA_OK(cudaStreamQuery(s));
    CUDA_OK(cudaStreamQuery(NULL));
    CUDA_OK(cudaStreamSynchronize(cudaStreamPerThread));
    CUDA_OK(cudaEventRecord(e, NULL));
    CUDA_OK(cudaEventRecord(e, cudaStreamPerThread));
    CUDA_OK(cudaDeviceSynchronize());
    CUDA_OK(cudaEventQuery(e));
    CUDA_OK(cudaEventDestroy(e));
    CUDA_OK(cudaEventDestroy(e2));
    CUDA_OK(cudaStreamDestroy(s));
    CUDA_OK(cudaStreamDestroy(nb));
}

static void *ptds_id(void *p)
{
    cudaStreamGetId(cudaStreamPerThread, p);
    return NULL;
}

Test(runtime, stream_ids)
{
    unsigned long long legacy, legacy2, mine, other = 0, a, b;
    CUDA_OK(cudaStreamGetId(NULL, &legacy));
    CUDA_OK(cudaStreamGetId(cudaStreamLegacy, &legacy2));
    cr_assert_eq(legacy, legacy2);
    CUDA_OK(cudaStreamGetId(cudaStreamPerThread, &mine));
    cr_assert_neq(mine, legacy);
    pthread_t th;
    cr_assert_eq(pthread_create(&th, NULL, ptds_id, &other), 0);
    pthread_join(th, NULL);
    cr_assert_neq(other, 0);
    cr_assert_neq(other, mine, "each thread has its own per-thread default stream");
    cudaStream_t s1, s2;
    CUDA_OK(cudaStreamCreate(&s1));
    CUDA_OK(cudaStreamGetId(s1, &a));
    CUDA_OK(cudaStreamDestroy(s1));
    CUDA_OK(cudaStreamCreate(&s2));
    CUDA_OK(cudaStreamGetId(s2, &b));
    cr_assert_neq(a, b, "ids are not reused");
    cr_assert(a != legacy && a != mine && b != legacy && b != mine);
    CUDA_OK(cudaStreamDestroy(s2));
}

Test(runtime, errors)
{
    cr_assert_str_eq(cudaGetErrorName(cudaSuccess), "cudaSuccess");
    cr_assert_str_eq(cudaGetErrorName(cudaErrorMemoryAllocation), "cudaErrorMemoryAllocation");
    cr_assert_str_eq(cudaGetErrorString(cudaErrorMemoryAllocation), "out of memory");
    cr_assert_str_eq(cudaGetErrorString(cudaErrorNotReady), "device not ready");
    cr_assert_eq(cudaMalloc(NULL, 16), cudaErrorInvalidValue);
    cr_assert_eq(cudaPeekAtLastError(), cudaErrorInvalidValue);
    cr_assert_eq(cudaGetLastError(), cudaErrorInvalidValue);
    cr_assert_eq(cudaGetLastError(), cudaSuccess);
}

Test(runtime, record_on_another_devices_stream)
{
    int n = 0;
    CUDA_OK(cudaGetDeviceCount(&n));
    if (n < 2) cr_skip_test("one device");
    cudaStream_t s1;
    cudaEvent_t e0;
    CUDA_OK(cudaSetDevice(1));
    CUDA_OK(cudaStreamCreate(&s1));
    CUDA_OK(cudaSetDevice(0));
    CUDA_OK(cudaEventCreate(&e0));
    cr_assert_neq(cudaEventRecord(e0, s1), cudaSuccess);
    (void)cudaGetLastError();
}
