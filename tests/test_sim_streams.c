/* test_sim_streams.c - streams, events and their ordering on the simulated
 * device: holds, queries from other threads, synchronizing calls, waits,
 * the legacy default stream, per-thread default streams, stream ids. */
#include <cca_sim.h>

#include <stdlib.h>
#include <string.h>

#include "test_sim_util.h"

static void setup(void) { cca_sim_reset(); }

TestSuite(sim_streams, .init = setup);

static cudaEvent_t new_event(void)
{
    cudaEvent_t e;
    CUDA_OK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
    return e;
}

static cudaStream_t new_stream(unsigned flags)
{
    cudaStream_t s;
    CUDA_OK(cudaStreamCreateWithFlags(&s, flags));
    return s;
}

#define PENDING(e) cr_assert_eq(cudaEventQuery(e), cudaErrorNotReady, "%s should be pending", #e)
#define DONE(e)    cr_assert_eq(cudaEventQuery(e), cudaSuccess, "%s should be complete", #e)

Test(sim_streams, never_recorded_event_is_complete)
{
    cudaEvent_t e;
    CUDA_OK(cudaEventCreate(&e));
    DONE(e);
    CUDA_OK(cudaEventSynchronize(e));
    cudaStream_t s = new_stream(0);
    cca_sim_stream_hold(s);
    DONE(e);
    CUDA_OK(cudaStreamWaitEvent(s, e, 0));   /* waiting for nothing */
    CUDA_OK(cudaEventDestroy(e));
    cca_sim_stream_release(s);
    CUDA_OK(cudaStreamQuery(s));
    cr_assert_eq(cudaGetLastError(), cudaSuccess);
}

Test(sim_streams, unheld_work_completes_at_once)
{
    cudaEvent_t e = new_event();
    cudaStream_t s = new_stream(0), nb = new_stream(cudaStreamNonBlocking);
    cudaStream_t all[] = { NULL, cudaStreamLegacy, cudaStreamPerThread, s, nb };
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) {
        CUDA_OK(cudaEventRecord(e, all[i]));
        DONE(e);
        CUDA_OK(cudaStreamQuery(all[i]));
        CUDA_OK(cudaStreamSynchronize(all[i]));
    }
    CUDA_OK(cudaStreamDestroy(s));
    CUDA_OK(cudaStreamDestroy(nb));
    CUDA_OK(cudaEventDestroy(e));
}

struct query_arg { cudaEvent_t e; cudaStream_t s; cudaError_t ev, st, last, last_after; };

static void *query_thread(void *p)
{
    struct query_arg *a = p;
    a->ev = cudaEventQuery(a->e);
    a->st = a->s ? cudaStreamQuery(a->s) : cudaSuccess;
    a->last = cudaGetLastError();
    a->last_after = cudaGetLastError();
    return NULL;
}

Test(sim_streams, held_stream_keeps_event_pending_for_other_threads)
{
    cudaStream_t s = new_stream(0);
    cudaEvent_t before = new_event(), e = new_event();
    CUDA_OK(cudaEventRecord(before, s));
    cca_sim_stream_hold(s);
    CUDA_OK(cudaEventRecord(e, s));
    DONE(before);
    PENDING(e);
    cr_assert_eq(cudaGetLastError(), cudaErrorNotReady, "NotReady sets the last error");
    cr_assert_eq(cudaGetLastError(), cudaSuccess);

    for (int i = 0; i < 2; i++) {
        struct query_arg a = { .e = e, .s = s };
        run_in_thread(query_thread, &a);
        cr_assert_eq(a.ev, cudaErrorNotReady);
        cr_assert_eq(a.st, cudaErrorNotReady);
        cr_assert_eq(a.last, cudaErrorNotReady, "in the querying thread");
        cr_assert_eq(a.last_after, cudaSuccess);
    }
    cr_assert_eq(cudaPeekAtLastError(), cudaSuccess, "other threads' errors are theirs");

    cca_sim_stream_release(s);
    struct query_arg a = { .e = e, .s = s };
    run_in_thread(query_thread, &a);
    cr_assert_eq(a.ev, cudaSuccess);
    cr_assert_eq(a.st, cudaSuccess);
    cr_assert_eq(a.last, cudaSuccess);
    DONE(e);
    CUDA_OK(cudaStreamQuery(s));
}

