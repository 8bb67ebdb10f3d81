/* tracefile.c - recording every allocation and free as a trace file
 * (cca_trace_start, the trace_file key), in the CSV layout of RAPIDS RMM's
 * logging adaptor that cca-replay and cca-bench read (docs/replay.md):
 *
 *   #cca-trace 1 device=0 device_memory=85899345920
 *   Thread,Time,Action,Pointer,Size,Stream
 *   0,00:00:00.000000,allocate,0x7f217a600000,2097152,0
 *
 * While it records, a->hooks has CCA_HOOK_TRACE set, so every malloc and
 * free takes the all-locked path and is written there: the hot path is
 * unchanged (off, it costs nothing). Rows go to a 64 KiB buffer written
 * with write(2) when full, at cca_trace_flush/stop, at cca_destroy and at
 * exit (after which every row is written at once). A forked child never
 * writes its parent's file. Without "%d" in the path, the first device
 * writes PATH itself; once a second device records to the same PATH in
 * this process, each writes PATH with ".devN" before the extension (the
 * first one's file is renamed then, its descriptor kept); a path that is
 * no regular file (/dev/null, a pipe) is written as given by every device. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include "internal.h"

#define TRACE_BUF (64 * 1024)
#define TRACE_ROW 160                                 /* longest row, with room */
#define TRACE_VERSION 1

struct cca_tracefile {
    pthread_mutex_t mu;                               /* the buffer and fd: writers hold the allocator's locks too */
    int fd;
    int device;
    char asked[CCA_TRACE_PATH_MAX];                   /* the path given, "%d" replaced */
    char path[CCA_TRACE_PATH_MAX + 16];               /* the file written (asked, or with .devN) */
    bool suffixed;
    char *buf;
    size_t n;
    size_t head_len;                                  /* the version line and header still in buf */
    int64_t t0_us;                                    /* time of the first row; -1 before it */
    uint64_t *streams;                                /* stream keys; index + 1 is the Stream column */
    size_t n_streams, cap_streams;
    pthread_t *threads;                               /* the Thread column is the index */
    size_t n_threads, cap_threads;
    uint64_t rows, lost;                              /* rows written or buffered; rows a write lost */
    int write_errno;
    struct cca_tracefile *next;                       /* the registry */
};

/* Every open trace file, for the exit flush, the fork guard and the
 * device suffixes. used[] remembers paths a device wrote in this process,
 * open or not, so that device 1 does not overwrite device 0's PATH. */
static pthread_mutex_t trace_reg = PTHREAD_MUTEX_INITIALIZER;
static cca_tracefile_t *trace_open;
static bool trace_exiting, trace_forked;
static pthread_once_t trace_once = PTHREAD_ONCE_INIT;
#define TRACE_USED 64
static struct { char asked[CCA_TRACE_PATH_MAX]; int device; } trace_used[TRACE_USED];
static size_t trace_n_used;

static int64_t tracefile_now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

/* Writes the buffer out (tf->mu held); a failed write counts its rows lost. */
static void tracefile_drain(cca_tracefile_t *tf)
{
    size_t off = 0;
    while (off < tf->n && tf->fd >= 0 && !trace_forked) {
        ssize_t w = write(tf->fd, tf->buf + off, tf->n - off);
        if (w > 0) {
            off += (size_t)w;
        } else if (w < 0 && errno == EINTR) {
            continue;
        } else {
            tf->write_errno = w < 0 ? errno : EIO;
            for (size_t i = off > tf->head_len ? off : tf->head_len; i < tf->n; i++) tf->lost += tf->buf[i] == '\n';
            break;
        }
    }
    tf->n = 0;
    tf->head_len = 0;
}

static void tracefile_at_exit(void)
{
    pthread_mutex_lock(&trace_reg);
    trace_exiting = true;
    for (cca_tracefile_t *tf = trace_open; tf; tf = tf->next) {
        pthread_mutex_lock(&tf->mu);
        tracefile_drain(tf);
        pthread_mutex_unlock(&tf->mu);
    }
    pthread_mutex_unlock(&trace_reg);
}

