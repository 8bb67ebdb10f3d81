/* sim_framework.c - the runtime and driver calls a framework's start-up and
 * compute path make and an allocator never does (under the simulated
 * device's lock and with its fault, count and latency machinery: the rest of
 * the device is sim_runtime.c, sim_order.c and sim_vmm.c). Found from what
 * torch 2.15 and 2.11 import from libcudart.so.13 and look up in the driver,
 * and from runs of torch on the simulated device.
 *
 * The device these calls describe is an sm_90 GPU (132 multiprocessors, the
 * device's capacity as its memory). Kernels, memsets and copies are
 * stream-ordered work items that touch no device memory: enqueued like an
 * event record (so they are pending on a held stream, and a synchronous copy
 * waits for its stream), validated (a device pointer must be one), and
 * otherwise no-ops. A copy to the host fills the host side with zeros, so a
 * program whose shapes depend on device data (`.item()`, `nonzero()`) takes
 * the same path in every run; a host-to-host copy copies. Pinned host memory
 * (cudaHostAlloc) is real host memory.
 *
 * The driver part: the device and context queries a framework makes at
 * start-up (cuInit, cuDevicePrimaryCtxGetState: active, cuCtxGetCurrent: one
 * context per device, ...), exported under the driver's names and served by
 * cudaGetDriverEntryPointByVersion and cuGetProcAddress; the driver calls
 * the simulated device does not support answer CUDA_ERROR_NOT_SUPPORTED but
 * exist (c10 requires every entry point of its table to be found). */
#include "sim_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SIM_SMS        132
#define SIM_PRIO_LEAST 0
#define SIM_PRIO_MOST  (-5)

/* This thread's driver and capture state, of the world fw_gen (a reset
 * starts a new world: me()'s generation; renewed by fw_me). */
static _Thread_local uint64_t fw_gen;
static _Thread_local int capture_mode;              /* cudaThreadExchangeStreamCaptureMode */
static _Thread_local int ctx_depth;                 /* cuCtxPushCurrent's stack depth (the device it holds) */
static _Thread_local int ctx_stack[8];
static sim_ptrmap_t hosts;                          /* cudaHostAlloc results (dev: the device current then) */
static uint32_t peer_on[MAX_DEVICES];               /* bit p of [d]: d may access p */

/* me(), with this thread's framework state renewed in a new world. */
static tls_t *fw_me(void)
{
    tls_t *t = me();
    if (fw_gen != t->gen) {
        fw_gen = t->gen;
        capture_mode = cudaStreamCaptureModeGlobal;
        ctx_depth = 0;
    }
    return t;
}

/* The start and end of a call that takes the lock (fault, count, last error). */
static cudaError_t rt_begin(cca_sim_api_t api, tls_t **t)
{
    enter(api);
    *t = fw_me();
    lock();
    return sim_fault_now(api);
}

static cudaError_t rt_end(cca_sim_api_t api, tls_t *t, cudaError_t e)
{
    if (!e) fault_ok(api);
    unlock();
    return e ? fail(t, e) : cudaSuccess;
}

/* A call refused before it starts (bad arguments found outside the lock). */
static cudaError_t rt_refuse(cca_sim_api_t api, cudaError_t e)
{
    tls_t *t;
    cudaError_t f = rt_begin(api, &t);
    return rt_end(api, t, f ? f : e);
}

/* cca_sim_reset's part (under the lock). Pinned host memory stays the
 * caller's: forgotten, not freed. */
void sim_framework_reset(void)
{
    sim_map_clear(&hosts);
    memset(peer_on, 0, sizeof peer_on);
}

/* Under the lock: the device whose memory holds addr (a cudaMalloc range or
 * a mapped VMM page), or -1 for host memory. */
static int ptr_device(uintptr_t a)
{
    int n = atomic_load_explicit(&sim_g.ndev, memory_order_relaxed);
    for (int d = 0; d < n; d++)
        for (int r = 0; r < sim_g.dev[d].nranges; r++)
            if (a >= sim_g.dev[d].ranges[r].base && a - sim_g.dev[d].ranges[r].base < sim_g.dev[d].ranges[r].size)
                return d;
    return sim_vmm_device_of(a);
}

/* Under the lock: the cudaHostAlloc result holding addr (its base or any
 * byte inside it), or NULL. */
static const sim_alloc_t *host_alloc_of(uintptr_t a)
{
    if (!hosts.count) return NULL;
    for (size_t i = 0; hosts.slots && i <= hosts.mask; i++) {
        const sim_alloc_t *r = &hosts.slots[i];
        if (r->addr && a >= r->addr && a - r->addr < (r->size ? r->size : 1)) return r;
    }
    return NULL;
}

/* ---- properties and attributes ------------------------------------ */

static void fill_props(struct cudaDeviceProp *p, int dev)
{
    memset(p, 0, sizeof *p);
    snprintf(p->name, sizeof p->name, "cca simulated device %d", dev);
    for (int i = 0; i < 16; i++) p->uuid.bytes[i] = (char)(0xcc ^ (i * 17) ^ dev);
    p->totalGlobalMem = sim_g.dev[dev].capacity;
    p->sharedMemPerBlock = 48 << 10;
    p->regsPerBlock = 65536;
    p->warpSize = 32;
    p->memPitch = 2147483647;
    p->maxThreadsPerBlock = 1024;
    p->maxThreadsDim[0] = 1024; p->maxThreadsDim[1] = 1024; p->maxThreadsDim[2] = 64;
    p->maxGridSize[0] = 2147483647; p->maxGridSize[1] = 65535; p->maxGridSize[2] = 65535;
    p->totalConstMem = 64 << 10;
    p->major = 9;
    p->minor = 0;
    p->textureAlignment = 512;
    p->texturePitchAlignment = 32;
    p->multiProcessorCount = SIM_SMS;
    p->canMapHostMemory = 1;
    p->maxTexture1D = 131072;
    p->surfaceAlignment = 512;
    p->concurrentKernels = 1;
    p->pciBusID = dev + 1;
    p->asyncEngineCount = 2;
    p->unifiedAddressing = 1;
    p->memoryBusWidth = 5120;
    p->l2CacheSize = 50 << 20;
    p->persistingL2CacheMaxSize = 30 << 20;
    p->maxThreadsPerMultiProcessor = 2048;
    p->streamPrioritiesSupported = 1;
    p->globalL1CacheSupported = 1;
    p->localL1CacheSupported = 1;
    p->sharedMemPerMultiprocessor = 228 << 10;
    p->regsPerMultiprocessor = 65536;
    p->managedMemory = 1;
    p->hostNativeAtomicSupported = 0;
    p->concurrentManagedAccess = 1;
    p->computePreemptionSupported = 1;
    p->cooperativeLaunch = 1;
    p->sharedMemPerBlockOptin = 227 << 10;
    p->maxBlocksPerMultiProcessor = 32;
    p->accessPolicyMaxWindowSize = 128 << 20;
    p->reservedSharedMemPerBlock = 1 << 10;
    p->hostRegisterSupported = 1;
    p->memoryPoolsSupported = 1;
    p->memoryPoolSupportedHandleTypes = 1;
    p->ipcEventSupported = 1;
    p->clusterLaunch = 1;
    p->deviceNumaId = -1;
    p->hostNumaId = -1;
}

