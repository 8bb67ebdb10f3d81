/* test_sim_util.h - helpers shared by the simulator's test suites. */
#ifndef TEST_SIM_UTIL_H
#define TEST_SIM_UTIL_H

#include "crit.h"
#include <cuda_runtime_api.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdint.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define GiB ((size_t)1 << 30)
#define MiB ((size_t)1 << 20)

/* Under AddressSanitizer, a leak does not fail a Criterion test by itself:
 * check inside the test body. */
#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/lsan_interface.h>
#define NO_LEAKS() cr_assert_eq(__lsan_do_recoverable_leak_check(), 0, "host memory leaked")
#else
#define NO_LEAKS() ((void)0)
#endif

#define CUDA_OK(call) cr_assert_eq((call), cudaSuccess, "%s failed", #call)

static inline double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void crash_handler(int sig)
{
    (void)sig;
    _exit(42);
}

/* 1 if reading *p crashes (SIGSEGV or SIGBUS), checked in a child process;
 * the child's own handler exits with 42, so that sanitizers' handlers do not
 * turn the fault into another exit status. */
static inline int host_read_crashes(const void *p)
{
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        struct sigaction sa = { 0 };
        sa.sa_handler = crash_handler;
        sigaction(SIGSEGV, &sa, NULL);
        sigaction(SIGBUS, &sa, NULL);
        volatile const char *c = p;
        char v = *c;
        (void)v;
        _exit(0);
    }
    int st = 0;
    if (pid < 0 || waitpid(pid, &st, 0) != pid) return 0;
    if (WIFEXITED(st)) return WEXITSTATUS(st) == 42;
    return WIFSIGNALED(st) && (WTERMSIG(st) == SIGSEGV || WTERMSIG(st) == SIGBUS);
}

/* Run fn(arg) on a new thread and wait for it. */
static inline void run_in_thread(void *(*fn)(void *), void *arg)
{
    pthread_t th;
    cr_assert_eq(pthread_create(&th, NULL, fn, arg), 0);
    cr_assert_eq(pthread_join(th, NULL), 0);
}

#endif
