/* test_sim_framework.c - the runtime and driver calls a framework's start-up
 * and compute path make (sim_framework.c): device properties and
 * attributes, versions, stream priorities, capture queries, peers, pointer
 * and function attributes, occupancy, kernels, memsets and copies as
 * stream-ordered work, pinned host memory, the driver's device and context
 * queries and its unsupported calls; each counted and faultable. */
#include <cca_sim.h>
#include <cuda.h>
#include <cudaTypedefs.h>
#include <cuda_runtime_api.h>

#include <stdlib.h>
#include <string.h>

#include "test_sim_util.h"

/* the runtime exports it; the header names it only under some macros */
extern cudaError_t cudaGetDeviceProperties_v2(struct cudaDeviceProp *prop, int device);

static void setup(void) { cca_sim_reset(); }

TestSuite(sim_framework, .init = setup);

/* A "kernel": the simulator never calls it, a launch only needs its address. */
static void stub_kernel(void) {}
#define KERNEL ((const void *)(uintptr_t)stub_kernel)

static const dim3 ONE = { 1, 1, 1 };

static cudaError_t launch_on(cudaStream_t s, unsigned threads)
{
    dim3 block = { threads, 1, 1 };
    return cudaLaunchKernel(KERNEL, ONE, block, NULL, 0, s);
}

static cudaStream_t new_stream(unsigned flags)
{
    cudaStream_t s = NULL;
    CUDA_OK(cudaStreamCreateWithFlags(&s, flags));
    cr_assert_neq(s, NULL);
    return s;
}

static cudaEvent_t new_event(void)
{
    cudaEvent_t e = NULL;
    CUDA_OK(cudaEventCreate(&e));
    return e;
}

#define PENDING(e) cr_assert_eq(cudaEventQuery(e), cudaErrorNotReady, "%s should be pending", #e)
#define DONE(e)    cr_assert_eq(cudaEventQuery(e), cudaSuccess, "%s should be complete", #e)

static void *entry(const char *symbol)
{
    void *fn = (void *)1;
    enum cudaDriverEntryPointQueryResult st = cudaDriverEntryPointVersionNotSufficent;
    CUDA_OK(cudaGetDriverEntryPointByVersion(symbol, &fn, CUDA_VERSION, cudaEnableDefault, &st));
    cr_assert_eq(st, cudaDriverEntryPointSuccess, "%s not found", symbol);
    cr_assert_neq(fn, NULL, "%s", symbol);
    return fn;
}

/* ---- properties and attributes ------------------------------------ */

Test(sim_framework, device_properties_describe_an_sm90_of_the_set_capacity)
{
    cca_sim_set_capacity(0, 24 * GiB);
    struct cudaDeviceProp p;
    memset(&p, 0x5a, sizeof p);
    CUDA_OK(cudaGetDeviceProperties(&p, 0));
    cr_assert_eq(p.major, 9);
    cr_assert_eq(p.minor, 0);
    cr_assert_eq(p.multiProcessorCount, 132);
    cr_assert_eq(p.totalGlobalMem, 24 * GiB);
    cr_assert_eq(p.warpSize, 32);
    cr_assert_eq(p.maxThreadsPerBlock, 1024);
    cr_assert_eq(p.maxThreadsPerMultiProcessor, 2048);
    cr_assert_eq(p.unifiedAddressing, 1);
    cr_assert_eq(p.pciBusID, 1);
    cr_assert(memchr(p.name, '\0', sizeof p.name) != NULL, "the name is a string");
    cr_assert_eq(strncmp(p.name, "cca simulated device 0", sizeof p.name), 0, "name \"%.32s\"", p.name);

    cca_sim_set_device_count(2);
    cca_sim_set_capacity(1, 40 * GiB);
    struct cudaDeviceProp q;
    CUDA_OK(cudaGetDeviceProperties(&q, 1));
    cr_assert_eq(q.totalGlobalMem, 40 * GiB, "each device its own capacity");
    cr_assert_eq(q.pciBusID, 2);
    cr_assert_neq(memcmp(p.uuid.bytes, q.uuid.bytes, sizeof p.uuid.bytes), 0, "distinct UUIDs");
    CUDA_OK(cudaGetDeviceProperties(&p, 0));
    cr_assert_eq(p.totalGlobalMem, 24 * GiB);
    cr_assert_eq(cudaGetLastError(), cudaSuccess);
}

Test(sim_framework, device_properties_bad_arguments)
{
    struct cudaDeviceProp p;
    memset(&p, 0x5a, sizeof p);
    cr_assert_eq(cudaGetDeviceProperties(&p, 1), cudaErrorInvalidDevice, "one device only");
    cr_assert_eq(cudaGetLastError(), cudaErrorInvalidDevice);
    cr_assert_eq(cudaGetDeviceProperties(&p, -1), cudaErrorInvalidDevice);
    cr_assert_eq(p.major, 0x5a5a5a5a, "a failed call writes nothing");
    cr_assert_eq(cudaGetDeviceProperties(NULL, 0), cudaErrorInvalidValue);
    cr_assert_eq(cudaGetLastError(), cudaErrorInvalidValue);
    cr_assert_eq(cca_sim_calls(CCA_SIM_GET_DEVICE_PROPERTIES), 3, "failed calls count too");
}

Test(sim_framework, device_attributes_agree_with_properties)
{
    cca_sim_set_capacity(0, 16 * GiB);
    struct cudaDeviceProp p;
    CUDA_OK(cudaGetDeviceProperties(&p, 0));
    static const struct { enum cudaDeviceAttr a; const char *name; } attrs[] = {
        { cudaDevAttrComputeCapabilityMajor, "major" },
        { cudaDevAttrComputeCapabilityMinor, "minor" },
        { cudaDevAttrMultiProcessorCount, "multiProcessorCount" },
        { cudaDevAttrMaxThreadsPerBlock, "maxThreadsPerBlock" },
        { cudaDevAttrWarpSize, "warpSize" },
        { cudaDevAttrL2CacheSize, "l2CacheSize" },
        { cudaDevAttrMaxSharedMemoryPerBlockOptin, "sharedMemPerBlockOptin" },
        { cudaDevAttrMaxSharedMemoryPerBlock, "sharedMemPerBlock" },
        { cudaDevAttrMaxBlockDimZ, "maxThreadsDim[2]" },
        { cudaDevAttrMaxGridDimX, "maxGridSize[0]" },
        { cudaDevAttrPciBusId, "pciBusID" },
    };
    long want[] = { p.major, p.minor, p.multiProcessorCount, p.maxThreadsPerBlock, p.warpSize, p.l2CacheSize,
                    (long)p.sharedMemPerBlockOptin, (long)p.sharedMemPerBlock, p.maxThreadsDim[2],
                    p.maxGridSize[0], p.pciBusID };
    for (size_t i = 0; i < sizeof attrs / sizeof attrs[0]; i++) {
        int v = -12345;
        CUDA_OK(cudaDeviceGetAttribute(&v, attrs[i].a, 0));
        cr_assert_eq(v, want[i], "%s: attribute %d, props %ld", attrs[i].name, v, want[i]);
    }
    int v = -1;
    CUDA_OK(cudaDeviceGetAttribute(&v, cudaDevAttrMultiProcessorCount, 0));
    cr_assert_eq(v, 132);
    CUDA_OK(cudaDeviceGetAttribute(&v, cudaDevAttrComputeCapabilityMajor, 0));
    cr_assert_eq(v, 9);
    CUDA_OK(cudaDeviceGetAttribute(&v, cudaDevAttrNumaId, 0));
    cr_assert_eq(v, -1, "no NUMA node: -1 is a value, not an error");
    v = 77;
    CUDA_OK(cudaDeviceGetAttribute(&v, cudaDevAttrTccDriver, 0));
    cr_assert_eq(v, 0, "an attribute the device does not have is 0");
}

Test(sim_framework, device_attribute_bad_arguments)
{
    int v = 77;
    cr_assert_eq(cudaDeviceGetAttribute(&v, cudaDevAttrMax, 0), cudaErrorInvalidValue);
    cr_assert_eq(cudaGetLastError(), cudaErrorInvalidValue);
    cr_assert_eq(cudaDeviceGetAttribute(&v, (enum cudaDeviceAttr)((int)cudaDevAttrMax + 10), 0),
                 cudaErrorInvalidValue);
    cr_assert_eq(cudaDeviceGetAttribute(&v, (enum cudaDeviceAttr)-1, 0), cudaErrorInvalidValue);
    cr_assert_eq(v, 77, "a failed call writes nothing");
    cr_assert_eq(cudaDeviceGetAttribute(&v, cudaDevAttrWarpSize, 1), cudaErrorInvalidDevice);
    cr_assert_eq(cudaDeviceGetAttribute(&v, cudaDevAttrWarpSize, -1), cudaErrorInvalidDevice);
    cr_assert_eq(cudaDeviceGetAttribute(NULL, cudaDevAttrWarpSize, 0), cudaErrorInvalidValue);
    cr_assert_eq(v, 77);
    cr_assert_eq(cca_sim_calls(CCA_SIM_DEVICE_GET_ATTRIBUTE), 6);
}

