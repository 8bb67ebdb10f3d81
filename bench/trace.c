/* trace.c - the CSV parser of trace.h. */
#include "trace.h"
#include "u64map.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { COL_ACTION, COL_POINTER, COL_SIZE, COL_STREAM, COL_COUNT, COL_TIME = COL_COUNT };
static const char *const col_names[COL_COUNT + 1] = {"Action", "Pointer", "Size", "Stream", "Time"};

typedef struct loader {
    trace_t *t;
    u64map_t live;           /* pointer -> slot */
    uint64_t *slot_size;     /* size of each slot, while live */
    size_t cap_events, cap_slots;
    uint64_t live_bytes;
    int col[COL_COUNT + 1];  /* field index of each column (Time: -1 when absent) */
    uint64_t time_us;        /* the row's Time */
    size_t line;
} loader_t;

static char *read_file(const char *path, size_t *len, char *err, size_t err_len)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        snprintf(err, err_len, "%.300s: %s", path, strerror(errno));
        return NULL;
    }
    size_t cap = 1 << 20, n = 0, got;
    char *buf = malloc(cap + 1);
    while (buf && (got = fread(buf + n, 1, cap - n, f)) > 0) {
        n += got;
        if (n < cap)
            continue;
        char *bigger = realloc(buf, cap * 2 + 1);
        if (!bigger)
            free(buf);
        buf = bigger;
        cap *= 2;
    }
    fclose(f);
    if (!buf) {
        snprintf(err, err_len, "%.300s: out of memory", path);
        return NULL;
    }
    buf[n] = '\0';
    *len = n;
    return buf;
}

/* Splits line (modified in place) at commas; returns the field count. */
static int split(char *line, char **fields, int max)
{
    int n = 0;
    char *p = line;
    while (n < max) {
        fields[n++] = p;
        p = strchr(p, ',');
        if (!p)
            break;
        *p++ = '\0';
    }
    return n;
}

static int parse_header(loader_t *L, char *line)
{
    char *f[16];
    int n = split(line, f, 16);
    L->col[COL_TIME] = -1;
    for (int i = 0; i < n; i++)
        if (strcmp(f[i], "Time") == 0)
            L->col[COL_TIME] = i;
    for (int c = 0; c < COL_COUNT; c++) {
        L->col[c] = -1;
        for (int i = 0; i < n; i++)
            if (strcmp(f[i], col_names[c]) == 0)
                L->col[c] = i;
        if (L->col[c] < 0) {
            snprintf(L->t->error, sizeof L->t->error, "%.300s: header lacks column %s",
                     L->t->path, col_names[c]);
            return -1;
        }
    }
    return 0;
}

static int stream_index(trace_t *t, long long id, uint16_t *out)
{
    for (size_t i = 0; i < t->n_streams; i++)
        if (t->stream_ids[i] == id) {
            *out = (uint16_t)i;
            return 0;
        }
    if (t->n_streams == UINT16_MAX)
        return -1;
    long long *ids = realloc(t->stream_ids, (t->n_streams + 1) * sizeof *ids);
    if (!ids)
        return -1;
    t->stream_ids = ids;
    ids[t->n_streams] = id;
    *out = (uint16_t)t->n_streams++;
    return 0;
}

static int push_event(loader_t *L, const trace_event_t *e)
{
    trace_t *t = L->t;
    if (t->n_events == L->cap_events) {
        size_t cap = L->cap_events ? L->cap_events * 2 : 4096;
        trace_event_t *ev = realloc(t->events, cap * sizeof *ev);
        if (ev)
            t->events = ev;
        uint64_t *tu = ev ? realloc(t->time_us, cap * sizeof *tu) : NULL;
        if (tu)
            t->time_us = tu;
        uint32_t *rw = tu ? realloc(t->row, cap * sizeof *rw) : NULL;
        if (!rw)
            return -1;
        t->row = rw;
        L->cap_events = cap;
    }
    t->time_us[t->n_events] = L->time_us;
    t->row[t->n_events] = (uint32_t)(t->n_rows - 1);
    t->events[t->n_events++] = *e;
    return 0;
}

