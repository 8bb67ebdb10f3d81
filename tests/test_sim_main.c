/* test_sim_main.c - main() for Criterion suites that are built in both modes
 * (simulated device or real runtime): without a usable device they skip,
 * with exit code 77, before Criterion starts. On a machine without a driver
 * the real runtime answers cudaErrorInsufficientDriver. The parent never
 * calls CUDA itself (its children do). */
#include <criterion/criterion.h>
#include <cuda_runtime_api.h>
#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>

/* Asked in a throwaway child: CUDA cannot be used in a process forked
 * after its parent initialised it, and Criterion forks every test. */
static int have_device(void)
{
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        int n = 0;
        cudaError_t e = cudaGetDeviceCount(&n);
        if (e != cudaSuccess || n < 1) {
            printf("SKIP: no CUDA device (cudaGetDeviceCount: %s, %d devices)\n", cudaGetErrorName(e), n);
            fflush(stdout);
            _exit(77);
        }
        _exit(0);
    }
    int status = 0;
    if (pid < 0 || waitpid(pid, &status, 0) < 0) return 0;
    return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

int main(int argc, char *argv[])
{
    if (!have_device()) return 77;
    struct criterion_test_set *tests = criterion_initialize();
    int result = 0;
    if (criterion_handle_args(argc, argv, true)) result = !criterion_run_all_tests(tests);
    criterion_finalize(tests);
    return result;
}