Test(sim_streams, hold_is_pending_work)
{
    cudaStream_t s = new_stream(0), other = new_stream(cudaStreamNonBlocking);
    cca_sim_stream_hold(s);
    cr_assert_eq(cudaStreamQuery(s), cudaErrorNotReady);
    cr_assert_eq(cudaGetLastError(), cudaErrorNotReady);
    CUDA_OK(cudaStreamQuery(other));
    cca_sim_stream_hold(s);                     /* holding twice is one hold */
    cca_sim_stream_release(s);
    CUDA_OK(cudaStreamQuery(s));
    cca_sim_stream_release(s);                  /* releasing twice is harmless */
    CUDA_OK(cudaStreamQuery(s));
}

Test(sim_streams, stream_synchronize_completes_and_hold_lasts)
{
    cudaStream_t s = new_stream(0);
    cudaEvent_t e = new_event(), later = new_event();
    cca_sim_stream_hold(s);
    CUDA_OK(cudaEventRecord(e, s));
    PENDING(e);
    CUDA_OK(cudaStreamSynchronize(s));
    DONE(e);
    cr_assert_eq(cudaStreamQuery(s), cudaErrorNotReady, "still held");
    CUDA_OK(cudaEventRecord(later, s));
    PENDING(later);
    DONE(e);
    cca_sim_stream_release(s);
    DONE(later);
    CUDA_OK(cudaStreamQuery(s));
    cr_assert_eq(cca_sim_calls(CCA_SIM_STREAM_SYNCHRONIZE), 1);
}

Test(sim_streams, event_synchronize_completes)
{
    cudaStream_t s = new_stream(0);
    cudaEvent_t e = new_event(), later = new_event();
    cca_sim_stream_hold(s);
    CUDA_OK(cudaEventRecord(e, s));
    PENDING(e);
    CUDA_OK(cudaEventSynchronize(e));
    DONE(e);
    CUDA_OK(cudaEventRecord(later, s));
    PENDING(later);
    cca_sim_stream_release(s);
    DONE(later);
}

Test(sim_streams, device_synchronize_completes_the_current_device)
{
    cca_sim_set_device_count(2);
    CUDA_OK(cudaSetDevice(1));
    cudaStream_t s1 = new_stream(0);
    cudaEvent_t e1 = new_event();
    cca_sim_stream_hold(s1);
    CUDA_OK(cudaEventRecord(e1, s1));
    CUDA_OK(cudaSetDevice(0));
    cudaStream_t a = new_stream(0), b = new_stream(cudaStreamNonBlocking);
    cudaEvent_t ea = new_event(), eb = new_event(), el = new_event();
    cca_sim_stream_hold(a);
    cca_sim_stream_hold(b);
    cca_sim_stream_hold(cudaStreamLegacy);
    CUDA_OK(cudaEventRecord(ea, a));
    CUDA_OK(cudaEventRecord(eb, b));
    CUDA_OK(cudaEventRecord(el, NULL));
    PENDING(ea);
    PENDING(eb);
    PENDING(el);
    PENDING(e1);
    CUDA_OK(cudaDeviceSynchronize());
    DONE(ea);
    DONE(eb);
    DONE(el);
    PENDING(e1);                                 /* another device */
    cr_assert_eq(cca_sim_device_syncs(0), 1);
    cr_assert_eq(cca_sim_device_syncs(1), 0);
    CUDA_OK(cudaSetDevice(1));
    CUDA_OK(cudaDeviceSynchronize());
    DONE(e1);
}