/* A device attribute (the runtime's and the driver's numbers agree), or -1
 * when the attribute is not one the device answers. */
static long attr_value(int attr, int dev)
{
    struct cudaDeviceProp p;
    fill_props(&p, dev);
    switch (attr) {
    case cudaDevAttrMaxThreadsPerBlock: return p.maxThreadsPerBlock;
    case cudaDevAttrMaxBlockDimX: return p.maxThreadsDim[0];
    case cudaDevAttrMaxBlockDimY: return p.maxThreadsDim[1];
    case cudaDevAttrMaxBlockDimZ: return p.maxThreadsDim[2];
    case cudaDevAttrMaxGridDimX: return p.maxGridSize[0];
    case cudaDevAttrMaxGridDimY: return p.maxGridSize[1];
    case cudaDevAttrMaxGridDimZ: return p.maxGridSize[2];
    case cudaDevAttrMaxSharedMemoryPerBlock: return (long)p.sharedMemPerBlock;
    case cudaDevAttrTotalConstantMemory: return (long)p.totalConstMem;
    case cudaDevAttrWarpSize: return p.warpSize;
    case cudaDevAttrMaxRegistersPerBlock: return p.regsPerBlock;
    case cudaDevAttrClockRate: return 1980000;
    case cudaDevAttrMemoryClockRate: return 2619000;
    case cudaDevAttrMultiProcessorCount: return p.multiProcessorCount;
    case cudaDevAttrCanMapHostMemory: return 1;
    case cudaDevAttrConcurrentKernels: return 1;
    case cudaDevAttrPciBusId: return p.pciBusID;
    case cudaDevAttrAsyncEngineCount: return p.asyncEngineCount;
    case cudaDevAttrUnifiedAddressing: return 1;
    case cudaDevAttrGlobalMemoryBusWidth: return p.memoryBusWidth;
    case cudaDevAttrL2CacheSize: return p.l2CacheSize;
    case cudaDevAttrMaxThreadsPerMultiProcessor: return p.maxThreadsPerMultiProcessor;
    case cudaDevAttrComputeCapabilityMajor: return p.major;
    case cudaDevAttrComputeCapabilityMinor: return p.minor;
    case cudaDevAttrStreamPrioritiesSupported: return 1;
    case cudaDevAttrGlobalL1CacheSupported: return 1;
    case cudaDevAttrLocalL1CacheSupported: return 1;
    case cudaDevAttrMaxSharedMemoryPerMultiprocessor: return (long)p.sharedMemPerMultiprocessor;
    case cudaDevAttrMaxRegistersPerMultiprocessor: return p.regsPerMultiprocessor;
    case cudaDevAttrManagedMemory: return 1;
    case cudaDevAttrConcurrentManagedAccess: return 1;
    case cudaDevAttrComputePreemptionSupported: return 1;
    case cudaDevAttrCooperativeLaunch: return 1;
    case cudaDevAttrMaxSharedMemoryPerBlockOptin: return (long)p.sharedMemPerBlockOptin;
    case cudaDevAttrMaxBlocksPerMultiprocessor: return p.maxBlocksPerMultiProcessor;
    case cudaDevAttrMaxPersistingL2CacheSize: return p.persistingL2CacheMaxSize;
    case cudaDevAttrMaxAccessPolicyWindowSize: return p.accessPolicyMaxWindowSize;
    case cudaDevAttrReservedSharedMemoryPerBlock: return (long)p.reservedSharedMemPerBlock;
    case cudaDevAttrHostRegisterSupported: return 1;
    case cudaDevAttrMemoryPoolsSupported: return 1;
    case cudaDevAttrMemoryPoolSupportedHandleTypes: return 1;
    case cudaDevAttrClusterLaunch: return 1;
    case CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED: return 1;
    case CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED: return 0;
    case cudaDevAttrNumaId: return -1;
    case cudaDevAttrHostNumaId: return -1;
    default: return attr >= 0 && attr < (int)cudaDevAttrMax ? 0 : -2;
    }
}

static cudaError_t get_props(struct cudaDeviceProp *prop, int device)
{
    tls_t *t;
    cudaError_t e = rt_begin(CCA_SIM_GET_DEVICE_PROPERTIES, &t);
    if (!e && !prop) e = cudaErrorInvalidValue;
    if (!e && (device < 0 || device >= atomic_load_explicit(&sim_g.ndev, memory_order_relaxed)))
        e = cudaErrorInvalidDevice;
    if (!e) fill_props(prop, device);
    return rt_end(CCA_SIM_GET_DEVICE_PROPERTIES, t, e);
}

SIM_API cudaError_t cudaGetDeviceProperties(struct cudaDeviceProp *prop, int device) { return get_props(prop, device); }
SIM_API cudaError_t cudaGetDeviceProperties_v2(struct cudaDeviceProp *prop, int device);
cudaError_t cudaGetDeviceProperties_v2(struct cudaDeviceProp *prop, int device) { return get_props(prop, device); }

SIM_API cudaError_t cudaDeviceGetAttribute(int *value, enum cudaDeviceAttr attr, int device)
{
    tls_t *t;
    cudaError_t e = rt_begin(CCA_SIM_DEVICE_GET_ATTRIBUTE, &t);
    if (!e && !value) e = cudaErrorInvalidValue;
    if (!e && (device < 0 || device >= atomic_load_explicit(&sim_g.ndev, memory_order_relaxed)))
        e = cudaErrorInvalidDevice;
    long v = e ? 0 : attr_value((int)attr, device);
    if (!e && v == -2) e = cudaErrorInvalidValue;
    if (!e) *value = (int)v;
    return rt_end(CCA_SIM_DEVICE_GET_ATTRIBUTE, t, e);
}

static cudaError_t version_of(cca_sim_api_t api, int *v, int value)
{
    tls_t *t;
    cudaError_t e = rt_begin(api, &t);
    if (!e && !v) e = cudaErrorInvalidValue;
    if (!e) *v = value;
    return rt_end(api, t, e);
}

SIM_API cudaError_t cudaDriverGetVersion(int *v) { return version_of(CCA_SIM_DRIVER_GET_VERSION, v, CUDA_VERSION); }
SIM_API cudaError_t cudaRuntimeGetVersion(int *v) { return version_of(CCA_SIM_RUNTIME_GET_VERSION, v, CUDART_VERSION); }

SIM_API cudaError_t cudaDeviceGetPCIBusId(char *pciBusId, int len, int device)
{
    tls_t *t;
    cudaError_t e = rt_begin(CCA_SIM_DEVICE_GET_PCI_BUS_ID, &t);
    if (!e && (!pciBusId || len < 13)) e = cudaErrorInvalidValue;
    if (!e && (device < 0 || device >= atomic_load_explicit(&sim_g.ndev, memory_order_relaxed)))
        e = cudaErrorInvalidDevice;
    if (!e) snprintf(pciBusId, (size_t)len, "00000000:%02X:00.0", device + 1);
    return rt_end(CCA_SIM_DEVICE_GET_PCI_BUS_ID, t, e);
}

