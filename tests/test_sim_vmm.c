/* test_sim_vmm.c - the simulator's virtual memory calls, reached the way an
 * allocator reaches them (cudaGetDriverEntryPointByVersion): granularity,
 * reservations (no capacity, a process limit), physical handles (capacity),
 * the mapping rules and their errors, access, counters, faults as CUresults,
 * reset. */
#include <cca_sim.h>
#include <cuda.h>
#include <cudaTypedefs.h>

#include <string.h>

#include "test_sim_util.h"

/* the per-thread-default-stream spelling the runtime exports (the header
 * names it only under CUDA_API_PER_THREAD_DEFAULT_STREAM) */
extern cudaError_t cudaGetDriverEntryPointByVersion_ptsz(const char *symbol, void **funcPtr, unsigned int cudaVersion,
                                                         unsigned long long flags,
                                                         enum cudaDriverEntryPointQueryResult *driverStatus);
extern cudaError_t cudaGetDriverEntryPoint_ptsz(const char *symbol, void **funcPtr, unsigned long long flags,
                                                enum cudaDriverEntryPointQueryResult *driverStatus);

static void setup(void) { cca_sim_reset(); }

TestSuite(sim_vmm, .init = setup);

static struct {
    PFN_cuMemGetAllocationGranularity_v10020 granularity;
    PFN_cuMemAddressReserve_v10020 reserve;
    PFN_cuMemAddressFree_v10020 address_free;
    PFN_cuMemCreate_v10020 create;
    PFN_cuMemRelease_v10020 release;
    PFN_cuMemMap_v10020 map;
    PFN_cuMemUnmap_v10020 unmap;
    PFN_cuMemSetAccess_v10020 set_access;
    PFN_cuMemGetAccess_v10020 get_access;
} vm;

static void *entry(const char *name)
{
    void *fn = NULL;
    enum cudaDriverEntryPointQueryResult st = cudaDriverEntryPointSymbolNotFound;
    cr_assert_eq(cudaGetDriverEntryPointByVersion(name, &fn, 12000, cudaEnableDefault, &st), cudaSuccess);
    cr_assert_eq(st, cudaDriverEntryPointSuccess, "%s", name);
    cr_assert_not_null(fn, "%s", name);
    return fn;
}

static void load(void)
{
    vm.granularity = (PFN_cuMemGetAllocationGranularity_v10020)entry("cuMemGetAllocationGranularity");
    vm.reserve = (PFN_cuMemAddressReserve_v10020)entry("cuMemAddressReserve");
    vm.address_free = (PFN_cuMemAddressFree_v10020)entry("cuMemAddressFree");
    vm.create = (PFN_cuMemCreate_v10020)entry("cuMemCreate");
    vm.release = (PFN_cuMemRelease_v10020)entry("cuMemRelease");
    vm.map = (PFN_cuMemMap_v10020)entry("cuMemMap");
    vm.unmap = (PFN_cuMemUnmap_v10020)entry("cuMemUnmap");
    vm.set_access = (PFN_cuMemSetAccess_v10020)entry("cuMemSetAccess");
    vm.get_access = (PFN_cuMemGetAccess_v10020)entry("cuMemGetAccess");
}

static CUmemAllocationProp prop_of(int dev)
{
    CUmemAllocationProp p;
    memset(&p, 0, sizeof p);
    p.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    p.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    p.location.id = dev;
    return p;
}

static CUmemAccessDesc rw(int dev)
{
    CUmemAccessDesc d;
    memset(&d, 0, sizeof d);
    d.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    d.location.id = dev;
    d.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    return d;
}

#define CU_OK(call) cr_assert_eq((call), CUDA_SUCCESS, "%s failed", #call)