Test(sim_streams, cuda_free_completes_pending_work)
{
    cudaStream_t s = new_stream(0);
    cudaEvent_t e = new_event();
    void *p;
    CUDA_OK(cudaMalloc(&p, 4096));
    cca_sim_stream_hold(s);
    CUDA_OK(cudaEventRecord(e, s));
    CUDA_OK(cudaFree(NULL));
    PENDING(e);
    cr_assert_eq(cudaFree((char *)p + 512), cudaErrorInvalidValue);
    PENDING(e);
    CUDA_OK(cudaFree(p));
    DONE(e);
    cr_assert_eq(cca_sim_device_syncs(0), 1);
}

Test(sim_streams, release_completes)
{
    cudaStream_t s = new_stream(0);
    cudaEvent_t e[3] = { new_event(), new_event(), new_event() };
    cca_sim_stream_hold(s);
    for (int i = 0; i < 3; i++) CUDA_OK(cudaEventRecord(e[i], s));
    for (int i = 0; i < 3; i++) PENDING(e[i]);
    cca_sim_stream_release(s);
    for (int i = 0; i < 3; i++) DONE(e[i]);
    cr_assert_eq(cca_sim_device_syncs(0), 0);
}

Test(sim_streams, recording_again_replaces)
{
    cudaStream_t held = new_stream(cudaStreamNonBlocking), idle = new_stream(cudaStreamNonBlocking);
    cudaEvent_t e = new_event();
    cca_sim_stream_hold(held);
    CUDA_OK(cudaEventRecord(e, held));
    PENDING(e);
    CUDA_OK(cudaEventRecord(e, idle));
    DONE(e);
    CUDA_OK(cudaEventRecord(e, held));
    PENDING(e);
    cca_sim_stream_release(held);
    DONE(e);
}

Test(sim_streams, wait_event_orders_later_work)
{
    cudaStream_t s1 = new_stream(cudaStreamNonBlocking), s2 = new_stream(cudaStreamNonBlocking);
    cudaEvent_t e1 = new_event(), before = new_event(), after = new_event(), other = new_event();
    cca_sim_stream_hold(s1);
    CUDA_OK(cudaEventRecord(e1, s1));
    CUDA_OK(cudaEventRecord(before, s2));
    CUDA_OK(cudaStreamWaitEvent(s2, e1, 0));
    CUDA_OK(cudaEventRecord(after, s2));
    DONE(before);
    PENDING(after);
    cr_assert_eq(cudaStreamQuery(s2), cudaErrorNotReady);
    /* the wait is on what e1 stood for when it was made */
    CUDA_OK(cudaEventRecord(e1, s2));
    PENDING(e1);
    CUDA_OK(cudaEventRecord(other, NULL));  /* the legacy stream does not wait for non-blocking streams */
    DONE(other);
    cca_sim_stream_release(s1);
    DONE(after);
    DONE(e1);
    CUDA_OK(cudaStreamQuery(s2));
    cr_assert_eq(cudaStreamWaitEvent(s2, e1, 2), cudaErrorInvalidValue);
    CUDA_OK(cudaStreamWaitEvent(s2, e1, cudaEventWaitExternal));
}

Test(sim_streams, wait_on_complete_event_is_free)
{
    cudaStream_t s1 = new_stream(cudaStreamNonBlocking), s2 = new_stream(cudaStreamNonBlocking);
    cudaEvent_t e1 = new_event(), e2 = new_event();
    CUDA_OK(cudaEventRecord(e1, s1));
    cca_sim_stream_hold(s1);
    CUDA_OK(cudaStreamWaitEvent(s2, e1, 0));
    CUDA_OK(cudaEventRecord(e2, s2));
    DONE(e2);
}

Test(sim_streams, synchronize_completes_what_the_stream_waits_for)
{
    cudaStream_t s1 = new_stream(cudaStreamNonBlocking), s2 = new_stream(cudaStreamNonBlocking);
    cudaEvent_t e1 = new_event(), e2 = new_event(), later1 = new_event();
    cca_sim_stream_hold(s1);
    CUDA_OK(cudaEventRecord(e1, s1));
    CUDA_OK(cudaStreamWaitEvent(s2, e1, 0));
    CUDA_OK(cudaEventRecord(e2, s2));
    CUDA_OK(cudaEventRecord(later1, s1));
    PENDING(e2);
    CUDA_OK(cudaStreamSynchronize(s2));
    DONE(e2);
    DONE(e1);
    PENDING(later1);                         /* not waited for: the hold goes on */
    cca_sim_stream_release(s1);
    DONE(later1);
}