/* ---- streams: priorities, capture queries ------------------------- */

SIM_API cudaError_t cudaDeviceGetStreamPriorityRange(int *leastPriority, int *greatestPriority)
{
    tls_t *t;
    cudaError_t e = rt_begin(CCA_SIM_DEVICE_GET_STREAM_PRIORITY_RANGE, &t);
    if (!e) {
        if (leastPriority) *leastPriority = SIM_PRIO_LEAST;
        if (greatestPriority) *greatestPriority = SIM_PRIO_MOST;
    }
    return rt_end(CCA_SIM_DEVICE_GET_STREAM_PRIORITY_RANGE, t, e);
}

SIM_API cudaError_t cudaStreamCreateWithPriority(cudaStream_t *pStream, unsigned int flags, int priority)
{
    if (priority > SIM_PRIO_LEAST) priority = SIM_PRIO_LEAST;   /* clamped, as the runtime does */
    if (priority < SIM_PRIO_MOST) priority = SIM_PRIO_MOST;
    return sim_stream_create(pStream, flags, priority);
}

static cudaError_t stream_priority(cudaStream_t stream, int *priority, bool ptsz)
{
    tls_t *t;
    uint32_t i;
    cudaError_t e = sim_stream_call_begin(CCA_SIM_STREAM_GET_PRIORITY, stream, ptsz, &t, &i);
    if (!e && !priority) e = cudaErrorInvalidValue;
    if (!e) {
        *priority = sim_g.streams[i].priority;
        fault_ok(CCA_SIM_STREAM_GET_PRIORITY);
    }
    return sim_call_end(t, e);
}

SIM_API cudaError_t cudaStreamGetPriority(cudaStream_t s, int *priority) { return stream_priority(s, priority, false); }
SIM_API cudaError_t cudaStreamGetPriority_ptsz(cudaStream_t s, int *priority);
cudaError_t cudaStreamGetPriority_ptsz(cudaStream_t s, int *priority) { return stream_priority(s, priority, true); }

static cudaError_t capture_info(cudaStream_t stream, enum cudaStreamCaptureStatus *status, unsigned long long *id,
                                cudaGraph_t *graph, const cudaGraphNode_t **deps, const cudaGraphEdgeData **edges,
                                size_t *ndeps, bool ptsz)
{
    tls_t *t;
    uint32_t i;
    cudaError_t e = sim_stream_call_begin(CCA_SIM_STREAM_GET_CAPTURE_INFO, stream, ptsz, &t, &i);
    if (!e && !status) e = cudaErrorInvalidValue;
    if (!e) {
        stream_t *s = &sim_g.streams[i];
        *status = (enum cudaStreamCaptureStatus)s->capture;
        bool on = s->capture == cudaStreamCaptureStatusActive;
        if (id && on) *id = s->capture_id;
        if (graph && on) *graph = (cudaGraph_t)(void *)&sim_graph_token;
        if (deps && on) *deps = NULL;
        if (edges && on) *edges = NULL;
        if (ndeps && on) *ndeps = 0;
        fault_ok(CCA_SIM_STREAM_GET_CAPTURE_INFO);
    }
    return sim_call_end(t, e);
}

SIM_API cudaError_t cudaStreamGetCaptureInfo(cudaStream_t stream, enum cudaStreamCaptureStatus *status,
                                             unsigned long long *id, cudaGraph_t *graph,
                                             const cudaGraphNode_t **deps, const cudaGraphEdgeData **edges,
                                             size_t *ndeps)
{
    return capture_info(stream, status, id, graph, deps, edges, ndeps, false);
}
SIM_API cudaError_t cudaStreamGetCaptureInfo_ptsz(cudaStream_t stream, enum cudaStreamCaptureStatus *status,
                                                  unsigned long long *id, cudaGraph_t *graph,
                                                  const cudaGraphNode_t **deps, const cudaGraphEdgeData **edges,
                                                  size_t *ndeps);
cudaError_t cudaStreamGetCaptureInfo_ptsz(cudaStream_t stream, enum cudaStreamCaptureStatus *status,
                                          unsigned long long *id, cudaGraph_t *graph,
                                          const cudaGraphNode_t **deps, const cudaGraphEdgeData **edges, size_t *ndeps)
{
    return capture_info(stream, status, id, graph, deps, edges, ndeps, true);
}

SIM_API cudaError_t cudaThreadExchangeStreamCaptureMode(enum cudaStreamCaptureMode *mode)
{
    tls_t *t;
    cudaError_t e = rt_begin(CCA_SIM_THREAD_EXCHANGE_CAPTURE_MODE, &t);
    if (!e && (!mode || (unsigned)*mode > (unsigned)cudaStreamCaptureModeRelaxed)) e = cudaErrorInvalidValue;
    if (!e) {
        int old = capture_mode;
        capture_mode = (int)*mode;
        *mode = (enum cudaStreamCaptureMode)old;
    }
    return rt_end(CCA_SIM_THREAD_EXCHANGE_CAPTURE_MODE, t, e);
}

/* ---- peers, pointers, functions ----------------------------------- */

SIM_API cudaError_t cudaDeviceCanAccessPeer(int *canAccessPeer, int device, int peerDevice)
{
    tls_t *t;
    cudaError_t e = rt_begin(CCA_SIM_DEVICE_CAN_ACCESS_PEER, &t);
    int n = atomic_load_explicit(&sim_g.ndev, memory_order_relaxed);
    if (!e && !canAccessPeer) e = cudaErrorInvalidValue;
    if (!e && (device < 0 || device >= n || peerDevice < 0 || peerDevice >= n)) e = cudaErrorInvalidDevice;
    if (!e) *canAccessPeer = device != peerDevice;
    return rt_end(CCA_SIM_DEVICE_CAN_ACCESS_PEER, t, e);
}

SIM_API cudaError_t cudaDeviceEnablePeerAccess(int peerDevice, unsigned int flags)
{
    tls_t *t;
    cudaError_t e = rt_begin(CCA_SIM_DEVICE_ENABLE_PEER_ACCESS, &t);
    int n = atomic_load_explicit(&sim_g.ndev, memory_order_relaxed);
    if (!e && flags) e = cudaErrorInvalidValue;
    if (!e && (peerDevice < 0 || peerDevice >= n || peerDevice == t->dev)) e = cudaErrorInvalidDevice;
    if (!e && !dev_ok(t)) e = cudaErrorInvalidDevice;
    if (!e && (peer_on[t->dev] & (1u << peerDevice))) e = cudaErrorPeerAccessAlreadyEnabled;
    if (!e) peer_on[t->dev] |= 1u << peerDevice;
    return rt_end(CCA_SIM_DEVICE_ENABLE_PEER_ACCESS, t, e);
}

