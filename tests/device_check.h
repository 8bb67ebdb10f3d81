/* device_check.h - whether a CUDA device is usable, asked in a throwaway
 * child: CUDA cannot be used in a process forked after its parent
 * initialised it, and the test runners fork every test. Prints the reason
 * when there is none. */
#ifndef CCA_DEVICE_CHECK_H
#define CCA_DEVICE_CHECK_H

#include <cuda_runtime_api.h>
#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>

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

#endif