/* "HH:MM:SS.ffffff" (hours of any width, fraction of up to 6 digits) in
 * microseconds; 0 for anything else. */
static uint64_t parse_time(const char *s)
{
    unsigned long long h, m;
    char *end;
    h = strtoull(s, &end, 10);
    if (*end != ':')
        return 0;
    m = strtoull(end + 1, &end, 10);
    if (*end != ':')
        return 0;
    double sec = strtod(end + 1, &end);
    return (uint64_t)((h * 60 + m) * 60) * 1000000u + (uint64_t)(sec * 1e6 + 0.5);
}

static int on_alloc(loader_t *L, uint64_t ptr, uint64_t size, uint16_t stream)
{
    trace_t *t = L->t;
    if (t->n_slots == UINT32_MAX)
        return -1;
    if (t->n_slots == L->cap_slots) {
        size_t cap = L->cap_slots ? L->cap_slots * 2 : 4096;
        uint64_t *s = realloc(L->slot_size, cap * sizeof *s);
        if (!s)
            return -1;
        L->slot_size = s;
        L->cap_slots = cap;
    }
    uint32_t slot = (uint32_t)t->n_slots++;
    L->slot_size[slot] = size;
    if (ptr && u64map_put(&L->live, ptr, slot) != 0)
        return -1;
    L->live_bytes += size;
    if (L->live_bytes > t->peak_live_bytes)
        t->peak_live_bytes = L->live_bytes;
    trace_event_t e = {.size = size, .slot = slot, .stream = stream, .op = TRACE_ALLOC};
    return push_event(L, &e);
}

static int on_free(loader_t *L, uint64_t ptr, uint16_t stream)
{
    uint32_t slot;
    if (!ptr || !u64map_take(&L->live, ptr, &slot)) {
        L->t->n_unpaired_frees++;
        return 0;
    }
    L->live_bytes -= L->slot_size[slot];
    trace_event_t e = {.size = 0, .slot = slot, .stream = stream, .op = TRACE_FREE};
    return push_event(L, &e);
}

static int bad_row(loader_t *L, const char *why)
{
    snprintf(L->t->error, sizeof L->t->error, "%.300s:%zu: %s", L->t->path, L->line, why);
    return -1;
}

static int parse_row(loader_t *L, char *line)
{
    char *f[16], *end;
    int n = split(line, f, 16);
    for (int c = 0; c < COL_COUNT; c++)
        if (L->col[c] >= n)
            return bad_row(L, "too few fields");
    const char *action = f[L->col[COL_ACTION]];
    uint64_t ptr = strtoull(f[L->col[COL_POINTER]], &end, 16); /* "(nil)" reads as 0 */
    const char *sz = f[L->col[COL_SIZE]];
    errno = 0;
    uint64_t size = strtoull(sz, &end, 10);
    if (*end || !*sz || *sz == '-' || errno == ERANGE)  /* strtoull reads "-1" as 2^64 - 1 */
        return bad_row(L, "bad Size");
    long long sid = strtoll(f[L->col[COL_STREAM]], &end, 0);
    uint16_t stream;
    if (*end || stream_index(L->t, sid, &stream) != 0)
        return bad_row(L, "bad Stream");
    L->t->n_rows++;
    L->time_us = L->col[COL_TIME] >= 0 && L->col[COL_TIME] < n ? parse_time(f[L->col[COL_TIME]]) : 0;
    if (strcmp(action, "allocate") == 0)
        return on_alloc(L, ptr, size, stream) == 0 ? 0 : bad_row(L, "out of memory");
    if (strcmp(action, "free") == 0)
        return on_free(L, ptr, stream) == 0 ? 0 : bad_row(L, "out of memory");
    if (strcmp(action, "allocate failure") == 0) {
        L->t->n_failures++;
        trace_event_t e = {.size = size, .slot = UINT32_MAX, .stream = stream, .op = TRACE_FAILURE};
        return push_event(L, &e) == 0 ? 0 : bad_row(L, "out of memory");
    }
    return bad_row(L, "unknown Action");
}