SIM_API cudaError_t cudaPointerGetAttributes(struct cudaPointerAttributes *attr, const void *ptr)
{
    tls_t *t;
    cudaError_t e = rt_begin(CCA_SIM_POINTER_GET_ATTRIBUTES, &t);
    if (!e && !attr) e = cudaErrorInvalidValue;
    if (!e) {
        uintptr_t a = (uintptr_t)ptr;
        int d = ptr_device(a);
        const sim_alloc_t *h = d >= 0 ? NULL : host_alloc_of(a);
        memset(attr, 0, sizeof *attr);
        if (d >= 0) {
            attr->type = cudaMemoryTypeDevice;
            attr->device = d;
            attr->devicePointer = (void *)ptr;
        } else if (h) {
            attr->type = cudaMemoryTypeHost;
            attr->device = h->dev;
            attr->devicePointer = (void *)ptr;
            attr->hostPointer = (void *)ptr;
        } else {
            attr->type = cudaMemoryTypeUnregistered;
            attr->device = -2;
            attr->hostPointer = (void *)ptr;
        }
    }
    return rt_end(CCA_SIM_POINTER_GET_ATTRIBUTES, t, e);
}

SIM_API cudaError_t cudaFuncGetAttributes(struct cudaFuncAttributes *attr, const void *func)
{
    tls_t *t;
    cudaError_t e = rt_begin(CCA_SIM_FUNC_GET_ATTRIBUTES, &t);
    if (!e && !attr) e = cudaErrorInvalidValue;
    if (!e && !func) e = cudaErrorInvalidDeviceFunction;
    if (!e) {
        memset(attr, 0, sizeof *attr);
        attr->maxThreadsPerBlock = 1024;
        attr->numRegs = 32;
        attr->ptxVersion = 90;
        attr->binaryVersion = 90;            /* sm_90: memory-efficient attention's backward asserts it */
        attr->maxDynamicSharedSizeBytes = 48 << 10;
        attr->preferredShmemCarveout = -1;
    }
    return rt_end(CCA_SIM_FUNC_GET_ATTRIBUTES, t, e);
}

SIM_API cudaError_t cudaFuncSetAttribute(const void *func, enum cudaFuncAttribute attr, int value)
{
    tls_t *t;
    cudaError_t e = rt_begin(CCA_SIM_FUNC_SET_ATTRIBUTE, &t);
    if (!e && !func) e = cudaErrorInvalidDeviceFunction;
    if (!e && ((unsigned)attr >= (unsigned)cudaFuncAttributeMax || value < -1)) e = cudaErrorInvalidValue;
    return rt_end(CCA_SIM_FUNC_SET_ATTRIBUTE, t, e);
}

static cudaError_t occupancy(int *numBlocks, const void *func, int blockSize, size_t smem)
{
    tls_t *t;
    cudaError_t e = rt_begin(CCA_SIM_OCCUPANCY, &t);
    if (!e && (!numBlocks || blockSize <= 0 || blockSize > 1024)) e = cudaErrorInvalidValue;
    if (!e && !func) e = cudaErrorInvalidDeviceFunction;
    if (!e) {
        int by_threads = 2048 / blockSize;
        int by_smem = smem ? (int)((size_t)(228 << 10) / smem) : 32;
        int n = by_threads < by_smem ? by_threads : by_smem;
        *numBlocks = n > 32 ? 32 : n;
    }
    return rt_end(CCA_SIM_OCCUPANCY, t, e);
}

SIM_API cudaError_t cudaOccupancyMaxActiveBlocksPerMultiprocessor(int *numBlocks, const void *func, int blockSize,
                                                                  size_t dynamicSMemSize)
{
    return occupancy(numBlocks, func, blockSize, dynamicSMemSize);
}
SIM_API cudaError_t cudaOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(int *numBlocks, const void *func,
                                                                           int blockSize, size_t dynamicSMemSize,
                                                                           unsigned int flags)
{
    (void)flags;
    return occupancy(numBlocks, func, blockSize, dynamicSMemSize);
}

/* ---- work that touches no memory: kernels, memsets, copies -------- */

/* Under the lock (from sim_stream_call_begin): one work item on stream slot i;
 * `sync`: the host waits for it. */
static cudaError_t work_item(uint32_t i, bool sync)
{
    if (!sim_g.nheld) return cudaSuccess;            /* nothing held: it is done already */
    if (sim_enqueue(i, (target_t){ 0, 0, 0 }) == 0) return cudaErrorMemoryAllocation;
    if (sync) sim_force(tail_of(i));
    return cudaSuccess;
}

static cudaError_t launch(cca_sim_api_t api, const void *func, dim3 grid, dim3 block, cudaStream_t stream, bool ptsz)
{
    tls_t *t;
    uint32_t i;
    cudaError_t e = sim_stream_call_begin(api, stream, ptsz, &t, &i);
    if (!e && !func) e = cudaErrorInvalidDeviceFunction;
    if (!e && ((uint64_t)block.x * block.y * block.z > 1024 || !grid.x || !grid.y || !grid.z || !block.x ||
               !block.y || !block.z))
        e = cudaErrorInvalidConfiguration;
    if (!e && sim_g.streams[i].capture == cudaStreamCaptureStatusNone) e = work_item(i, false);
    if (!e) fault_ok(api);
    return sim_call_end(t, e);
}

SIM_API cudaError_t cudaLaunchKernel(const void *func, dim3 gridDim, dim3 blockDim, void **args, size_t sharedMem,
                                     cudaStream_t stream)
{
    (void)args, (void)sharedMem;
    return launch(CCA_SIM_LAUNCH_KERNEL, func, gridDim, blockDim, stream, false);
}
SIM_API cudaError_t cudaLaunchKernel_ptsz(const void *func, dim3 gridDim, dim3 blockDim, void **args,
                                          size_t sharedMem, cudaStream_t stream)
{
    (void)args, (void)sharedMem;
    return launch(CCA_SIM_LAUNCH_KERNEL, func, gridDim, blockDim, stream, true);
}
SIM_API cudaError_t cudaLaunchCooperativeKernel(const void *func, dim3 gridDim, dim3 blockDim, void **args,
                                                size_t sharedMem, cudaStream_t stream)
{
    (void)args, (void)sharedMem;
    return launch(CCA_SIM_LAUNCH_KERNEL, func, gridDim, blockDim, stream, false);
}
SIM_API cudaError_t cudaLaunchKernelExC(const cudaLaunchConfig_t *config, const void *func, void **args)
{
    (void)args;
    if (!config) return rt_refuse(CCA_SIM_LAUNCH_KERNEL, cudaErrorInvalidValue);
    return launch(CCA_SIM_LAUNCH_KERNEL, func, config->gridDim, config->blockDim, config->stream, false);
}

/* CUDA 13's <<<>>>: the kernel handle is the host stub's address. */
SIM_API cudaError_t __cudaGetKernel(cudaKernel_t *kernel, const void *func);
cudaError_t __cudaGetKernel(cudaKernel_t *kernel, const void *func)
{
    tls_t *t;
    cudaError_t e = rt_begin(CCA_SIM_GET_KERNEL, &t);
    if (!e && (!kernel || !func)) e = cudaErrorInvalidValue;
    if (!e) *kernel = (cudaKernel_t)(uintptr_t)func;
    return rt_end(CCA_SIM_GET_KERNEL, t, e);
}
SIM_API cudaError_t __cudaLaunchKernel(cudaKernel_t kernel, dim3 gridDim, dim3 blockDim, void **args,
                                       size_t sharedMem, cudaStream_t stream);
