/* ops_error.c - the reason of the calling thread's last BENCH_ERR, set by
 * the allocator wrappers (peers report CUDA error names through it). */
#include "alloc_ops.h"

#include <stdarg.h>
#include <stdio.h>

static _Thread_local char last_error[160];

void bench_ops_set_error(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(last_error, sizeof last_error, fmt, ap);
    va_end(ap);
}

const char *bench_ops_error(void)
{
    return last_error;
}
