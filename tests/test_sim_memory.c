/* test_sim_memory.c - device memory of the simulated device: capacity, OOM,
 * cudaMemGetInfo, alignment, bad frees, deterministic carving and reuse. */
#include <cca_sim.h>

#include <stdlib.h>
#include <string.h>

#include "test_sim_util.h"

static void setup(void) { cca_sim_reset(); }

TestSuite(sim_memory, .init = setup);

static void expect_info(size_t want_free, size_t want_total)
{
    size_t f = 1, t = 1;
    CUDA_OK(cudaMemGetInfo(&f, &t));
    cr_assert_eq(f, want_free, "free %zu, expected %zu", f, want_free);
    cr_assert_eq(t, want_total, "total %zu, expected %zu", t, want_total);
}

Test(sim_memory, default_device_is_80_gib)
{
    int n = -1;
    CUDA_OK(cudaGetDeviceCount(&n));
    cr_assert_eq(n, 1);
    expect_info((size_t)80 << 30, (size_t)80 << 30);
}

Test(sim_memory, oom_when_capacity_passed)
{
    const size_t cap = 10 * GiB + 100;
    cca_sim_set_capacity(0, cap);
    expect_info(cap, cap);
    void *p[16] = { 0 };
    int n = 0;
    cudaError_t e = cudaSuccess;
    while (n < 16 && (e = cudaMalloc(&p[n], GiB)) == cudaSuccess) n++;
    cr_assert_eq(n, 10, "%d chunks of 1 GiB fit", n);
    cr_assert_eq(e, cudaErrorMemoryAllocation);
    cr_assert_eq(cudaPeekAtLastError(), cudaErrorMemoryAllocation);
    cr_assert_eq(cudaGetLastError(), cudaErrorMemoryAllocation);
    cr_assert_eq(cudaGetLastError(), cudaSuccess);
    expect_info(100, cap);
    cr_assert_eq(cca_sim_used_bytes(0), 10 * GiB);
    cr_assert_eq(cca_sim_live_allocations(0), 10);

    /* the remaining bytes are usable, to the byte */
    void *q = NULL, *r = NULL;
    CUDA_OK(cudaMalloc(&q, 100));
    expect_info(0, cap);
    cr_assert_eq(cudaMalloc(&r, 1), cudaErrorMemoryAllocation);
    cr_assert_null(r);
    cr_assert_eq(cudaGetLastError(), cudaErrorMemoryAllocation);
    CUDA_OK(cudaFree(q));
    expect_info(100, cap);

    /* a refused call leaves the device usable */
    CUDA_OK(cudaFree(p[3]));
    expect_info(GiB + 100, cap);
    CUDA_OK(cudaMalloc(&p[3], GiB));
    expect_info(100, cap);
    for (int i = 0; i < n; i++) CUDA_OK(cudaFree(p[i]));
    expect_info(cap, cap);
    cr_assert_eq(cca_sim_used_bytes(0), 0);
    cr_assert_eq(cca_sim_live_allocations(0), 0);
    cr_assert_eq(cudaGetLastError(), cudaSuccess);
}

Test(sim_memory, requested_bytes_are_counted)
{
    cca_sim_set_capacity(0, 4096);
    void *a, *b, *c;
    CUDA_OK(cudaMalloc(&a, 1));
    expect_info(4095, 4096);
    CUDA_OK(cudaMalloc(&b, 1000));
    expect_info(3095, 4096);
    cr_assert_eq(cudaMalloc(&c, 3096), cudaErrorMemoryAllocation);
    CUDA_OK(cudaMalloc(&c, 3095));
    expect_info(0, 4096);
    CUDA_OK(cudaFree(b));
    expect_info(1000, 4096);
    CUDA_OK(cudaFree(a));
    CUDA_OK(cudaFree(c));
    expect_info(4096, 4096);
}