Test(sim_framework, versions_are_the_headers)
{
    int d = 0, r = 0;
    CUDA_OK(cudaDriverGetVersion(&d));
    CUDA_OK(cudaRuntimeGetVersion(&r));
    cr_assert_eq(d, CUDA_VERSION);
    cr_assert_eq(r, CUDART_VERSION);
    cr_assert_eq(cudaDriverGetVersion(NULL), cudaErrorInvalidValue);
    cr_assert_eq(cudaRuntimeGetVersion(NULL), cudaErrorInvalidValue);
    cr_assert_eq(cudaGetLastError(), cudaErrorInvalidValue);
    cr_assert_eq(cca_sim_calls(CCA_SIM_DRIVER_GET_VERSION), 2);
    cr_assert_eq(cca_sim_calls(CCA_SIM_RUNTIME_GET_VERSION), 2);
}

Test(sim_framework, pci_bus_id)
{
    cca_sim_set_device_count(2);
    char id[32];
    CUDA_OK(cudaDeviceGetPCIBusId(id, sizeof id, 1));
    cr_assert_str_eq(id, "00000000:02:00.0");
    cr_assert_eq(cudaDeviceGetPCIBusId(id, sizeof id, 2), cudaErrorInvalidDevice);
    cr_assert_eq(cudaDeviceGetPCIBusId(NULL, 32, 0), cudaErrorInvalidValue);
    cr_assert_eq(cca_sim_calls(CCA_SIM_DEVICE_GET_PCI_BUS_ID), 3);
}

/* ---- streams: priorities, capture --------------------------------- */

Test(sim_framework, stream_priorities_clamped_to_the_range)
{
    int least = 99, greatest = 99;
    CUDA_OK(cudaDeviceGetStreamPriorityRange(&least, &greatest));
    cr_assert_eq(least, 0);
    cr_assert_eq(greatest, -5);
    CUDA_OK(cudaDeviceGetStreamPriorityRange(NULL, &greatest));   /* either may be NULL */
    CUDA_OK(cudaDeviceGetStreamPriorityRange(&least, NULL));

    static const int asked[] = { -10, -5, -2, 0, 3 }, got[] = { -5, -5, -2, 0, 0 };
    cudaStream_t s[5];
    for (int i = 0; i < 5; i++) {
        CUDA_OK(cudaStreamCreateWithPriority(&s[i], cudaStreamNonBlocking, asked[i]));
        int p = 99;
        CUDA_OK(cudaStreamGetPriority(s[i], &p));
        cr_assert_eq(p, got[i], "priority %d asked: %d, expected %d", asked[i], p, got[i]);
    }
    int p = 99;
    CUDA_OK(cudaStreamGetPriority(NULL, &p));
    cr_assert_eq(p, 0, "the legacy stream has the least priority");
    p = 99;
    CUDA_OK(cudaStreamGetPriority(cudaStreamLegacy, &p));
    cr_assert_eq(p, 0);
    p = 99;
    CUDA_OK(cudaStreamGetPriority(cudaStreamPerThread, &p));
    cr_assert_eq(p, 0);
    cr_assert_eq(cudaStreamGetPriority(s[0], NULL), cudaErrorInvalidValue);
    cr_assert_eq(cudaStreamGetPriority((cudaStream_t)(uintptr_t)0x1234, &p), cudaErrorInvalidResourceHandle);

    /* a slot freed by a high-priority stream comes back at priority 0 */
    CUDA_OK(cudaStreamDestroy(s[0]));
    cudaStream_t plain = new_stream(0);
    CUDA_OK(cudaStreamGetPriority(plain, &p));
    cr_assert_eq(p, 0);

    cr_assert_eq(cca_sim_calls(CCA_SIM_DEVICE_GET_STREAM_PRIORITY_RANGE), 3);
    cr_assert_eq(cca_sim_calls(CCA_SIM_STREAM_CREATE), 6, "WithPriority counts as a stream creation");
    cr_assert_eq(cca_sim_calls(CCA_SIM_STREAM_GET_PRIORITY), 11);
    for (int i = 1; i < 5; i++) CUDA_OK(cudaStreamDestroy(s[i]));
    CUDA_OK(cudaStreamDestroy(plain));
}

Test(sim_framework, stream_create_with_priority_bad_flags)
{
    cudaStream_t s = NULL;
    cr_assert_eq(cudaStreamCreateWithPriority(&s, 0x80, -1), cudaErrorInvalidValue);
    cr_assert_eq(cudaStreamCreateWithPriority(NULL, 0, -1), cudaErrorInvalidValue);
    cr_assert_eq(cudaGetLastError(), cudaErrorInvalidValue);
    cca_sim_fail(CCA_SIM_STREAM_CREATE, 0, cudaErrorMemoryAllocation);
    cr_assert_eq(cudaStreamCreateWithPriority(&s, 0, -1), cudaErrorMemoryAllocation);
    CUDA_OK(cudaStreamCreateWithPriority(&s, 0, -1));
    int p = 0;
    CUDA_OK(cudaStreamGetPriority(s, &p));
    cr_assert_eq(p, -1);
    CUDA_OK(cudaStreamDestroy(s));
}