Test(sim_streams, chains_across_streams)
{
    enum { N = 6 };
    cudaStream_t s[N];
    cudaEvent_t e[N];
    for (int i = 0; i < N; i++) s[i] = new_stream(cudaStreamNonBlocking), e[i] = new_event();
    cca_sim_stream_hold(s[0]);
    CUDA_OK(cudaEventRecord(e[0], s[0]));
    for (int i = 1; i < N; i++) {
        CUDA_OK(cudaStreamWaitEvent(s[i], e[i - 1], 0));
        CUDA_OK(cudaEventRecord(e[i], s[i]));
    }
    for (int i = 0; i < N; i++) PENDING(e[i]);
    /* waits both ways: s[0] now waits for the end of the chain */
    CUDA_OK(cudaStreamWaitEvent(s[0], e[N - 1], 0));
    cudaEvent_t last = new_event();
    CUDA_OK(cudaEventRecord(last, s[0]));
    PENDING(last);
    cca_sim_stream_release(s[0]);
    for (int i = 0; i < N; i++) DONE(e[i]);
    DONE(last);
}

Test(sim_streams, release_does_not_complete_other_held_work)
{
    cudaStream_t s1 = new_stream(cudaStreamNonBlocking), s2 = new_stream(cudaStreamNonBlocking);
    cudaEvent_t e1 = new_event(), e2 = new_event();
    cca_sim_stream_hold(s1);
    cca_sim_stream_hold(s2);
    CUDA_OK(cudaEventRecord(e1, s1));
    CUDA_OK(cudaStreamWaitEvent(s2, e1, 0));
    CUDA_OK(cudaEventRecord(e2, s2));
    cca_sim_stream_release(s2);
    PENDING(e2);                             /* s2's work still waits for s1's */
    cr_assert_eq(cudaStreamQuery(s2), cudaErrorNotReady);
    cca_sim_stream_release(s1);
    DONE(e2);
    CUDA_OK(cudaStreamQuery(s2));
}

Test(sim_streams, legacy_stream_synchronizes_with_blocking_streams)
{
    cudaStream_t blocking = new_stream(0), nb = new_stream(cudaStreamNonBlocking);
    cudaEvent_t e = new_event(), f = new_event();
    /* a busy blocking stream delays later legacy-stream work */
    cca_sim_stream_hold(blocking);
    CUDA_OK(cudaEventRecord(e, NULL));
    PENDING(e);
    /* the per-thread stream waits for the legacy stream's work (which waits for `blocking`) */
    CUDA_OK(cudaEventRecord(f, cudaStreamPerThread));
    PENDING(f);
    cca_sim_stream_release(blocking);
    DONE(e);
    DONE(f);
    /* a busy legacy stream delays later work on blocking streams, not on non-blocking ones */
    cca_sim_stream_hold(cudaStreamLegacy);
    CUDA_OK(cudaEventRecord(e, blocking));
    PENDING(e);
    CUDA_OK(cudaEventRecord(f, cudaStreamPerThread));
    PENDING(f);
    CUDA_OK(cudaEventRecord(f, nb));
    DONE(f);
    cr_assert_eq(cudaStreamQuery(NULL), cudaErrorNotReady);
    cca_sim_stream_release(NULL);
    DONE(e);
    /* a busy non-blocking stream does not */
    cca_sim_stream_hold(nb);
    CUDA_OK(cudaEventRecord(e, NULL));
    DONE(e);
}

struct ptds_arg { cudaError_t held_query, rec, ev, st; unsigned long long id; };

