/* Stand-in libcublas.so.13 (test infrastructure): calls succeed and compute
 * nothing; what a caller reads back is filled in. */
#define EXPORT __attribute__((visibility("default")))
static char handle_token[64];
EXPORT int cublasCreate_v2(void **handle) { if (!handle) return 7; *handle = handle_token; return 0; }
EXPORT const char *cublasGetStatusString(int status) { return status ? "cuBLAS stand-in: failure" : "CUBLAS_STATUS_SUCCESS"; }
EXPORT const char *cublasGetStatusName(int status) { return status ? "CUBLAS_STATUS_FAILURE" : "CUBLAS_STATUS_SUCCESS"; }
EXPORT int cublasGetMathMode(void *handle, int *mode) { (void)handle; if (mode) *mode = 0; return 0; }
EXPORT int cublasGetPointerMode_v2(void *handle, int *mode) { (void)handle; if (mode) *mode = 0; return 0; }
EXPORT int cublasGetStream_v2(void *handle, void **stream) { (void)handle; if (stream) *stream = 0; return 0; }
EXPORT int cublasGetProperty(int type, int *value) { if (!value) return 7; *value = type == 0 ? 13 : type == 1 ? 1 : 0; return 0; }
EXPORT int cublasGetVersion_v2(void *handle, int *v) { (void)handle; if (v) *v = 130100; return 0; }