Test(sim_framework, capture_info_outside_and_during_capture)
{
    cudaStream_t s = new_stream(cudaStreamNonBlocking);
    enum cudaStreamCaptureStatus st = cudaStreamCaptureStatusInvalidated;
    CUDA_OK(cudaStreamGetCaptureInfo(s, &st, NULL, NULL, NULL, NULL, NULL));
    cr_assert_eq(st, cudaStreamCaptureStatusNone);
    st = cudaStreamCaptureStatusInvalidated;
    CUDA_OK(cudaStreamGetCaptureInfo(NULL, &st, NULL, NULL, NULL, NULL, NULL));
    cr_assert_eq(st, cudaStreamCaptureStatusNone, "the legacy stream");

    unsigned long long id1 = 0, id2 = 0;
    cudaGraph_t graph = NULL, g1 = NULL;
    const cudaGraphNode_t *deps = (const cudaGraphNode_t *)&id1;
    size_t ndeps = 99;
    CUDA_OK(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
    CUDA_OK(cudaStreamGetCaptureInfo(s, &st, &id1, &graph, &deps, NULL, &ndeps));
    cr_assert_eq(st, cudaStreamCaptureStatusActive);
    cr_assert_neq(id1, 0);
    cr_assert_neq(graph, NULL);
    cr_assert_eq(deps, NULL);
    cr_assert_eq(ndeps, 0);
    enum cudaStreamCaptureStatus is = cudaStreamCaptureStatusNone;
    CUDA_OK(cudaStreamIsCapturing(s, &is));
    cr_assert_eq(is, st, "agrees with cudaStreamIsCapturing");
    CUDA_OK(cudaStreamEndCapture(s, &g1));
    CUDA_OK(cudaStreamGetCaptureInfo(s, &st, NULL, NULL, NULL, NULL, NULL));
    cr_assert_eq(st, cudaStreamCaptureStatusNone);

    CUDA_OK(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
    CUDA_OK(cudaStreamGetCaptureInfo(s, &st, &id2, NULL, NULL, NULL, NULL));
    cr_assert_eq(st, cudaStreamCaptureStatusActive);
    cr_assert_neq(id2, 0);
    cr_assert_neq(id2, id1, "each capture its own id");
    unsigned long long again = 0;
    CUDA_OK(cudaStreamGetCaptureInfo(s, &st, &again, NULL, NULL, NULL, NULL));
    cr_assert_eq(again, id2, "stable during the capture");
    CUDA_OK(cudaStreamEndCapture(s, &g1));

    cr_assert_eq(cudaStreamGetCaptureInfo(s, NULL, NULL, NULL, NULL, NULL, NULL), cudaErrorInvalidValue);
    cr_assert_eq(cca_sim_calls(CCA_SIM_STREAM_GET_CAPTURE_INFO), 7);
    CUDA_OK(cudaStreamDestroy(s));
}

Test(sim_framework, exchange_capture_mode_swaps_and_rejects_bad_modes)
{
    enum cudaStreamCaptureMode m = cudaStreamCaptureModeRelaxed;
    CUDA_OK(cudaThreadExchangeStreamCaptureMode(&m));
    cr_assert_eq(m, cudaStreamCaptureModeGlobal, "the default");
    m = cudaStreamCaptureModeThreadLocal;
    CUDA_OK(cudaThreadExchangeStreamCaptureMode(&m));
    cr_assert_eq(m, cudaStreamCaptureModeRelaxed, "what was set");
    m = (enum cudaStreamCaptureMode)7;
    cr_assert_eq(cudaThreadExchangeStreamCaptureMode(&m), cudaErrorInvalidValue);
    cr_assert_eq(cudaGetLastError(), cudaErrorInvalidValue);
    cr_assert_eq(m, 7, "left as it was");
    cr_assert_eq(cudaThreadExchangeStreamCaptureMode(NULL), cudaErrorInvalidValue);
    m = cudaStreamCaptureModeGlobal;
    CUDA_OK(cudaThreadExchangeStreamCaptureMode(&m));
    cr_assert_eq(m, cudaStreamCaptureModeThreadLocal, "the bad calls changed nothing");
    cr_assert_eq(cca_sim_calls(CCA_SIM_THREAD_EXCHANGE_CAPTURE_MODE), 5);
}

/* ---- peers, pointers, functions ----------------------------------- */

Test(sim_framework, peer_access_between_two_devices)
{
    cca_sim_set_device_count(2);
    int can = -1;
    CUDA_OK(cudaDeviceCanAccessPeer(&can, 0, 1));
    cr_assert_eq(can, 1);
    CUDA_OK(cudaDeviceCanAccessPeer(&can, 1, 0));
    cr_assert_eq(can, 1);
    CUDA_OK(cudaDeviceCanAccessPeer(&can, 0, 0));
    cr_assert_eq(can, 0, "a device is not its own peer");
    cr_assert_eq(cudaDeviceCanAccessPeer(&can, 0, 2), cudaErrorInvalidDevice);
    cr_assert_eq(cudaDeviceCanAccessPeer(&can, -1, 0), cudaErrorInvalidDevice);
    cr_assert_eq(cudaDeviceCanAccessPeer(NULL, 0, 1), cudaErrorInvalidValue);

    CUDA_OK(cudaDeviceEnablePeerAccess(1, 0));
    cr_assert_eq(cudaDeviceEnablePeerAccess(1, 0), cudaErrorPeerAccessAlreadyEnabled);
    cr_assert_eq(cudaGetLastError(), cudaErrorPeerAccessAlreadyEnabled);
    cr_assert_eq(cudaDeviceEnablePeerAccess(0, 0), cudaErrorInvalidDevice, "the current device");
    cr_assert_eq(cudaDeviceEnablePeerAccess(2, 0), cudaErrorInvalidDevice);
    cr_assert_eq(cudaDeviceEnablePeerAccess(1, 1), cudaErrorInvalidValue, "flags must be 0");
    CUDA_OK(cudaSetDevice(1));
    CUDA_OK(cudaDeviceEnablePeerAccess(0, 0));          /* each direction on its own */
    cr_assert_eq(cudaDeviceEnablePeerAccess(0, 0), cudaErrorPeerAccessAlreadyEnabled);
    cr_assert_eq(cca_sim_calls(CCA_SIM_DEVICE_CAN_ACCESS_PEER), 6);
    cr_assert_eq(cca_sim_calls(CCA_SIM_DEVICE_ENABLE_PEER_ACCESS), 7);

    cca_sim_reset();                                    /* forgets enabled peers */
    cca_sim_set_device_count(2);
    CUDA_OK(cudaDeviceEnablePeerAccess(1, 0));
}

Test(sim_framework, peer_access_on_one_device)
{
    int can = -1;
    CUDA_OK(cudaDeviceCanAccessPeer(&can, 0, 0));
    cr_assert_eq(can, 0);
    cr_assert_eq(cudaDeviceEnablePeerAccess(0, 0), cudaErrorInvalidDevice);
    cr_assert_eq(cudaDeviceEnablePeerAccess(1, 0), cudaErrorInvalidDevice);
}

Test(sim_framework, pointer_attributes_device_host_unregistered)
{
    cca_sim_set_device_count(2);
    char *d0 = NULL, *d1 = NULL;
    CUDA_OK(cudaMalloc((void **)&d0, MiB));
    CUDA_OK(cudaSetDevice(1));
    CUDA_OK(cudaMalloc((void **)&d1, MiB));
    CUDA_OK(cudaSetDevice(0));

    struct cudaPointerAttributes a;
    memset(&a, 0x5a, sizeof a);
    CUDA_OK(cudaPointerGetAttributes(&a, d0));
    cr_assert_eq(a.type, cudaMemoryTypeDevice);
    cr_assert_eq(a.device, 0);
    cr_assert_eq(a.devicePointer, d0);
    cr_assert_eq(a.hostPointer, NULL);
    CUDA_OK(cudaPointerGetAttributes(&a, d0 + 4096 + 3));
    cr_assert_eq(a.type, cudaMemoryTypeDevice, "an interior pointer");
    cr_assert_eq(a.device, 0);
    cr_assert_eq(a.devicePointer, d0 + 4096 + 3);
    CUDA_OK(cudaPointerGetAttributes(&a, d1 + 100));
    cr_assert_eq(a.type, cudaMemoryTypeDevice);
    cr_assert_eq(a.device, 1, "the device whose memory it is, not the current one");

    char *h = NULL;
    CUDA_OK(cudaHostAlloc((void **)&h, 8192, cudaHostAllocDefault));
    cr_assert_neq(h, NULL);
    memset(h, 1, 8192);                                 /* real host memory */
    CUDA_OK(cudaPointerGetAttributes(&a, h));
    cr_assert_eq(a.type, cudaMemoryTypeHost);
    cr_assert_eq(a.hostPointer, h);
    cr_assert_eq(a.device, 0);
    CUDA_OK(cudaPointerGetAttributes(&a, h + 5000));
    cr_assert_eq(a.type, cudaMemoryTypeHost, "an interior pointer of pinned memory");
    cr_assert_eq(a.hostPointer, h + 5000);
    cr_assert_eq(a.devicePointer, h + 5000, "mapped at the same address (unified addressing)");
    CUDA_OK(cudaPointerGetAttributes(&a, h + 8191));
    cr_assert_eq(a.type, cudaMemoryTypeHost, "the last byte");
    CUDA_OK(cudaSetDevice(1));
    CUDA_OK(cudaPointerGetAttributes(&a, h + 8));
    cr_assert_eq(a.type, cudaMemoryTypeHost);
    cr_assert_eq(a.device, 0, "the device current when it was allocated");
    CUDA_OK(cudaSetDevice(0));
    CUDA_OK(cudaPointerGetAttributes(&a, h + 8192));
    cr_assert_eq(a.type, cudaMemoryTypeUnregistered, "one past the end");

    int local = 0;
    CUDA_OK(cudaPointerGetAttributes(&a, &local));
    cr_assert_eq(a.type, cudaMemoryTypeUnregistered);
    cr_assert_eq(a.device, cudaInvalidDeviceId);
    cr_assert_eq(a.devicePointer, NULL);
    void *m = malloc(64);
    CUDA_OK(cudaPointerGetAttributes(&a, m));
    cr_assert_eq(a.type, cudaMemoryTypeUnregistered, "malloc'd memory is not pinned");
    cr_assert_eq(cudaPointerGetAttributes(NULL, d0), cudaErrorInvalidValue);

    cr_assert_eq(cudaFreeHost(m), cudaErrorInvalidValue, "not a cudaHostAlloc result");
    cr_assert_eq(cudaFreeHost(d0), cudaErrorInvalidValue, "a device pointer");
    cr_assert_eq(cudaFreeHost(h + 5000), cudaErrorInvalidValue, "not the base");
    cr_assert_eq(cudaGetLastError(), cudaErrorInvalidValue);
    CUDA_OK(cudaFreeHost(h));
    cr_assert_eq(cudaFreeHost(h), cudaErrorInvalidValue, "freed already");
    CUDA_OK(cudaFreeHost(NULL));
    CUDA_OK(cudaPointerGetAttributes(&a, &local));
    cr_assert_eq(a.type, cudaMemoryTypeUnregistered);
    free(m);
    CUDA_OK(cudaFree(d0));
    CUDA_OK(cudaFree(d1));
    cr_assert_eq(cca_sim_calls(CCA_SIM_POINTER_GET_ATTRIBUTES), 12);
    cr_assert_eq(cca_sim_calls(CCA_SIM_HOST_ALLOC), 1);
    cr_assert_eq(cca_sim_calls(CCA_SIM_FREE_HOST), 6);
    NO_LEAKS();
}

Test(sim_framework, malloc_host_is_pinned_host_memory)
{
    void *h = NULL;
    CUDA_OK(cudaMallocHost(&h, 100));
    cr_assert_eq((uintptr_t)h % 4096, 0);
    struct cudaPointerAttributes a;
    CUDA_OK(cudaPointerGetAttributes(&a, h));
    cr_assert_eq(a.type, cudaMemoryTypeHost);
    cr_assert_eq(cudaHostAlloc(&h, 16, 0x100), cudaErrorInvalidValue, "unknown flags");
    cr_assert_eq(cudaMallocHost(NULL, 16), cudaErrorInvalidValue);
    cr_assert_eq(cca_sim_live_allocations(0), 0, "no device memory");
    cr_assert_eq(cca_sim_used_bytes(0), 0);
    CUDA_OK(cudaFreeHost(h));
    cr_assert_eq(cca_sim_calls(CCA_SIM_HOST_ALLOC), 3);
    NO_LEAKS();
}

Test(sim_framework, function_attributes_and_occupancy)
{
    struct cudaFuncAttributes fa;
    memset(&fa, 0x5a, sizeof fa);
    CUDA_OK(cudaFuncGetAttributes(&fa, KERNEL));
    cr_assert_eq(fa.binaryVersion, 90);
    cr_assert_eq(fa.ptxVersion, 90);
    cr_assert_eq(fa.maxThreadsPerBlock, 1024);
    cr_assert_eq(fa.sharedSizeBytes, 0);
    cr_assert_eq(cudaFuncGetAttributes(NULL, KERNEL), cudaErrorInvalidValue);
    cr_assert_eq(cudaFuncGetAttributes(&fa, NULL), cudaErrorInvalidDeviceFunction);
    CUDA_OK(cudaFuncSetAttribute(KERNEL, cudaFuncAttributeMaxDynamicSharedMemorySize, 100 << 10));
    cr_assert_eq(cudaFuncSetAttribute(KERNEL, cudaFuncAttributeMax, 0), cudaErrorInvalidValue);

    int n = -1;
    CUDA_OK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&n, KERNEL, 256, 0));
    cr_assert_eq(n, 8);
    CUDA_OK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&n, KERNEL, 1024, 0));
    cr_assert_eq(n, 2);
    CUDA_OK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&n, KERNEL, 32, 0));
    cr_assert_eq(n, 32, "at most 32 blocks on a multiprocessor");
    CUDA_OK(cudaOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(&n, KERNEL, 256, 100 << 10, 0));
    cr_assert_eq(n, 2, "228 KiB of shared memory holds two blocks of 100 KiB");
    n = -1;
    cr_assert_eq(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&n, KERNEL, 0, 0), cudaErrorInvalidValue);
    cr_assert_eq(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&n, KERNEL, 2048, 0), cudaErrorInvalidValue);
    cr_assert_eq(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&n, KERNEL, -256, 0), cudaErrorInvalidValue);
    cr_assert_eq(cudaGetLastError(), cudaErrorInvalidValue);
    cr_assert_eq(n, -1, "a failed call writes nothing");
    cr_assert_eq(cudaOccupancyMaxActiveBlocksPerMultiprocessor(NULL, KERNEL, 256, 0), cudaErrorInvalidValue);
    cr_assert_eq(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&n, NULL, 256, 0), cudaErrorInvalidDeviceFunction);
    cr_assert_eq(cca_sim_calls(CCA_SIM_FUNC_GET_ATTRIBUTES), 3);
    cr_assert_eq(cca_sim_calls(CCA_SIM_FUNC_SET_ATTRIBUTE), 2);
    cr_assert_eq(cca_sim_calls(CCA_SIM_OCCUPANCY), 9);
}