/* In a forked child the parent's files are not ours: nothing more is
 * written (the locks are reinitialised: a parent's thread may have held them). */
static void tracefile_in_child(void)
{
    trace_forked = true;
    pthread_mutex_init(&trace_reg, NULL);
    for (cca_tracefile_t *tf = trace_open; tf; tf = tf->next) pthread_mutex_init(&tf->mu, NULL);
}

static void tracefile_init_once(void)
{
    atexit(tracefile_at_exit);
    pthread_atfork(NULL, NULL, tracefile_in_child);
}

static void tracefile_append(cca_tracefile_t *tf, const char *text, size_t len)
{
    if (tf->n + len > TRACE_BUF) tracefile_drain(tf);
    memcpy(tf->buf + tf->n, text, len);
    tf->n += len;
    if (trace_exiting) tracefile_drain(tf);               /* no exit flush will come any more */
}

/* The Stream column: 0 for the legacy default stream, else 1, 2, ... in
 * the order streams first appear. -1 when host memory ran out. */
static long tracefile_stream(cca_tracefile_t *tf, const cca_stream_t *st)
{
    if (!st->handle || st->handle == cudaStreamLegacy) return 0;
    for (size_t i = 0; i < tf->n_streams; i++)
        if (tf->streams[i] == st->key) return (long)i + 1;
    if (tf->n_streams == tf->cap_streams) {
        size_t cap = tf->cap_streams ? tf->cap_streams * 2 : 8;
        uint64_t *s = realloc(tf->streams, cap * sizeof *s);
        if (!s) return -1;
        tf->streams = s;
        tf->cap_streams = cap;
    }
    tf->streams[tf->n_streams++] = st->key;
    return (long)tf->n_streams;
}

/* The Thread column: 0, 1, ... in the order threads first appear. */
static long tracefile_thread(cca_tracefile_t *tf)
{
    pthread_t me = pthread_self();
    for (size_t i = 0; i < tf->n_threads; i++)
        if (pthread_equal(tf->threads[i], me)) return (long)i;
    if (tf->n_threads == tf->cap_threads) {
        size_t cap = tf->cap_threads ? tf->cap_threads * 2 : 8;
        pthread_t *t = realloc(tf->threads, cap * sizeof *t);
        if (!t) return -1;
        tf->threads = t;
        tf->cap_threads = cap;
    }
    tf->threads[tf->n_threads++] = me;
    return (long)tf->n_threads - 1;
}

/* Decimal, at least `width` digits (zero-padded); hexadecimal, lower case. */
static char *tracefile_put_fixed(char *o, uint64_t v, int width)
{
    char tmp[24];
    int n = 0;
    do tmp[n++] = (char)('0' + v % 10), v /= 10; while (v);
    while (n < width) tmp[n++] = '0';
    while (n) *o++ = tmp[--n];
    return o;
}

static char *tracefile_put_u64(char *o, uint64_t v) { return tracefile_put_fixed(o, v, 1); }

static char *tracefile_put_hex(char *o, uint64_t v)
{
    char tmp[16];
    int n = 0;
    do tmp[n++] = "0123456789abcdef"[v & 15], v >>= 4; while (v);
    while (n) *o++ = tmp[--n];
    return o;
}

/* One row; thread -1: the calling thread; at_zero: time 0 (the blocks
 * alive when recording started). st NULL: Stream 0 (a failure's stream
 * when it had no record). */