Test(sim_vmm, entry_points)
{
    void *fn = (void *)1;
    enum cudaDriverEntryPointQueryResult st = cudaDriverEntryPointSuccess;
    cr_assert_eq(cudaGetDriverEntryPointByVersion("cuNoSuchThing", &fn, 12000, 0, &st), cudaSuccess,
                 "a missing symbol is success with NULL");
    cr_assert_null(fn);
    cr_assert_eq(st, cudaDriverEntryPointSymbolNotFound);
    fn = (void *)1;
    cr_assert_eq(cudaGetDriverEntryPointByVersion("cuMemMap", &fn, 10010, 0, &st), cudaSuccess);
    cr_assert_null(fn, "cuMemMap came with 10.2");
    cr_assert_eq(st, cudaDriverEntryPointVersionNotSufficent);
    cr_assert_eq(cudaGetDriverEntryPointByVersion("cuMemMap", NULL, 12000, 0, &st), cudaErrorInvalidValue);
    cr_assert_eq(cudaGetLastError(), cudaErrorInvalidValue);
    cr_assert_eq(cudaGetDriverEntryPointByVersion("cuMemMap", &fn, 12000, 99, NULL), cudaErrorInvalidValue);
    cudaGetLastError();
    cr_assert_eq(cudaGetDriverEntryPointByVersion_ptsz("cuMemMap", &fn, 12000, 0, NULL), cudaSuccess);
    cr_assert_not_null(fn);
    cr_assert_eq(cudaGetDriverEntryPointByVersion("cuMemMap", &fn, CUDA_VERSION + 10, 0, NULL), cudaErrorInvalidValue,
                 "a version past the driver's");
    cudaGetLastError();
    void *old = NULL;
    st = cudaDriverEntryPointSymbolNotFound;
    cr_assert_eq(cudaGetDriverEntryPoint_ptsz("cuMemCreate", &old, cudaEnableDefault, &st), cudaSuccess);
    cr_assert_not_null(old, "the older call, the driver's own version");
    cr_assert_eq(st, cudaDriverEntryPointSuccess);
    cr_assert_eq(cca_sim_calls(CCA_SIM_GET_DRIVER_ENTRY_POINT), 7u);
    cr_assert_str_eq(cca_sim_api_name(CCA_SIM_MEM_MAP), "cuMemMap");
    cr_assert_str_eq(cca_sim_api_name(CCA_SIM_MEM_GET_GRANULARITY), "cuMemGetAllocationGranularity");
}

Test(sim_vmm, granularity_reservations_and_handles)
{
    load();
    cca_sim_set_capacity(0, 64 * MiB);
    CUmemAllocationProp p = prop_of(0);
    size_t gran = 0;
    CU_OK(vm.granularity(&gran, &p, CU_MEM_ALLOC_GRANULARITY_MINIMUM));
    cr_assert_eq(gran, 2 * MiB);
    CU_OK(vm.granularity(&gran, &p, CU_MEM_ALLOC_GRANULARITY_RECOMMENDED));
    cr_assert_eq(gran, 2 * MiB);
    CUmemAllocationProp bad = prop_of(5);
    cr_assert_eq(vm.granularity(&gran, &bad, CU_MEM_ALLOC_GRANULARITY_MINIMUM), CUDA_ERROR_INVALID_VALUE);

    CUdeviceptr va = 0;
    CU_OK(vm.reserve(&va, 1 * GiB, 0, 0, 0));          /* more than the device: no capacity */
    cr_assert_eq(va % (2 * MiB), 0u);
    cr_assert_eq(cca_sim_va_reserved(), 1 * GiB);
    cr_assert_eq(cca_sim_used_bytes(0), 0u);
    CUdeviceptr va2 = 0;
    cr_assert_eq(vm.reserve(&va2, 3 * MiB, 0, 0, 0), CUDA_ERROR_INVALID_VALUE, "not a multiple of the granularity");
    CU_OK(vm.reserve(&va2, 4 * MiB, 64 * MiB, 0, 0));
    cr_assert_eq(va2 % (64 * MiB), 0u, "the alignment asked for");

    CUmemGenericAllocationHandle h[40];
    CU_OK(vm.create(&h[0], 20 * MiB, &p, 0));
    cr_assert_eq(cca_sim_used_bytes(0), 20 * MiB, "a handle costs capacity");
    size_t fr, tot;
    CUDA_OK(cudaMemGetInfo(&fr, &tot));
    cr_assert_eq(fr, 44 * MiB);
    cr_assert_eq(vm.create(&h[1], 1 * MiB, &p, 0), CUDA_ERROR_INVALID_VALUE, "not a multiple of the granularity");
    cr_assert_eq(vm.create(&h[1], 46 * MiB, &p, 0), CUDA_ERROR_OUT_OF_MEMORY);
    cr_assert_eq(cudaGetLastError(), cudaSuccess, "driver calls leave the runtime's last error alone");
    void *m = NULL;
    cr_assert_eq(cudaMalloc(&m, 45 * MiB), cudaErrorMemoryAllocation, "cudaMalloc shares the capacity");
    cudaGetLastError();
    cr_assert_eq(cca_sim_live_handles(0), 1u);
    CU_OK(vm.release(h[0]));
    cr_assert_eq(cca_sim_used_bytes(0), 0u);
    cr_assert_eq(cca_sim_live_handles(0), 0u);
    cr_assert_eq(vm.release(h[0]), CUDA_ERROR_INVALID_VALUE, "released twice");
    cr_assert_eq(vm.address_free(va, 2 * MiB), CUDA_ERROR_INVALID_VALUE, "a whole reservation only");
    CU_OK(vm.address_free(va, 1 * GiB));
    CU_OK(vm.address_free(va2, 4 * MiB));
    cr_assert_eq(cca_sim_va_reserved(), 0u);
    cr_assert_eq(vm.address_free(va, 1 * GiB), CUDA_ERROR_INVALID_VALUE, "freed twice");
}