static void *ptds_thread(void *p)
{
    struct ptds_arg *a = p;
    cudaEvent_t e;
    cudaEventCreate(&e);
    cca_sim_stream_hold(cudaStreamPerThread);
    a->rec = cudaEventRecord(e, cudaStreamPerThread);
    a->held_query = cudaEventQuery(e);
    a->st = cudaStreamQuery(cudaStreamPerThread);
    cudaStreamGetId(cudaStreamPerThread, &a->id);
    cca_sim_stream_release(cudaStreamPerThread);
    a->ev = cudaEventQuery(e);
    cudaEventDestroy(e);
    return NULL;
}

Test(sim_streams, per_thread_default_streams_are_separate)
{
    struct ptds_arg a = { 0 };
    run_in_thread(ptds_thread, &a);
    cr_assert_eq(a.rec, cudaSuccess);
    cr_assert_eq(a.held_query, cudaErrorNotReady);
    cr_assert_eq(a.st, cudaErrorNotReady);
    cr_assert_eq(a.ev, cudaSuccess);
    unsigned long long mine;
    CUDA_OK(cudaStreamGetId(cudaStreamPerThread, &mine));
    cr_assert_neq(mine, a.id);
    /* holding another thread's per-thread stream does not touch ours */
    cudaEvent_t e = new_event();
    CUDA_OK(cudaEventRecord(e, cudaStreamPerThread));
    DONE(e);
}

struct id_arg { unsigned long long ptds, ptds_dev1, legacy; };

static void *id_thread(void *p)
{
    struct id_arg *a = p;
    cudaStreamGetId(cudaStreamPerThread, &a->ptds);
    cudaStreamGetId(NULL, &a->legacy);
    cudaSetDevice(1);
    cudaStreamGetId(cudaStreamPerThread, &a->ptds_dev1);
    return NULL;
}

static int contains(const unsigned long long *v, int n, unsigned long long x)
{
    for (int i = 0; i < n; i++)
        if (v[i] == x) return 1;
    return 0;
}

Test(sim_streams, stream_ids_are_unique_and_never_reused)
{
    cca_sim_set_device_count(2);
    unsigned long long ids[32];
    int n = 0;
    unsigned long long id, id2;
    CUDA_OK(cudaStreamGetId(NULL, &id));
    CUDA_OK(cudaStreamGetId(cudaStreamLegacy, &id2));
    cr_assert_eq(id, id2, "NULL and cudaStreamLegacy are one stream");
    ids[n++] = id;
    CUDA_OK(cudaStreamGetId(cudaStreamPerThread, &id));
    CUDA_OK(cudaStreamGetId(cudaStreamPerThread, &id2));
    cr_assert_eq(id, id2, "stable");
    cr_assert(!contains(ids, n, id));
    ids[n++] = id;
    struct id_arg t1 = { 0 }, t2 = { 0 };
    run_in_thread(id_thread, &t1);
    run_in_thread(id_thread, &t2);
    cr_assert_eq(t1.legacy, ids[0], "the legacy stream is shared by all threads");
    cr_assert_eq(t2.legacy, ids[0]);
    unsigned long long more[] = { t1.ptds, t1.ptds_dev1, t2.ptds, t2.ptds_dev1 };
    for (int i = 0; i < 4; i++) {
        cr_assert(!contains(ids, n, more[i]), "per-thread stream %d", i);
        ids[n++] = more[i];
    }
    CUDA_OK(cudaSetDevice(1));
    CUDA_OK(cudaStreamGetId(NULL, &id));
    cr_assert(!contains(ids, n, id), "each device has its own legacy stream");
    ids[n++] = id;
    CUDA_OK(cudaStreamGetId(cudaStreamPerThread, &id));
    cr_assert(!contains(ids, n, id));
    ids[n++] = id;
    CUDA_OK(cudaSetDevice(0));
    cudaStream_t s = new_stream(0), s2;
    CUDA_OK(cudaStreamGetId(s, &id));
    cr_assert(!contains(ids, n, id));
    ids[n++] = id;
    CUDA_OK(cudaStreamDestroy(s));
    CUDA_OK(cudaStreamCreate(&s2));
    cr_assert_eq(s2, s, "the handle is reused after destroy");
    CUDA_OK(cudaStreamGetId(s2, &id));
    cr_assert(!contains(ids, n, id), "the id is not");
    ids[n++] = id;
    cr_assert_eq(cudaStreamGetId(s2, NULL), cudaErrorInvalidValue);
    CUDA_OK(cudaStreamDestroy(s2));
    cr_assert_eq(cudaStreamGetId(s2, &id), cudaErrorInvalidResourceHandle);
}

