/* cca_sim.h - control API of the simulated CUDA device (libcca_sim).
 *
 * libcca_sim exports the CUDA runtime functions that cca and its peers call,
 * with the runtime's signatures, over a small model of a GPU: address space
 * only, capacity in bytes, streams and events with real ordering. These
 * controls steer that model from tests and benchmarks. (contract) */
#ifndef CCA_SIM_H
#define CCA_SIM_H

#include <stddef.h>
#include <cuda_runtime_api.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The runtime functions the simulated device counts, one list: X(id, name)
 * for each, in the order of cca_sim_api_t (ids never move; new ones are
 * appended), name being what cca_sim_api_name returns. */
#define CCA_SIM_API_LIST(X) \
    X(CCA_SIM_MALLOC, "cudaMalloc") \
    X(CCA_SIM_FREE, "cudaFree") \
    X(CCA_SIM_MEM_GET_INFO, "cudaMemGetInfo") \
    X(CCA_SIM_EVENT_CREATE, "cudaEventCreate")       /* cudaEventCreate and ...WithFlags */ \
    X(CCA_SIM_EVENT_RECORD, "cudaEventRecord") \
    X(CCA_SIM_EVENT_QUERY, "cudaEventQuery") \
    X(CCA_SIM_EVENT_SYNCHRONIZE, "cudaEventSynchronize") \
    X(CCA_SIM_EVENT_DESTROY, "cudaEventDestroy") \
    X(CCA_SIM_STREAM_SYNCHRONIZE, "cudaStreamSynchronize") \
    X(CCA_SIM_STREAM_WAIT_EVENT, "cudaStreamWaitEvent") \
    X(CCA_SIM_DEVICE_SYNCHRONIZE, "cudaDeviceSynchronize") \
    X(CCA_SIM_GET_DEVICE, "cudaGetDevice") \
    X(CCA_SIM_SET_DEVICE, "cudaSetDevice") \
    X(CCA_SIM_GET_DEVICE_COUNT, "cudaGetDeviceCount") \
    X(CCA_SIM_STREAM_CREATE, "cudaStreamCreate")     /* cudaStreamCreate and ...WithFlags */ \
    X(CCA_SIM_STREAM_DESTROY, "cudaStreamDestroy") \
    X(CCA_SIM_STREAM_QUERY, "cudaStreamQuery") \
    X(CCA_SIM_STREAM_GET_ID, "cudaStreamGetId") \
    X(CCA_SIM_GET_LAST_ERROR, "cudaGetLastError") \
    X(CCA_SIM_PEEK_AT_LAST_ERROR, "cudaPeekAtLastError") \
    X(CCA_SIM_GET_ERROR_STRING, "cudaGetErrorString") \
    X(CCA_SIM_GET_ERROR_NAME, "cudaGetErrorName") \
    /* appended: graph capture (its state only; EndCapture's graph is a token) */ \
    X(CCA_SIM_STREAM_BEGIN_CAPTURE, "cudaStreamBeginCapture") \
    X(CCA_SIM_STREAM_END_CAPTURE, "cudaStreamEndCapture") \
    X(CCA_SIM_STREAM_IS_CAPTURING, "cudaStreamIsCapturing") \
    /* appended: the driver's virtual memory calls, served by \
     * cudaGetDriverEntryPointByVersion (a fault comes back as the CUresult \
     * with the same number: cudaErrorMemoryAllocation is \
     * CUDA_ERROR_OUT_OF_MEMORY, cudaErrorInvalidValue CUDA_ERROR_INVALID_VALUE) */ \
    X(CCA_SIM_GET_DRIVER_ENTRY_POINT, "cudaGetDriverEntryPointByVersion")   /* (and _ptsz) */ \
    X(CCA_SIM_MEM_CREATE, "cuMemCreate") \
    X(CCA_SIM_MEM_RELEASE, "cuMemRelease") \
    X(CCA_SIM_MEM_MAP, "cuMemMap") \
    X(CCA_SIM_MEM_UNMAP, "cuMemUnmap") \
    X(CCA_SIM_MEM_SET_ACCESS, "cuMemSetAccess") \
    X(CCA_SIM_MEM_ADDRESS_RESERVE, "cuMemAddressReserve") \
    X(CCA_SIM_MEM_ADDRESS_FREE, "cuMemAddressFree") \
    X(CCA_SIM_MEM_GET_GRANULARITY, "cuMemGetAllocationGranularity")   /* 2 MiB */ \
    X(CCA_SIM_MEM_GET_ACCESS, "cuMemGetAccess") \
    /* appended: what a framework's start-up and compute path call and an \
     * allocator never does (sim_framework.c). Kernels, copies and memsets \
     * are stream-ordered work that touches no device memory; a copy to the \
     * host fills the host side with zeros. */ \
    X(CCA_SIM_GET_DEVICE_PROPERTIES, "cudaGetDeviceProperties")   /* (and _v2) */ \
    X(CCA_SIM_DEVICE_GET_ATTRIBUTE, "cudaDeviceGetAttribute") \
    X(CCA_SIM_DRIVER_GET_VERSION, "cudaDriverGetVersion") \
    X(CCA_SIM_RUNTIME_GET_VERSION, "cudaRuntimeGetVersion") \
    X(CCA_SIM_DEVICE_GET_STREAM_PRIORITY_RANGE, "cudaDeviceGetStreamPriorityRange") \
    /* cudaStreamCreateWithPriority counts as CCA_SIM_STREAM_CREATE */ \
    X(CCA_SIM_STREAM_GET_PRIORITY, "cudaStreamGetPriority") \
    X(CCA_SIM_STREAM_GET_CAPTURE_INFO, "cudaStreamGetCaptureInfo") \
    X(CCA_SIM_THREAD_EXCHANGE_CAPTURE_MODE, "cudaThreadExchangeStreamCaptureMode") \
    X(CCA_SIM_DEVICE_CAN_ACCESS_PEER, "cudaDeviceCanAccessPeer") \
    X(CCA_SIM_DEVICE_ENABLE_PEER_ACCESS, "cudaDeviceEnablePeerAccess") \
    X(CCA_SIM_DEVICE_GET_PCI_BUS_ID, "cudaDeviceGetPCIBusId") \
    X(CCA_SIM_POINTER_GET_ATTRIBUTES, "cudaPointerGetAttributes") \
    X(CCA_SIM_FUNC_GET_ATTRIBUTES, "cudaFuncGetAttributes") \
    X(CCA_SIM_FUNC_SET_ATTRIBUTE, "cudaFuncSetAttribute") \
    /* cudaOccupancyMaxActiveBlocksPerMultiprocessor[WithFlags] */ \
    X(CCA_SIM_OCCUPANCY, "cudaOccupancyMaxActiveBlocksPerMultiprocessor") \
    X(CCA_SIM_GET_KERNEL, "__cudaGetKernel")         /* CUDA 13's <<<>>> */ \
    /* cudaLaunchKernel, __cudaLaunchKernel, ...ExC, ...Cooperative */ \
    X(CCA_SIM_LAUNCH_KERNEL, "cudaLaunchKernel") \
    /* cudaMemset, cudaMemsetAsync, cuMemsetD32Async, cuStreamWriteValue32 */ \
    X(CCA_SIM_MEMSET, "cudaMemsetAsync") \
    X(CCA_SIM_MEMCPY, "cudaMemcpy")                  /* (synchronous) */ \
    /* cudaMemcpyAsync, cudaMemcpy2DAsync, cudaMemcpyPeerAsync */ \
    X(CCA_SIM_MEMCPY_ASYNC, "cudaMemcpyAsync") \
    X(CCA_SIM_HOST_ALLOC, "cudaHostAlloc")           /* cudaHostAlloc, cudaMallocHost */ \
    X(CCA_SIM_FREE_HOST, "cudaFreeHost") \
    X(CCA_SIM_EVENT_ELAPSED_TIME, "cudaEventElapsedTime") \
    /* the driver's device and context queries (cuInit, cuDriverGetVersion, \
     * cuDeviceGet*, cuDevicePrimaryCtx*, cuCtx*, cuMemGetAddressRange, \
     * cuGetErrorString/Name - these two counted only, never failing; \
     * cuMemsetD32Async and cuStreamWriteValue32 count as CCA_SIM_MEMSET), and the driver calls the simulated device does \
     * not support (CUDA_ERROR_NOT_SUPPORTED: multicast, green contexts, \
     * shareable handles, log callbacks) */ \
    X(CCA_SIM_DRIVER_QUERY, "cuDeviceGet (driver queries)") \
    X(CCA_SIM_DRIVER_UNSUPPORTED, "cuMulticastCreate (unsupported driver calls)")