static void tracefile_row(cca_tracefile_t *tf, const char *action, uintptr_t addr, size_t size,
                      const cca_stream_t *st, bool at_zero)
{
    pthread_mutex_lock(&tf->mu);
    int64_t now = tracefile_now_us();
    if (tf->t0_us < 0) tf->t0_us = now;
    uint64_t us = at_zero || now < tf->t0_us ? 0 : (uint64_t)(now - tf->t0_us);
    long thread = at_zero ? 0 : tracefile_thread(tf), stream = st ? tracefile_stream(tf, st) : 0;
    if (thread < 0 || stream < 0) {                   /* host memory ran out: the row is lost, and said so */
        tf->lost++;
        pthread_mutex_unlock(&tf->mu);
        return;
    }
    char row[TRACE_ROW], *o = row;                    /* by hand: snprintf cost ~3,500 instructions a row */
    o = tracefile_put_u64(o, (uint64_t)thread);
    *o++ = ',';
    o = tracefile_put_fixed(o, us / 3600000000u, 2), *o++ = ':';
    o = tracefile_put_fixed(o, us / 60000000u % 60, 2), *o++ = ':';
    o = tracefile_put_fixed(o, us / 1000000u % 60, 2), *o++ = '.';
    o = tracefile_put_fixed(o, us % 1000000u, 6), *o++ = ',';
    size_t alen = strlen(action);
    memcpy(o, action, alen), o += alen, *o++ = ',';
    if (addr) {
        *o++ = '0', *o++ = 'x';
        o = tracefile_put_hex(o, (uint64_t)addr);
    } else {
        memcpy(o, "(nil)", 5), o += 5;
    }
    *o++ = ',';
    o = tracefile_put_u64(o, (uint64_t)size), *o++ = ',';
    o = tracefile_put_u64(o, (uint64_t)stream), *o++ = '\n';
    size_t len = (size_t)(o - row);
    tracefile_append(tf, row, len);
    tf->rows++;
    pthread_mutex_unlock(&tf->mu);
}

void _cca_tracefile_alloc(cca_allocator_t *a, uintptr_t addr, size_t requested, const cca_stream_t *st)
{
    tracefile_row(a->trace, "allocate", addr, requested, st, false);
}

void _cca_tracefile_free(cca_allocator_t *a, uintptr_t addr, size_t requested, const cca_stream_t *st)
{
    tracefile_row(a->trace, "free", addr, requested, st, false);
}

void _cca_tracefile_failure(cca_allocator_t *a, size_t requested, cudaStream_t stream)
{
    cca_stream_t *st = NULL;
    uint64_t key = _cca_stream_key(a->cfg.device, stream);
    for (cca_stream_t *s = a->streams; s && key != UINT64_MAX; s = s->next)
        if (s->key == key) st = s;
    if (!st && stream && stream != cudaStreamLegacy) {   /* a stream cca never served: numbered by a stand-in */
        cca_stream_t stand_in = { .key = key, .handle = stream };
        tracefile_row(a->trace, "allocate failure", 0, requested, &stand_in, false);
        return;
    }
    tracefile_row(a->trace, "allocate failure", 0, requested, st, false);
}

/* ---- the file name --------------------------------------------------- */

/* path with every "%d" replaced by the device; false if too long. */
static bool tracefile_expand(const char *path, int device, char out[CCA_TRACE_PATH_MAX], bool *had_d)
{
    size_t o = 0;
    *had_d = false;
    for (const char *p = path; *p; p++) {
        char piece[16];
        const char *put = piece;
        if (p[0] == '%' && p[1] == 'd') {
            snprintf(piece, sizeof piece, "%d", device);
            *had_d = true;
            p++;
        } else {
            piece[0] = *p, piece[1] = 0;
        }
        size_t n = strlen(put);
        if (o + n >= CCA_TRACE_PATH_MAX) return false;
        memcpy(out + o, put, n);
        o += n;
    }
    out[o] = 0;
    return true;
}

/* asked with ".devN" before the extension of its last component. */
static void tracefile_suffixed(const char *asked, int device, char *out, size_t len)
{
    const char *slash = strrchr(asked, '/'), *dot = strrchr(slash ? slash + 1 : asked, '.');
    if (!dot || dot == (slash ? slash + 1 : asked)) dot = asked + strlen(asked);   /* none, or a dot file */
    snprintf(out, len, "%.*s.dev%d%s", (int)(dot - asked), asked, device, dot);
}

/* Another device recorded to `asked` (trace_reg held): true, and the open
 * ones still writing `asked` itself are renamed to their suffixed names. */
