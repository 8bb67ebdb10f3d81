/* Stand-in libcublasLt.so.13 (test infrastructure). The heuristic query
 * returns exactly one algorithm (zero would send torch down an unfused path
 * with other allocations; more than the caller asked for would overrun its
 * array): a 96-byte cublasLtMatmulHeuristicResult_t, state success, no
 * workspace. */
#include <string.h>
#define EXPORT __attribute__((visibility("default")))
static char handle_token[64];
EXPORT int cublasLtCreate(void **handle) { if (!handle) return 7; *handle = handle_token; return 0; }
EXPORT const char *cublasLtGetStatusString(int status) { return status ? "cuBLASLt stand-in: failure" : "CUBLAS_STATUS_SUCCESS"; }
EXPORT const char *cublasLtGetStatusName(int status) { return status ? "CUBLAS_STATUS_FAILURE" : "CUBLAS_STATUS_SUCCESS"; }
EXPORT unsigned long cublasLtGetVersion(void) { return 130100; }
EXPORT unsigned long cublasLtGetCudartVersion(void) { return 13000; }
EXPORT int cublasLtMatmulAlgoGetHeuristic(void *lt, void *op, void *a, void *b, void *c, void *d, void *pref,
                                          int requested, void *results, int *returned)
{
    (void)lt, (void)op, (void)a, (void)b, (void)c, (void)d, (void)pref;
    if (!returned || requested < 1 || !results) return 7;    /* CUBLAS_STATUS_INVALID_VALUE */
    memset(results, 0, 96);
    *returned = 1;
    return 0;
}