/* ---- kernels, memsets, copies: stream-ordered work ------------------ */

Test(sim_framework, launch_is_pending_on_a_held_stream)
{
    cudaStream_t s = new_stream(0);
    cudaEvent_t e = new_event();
    cca_sim_stream_hold(s);
    CUDA_OK(launch_on(s, 256));
    CUDA_OK(cudaEventRecord(e, s));
    PENDING(e);
    cr_assert_eq(cudaStreamQuery(s), cudaErrorNotReady);
    cca_sim_stream_release(s);
    DONE(e);
    CUDA_OK(cudaStreamQuery(s));
    cr_assert_eq(cca_sim_calls(CCA_SIM_LAUNCH_KERNEL), 1);
    CUDA_OK(cudaEventDestroy(e));
    CUDA_OK(cudaStreamDestroy(s));
}

/* The launch is an item of its stream: one on the legacy stream waits for
 * a held blocking stream, and a blocking stream's later work waits for it;
 * without the launch that work would be complete at once. */
Test(sim_framework, launch_on_the_legacy_stream_is_ordered_work)
{
    cudaStream_t held = new_stream(0), b = new_stream(0);
    cudaEvent_t before = new_event(), after = new_event();
    cca_sim_stream_hold(held);
    CUDA_OK(cudaEventRecord(before, b));
    DONE(before);                                       /* the legacy stream has no work yet */
    CUDA_OK(launch_on(NULL, 128));
    CUDA_OK(cudaEventRecord(after, b));
    PENDING(after);
    cca_sim_stream_release(held);
    DONE(after);
    CUDA_OK(cudaEventDestroy(before));
    CUDA_OK(cudaEventDestroy(after));
    CUDA_OK(cudaStreamDestroy(held));
    CUDA_OK(cudaStreamDestroy(b));
}

Test(sim_framework, memset_and_copy_on_the_legacy_stream_are_ordered_work)
{
    char *d = NULL;
    CUDA_OK(cudaMalloc((void **)&d, 4096));
    cudaStream_t held = new_stream(0), b = new_stream(0);
    cudaEvent_t e1 = new_event(), e2 = new_event();
    cca_sim_stream_hold(held);
    CUDA_OK(cudaMemsetAsync(d, 0, 4096, NULL));
    CUDA_OK(cudaEventRecord(e1, b));
    PENDING(e1);
    cca_sim_stream_release(held);
    DONE(e1);
    cca_sim_stream_hold(held);
    CUDA_OK(cudaMemcpyAsync(d + 2048, d, 1024, cudaMemcpyDeviceToDevice, NULL));
    CUDA_OK(cudaEventRecord(e2, b));
    PENDING(e2);
    cca_sim_stream_release(held);
    DONE(e2);
    CUDA_OK(cudaEventDestroy(e1));
    CUDA_OK(cudaEventDestroy(e2));
    CUDA_OK(cudaStreamDestroy(held));
    CUDA_OK(cudaStreamDestroy(b));
    CUDA_OK(cudaFree(d));
}

Test(sim_framework, launch_bad_configurations)
{
    dim3 big = { 2048, 1, 1 }, cube = { 16, 16, 8 }, zero = { 0, 1, 1 }, ok = { 32, 32, 1 };
    cr_assert_eq(cudaLaunchKernel(KERNEL, ONE, big, NULL, 0, NULL), cudaErrorInvalidConfiguration);
    cr_assert_eq(cudaGetLastError(), cudaErrorInvalidConfiguration);
    cr_assert_eq(cudaLaunchKernel(KERNEL, ONE, cube, NULL, 0, NULL), cudaErrorInvalidConfiguration,
                 "2048 threads in three dimensions");
    cr_assert_eq(cudaLaunchKernel(KERNEL, zero, ONE, NULL, 0, NULL), cudaErrorInvalidConfiguration, "empty grid");
    cr_assert_eq(cudaLaunchKernel(KERNEL, ONE, zero, NULL, 0, NULL), cudaErrorInvalidConfiguration, "empty block");
    cr_assert_eq(cudaLaunchKernel(NULL, ONE, ONE, NULL, 0, NULL), cudaErrorInvalidDeviceFunction);
    cr_assert_eq(cudaLaunchKernel(KERNEL, ONE, ONE, NULL, 0, (cudaStream_t)(uintptr_t)0x1234),
                 cudaErrorInvalidResourceHandle);
    CUDA_OK(cudaLaunchKernel(KERNEL, ONE, ok, NULL, 0, NULL));    /* 1024 threads: the most */
    cudaLaunchConfig_t cfg = { 0 };
    cfg.gridDim = ONE;
    cfg.blockDim = big;
    cr_assert_eq(cudaLaunchKernelExC(&cfg, KERNEL, NULL), cudaErrorInvalidConfiguration);
    cfg.blockDim = ok;
    CUDA_OK(cudaLaunchKernelExC(&cfg, KERNEL, NULL));
    cr_assert_eq(cudaLaunchKernelExC(NULL, KERNEL, NULL), cudaErrorInvalidValue);
    CUDA_OK(cudaLaunchCooperativeKernel(KERNEL, ONE, ok, NULL, 0, NULL));
    cr_assert_eq(cudaGetLastError(), cudaErrorInvalidValue, "the last failure, not cleared by successes");
    cr_assert_eq(cudaGetLastError(), cudaSuccess);
    cr_assert_eq(cca_sim_calls(CCA_SIM_LAUNCH_KERNEL), 11);
}

Test(sim_framework, launch_during_capture_is_not_run)
{
    cudaStream_t s = new_stream(cudaStreamNonBlocking);
    cca_sim_stream_hold(s);
    CUDA_OK(cudaStreamBeginCapture(s, cudaStreamCaptureModeRelaxed));
    CUDA_OK(launch_on(s, 64));
    cudaGraph_t g = NULL;
    CUDA_OK(cudaStreamEndCapture(s, &g));
    cca_sim_stream_release(s);
    CUDA_OK(cudaStreamQuery(s));
    CUDA_OK(cudaStreamDestroy(s));
}

Test(sim_framework, memset_needs_device_memory)
{
    char *d = NULL;
    CUDA_OK(cudaMalloc((void **)&d, 8192));
    char host[256];
    cudaStream_t s = new_stream(0);
    memset(host, 0x11, sizeof host);
    cr_assert_eq(cudaMemsetAsync(host, 0, sizeof host, s), cudaErrorInvalidValue);
    cr_assert_eq(cudaGetLastError(), cudaErrorInvalidValue);
    cr_assert_eq(host[0], 0x11, "host memory untouched");
    cr_assert_eq(cudaMemset(host, 0, sizeof host), cudaErrorInvalidValue);
    cr_assert_eq(cudaMemsetAsync(NULL, 0, 16, s), cudaErrorInvalidValue);
    CUDA_OK(cudaMemsetAsync(d, 0, 8192, s));
    CUDA_OK(cudaMemsetAsync(d + 4000, 0xff, 100, s));
    CUDA_OK(cudaMemset(d, 0, 8192));
    CUDA_OK(cudaMemsetAsync(host, 0, 0, s));            /* nothing to set */
    cr_assert_eq(cudaMemsetAsync(d + 8192 - 8, 0, 16, s), cudaErrorInvalidValue, "past the allocation's end");
    cr_assert_eq(cca_sim_calls(CCA_SIM_MEMSET), 8);
    CUDA_OK(cudaStreamDestroy(s));
    CUDA_OK(cudaFree(d));
    cr_assert_eq(cudaMemset(d, 0, 16), cudaErrorInvalidValue, "freed memory");
}

