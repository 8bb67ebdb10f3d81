/* stream.c - telling streams apart. A stream is its handle, except the
 * legacy default stream (NULL or cudaStreamLegacy) and cudaStreamPerThread,
 * which names a different stream in each thread and on each device: its
 * runtime id is asked once per thread and device and cached here. */
#include <stdlib.h>
#include "internal.h"

#define PTS_DEVICES 64
#define PTS_TAG 3u                          /* low bits of a per-thread key; handles are aligned */

static __attribute__((tls_model("initial-exec"))) _Thread_local uint64_t pts_key[PTS_DEVICES];     /* 0: not asked yet */

static uint64_t per_thread_key(int device)
{
    if (device >= 0 && device < PTS_DEVICES && pts_key[device]) return pts_key[device];
    int cur = -1;
    unsigned long long id = 0;
    bool switched = false;
    cudaError_t e = cudaGetDevice(&cur);
    if (e == cudaSuccess && cur != device) {
        e = cudaSetDevice(device);           /* the id is the allocator's device's */
        switched = e == cudaSuccess;
    }
    if (e == cudaSuccess) e = cudaStreamGetId(cudaStreamPerThread, &id);
    if (switched && cudaSetDevice(cur) != cudaSuccess) _cca_clear_error();
    if (e != cudaSuccess) {
        _cca_clear_error();
        return 0;                           /* caller reports the failure */
    }
    uint64_t key = ((uint64_t)id << 2) | PTS_TAG;
    if (device >= 0 && device < PTS_DEVICES) pts_key[device] = key;
    return key;
}

uint64_t _cca_stream_key_special(int device, cudaStream_t s)
{
    uintptr_t h = (uintptr_t)s;
    if (h == (uintptr_t)cudaStreamLegacy) return 0;
    if (h != (uintptr_t)cudaStreamPerThread) return h;
    uint64_t key = per_thread_key(device);
    return key ? key : UINT64_MAX;
}

bool _cca_stream_is_per_thread_key(uint64_t key) { return (key & 3u) == PTS_TAG; }

uint64_t _cca_current_per_thread_key(int device) { return per_thread_key(device); }

__attribute__((tls_model("initial-exec"))) _Thread_local cca_stream_cache_t _cca_stream_cache[CCA_STREAM_CACHE];
__attribute__((tls_model("initial-exec"))) _Thread_local unsigned _cca_stream_cache_next;
__attribute__((tls_model("initial-exec"))) _Thread_local unsigned _cca_stream_cache_last;

/* Remembers st for this thread (round robin over a few entries). */
static void remember(cca_allocator_t *a, cca_stream_t *st)
{
    unsigned i = _cca_stream_cache_next++ % CCA_STREAM_CACHE;
    _cca_stream_cache[i] = (cca_stream_cache_t){ a->id, st->key, st };
    _cca_stream_cache_last = i;
}

/* The state of stream `key` (all locked), created on first use. */
cca_stream_t *_cca_stream_get(cca_allocator_t *a, uint64_t key, cudaStream_t s)
{
    cca_stream_t *st = _cca_stream_cached(a, key);
    if (st) return st;
    for (st = a->streams; st && st->key != key; st = st->next) {}
    if (!st) {
        st = calloc(1, sizeof *st);
        if (!st || !_cca_ptrmap_init(&st->live)) {
            free(st);
            return NULL;
        }
        _cca_lock_init(&st->lock);
        _cca_lock(&st->lock);             /* held like every other stream's while all locked */
        st->key = key;
        st->handle = (uintptr_t)s == (uintptr_t)cudaStreamLegacy ? NULL : s;
        if (a->streams_tail) a->streams_tail->next = st;
        else a->streams = st;
        a->streams_tail = st;
    }
    remember(a, st);
    return st;
}

void _cca_stream_free(cca_stream_t *st)
{
    for (cca_block_t *b = st->spare, *bn; b; b = bn) { bn = b->next; free(b); }
    _cca_ptrmap_fini(&st->live);
    free(st);
}
