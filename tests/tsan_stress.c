/* tsan_stress.c - the stress test as a plain program, for ThreadSanitizer
 * (Criterion cannot start under TSan). */
#include <stdio.h>
#include "cca_sim.h"
#include "stress.h"

int main(void)
{
    cca_sim_reset();
    int failures = run_stress(4, 5000);
    failures += cca_sim_live_allocations(0) != 0;
    failures += run_handoff(20, 4, 200);
    failures += cca_sim_live_allocations(0) != 0;
    failures += run_accounting_churn(3, 4000);
    failures += cca_sim_live_allocations(0) != 0;
    failures += run_round_robin(3, 8, 20000);
    failures += cca_sim_live_allocations(0) != 0;
    printf("%d passed, %d failed\n", failures == 0, failures != 0);
    return failures != 0;
}
