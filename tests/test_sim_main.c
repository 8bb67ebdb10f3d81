/* test_sim_main.c - main() for Criterion suites that are built in both modes
 * (simulated device or real runtime): without a usable device they skip,
 * with exit code 77, before Criterion starts. On a machine without a driver
 * the real runtime answers cudaErrorInsufficientDriver. The parent never
 * calls CUDA itself (its children do). */
#include <criterion/criterion.h>
#include <cuda_runtime_api.h>
#include <stdio.h>
#include "device_check.h"

int main(int argc, char *argv[])
{
    if (!have_device()) return 77;
    struct criterion_test_set *tests = criterion_initialize();
    int result = 0;
    if (criterion_handle_args(argc, argv, true)) result = !criterion_run_all_tests(tests);
    criterion_finalize(tests);
    return result;
}