typedef enum cca_sim_api {               /* one per exported runtime function */
#define CCA_SIM_API_ID_(id, name) id,
    CCA_SIM_API_LIST(CCA_SIM_API_ID_)
#undef CCA_SIM_API_ID_
    CCA_SIM_API_COUNT
} cca_sim_api_t;

/* 1 device of 80 GiB, nothing held, no faults, no latency, counters 0;
 * forgets every stream, event and allocation; address carving starts over.
 * The calling thread's current device and last error are reset too. */
void          cca_sim_reset(void);
/* cca_sim_reset, except that the handles alive stay valid: streams and
 * events (all their work complete, holds released), and virtual memory's
 * reservations, physical handles and mappings (what the handles hold stays
 * counted as used), for a process whose runtime users keep handles across
 * resets: a framework's allocator caches its events and its expandable
 * segments' address ranges (PyTorch's CUDACachingAllocator does).
 * cudaMalloc results are forgotten as by cca_sim_reset: free them first. */
void          cca_sim_reset_keeping_handles(void);
/* Number of devices (1..32); each new device gets 80 GiB unless set. */
void          cca_sim_set_device_count(int n);
void          cca_sim_set_capacity(int device, size_t bytes);
/* Work recorded on s from now on stays pending, until released. */
void          cca_sim_stream_hold(cudaStream_t s);
/* Pending work on s completes. */
void          cca_sim_stream_release(cudaStream_t s);
/* The call to api that follows `after` more successful ones fails once with err. */
void          cca_sim_fail(cca_sim_api_t api, unsigned long after, cudaError_t err);
/* The same for `times` calls in a row: the call that follows `after` more
 * successful ones and the times - 1 calls to api after it all fail with err
 * (a fault that outlasts a caller's retries); then api works again.
 * cca_sim_fail is times = 1; times = 0 or cudaSuccess disarms. Arming api
 * again replaces what was armed for it. */