static void chomp(char *line)
{
    size_t n = strlen(line);
    while (n && (line[n - 1] == '\r' || line[n - 1] == ' '))
        line[--n] = '\0';
}

/* "#cca-trace N key=value ...": the layout's version and what it says of
 * the recording. */
static int parse_version(loader_t *L, char *line)
{
    trace_t *t = L->t;
    char *end;
    long v = strtol(line + strlen("#cca-trace"), &end, 10);
    if (end == line + strlen("#cca-trace") || v < 1)
        return bad_row(L, "bad version line (expected '#cca-trace N ...')");
    if (v > TRACE_LAYOUT_VERSION) {
        snprintf(t->error, sizeof t->error, "%.300s: trace layout %ld is newer than this reader's %d: "
                 "read it with a newer cca", t->path, v, TRACE_LAYOUT_VERSION);
        return -1;
    }
    t->version = (int)v;
    char *save = NULL;
    for (char *tok = strtok_r(end, " ", &save); tok; tok = strtok_r(NULL, " ", &save)) {
        if (!strncmp(tok, "device=", 7)) t->device = atoi(tok + 7);
        else if (!strncmp(tok, "device_memory=", 14)) t->device_memory = strtoull(tok + 14, NULL, 10);
    }
    return 0;
}

static int parse_lines(loader_t *L, char *buf)
{
    int have_header = 0;
    for (char *line = buf, *next; line && *line; line = next) {
        next = strchr(line, '\n');
        if (next)
            *next++ = '\0';
        L->line++;
        chomp(line);
        if (!*line)
            continue;
        if (!have_header && !L->t->version && !strncmp(line, "#cca-trace", 10)) {
            if (parse_version(L, line) != 0)
                return -1;
            continue;
        }
        int r = have_header ? parse_row(L, line) : parse_header(L, line);
        if (r != 0)
            return -1;
        have_header = 1;
    }
    if (!have_header)
        return bad_row(L, "empty file");
    return 0;
}

static void set_name(trace_t *t, const char *path)
{
    const char *slash = strrchr(path, '/');
    snprintf(t->path, sizeof t->path, "%s", path);
    snprintf(t->name, sizeof t->name, "%s", slash ? slash + 1 : path);
}

static int load_buffer(trace_t *out, char *buf);

int trace_load(const char *path, trace_t *out)
{
    size_t len;
    memset(out, 0, sizeof *out);
    out->device = -1;
    set_name(out, path);
    char *buf = read_file(path, &len, out->error, sizeof out->error);
    if (!buf)
        return -1;
    int r = load_buffer(out, buf);
    free(buf);
    return r;
}

int trace_load_text(char *text, const char *name, trace_t *out)
{
    memset(out, 0, sizeof *out);
    out->device = -1;
    set_name(out, name);
    return load_buffer(out, text);
}

static int load_buffer(trace_t *out, char *buf)
{
    loader_t L = {.t = out};
    int r = u64map_init(&L.live, 1024);
    if (r == 0)
        r = parse_lines(&L, buf);
    else
        snprintf(out->error, sizeof out->error, "out of memory");
    out->n_live_at_end = L.live.count;
    u64map_fini(&L.live);
    free(L.slot_size);
    if (r != 0) {
        char keep[sizeof out->error];
        memcpy(keep, out->error, sizeof keep);
        trace_free(out);
        memcpy(out->error, keep, sizeof keep);
    }
    return r;
}

void trace_free(trace_t *t)
{
    free(t->events);
    free(t->time_us);
    free(t->row);
    free(t->stream_ids);
    memset(t, 0, sizeof *t);
}