Test(sim_memory, whole_capacity_in_one_allocation)
{
    void *p = NULL, *q = NULL;
    CUDA_OK(cudaMalloc(&p, (size_t)80 << 30));
    cr_assert_not_null(p);
    expect_info(0, (size_t)80 << 30);
    cr_assert_eq(cudaMalloc(&q, 512), cudaErrorMemoryAllocation);
    CUDA_OK(cudaFree(p));
    cr_assert_eq(cudaMalloc(&q, SIZE_MAX), cudaErrorMemoryAllocation);
    cr_assert_eq(cudaMalloc(&q, SIZE_MAX - 100), cudaErrorMemoryAllocation);
    cr_assert_eq(cudaMalloc(&q, ((size_t)80 << 30) + 1), cudaErrorMemoryAllocation);
    cr_assert_null(q);
    expect_info((size_t)80 << 30, (size_t)80 << 30);
}

Test(sim_memory, alignment_and_no_overlap)
{
    static const size_t sizes[] = { 1, 2, 255, 256, 257, 511, 512, 513, 1000, 4096, 65535,
                                    MiB - 1, MiB, MiB + 1, 2 * MiB + 3, 20 * MiB + 1, 3 };
    enum { N = sizeof sizes / sizeof sizes[0] };
    uintptr_t p[N];
    for (int i = 0; i < N; i++) {
        void *q = NULL;
        CUDA_OK(cudaMalloc(&q, sizes[i]));
        p[i] = (uintptr_t)q;
        cr_assert_neq(p[i], 0);
        cr_assert_eq(p[i] % 512, 0, "size %zu gave %p", sizes[i], q);
    }
    for (int i = 0; i < N; i++)
        for (int j = 0; j < N; j++)
            if (i != j) cr_assert(p[i] + sizes[i] <= p[j] || p[j] + sizes[j] <= p[i], "overlap %d %d", i, j);
    for (int i = 0; i < N; i++) CUDA_OK(cudaFree((void *)p[i]));
    cr_assert_eq(cca_sim_live_allocations(0), 0);
}

Test(sim_memory, zero_size_and_null_arguments)
{
    void *p = (void *)0x1234;
    CUDA_OK(cudaMalloc(&p, 0));
    cr_assert_null(p);
    cr_assert_eq(cca_sim_live_allocations(0), 0);
    cr_assert_eq(cudaMalloc(NULL, 16), cudaErrorInvalidValue);
    cr_assert_eq(cudaGetLastError(), cudaErrorInvalidValue);
    CUDA_OK(cudaFree(NULL));
    size_t f;
    cr_assert_eq(cudaMemGetInfo(NULL, &f), cudaErrorInvalidValue);
    cr_assert_eq(cudaMemGetInfo(&f, NULL), cudaErrorInvalidValue);
    cr_assert_eq(cudaGetLastError(), cudaErrorInvalidValue);
    cr_assert_eq(cca_sim_calls(CCA_SIM_MALLOC), 2);
    cr_assert_eq(cca_sim_calls(CCA_SIM_FREE), 1);
    cr_assert_eq(cca_sim_device_syncs(0), 0, "cudaFree(NULL) does nothing");
}

Test(sim_memory, bad_frees_are_errors)
{
    void *p;
    CUDA_OK(cudaMalloc(&p, 4096));
    int local;
    cr_assert_eq(cudaFree(&local), cudaErrorInvalidValue);
    cr_assert_eq(cudaGetLastError(), cudaErrorInvalidValue);
    cr_assert_eq(cudaFree((char *)p + 512), cudaErrorInvalidValue);   /* interior */
    cr_assert_eq(cudaFree((char *)p + 1), cudaErrorInvalidValue);
    cr_assert_eq(cudaFree((void *)(uintptr_t)0xdeadbeef000ull), cudaErrorInvalidValue);
    cr_assert_eq(cca_sim_used_bytes(0), 4096);
    CUDA_OK(cudaFree(p));
    cr_assert_eq(cudaFree(p), cudaErrorInvalidValue);                 /* double */
    cr_assert_eq(cudaPeekAtLastError(), cudaErrorInvalidValue);
    cr_assert_eq(cca_sim_used_bytes(0), 0);
    cr_assert_eq(cca_sim_calls(CCA_SIM_FREE), 6);
    cr_assert_eq(cca_sim_device_syncs(0), 1, "only the good cudaFree synchronizes");
}

