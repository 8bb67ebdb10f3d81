/* lock.h - a small futex lock: one atomic exchange to take it when free,
 * a short spin, then sleep in the kernel. Cheaper than pthread_mutex on the
 * hot path and fair enough for an allocator's short critical sections. */
#ifndef CCA_LOCK_H
#define CCA_LOCK_H

#include <stdatomic.h>
#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

typedef struct cca_lock { _Atomic int state; } cca_lock_t;   /* 0 free, 1 held, 2 held with waiters */

static inline void _cca_lock_init(cca_lock_t *l) { atomic_init(&l->state, 0); }

static inline void _cca_lock_slow(cca_lock_t *l)
{
    for (int spin = 0; spin < 100; spin++) {
        int expected = 0;
        if (atomic_load_explicit(&l->state, memory_order_relaxed) == 0 &&
            atomic_compare_exchange_weak_explicit(&l->state, &expected, 1,
                memory_order_acquire, memory_order_relaxed))
            return;
#if defined(__x86_64__) || defined(__i386__)
        __builtin_ia32_pause();
#endif
    }
    while (atomic_exchange_explicit(&l->state, 2, memory_order_acquire) != 0)
        syscall(SYS_futex, &l->state, FUTEX_WAIT_PRIVATE, 2, NULL, NULL, 0);
}

static inline void _cca_lock(cca_lock_t *l)
{
    int expected = 0;
    if (__builtin_expect(!atomic_compare_exchange_strong_explicit(&l->state, &expected, 1,
            memory_order_acquire, memory_order_relaxed), 0))
        _cca_lock_slow(l);
}

static inline void _cca_unlock(cca_lock_t *l)
{
    if (__builtin_expect(atomic_exchange_explicit(&l->state, 0, memory_order_release) == 2, 0))
        syscall(SYS_futex, &l->state, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
}

#endif /* CCA_LOCK_H */