Test(sim_streams, record_on_another_devices_stream_fails)
{
    cca_sim_set_device_count(2);
    CUDA_OK(cudaSetDevice(1));
    cudaStream_t s1 = new_stream(0);
    cudaEvent_t e1 = new_event();
    CUDA_OK(cudaSetDevice(0));
    cudaEvent_t e0 = new_event();
    cr_assert_eq(cudaEventRecord(e0, s1), cudaErrorInvalidResourceHandle);
    cr_assert_eq(cudaGetLastError(), cudaErrorInvalidResourceHandle);
    cr_assert_eq(cudaEventRecord(e1, NULL), cudaErrorInvalidResourceHandle, "device 0's legacy stream");
    cr_assert_eq(cudaEventRecord(e1, cudaStreamPerThread), cudaErrorInvalidResourceHandle);
    CUDA_OK(cudaEventRecord(e1, s1));         /* same device as the event: fine from anywhere */
    CUDA_OK(cudaEventRecord(e0, NULL));
    /* waits may cross devices */
    cca_sim_stream_hold(s1);
    CUDA_OK(cudaEventRecord(e1, s1));
    cudaStream_t s0 = new_stream(0);
    CUDA_OK(cudaStreamWaitEvent(s0, e1, 0));
    CUDA_OK(cudaEventRecord(e0, s0));
    PENDING(e0);
    cca_sim_stream_release(s1);
    DONE(e0);
}

Test(sim_streams, invalid_handles_are_errors)
{
    cudaStream_t s = new_stream(0);
    cudaEvent_t e = new_event(), ok = new_event();
    CUDA_OK(cudaStreamDestroy(s));
    CUDA_OK(cudaEventDestroy(e));
    unsigned long long id;
    cr_assert_eq(cudaStreamQuery(s), cudaErrorInvalidResourceHandle);
    cr_assert_eq(cudaStreamSynchronize(s), cudaErrorInvalidResourceHandle);
    cr_assert_eq(cudaStreamGetId(s, &id), cudaErrorInvalidResourceHandle);
    cr_assert_eq(cudaStreamDestroy(s), cudaErrorInvalidResourceHandle);
    cr_assert_eq(cudaEventQuery(e), cudaErrorInvalidResourceHandle);
    cr_assert_eq(cudaEventSynchronize(e), cudaErrorInvalidResourceHandle);
    cr_assert_eq(cudaEventDestroy(e), cudaErrorInvalidResourceHandle);
    cr_assert_eq(cudaEventRecord(ok, s), cudaErrorInvalidResourceHandle);
    cr_assert_eq(cudaEventRecord(e, NULL), cudaErrorInvalidResourceHandle);
    cr_assert_eq(cudaStreamWaitEvent(NULL, e, 0), cudaErrorInvalidResourceHandle);
    cr_assert_eq(cudaStreamWaitEvent(s, ok, 0), cudaErrorInvalidResourceHandle);
    cr_assert_eq(cudaStreamDestroy(NULL), cudaErrorInvalidResourceHandle);
    cr_assert_eq(cudaStreamDestroy(cudaStreamLegacy), cudaErrorInvalidResourceHandle);
    cr_assert_eq(cudaStreamDestroy(cudaStreamPerThread), cudaErrorInvalidResourceHandle);
    /* garbage handles are refused without being dereferenced */
    int local;
    cudaStream_t junk[] = { (cudaStream_t)(uintptr_t)0x3, (cudaStream_t)&local, (cudaStream_t)(uintptr_t)~0ull };
    for (int i = 0; i < 3; i++) {
        cr_assert_eq(cudaStreamQuery(junk[i]), cudaErrorInvalidResourceHandle);
        cr_assert_eq(cudaEventQuery((cudaEvent_t)junk[i]), cudaErrorInvalidResourceHandle);
        cca_sim_stream_hold(junk[i]);
        cca_sim_stream_release(junk[i]);
    }
    cr_assert_eq(cudaEventQuery(NULL), cudaErrorInvalidResourceHandle);
    cr_assert_eq(cudaGetLastError(), cudaErrorInvalidResourceHandle);
    /* handles of the world before a reset */
    cudaStream_t old = new_stream(0);
    cudaEvent_t olde = new_event();
    cca_sim_stream_hold(old);
    CUDA_OK(cudaEventRecord(olde, old));
    cca_sim_reset();
    cr_assert_eq(cudaStreamQuery(old), cudaErrorInvalidResourceHandle);
    cr_assert_eq(cudaEventQuery(olde), cudaErrorInvalidResourceHandle);
    cr_assert_eq(cudaEventRecord(olde, old), cudaErrorInvalidResourceHandle);
    cca_sim_stream_release(old);
    CUDA_OK(cudaStreamQuery(NULL));
}