cudaError_t __cudaLaunchKernel(cudaKernel_t kernel, dim3 gridDim, dim3 blockDim, void **args, size_t sharedMem,
                               cudaStream_t stream)
{
    (void)args, (void)sharedMem;
    return launch(CCA_SIM_LAUNCH_KERNEL, (const void *)kernel, gridDim, blockDim, stream, false);
}
SIM_API cudaError_t __cudaLaunchKernel_ptsz(cudaKernel_t kernel, dim3 gridDim, dim3 blockDim, void **args,
                                            size_t sharedMem, cudaStream_t stream);
cudaError_t __cudaLaunchKernel_ptsz(cudaKernel_t kernel, dim3 gridDim, dim3 blockDim, void **args, size_t sharedMem,
                                    cudaStream_t stream)
{
    (void)args, (void)sharedMem;
    return launch(CCA_SIM_LAUNCH_KERNEL, (const void *)kernel, gridDim, blockDim, stream, true);
}

/* Under the lock: does [p, p+n) lie in device memory a kernel may use:
 * inside one live cudaMalloc result, or mapped read-write throughout? */
static bool device_span(const void *p, size_t n)
{
    uintptr_t a = (uintptr_t)p;
    if (!n) n = 1;
    if (!p || a + n < a) return false;
    for (size_t i = 0; sim_g.allocs.slots && i <= sim_g.allocs.mask; i++) {   /* inside one live cudaMalloc result */
        const sim_alloc_t *r = &sim_g.allocs.slots[i];
        if (r->addr && a >= r->addr && a - r->addr < r->size && n <= r->size - (a - r->addr)) return true;
    }
    return sim_vmm_readwrite(a, n);                   /* else mapped read-write, mapping after mapping */
}

static cudaError_t memset_on(void *devPtr, size_t count, cudaStream_t stream, bool ptsz, bool sync)
{
    tls_t *t;
    uint32_t i;
    cudaError_t e = sim_stream_call_begin(CCA_SIM_MEMSET, stream, ptsz, &t, &i);
    if (!e && count && !device_span(devPtr, count)) e = cudaErrorInvalidValue;
    if (!e && count && sim_g.streams[i].capture == cudaStreamCaptureStatusNone) e = work_item(i, sync);
    if (!e) fault_ok(CCA_SIM_MEMSET);
    return sim_call_end(t, e);
}

SIM_API cudaError_t cudaMemset(void *devPtr, int value, size_t count)
{
    (void)value;
    return memset_on(devPtr, count, NULL, false, true);
}
SIM_API cudaError_t cudaMemsetAsync(void *devPtr, int value, size_t count, cudaStream_t stream)
{
    (void)value;
    return memset_on(devPtr, count, stream, false, false);
}
SIM_API cudaError_t cudaMemsetAsync_ptsz(void *devPtr, int value, size_t count, cudaStream_t stream)
{
    (void)value;
    return memset_on(devPtr, count, stream, true, false);
}

/* Under the lock: a copy of `width` bytes in `height` rows. Device sides are
 * validated and untouched; a host destination of a device source reads
 * zeros; host to host copies. */
static cudaError_t copy_rows(void *dst, size_t dpitch, const void *src, size_t spitch, size_t width, size_t height,
                             enum cudaMemcpyKind kind)
{
    if (!width || !height) return cudaSuccess;
    if ((unsigned)kind > (unsigned)cudaMemcpyDefault || !dst || !src || dpitch < width || spitch < width)
        return cudaErrorInvalidValue;
    size_t dspan = dpitch * (height - 1) + width, sspan = spitch * (height - 1) + width;
    bool ddev = device_span(dst, dspan), sdev = device_span(src, sspan);
    if (kind != cudaMemcpyDefault) {
        bool want_d = kind == cudaMemcpyHostToDevice || kind == cudaMemcpyDeviceToDevice;
        bool want_s = kind == cudaMemcpyDeviceToHost || kind == cudaMemcpyDeviceToDevice;
        if (ddev != want_d || sdev != want_s) return cudaErrorInvalidValue;
    }
    if (ddev) return cudaSuccess;
    for (size_t r = 0; r < height; r++) {
        if (sdev) memset((char *)dst + r * dpitch, 0, width);
        else memmove((char *)dst + r * dpitch, (const char *)src + r * spitch, width);
    }
    return cudaSuccess;
}

static cudaError_t copy_on(cca_sim_api_t api, void *dst, size_t dpitch, const void *src, size_t spitch, size_t width,
                           size_t height, enum cudaMemcpyKind kind, cudaStream_t stream, bool ptsz, bool sync)
{
    tls_t *t;
    uint32_t i;
    cudaError_t e = sim_stream_call_begin(api, stream, ptsz, &t, &i);
    if (!e && sync && sim_g.nheld) sim_force(tail_of(i));     /* the host waits for the work before it */
    if (!e) e = copy_rows(dst, dpitch, src, spitch, width, height, kind);
    if (!e && width && height && sim_g.streams[i].capture == cudaStreamCaptureStatusNone) e = work_item(i, sync);
    if (!e) fault_ok(api);
    return sim_call_end(t, e);
}

SIM_API cudaError_t cudaMemcpy(void *dst, const void *src, size_t count, enum cudaMemcpyKind kind)
{
    return copy_on(CCA_SIM_MEMCPY, dst, count, src, count, count, 1, kind, NULL, false, true);
}
SIM_API cudaError_t cudaMemcpyAsync(void *dst, const void *src, size_t count, enum cudaMemcpyKind kind,
                                    cudaStream_t stream)
{
    return copy_on(CCA_SIM_MEMCPY_ASYNC, dst, count, src, count, count, 1, kind, stream, false, false);
}
SIM_API cudaError_t cudaMemcpyAsync_ptsz(void *dst, const void *src, size_t count, enum cudaMemcpyKind kind,
                                         cudaStream_t stream)
{
    return copy_on(CCA_SIM_MEMCPY_ASYNC, dst, count, src, count, count, 1, kind, stream, true, false);
}
SIM_API cudaError_t cudaMemcpy2DAsync(void *dst, size_t dpitch, const void *src, size_t spitch, size_t width,
                                      size_t height, enum cudaMemcpyKind kind, cudaStream_t stream)
{
    return copy_on(CCA_SIM_MEMCPY_ASYNC, dst, dpitch, src, spitch, width, height, kind, stream, false, false);
}
SIM_API cudaError_t cudaMemcpyPeerAsync(void *dst, int dstDevice, const void *src, int srcDevice, size_t count,
                                        cudaStream_t stream)
{
    (void)dstDevice, (void)srcDevice;
    return copy_on(CCA_SIM_MEMCPY_ASYNC, dst, count, src, count, count, 1, cudaMemcpyDeviceToDevice, stream, false,
                   false);
}

