/* u64map.h - open-addressing hash map from a nonzero 64-bit key to a 32-bit
 * value (linear probing, backward-shift deletion). Used to pair a trace's
 * frees with its allocates by the Pointer column. */
#ifndef BENCH_U64MAP_H
#define BENCH_U64MAP_H

#include <stddef.h>
#include <stdint.h>

typedef struct u64map {
    uint64_t *keys;   /* 0: empty */
    uint32_t *vals;
    size_t cap;       /* power of two */
    size_t len;
} u64map_t;

int  u64map_init(u64map_t *m, size_t expected);
void u64map_fini(u64map_t *m);
/* Inserts or replaces; -1 when out of memory. */
int  u64map_put(u64map_t *m, uint64_t key, uint32_t val);
/* 1 and *val when found, else 0. */
int  u64map_get(const u64map_t *m, uint64_t key, uint32_t *val);
/* 1 and *val when found and removed, else 0. */
int  u64map_take(u64map_t *m, uint64_t key, uint32_t *val);

#endif