/* cuGetErrorString and cuGetErrorName cannot fail: cca_sim_fail_nth passes
 * over them to the next call that can. */
Test(sim_framework, fail_nth_passes_over_the_driver_error_strings)
{
    CUresult (*str)(CUresult, const char **) = (CUresult(*)(CUresult, const char **))entry("cuGetErrorString");
    CUresult (*name)(CUresult, const char **) = (CUresult(*)(CUresult, const char **))entry("cuGetErrorName");
    const char *text = NULL;
    cca_sim_fail_nth(1, cudaErrorLaunchFailure);
    cr_assert_eq(str(CUDA_ERROR_OUT_OF_MEMORY, &text), CUDA_SUCCESS);
    cr_assert_str_eq(text, "out of memory");
    cr_assert_eq(name(CUDA_ERROR_OUT_OF_MEMORY, &text), CUDA_SUCCESS);
    cr_assert_eq(cca_sim_fail_nth_left(), 1, "not counted as a call that can fail");
    int n = 0;
    cr_assert_eq(cudaGetDeviceCount(&n), cudaErrorLaunchFailure, "the next call that can fail takes it");
    cr_assert_eq(cca_sim_fail_nth_left(), 0);
    CUDA_OK(cudaGetDeviceCount(&n));
}

Test(sim_framework, memcpy_to_host_reads_zeros_host_to_host_copies)
{
    char *d = NULL;
    CUDA_OK(cudaMalloc((void **)&d, 4096));
    unsigned char buf[128], src[64];
    memset(buf, 0xab, sizeof buf);
    CUDA_OK(cudaMemcpy(buf, d, 64, cudaMemcpyDeviceToHost));
    for (int i = 0; i < 64; i++) cr_assert_eq(buf[i], 0, "byte %d", i);
    for (int i = 64; i < 128; i++) cr_assert_eq(buf[i], 0xab, "byte %d past the copy", i);

    memset(buf, 0xab, sizeof buf);
    CUDA_OK(cudaMemcpy(buf, d + 1000, 32, cudaMemcpyDefault));   /* inferred from the pointers */
    for (int i = 0; i < 32; i++) cr_assert_eq(buf[i], 0, "byte %d", i);
    cr_assert_eq(buf[32], 0xab);

    for (int i = 0; i < 64; i++) src[i] = (unsigned char)(i * 7 + 1);
    memset(buf, 0xab, sizeof buf);
    CUDA_OK(cudaMemcpy(buf, src, 64, cudaMemcpyHostToHost));
    cr_assert_eq(memcmp(buf, src, 64), 0, "host to host copies");
    cr_assert_eq(buf[64], 0xab);
    memset(buf, 0xab, sizeof buf);
    CUDA_OK(cudaMemcpy(buf + 1, src, 40, cudaMemcpyDefault));
    cr_assert_eq(memcmp(buf + 1, src, 40), 0);
    cr_assert_eq(buf[0], 0xab);

    memset(buf, 0xab, sizeof buf);
    cr_assert_eq(cudaMemcpy(buf, src, 64, cudaMemcpyHostToDevice), cudaErrorInvalidValue,
                 "the destination is not device memory");
    cr_assert_eq(cudaGetLastError(), cudaErrorInvalidValue);
    cr_assert_eq(buf[0], 0xab, "a failed copy writes nothing");
    cr_assert_eq(cudaMemcpy(buf, src, 64, cudaMemcpyDeviceToHost), cudaErrorInvalidValue,
                 "the source is not device memory");
    cr_assert_eq(buf[0], 0xab);
    cr_assert_eq(cudaMemcpy(d, src, 64, cudaMemcpyDeviceToHost), cudaErrorInvalidValue, "the kind reversed");
    cr_assert_eq(cudaMemcpy(buf, d, 64, (enum cudaMemcpyKind)9), cudaErrorInvalidValue);
    cr_assert_eq(cudaMemcpy(NULL, d, 64, cudaMemcpyDeviceToHost), cudaErrorInvalidValue);
    cr_assert_eq(buf[0], 0xab);

    CUDA_OK(cudaMemcpy(d, src, 64, cudaMemcpyHostToDevice));
    CUDA_OK(cudaMemcpy(d + 2048, d, 64, cudaMemcpyDeviceToDevice));
    CUDA_OK(cudaMemcpyAsync(buf, d, 16, cudaMemcpyDeviceToHost, NULL));
    CUDA_OK(cudaStreamSynchronize(NULL));
    cr_assert_eq(buf[0], 0);
    cr_assert_eq(cca_sim_calls(CCA_SIM_MEMCPY), 11);
    cr_assert_eq(cca_sim_calls(CCA_SIM_MEMCPY_ASYNC), 1);
    CUDA_OK(cudaFree(d));
}

Test(sim_framework, memcpy_2d_to_host_zeroes_width_bytes_per_row)
{
    char *d = NULL;
    CUDA_OK(cudaMalloc((void **)&d, 4096));
    unsigned char host[16 * 4];
    memset(host, 0xab, sizeof host);
    cudaStream_t s = new_stream(cudaStreamNonBlocking);
    CUDA_OK(cudaMemcpy2DAsync(host, 16, d, 32, 10, 4, cudaMemcpyDeviceToHost, s));
    CUDA_OK(cudaStreamSynchronize(s));
    for (int r = 0; r < 4; r++)
        for (int c = 0; c < 16; c++)
            cr_assert_eq(host[r * 16 + c], c < 10 ? 0 : 0xab, "row %d byte %d: %#x", r, c, host[r * 16 + c]);
    cr_assert_eq(cudaMemcpy2DAsync(host, 8, d, 32, 10, 4, cudaMemcpyDeviceToHost, s), cudaErrorInvalidValue,
                 "a pitch under the width");
    cr_assert_eq(cudaMemcpy2DAsync(host, 16, host, 16, 10, 4, cudaMemcpyDeviceToHost, s), cudaErrorInvalidValue);
    cr_assert_eq(cca_sim_calls(CCA_SIM_MEMCPY_ASYNC), 3);
    CUDA_OK(cudaStreamDestroy(s));
    CUDA_OK(cudaFree(d));
}

/* A synchronous copy runs on the legacy stream: it waits for the blocking
 * streams' work before it, not for a non-blocking stream's. */
Test(sim_framework, synchronous_copy_waits_for_blocking_streams)
{
    char *d = NULL;
    CUDA_OK(cudaMalloc((void **)&d, 4096));
    cudaStream_t s = new_stream(0), nb = new_stream(cudaStreamNonBlocking);
    cudaEvent_t es = new_event(), enb = new_event();
    cca_sim_stream_hold(s);
    cca_sim_stream_hold(nb);
    CUDA_OK(cudaEventRecord(es, s));
    CUDA_OK(cudaEventRecord(enb, nb));
    PENDING(es);
    PENDING(enb);
    unsigned char buf[8];
    CUDA_OK(cudaMemcpy(buf, d, sizeof buf, cudaMemcpyDeviceToHost));
    DONE(es);
    PENDING(enb);
    cca_sim_stream_release(s);
    cca_sim_stream_release(nb);
    DONE(enb);
    CUDA_OK(cudaEventDestroy(es));
    CUDA_OK(cudaEventDestroy(enb));
    CUDA_OK(cudaStreamDestroy(s));
    CUDA_OK(cudaStreamDestroy(nb));
    CUDA_OK(cudaFree(d));
}

Test(sim_framework, elapsed_time)
{
    cudaStream_t s = new_stream(0);
    cudaEvent_t a = new_event(), b = new_event(), nt = NULL;
    CUDA_OK(cudaEventCreateWithFlags(&nt, cudaEventDisableTiming));
    CUDA_OK(cudaEventRecord(a, s));
    cca_sim_stream_hold(s);
    CUDA_OK(cudaEventRecord(b, s));
    float ms = -1.0f;
    cr_assert_eq(cudaEventElapsedTime(&ms, a, b), cudaErrorNotReady);
    cca_sim_stream_release(s);
    CUDA_OK(cudaEventElapsedTime(&ms, a, b));
    cr_assert_eq(ms, 0.0f);
    CUDA_OK(cudaEventRecord(nt, s));
    cr_assert_eq(cudaEventElapsedTime(&ms, a, nt), cudaErrorInvalidResourceHandle);
    cr_assert_eq(cudaEventElapsedTime(NULL, a, b), cudaErrorInvalidValue);
    cr_assert_eq(cca_sim_calls(CCA_SIM_EVENT_ELAPSED_TIME), 4);
    CUDA_OK(cudaEventDestroy(a));
    CUDA_OK(cudaEventDestroy(b));
    CUDA_OK(cudaEventDestroy(nt));
    CUDA_OK(cudaStreamDestroy(s));
}

/* ---- counting and faults ------------------------------------------ */

