/* ptrmap.c - handed-out address -> block, so cca_free finds its block
 * without scanning: open addressing with linear probing and backward-shift
 * deletion (no tombstones), keys and values side by side (one cache line
 * per probe), grown at half load. */
#include <stdlib.h>
#include "internal.h"

static inline size_t slot_of(uintptr_t key, size_t mask)
{
    uint64_t x = (uint64_t)key >> 9;           /* addresses are 512-B aligned */
    x *= 0x9E3779B97F4A7C15ull;
    return (size_t)(x >> 20) & mask;
}

bool _cca_ptrmap_init(cca_ptrmap_t *m)
{
    size_t n = 1024;
    m->slots = calloc(n, sizeof *m->slots);
    m->mask = n - 1;
    m->count = 0;
    m->bytes = m->slots ? n * sizeof *m->slots : 0;
    return m->slots != NULL;
}

void _cca_ptrmap_fini(cca_ptrmap_t *m)
{
    free(m->slots);
    m->slots = NULL;
    m->bytes = 0;
}

static void put_unchecked(cca_ptrmap_t *m, uintptr_t key, cca_block_t *b)
{
    size_t i = slot_of(key, m->mask);
    while (m->slots[i].key) i = (i + 1) & m->mask;
    m->slots[i].key = key;
    m->slots[i].block = b;
    m->count++;
}

static bool grow(cca_ptrmap_t *m)
{
    cca_ptrmap_t bigger = { calloc((m->mask + 1) * 2, sizeof *m->slots), m->mask * 2 + 1, 0, 0 };
    if (!bigger.slots) return false;
    bigger.bytes = (bigger.mask + 1) * sizeof *bigger.slots;
    for (size_t i = 0; i <= m->mask; i++)
        if (m->slots[i].key) put_unchecked(&bigger, m->slots[i].key, m->slots[i].block);
    _cca_ptrmap_fini(m);
    *m = bigger;
    return true;
}

/* Makes room for one more key, so a later put cannot fail. */
bool _cca_ptrmap_reserve(cca_ptrmap_t *m)
{
    return (m->count + 1) * 2 <= m->mask + 1 || grow(m);
}

/* Adds key; the caller made room with _cca_ptrmap_reserve first. */
void _cca_ptrmap_put(cca_ptrmap_t *m, uintptr_t key, cca_block_t *b)
{
    put_unchecked(m, key, b);
}

cca_block_t *_cca_ptrmap_get(const cca_ptrmap_t *m, uintptr_t key)
{
    for (size_t i = slot_of(key, m->mask); m->slots[i].key; i = (i + 1) & m->mask)
        if (m->slots[i].key == key) return m->slots[i].block;
    return NULL;
}

cca_block_t *_cca_ptrmap_take(cca_ptrmap_t *m, uintptr_t key)
{
    size_t i = slot_of(key, m->mask);
    while (m->slots[i].key && m->slots[i].key != key) i = (i + 1) & m->mask;
    if (!m->slots[i].key) return NULL;
    cca_block_t *b = m->slots[i].block;
    /* backward shift: pull later members of the probe run into the hole */
    for (size_t j = (i + 1) & m->mask; m->slots[j].key; j = (j + 1) & m->mask) {
        size_t home = slot_of(m->slots[j].key, m->mask);
        if (((j - home) & m->mask) >= ((j - i) & m->mask)) {
            m->slots[i] = m->slots[j];
            i = j;
        }
    }
    m->slots[i].key = 0;
    m->slots[i].block = NULL;
    m->count--;
    return b;
}