static bool tracefile_shared_path(const char *asked, int device)
{
    bool other = false;
    for (size_t i = 0; i < trace_n_used; i++)
        if (!strcmp(trace_used[i].asked, asked) && trace_used[i].device != device) other = true;
    for (cca_tracefile_t *tf = trace_open; tf; tf = tf->next)   /* past the table's 64 names too */
        if (!strcmp(tf->asked, asked) && tf->device != device) other = true;
    if (!other) return false;
    for (cca_tracefile_t *tf = trace_open; tf; tf = tf->next) {
        if (tf->suffixed || strcmp(tf->asked, asked)) continue;
        char to[sizeof tf->path];
        tracefile_suffixed(tf->asked, tf->device, to, sizeof to);
        pthread_mutex_lock(&tf->mu);
        if (rename(tf->path, to) == 0) {
            snprintf(tf->path, sizeof tf->path, "%s", to);
            tf->suffixed = true;
        }
        pthread_mutex_unlock(&tf->mu);
    }
    if (access(asked, F_OK) == 0) {                   /* a closed recording of the first device */
        for (size_t i = 0; i < trace_n_used; i++)
            if (!strcmp(trace_used[i].asked, asked) && trace_used[i].device != device) {
                char to[CCA_TRACE_PATH_MAX + 16];
                tracefile_suffixed(asked, trace_used[i].device, to, sizeof to);
                if (access(to, F_OK) != 0) (void)rename(asked, to);
                break;
            }
    }
    return true;
}

static void tracefile_note_used(const char *asked, int device)
{
    for (size_t i = 0; i < trace_n_used; i++)
        if (!strcmp(trace_used[i].asked, asked) && trace_used[i].device == device) return;
    if (trace_n_used == TRACE_USED) return;           /* past 64 names: no more renames of closed ones */
    snprintf(trace_used[trace_n_used].asked, sizeof trace_used[0].asked, "%s", asked);
    trace_used[trace_n_used++].device = device;
}

/* ---- start and stop -------------------------------------------------- */

typedef struct { uintptr_t addr; size_t size; const cca_stream_t *st; } trace_live_t;

static int tracefile_live_cmp(const void *x, const void *y)
{
    const trace_live_t *p = x, *q = y;
    return p->addr < q->addr ? -1 : p->addr > q->addr;
}

/* The blocks alive now, by address, at time 0 (all locked). */
static bool tracefile_write_live(cca_allocator_t *a, cca_tracefile_t *tf)
{
    size_t n = 0, i = 0;
    for (cca_stream_t *st = a->streams; st; st = st->next) n += st->live.slots ? st->live.count : 0;
    trace_live_t *live = n ? malloc(n * sizeof *live) : NULL;
    if (n && !live) return false;
    for (cca_stream_t *st = a->streams; st; st = st->next)
        for (size_t j = 0; st->live.slots && j <= st->live.mask; j++)
            if (st->live.slots[j].key && i < n) {
                const cca_block_t *b = st->live.slots[j].block;
                live[i++] = (trace_live_t){ b->addr, b->requested, st };
            }
    if (i > 1) qsort(live, i, sizeof *live, tracefile_live_cmp);   /* never with NULL (UBSan) */
    for (size_t k = 0; k < i; k++) tracefile_row(tf, "allocate", live[k].addr, live[k].size, live[k].st, true);
    free(live);
    return true;
}

static void tracefile_free_file(cca_tracefile_t *tf)
{
    if (tf->fd >= 0) close(tf->fd);
    pthread_mutex_destroy(&tf->mu);
    free(tf->buf);
    free(tf->streams);
    free(tf->threads);
    free(tf);
}

/* Stops a's recording (all locked): the rest written, the file closed.
 * CCA_ERROR_IO, saying how many rows were lost and why, when any were. */
