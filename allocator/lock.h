/* lock.h - the allocator's lock: a test-and-set spinlock. Taking it is one
 * atomic exchange, releasing it one plain store, which is what an
 * allocator's short critical sections want; a waiter spins briefly, then
 * yields the processor so an oversubscribed machine still makes progress. */
#ifndef CCA_LOCK_H
#define CCA_LOCK_H

#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>

typedef struct cca_lock { _Atomic int held; } cca_lock_t;

static inline void _cca_lock_init(cca_lock_t *l) { atomic_init(&l->held, 0); }

static inline void _cca_cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield");
#endif
}

static void _cca_lock_wait(cca_lock_t *l)
{
    for (unsigned spins = 0;; spins++) {
        if (!atomic_load_explicit(&l->held, memory_order_relaxed) &&
            !atomic_exchange_explicit(&l->held, 1, memory_order_acquire))
            return;
        if (spins < 64) _cca_cpu_relax();
        else sched_yield();
    }
}

static inline void _cca_lock(cca_lock_t *l)
{
    if (__builtin_expect(atomic_exchange_explicit(&l->held, 1, memory_order_acquire), 0))
        _cca_lock_wait(l);
}

static inline bool _cca_trylock(cca_lock_t *l)
{
    return !atomic_load_explicit(&l->held, memory_order_relaxed) &&
           !atomic_exchange_explicit(&l->held, 1, memory_order_acquire);
}

static inline void _cca_unlock(cca_lock_t *l)
{
    atomic_store_explicit(&l->held, 0, memory_order_release);
}

#endif /* CCA_LOCK_H */
