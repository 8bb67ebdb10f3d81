/* ptrmap.c - handed-out address -> block, so cca_free finds its block
 * without scanning: the shared map (common/cca_u64map.h: linear probing,
 * backward-shift deletion, key and block side by side, one cache line per
 * probe), 1024 slots at first and grown at a quarter load (short probe
 * runs: a free's lookup and deletion stay a probe or two). Its slots'
 * bytes count in host_bytes (_cca_stream_host_bytes). The lookups are
 * inline (streams.h), growth and deletion out of line here. */
#include "internal.h"

bool _cca_ptrmap_init(cca_ptrmap_t *m)
{
    return ptrmap_init(m, 1024);
}

void _cca_ptrmap_fini(cca_ptrmap_t *m)
{
    ptrmap_fini(m);
}

bool _cca_ptrmap_grow(cca_ptrmap_t *m)
{
    return ptrmap_grow(m);
}

void _cca_ptrmap_erase(cca_ptrmap_t *m, cca_ptrmap_slot_t *slot)
{
    ptrmap_erase(m, slot);
}