void          cca_sim_fail_times(cca_sim_api_t api, unsigned long after, unsigned long times, cudaError_t err);
/* The k-th runtime call from now (k >= 1; 1: the next), of any API that can
 * fail - all but cudaGetLastError, cudaPeekAtLastError, cudaGetErrorString
 * and cudaGetErrorName, which never fail in the runtime - fails once with
 * err, from whichever thread makes it. k = 0 or cudaSuccess disarms. For
 * sweeping a fault over every call of a scenario. (contract) */
void          cca_sim_fail_nth(unsigned long k, cudaError_t err);
/* As the real libcudart on a machine without a driver (or GPU): while on,
 * every call that can fail fails with cudaErrorInsufficientDriver, which
 * cudaGetLastError keeps returning (sticky), and leaves its outputs as they
 * were. Off, or a reset, restores the device as it was. */
void          cca_sim_set_no_driver(int on);
/* Calls left before the armed cca_sim_fail_nth fires (0: it fired or none is armed). */
unsigned long cca_sim_fail_nth_left(void);
/* Calls made to api since the last reset, failed calls included. */
unsigned long cca_sim_calls(cca_sim_api_t api);
/* Busy-wait ns per call of api, outside the simulator's lock, to model real costs. */
void          cca_sim_set_latency_ns(cca_sim_api_t api, unsigned long ns);

/* Virtual memory: the process's limit on reserved address space (64 TiB by
 * default, as a real process's; 0 restores it; kept across resets, so that
 * a ThreadSanitizer run can lower it once), what is reserved now, the
 * physical handles alive on a device (created and not yet both released and
 * unmapped; they count in cca_sim_used_bytes), and whether [ptr, ptr+len)
 * may be used by a kernel: inside one live cudaMalloc result, or mapped
 * read-write throughout. */
void          cca_sim_set_va_limit(size_t bytes);
size_t        cca_sim_va_reserved(void);
unsigned long cca_sim_live_handles(int device);
int           cca_sim_accessible(const void *ptr, size_t len);

/* Extras beyond the contract, for tests. */
size_t        cca_sim_used_bytes(int device);        /* bytes of live allocations and physical handles */
unsigned long cca_sim_live_allocations(int device);  /* live cudaMalloc results */
const char   *cca_sim_api_name(cca_sim_api_t api);   /* "cudaMalloc", ... */
/* Device-wide synchronizations since the last reset: cudaDeviceSynchronize,
 * and cudaFree of a live pointer (which synchronizes the device). */
unsigned long cca_sim_device_syncs(int device);

#ifdef __cplusplus
}
#endif
#endif /* CCA_SIM_H */
