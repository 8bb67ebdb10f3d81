/* cca_u64map.h - the one hash map from a nonzero 64-bit key (an address, a
 * trace's pointer) to the rest of its slot. Open addressing with linear
 * probing, a key and its value side by side in one slot (one cache line
 * per probe), backward-shift deletion (no tombstones: a probe run stops at
 * the first empty slot), doubling when one more key would pass the map's
 * load. Its users: a stream's handed-out address -> block
 * (allocator/streams.h, ptrmap.c), a scope's live blocks (stats/watch.c),
 * the simulated device's allocations (sim/sim_mem.c) and the benchmarks'
 * pointer maps (bench/u64map.h).
 *
 * Why here: common/ is on the include path of every target that uses the
 * map and is installed with nothing. This header holds only static inline
 * code over libc, so including it ties no library to another: sim/ stays
 * free of the allocator, stats/ needs none of the allocator's headers for
 * it, and include/ (the installed API) stays the API.
 *
 * One implementation, written once and stamped out per slot type, as a
 * template would be, so that each user's probe loop is the hand-written
 * one (the allocator's free path counts its instructions):
 *
 *     typedef struct my_map { CCA_U64MAP_FIELDS(my_slot_t); } my_map_t;
 *     CCA_U64MAP_DEFINE(my_map, my_map_t, my_slot_t, key, HOME, NUM, DEN)
 *
 * defines my_map_find, ... below for my_map_t, whose slots are my_slot_t:
 * the key in the field the fourth argument names (`key` here; 0: an empty
 * slot) beside whatever the user keeps. HOME(key, mask) is a key's home slot (cca_u64map_home_addr or
 * _mix below, or the user's own); a map holds at most NUM/DEN of its
 * slots. The map type has exactly the fields of CCA_U64MAP_FIELDS: slots
 * (NULL until the first room is made, and after fini), mask (the slots
 * less one, a power of two less one; 0 without slots), count (keys) and
 * bytes (host bytes of slots, which the allocator counts in host_bytes).
 * A map all zero is an empty one. Defined, all static inline:
 *
 *   my_map_init(m, n)   n slots (a power of two) at once; false: no memory
 *   my_map_reserve(m)   room for one more key (growing if needed); false:
 *                       no memory, the map unchanged. _fits and _grow are
 *                       its two halves, for a user that keeps the growth
 *                       out of line.
 *   my_map_find(m, key) key's slot or NULL (slots must exist); valid until
 *                       the map next changes
 *   my_map_add(m, key)  a slot for key, which must be absent, in room made
 *                       before; the caller fills the rest of the slot
 *   my_map_put(m, key)  key's slot, found or added (room made before)
 *   my_map_erase(m, s)  removes slot s (from _find) and zeroes the slot
 *                       left empty
 *   my_map_fini(m)      frees the slots: an empty map again */
#ifndef CCA_U64MAP_H
#define CCA_U64MAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

/* The slots the first growth of a map that started empty makes. */
#define CCA_U64MAP_FIRST 64

/* Home slots of allocation addresses (device allocations are 512-byte
 * aligned: the low 9 bits are dropped; a Fibonacci product, its bits from
 * 20 up). */
static inline size_t cca_u64map_home_addr(uint64_t key, size_t mask)
{
    uint64_t x = key >> 9;
    x *= 0x9E3779B97F4A7C15ull;
    return (size_t)(x >> 20) & mask;
}

/* Home slots of any keys (values read from a file, aligned or not): an
 * xor-shift, a multiply and an xor-shift, as MurmurHash3's finaliser
 * begins. */
static inline size_t cca_u64map_home_mix(uint64_t key, size_t mask)
{
    key ^= key >> 33;
    key *= 0xff51afd7ed558ccdull;
    key ^= key >> 33;
    return (size_t)key & mask;
}

/* The functions a map's definition makes (unused ones are no warning). */
#define CCA_U64MAP_FN static inline __attribute__((unused))

#define CCA_U64MAP_FIELDS(SLOT) SLOT *slots; size_t mask, count, bytes