static cca_status_t tracefile_stop_locked(cca_allocator_t *a, const char *who)
{
    cca_tracefile_t *tf = a->trace;
    if (!tf) return CCA_OK;
    a->trace = NULL;
    atomic_fetch_and_explicit(&a->hooks, ~CCA_HOOK_TRACE, memory_order_relaxed);
    a->cfg.trace_file[0] = 0;
    pthread_mutex_lock(&trace_reg);
    for (cca_tracefile_t **p = &trace_open; *p; p = &(*p)->next)
        if (*p == tf) {
            *p = tf->next;
            break;
        }
    pthread_mutex_unlock(&trace_reg);
    tracefile_drain(tf);
    if (!tf->write_errno && !trace_forked && fsync(tf->fd) != 0 && errno != EINVAL && errno != EROFS)
        tf->write_errno = errno;
    cca_status_t s = CCA_OK;
    if (tf->lost)
        s = _cca_errors_fail(CCA_ERROR_IO, "%s: %llu of %llu rows of %s were lost%s%s", who, (unsigned long long)tf->lost,
                      (unsigned long long)tf->rows, tf->path, tf->write_errno ? ": " : " (out of host memory)",
                      tf->write_errno ? strerror(tf->write_errno) : "");
    a->host_bytes -= (int64_t)(sizeof *tf + TRACE_BUF);
    tracefile_free_file(tf);
    return s;
}

/* A file record for the allocator's device, path not yet chosen; NULL out of memory. */
static cca_tracefile_t *tracefile_new_file(cca_allocator_t *a, const char *asked)
{
    cca_tracefile_t *tf = calloc(1, sizeof *tf);
    char *buf = tf ? malloc(TRACE_BUF) : NULL;
    if (!buf) {
        free(tf);
        return NULL;
    }
    pthread_mutex_init(&tf->mu, NULL);
    tf->buf = buf;
    tf->t0_us = -1;
    tf->fd = -1;
    tf->device = a->cfg.device;
    snprintf(tf->asked, sizeof tf->asked, "%s", asked);
    return tf;
}

/* Under the registry's lock: refuses a regular file another allocator of
 * the device writes, chooses the path (".devN" where devices would share
 * one), opens it and registers the record. tf is freed on failure. */
