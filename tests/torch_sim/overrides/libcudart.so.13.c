/* Stand-in libcudart.so.13 (test infrastructure): what the simulator does not
 * serve because no allocator or framework can observe it: a fat binary's
 * registration (the kernels never run) and <<<>>>'s launch configuration.
 * Every other runtime call torch makes is libcca_sim.so's. */
#include <stddef.h>
#define EXPORT __attribute__((visibility("default")))

static void *fatbin_handle[4];

EXPORT void **__cudaRegisterFatBinary(void *fatCubin)
{
    (void)fatCubin;
    return fatbin_handle;
}
EXPORT void __cudaRegisterFatBinaryEnd(void **h) { (void)h; }
EXPORT void __cudaUnregisterFatBinary(void **h) { (void)h; }
EXPORT void __cudaRegisterFunction(void **h, const char *hostFun, char *deviceFun, const char *deviceName, int limit,
                                   void *tid, void *bid, void *bDim, void *gDim, int *wSize)
{
    (void)h, (void)hostFun, (void)deviceFun, (void)deviceName, (void)limit, (void)tid, (void)bid, (void)bDim,
        (void)gDim, (void)wSize;
}
EXPORT void __cudaRegisterVar(void **h, char *hostVar, char *deviceAddress, const char *deviceName, int ext,
                              size_t size, int constant, int global)
{
    (void)h, (void)hostVar, (void)deviceAddress, (void)deviceName, (void)ext, (void)size, (void)constant, (void)global;
}

/* The configuration <<<grid, block, shared, stream>>> pushes is popped by
 * the launch stub right after: one per thread is enough. */
typedef struct { unsigned x, y, z; } dim3_t;
static __thread struct { dim3_t grid, block; size_t shared; void *stream; } conf;

EXPORT unsigned __cudaPushCallConfiguration(dim3_t grid, dim3_t block, size_t shared, void *stream)
{
    conf.grid = grid;
    conf.block = block;
    conf.shared = shared;
    conf.stream = stream;
    return 0;
}
EXPORT int __cudaPopCallConfiguration(dim3_t *grid, dim3_t *block, size_t *shared, void *stream)
{
    *grid = conf.grid;
    *block = conf.block;
    *shared = conf.shared;
    *(void **)stream = conf.stream;
    return 0;
}