Test(sim_vmm, mapping_rules)
{
    load();
    CUmemAllocationProp p = prop_of(0);
    CUdeviceptr va = 0;
    CU_OK(vm.reserve(&va, 64 * MiB, 0, 0, 0));
    CUmemGenericAllocationHandle a, b, c;
    CU_OK(vm.create(&a, 4 * MiB, &p, 0));
    CU_OK(vm.create(&b, 2 * MiB, &p, 0));
    CU_OK(vm.create(&c, 2 * MiB, &p, 0));
    cr_assert_eq(vm.map(va, 2 * MiB, 0, a, 0), CUDA_ERROR_INVALID_VALUE, "a handle is mapped whole");
    cr_assert_eq(vm.map(va, 4 * MiB, 2 * MiB, a, 0), CUDA_ERROR_INVALID_VALUE, "offset 0 only");
    cr_assert_eq(vm.map(va + 4096, 4 * MiB, 0, a, 0), CUDA_ERROR_INVALID_VALUE, "misaligned");
    cr_assert_eq(vm.map(va + 62 * MiB, 4 * MiB, 0, a, 0), CUDA_ERROR_INVALID_VALUE, "past the reservation");
    cr_assert_eq(vm.map((CUdeviceptr)0x10000000, 4 * MiB, 0, a, 0), CUDA_ERROR_INVALID_VALUE, "not reserved");
    CU_OK(vm.map(va, 4 * MiB, 0, a, 0));
    cr_assert_eq(vm.map(va + 2 * MiB, 2 * MiB, 0, b, 0), CUDA_ERROR_INVALID_VALUE, "overlapping");
    CU_OK(vm.map(va + 4 * MiB, 2 * MiB, 0, b, 0));
    CU_OK(vm.map(va + 8 * MiB, 2 * MiB, 0, c, 0));
    CU_OK(vm.map(va + 16 * MiB, 2 * MiB, 0, c, 0));      /* one handle, two mappings */

    CUmemLocation loc = { .type = CU_MEM_LOCATION_TYPE_DEVICE, .id = 0 };
    unsigned long long fl = 99;
    CU_OK(vm.get_access(&fl, &loc, va));
    cr_assert_eq(fl, (unsigned long long)CU_MEM_ACCESS_FLAGS_PROT_NONE, "no access until set");
    cr_assert_eq(cca_sim_accessible((void *)va, 4096), 0);
    CUmemAccessDesc d = rw(0);
    cr_assert_eq(vm.set_access(va, 8 * MiB, &d, 1), CUDA_ERROR_INVALID_VALUE, "not fully mapped");
    CU_OK(vm.set_access(va, 6 * MiB, &d, 1));            /* a and b */
    CU_OK(vm.get_access(&fl, &loc, va + 5 * MiB));
    cr_assert_eq(fl, (unsigned long long)CU_MEM_ACCESS_FLAGS_PROT_READWRITE);
    cr_assert_eq(cca_sim_accessible((void *)va, 6 * MiB), 1);
    cr_assert_eq(cca_sim_accessible((void *)(va + 1 * MiB), 5 * MiB), 1);
    cr_assert_eq(cca_sim_accessible((void *)va, 6 * MiB + 1), 0, "past the mapped range");
    cr_assert_eq(cca_sim_accessible((void *)(va + 8 * MiB), 1), 0, "mapped, no access");
    cr_assert_eq(vm.get_access(&fl, &loc, va + 6 * MiB), CUDA_ERROR_INVALID_VALUE, "not mapped");

    cr_assert_eq(vm.unmap(va, 2 * MiB), CUDA_ERROR_INVALID_VALUE, "a sub-range of a mapping");
    cr_assert_eq(vm.unmap(va + 4 * MiB, 4 * MiB), CUDA_ERROR_INVALID_VALUE, "runs into unmapped space");
    cr_assert_eq(vm.address_free(va, 64 * MiB), CUDA_ERROR_INVALID_VALUE, "still mapped");
    CU_OK(vm.release(a));                                /* released while mapped: freed at the unmap */
    cr_assert_eq(cca_sim_used_bytes(0), 8 * MiB);
    cr_assert_eq(vm.map(va + 20 * MiB, 4 * MiB, 0, a, 0), CUDA_ERROR_INVALID_VALUE, "a released handle");
    CU_OK(vm.unmap(va, 6 * MiB));                        /* two whole mappings at once */
    cr_assert_eq(cca_sim_used_bytes(0), 4 * MiB, "a went with its unmap; b is held");
    cr_assert_eq(cca_sim_accessible((void *)va, 1), 0);
    CU_OK(vm.map(va, 2 * MiB, 0, b, 0));                 /* a new mapping: no access again */
    CU_OK(vm.get_access(&fl, &loc, va));
    cr_assert_eq(fl, (unsigned long long)CU_MEM_ACCESS_FLAGS_PROT_NONE);
    CU_OK(vm.unmap(va, 2 * MiB));
    CU_OK(vm.unmap(va + 8 * MiB, 2 * MiB));
    CU_OK(vm.release(c));
    cr_assert_eq(cca_sim_live_handles(0), 2u, "c is still mapped once");
    CU_OK(vm.unmap(va + 16 * MiB, 2 * MiB));
    CU_OK(vm.release(b));
    cr_assert_eq(cca_sim_used_bytes(0), 0u);
    cr_assert_eq(cca_sim_live_handles(0), 0u);
    CU_OK(vm.address_free(va, 64 * MiB));
}

