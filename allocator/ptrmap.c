/* ptrmap.c - handed-out address -> block, so cca_free finds its block
 * without scanning: open addressing with linear probing and backward-shift
 * deletion (no tombstones), grown at half load. */
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
    m->keys = calloc(n, sizeof *m->keys);
    m->vals = calloc(n, sizeof *m->vals);
    m->mask = n - 1;
    m->count = 0;
    if (!m->keys || !m->vals) { _cca_ptrmap_fini(m); return false; }
    return true;
}

void _cca_ptrmap_fini(cca_ptrmap_t *m)
{
    free(m->keys);
    free(m->vals);
    m->keys = NULL;
    m->vals = NULL;
}

static void put_unchecked(cca_ptrmap_t *m, uintptr_t key, cca_block_t *b)
{
    size_t i = slot_of(key, m->mask);
    while (m->keys[i]) i = (i + 1) & m->mask;
    m->keys[i] = key;
    m->vals[i] = b;
    m->count++;
}

static bool grow(cca_ptrmap_t *m)
{
    cca_ptrmap_t bigger = { calloc((m->mask + 1) * 2, sizeof(uintptr_t)),
                            calloc((m->mask + 1) * 2, sizeof(cca_block_t *)), m->mask * 2 + 1, 0 };
    if (!bigger.keys || !bigger.vals) { _cca_ptrmap_fini(&bigger); return false; }
    for (size_t i = 0; i <= m->mask; i++)
        if (m->keys[i]) put_unchecked(&bigger, m->keys[i], m->vals[i]);
    _cca_ptrmap_fini(m);
    *m = bigger;
    return true;
}

/* Makes room for one more key, so a later put cannot fail. */
bool _cca_ptrmap_reserve(cca_ptrmap_t *m)
{
    return (m->count + 1) * 2 <= m->mask + 1 || grow(m);
}

bool _cca_ptrmap_put(cca_ptrmap_t *m, uintptr_t key, cca_block_t *b)
{
    if ((m->count + 1) * 2 > m->mask + 1 && !grow(m)) return false;
    put_unchecked(m, key, b);
    return true;
}

cca_block_t *_cca_ptrmap_get(const cca_ptrmap_t *m, uintptr_t key)
{
    for (size_t i = slot_of(key, m->mask); m->keys[i]; i = (i + 1) & m->mask)
        if (m->keys[i] == key) return m->vals[i];
    return NULL;
}

cca_block_t *_cca_ptrmap_take(cca_ptrmap_t *m, uintptr_t key)
{
    size_t i = slot_of(key, m->mask);
    while (m->keys[i] && m->keys[i] != key) i = (i + 1) & m->mask;
    if (!m->keys[i]) return NULL;
    cca_block_t *b = m->vals[i];
    /* backward shift: pull later members of the probe run into the hole */
    for (size_t j = (i + 1) & m->mask; m->keys[j]; j = (j + 1) & m->mask) {
        size_t home = slot_of(m->keys[j], m->mask);
        if (((j - home) & m->mask) >= ((j - i) & m->mask)) {
            m->keys[i] = m->keys[j];
            m->vals[i] = m->vals[j];
            i = j;
        }
    }
    m->keys[i] = 0;
    m->vals[i] = NULL;
    m->count--;
    return b;
}
