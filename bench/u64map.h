/* u64map.h - the benchmarks' map from a nonzero 64-bit key to a 32-bit
 * value: the shared map (common/cca_u64map.h; linear probing,
 * backward-shift deletion) with a mixing hash, for keys read from a file,
 * grown at three quarters' load. Pairs a trace's frees with its allocates
 * by the Pointer column, and cudaMallocAsync's frees with their streams. */
#ifndef BENCH_U64MAP_H
#define BENCH_U64MAP_H

#include <stddef.h>
#include <stdint.h>
#include "cca_u64map.h"

typedef struct u64map_slot { uint64_t key; uint32_t val; } u64map_slot_t;
typedef struct u64map { CCA_U64MAP_FIELDS(u64map_slot_t); } u64map_t;   /* count: the keys */
CCA_U64MAP_DEFINE(u64map_slots, u64map_t, u64map_slot_t, key, cca_u64map_home_mix, 3, 4)

/* Room for `expected` keys at half load (16 slots at least); -1 when out of memory. */
static inline int u64map_init(u64map_t *m, size_t expected)
{
    size_t cap = 16;
    while (cap < expected * 2) cap *= 2;
    return u64map_slots_init(m, cap) ? 0 : -1;
}

static inline void u64map_fini(u64map_t *m) { u64map_slots_fini(m); }

/* Inserts or replaces; -1 when out of memory. */
static inline int u64map_put(u64map_t *m, uint64_t key, uint32_t val)
{
    if (!u64map_slots_reserve(m)) return -1;
    u64map_slots_put(m, key)->val = val;
    return 0;
}

/* 1 and *val when found and removed, else 0. */
static inline int u64map_take(u64map_t *m, uint64_t key, uint32_t *val)
{
    u64map_slot_t *s = m->slots ? u64map_slots_find(m, key) : NULL;
    if (!s) return 0;
    *val = s->val;
    u64map_slots_erase(m, s);
    return 1;
}

#endif
