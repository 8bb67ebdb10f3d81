/* sim_ctl.h - what the benchmark asks of the runtime beyond allocation:
 * CUDA call counts, the latency model, the device capacity. With the
 * simulated device these use the cca_sim_* controls; with the real runtime
 * (-Ddevice=cuda) counts read as unavailable and the capacity is the GPU's. */
#ifndef BENCH_SIM_CTL_H
#define BENCH_SIM_CTL_H

#include <stddef.h>

typedef struct simctl_calls {
    double total;          /* every runtime call */
    double malloc, free;   /* cudaMalloc, cudaFree */
    double create, unmap;  /* cuMemCreate, cuMemUnmap (expandable segments' physical allocations and returns) */
    double event_create, event_record, event_query;
} simctl_calls_t;

/* 1 when linked against the simulated device. */
int simctl_is_sim(void);
const char *simctl_runtime_name(void);
/* Sim: forget everything, one device of `capacity` bytes, no latency.
 * Nothing may be allocated when this is called. CUDA: no-op. */
void simctl_reset(size_t capacity);
/* From now on simctl_reset keeps live streams and events valid
 * (cca_sim_reset_keeping_handles): set once an allocator that caches
 * runtime handles across runs (PyTorch's) has started in this process. */
void simctl_keep_handles(void);
/* Sim: switch the modelled per-call latencies on or off. */
void simctl_model(int on);
/* A one-line description of the latency model, for the report. */
const char *simctl_model_text(void);
/* Call counts so far (all zero with the real runtime). */
void simctl_snapshot(simctl_calls_t *c);
/* out = (b - a) / ops */
void simctl_per_op(const simctl_calls_t *a, const simctl_calls_t *b, double ops,
                   simctl_calls_t *out);
/* 1 when device 0 can be used; else 0 with the reason in msg. */
int simctl_device_ready(char *msg, size_t len);
/* Bytes in use on device 0 (sim: live cudaMalloc bytes; CUDA: total - free). */
size_t simctl_device_used(void);

#endif
