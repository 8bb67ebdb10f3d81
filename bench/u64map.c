/* u64map.c - see u64map.h. */
#include "u64map.h"

#include <stdlib.h>

static size_t slot_of(const u64map_t *m, uint64_t key)
{
    key ^= key >> 33;
    key *= 0xff51afd7ed558ccdu;
    key ^= key >> 33;
    return (size_t)key & (m->cap - 1);
}

static int alloc_table(u64map_t *m, size_t cap)
{
    m->keys = calloc(cap, sizeof *m->keys);
    m->vals = calloc(cap, sizeof *m->vals);
    m->cap = cap;
    m->len = 0;
    if (m->keys && m->vals)
        return 0;
    u64map_fini(m);
    return -1;
}

int u64map_init(u64map_t *m, size_t expected)
{
    size_t cap = 16;
    while (cap < expected * 2)
        cap *= 2;
    return alloc_table(m, cap);
}

void u64map_fini(u64map_t *m)
{
    free(m->keys);
    free(m->vals);
    m->keys = NULL;
    m->vals = NULL;
    m->cap = m->len = 0;
}

static int grow(u64map_t *m)
{
    u64map_t bigger;
    if (alloc_table(&bigger, m->cap * 2) != 0)
        return -1;
    for (size_t i = 0; i < m->cap; i++)
        if (m->keys[i])
            u64map_put(&bigger, m->keys[i], m->vals[i]);
    u64map_fini(m);
    *m = bigger;
    return 0;
}

int u64map_put(u64map_t *m, uint64_t key, uint32_t val)
{
    if ((m->len + 1) * 4 > m->cap * 3 && grow(m) != 0)
        return -1;
    size_t i = slot_of(m, key);
    while (m->keys[i] && m->keys[i] != key)
        i = (i + 1) & (m->cap - 1);
    if (!m->keys[i])
        m->len++;
    m->keys[i] = key;
    m->vals[i] = val;
    return 0;
}

static size_t find(const u64map_t *m, uint64_t key)
{
    size_t i = slot_of(m, key);
    while (m->keys[i]) {
        if (m->keys[i] == key)
            return i;
        i = (i + 1) & (m->cap - 1);
    }
    return m->cap;
}

int u64map_get(const u64map_t *m, uint64_t key, uint32_t *val)
{
    size_t i = find(m, key);
    if (i == m->cap)
        return 0;
    *val = m->vals[i];
    return 1;
}

/* Backward-shift deletion: move later entries of the cluster into the hole
 * when their home slot allows it, so that no tombstones are needed. */
static void remove_at(u64map_t *m, size_t hole)
{
    size_t mask = m->cap - 1;
    size_t j = hole;
    for (;;) {
        j = (j + 1) & mask;
        if (!m->keys[j])
            break;
        size_t home = slot_of(m, m->keys[j]);
        if (((j - home) & mask) >= ((j - hole) & mask)) {
            m->keys[hole] = m->keys[j];
            m->vals[hole] = m->vals[j];
            hole = j;
        }
    }
    m->keys[hole] = 0;
    m->len--;
}

int u64map_take(u64map_t *m, uint64_t key, uint32_t *val)
{
    size_t i = find(m, key);
    if (i == m->cap)
        return 0;
    *val = m->vals[i];
    remove_at(m, i);
    return 1;
}
