/* ptrmap.c - handed-out address -> block, so cca_free finds its block
 * without scanning: open addressing with linear probing and backward-shift
 * deletion (no tombstones), keys and values side by side (one cache line
 * per probe), grown at a quarter load (short probe runs: a free's lookup
 * and deletion stay a probe or two). The lookups are inline (streams.h). */
#include <stdlib.h>
#include "internal.h"

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

bool _cca_ptrmap_grow(cca_ptrmap_t *m)
{
    cca_ptrmap_t bigger = { calloc((m->mask + 1) * 2, sizeof *m->slots), m->mask * 2 + 1, 0, 0 };
    if (!bigger.slots) return false;
    bigger.bytes = (bigger.mask + 1) * sizeof *bigger.slots;
    for (size_t i = 0; i <= m->mask; i++)
        if (m->slots[i].key) _cca_ptrmap_put(&bigger, m->slots[i].key, m->slots[i].block);
    _cca_ptrmap_fini(m);
    *m = bigger;
    return true;
}

void _cca_ptrmap_erase(cca_ptrmap_t *m, cca_ptrmap_slot_t *slot)
{
    size_t i = (size_t)(slot - m->slots);
    /* backward shift: pull later members of the probe run into the hole */
    for (size_t j = (i + 1) & m->mask; m->slots[j].key; j = (j + 1) & m->mask) {
        size_t home = _cca_ptrmap_home(m->slots[j].key, m->mask);
        if (((j - home) & m->mask) >= ((j - i) & m->mask)) {
            m->slots[i] = m->slots[j];
            i = j;
        }
    }
    m->slots[i].key = 0;
    m->slots[i].block = NULL;
    m->count--;
}