Test(sim_streams, flags_are_checked)
{
    cudaStream_t s;
    cudaEvent_t e;
    cr_assert_eq(cudaStreamCreateWithFlags(&s, 4), cudaErrorInvalidValue);
    cr_assert_eq(cudaStreamCreate(NULL), cudaErrorInvalidValue);
    cr_assert_eq(cudaEventCreateWithFlags(&e, 0x100), cudaErrorInvalidValue);
    cr_assert_eq(cudaEventCreateWithFlags(&e, cudaEventInterprocess), cudaErrorInvalidValue);
    cr_assert_eq(cudaEventCreate(NULL), cudaErrorInvalidValue);
    CUDA_OK(cudaEventCreateWithFlags(&e, cudaEventInterprocess | cudaEventDisableTiming));
    CUDA_OK(cudaEventCreateWithFlags(&e, cudaEventBlockingSync));
    CUDA_OK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    cr_assert_eq(cca_sim_calls(CCA_SIM_STREAM_CREATE), 3);
    cr_assert_eq(cca_sim_calls(CCA_SIM_EVENT_CREATE), 5);
}

Test(sim_streams, destroyed_stream_keeps_its_work)
{
    cudaStream_t s = new_stream(0);
    cudaEvent_t e = new_event(), f = new_event();
    cca_sim_stream_hold(s);
    CUDA_OK(cudaEventRecord(e, s));
    CUDA_OK(cudaStreamDestroy(s));
    PENDING(e);
    cudaStream_t s2 = new_stream(0);
    cr_assert_neq(s2, s, "a handle with pending work is not reused yet");
    cca_sim_stream_release(s);               /* the control still reaches it */
    DONE(e);
    cudaStream_t s3 = new_stream(0);
    cr_assert_eq(s3, s, "drained: now the handle is reused");
    cca_sim_stream_hold(s3);
    CUDA_OK(cudaEventRecord(f, s3));
    CUDA_OK(cudaStreamDestroy(s3));
    PENDING(f);
    CUDA_OK(cudaDeviceSynchronize());
    DONE(f);
    cca_sim_reset();
    NO_LEAKS();
}

struct exit_arg { cudaEvent_t e; cudaError_t rec; };

static void *hold_and_exit_thread(void *p)
{
    struct exit_arg *a = p;
    cca_sim_stream_hold(cudaStreamPerThread);
    a->rec = cudaEventRecord(a->e, cudaStreamPerThread);
    return NULL;                             /* exits with its stream held */
}