/* ---- pinned host memory ------------------------------------------- */

static cudaError_t host_alloc(void **p, size_t size, unsigned flags)
{
    tls_t *t;
    cudaError_t e = rt_begin(CCA_SIM_HOST_ALLOC, &t);
    if (!e && (!p || (flags & ~0xfu))) e = cudaErrorInvalidValue;
    if (!e) {
        void *q = NULL;
        if (posix_memalign(&q, 4096, size ? size : 1) != 0) {
            e = cudaErrorMemoryAllocation;
        } else {
            sim_alloc_t rec = { (uintptr_t)q, size, size, t->dev };
            if (sim_map_put(&hosts, &rec) != 0) {
                free(q);
                e = cudaErrorMemoryAllocation;
            } else {
                *p = q;
            }
        }
    }
    return rt_end(CCA_SIM_HOST_ALLOC, t, e);
}

SIM_API cudaError_t cudaHostAlloc(void **pHost, size_t size, unsigned int flags) { return host_alloc(pHost, size, flags); }
SIM_API cudaError_t cudaMallocHost(void **ptr, size_t size) { return host_alloc(ptr, size, 0); }

SIM_API cudaError_t cudaFreeHost(void *ptr)
{
    tls_t *t;
    cudaError_t e = rt_begin(CCA_SIM_FREE_HOST, &t);
    sim_alloc_t rec;
    if (!e && ptr && !sim_map_take(&hosts, (uintptr_t)ptr, &rec)) e = cudaErrorInvalidValue;
    if (!e && ptr) free(ptr);
    return rt_end(CCA_SIM_FREE_HOST, t, e);
}

/* ---- events: elapsed time ----------------------------------------- */

SIM_API cudaError_t cudaEventElapsedTime(float *ms, cudaEvent_t start, cudaEvent_t end)
{
    tls_t *t;
    cudaError_t e = rt_begin(CCA_SIM_EVENT_ELAPSED_TIME, &t);
    event_t *a = e ? NULL : sim_resolve_event(start), *b = e ? NULL : sim_resolve_event(end);
    if (!e && !ms) e = cudaErrorInvalidValue;
    if (!e && (!a || !b || (a->flags & cudaEventDisableTiming) || (b->flags & cudaEventDisableTiming)))
        e = cudaErrorInvalidResourceHandle;
    if (!e && sim_g.nheld && (!sim_complete(a->t) || !sim_complete(b->t))) e = cudaErrorNotReady;
    if (!e) *ms = 0.0f;                               /* no kernel takes time here */
    return rt_end(CCA_SIM_EVENT_ELAPSED_TIME, t, e);
}

SIM_API cudaError_t cudaEventRecordWithFlags(cudaEvent_t event, cudaStream_t stream, unsigned int flags)
{
    if (flags & ~(unsigned)cudaEventRecordExternal) return rt_refuse(CCA_SIM_EVENT_RECORD, cudaErrorInvalidValue);
    return sim_event_record(event, stream, false);
}

/* ---- the driver's device and context queries ---------------------- */

static char contexts[MAX_DEVICES];                  /* a CUcontext is &contexts[device] */

static CUresult drv_enter(void)
{
    enter(CCA_SIM_DRIVER_QUERY);
    lock();
    return (CUresult)sim_fault_now(CCA_SIM_DRIVER_QUERY);
}

static CUresult drv_leave(CUresult r)
{
    if (r == CUDA_SUCCESS) fault_ok(CCA_SIM_DRIVER_QUERY);
    unlock();
    return r;
}

static bool drv_dev_ok(CUdevice d) { return d >= 0 && d < atomic_load_explicit(&sim_g.ndev, memory_order_relaxed); }

static int ctx_device(CUcontext c)
{
    uintptr_t a = (uintptr_t)c, b = (uintptr_t)contexts;
    return a >= b && a < b + MAX_DEVICES && drv_dev_ok((int)(a - b)) ? (int)(a - b) : -1;
}

SIM_API CUresult CUDAAPI cuInit(unsigned int flags)
{
    CUresult r = drv_enter();
    if (!r && flags) r = CUDA_ERROR_INVALID_VALUE;
    return drv_leave(r);
}

SIM_API CUresult CUDAAPI cuDriverGetVersion(int *v)
{
    CUresult r = drv_enter();
    if (!r && !v) r = CUDA_ERROR_INVALID_VALUE;
    if (!r) *v = CUDA_VERSION;
    return drv_leave(r);
}

SIM_API CUresult CUDAAPI cuDeviceGet(CUdevice *device, int ordinal)
{
    CUresult r = drv_enter();
    if (!r && !device) r = CUDA_ERROR_INVALID_VALUE;
    if (!r && !drv_dev_ok(ordinal)) r = CUDA_ERROR_INVALID_DEVICE;
    if (!r) *device = ordinal;
    return drv_leave(r);
}

SIM_API CUresult CUDAAPI cuDeviceGetCount(int *count)
{
    CUresult r = drv_enter();
    if (!r && !count) r = CUDA_ERROR_INVALID_VALUE;
    if (!r) *count = atomic_load_explicit(&sim_g.ndev, memory_order_relaxed);
    return drv_leave(r);
}

SIM_API CUresult CUDAAPI cuDeviceGetAttribute(int *pi, CUdevice_attribute attrib, CUdevice dev)
{
    CUresult r = drv_enter();
    if (!r && !pi) r = CUDA_ERROR_INVALID_VALUE;
    if (!r && !drv_dev_ok(dev)) r = CUDA_ERROR_INVALID_DEVICE;
    long v = r ? 0 : attr_value((int)attrib, dev);
    if (!r && v == -2) r = CUDA_ERROR_INVALID_VALUE;
    if (!r) *pi = (int)v;
    return drv_leave(r);
}

SIM_API CUresult CUDAAPI cuDeviceGetName(char *name, int len, CUdevice dev)
{
    CUresult r = drv_enter();
    if (!r && (!name || len <= 0)) r = CUDA_ERROR_INVALID_VALUE;
    if (!r && !drv_dev_ok(dev)) r = CUDA_ERROR_INVALID_DEVICE;
    if (!r) snprintf(name, (size_t)len, "cca simulated device %d", dev);
    return drv_leave(r);
}

SIM_API CUresult CUDAAPI cuDeviceTotalMem(size_t *bytes, CUdevice dev)
{
    CUresult r = drv_enter();
    if (!r && !bytes) r = CUDA_ERROR_INVALID_VALUE;
    if (!r && !drv_dev_ok(dev)) r = CUDA_ERROR_INVALID_DEVICE;
    if (!r) *bytes = sim_g.dev[dev].capacity;
    return drv_leave(r);
}