Test(sim_framework, each_call_counts)
{
    struct cudaDeviceProp p;
    int v;
    enum cudaStreamCaptureStatus st;
    struct cudaPointerAttributes pa;
    struct cudaFuncAttributes fa;
    char *d = NULL;
    unsigned char buf[16];
    CUDA_OK(cudaMalloc((void **)&d, 4096));
    for (int i = 0; i < 3; i++) {
        CUDA_OK(cudaGetDeviceProperties(&p, 0));
        CUDA_OK(cudaDeviceGetAttribute(&v, cudaDevAttrWarpSize, 0));
        CUDA_OK(cudaDriverGetVersion(&v));
        CUDA_OK(cudaStreamGetCaptureInfo(NULL, &st, NULL, NULL, NULL, NULL, NULL));
        CUDA_OK(cudaPointerGetAttributes(&pa, d));
        CUDA_OK(cudaFuncGetAttributes(&fa, KERNEL));
        CUDA_OK(launch_on(NULL, 32));
        CUDA_OK(cudaMemsetAsync(d, 0, 16, NULL));
        CUDA_OK(cudaMemcpy(buf, d, 16, cudaMemcpyDeviceToHost));
        CUDA_OK(cudaMemcpyAsync(buf, d, 16, cudaMemcpyDeviceToHost, NULL));
    }
    CUDA_OK(cudaGetDeviceProperties_v2(&p, 0));
    CUDA_OK(cudaMemset(d, 0, 16));
    cr_assert_eq(cca_sim_calls(CCA_SIM_GET_DEVICE_PROPERTIES), 4, "cudaGetDeviceProperties_v2 too");
    cr_assert_eq(cca_sim_calls(CCA_SIM_DEVICE_GET_ATTRIBUTE), 3);
    cr_assert_eq(cca_sim_calls(CCA_SIM_DRIVER_GET_VERSION), 3);
    cr_assert_eq(cca_sim_calls(CCA_SIM_RUNTIME_GET_VERSION), 0);
    cr_assert_eq(cca_sim_calls(CCA_SIM_STREAM_GET_CAPTURE_INFO), 3);
    cr_assert_eq(cca_sim_calls(CCA_SIM_POINTER_GET_ATTRIBUTES), 3);
    cr_assert_eq(cca_sim_calls(CCA_SIM_FUNC_GET_ATTRIBUTES), 3);
    cr_assert_eq(cca_sim_calls(CCA_SIM_LAUNCH_KERNEL), 3);
    cr_assert_eq(cca_sim_calls(CCA_SIM_MEMSET), 4, "cudaMemset and cudaMemsetAsync");
    cr_assert_eq(cca_sim_calls(CCA_SIM_MEMCPY), 3);
    cr_assert_eq(cca_sim_calls(CCA_SIM_MEMCPY_ASYNC), 3);
    cr_assert_eq(cca_sim_calls(CCA_SIM_MALLOC), 1);
    cr_assert_eq(cca_sim_calls(CCA_SIM_EVENT_RECORD), 0, "work items are not event records");
    cr_assert_str_eq(cca_sim_api_name(CCA_SIM_GET_DEVICE_PROPERTIES), "cudaGetDeviceProperties");
    cr_assert_str_eq(cca_sim_api_name(CCA_SIM_LAUNCH_KERNEL), "cudaLaunchKernel");
    for (int a = CCA_SIM_GET_DEVICE_PROPERTIES; a < CCA_SIM_API_COUNT; a++) {
        const char *n = cca_sim_api_name((cca_sim_api_t)a);
        cr_assert(n != NULL && strcmp(n, "unknown") != 0, "api %d has a name", a);
    }
    cca_sim_reset();
    cr_assert_eq(cca_sim_calls(CCA_SIM_LAUNCH_KERNEL), 0);
    cr_assert_eq(cca_sim_calls(CCA_SIM_GET_DEVICE_PROPERTIES), 0);
}

Test(sim_framework, launch_fault_fails_once_then_works)
{
    cca_sim_fail(CCA_SIM_LAUNCH_KERNEL, 0, cudaErrorLaunchFailure);
    cr_assert_eq(launch_on(NULL, 256), cudaErrorLaunchFailure);
    cr_assert_eq(cudaGetLastError(), cudaErrorLaunchFailure);
    cr_assert_eq(cudaGetLastError(), cudaSuccess);
    CUDA_OK(launch_on(NULL, 256));
    CUDA_OK(launch_on(NULL, 256));
    cr_assert_eq(cca_sim_calls(CCA_SIM_LAUNCH_KERNEL), 3);

    /* the failed launch is no work: a blocking stream's later work does not wait for it */
    cudaStream_t held = new_stream(0), b = new_stream(0);
    cudaEvent_t e = new_event();
    cca_sim_stream_hold(held);
    cca_sim_fail(CCA_SIM_LAUNCH_KERNEL, 1, cudaErrorLaunchOutOfResources);
    CUDA_OK(launch_on(b, 256));
    cr_assert_eq(launch_on(NULL, 256), cudaErrorLaunchOutOfResources);
    CUDA_OK(cudaEventRecord(e, b));
    DONE(e);
    cca_sim_stream_release(held);
    CUDA_OK(cudaEventDestroy(e));
    CUDA_OK(cudaStreamDestroy(held));
    CUDA_OK(cudaStreamDestroy(b));
}

Test(sim_framework, properties_fault_fails_once_then_works)
{
    struct cudaDeviceProp p;
    cca_sim_fail(CCA_SIM_GET_DEVICE_PROPERTIES, 1, cudaErrorInitializationError);
    CUDA_OK(cudaGetDeviceProperties(&p, 0));
    memset(&p, 0x5a, sizeof p);
    cr_assert_eq(cudaGetDeviceProperties(&p, 0), cudaErrorInitializationError);
    cr_assert_eq(cudaGetLastError(), cudaErrorInitializationError);
    cr_assert_eq(p.major, 0x5a5a5a5a, "the failed call wrote nothing");
    CUDA_OK(cudaGetDeviceProperties(&p, 0));
    cr_assert_eq(p.major, 9);
    cr_assert_eq(cca_sim_calls(CCA_SIM_GET_DEVICE_PROPERTIES), 3);
}

Test(sim_framework, faults_of_other_new_calls)
{
    int v = 0;
    cca_sim_fail(CCA_SIM_DEVICE_GET_ATTRIBUTE, 0, cudaErrorInvalidDevice);
    cr_assert_eq(cudaDeviceGetAttribute(&v, cudaDevAttrWarpSize, 0), cudaErrorInvalidDevice);
    CUDA_OK(cudaDeviceGetAttribute(&v, cudaDevAttrWarpSize, 0));
    cr_assert_eq(v, 32);

    char *d = NULL;
    unsigned char buf[8] = { 0xab };
    CUDA_OK(cudaMalloc((void **)&d, 4096));
    cca_sim_fail(CCA_SIM_MEMCPY, 0, cudaErrorIllegalAddress);
    cr_assert_eq(cudaMemcpy(buf, d, sizeof buf, cudaMemcpyDeviceToHost), cudaErrorIllegalAddress);
    cr_assert_eq(buf[0], 0xab, "the failed copy wrote nothing");
    CUDA_OK(cudaMemcpy(buf, d, sizeof buf, cudaMemcpyDeviceToHost));
    cr_assert_eq(buf[0], 0);

    cca_sim_fail(CCA_SIM_MEMSET, 0, cudaErrorIllegalAddress);
    cr_assert_eq(cudaMemsetAsync(d, 0, 16, NULL), cudaErrorIllegalAddress);
    CUDA_OK(cudaMemsetAsync(d, 0, 16, NULL));

    void *h = NULL;
    cca_sim_fail(CCA_SIM_HOST_ALLOC, 0, cudaErrorMemoryAllocation);
    cr_assert_eq(cudaHostAlloc(&h, 64, 0), cudaErrorMemoryAllocation);
    cr_assert_eq(h, NULL);
    CUDA_OK(cudaHostAlloc(&h, 64, 0));
    CUDA_OK(cudaFreeHost(h));

    cca_sim_fail_nth(1, cudaErrorUnknown);              /* the next call of any API */
    cr_assert_eq(cudaRuntimeGetVersion(&v), cudaErrorUnknown);
    CUDA_OK(cudaRuntimeGetVersion(&v));
    CUDA_OK(cudaFree(d));
    NO_LEAKS();
}

/* ---- the driver ----------------------------------------------------- */