static void run_sequence(uintptr_t out[8])
{
    void *a, *b, *c, *d, *e;
    CUDA_OK(cudaMalloc(&a, 3 * MiB));
    CUDA_OK(cudaMalloc(&b, 1000));
    CUDA_OK(cudaMalloc(&c, 20 * MiB));
    CUDA_OK(cudaFree(b));
    CUDA_OK(cudaMalloc(&d, 700));
    CUDA_OK(cudaMalloc(&e, GiB));
    CUDA_OK(cudaFree(a));
    CUDA_OK(cudaMalloc(&a, MiB));
    CUDA_OK(cudaMalloc(&b, 5 * MiB));
    out[0] = (uintptr_t)a, out[1] = (uintptr_t)b, out[2] = (uintptr_t)c, out[3] = (uintptr_t)d;
    out[4] = (uintptr_t)e;
    void *f;
    CUDA_OK(cudaMalloc(&f, 123));
    out[5] = (uintptr_t)f;
    out[6] = out[7] = 0;
}

Test(sim_memory, deterministic_after_reset)
{
    uintptr_t first[8], second[8], third[8];
    run_sequence(first);
    cca_sim_reset();
    run_sequence(second);
    cca_sim_reset();
    void *x;
    CUDA_OK(cudaMalloc(&x, 512));  /* something else in between */
    cca_sim_reset();
    run_sequence(third);
    for (int i = 0; i < 8; i++) {
        cr_assert_eq(first[i], second[i], "address %d differs after reset", i);
        cr_assert_eq(first[i], third[i], "address %d differs after the second reset", i);
    }
}

Test(sim_memory, first_fit_reuse_and_coalescing)
{
    void *a, *b, *c, *d, *x;
    CUDA_OK(cudaMalloc(&a, MiB));
    CUDA_OK(cudaMalloc(&b, MiB));
    CUDA_OK(cudaMalloc(&c, MiB));
    cr_assert_eq((char *)b, (char *)a + MiB, "carved in address order");
    cr_assert_eq((char *)c, (char *)b + MiB);
    CUDA_OK(cudaFree(b));
    CUDA_OK(cudaMalloc(&x, MiB));
    cr_assert_eq(x, b, "a freed range is reused");
    CUDA_OK(cudaFree(x));
    CUDA_OK(cudaMalloc(&x, 1000));
    cr_assert_eq(x, b, "first fit: the lowest address that fits");
    CUDA_OK(cudaFree(x));
    CUDA_OK(cudaFree(a));
    CUDA_OK(cudaMalloc(&x, 2 * MiB));
    cr_assert_eq(x, a, "neighbouring free ranges coalesce");
    CUDA_OK(cudaMalloc(&d, MiB));
    cr_assert_eq((char *)d, (char *)c + MiB);
    CUDA_OK(cudaFree(x));
    CUDA_OK(cudaFree(c));
    CUDA_OK(cudaFree(d));
    CUDA_OK(cudaMalloc(&x, 3 * MiB + 512));
    cr_assert_eq(x, a, "everything coalesced back");
    CUDA_OK(cudaFree(x));
}

Test(sim_memory, many_allocations_reuse_addresses)
{
    enum { N = 20000 };
    void **p = calloc(N, sizeof *p);
    cr_assert_not_null(p);
    for (int i = 0; i < N; i++) CUDA_OK(cudaMalloc(&p[i], (size_t)(i % 7 + 1) * 512));
    uintptr_t lo = UINTPTR_MAX, hi = 0;
    for (int i = 0; i < N; i++) {
        uintptr_t v = (uintptr_t)p[i];
        if (v < lo) lo = v;
        if (v > hi) hi = v;
    }
    for (int i = 0; i < N; i += 2) CUDA_OK(cudaFree(p[i]));
    for (int i = 0; i < N; i += 2) CUDA_OK(cudaMalloc(&p[i], 512));
    for (int i = 0; i < N; i += 2)
        cr_assert((uintptr_t)p[i] >= lo && (uintptr_t)p[i] <= hi, "holes are filled before new space");
    for (int i = 0; i < N; i++) CUDA_OK(cudaFree(p[i]));
    cr_assert_eq(cca_sim_live_allocations(0), 0);
    cr_assert_eq(cca_sim_used_bytes(0), 0);
    free(p);
    cca_sim_reset();
    NO_LEAKS();
}