/* The device's UUID: the same 16 bytes cudaGetDeviceProperties gives. */
SIM_API CUresult CUDAAPI cuDeviceGetUuid_v2(CUuuid *uuid, CUdevice dev);
CUresult CUDAAPI cuDeviceGetUuid_v2(CUuuid *uuid, CUdevice dev)
{
    CUresult r = drv_enter();
    if (!r && !uuid) r = CUDA_ERROR_INVALID_VALUE;
    if (!r && !drv_dev_ok(dev)) r = CUDA_ERROR_INVALID_DEVICE;
    if (!r)
        for (int i = 0; i < 16; i++) uuid->bytes[i] = (char)(0xcc ^ (i * 17) ^ dev);
    return drv_leave(r);
}

SIM_API CUresult CUDAAPI sim_cuDeviceGetUuid(CUuuid *uuid, CUdevice dev) __asm__("cuDeviceGetUuid");
CUresult CUDAAPI sim_cuDeviceGetUuid(CUuuid *uuid, CUdevice dev) { return cuDeviceGetUuid_v2(uuid, dev); }

/* The runtime keeps every device's primary context: it is active. */
SIM_API CUresult CUDAAPI cuDevicePrimaryCtxGetState(CUdevice dev, unsigned int *flags, int *active)
{
    CUresult r = drv_enter();
    if (!r && (!flags || !active)) r = CUDA_ERROR_INVALID_VALUE;
    if (!r && !drv_dev_ok(dev)) r = CUDA_ERROR_INVALID_DEVICE;
    if (!r) {
        *flags = 0;
        *active = 1;
    }
    return drv_leave(r);
}

SIM_API CUresult CUDAAPI cuDevicePrimaryCtxRetain(CUcontext *pctx, CUdevice dev)
{
    CUresult r = drv_enter();
    if (!r && !pctx) r = CUDA_ERROR_INVALID_VALUE;
    if (!r && !drv_dev_ok(dev)) r = CUDA_ERROR_INVALID_DEVICE;
    if (!r) *pctx = (CUcontext)(void *)&contexts[dev];
    return drv_leave(r);
}

SIM_API CUresult CUDAAPI cuDevicePrimaryCtxRelease(CUdevice dev)
{
    CUresult r = drv_enter();
    if (!r && !drv_dev_ok(dev)) r = CUDA_ERROR_INVALID_DEVICE;
    return drv_leave(r);
}

/* The current context is the current device's (cudaSetDevice's). */
SIM_API CUresult CUDAAPI cuCtxGetCurrent(CUcontext *pctx)
{
    CUresult r = drv_enter();
    tls_t *t = me();
    if (!r && !pctx) r = CUDA_ERROR_INVALID_VALUE;
    if (!r) *pctx = (CUcontext)(void *)&contexts[t->dev];
    return drv_leave(r);
}

SIM_API CUresult CUDAAPI cuCtxSetCurrent(CUcontext ctx)
{
    CUresult r = drv_enter();
    int d = ctx ? ctx_device(ctx) : 0;
    if (!r && d < 0) r = CUDA_ERROR_INVALID_CONTEXT;
    if (!r) me()->dev = d;
    return drv_leave(r);
}

SIM_API CUresult CUDAAPI cuCtxGetDevice(CUdevice *device)
{
    CUresult r = drv_enter();
    if (!r && !device) r = CUDA_ERROR_INVALID_VALUE;
    if (!r) *device = me()->dev;
    return drv_leave(r);
}

SIM_API CUresult CUDAAPI cuCtxPushCurrent_v2(CUcontext ctx);
CUresult CUDAAPI cuCtxPushCurrent_v2(CUcontext ctx)
{
    CUresult r = drv_enter();
    tls_t *t = fw_me();
    int d = ctx_device(ctx);
    if (!r && d < 0) r = CUDA_ERROR_INVALID_CONTEXT;
    if (!r && ctx_depth == (int)(sizeof ctx_stack / sizeof ctx_stack[0])) r = CUDA_ERROR_OUT_OF_MEMORY;
    if (!r) {
        ctx_stack[ctx_depth++] = t->dev;
        t->dev = d;
    }
    return drv_leave(r);
}

SIM_API CUresult CUDAAPI cuCtxPopCurrent_v2(CUcontext *pctx);
CUresult CUDAAPI cuCtxPopCurrent_v2(CUcontext *pctx)
{
    CUresult r = drv_enter();
    tls_t *t = fw_me();
    if (!r && ctx_depth == 0) r = CUDA_ERROR_INVALID_CONTEXT;
    if (!r) {
        if (pctx) *pctx = (CUcontext)(void *)&contexts[t->dev];
        t->dev = ctx_stack[--ctx_depth];
    }
    return drv_leave(r);
}

SIM_API CUresult CUDAAPI cuCtxSynchronize(void)
{
    CUresult r = drv_enter();
    if (!r) sim_device_sync(me()->dev);
    return drv_leave(r);
}

/* The allocation holding dptr: a cudaMalloc result, or a VMM reservation. */
SIM_API CUresult CUDAAPI cuMemGetAddressRange_v2(CUdeviceptr *pbase, size_t *psize, CUdeviceptr dptr);
CUresult CUDAAPI cuMemGetAddressRange_v2(CUdeviceptr *pbase, size_t *psize, CUdeviceptr dptr)
{
    CUresult r = drv_enter();
    uintptr_t a = (uintptr_t)dptr, base = 0;
    size_t size = 0;
    for (size_t i = 0; !r && sim_g.allocs.slots && i <= sim_g.allocs.mask && !base; i++) {
        sim_alloc_t rec = sim_g.allocs.slots[i];
        if (rec.addr && a >= rec.addr && a - rec.addr < (rec.size ? rec.size : 1)) base = rec.addr, size = rec.size;
    }
    if (!r && !base) sim_vmm_mapping_of(a, &base, &size);
    if (!r && !base) r = CUDA_ERROR_NOT_FOUND;
    if (!r) {
        if (pbase) *pbase = (CUdeviceptr)base;
        if (psize) *psize = size;
    }
    return drv_leave(r);
}

SIM_API CUresult CUDAAPI cuMemsetD32Async(CUdeviceptr dst, unsigned int ui, size_t n, CUstream stream)
{
    (void)ui;
    if (n > SIZE_MAX / 4) return CUDA_ERROR_INVALID_VALUE;
    tls_t *t = me();
    cudaError_t last = t->err;                        /* driver calls leave the runtime's last error alone */
    cudaError_t e = memset_on((void *)(uintptr_t)dst, n * 4, (cudaStream_t)stream, false, false);
    t->err = last;
    return e == cudaErrorInvalidResourceHandle ? CUDA_ERROR_INVALID_HANDLE : (CUresult)e;
}

SIM_API CUresult CUDAAPI cuStreamWriteValue32_v2(CUstream stream, CUdeviceptr addr, cuuint32_t value, unsigned int flags);
CUresult CUDAAPI cuStreamWriteValue32_v2(CUstream stream, CUdeviceptr addr, cuuint32_t value, unsigned int flags)
{
    (void)value, (void)flags;
    tls_t *t = me();
    cudaError_t last = t->err;
    cudaError_t e = memset_on((void *)(uintptr_t)addr, 4, (cudaStream_t)stream, false, false);
    t->err = last;
    return e == cudaErrorInvalidResourceHandle ? CUDA_ERROR_INVALID_HANDLE : (CUresult)e;
}

