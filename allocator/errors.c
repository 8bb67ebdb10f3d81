/* errors.c - status names and the thread-local text of the last failure,
 * for callers that only see a NULL (framework hooks). */
#include <stdarg.h>
#include <stdio.h>
#include "internal.h"

static _Thread_local char last_error[512];

const char *cca_status_string(cca_status_t s)
{
    switch (s) {
    case CCA_OK: return "CCA_OK";
    case CCA_ERROR_INVALID_ARGUMENT: return "CCA_ERROR_INVALID_ARGUMENT";
    case CCA_ERROR_INVALID_POINTER: return "CCA_ERROR_INVALID_POINTER";
    case CCA_ERROR_OUT_OF_MEMORY: return "CCA_ERROR_OUT_OF_MEMORY";
    case CCA_ERROR_INVALID_CONFIG: return "CCA_ERROR_INVALID_CONFIG";
    case CCA_ERROR_CUDA: return "CCA_ERROR_CUDA";
    }
    return "unknown cca status";
}

const char *cca_last_error_string(void) { return last_error; }

cca_status_t _cca_fail(cca_status_t s, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(last_error, sizeof last_error, fmt, ap);
    va_end(ap);
    return s;
}

/* Clears an error cca caused and handled from the runtime's last-error slot. */
void _cca_clear_error(void) { (void)cudaGetLastError(); }
