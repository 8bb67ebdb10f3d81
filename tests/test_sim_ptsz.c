/* test_sim_ptsz.c - callers built with CUDA_API_PER_THREAD_DEFAULT_STREAM
 * (nvcc --default-stream per-thread) call the _ptsz entry points, where the
 * NULL stream is the calling thread's per-thread default stream. */
#ifndef CUDA_API_PER_THREAD_DEFAULT_STREAM
#error "build this file with -DCUDA_API_PER_THREAD_DEFAULT_STREAM"
#endif
#include <cca_sim.h>

#include "test_sim_util.h"

static void setup(void) { cca_sim_reset(); }

TestSuite(sim_ptsz, .init = setup);

Test(sim_ptsz, null_stream_is_the_per_thread_stream)
{
    unsigned long long null_id, ptds_id, legacy_id;
    CUDA_OK(cudaStreamGetId(NULL, &null_id));
    CUDA_OK(cudaStreamGetId(cudaStreamPerThread, &ptds_id));
    CUDA_OK(cudaStreamGetId(cudaStreamLegacy, &legacy_id));
    cr_assert_eq(null_id, ptds_id);
    cr_assert_neq(null_id, legacy_id);
    cudaEvent_t e;
    CUDA_OK(cudaEventCreate(&e));
    cca_sim_stream_hold(cudaStreamPerThread);
    CUDA_OK(cudaEventRecord(e, NULL));
    cr_assert_eq(cudaEventQuery(e), cudaErrorNotReady);
    cr_assert_eq(cudaStreamQuery(NULL), cudaErrorNotReady);
    cudaStream_t s;
    cudaEvent_t f;
    CUDA_OK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    CUDA_OK(cudaEventCreate(&f));
    CUDA_OK(cudaStreamWaitEvent(s, e, 0));
    CUDA_OK(cudaEventRecord(f, s));
    cr_assert_eq(cudaEventQuery(f), cudaErrorNotReady);
    CUDA_OK(cudaStreamSynchronize(NULL));
    CUDA_OK(cudaEventQuery(e));
    CUDA_OK(cudaEventQuery(f));
    cca_sim_stream_release(cudaStreamPerThread);
    cr_assert_eq(cca_sim_calls(CCA_SIM_STREAM_GET_ID), 3);
    cr_assert_eq(cca_sim_calls(CCA_SIM_EVENT_RECORD), 2);
    cr_assert_eq(cca_sim_calls(CCA_SIM_STREAM_QUERY), 1);
    cr_assert_eq(cca_sim_calls(CCA_SIM_STREAM_SYNCHRONIZE), 1);
    cr_assert_eq(cca_sim_calls(CCA_SIM_STREAM_WAIT_EVENT), 1);
}