Test(sim_framework, driver_primary_context_and_attributes)
{
    PFN_cuDevicePrimaryCtxGetState_v7000 state = (PFN_cuDevicePrimaryCtxGetState_v7000)entry("cuDevicePrimaryCtxGetState");
    PFN_cuCtxGetCurrent_v4000 current = (PFN_cuCtxGetCurrent_v4000)entry("cuCtxGetCurrent");
    PFN_cuDeviceGetAttribute_v2000 attr = (PFN_cuDeviceGetAttribute_v2000)entry("cuDeviceGetAttribute");

    unsigned flags = 99;
    int active = 0;
    cr_assert_eq(state(0, &flags, &active), CUDA_SUCCESS);
    cr_assert_eq(active, 1);
    cr_assert_eq(flags, 0);
    cr_assert_eq(state(1, &flags, &active), CUDA_ERROR_INVALID_DEVICE);
    cr_assert_eq(state(0, NULL, &active), CUDA_ERROR_INVALID_VALUE);
    cr_assert_eq(cudaGetLastError(), cudaSuccess, "driver calls leave the runtime's last error alone");

    CUcontext c0 = NULL, c1 = NULL;
    cr_assert_eq(current(&c0), CUDA_SUCCESS);
    cr_assert_neq(c0, NULL);
    cca_sim_set_device_count(2);
    CUDA_OK(cudaSetDevice(1));
    cr_assert_eq(current(&c1), CUDA_SUCCESS);
    cr_assert_neq(c1, NULL);
    cr_assert_neq(c1, c0, "one context per device");
    CUcontext p1 = NULL;
    cr_assert_eq(cuDevicePrimaryCtxRetain(&p1, 1), CUDA_SUCCESS);
    cr_assert_eq(p1, c1, "the current context is the device's primary");
    CUDA_OK(cudaSetDevice(0));

    int v = 0;
    cr_assert_eq(attr(&v, CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED, 0), CUDA_SUCCESS);
    cr_assert_eq(v, 1);
    cr_assert_eq(attr(&v, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, 1), CUDA_SUCCESS);
    cr_assert_eq(v, 132);
    cr_assert_eq(attr(&v, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, 0), CUDA_SUCCESS);
    cr_assert_eq(v, 9);
    cr_assert_eq(attr(&v, CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED, 0), CUDA_SUCCESS);
    cr_assert_eq(v, 0);
    cr_assert_eq(attr(&v, CU_DEVICE_ATTRIBUTE_MAX, 0), CUDA_ERROR_INVALID_VALUE);
    cr_assert_eq(attr(&v, CU_DEVICE_ATTRIBUTE_WARP_SIZE, 2), CUDA_ERROR_INVALID_DEVICE);

    size_t total = 0;
    cca_sim_set_capacity(1, 12 * GiB);
    cr_assert_eq(cuDeviceTotalMem(&total, 1), CUDA_SUCCESS);
    cr_assert_eq(total, 12 * GiB);
    int n = 0, dv = -1;
    cr_assert_eq(cuDeviceGetCount(&n), CUDA_SUCCESS);
    cr_assert_eq(n, 2);
    CUdevice dev = -1;
    cr_assert_eq(cuDeviceGet(&dev, 1), CUDA_SUCCESS);
    cr_assert_eq(dev, 1);
    cr_assert_eq(cuDeviceGet(&dev, 2), CUDA_ERROR_INVALID_DEVICE);
    cr_assert_eq(cuInit(0), CUDA_SUCCESS);
    cr_assert_eq(cuDriverGetVersion(&dv), CUDA_SUCCESS);
    cr_assert_eq(dv, CUDA_VERSION);
    cr_assert_eq(cca_sim_calls(CCA_SIM_DRIVER_QUERY), 18);
    cr_assert_eq(cca_sim_calls(CCA_SIM_GET_DRIVER_ENTRY_POINT), 3);
}

Test(sim_framework, driver_unsupported_calls_are_found_and_fail)
{
    PFN_cuMulticastCreate_v12010 mc = (PFN_cuMulticastCreate_v12010)entry("cuMulticastCreate");
    CUmemGenericAllocationHandle h = 0;
    CUmulticastObjectProp prop = { 0 };
    cr_assert_eq(mc(&h, &prop), CUDA_ERROR_NOT_SUPPORTED);
    cr_assert_eq(cca_sim_calls(CCA_SIM_DRIVER_UNSUPPORTED), 1);
    cr_assert_eq(mc(&h, &prop), CUDA_ERROR_NOT_SUPPORTED);
    cr_assert_eq(cca_sim_calls(CCA_SIM_DRIVER_UNSUPPORTED), 2);
    entry("cuGreenCtxCreate");
    entry("cuMemExportToShareableHandle");
    cr_assert_eq(cca_sim_calls(CCA_SIM_DRIVER_UNSUPPORTED), 2, "finding one is no call");

    void *fn = (void *)1;
    enum cudaDriverEntryPointQueryResult st = cudaDriverEntryPointSuccess;
    CUDA_OK(cudaGetDriverEntryPointByVersion("cuNoSuchDriverCall", &fn, CUDA_VERSION, cudaEnableDefault, &st));
    cr_assert_eq(fn, NULL);
    cr_assert_eq(st, cudaDriverEntryPointSymbolNotFound);
    cr_assert_eq(cca_sim_calls(CCA_SIM_GET_DRIVER_ENTRY_POINT), 4);
}

Test(sim_framework, driver_context_push_and_pop_change_the_current_device)
{
    cca_sim_set_device_count(2);
    CUcontext c1 = NULL, c0 = NULL, popped = NULL;
    cr_assert_eq(cuDevicePrimaryCtxRetain(&c1, 1), CUDA_SUCCESS);
    cr_assert_eq(cuDevicePrimaryCtxRetain(&c0, 0), CUDA_SUCCESS);
    int d = -1;
    CUDA_OK(cudaGetDevice(&d));
    cr_assert_eq(d, 0);
    cr_assert_eq(cuCtxPushCurrent(c1), CUDA_SUCCESS);
    CUDA_OK(cudaGetDevice(&d));
    cr_assert_eq(d, 1, "the pushed context's device is current");
    CUdevice cd = -1;
    cr_assert_eq(cuCtxGetDevice(&cd), CUDA_SUCCESS);
    cr_assert_eq(cd, 1);
    cr_assert_eq(cuCtxPushCurrent(c0), CUDA_SUCCESS);
    CUDA_OK(cudaGetDevice(&d));
    cr_assert_eq(d, 0);
    cr_assert_eq(cuCtxPopCurrent(&popped), CUDA_SUCCESS);
    cr_assert_eq(popped, c0);
    CUDA_OK(cudaGetDevice(&d));
    cr_assert_eq(d, 1, "back to the outer push");
    cr_assert_eq(cuCtxPopCurrent(&popped), CUDA_SUCCESS);
    cr_assert_eq(popped, c1);
    CUDA_OK(cudaGetDevice(&d));
    cr_assert_eq(d, 0, "restored");
    int junk = 0;
    cr_assert_eq(cuCtxPushCurrent((CUcontext)(void *)&junk), CUDA_ERROR_INVALID_CONTEXT);
    CUDA_OK(cudaGetDevice(&d));
    cr_assert_eq(d, 0);

    cr_assert_eq(cuCtxSetCurrent(c1), CUDA_SUCCESS);
    CUDA_OK(cudaGetDevice(&d));
    cr_assert_eq(d, 1, "cuCtxSetCurrent sets the current device");
    CUcontext cur = NULL;
    cr_assert_eq(cuCtxGetCurrent(&cur), CUDA_SUCCESS);
    cr_assert_eq(cur, c1);
}

Test(sim_framework, driver_proc_address_agrees_with_the_runtime_entry_point)
{
    void *via_runtime = entry("cuMemCreate"), *via_driver = NULL;
    CUdriverProcAddressQueryResult qs = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
    cr_assert_eq(cuGetProcAddress("cuMemCreate", &via_driver, CUDA_VERSION, CU_GET_PROC_ADDRESS_DEFAULT, &qs),
                 CUDA_SUCCESS);
    cr_assert_eq(qs, CU_GET_PROC_ADDRESS_SUCCESS);
    cr_assert_eq(via_driver, via_runtime);
    void *state = NULL;
    cr_assert_eq(cuGetProcAddress("cuDevicePrimaryCtxGetState", &state, CUDA_VERSION, 0, NULL), CUDA_SUCCESS);
    cr_assert_eq(state, entry("cuDevicePrimaryCtxGetState"));
    void *none = (void *)1;
    cr_assert_eq(cuGetProcAddress("cuNoSuchDriverCall", &none, CUDA_VERSION, 0, &qs), CUDA_ERROR_NOT_FOUND);
    cr_assert_eq(none, NULL);
    cr_assert_eq(qs, CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND);
}

Test(sim_framework, driver_address_range_of_an_interior_pointer)
{
    char *a = NULL, *b = NULL;
    CUDA_OK(cudaMalloc((void **)&a, MiB));
    CUDA_OK(cudaMalloc((void **)&b, 3 * 4096));
    CUdeviceptr base = 0;
    size_t size = 0;
    cr_assert_eq(cuMemGetAddressRange(&base, &size, (CUdeviceptr)(uintptr_t)(a + 12345)), CUDA_SUCCESS);
    cr_assert_eq(base, (CUdeviceptr)(uintptr_t)a);
    cr_assert_eq(size, MiB);
    cr_assert_eq(cuMemGetAddressRange(&base, &size, (CUdeviceptr)(uintptr_t)(b + 3 * 4096 - 1)), CUDA_SUCCESS);
    cr_assert_eq(base, (CUdeviceptr)(uintptr_t)b, "the last byte");
    cr_assert_eq(size, 3 * 4096);
    cr_assert_eq(cuMemGetAddressRange(NULL, &size, (CUdeviceptr)(uintptr_t)a), CUDA_SUCCESS);
    cr_assert_eq(size, MiB);
    int local = 0;
    cr_assert_eq(cuMemGetAddressRange(&base, &size, (CUdeviceptr)(uintptr_t)&local), CUDA_ERROR_NOT_FOUND);
    CUDA_OK(cudaFree(a));
    cr_assert_eq(cuMemGetAddressRange(&base, &size, (CUdeviceptr)(uintptr_t)(a + 12345)), CUDA_ERROR_NOT_FOUND,
                 "freed");
    CUDA_OK(cudaFree(b));
}

