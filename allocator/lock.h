/* lock.h - the allocator's locks: a mutex that spins briefly, then sleeps
 * on a futex. Taking it free is one compare-and-swap, releasing it one
 * exchange (and a wake only when someone sleeps): the three states of
 * Drepper's "Futexes are tricky" (free, held, held with sleepers). No
 * sched_yield, whose cost on a busy machine is a time slice. Sleepers are
 * woken one at a time, in the kernel's order (first come first woken at
 * equal priority); a woken thread may lose the lock to one still running,
 * and sleeps again. A ticket lock (strict turns) was measured first and
 * dropped: with two threads on one stream on two busy cores every turn
 * went to a thread that had to be woken, 0.02x one thread's throughput
 * (docs/history.md, "Locks").
 *
 * Each lock keeps its own figures, jemalloc's mutex profiling: its
 * acquisitions (one add by the holder), and only when it had to wait, its
 * waits and their total and longest time - always on, since an
 * uncontended acquisition pays only the add. The holder writes them;
 * readers hold the lock (or know no one does). */
#ifndef CCA_LOCK_H
#define CCA_LOCK_H

#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <time.h>
#if defined(__linux__)
#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>
#endif

typedef struct cca_lock_figures {
    uint64_t acquisitions;                            /* every acquisition, trylock's included */
    uint64_t contended;                               /* acquisitions that had to wait */
    uint64_t wait_ns_total, wait_ns_max;              /* their waits */
} cca_lock_figures_t;

enum { CCA_LOCK_FREE, CCA_LOCK_HELD, CCA_LOCK_SLEEPERS };
typedef struct cca_lock {
    _Atomic uint32_t state;                           /* CCA_LOCK_*: the futex word */
    cca_lock_figures_t fig;                           /* written by the holder: acquisitions so far, waits since a reset */
    uint64_t base;                                    /* acquisitions at the last reset */
} cca_lock_t;

#define CCA_LOCK_SPINS 128                            /* pauses before a waiter sleeps */

static inline void _cca_lock_init(cca_lock_t *l)
{
    atomic_init(&l->state, CCA_LOCK_FREE);
    l->fig = (cca_lock_figures_t){ 0 };
    l->base = 0;
}

static inline void _cca_cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield");
#endif
}

static inline uint64_t _cca_lock_now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

static inline void _cca_lock_sleep(cca_lock_t *l)
{
#if defined(__linux__)
    syscall(SYS_futex, (uint32_t *)&l->state, FUTEX_WAIT_PRIVATE, CCA_LOCK_SLEEPERS, NULL, NULL, 0);
#else
    (void)l;
    sched_yield();
#endif
}

static __attribute__((noinline, cold)) void _cca_lock_wake(cca_lock_t *l)
{
#if defined(__linux__)
    syscall(SYS_futex, (uint32_t *)&l->state, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
#else
    (void)l;
#endif
}

/* The lock was held: spin a moment, then sleep until it is ours (taken
 * as "held with sleepers", so its release wakes the next); counted. */
static __attribute__((noinline, cold)) void _cca_lock_wait(cca_lock_t *l)
{
    uint64_t from = _cca_lock_now_ns();
    bool got = false;
    for (unsigned spins = 0; spins < CCA_LOCK_SPINS && !got; spins++) {
        _cca_cpu_relax();
        uint32_t free_ = CCA_LOCK_FREE;
        got = atomic_load_explicit(&l->state, memory_order_relaxed) == CCA_LOCK_FREE &&
              atomic_compare_exchange_weak_explicit(&l->state, &free_, CCA_LOCK_HELD, memory_order_acquire,
                                                    memory_order_relaxed);
    }
    if (!got)
        while (atomic_exchange_explicit(&l->state, CCA_LOCK_SLEEPERS, memory_order_acquire) != CCA_LOCK_FREE)
            _cca_lock_sleep(l);
    uint64_t w = _cca_lock_now_ns() - from;
    l->fig.contended++;
    l->fig.wait_ns_total += w;
    if (w > l->fig.wait_ns_max) l->fig.wait_ns_max = w;
}

/* Takes l; true when it had to wait for it. */
static inline bool _cca_lock_waited(cca_lock_t *l)
{
    uint32_t free_ = CCA_LOCK_FREE;
    bool waited = !atomic_compare_exchange_strong_explicit(&l->state, &free_, CCA_LOCK_HELD, memory_order_acquire,
                                                           memory_order_relaxed);
    if (__builtin_expect(waited, 0)) _cca_lock_wait(l);
    l->fig.acquisitions++;
    return waited;
}

static inline void _cca_lock(cca_lock_t *l) { (void)_cca_lock_waited(l); }

static inline bool _cca_trylock(cca_lock_t *l)
{
    uint32_t free_ = CCA_LOCK_FREE;
    if (atomic_load_explicit(&l->state, memory_order_relaxed) != CCA_LOCK_FREE ||
        !atomic_compare_exchange_strong_explicit(&l->state, &free_, CCA_LOCK_HELD, memory_order_acquire,
                                                 memory_order_relaxed))
        return false;
    l->fig.acquisitions++;
    return true;
}

static inline void _cca_unlock(cca_lock_t *l)
{
    if (__builtin_expect(atomic_exchange_explicit(&l->state, CCA_LOCK_FREE, memory_order_release) == CCA_LOCK_SLEEPERS, 0))
        _cca_lock_wake(l);
}

/* Adds l's figures since its last reset to *to (l held by the caller, or
 * by no one). */
static inline void _cca_lock_figures_add(cca_lock_figures_t *to, const cca_lock_t *l)
{
    to->acquisitions += l->fig.acquisitions - l->base;
    to->contended += l->fig.contended;
    to->wait_ns_total += l->fig.wait_ns_total;
    if (l->fig.wait_ns_max > to->wait_ns_max) to->wait_ns_max = l->fig.wait_ns_max;
}

/* Starts l's figures again from 0. */
static inline void _cca_lock_figures_reset(cca_lock_t *l)
{
    l->base = l->fig.acquisitions;
    l->fig.contended = l->fig.wait_ns_total = l->fig.wait_ns_max = 0;
}

#endif /* CCA_LOCK_H */