Test(sim_vmm, address_space_limit)
{
    load();
    CUdeviceptr big = 0;
    CU_OK(vm.reserve(&big, 1 * GiB, 0, 0, 0));
    cca_sim_set_va_limit(512 * MiB);                    /* below what is reserved: nothing more */
    CUdeviceptr more = 0;
    cr_assert_eq(vm.reserve(&more, 2 * MiB, 0, 0, 0), CUDA_ERROR_OUT_OF_MEMORY, "a lowered limit holds");
    cca_sim_set_va_limit(SIZE_MAX);                     /* at most the whole user address space */
    CUdeviceptr huge = 0;
    cr_assert_eq(vm.reserve(&huge, SIZE_MAX & ~(2 * MiB - 1), 4 * MiB, 0, 0), CUDA_ERROR_OUT_OF_MEMORY, "no overflow");
    cr_assert_eq(vm.reserve(&huge, (size_t)200 << 40, 0, 0, 0), CUDA_ERROR_OUT_OF_MEMORY, "past 128 TiB");
    CU_OK(vm.address_free(big, 1 * GiB));
    cca_sim_set_va_limit(8 * GiB);
    CUdeviceptr v[5];
    for (int i = 0; i < 4; i++) CU_OK(vm.reserve(&v[i], 2 * GiB, 0, 0, 0));
    cr_assert_eq(vm.reserve(&v[4], 2 * MiB, 0, 0, 0), CUDA_ERROR_OUT_OF_MEMORY, "past the process's limit");
    CU_OK(vm.address_free(v[0], 2 * GiB));
    CU_OK(vm.reserve(&v[4], 2 * GiB, 0, 0, 0));
    cca_sim_reset();
    cr_assert_eq(cca_sim_va_reserved(), 0u, "a reset frees every reservation");
    cr_assert_eq(vm.reserve(&v[0], 10 * GiB, 0, 0, 0), CUDA_ERROR_OUT_OF_MEMORY, "the limit stays across resets");
    cca_sim_set_va_limit(0);
    CU_OK(vm.reserve(&v[0], 10 * GiB, 0, 0, 0));
    CU_OK(vm.address_free(v[0], 10 * GiB));
}

