/* errors.c - status names, the thread-local text of the last failure and
 * the thread's last OOM report (for callers that only see a NULL:
 * framework hooks), and the two runtime queries bindings need (current
 * device, memory info). */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include "internal.h"

static _Thread_local char last_error[1536];
static _Thread_local cca_oom_report_t thread_oom;     /* verdict NONE (0): none since the last OOM failure */

void _cca_errors_thread_oom_set(const cca_oom_report_t *r) { thread_oom = *r; }
const cca_oom_report_t *_cca_errors_thread_oom(void) { return &thread_oom; }


const char *cca_status_string(cca_status_t s)
{
    switch (s) {
    case CCA_OK: return "CCA_OK";
    case CCA_ERROR_INVALID_ARGUMENT: return "CCA_ERROR_INVALID_ARGUMENT";
    case CCA_ERROR_INVALID_POINTER: return "CCA_ERROR_INVALID_POINTER";
    case CCA_ERROR_OUT_OF_MEMORY: return "CCA_ERROR_OUT_OF_MEMORY";
    case CCA_ERROR_INVALID_CONFIG: return "CCA_ERROR_INVALID_CONFIG";
    case CCA_ERROR_CUDA: return "CCA_ERROR_CUDA";
    case CCA_ERROR_IO: return "CCA_ERROR_IO";
    case CCA_ERROR_CORRUPTED: return "CCA_ERROR_CORRUPTED";
    }
    return "unknown cca status";
}

const char *cca_last_error_string(void) { return last_error; }

cca_status_t _cca_errors_fail(cca_status_t s, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(last_error, sizeof last_error, fmt, ap);
    va_end(ap);
    if (s == CCA_ERROR_OUT_OF_MEMORY) thread_oom.verdict = CCA_OOM_NONE;   /* an allocation's report follows */
    return s;
}

cca_status_t _cca_errors_fail_cuda(int e, const char *fmt, ...)
{
    /* cudaErrorInsufficientDriver is also what a runtime without any driver
     * says; cudaErrorSystemDriverMismatch follows a driver upgrade without a
     * reboot. Both name the other cause too. */
    const char *lead = e == cudaErrorNoDevice || e == cudaErrorStubLibrary ? "no CUDA driver or GPU found: "
                       : e == cudaErrorInsufficientDriver || e == cudaErrorSystemDriverMismatch
                           ? "no CUDA driver or GPU found (or a driver older than, or not matching, this CUDA runtime): "
                           : "";
    size_t at = strlen(lead);
    memcpy(last_error, lead, at);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(last_error + at, sizeof last_error - at, fmt, ap);
    va_end(ap);
    return CCA_ERROR_CUDA;
}

/* Adds a line to this thread's last error text (an OOM's report, so that
 * callers who only see a NULL can read it); cut to fit. */
void _cca_errors_append(const char *text)
{
    size_t n = strlen(last_error);
    if (n + 1 < sizeof last_error) snprintf(last_error + n, sizeof last_error - n, "\n%s", text);
}

void _cca_errors_clear_text(void) { last_error[0] = 0; }

/* Clears an error cca caused and handled from the runtime's last-error slot. */
void _cca_errors_clear(void) { (void)cudaGetLastError(); }

cca_status_t cca_current_device(int *device)
{
    if (!device) return _cca_errors_fail(CCA_ERROR_INVALID_ARGUMENT, "cca_current_device: device is NULL");
    cudaError_t e = cudaGetDevice(device);
    if (e == cudaSuccess) return CCA_OK;
    _cca_errors_clear();
    return _cca_errors_fail_cuda(e, "cca_current_device: cudaGetDevice failed: %s", cudaGetErrorName(e));
}

cca_status_t cca_mem_get_info(int device, size_t *free_bytes, size_t *total_bytes)
{
    if (!free_bytes || !total_bytes) return _cca_errors_fail(CCA_ERROR_INVALID_ARGUMENT, "cca_mem_get_info: an output is NULL");
    int cur = -1;
    cudaError_t e = cudaGetDevice(&cur);
    bool switched = false;
    if (e == cudaSuccess && cur != device) switched = (e = cudaSetDevice(device)) == cudaSuccess;
    if (e == cudaSuccess) e = cudaMemGetInfo(free_bytes, total_bytes);
    for (int tries = 0; switched && tries < 3; tries++) {
        if (cudaSetDevice(cur) == cudaSuccess) break;
        (void)cudaGetLastError();
    }
    if (e == cudaSuccess) return CCA_OK;
    _cca_errors_clear();
    if (e == cudaErrorInvalidDevice)
        return _cca_errors_fail(CCA_ERROR_INVALID_ARGUMENT, "cca_mem_get_info(%d): %s", device, cudaGetErrorName(e));
    return _cca_errors_fail_cuda(e, "cca_mem_get_info(%d): %s", device, cudaGetErrorName(e));
}
