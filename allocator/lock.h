/* lock.h - the allocator's locks: a ticket lock that sleeps. Taking it is
 * one atomic add (a ticket), releasing it one atomic exchange (the next
 * ticket served) and one load (is anyone asleep?), so waiters are served
 * in the order they came. A waiter spins briefly (a critical section of
 * the hot path is a few hundred instructions), then sleeps on the futex
 * of the ticket served, and every release with sleepers wakes them all:
 * each looks whether its ticket is served and, if not, sleeps again. No
 * sched_yield, whose cost on a busy machine is a time slice.
 *
 * Each lock keeps its own figures, jemalloc's mutex profiling: its
 * acquisitions (the tickets handed out: nothing to count), and only when
 * it had to wait, its waits and their total and longest time - always on,
 * since an uncontended acquisition pays nothing for them. The holder
 * writes them; readers hold the lock. */
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

/* Tickets are 64 bits, so they never wrap and the releases so far count
 * the acquisitions; the futex word is served's low half (the kernel
 * compares 32 bits). */
typedef struct cca_lock {
    _Atomic uint64_t served;                          /* the ticket that holds the lock: releases so far (first:
                                                       * its address is the lock's, one register less) */
    _Atomic uint64_t next;                            /* the next ticket handed out */
    _Atomic uint32_t sleepers;                        /* waiters asleep, or about to sleep, on served */
    cca_lock_figures_t fig;                           /* written by the holder: acquisitions at the last reset, waits since */
} cca_lock_t;

#define CCA_LOCK_SPINS 128                            /* pauses before a waiter sleeps */

static inline void _cca_lock_init(cca_lock_t *l)
{
    atomic_init(&l->next, 0);
    atomic_init(&l->served, 0);
    atomic_init(&l->sleepers, 0);
    l->fig = (cca_lock_figures_t){ 0 };
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

/* Sleeps while l->served is still `seen` (returns at once if it moved). */
static inline uint32_t *_cca_lock_futex_word(cca_lock_t *l)
{
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    return (uint32_t *)&l->served;
#else
    return (uint32_t *)&l->served + 1;
#endif
}

static inline void _cca_lock_sleep(cca_lock_t *l, uint64_t seen)
{
#if defined(__linux__)
    syscall(SYS_futex, _cca_lock_futex_word(l), FUTEX_WAIT_PRIVATE, (uint32_t)seen, NULL, NULL, 0);
#else
    (void)l, (void)seen;
    sched_yield();
#endif
}

static __attribute__((noinline, cold)) void _cca_lock_wake(cca_lock_t *l)
{
#if defined(__linux__)
    syscall(SYS_futex, _cca_lock_futex_word(l), FUTEX_WAKE_PRIVATE, INT32_MAX, NULL, NULL, 0);
#else
    (void)l;
#endif
}

/* Ticket t is not served yet: spin, then sleep until it is; counted. A
 * sleeper is counted before it looks at served for the last time, and a
 * release exchanges served before it looks at the count (both sequentially
 * consistent), so a release either sees the sleeper or the sleeper sees
 * the release. */
static __attribute__((noinline, cold)) void _cca_lock_wait(cca_lock_t *l, uint64_t t)
{
    uint64_t from = _cca_lock_now_ns(), s;
    for (unsigned spins = 0; (s = atomic_load_explicit(&l->served, memory_order_acquire)) != t; spins++) {
        if (spins < CCA_LOCK_SPINS) {
            _cca_cpu_relax();
            continue;
        }
        atomic_fetch_add_explicit(&l->sleepers, 1, memory_order_seq_cst);
        s = atomic_load_explicit(&l->served, memory_order_seq_cst);
        if (s != t) _cca_lock_sleep(l, s);
        atomic_fetch_sub_explicit(&l->sleepers, 1, memory_order_relaxed);
    }
    uint64_t w = _cca_lock_now_ns() - from;
    l->fig.contended++;
    l->fig.wait_ns_total += w;
    if (w > l->fig.wait_ns_max) l->fig.wait_ns_max = w;
}

static inline void _cca_lock(cca_lock_t *l)
{
    uint64_t t = atomic_fetch_add_explicit(&l->next, 1, memory_order_acquire);
    if (__builtin_expect(atomic_load_explicit(&l->served, memory_order_acquire) != t, 0)) _cca_lock_wait(l, t);
}

/* Taken only if free: the next ticket is the one served, and taking it
 * leaves it served (served never passes next). */
static inline bool _cca_trylock(cca_lock_t *l)
{
    uint64_t s = atomic_load_explicit(&l->served, memory_order_relaxed), n = s;
    return atomic_compare_exchange_strong_explicit(&l->next, &n, s + 1, memory_order_acquire, memory_order_relaxed);
}

static inline void _cca_unlock(cca_lock_t *l)
{
    atomic_fetch_add_explicit(&l->served, 1, memory_order_seq_cst);
    if (__builtin_expect(atomic_load_explicit(&l->sleepers, memory_order_seq_cst) != 0, 0)) _cca_lock_wake(l);
}

/* l's acquisitions so far: the releases, and the caller's own while it
 * holds l (`held`: l is held by the caller, else by no one). */
static inline uint64_t _cca_lock_acquired(const cca_lock_t *l, bool held)
{
    return atomic_load_explicit(&l->served, memory_order_relaxed) + held;
}

/* Adds l's figures since its last reset to *to. */
static inline void _cca_lock_figures_add(cca_lock_figures_t *to, const cca_lock_t *l, bool held)
{
    to->acquisitions += _cca_lock_acquired(l, held) - l->fig.acquisitions;
    to->contended += l->fig.contended;
    to->wait_ns_total += l->fig.wait_ns_total;
    if (l->fig.wait_ns_max > to->wait_ns_max) to->wait_ns_max = l->fig.wait_ns_max;
}

/* Starts l's figures again from 0 (fig.acquisitions keeps the count then). */
static inline void _cca_lock_figures_reset(cca_lock_t *l, bool held)
{
    l->fig = (cca_lock_figures_t){ .acquisitions = _cca_lock_acquired(l, held) };
}

#endif /* CCA_LOCK_H */