Test(sim_vmm, faults_come_back_as_cuda_results_and_are_counted)
{
    load();
    CUmemAllocationProp p = prop_of(0);
    CUdeviceptr va = 0;
    cca_sim_fail(CCA_SIM_MEM_ADDRESS_RESERVE, 0, cudaErrorMemoryAllocation);
    cr_assert_eq(vm.reserve(&va, 8 * MiB, 0, 0, 0), CUDA_ERROR_OUT_OF_MEMORY);
    cr_assert_eq(cca_sim_va_reserved(), 0u);
    CU_OK(vm.reserve(&va, 8 * MiB, 0, 0, 0));
    CUmemGenericAllocationHandle h;
    cca_sim_fail(CCA_SIM_MEM_CREATE, 1, cudaErrorInvalidValue);
    CU_OK(vm.create(&h, 2 * MiB, &p, 0));
    CUmemGenericAllocationHandle h2;
    cr_assert_eq(vm.create(&h2, 2 * MiB, &p, 0), CUDA_ERROR_INVALID_VALUE, "the second create fails");
    cr_assert_eq(cca_sim_live_handles(0), 1u);
    cca_sim_fail(CCA_SIM_MEM_MAP, 0, cudaErrorMemoryAllocation);
    cr_assert_eq(vm.map(va, 2 * MiB, 0, h, 0), CUDA_ERROR_OUT_OF_MEMORY);
    CU_OK(vm.map(va, 2 * MiB, 0, h, 0));
    CUmemAccessDesc d = rw(0);
    cca_sim_fail_nth(1, cudaErrorInvalidValue);          /* the next call of any kind */
    cr_assert_eq(vm.set_access(va, 2 * MiB, &d, 1), CUDA_ERROR_INVALID_VALUE);
    CU_OK(vm.set_access(va, 2 * MiB, &d, 1));
    cca_sim_fail_times(CCA_SIM_MEM_UNMAP, 0, 2, cudaErrorInvalidValue);   /* two in a row */
    cr_assert_eq(vm.unmap(va, 2 * MiB), CUDA_ERROR_INVALID_VALUE);
    cr_assert_eq(vm.unmap(va, 2 * MiB), CUDA_ERROR_INVALID_VALUE);
    cr_assert_eq(cca_sim_accessible((void *)va, 2 * MiB), 1, "a failed unmap changed nothing");
    CU_OK(vm.unmap(va, 2 * MiB));
    CU_OK(vm.release(h));
    CU_OK(vm.address_free(va, 8 * MiB));
    cr_assert_eq(cca_sim_calls(CCA_SIM_MEM_ADDRESS_RESERVE), 2u);
    cr_assert_eq(cca_sim_calls(CCA_SIM_MEM_CREATE), 2u);
    cr_assert_eq(cca_sim_calls(CCA_SIM_MEM_MAP), 2u);
    cr_assert_eq(cca_sim_calls(CCA_SIM_MEM_SET_ACCESS), 2u);
    cr_assert_eq(cca_sim_calls(CCA_SIM_MEM_UNMAP), 3u);
    cr_assert_eq(cca_sim_calls(CCA_SIM_MEM_RELEASE), 1u);
    cr_assert_eq(cca_sim_calls(CCA_SIM_MEM_ADDRESS_FREE), 1u);
    cr_assert_eq(cudaGetLastError(), cudaSuccess);
    cca_sim_reset();                                     /* a handle from before never matches a new one */
    load();
    CUmemGenericAllocationHandle after;
    CU_OK(vm.create(&after, 2 * MiB, &p, 0));
    cr_assert_neq(after, h);
    cr_assert_eq(vm.release(h), CUDA_ERROR_INVALID_VALUE);
    CU_OK(vm.release(after));
}

Test(sim_vmm, latency_applies_to_driver_calls)
{
    load();
    CUmemAllocationProp p = prop_of(0);
    size_t gran;
    cca_sim_set_latency_ns(CCA_SIM_MEM_GET_GRANULARITY, 2000000);   /* 2 ms */
    double t0 = now_s();
    CU_OK(vm.granularity(&gran, &p, CU_MEM_ALLOC_GRANULARITY_MINIMUM));
    cr_assert_geq(now_s() - t0, 0.002);
}

Test(sim_vmm, cudamalloc_results_are_accessible)
{
    void *m = NULL;
    CUDA_OK(cudaMalloc(&m, 3000));
    cr_assert_eq(cca_sim_accessible(m, 3000), 1);
    cr_assert_eq(cca_sim_accessible((char *)m + 1000, 2000), 1);
    cr_assert_eq(cca_sim_accessible(m, 3001), 0);
    cr_assert_eq(cca_sim_accessible(m, 0), 0);
    CUDA_OK(cudaFree(m));
    cr_assert_eq(cca_sim_accessible(m, 1), 0, "freed");
}
