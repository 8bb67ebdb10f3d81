/* sim_as_gpu.h - with CCA_SIM_AS_GPU (the "gpulike" suites), the
 * allocator suites run on the simulated device as they would on a GPU:
 * every simulator control goes to the stubs of sim_stubs.c, so exactly the
 * tests that need the simulator skip, and the rest must pass without it.
 * Included first by every source of those builds (-include). */
#ifndef CCA_SIM_AS_GPU_H
#define CCA_SIM_AS_GPU_H
#ifdef CCA_SIM_AS_GPU
#define cca_sim_reset gpu_stub_reset
#define cca_sim_set_device_count gpu_stub_set_device_count
#define cca_sim_set_capacity gpu_stub_set_capacity
#define cca_sim_stream_hold gpu_stub_stream_hold
#define cca_sim_stream_release gpu_stub_stream_release
#define cca_sim_fail gpu_stub_fail
#define cca_sim_fail_times gpu_stub_fail_times
#define cca_sim_fail_nth gpu_stub_fail_nth
#define cca_sim_fail_nth_left gpu_stub_fail_nth_left
#define cca_sim_calls gpu_stub_calls
#define cca_sim_set_latency_ns gpu_stub_set_latency_ns
#define cca_sim_used_bytes gpu_stub_used_bytes
#define cca_sim_live_allocations gpu_stub_live_allocations
#define cca_sim_api_name gpu_stub_api_name
#define cca_sim_device_syncs gpu_stub_device_syncs
#endif
#endif