Test(sim_memory, host_access_crashes)
{
    void *p;
    CUDA_OK(cudaMalloc(&p, 4096));
    cr_assert(host_read_crashes(p), "a device pointer must not be readable on the host");
    CUDA_OK(cudaFree(p));
    cr_assert(host_read_crashes(p), "nor a freed one");
    int ok = 1;
    cr_assert(!host_read_crashes(&ok), "the check itself works");
}

Test(sim_memory, reset_forgets_allocations)
{
    void *p;
    CUDA_OK(cudaMalloc(&p, GiB));
    cca_sim_reset();
    cr_assert_eq(cca_sim_used_bytes(0), 0);
    cr_assert_eq(cudaFree(p), cudaErrorInvalidValue);
    expect_info((size_t)80 << 30, (size_t)80 << 30);
    void *q;
    CUDA_OK(cudaMalloc(&q, GiB));
    cr_assert_eq(q, p, "carving starts over");
    CUDA_OK(cudaFree(q));
}

Test(sim_memory, free_synchronizes_the_device)
{
    void *p, *q;
    CUDA_OK(cudaMalloc(&p, 512));
    CUDA_OK(cudaMalloc(&q, 512));
    cr_assert_eq(cca_sim_device_syncs(0), 0);
    CUDA_OK(cudaFree(p));
    cr_assert_eq(cca_sim_device_syncs(0), 1);
    CUDA_OK(cudaDeviceSynchronize());
    cr_assert_eq(cca_sim_device_syncs(0), 2);
    CUDA_OK(cudaFree(q));
    cr_assert_eq(cca_sim_device_syncs(0), 3);
}

Test(sim_memory, capacity_changes_after_use)
{
    cca_sim_set_capacity(0, MiB);
    void *p, *q;
    CUDA_OK(cudaMalloc(&p, MiB));
    cca_sim_set_capacity(0, 512);          /* below what is in use */
    expect_info(0, 512);
    cr_assert_eq(cudaMalloc(&q, 1), cudaErrorMemoryAllocation);
    cca_sim_set_capacity(0, 100 * GiB);    /* beyond the first reserved range's share */
    CUDA_OK(cudaMalloc(&q, 90 * GiB));
    expect_info(100 * GiB - 90 * GiB - MiB, 100 * GiB);
    CUDA_OK(cudaFree(p));
    CUDA_OK(cudaFree(q));
    expect_info(100 * GiB, 100 * GiB);
}

Test(sim_memory, random_allocations_never_overlap_and_coalesce_back)
{
    enum { SLOTS = 200, OPS = 6000 };
    uintptr_t base_addr;
    void *first;
    CUDA_OK(cudaMalloc(&first, 512));
    base_addr = (uintptr_t)first;
    CUDA_OK(cudaFree(first));
    uintptr_t addr[SLOTS] = { 0 };
    size_t size[SLOTS] = { 0 };
    unsigned seed = 42;
    for (int op = 0; op < OPS; op++) {
        int k = rand_r(&seed) % SLOTS;
        if (addr[k]) {
            CUDA_OK(cudaFree((void *)addr[k]));
            addr[k] = 0;
            continue;
        }
        size_t sz = (size_t)(rand_r(&seed) % 4 == 0 ? rand_r(&seed) % (64 << 20) : rand_r(&seed) % 70000) + 1;
        void *p;
        CUDA_OK(cudaMalloc(&p, sz));
        uintptr_t a = (uintptr_t)p;
        cr_assert_eq(a % 512, 0);
        for (int j = 0; j < SLOTS; j++)
            if (addr[j]) cr_assert(a + sz <= addr[j] || addr[j] + size[j] <= a, "op %d overlaps slot %d", op, j);
        addr[k] = a;
        size[k] = sz;
    }
    for (int k = 0; k < SLOTS; k++)
        if (addr[k]) CUDA_OK(cudaFree((void *)addr[k]));
    cr_assert_eq(cca_sim_used_bytes(0), 0);
    void *all;
    CUDA_OK(cudaMalloc(&all, (size_t)80 << 30));
    cr_assert_eq((uintptr_t)all, base_addr, "everything coalesced back into one range");
    CUDA_OK(cudaFree(all));
    cca_sim_reset();
    NO_LEAKS();
}