/* Counted, never failing (so not a cca_sim_fail_nth call either), as
 * cudaGetErrorString. */
static void count_only(cca_sim_api_t api)
{
    atomic_fetch_add_explicit(&sim_g.calls[api].v, 1, memory_order_relaxed);
}

SIM_API CUresult CUDAAPI cuGetErrorString(CUresult error, const char **pStr)
{
    count_only(CCA_SIM_DRIVER_QUERY);
    if (!pStr) return CUDA_ERROR_INVALID_VALUE;
    *pStr = sim_error_text((int)error);                   /* the runtime's numbers are the driver's for these */
    return CUDA_SUCCESS;
}

SIM_API CUresult CUDAAPI cuGetErrorName(CUresult error, const char **pStr)
{
    count_only(CCA_SIM_DRIVER_QUERY);
    if (!pStr) return CUDA_ERROR_INVALID_VALUE;
    *pStr = sim_error_name((int)error);
    return CUDA_SUCCESS;
}

/* Driver calls the simulated device does not support: found, and failing. */
static CUresult CUDAAPI drv_unsupported(void)
{
    enter(CCA_SIM_DRIVER_UNSUPPORTED);
    CUresult r = (CUresult)sim_fault_now_unlocked(CCA_SIM_DRIVER_UNSUPPORTED);   /* an injected fault, else: */
    return r ? r : CUDA_ERROR_NOT_SUPPORTED;
}

/* CUDA IPC, which the simulated device does not have, under the names a
 * binding that looks the driver up by name finds (numba's own ctypes
 * binding takes cuIpcOpenMemHandle's address at start-up). */
SIM_API CUresult CUDAAPI sim_cuIpcOpenMemHandle(void) __asm__("cuIpcOpenMemHandle_v2");
CUresult CUDAAPI sim_cuIpcOpenMemHandle(void) { return drv_unsupported(); }
SIM_API CUresult CUDAAPI sim_cuIpcGetMemHandle(void) __asm__("cuIpcGetMemHandle");
CUresult CUDAAPI sim_cuIpcGetMemHandle(void) { return drv_unsupported(); }
SIM_API CUresult CUDAAPI sim_cuIpcCloseMemHandle(void) __asm__("cuIpcCloseMemHandle");
CUresult CUDAAPI sim_cuIpcCloseMemHandle(void) { return drv_unsupported(); }

static const char *const unsupported_symbols[] = {
    "cuIpcOpenMemHandle", "cuIpcGetMemHandle", "cuIpcCloseMemHandle",
    "cuMemExportToShareableHandle", "cuMemImportFromShareableHandle", "cuMemRetainAllocationHandle",
    "cuMemGetAllocationPropertiesFromHandle", "cuMulticastAddDevice", "cuMulticastBindMem", "cuMulticastCreate",
    "cuMulticastUnbind", "cuMulticastGetGranularity", "cuCtxFromGreenCtx", "cuGreenCtxCreate", "cuGreenCtxDestroy",
    "cuGreenCtxStreamCreate", "cuDevSmResourceSplitByCount", "cuDeviceGetDevResource", "cuDevResourceGenerateDesc",
    "cuLogsRegisterCallback", "cuLogsUnregisterCallback",
};

static const struct { const char *name; void *fn; } driver_symbols[] = {
    { "cuInit", (void *)cuInit },
    { "cuDriverGetVersion", (void *)cuDriverGetVersion },
    { "cuDeviceGet", (void *)cuDeviceGet },
    { "cuDeviceGetCount", (void *)cuDeviceGetCount },
    { "cuDeviceGetAttribute", (void *)cuDeviceGetAttribute },
    { "cuDeviceGetName", (void *)cuDeviceGetName },
    { "cuDeviceTotalMem", (void *)cuDeviceTotalMem },
    { "cuDeviceGetUuid", (void *)cuDeviceGetUuid_v2 },
    { "cuDevicePrimaryCtxGetState", (void *)cuDevicePrimaryCtxGetState },
    { "cuDevicePrimaryCtxRetain", (void *)cuDevicePrimaryCtxRetain },
    { "cuDevicePrimaryCtxRelease", (void *)cuDevicePrimaryCtxRelease },
    { "cuCtxGetCurrent", (void *)cuCtxGetCurrent },
    { "cuCtxSetCurrent", (void *)cuCtxSetCurrent },
    { "cuCtxGetDevice", (void *)cuCtxGetDevice },
    { "cuCtxPushCurrent", (void *)cuCtxPushCurrent_v2 },
    { "cuCtxPopCurrent", (void *)cuCtxPopCurrent_v2 },
    { "cuCtxSynchronize", (void *)cuCtxSynchronize },
    { "cuMemGetAddressRange", (void *)cuMemGetAddressRange_v2 },
    { "cuMemsetD32Async", (void *)cuMemsetD32Async },
    { "cuStreamWriteValue32", (void *)cuStreamWriteValue32_v2 },
    { "cuGetErrorString", (void *)cuGetErrorString },
    { "cuGetErrorName", (void *)cuGetErrorName },
};

/* The function a driver symbol names (its base name: cuCtxPushCurrent, not
 * ..._v2, as cuGetProcAddress takes it), or NULL. */
void *sim_driver_symbol(const char *symbol)
{
    void *fn = sim_vmm_symbol(symbol);
    if (fn) return fn;
    for (size_t i = 0; i < sizeof driver_symbols / sizeof driver_symbols[0]; i++)
        if (!strcmp(symbol, driver_symbols[i].name)) return driver_symbols[i].fn;
    for (size_t i = 0; i < sizeof unsupported_symbols / sizeof unsupported_symbols[0]; i++)
        if (!strcmp(symbol, unsupported_symbols[i])) return (void *)drv_unsupported;
    return NULL;
}

SIM_API CUresult CUDAAPI cuGetProcAddress_v2(const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags,
                                             CUdriverProcAddressQueryResult *symbolStatus);
CUresult CUDAAPI cuGetProcAddress_v2(const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags,
                                     CUdriverProcAddressQueryResult *symbolStatus)
{
    CUresult r = drv_enter();
    if (!r && (!symbol || !pfn || cudaVersion < 0 || cudaVersion > CUDA_VERSION || flags > 2))
        r = CUDA_ERROR_INVALID_VALUE;
    if (!r) {
        *pfn = sim_driver_symbol(symbol);
        if (symbolStatus) *symbolStatus = *pfn ? CU_GET_PROC_ADDRESS_SUCCESS : CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
        if (!*pfn) r = CUDA_ERROR_NOT_FOUND;
    }
    return drv_leave(r);
}

/* The first cuGetProcAddress (four arguments), which a driver still exports. */
SIM_API CUresult CUDAAPI sim_cuGetProcAddress_v1(const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags)
    __asm__("cuGetProcAddress");
CUresult CUDAAPI sim_cuGetProcAddress_v1(const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags)
{
    return cuGetProcAddress_v2(symbol, pfn, cudaVersion, flags, NULL);
}