Test(sim_streams, per_thread_stream_of_an_exited_thread_keeps_its_work)
{
    struct exit_arg a = { new_event(), cudaErrorUnknown };
    run_in_thread(hold_and_exit_thread, &a);
    cr_assert_eq(a.rec, cudaSuccess);
    PENDING(a.e);
    CUDA_OK(cudaDeviceSynchronize());
    DONE(a.e);
    struct exit_arg b = { new_event(), cudaErrorUnknown };
    run_in_thread(hold_and_exit_thread, &b);
    PENDING(b.e);
    void *p;
    CUDA_OK(cudaMalloc(&p, 512));
    CUDA_OK(cudaFree(p));
    DONE(b.e);
}

Test(sim_streams, many_holds_and_records_do_not_leak_or_stall)
{
    cudaStream_t s[4];
    cudaEvent_t e[4];
    for (int i = 0; i < 4; i++) s[i] = new_stream(i % 2 ? cudaStreamNonBlocking : 0), e[i] = new_event();
    for (int round = 0; round < 2000; round++) {
        int h = round % 4;
        cca_sim_stream_hold(s[h]);
        for (int i = 0; i < 4; i++) {
            CUDA_OK(cudaEventRecord(e[i], s[i]));
            CUDA_OK(cudaStreamWaitEvent(s[(i + 1) % 4], e[i], 0));
        }
        CUDA_OK(cudaEventRecord(e[0], NULL));
        if (round % 3 == 0) CUDA_OK(cudaStreamSynchronize(s[(h + 2) % 4]));
        cca_sim_stream_release(s[h]);
        for (int i = 0; i < 4; i++) DONE(e[i]);
        for (int i = 0; i < 4; i++) CUDA_OK(cudaStreamQuery(s[i]));
    }
    cca_sim_reset();
    NO_LEAKS();
}

Test(sim_streams, capture_state_per_stream)
{
    cudaStream_t s, o;
    cr_assert_eq(cudaStreamCreate(&s), cudaSuccess);
    cr_assert_eq(cudaStreamCreate(&o), cudaSuccess);
    enum cudaStreamCaptureStatus st = cudaStreamCaptureStatusActive;
    cr_assert_eq(cudaStreamIsCapturing(s, &st), cudaSuccess);
    cr_assert_eq(st, cudaStreamCaptureStatusNone);
    cr_assert_eq(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal), cudaSuccess);
    cr_assert_eq(cudaStreamIsCapturing(s, &st), cudaSuccess);
    cr_assert_eq(st, cudaStreamCaptureStatusActive);
    cr_assert_eq(cudaStreamIsCapturing(o, &st), cudaSuccess);
    cr_assert_eq(st, cudaStreamCaptureStatusNone, "per stream");
    cr_assert_eq(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal), cudaErrorIllegalState);
    cr_assert_eq(cudaGetLastError(), cudaErrorIllegalState);
    cr_assert_eq(cudaStreamBeginCapture(NULL, cudaStreamCaptureModeGlobal), cudaErrorStreamCaptureUnsupported);
    (void)cudaGetLastError();
    cudaGraph_t g = NULL;
    cr_assert_eq(cudaStreamEndCapture(s, &g), cudaSuccess);
    cr_assert_not_null(g);
    cr_assert_eq(cudaStreamIsCapturing(s, &st), cudaSuccess);
    cr_assert_eq(st, cudaStreamCaptureStatusNone);
    cr_assert_eq(cudaStreamEndCapture(s, &g), cudaErrorIllegalState);
    (void)cudaGetLastError();
    cr_assert_eq(cca_sim_calls(CCA_SIM_STREAM_IS_CAPTURING), 4);
    cr_assert_eq(cca_sim_calls(CCA_SIM_STREAM_BEGIN_CAPTURE), 3);
    cr_assert_eq(cca_sim_calls(CCA_SIM_STREAM_END_CAPTURE), 2);
    cr_assert_str_eq(cca_sim_api_name(CCA_SIM_STREAM_IS_CAPTURING), "cudaStreamIsCapturing");
    cudaStreamDestroy(s);
    cudaStreamDestroy(o);
}