#define CCA_U64MAP_DEFINE(P, MAP, SLOT, KEY, HOME, NUM, DEN)                              \
CCA_U64MAP_FN SLOT *P##_find(const MAP *m, uint64_t key)                                  \
{                                                                                         \
    for (size_t i = HOME(key, m->mask); m->slots[i].KEY; i = (i + 1) & m->mask)           \
        if (m->slots[i].KEY == key) return &m->slots[i];                                  \
    return NULL;                                                                          \
}                                                                                         \
                                                                                          \
CCA_U64MAP_FN SLOT *P##_add(MAP *m, uint64_t key)                                         \
{                                                                                         \
    size_t i = HOME(key, m->mask);                                                        \
    while (m->slots[i].KEY) i = (i + 1) & m->mask;                                        \
    m->slots[i].KEY = key;                                                                \
    m->count++;                                                                           \
    return &m->slots[i];                                                                  \
}                                                                                         \
                                                                                          \
CCA_U64MAP_FN SLOT *P##_put(MAP *m, uint64_t key)                                         \
{                                                                                         \
    SLOT *s = P##_find(m, key);                                                           \
    return s ? s : P##_add(m, key);                                                       \
}                                                                                         \
                                                                                          \
/* Moves the keys into n fresh slots, in slot order. */                                   \
CCA_U64MAP_FN bool P##_resize(MAP *m, size_t n)                                           \
{                                                                                         \
    MAP bigger = { .slots = calloc(n, sizeof(SLOT)), .mask = n - 1 };                     \
    if (!bigger.slots) return false;                                                      \
    bigger.bytes = n * sizeof(SLOT);                                                      \
    for (size_t i = 0; m->slots && i <= m->mask; i++)                                     \
        if (m->slots[i].KEY) *P##_add(&bigger, m->slots[i].KEY) = m->slots[i];            \
    free(m->slots);                                                                       \
    *m = bigger;                                                                          \
    return true;                                                                          \
}                                                                                         \
                                                                                          \
CCA_U64MAP_FN bool P##_init(MAP *m, size_t n)                                             \
{                                                                                         \
    *m = (MAP){ 0 };                                                                      \
    return P##_resize(m, n);                                                              \
}                                                                                         \
                                                                                          \
CCA_U64MAP_FN bool P##_fits(const MAP *m)                                                 \
{                                                                                         \
    return (m->count + 1) * (DEN) <= (m->mask + 1) * (NUM);                               \
}                                                                                         \
                                                                                          \
CCA_U64MAP_FN bool P##_grow(MAP *m)                                                       \
{                                                                                         \
    return P##_resize(m, m->slots ? (m->mask + 1) * 2 : CCA_U64MAP_FIRST);                \
}                                                                                         \
                                                                                          \
CCA_U64MAP_FN bool P##_reserve(MAP *m)                                                    \
{                                                                                         \
    return P##_fits(m) || P##_grow(m);                                                    \
}                                                                                         \
                                                                                          \
/* Backward shift: a later key of the probe run moves into the hole unless   */           \
/* its home lies cyclically after the hole, up to where it is.               */           \
CCA_U64MAP_FN void P##_erase(MAP *m, SLOT *slot)                                          \
{                                                                                         \
    size_t i = (size_t)(slot - m->slots);                                                 \
    for (size_t j = (i + 1) & m->mask; m->slots[j].KEY; j = (j + 1) & m->mask) {          \
        size_t home = HOME(m->slots[j].KEY, m->mask);                                     \
        if (((j - home) & m->mask) >= ((j - i) & m->mask)) {                              \
            m->slots[i] = m->slots[j];                                                    \
            i = j;                                                                        \
        }                                                                                 \
    }                                                                                     \
    m->slots[i] = (SLOT){ 0 };                                                            \
    m->count--;                                                                           \
}                                                                                         \
                                                                                          \
CCA_U64MAP_FN void P##_fini(MAP *m)                                                       \
{                                                                                         \
    free(m->slots);                                                                       \
    *m = (MAP){ 0 };                                                                      \
}

#endif
