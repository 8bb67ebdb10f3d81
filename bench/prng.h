/* prng.h - a small deterministic PRNG (splitmix64) so that every allocator
 * sees the same sequence of sizes and frees. */
#ifndef BENCH_PRNG_H
#define BENCH_PRNG_H

#include <math.h>
#include <stdint.h>

typedef struct bench_rng { uint64_t s; } bench_rng_t;

static inline uint64_t bench_rng_next(bench_rng_t *r)
{
    uint64_t z = (r->s += 0x9e3779b97f4a7c15u);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
    return z ^ (z >> 31);
}

/* Uniform in [0, 1). */
static inline double bench_rng_unit(bench_rng_t *r)
{
    return (double)(bench_rng_next(r) >> 11) * (1.0 / 9007199254740992.0);
}

/* Uniform integer in [0, n). */
static inline uint64_t bench_rng_below(bench_rng_t *r, uint64_t n)
{
    return (uint64_t)(bench_rng_unit(r) * (double)n);
}

/* Log-uniform size in [lo, hi]. */
static inline uint64_t bench_rng_log_uniform(bench_rng_t *r, double lo, double hi)
{
    double v = exp(log(lo) + bench_rng_unit(r) * (log(hi) - log(lo)));
    return (uint64_t)v;
}

#endif
