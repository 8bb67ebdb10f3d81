/* test_stress.c - many threads on own and shared streams; the counters and
 * the consistency walk must still agree at the end. */
#include "common.h"
#include "stress.h"

Test(stress, threads_on_own_and_shared_streams, .timeout = 120)
{
    cca_sim_reset();
    cr_assert_eq(run_stress(4, 20000), 0);
    cr_assert_eq(cca_sim_live_allocations(0), 0);
    if (__lsan_do_recoverable_leak_check) cr_assert_eq(__lsan_do_recoverable_leak_check(), 0);
}