Test(sim_framework, driver_faults_come_back_as_cu_results)
{
    cca_sim_fail(CCA_SIM_DRIVER_QUERY, 0, cudaErrorInvalidValue);
    int active = 0;
    unsigned flags = 0;
    cr_assert_eq(cuDevicePrimaryCtxGetState(0, &flags, &active), CUDA_ERROR_INVALID_VALUE);
    cr_assert_eq(active, 0);
    cr_assert_eq(cuDevicePrimaryCtxGetState(0, &flags, &active), CUDA_SUCCESS);
    cr_assert_eq(active, 1);
}

Test(sim_framework, driver_memset_and_write_value)
{
    char *d = NULL;
    CUDA_OK(cudaMalloc((void **)&d, 4096));
    cr_assert_eq(cuMemsetD32Async((CUdeviceptr)(uintptr_t)d, 7, 1024, NULL), CUDA_SUCCESS);
    int local[4];
    cr_assert_eq(cuMemsetD32Async((CUdeviceptr)(uintptr_t)local, 7, 4, NULL), CUDA_ERROR_INVALID_VALUE);
    cr_assert_eq(cudaGetLastError(), cudaSuccess, "a driver call leaves the runtime's last error alone");
    cr_assert_eq(cca_sim_calls(CCA_SIM_MEMSET), 2);
    CUDA_OK(cudaFree(d));
}

/* cca_sim_reset starts a new world for every thread: contexts pushed in the
 * old one are forgotten, and so is the thread's capture mode. */
Test(sim_framework, reset_forgets_pushed_contexts_and_capture_mode)
{
    cca_sim_set_device_count(2);
    CUcontext c0 = NULL, popped = NULL;
    cr_assert_eq(cuDevicePrimaryCtxRetain(&c0, 0), CUDA_SUCCESS);
    CUDA_OK(cudaSetDevice(1));
    cr_assert_eq(cuCtxPushCurrent(c0), CUDA_SUCCESS);   /* the stack holds device 1 */
    enum cudaStreamCaptureMode m = cudaStreamCaptureModeRelaxed;
    CUDA_OK(cudaThreadExchangeStreamCaptureMode(&m));
    cca_sim_reset();                                    /* one device again */
    (void)cuCtxPopCurrent(&popped);                    /* nothing pushed in this world: no device restored */
    int d = -1;
    CUDA_OK(cudaGetDevice(&d));
    cr_assert_eq(d, 0);
    void *p = NULL;
    CUDA_OK(cudaMalloc(&p, 512));
    CUDA_OK(cudaFree(p));
    m = cudaStreamCaptureModeGlobal;
    CUDA_OK(cudaThreadExchangeStreamCaptureMode(&m));
    cr_assert_eq(m, cudaStreamCaptureModeGlobal, "the default again");
}

/* cca_sim_reset_keeping_handles: what a framework's allocator caches across
 * resets (events, streams, virtual memory) stays valid; cudaMalloc results
 * are forgotten as by cca_sim_reset. */
Test(sim_framework, reset_keeping_handles_keeps_streams_events_and_mappings)
{
    typedef CUresult (*create_fn)(CUmemGenericAllocationHandle *, size_t, const CUmemAllocationProp *, unsigned long long);
    typedef CUresult (*reserve_fn)(CUdeviceptr *, size_t, size_t, CUdeviceptr, unsigned long long);
    typedef CUresult (*map_fn)(CUdeviceptr, size_t, size_t, CUmemGenericAllocationHandle, unsigned long long);
    typedef CUresult (*access_fn)(CUdeviceptr, size_t, const CUmemAccessDesc *, size_t);
    create_fn create = (create_fn)entry("cuMemCreate");
    reserve_fn reserve = (reserve_fn)entry("cuMemAddressReserve");
    map_fn map = (map_fn)entry("cuMemMap");
    access_fn access = (access_fn)entry("cuMemSetAccess");
    const size_t g2 = (size_t)2 << 20;
    CUmemAllocationProp prop = { 0 };
    prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    prop.location.id = 0;
    CUmemGenericAllocationHandle h;
    CUdeviceptr va = 0;
    cr_assert_eq(create(&h, g2, &prop, 0), CUDA_SUCCESS);
    cr_assert_eq(reserve(&va, 4 * g2, 0, 0, 0), CUDA_SUCCESS);
    cr_assert_eq(map(va, g2, 0, h, 0), CUDA_SUCCESS);
    CUmemAccessDesc d = { .location = prop.location, .flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE };
    cr_assert_eq(access(va, g2, &d, 1), CUDA_SUCCESS);
    cudaStream_t s = new_stream(0);
    cudaEvent_t e = new_event();
    void *p = NULL;
    CUDA_OK(cudaMalloc(&p, 1 << 20));
    cca_sim_stream_hold(s);
    CUDA_OK(cudaEventRecord(e, s));
    cr_assert_eq(cudaEventQuery(e), cudaErrorNotReady);

    cca_sim_reset_keeping_handles();
    cr_assert_eq(cca_sim_calls(CCA_SIM_MALLOC), 0, "counters start over");
    CUDA_OK(cudaEventQuery(e));                         /* its work complete, the hold gone */
    CUDA_OK(cudaStreamQuery(s));
    CUDA_OK(cudaEventRecord(e, s));
    CUDA_OK(cudaStreamWaitEvent(NULL, e, 0));
    cr_assert_eq(cca_sim_used_bytes(0), g2, "the mapped handle stays held");
    cr_assert_eq(cca_sim_live_handles(0), 1);
    cr_assert(cca_sim_accessible((const void *)va, g2), "the mapping stays");
    CUDA_OK(cudaMemsetAsync((void *)va, 0, g2, s));
    cr_assert_eq(cudaFree(p), cudaErrorInvalidValue, "cudaMalloc results are forgotten");
    cr_assert_eq(cca_sim_live_allocations(0), 0);
    CUDA_OK(cudaEventDestroy(e));

    cca_sim_reset();                                    /* the plain reset forgets them all */
    cr_assert_eq(cca_sim_used_bytes(0), 0);
    cr_assert_eq(cca_sim_live_handles(0), 0);
    cr_assert_eq(cudaStreamQuery(s), cudaErrorInvalidResourceHandle, "the stream kept above is gone");
    cr_assert(!cca_sim_accessible((const void *)va, g2));
}

/* numba-cuda names its devices by UUID (cuDeviceGetUuid_v2, through the
 * NVIDIA bindings' cuGetProcAddress): the 16 bytes the runtime's device
 * properties give, per device. */
Test(sim_framework, device_uuid_is_the_runtimes)
{
    cca_sim_set_device_count(2);
    for (int d = 0; d < 2; d++) {
        CUuuid u;
        cr_assert_eq(cuDeviceGetUuid(&u, d), CUDA_SUCCESS);
        struct cudaDeviceProp p;
        cr_assert_eq(cudaGetDeviceProperties(&p, d), cudaSuccess);
        cr_assert_eq(memcmp(u.bytes, p.uuid.bytes, 16), 0, "device %d", d);
    }
    CUuuid a, b;
    cr_assert_eq(cuDeviceGetUuid(&a, 0), CUDA_SUCCESS);
    cr_assert_eq(cuDeviceGetUuid(&b, 1), CUDA_SUCCESS);
    cr_assert_neq(memcmp(a.bytes, b.bytes, 16), 0, "devices differ");
    cr_assert_eq(cuDeviceGetUuid(&a, 2), CUDA_ERROR_INVALID_DEVICE);
    cr_assert_eq(cuDeviceGetUuid(NULL, 0), CUDA_ERROR_INVALID_VALUE);
    void *fn = NULL;
    CUdriverProcAddressQueryResult q;
    cr_assert_eq(cuGetProcAddress("cuDeviceGetUuid", &fn, CUDA_VERSION, 0, &q), CUDA_SUCCESS);
    cr_assert_eq(fn, (void *)cuDeviceGetUuid);
}

/* CUDA IPC is not simulated, but a binding that looks the driver up by name
 * at start-up (numba's ctypes binding) finds it, failing with
 * CUDA_ERROR_NOT_SUPPORTED - as through cuGetProcAddress. */
Test(sim_framework, ipc_is_found_and_unsupported)
{
    CUipcMemHandle h;
    memset(&h, 0, sizeof h);
    CUdeviceptr p = 0;
    cr_assert_eq(cuIpcGetMemHandle(&h, 0), CUDA_ERROR_NOT_SUPPORTED);
    cr_assert_eq(cuIpcOpenMemHandle(&p, h, 0), CUDA_ERROR_NOT_SUPPORTED);   /* cuda.h: cuIpcOpenMemHandle_v2 */
    cr_assert_eq(cuIpcCloseMemHandle(0), CUDA_ERROR_NOT_SUPPORTED);
    typedef CUresult (*ipc_fn)(void *, void *, unsigned int);
    void *fn = NULL;
    CUdriverProcAddressQueryResult q;
    cr_assert_eq(cuGetProcAddress("cuIpcOpenMemHandle", &fn, CUDA_VERSION, 0, &q), CUDA_SUCCESS);
    cr_assert_eq(((ipc_fn)fn)(NULL, NULL, 0), CUDA_ERROR_NOT_SUPPORTED);
    cr_assert_eq(cca_sim_calls(CCA_SIM_DRIVER_UNSUPPORTED), 4);
}
