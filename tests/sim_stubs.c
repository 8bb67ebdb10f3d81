/* sim_stubs.c - the simulator's controls in suites built against the real
 * runtime (-Ddevice=cuda): a real GPU cannot be reset, held, sized or made
 * to fail on cue, so a test that reaches such a control skips there (it
 * runs in full on the simulated device). Resetting is a no-op: every test
 * makes its own allocator. */
#include "crit.h"
#include "cca_sim.h"
#include "sim_as_gpu.h"   /* in the GPU-like builds on the simulator: the stubs under other names */

#define NEEDS_SIM(what) cr_skip_test("needs the simulated device (%s)", what)

void cca_sim_reset(void) {}
void cca_sim_set_device_count(int n) { (void)n; NEEDS_SIM("cca_sim_set_device_count"); }
void cca_sim_set_capacity(int device, size_t bytes) { (void)device; (void)bytes; NEEDS_SIM("cca_sim_set_capacity"); }
void cca_sim_stream_hold(cudaStream_t s) { (void)s; NEEDS_SIM("cca_sim_stream_hold"); }
void cca_sim_stream_release(cudaStream_t s) { (void)s; NEEDS_SIM("cca_sim_stream_release"); }
void cca_sim_fail(cca_sim_api_t api, unsigned long after, cudaError_t err)
{
    (void)api; (void)after; (void)err;
    NEEDS_SIM("cca_sim_fail");
}
void cca_sim_fail_times(cca_sim_api_t api, unsigned long after, unsigned long times, cudaError_t err)
{
    (void)api; (void)after; (void)times; (void)err;
    NEEDS_SIM("cca_sim_fail_times");
}
void cca_sim_fail_nth(unsigned long k, cudaError_t err) { (void)k; (void)err; NEEDS_SIM("cca_sim_fail_nth"); }
unsigned long cca_sim_fail_nth_left(void) { NEEDS_SIM("cca_sim_fail_nth_left"); return 0; }
unsigned long cca_sim_calls(cca_sim_api_t api) { (void)api; NEEDS_SIM("cca_sim_calls"); return 0; }
void cca_sim_set_latency_ns(cca_sim_api_t api, unsigned long ns) { (void)api; (void)ns; NEEDS_SIM("cca_sim_set_latency_ns"); }
size_t cca_sim_used_bytes(int device) { (void)device; NEEDS_SIM("cca_sim_used_bytes"); return 0; }
unsigned long cca_sim_live_allocations(int device) { (void)device; NEEDS_SIM("cca_sim_live_allocations"); return 0; }
const char *cca_sim_api_name(cca_sim_api_t api) { (void)api; return "?"; }
unsigned long cca_sim_device_syncs(int device) { (void)device; NEEDS_SIM("cca_sim_device_syncs"); return 0; }