static cca_status_t tracefile_register(cca_tracefile_t *tf, const char *asked, bool had_d)
{
    pthread_once(&trace_once, tracefile_init_once);
    pthread_mutex_lock(&trace_reg);
    struct stat sb;                                   /* /dev/null, a pipe: every device writes it as given */
    bool special = stat(asked, &sb) == 0 && !S_ISREG(sb.st_mode);
    for (cca_tracefile_t *o = trace_open; o && !special; o = o->next)
        if (!strcmp(o->asked, asked) && (had_d || o->device == tf->device)) {
            int dev = o->device;                      /* read before unlocking: o may then be freed */
            pthread_mutex_unlock(&trace_reg);
            tracefile_free_file(tf);
            return _cca_errors_fail(CCA_ERROR_INVALID_ARGUMENT, "cca_trace_start: %s is being written by another "
                             "allocator of device %d", asked, dev);
        }
    tf->suffixed = !had_d && !special && tracefile_shared_path(asked, tf->device);
    if (tf->suffixed) tracefile_suffixed(asked, tf->device, tf->path, sizeof tf->path);
    else snprintf(tf->path, sizeof tf->path, "%s", asked);
    tf->fd = open(tf->path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (tf->fd < 0) {
        int e = errno;
        pthread_mutex_unlock(&trace_reg);
        cca_status_t s = _cca_errors_fail(CCA_ERROR_IO, "cca_trace_start: cannot write %s: %s", tf->path,
                                   strerror(e));
        tracefile_free_file(tf);
        return s;
    }
    tracefile_note_used(asked, tf->device);
    tf->next = trace_open;
    trace_open = tf;
    pthread_mutex_unlock(&trace_reg);
    return CCA_OK;
}

static cca_status_t tracefile_start_locked(cca_allocator_t *a, const char *path)
{
    char asked[CCA_TRACE_PATH_MAX];
    bool had_d;
    if (!tracefile_expand(path, a->cfg.device, asked, &had_d))
        return _cca_errors_fail(CCA_ERROR_INVALID_ARGUMENT, "cca_trace_start: the path is longer than %d bytes",
                         CCA_TRACE_PATH_MAX - 1);
    cca_tracefile_t *tf = tracefile_new_file(a, asked);
    if (!tf)
        return _cca_errors_fail(CCA_ERROR_OUT_OF_MEMORY, "cca_trace_start: out of host memory");
    cca_status_t st = tracefile_register(tf, asked, had_d);
    if (st != CCA_OK)
        return st;
    char head[200];
    int len = snprintf(head, sizeof head, "#cca-trace %d device=%d device_memory=%zu\n"
                       "Thread,Time,Action,Pointer,Size,Stream\n", TRACE_VERSION, tf->device, a->device_total);
    tracefile_append(tf, head, (size_t)len);
    tf->head_len = (size_t)len;
    (void)tracefile_thread(tf);                           /* Thread 0: the thread that starts recording */
    a->trace = tf;
    a->host_bytes += (int64_t)(sizeof *tf + TRACE_BUF);
    if (!tracefile_write_live(a, tf)) {
        (void)tracefile_stop_locked(a, "cca_trace_start");
        return _cca_errors_fail(CCA_ERROR_OUT_OF_MEMORY, "cca_trace_start: out of host memory");
    }
    snprintf(a->cfg.trace_file, sizeof a->cfg.trace_file, "%s", path);
    atomic_fetch_or_explicit(&a->hooks, CCA_HOOK_TRACE, memory_order_relaxed);
    return CCA_OK;
}

cca_status_t cca_trace_start(cca_allocator_t *a, const char *path)
{
    if (!a) return _cca_errors_fail(CCA_ERROR_INVALID_ARGUMENT, "cca_trace_start: allocator is NULL");
    if (!path || !*path) return cca_trace_stop(a);
    _cca_alloc_lock_all(a);
    cca_status_t s = tracefile_stop_locked(a, "cca_trace_start");      /* one file at a time: the old one ends */
    if (s == CCA_OK) s = tracefile_start_locked(a, path);
    _cca_alloc_unlock_all(a, NULL);
    return s;
}

cca_status_t cca_trace_stop(cca_allocator_t *a)
{
    if (!a) return _cca_errors_fail(CCA_ERROR_INVALID_ARGUMENT, "cca_trace_stop: allocator is NULL");
    _cca_alloc_lock_all(a);
    cca_status_t s = tracefile_stop_locked(a, "cca_trace_stop");
    _cca_alloc_unlock_all(a, NULL);
    return s;
}

cca_status_t cca_trace_flush(cca_allocator_t *a)
{
    if (!a) return _cca_errors_fail(CCA_ERROR_INVALID_ARGUMENT, "cca_trace_flush: allocator is NULL");
    _cca_alloc_lock_all(a);
    cca_tracefile_t *tf = a->trace;
    cca_status_t s = CCA_OK;
    if (tf) {
        pthread_mutex_lock(&tf->mu);
        tracefile_drain(tf);
        if (tf->lost)
            s = _cca_errors_fail(CCA_ERROR_IO, "cca_trace_flush: %llu rows of %s were lost%s%s",
                          (unsigned long long)tf->lost, tf->path, tf->write_errno ? ": " : " (out of host memory)",
                          tf->write_errno ? strerror(tf->write_errno) : "");
        pthread_mutex_unlock(&tf->mu);
    }
    _cca_alloc_unlock_all(a, NULL);
    return s;
}

cca_status_t cca_trace_path(cca_allocator_t *a, char *out, size_t len)
{
    if (!a || !out || !len)
        return _cca_errors_fail(CCA_ERROR_INVALID_ARGUMENT, "cca_trace_path: %s", !a ? "allocator is NULL" : "no room for the path");
    _cca_lock(&a->lock);                              /* the rename of tracefile_shared_path holds the registry */
    pthread_mutex_lock(&trace_reg);
    snprintf(out, len, "%s", a->trace ? a->trace->path : "");
    pthread_mutex_unlock(&trace_reg);
    _cca_unlock(&a->lock);
    return CCA_OK;
}

void _cca_tracefile_destroy(cca_allocator_t *a)
{
    if (a->trace) (void)tracefile_stop_locked(a, "cca_destroy");
}
