/* sim_ctl.c - see sim_ctl.h. */
#include "sim_ctl.h"

#include <cuda_runtime_api.h>
#include <stdio.h>
#include <string.h>

#ifndef BENCH_DEVICE_CUDA
#include <cca_sim.h>

/* Modelled costs of the real runtime calls (ns per call), used only for the
 * rows labelled "(modelled)":
 * - cudaMalloc: about 50 us per call from 4 KB to 512 KB, more above, as
 *   measured by M. Boyer, "Memory Management Overhead" (University of
 *   Virginia), https://www.cs.virginia.edu/~mwb7w/cuda_support/memory_management_overhead.html
 * - cudaFree: it synchronises the device (CUDA C++ Best Practices Guide,
 *   "Memory allocation ... cudaFree() ... implicit synchronization"); we
 *   assume the same order as cudaMalloc, 50 us, for an idle device.
 * - event create/record/query/destroy, cudaStreamWaitEvent: a host-side API
 *   call into the driver, about 1-2 us, the order of a kernel launch's CPU
 *   cost (about 5 us per cudaLaunchKernel in NVIDIA developer forum thread
 *   "cudaMalloc affects the delay of cudaLaunchKernel", 2021).
 * cudaGetDevice, cudaGetLastError and the like stay free (host state only). */
static const struct { cca_sim_api_t api; unsigned long ns; } model[] = {
    {CCA_SIM_MALLOC, 50000},       {CCA_SIM_FREE, 50000},
    {CCA_SIM_EVENT_CREATE, 2000},  {CCA_SIM_EVENT_RECORD, 2000},
    {CCA_SIM_EVENT_QUERY, 1000},   {CCA_SIM_EVENT_DESTROY, 1000},
    {CCA_SIM_STREAM_WAIT_EVENT, 2000},
};

int simctl_is_sim(void) { return 1; }
const char *simctl_runtime_name(void) { return "sim (libcca_sim, simulated device)"; }

static int keep_handles;

void simctl_keep_handles(void) { keep_handles = 1; }

void simctl_reset(size_t capacity)
{
    if (keep_handles)
        cca_sim_reset_keeping_handles();
    else
        cca_sim_reset();
    if (capacity)
        cca_sim_set_capacity(0, capacity);
}

void simctl_model(int on)
{
    for (size_t i = 0; i < sizeof model / sizeof model[0]; i++)
        cca_sim_set_latency_ns(model[i].api, on ? model[i].ns : 0);
}

void simctl_snapshot(simctl_calls_t *c)
{
    memset(c, 0, sizeof *c);
    for (int i = 0; i < CCA_SIM_API_COUNT; i++)
        c->total += (double)cca_sim_calls((cca_sim_api_t)i);
    c->malloc = (double)cca_sim_calls(CCA_SIM_MALLOC);
    c->free = (double)cca_sim_calls(CCA_SIM_FREE);
    c->create = (double)cca_sim_calls(CCA_SIM_MEM_CREATE);
    c->unmap = (double)cca_sim_calls(CCA_SIM_MEM_UNMAP);
    c->event_create = (double)cca_sim_calls(CCA_SIM_EVENT_CREATE);
    c->event_record = (double)cca_sim_calls(CCA_SIM_EVENT_RECORD);
    c->event_query = (double)cca_sim_calls(CCA_SIM_EVENT_QUERY);
}

size_t simctl_device_used(void) { return cca_sim_used_bytes(0); }

int simctl_device_ready(char *msg, size_t len)
{
    (void)msg;
    (void)len;
    return 1;
}

#else /* the real runtime */

int simctl_is_sim(void) { return 0; }
const char *simctl_runtime_name(void) { return "cuda (libcudart, real GPU)"; }
void simctl_reset(size_t capacity) { (void)capacity; }
void simctl_keep_handles(void) {}
void simctl_model(int on) { (void)on; }

void simctl_snapshot(simctl_calls_t *c)
{
    memset(c, 0, sizeof *c);
}

int simctl_device_ready(char *msg, size_t len)
{
    int n = 0;
    cudaError_t e = cudaGetDeviceCount(&n);
    if (e == cudaSuccess && n > 0)
        return 1;
    snprintf(msg, len, "no usable CUDA device (%d devices, %s)", n, cudaGetErrorName(e));
    return 0;
}

size_t simctl_device_used(void)
{
    size_t free_b = 0, total_b = 0;
    if (cudaMemGetInfo(&free_b, &total_b) != cudaSuccess)
        return 0;
    return total_b - free_b;
}
#endif

const char *simctl_model_text(void)
{
    return "cudaMalloc 50 us, cudaFree 50 us, event create/record 2 us, "
           "event query/destroy 1 us, cudaStreamWaitEvent 2 us";
}

void simctl_per_op(const simctl_calls_t *a, const simctl_calls_t *b, double ops,
                   simctl_calls_t *out)
{
    if (ops <= 0)
        ops = 1;
    out->total = (b->total - a->total) / ops;
    out->malloc = (b->malloc - a->malloc) / ops;
    out->free = (b->free - a->free) / ops;
    out->create = (b->create - a->create) / ops;
    out->unmap = (b->unmap - a->unmap) / ops;
    out->event_create = (b->event_create - a->event_create) / ops;
    out->event_record = (b->event_record - a->event_record) / ops;
    out->event_query = (b->event_query - a->event_query) / ops;
}
