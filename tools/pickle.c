/* pickle.c - the restricted unpickler of pickle.h: one pass over the
 * opcodes, Python 3's stack-and-metastack machine for plain data, every
 * value in one arena per load. Opcodes that would call code or look a name
 * up stop the load with a refusal; every length is checked against the
 * bytes that are left before it is used, so a short or corrupt input is an
 * error message, never a read past the buffer. */
#include "pickle.h"

#include <ctype.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Python's own pickler recurses per level (recursion limit about 1,000),
 * so real pickles nest far less than this; the bound keeps the recursive
 * hashing of tuple keys shallow. */
#define PK_MAX_NESTING 10000
/* Stack entries: a real pickle holds about 1,000 per open level. */
#define PK_MAX_STACK ((size_t)1 << 24)
#define PK_CHUNK ((size_t)64 << 10)

/* ---- the arena ---------------------------------------------------------- */

typedef struct pk_chunk_s {
    struct pk_chunk_s *next;
    size_t used, cap;
    _Alignas(16) unsigned char data[];
} pk_chunk_t;

typedef struct pk_arena_s { pk_chunk_t *head; } pk_arena_t;

static void *arena_alloc(pk_arena_t *a, size_t n)
{
    if (n > SIZE_MAX - 32)
        return NULL;
    n = (n + 15) & ~(size_t)15;
    pk_chunk_t *h = a->head;
    if (h && h->cap - h->used >= n) {
        void *p = h->data + h->used;
        h->used += n;
        return p;
    }
    /* A large block gets a chunk of its own, linked behind the head, so the
     * head's free tail stays in use for the small values that follow. */
    size_t cap = n > PK_CHUNK / 4 ? n : PK_CHUNK;
    if (cap > SIZE_MAX - sizeof(pk_chunk_t))
        return NULL;
    pk_chunk_t *c = malloc(sizeof(pk_chunk_t) + cap);
    if (!c)
        return NULL;
    c->cap = cap;
    c->used = n;
    if (h && cap != PK_CHUNK) {
        c->next = h->next;
        h->next = c;
    } else {
        c->next = h;
        a->head = c;
    }
    return c->data;
}

static void arena_release(pk_arena_t *a)
{
    for (pk_chunk_t *c = a->head, *next; c; c = next) {
        next = c->next;
        free(c);
    }
    a->head = NULL;
}

/* ---- values ------------------------------------------------------------- */

typedef struct pk_entry_s { pk_value_t *key, *val; } pk_entry_t;

enum { SUB_PLAIN, SUB_SET, SUB_FROZENSET, SUB_BYTEARRAY };

/* 32 bytes: a snapshot of 10^6 trace entries holds some 10^7 values. */
struct pk_value_s {
    uint8_t kind;                        /* pk_kind_t */
    uint8_t sub;                         /* SUB_*: what a list or bytes was in Python */
    uint16_t depth;                      /* tuples: nesting depth (bounds hashing's recursion) */
    union {
        int b;
        int64_t i;
        double f;
        struct { char *p; size_t len; } s;                 /* str, bytes: NUL-terminated */
        struct { pk_value_t **items; size_t len, cap; } l; /* list, tuple */
        struct {
            pk_entry_t *e;               /* room for dict_room(len) entries */
            size_t len;
            size_t *index;               /* NULL while small; else [0] the slot count (a power of
                                          * two, at least twice len), [1..] entry + 1 or 0 empty */
        } d;
    } u;
};

_Static_assert(PK_MAX_NESTING <= UINT16_MAX, "depth is 16 bits");

/* The load's handle: the root is copied here so that pk_free finds the arena. */
typedef struct pk_doc_s {
    pk_value_t root;
    pk_arena_t arena;
} pk_doc_t;

/* ---- the machine -------------------------------------------------------- */

typedef struct memo_slot_s { uint64_t key; pk_value_t *v; } memo_slot_t;

typedef struct up_s {
    const unsigned char *p;
    size_t len, pos;
    size_t op;                           /* offset of the opcode being run */
    pk_arena_t *arena;
    pk_value_t **stack;
    size_t sp, scap;
    size_t *marks;                       /* stack heights at each open MARK */
    size_t nmarks, mcap;
    memo_slot_t *memo;                   /* open addressing, NULL v = empty */
    size_t memo_len, memo_cap;
    pk_value_t *none, *yes, *no;
    pk_value_t *small[256];              /* the ints 0-255, made once each (immutable, so shared) */
    char *err;
    size_t errlen;
} up_t;

static int failv(up_t *u, const char *prefix, const char *fmt, va_list ap)
{
    if (!u->err || !u->errlen)
        return -1;
    int n = snprintf(u->err, u->errlen, "%s", prefix);
    if (n >= 0 && (size_t)n < u->errlen)
        vsnprintf(u->err + n, u->errlen - (size_t)n, fmt, ap);
    return -1;
}

__attribute__((format(printf, 2, 3))) static int corrupt(up_t *u, const char *fmt, ...)
{
    char prefix[64];
    snprintf(prefix, sizeof prefix, "corrupt pickle at byte %zu: ", u->op);
    va_list ap;
    va_start(ap, fmt);
    failv(u, prefix, fmt, ap);
    va_end(ap);
    return -1;
}

static int truncated(up_t *u, const char *opname, size_t need)
{
    if (u->err && u->errlen)
        snprintf(u->err, u->errlen, "truncated pickle at byte %zu: %s needs %zu more bytes, %zu left", u->op,
                 opname, need, u->len - u->pos);
    return -1;
}

static int oom(up_t *u)
{
    return corrupt(u, "out of memory");
}

/* The next n bytes, or NULL (with the error set) when fewer are left. */
static const unsigned char *take(up_t *u, const char *opname, size_t n)
{
    if (u->len - u->pos < n) {
        truncated(u, opname, n);
        return NULL;
    }
    const unsigned char *r = u->p + u->pos;
    u->pos += n;
    return r;
}

/* A text argument up to its newline (not included), or NULL. */
static const char *take_line(up_t *u, const char *opname, size_t *n)
{
    const unsigned char *s = u->p + u->pos;
    const unsigned char *nl = memchr(s, '\n', u->len - u->pos);
    if (!nl) {
        if (u->err && u->errlen)
            snprintf(u->err, u->errlen, "truncated pickle at byte %zu: %s has no end of line", u->op, opname);
        return NULL;
    }
    *n = (size_t)(nl - s);
    u->pos += *n + 1;
    return (const char *)s;
}

static uint64_t le(const unsigned char *b, int n)
{
    uint64_t v = 0;
    for (int i = n - 1; i >= 0; i--)
        v = v << 8 | b[i];
    return v;
}

static pk_value_t *new_value(up_t *u, pk_kind_t kind)
{
    pk_value_t *v = arena_alloc(u->arena, sizeof *v);
    if (v) {
        memset(v, 0, sizeof *v);
        v->kind = (uint8_t)kind;
    }
    return v;
}

static int push(up_t *u, pk_value_t *v)
{
    if (!v)
        return oom(u);
    if (u->sp == u->scap) {
        if (u->scap >= PK_MAX_STACK)
            return corrupt(u, "stack deeper than %zu entries", PK_MAX_STACK);
        size_t cap = u->scap ? u->scap * 2 : 256;
        pk_value_t **s = realloc(u->stack, cap * sizeof *s);
        if (!s)
            return oom(u);
        u->stack = s;
        u->scap = cap;
    }
    u->stack[u->sp++] = v;
    return 0;
}

static int push_int(up_t *u, int64_t i)
{
    bool small = i >= 0 && i < 256;
    if (small && u->small[i])
        return push(u, u->small[i]);
    pk_value_t *v = new_value(u, PK_INT);
    if (v)
        v->u.i = i;
    if (v && small)
        u->small[i] = v;
    return push(u, v);
}

/* Entries above the innermost MARK: what Python's current stack holds. */
static size_t avail(const up_t *u)
{
    return u->sp - (u->nmarks ? u->marks[u->nmarks - 1] : 0);
}

static int need_stack(up_t *u, const char *opname, size_t n)
{
    if (avail(u) < n)
        return corrupt(u, "stack underflow (%s needs %zu %s)", opname, n, n == 1 ? "value" : "values");
    return 0;
}

/* Closes the innermost MARK: *first is where its items start on the stack. */
static int pop_mark(up_t *u, const char *opname, size_t *first)
{
    if (!u->nmarks)
        return corrupt(u, "%s without a MARK", opname);
    *first = u->marks[--u->nmarks];
    return 0;
}

/* APPENDS, SETITEMS and ADDITEMS work on the value just below their MARK,
 * which must itself lie above the next MARK out. */
static int below_mark(up_t *u, const char *opname, size_t first)
{
    size_t base = u->nmarks ? u->marks[u->nmarks - 1] : 0;
    if (first <= base)
        return corrupt(u, "stack underflow (%s has no target below its MARK)", opname);
    return 0;
}

static const char *describe(const pk_value_t *v)
{
    if (v->kind == PK_LIST && v->sub == SUB_SET)
        return "set";
    if (v->kind == PK_LIST && v->sub == SUB_FROZENSET)
        return "frozenset";
    if (v->kind == PK_BYTES && v->sub == SUB_BYTEARRAY)
        return "bytearray";
    return pk_kind_name(v->kind);
}

/* ---- memo --------------------------------------------------------------- */

static uint64_t mix64(uint64_t x)
{
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdULL;
    x ^= x >> 33;
    x *= 0xc4ceb9fe1a85ec53ULL;
    x ^= x >> 33;
    return x;
}

static int memo_put(up_t *u, uint64_t key, pk_value_t *v)
{
    if ((u->memo_len + 1) * 2 > u->memo_cap) {
        size_t cap = u->memo_cap ? u->memo_cap * 2 : 1024;
        memo_slot_t *m = calloc(cap, sizeof *m);
        if (!m)
            return oom(u);
        for (size_t i = 0; i < u->memo_cap; i++) {
            if (!u->memo[i].v)
                continue;
            size_t j = mix64(u->memo[i].key) & (cap - 1);
            while (m[j].v)
                j = (j + 1) & (cap - 1);
            m[j] = u->memo[i];
        }
        free(u->memo);
        u->memo = m;
        u->memo_cap = cap;
    }
    size_t j = mix64(key) & (u->memo_cap - 1);
    while (u->memo[j].v && u->memo[j].key != key)
        j = (j + 1) & (u->memo_cap - 1);
    if (!u->memo[j].v)
        u->memo_len++;
    u->memo[j].key = key;
    u->memo[j].v = v;
    return 0;
}

static pk_value_t *memo_get(const up_t *u, uint64_t key)
{
    if (!u->memo_cap)
        return NULL;
    size_t j = mix64(key) & (u->memo_cap - 1);
    while (u->memo[j].v) {
        if (u->memo[j].key == key)
            return u->memo[j].v;
        j = (j + 1) & (u->memo_cap - 1);
    }
    return NULL;
}

static int do_put(up_t *u, uint64_t key)
{
    if (need_stack(u, "PUT", 1))
        return -1;
    return memo_put(u, key, u->stack[u->sp - 1]);
}

static int do_get(up_t *u, uint64_t key)
{
    pk_value_t *v = memo_get(u, key);
    if (!v)
        return corrupt(u, "memo index %llu was never stored", (unsigned long long)key);
    return push(u, v);
}

/* ---- text arguments (protocol 0) ---------------------------------------- */

/* Python's int(text, 0) on what Python writes and a little more: optional
 * blanks and sign, 0x/0o/0b prefixes, '_' between digits. 0, -1 not a
 * number, -2 beyond 64 bits. */
static int parse_int_text(const char *s, size_t n, int64_t *out)
{
    size_t i = 0;
    while (i < n && isspace((unsigned char)s[i]))
        i++;
    while (n > i && isspace((unsigned char)s[n - 1]))
        n--;
    bool neg = false;
    if (i < n && (s[i] == '+' || s[i] == '-'))
        neg = s[i++] == '-';
    unsigned base = 10;
    if (n - i >= 2 && s[i] == '0' && strchr("xXoObB", s[i + 1])) {
        base = strchr("xX", s[i + 1]) ? 16 : strchr("oO", s[i + 1]) ? 8 : 2;
        i += 2;
        if (i < n && s[i] == '_')
            i++;
    } else if (n - i >= 2 && s[i] == '0') {
        for (size_t k = i; k < n; k++)   /* base 0: "007" is an error, "000" is zero */
            if (s[k] != '0' && s[k] != '_')
                return -1;
    }
    if (i >= n)
        return -1;
    uint64_t mag = 0;
    bool digit_before = false;
    for (; i < n; i++) {
        char c = s[i];
        if (c == '_' && digit_before && i + 1 < n && s[i + 1] != '_') {
            digit_before = false;
            continue;
        }
        unsigned d = isdigit((unsigned char)c) ? (unsigned)(c - '0')
                     : isxdigit((unsigned char)c) ? (unsigned)(tolower((unsigned char)c) - 'a' + 10) : 99;
        if (d >= base)
            return -1;
        if (mag > (UINT64_MAX - d) / base)
            return -2;
        mag = mag * base + d;
        digit_before = true;
    }
    if (!digit_before)
        return -1;
    if (neg ? mag > (uint64_t)INT64_MAX + 1 : mag > (uint64_t)INT64_MAX)
        return -2;
    *out = neg ? (int64_t)(0 - mag) : (int64_t)mag;
    return 0;
}

static int text_index(up_t *u, const char *opname, uint64_t *key)
{
    size_t n;
    const char *s = take_line(u, opname, &n);
    if (!s)
        return -1;
    int64_t v;
    int r = parse_int_text(s, n, &v);
    if (r == -2 || (r == 0 && v < 0))
        return corrupt(u, "%s index out of range", opname);
    if (r)
        return corrupt(u, "%s index is not a number", opname);
    *key = (uint64_t)v;
    return 0;
}

static int load_text_int(up_t *u, bool is_long)
{
    const char *opname = is_long ? "LONG" : "INT";
    size_t n;
    const char *s = take_line(u, opname, &n);
    if (!s)
        return -1;
    if (!is_long && n == 2 && s[0] == '0' && (s[1] == '0' || s[1] == '1'))
        return push(u, s[1] == '1' ? u->yes : u->no);     /* protocol 0's False and True */
    if (is_long && n && s[n - 1] == 'L')
        n--;
    int64_t v;
    int r = parse_int_text(s, n, &v);
    if (r == -2)
        return corrupt(u, "%s beyond 64 bits (cca reads 64-bit ints)", opname);
    if (r)
        return corrupt(u, "%s argument is not a number", opname);
    return push_int(u, v);
}

static int load_text_float(up_t *u)
{
    size_t n;
    const char *s = take_line(u, "FLOAT", &n);
    if (!s)
        return -1;
    char buf[512];
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {               /* Python's float() allows '_' between digits */
        if (s[i] == '_')
            continue;
        if (s[i] == 'x' || s[i] == 'X' || s[i] == '\0' || k + 1 >= sizeof buf)
            return corrupt(u, "FLOAT argument is not a number");   /* no hex floats, as in Python */
        buf[k++] = s[i];
    }
    buf[k] = '\0';
    /* strtod reads the C locale's decimal point: these tools never call setlocale. */
    char *end;
    double f = strtod(buf, &end);
    while (*end && isspace((unsigned char)*end))
        end++;
    if (end == buf || *end)
        return corrupt(u, "FLOAT argument is not a number");
    pk_value_t *x = new_value(u, PK_FLOAT);
    if (x)
        x->u.f = f;
    return push(u, x);
}

/* ---- strings ------------------------------------------------------------ */

/* UTF-8 as Python's surrogatepass decoder takes it: well-formed sequences,
 * encoded surrogates (U+D800-DFFF) allowed. */
static bool utf8_ok(const unsigned char *s, size_t n)
{
    size_t i = 0;
    while (i < n) {
        unsigned c = s[i];
        size_t k;
        uint32_t cp, min;
        if (c < 0x80) {
            i++;
            continue;
        } else if ((c & 0xe0) == 0xc0) {
            k = 1, cp = c & 0x1f, min = 0x80;
        } else if ((c & 0xf0) == 0xe0) {
            k = 2, cp = c & 0x0f, min = 0x800;
        } else if ((c & 0xf8) == 0xf0) {
            k = 3, cp = c & 0x07, min = 0x10000;
        } else {
            return false;
        }
        if (n - i <= k)
            return false;
        for (size_t j = 1; j <= k; j++) {
            if ((s[i + j] & 0xc0) != 0x80)
                return false;
            cp = cp << 6 | (s[i + j] & 0x3f);
        }
        if (cp < min || cp > 0x10ffff)
            return false;
        i += k + 1;
    }
    return true;
}

static size_t put_utf8(char *o, uint32_t cp)
{
    if (cp < 0x80) {
        o[0] = (char)cp;
        return 1;
    }
    if (cp < 0x800) {
        o[0] = (char)(0xc0 | cp >> 6);
        o[1] = (char)(0x80 | (cp & 0x3f));
        return 2;
    }
    if (cp < 0x10000) {
        o[0] = (char)(0xe0 | cp >> 12);
        o[1] = (char)(0x80 | (cp >> 6 & 0x3f));
        o[2] = (char)(0x80 | (cp & 0x3f));
        return 3;
    }
    o[0] = (char)(0xf0 | cp >> 18);
    o[1] = (char)(0x80 | (cp >> 12 & 0x3f));
    o[2] = (char)(0x80 | (cp >> 6 & 0x3f));
    o[3] = (char)(0x80 | (cp & 0x3f));
    return 4;
}

/* A str or bytes value of n bytes, uninitialised but NUL-terminated. */
static pk_value_t *new_blob(up_t *u, pk_kind_t kind, size_t n)
{
    if (n == SIZE_MAX)
        return NULL;
    pk_value_t *v = new_value(u, kind);
    char *p = v ? arena_alloc(u->arena, n + 1) : NULL;
    if (!p)
        return NULL;
    p[n] = '\0';
    v->u.s.p = p;
    v->u.s.len = n;
    return v;
}

static int load_blob(up_t *u, const char *opname, pk_kind_t kind, int lenbytes, uint8_t sub)
{
    const unsigned char *h = take(u, opname, (size_t)lenbytes);
    if (!h)
        return -1;
    uint64_t n = le(h, lenbytes);
    if (n > u->len - u->pos)
        return truncated(u, opname, n > SIZE_MAX ? SIZE_MAX : (size_t)n);
    const unsigned char *s = take(u, opname, (size_t)n);
    if (kind == PK_STR && !utf8_ok(s, (size_t)n))
        return corrupt(u, "%s is not UTF-8", opname);
    pk_value_t *v = new_blob(u, kind, (size_t)n);
    if (!v)
        return oom(u);
    memcpy(v->u.s.p, s, (size_t)n);
    v->sub = sub;
    return push(u, v);
}

/* Protocol 0's UNICODE: raw-unicode-escape, that is Latin-1 bytes with
 * \uXXXX and \UXXXXXXXX escapes, an escape only after an odd run of
 * backslashes (CPython's decoder). */
static int load_unicode(up_t *u)
{
    size_t n;
    const char *s = take_line(u, "UNICODE", &n);
    if (!s)
        return -1;
    pk_value_t *v = n < SIZE_MAX / 2 ? new_blob(u, PK_STR, n * 2) : NULL;
    if (!v)
        return oom(u);
    char *o = v->u.s.p;
    size_t k = 0;
    for (size_t i = 0; i < n;) {
        unsigned char c = (unsigned char)s[i];
        if (c != '\\') {
            k += put_utf8(o + k, c);
            i++;
            continue;
        }
        size_t run = 0;
        while (i < n && s[i] == '\\')
            run++, i++;
        bool esc = (run & 1) && i < n && (s[i] == 'u' || s[i] == 'U');
        for (size_t j = 0; j < run - (esc ? 1 : 0); j++)
            o[k++] = '\\';
        if (!esc)
            continue;
        size_t digits = s[i] == 'u' ? 4 : 8;
        i++;
        uint32_t cp = 0;
        for (size_t j = 0; j < digits; j++, i++) {
            if (i >= n || !isxdigit((unsigned char)s[i]))
                return corrupt(u, "UNICODE has a truncated \\u escape");
            unsigned char d = (unsigned char)s[i];
            cp = cp << 4 | (uint32_t)(isdigit(d) ? d - '0' : tolower(d) - 'a' + 10);
        }
        if (cp > 0x10ffff)
            return corrupt(u, "UNICODE escape beyond U+10FFFF");
        k += put_utf8(o + k, cp);      /* at most 4 bytes for at least 6 read */
    }
    o[k] = '\0';
    v->u.s.len = k;
    return push(u, v);
}

/* Python 2's str (STRING, BINSTRING, SHORT_BINSTRING): Python 3 decodes it
 * as ASCII by default, so do we. */
static int ascii_str(up_t *u, const char *opname, const unsigned char *s, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (s[i] >= 0x80)
            return corrupt(u, "%s is not ASCII (Python 3 reads it as ASCII)", opname);
    pk_value_t *v = new_blob(u, PK_STR, n);
    if (!v)
        return oom(u);
    memcpy(v->u.s.p, s, n);
    return push(u, v);
}

static int load_binstring(up_t *u, const char *opname, int lenbytes)
{
    const unsigned char *h = take(u, opname, (size_t)lenbytes);
    if (!h)
        return -1;
    uint64_t n = le(h, lenbytes);
    if (lenbytes == 4 && (n & 0x80000000u))
        return corrupt(u, "%s has a negative length", opname);
    if (n > u->len - u->pos)
        return truncated(u, opname, (size_t)n);
    const unsigned char *s = take(u, opname, (size_t)n);
    return ascii_str(u, opname, s, (size_t)n);
}

/* STRING: a quoted Python 2 repr, escapes as codecs.escape_decode reads them. */
static int load_string(up_t *u)
{
    size_t n;
    const char *s = take_line(u, "STRING", &n);
    if (!s)
        return -1;
    if (n < 2 || s[0] != s[n - 1] || (s[0] != '\'' && s[0] != '"'))
        return corrupt(u, "the STRING argument must be quoted");
    s++, n -= 2;
    unsigned char *tmp = malloc(n + 1);
    if (!tmp)
        return oom(u);
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        if (s[i] != '\\' || i + 1 == n) {
            if (s[i] == '\\') {
                free(tmp);
                return corrupt(u, "STRING ends in a lone backslash");
            }
            tmp[k++] = (unsigned char)s[i];
            continue;
        }
        char c = s[++i];
        const char *from = "abfnrtv\\'\"", *to = "\a\b\f\n\r\t\v\\'\"";
        const char *hit = strchr(from, c);
        if (c && hit) {
            tmp[k++] = (unsigned char)to[hit - from];
        } else if (c == '\n') {
            /* a line continuation: nothing */
        } else if (c >= '0' && c <= '7') {
            unsigned v = 0;
            for (int j = 0; j < 3 && i < n && s[i] >= '0' && s[i] <= '7'; j++, i++)
                v = v * 8 + (unsigned)(s[i] - '0');
            i--;
            tmp[k++] = (unsigned char)v;
        } else if (c == 'x') {
            if (i + 2 >= n || !isxdigit((unsigned char)s[i + 1]) || !isxdigit((unsigned char)s[i + 2])) {
                free(tmp);
                return corrupt(u, "STRING has an invalid \\x escape");
            }
            unsigned v = 0;
            for (int j = 1; j <= 2; j++) {
                unsigned char d = (unsigned char)s[i + j];
                v = v * 16 + (unsigned)(isdigit(d) ? d - '0' : tolower(d) - 'a' + 10);
            }
            i += 2;
            tmp[k++] = (unsigned char)v;
        } else {
            tmp[k++] = '\\';                 /* an unknown escape stays as written */
            tmp[k++] = (unsigned char)c;
        }
    }
    int r = ascii_str(u, "STRING", tmp, k);
    free(tmp);
    return r;
}

/* ---- numbers ------------------------------------------------------------ */

/* LONG1 and LONG4: little-endian two's complement of any length; longer
 * than 8 bytes only as sign extension. */
static int load_long_bin(up_t *u, const char *opname, int lenbytes)
{
    const unsigned char *h = take(u, opname, (size_t)lenbytes);
    if (!h)
        return -1;
    uint64_t n = le(h, lenbytes);
    if (lenbytes == 4 && (n & 0x80000000u))
        return corrupt(u, "%s has a negative length", opname);
    if (n > u->len - u->pos)
        return truncated(u, opname, (size_t)n);
    const unsigned char *b = take(u, opname, (size_t)n);
    if (n == 0)
        return push_int(u, 0);
    bool neg = b[n - 1] & 0x80;
    for (size_t i = 8; i < n; i++)
        if (b[i] != (neg ? 0xff : 0x00))
            return corrupt(u, "%s beyond 64 bits (cca reads 64-bit ints)", opname);
    if (n >= 8 && (bool)(b[7] & 0x80) != neg)
        return corrupt(u, "%s beyond 64 bits (cca reads 64-bit ints)", opname);
    size_t used = n < 8 ? (size_t)n : 8;
    uint64_t v = le(b, (int)used);
    if (neg && used < 8)
        v |= ~(uint64_t)0 << (8 * used);
    return push_int(u, (int64_t)v);
}

static int load_binfloat(up_t *u)
{
    const unsigned char *b = take(u, "BINFLOAT", 8);
    if (!b)
        return -1;
    uint64_t bits = 0;
    for (int i = 0; i < 8; i++)
        bits = bits << 8 | b[i];         /* big-endian, as struct.pack('>d') */
    double f;
    memcpy(&f, &bits, sizeof f);
    pk_value_t *v = new_value(u, PK_FLOAT);
    if (v)
        v->u.f = f;
    return push(u, v);
}

/* ---- hashing (dict keys, set items) ------------------------------------- */

static bool hashable(const pk_value_t *v)
{
    if (v->kind == PK_LIST || v->kind == PK_DICT || (v->kind == PK_BYTES && v->sub == SUB_BYTEARRAY))
        return false;
    if (v->kind == PK_TUPLE)
        for (size_t i = 0; i < v->u.l.len; i++)
            if (!hashable(v->u.l.items[i]))
                return false;
    return true;
}

/* Numbers that are equal in Python (True, 1 and 1.0) hash alike. */
static bool float_as_int(double f, int64_t *i)
{
    if (!(f >= -9223372036854775808.0 && f < 9223372036854775808.0))
        return false;
    *i = (int64_t)f;                     /* in range: truncation is defined, and exact when f is integral */
    return (double)*i == f;
}

static uint64_t hash_value(const pk_value_t *v)
{
    int64_t i;
    switch (v->kind) {
    case PK_NONE:
        return 0x9e3779b97f4a7c15ULL;
    case PK_BOOL:
        return mix64((uint64_t)v->u.b);
    case PK_INT:
        return mix64((uint64_t)v->u.i);
    case PK_FLOAT: {
        if (float_as_int(v->u.f, &i))
            return mix64((uint64_t)i);
        uint64_t bits;
        memcpy(&bits, &v->u.f, sizeof bits);
        return mix64(bits ^ 0x5555);
    }
    case PK_STR:
    case PK_BYTES: {
        uint64_t h = 0xcbf29ce484222325ULL ^ (uint64_t)v->kind;
        for (size_t k = 0; k < v->u.s.len; k++)
            h = (h ^ (unsigned char)v->u.s.p[k]) * 0x100000001b3ULL;
        return mix64(h);
    }
    case PK_TUPLE: {
        uint64_t h = 0x7475706c65ULL;
        for (size_t k = 0; k < v->u.l.len; k++)
            h = mix64(h ^ hash_value(v->u.l.items[k])) + k;
        return h;
    }
    default:
        return 0;                        /* unhashable kinds never get here */
    }
}

static bool is_number(const pk_value_t *v)
{
    return v->kind == PK_BOOL || v->kind == PK_INT || v->kind == PK_FLOAT;
}

static bool num_equal(const pk_value_t *a, const pk_value_t *b)
{
    if (a->kind == PK_FLOAT && b->kind == PK_FLOAT)
        return a->u.f == b->u.f;
    if (b->kind == PK_FLOAT) {
        const pk_value_t *t = a;
        a = b;
        b = t;
    }
    int64_t bi = b->kind == PK_BOOL ? b->u.b : b->u.i, ai;
    if (a->kind == PK_FLOAT)
        return float_as_int(a->u.f, &ai) && ai == bi;
    return (a->kind == PK_BOOL ? a->u.b : a->u.i) == bi;
}

static bool value_equal(const pk_value_t *a, const pk_value_t *b)
{
    if (a == b)
        return true;                     /* identity first, as Python's dict does (NaN keys) */
    if (is_number(a) && is_number(b))
        return num_equal(a, b);
    if (a->kind != b->kind)
        return false;
    switch (a->kind) {
    case PK_NONE:
        return true;
    case PK_STR:
    case PK_BYTES:
        return a->u.s.len == b->u.s.len && memcmp(a->u.s.p, b->u.s.p, a->u.s.len) == 0;
    case PK_TUPLE:
        if (a->u.l.len != b->u.l.len)
            return false;
        for (size_t k = 0; k < a->u.l.len; k++)
            if (!value_equal(a->u.l.items[k], b->u.l.items[k]))
                return false;
        return true;
    default:
        return false;
    }
}

/* ---- containers --------------------------------------------------------- */

/* Room for one more item: arrays grow by doubling inside the arena (the old
 * array stays there until pk_free; the waste is at most the final size). */
static int list_reserve(up_t *u, pk_value_t *l, size_t more)
{
    size_t need = l->u.l.len + more;
    if (need < l->u.l.len)
        return oom(u);
    if (need <= l->u.l.cap)
        return 0;
    size_t cap = l->u.l.cap ? l->u.l.cap : 4;
    while (cap < need)
        cap = cap > SIZE_MAX / 2 ? need : cap * 2;
    if (cap > SIZE_MAX / sizeof(pk_value_t *))
        return oom(u);
    pk_value_t **items = arena_alloc(u->arena, cap * sizeof *items);
    if (!items)
        return oom(u);
    if (l->u.l.len)
        memcpy(items, l->u.l.items, l->u.l.len * sizeof *items);
    l->u.l.items = items;
    l->u.l.cap = cap;
    return 0;
}

static int list_extend(up_t *u, pk_value_t *l, pk_value_t *const *items, size_t n)
{
    if (l->sub != SUB_PLAIN) {           /* a set: its items must hash */
        for (size_t k = 0; k < n; k++)
            if (!hashable(items[k]))
                return corrupt(u, "unhashable set item (%s)", describe(items[k]));
    }
    if (list_reserve(u, l, n))
        return -1;
    if (n)
        memcpy(l->u.l.items + l->u.l.len, items, n * sizeof *items);
    l->u.l.len += n;
    return 0;
}

/* Entries are allocated in powers of two from 8: the room follows from len. */
static size_t dict_room(size_t len)
{
    size_t room = 8;
    while (room < len)
        room *= 2;
    return room;
}

static size_t dict_find(const pk_value_t *d, const pk_value_t *key)
{
    if (!d->u.d.index) {
        for (size_t k = 0; k < d->u.d.len; k++)
            if (value_equal(d->u.d.e[k].key, key))
                return k;
        return SIZE_MAX;
    }
    size_t mask = d->u.d.index[0] - 1;
    const size_t *slot = d->u.d.index + 1;
    for (size_t j = hash_value(key) & mask; slot[j]; j = (j + 1) & mask)
        if (value_equal(d->u.d.e[slot[j] - 1].key, key))
            return slot[j] - 1;
    return SIZE_MAX;
}

static void dict_index_add(pk_value_t *d, size_t entry)
{
    size_t mask = d->u.d.index[0] - 1, *slot = d->u.d.index + 1;
    size_t j = hash_value(d->u.d.e[entry].key) & mask;
    while (slot[j])
        j = (j + 1) & mask;
    slot[j] = entry + 1;
}

static int dict_reindex(up_t *u, pk_value_t *d, size_t cap)
{
    if (cap >= SIZE_MAX / sizeof(size_t))
        return oom(u);
    size_t *ix = arena_alloc(u->arena, (cap + 1) * sizeof *ix);
    if (!ix)
        return oom(u);
    memset(ix, 0, (cap + 1) * sizeof *ix);
    ix[0] = cap;
    d->u.d.index = ix;
    for (size_t k = 0; k < d->u.d.len; k++)
        dict_index_add(d, k);
    return 0;
}

static int dict_set(up_t *u, pk_value_t *d, pk_value_t *key, pk_value_t *val)
{
    if (!hashable(key))
        return corrupt(u, "unhashable dict key (%s)", describe(key));
    size_t at = dict_find(d, key);
    if (at != SIZE_MAX) {
        d->u.d.e[at].val = val;          /* Python: the first key stays, the last value wins */
        return 0;
    }
    size_t len = d->u.d.len;
    if (!d->u.d.e || len == dict_room(len)) {
        size_t room = d->u.d.e ? len * 2 : 8;
        if (room > SIZE_MAX / sizeof(pk_entry_t))
            return oom(u);
        pk_entry_t *e = arena_alloc(u->arena, room * sizeof *e);
        if (!e)
            return oom(u);
        if (len)
            memcpy(e, d->u.d.e, len * sizeof *e);
        d->u.d.e = e;
    }
    d->u.d.e[d->u.d.len++] = (pk_entry_t){key, val};
    /* Small dicts (every dict of a snapshot) are searched in order; a big
     * one gets a hash index so that loading it stays linear. */
    if (d->u.d.len > 8 && (!d->u.d.index || d->u.d.len * 2 > d->u.d.index[0]))
        return dict_reindex(u, d, d->u.d.index ? d->u.d.index[0] * 2 : 32);
    if (d->u.d.index)
        dict_index_add(d, d->u.d.len - 1);
    return 0;
}

static int new_tuple(up_t *u, pk_value_t *const *items, size_t n)
{
    pk_value_t *t = new_value(u, PK_TUPLE);
    if (!t || list_reserve(u, t, n ? n : 1))
        return oom(u);
    unsigned depth = 0;
    for (size_t k = 0; k < n; k++)
        if (items[k]->kind == PK_TUPLE && items[k]->depth > depth)
            depth = items[k]->depth;
    if (depth + 1 > PK_MAX_NESTING)
        return corrupt(u, "nesting deeper than %d", PK_MAX_NESTING);
    t->depth = (uint16_t)(depth + 1);
    if (n)
        memcpy(t->u.l.items, items, n * sizeof *items);
    t->u.l.len = n;
    return push(u, t);
}

/* ---- refusals ----------------------------------------------------------- */

/* Copies up to n bytes of s into o for a message, with anything that is not
 * printable ASCII shown as '?'. */
static void printable(char *o, size_t osize, const char *s, size_t n)
{
    size_t k = 0, i = 0;
    for (; i < n && k + 4 < osize; i++)
        o[k++] = (s[i] >= 0x20 && s[i] < 0x7f && s[i] != '\'') ? s[i] : '?';
    if (i < n)
        for (int d = 0; d < 3; d++)
            o[k++] = '.';
    o[k] = '\0';
}

static int refuse(up_t *u, const char *opname, const char *what, const char *detail)
{
    if (u->err && u->errlen)
        snprintf(u->err, u->errlen, "refused: the pickle would %s (opcode %s%s%s%s at byte %zu); cca reads plain data only",
                 what, opname, detail && *detail ? " '" : "", detail ? detail : "", detail && *detail ? "'" : "", u->op);
    return -1;
}

/* GLOBAL and INST name what they would call in two text lines; show them. */
static int refuse_named(up_t *u, const char *opname)
{
    char detail[128] = "";
    const unsigned char *s = u->p + u->pos;
    size_t left = u->len - u->pos;
    const unsigned char *nl1 = memchr(s, '\n', left);
    if (nl1) {
        const unsigned char *nl2 = memchr(nl1 + 1, '\n', left - (size_t)(nl1 + 1 - s));
        if (nl2) {
            char mod[60], name[60];
            printable(mod, sizeof mod, (const char *)s, (size_t)(nl1 - s));
            printable(name, sizeof name, (const char *)nl1 + 1, (size_t)(nl2 - nl1 - 1));
            snprintf(detail, sizeof detail, "%s %s", mod, name);
        }
    }
    return refuse(u, opname, "call code", detail);
}

/* STACK_GLOBAL takes its names from the stack: show them when they are strs. */
static int refuse_stack_global(up_t *u)
{
    char detail[128] = "";
    if (avail(u) >= 2 && u->stack[u->sp - 2]->kind == PK_STR && u->stack[u->sp - 1]->kind == PK_STR) {
        char mod[60], name[60];
        const pk_value_t *m = u->stack[u->sp - 2], *n = u->stack[u->sp - 1];
        printable(mod, sizeof mod, m->u.s.p, m->u.s.len);
        printable(name, sizeof name, n->u.s.p, n->u.s.len);
        snprintf(detail, sizeof detail, "%s %s", mod, name);
    }
    return refuse(u, "STACK_GLOBAL", "call code", detail);
}

/* ---- the loop ----------------------------------------------------------- */

static int run_op(up_t *u, unsigned char op, pk_value_t **result)
{
    const unsigned char *b;
    size_t first = 0, n;
    uint64_t key;
    pk_value_t *v, *t;
    switch (op) {
    case 0x80: /* PROTO */
        if (!(b = take(u, "PROTO", 1)))
            return -1;
        if (b[0] > 5)
            return corrupt(u, "unsupported pickle protocol %u (cca reads 0-5)", b[0]);
        return 0;
    case 0x95: /* FRAME: a length prefix only; the opcodes inside are read as usual */
        if (!(b = take(u, "FRAME", 8)))
            return -1;
        if (le(b, 8) > u->len - u->pos)
            return truncated(u, "FRAME", le(b, 8) > SIZE_MAX ? SIZE_MAX : (size_t)le(b, 8));
        return 0;
    case '.': /* STOP */
        if (need_stack(u, "STOP", 1))
            return -1;
        *result = u->stack[--u->sp];
        return 1;
    case '(': /* MARK */
        if (u->nmarks >= PK_MAX_NESTING)
            return corrupt(u, "nesting deeper than %d", PK_MAX_NESTING);
        if (u->nmarks == u->mcap) {
            size_t cap = u->mcap ? u->mcap * 2 : 64;
            size_t *m = realloc(u->marks, cap * sizeof *m);
            if (!m)
                return oom(u);
            u->marks = m;
            u->mcap = cap;
        }
        u->marks[u->nmarks++] = u->sp;
        return 0;
    case '0': /* POP: an empty current stack pops its MARK instead, as Python 3 does */
        if (avail(u)) {
            u->sp--;
            return 0;
        }
        if (pop_mark(u, "POP", &first))
            return -1;
        return 0;
    case '1': /* POP_MARK */
        if (pop_mark(u, "POP_MARK", &first))
            return -1;
        u->sp = first;
        return 0;
    case '2': /* DUP */
        if (need_stack(u, "DUP", 1))
            return -1;
        return push(u, u->stack[u->sp - 1]);

    case 'N':
        return push(u, u->none);
    case 0x88:
        return push(u, u->yes);
    case 0x89:
        return push(u, u->no);
    case 'I':
        return load_text_int(u, false);
    case 'L':
        return load_text_int(u, true);
    case 'J':
        if (!(b = take(u, "BININT", 4)))
            return -1;
        return push_int(u, (int32_t)(uint32_t)le(b, 4));
    case 'K':
        if (!(b = take(u, "BININT1", 1)))
            return -1;
        return push_int(u, b[0]);
    case 'M':
        if (!(b = take(u, "BININT2", 2)))
            return -1;
        return push_int(u, (int64_t)le(b, 2));
    case 0x8a:
        return load_long_bin(u, "LONG1", 1);
    case 0x8b:
        return load_long_bin(u, "LONG4", 4);
    case 'F':
        return load_text_float(u);
    case 'G':
        return load_binfloat(u);

    case 'V':
        return load_unicode(u);
    case 'X':
        return load_blob(u, "BINUNICODE", PK_STR, 4, SUB_PLAIN);
    case 0x8c:
        return load_blob(u, "SHORT_BINUNICODE", PK_STR, 1, SUB_PLAIN);
    case 0x8d:
        return load_blob(u, "BINUNICODE8", PK_STR, 8, SUB_PLAIN);
    case 'B':
        return load_blob(u, "BINBYTES", PK_BYTES, 4, SUB_PLAIN);
    case 'C':
        return load_blob(u, "SHORT_BINBYTES", PK_BYTES, 1, SUB_PLAIN);
    case 0x8e:
        return load_blob(u, "BINBYTES8", PK_BYTES, 8, SUB_PLAIN);
    case 0x96:
        return load_blob(u, "BYTEARRAY8", PK_BYTES, 8, SUB_BYTEARRAY);
    case 'S':
        return load_string(u);
    case 'T':
        return load_binstring(u, "BINSTRING", 4);
    case 'U':
        return load_binstring(u, "SHORT_BINSTRING", 1);

    case ')':
        return new_tuple(u, NULL, 0);
    case 0x85:
    case 0x86:
    case 0x87:
        n = (size_t)(op - 0x84);
        if (need_stack(u, n == 1 ? "TUPLE1" : n == 2 ? "TUPLE2" : "TUPLE3", n))
            return -1;
        u->sp -= n;
        return new_tuple(u, u->stack + u->sp, n);
    case 't':
        if (pop_mark(u, "TUPLE", &first))
            return -1;
        n = u->sp - first;
        u->sp = first;
        return new_tuple(u, u->stack + first, n);

    case ']':
        return push(u, new_value(u, PK_LIST));
    case 0x8f: /* EMPTY_SET: a list that remembers it was a set */
        if ((v = new_value(u, PK_LIST)))
            v->sub = SUB_SET;
        return push(u, v);
    case 'l':
    case 0x91: /* LIST, FROZENSET */
        if (pop_mark(u, op == 'l' ? "LIST" : "FROZENSET", &first))
            return -1;
        if (!(v = new_value(u, PK_LIST)))
            return oom(u);
        v->sub = op == 'l' ? SUB_PLAIN : SUB_FROZENSET;
        n = u->sp - first;
        u->sp = first;
        if (list_extend(u, v, u->stack + first, n))
            return -1;
        return push(u, v);
    case 'a': /* APPEND */
        if (need_stack(u, "APPEND", 2))
            return -1;
        t = u->stack[u->sp - 2];
        if (t->kind != PK_LIST || t->sub != SUB_PLAIN)
            return corrupt(u, "APPEND to a %s", describe(t));
        u->sp--;
        return list_extend(u, t, u->stack + u->sp, 1);
    case 'e':
    case 0x90: /* APPENDS, ADDITEMS */
        if (pop_mark(u, op == 'e' ? "APPENDS" : "ADDITEMS", &first) ||
            below_mark(u, op == 'e' ? "APPENDS" : "ADDITEMS", first))
            return -1;
        t = u->stack[first - 1];
        if (t->kind != PK_LIST || t->sub != (op == 'e' ? SUB_PLAIN : SUB_SET))
            return corrupt(u, "%s to a %s", op == 'e' ? "APPENDS" : "ADDITEMS", describe(t));
        n = u->sp - first;
        u->sp = first;
        return list_extend(u, t, u->stack + first, n);

    case '}':
        return push(u, new_value(u, PK_DICT));
    case 'd': /* DICT */
        if (pop_mark(u, "DICT", &first))
            return -1;
        n = u->sp - first;
        if (n & 1)
            return corrupt(u, "DICT with an odd number of items");
        if (!(v = new_value(u, PK_DICT)))
            return oom(u);
        for (size_t k = 0; k < n; k += 2)
            if (dict_set(u, v, u->stack[first + k], u->stack[first + k + 1]))
                return -1;
        u->sp = first;
        return push(u, v);
    case 's': /* SETITEM */
        if (need_stack(u, "SETITEM", 3))
            return -1;
        t = u->stack[u->sp - 3];
        if (t->kind != PK_DICT)
            return corrupt(u, "SETITEM on a %s", describe(t));
        u->sp -= 2;
        return dict_set(u, t, u->stack[u->sp], u->stack[u->sp + 1]);
    case 'u': /* SETITEMS */
        if (pop_mark(u, "SETITEMS", &first) || below_mark(u, "SETITEMS", first))
            return -1;
        t = u->stack[first - 1];
        if (t->kind != PK_DICT)
            return corrupt(u, "SETITEMS on a %s", describe(t));
        n = u->sp - first;
        if (n & 1)
            return corrupt(u, "SETITEMS with an odd number of items");
        for (size_t k = 0; k < n; k += 2)
            if (dict_set(u, t, u->stack[first + k], u->stack[first + k + 1]))
                return -1;
        u->sp = first;
        return 0;

    case 'p':
        return text_index(u, "PUT", &key) ? -1 : do_put(u, key);
    case 'q':
        if (!(b = take(u, "BINPUT", 1)))
            return -1;
        return do_put(u, b[0]);
    case 'r':
        if (!(b = take(u, "LONG_BINPUT", 4)))
            return -1;
        return do_put(u, le(b, 4));
    case 0x94: /* MEMOIZE: the next index is the memo's length */
        return do_put(u, u->memo_len);
    case 'g':
        return text_index(u, "GET", &key) ? -1 : do_get(u, key);
    case 'h':
        if (!(b = take(u, "BINGET", 1)))
            return -1;
        return do_get(u, b[0]);
    case 'j':
        if (!(b = take(u, "LONG_BINGET", 4)))
            return -1;
        return do_get(u, le(b, 4));

    case 'c':
        return refuse_named(u, "GLOBAL");
    case 'i':
        return refuse_named(u, "INST");
    case 0x93:
        return refuse_stack_global(u);
    case 'R':
        return refuse(u, "REDUCE", "call code", NULL);
    case 'b':
        return refuse(u, "BUILD", "call code", NULL);
    case 'o':
        return refuse(u, "OBJ", "call code", NULL);
    case 0x81:
        return refuse(u, "NEWOBJ", "call code", NULL);
    case 0x92:
        return refuse(u, "NEWOBJ_EX", "call code", NULL);
    case 0x82:
        return refuse(u, "EXT1", "look up a registered name", NULL);
    case 0x83:
        return refuse(u, "EXT2", "look up a registered name", NULL);
    case 0x84:
        return refuse(u, "EXT4", "look up a registered name", NULL);
    case 'P':
        return refuse(u, "PERSID", "look up a persistent object", NULL);
    case 'Q':
        return refuse(u, "BINPERSID", "look up a persistent object", NULL);
    case 0x97:
        return refuse(u, "NEXT_BUFFER", "read an out-of-band buffer", NULL);
    case 0x98:
        return refuse(u, "READONLY_BUFFER", "read an out-of-band buffer", NULL);
    default:
        return corrupt(u, "unknown opcode 0x%02x", op);
    }
}

static int run(up_t *u, pk_value_t **result)
{
    u->none = new_value(u, PK_NONE);
    u->yes = new_value(u, PK_BOOL);
    u->no = new_value(u, PK_BOOL);
    if (!u->none || !u->yes || !u->no)
        return oom(u);
    u->yes->u.b = 1;
    while (u->pos < u->len) {
        u->op = u->pos;
        int r = run_op(u, u->p[u->pos++], result);
        if (r)
            return r < 0 ? -1 : 0;
    }
    u->op = u->pos;
    if (u->err && u->errlen)
        snprintf(u->err, u->errlen, "truncated pickle at byte %zu: no STOP opcode", u->len);
    return -1;
}

int pk_load(const void *buf, size_t len, pk_value_t **out, char *err, size_t errlen)
{
    if (err && errlen)
        err[0] = '\0';
    if (!out)
        return -1;
    *out = NULL;
    pk_doc_t *doc = calloc(1, sizeof *doc);
    if (!doc) {
        if (err && errlen)
            snprintf(err, errlen, "out of memory");
        return -1;
    }
    up_t u = {.p = buf, .len = buf ? len : 0, .arena = &doc->arena, .err = err, .errlen = errlen};
    pk_value_t *result = NULL;
    int rc = run(&u, &result);
    free(u.stack);
    free(u.marks);
    free(u.memo);
    if (rc) {
        arena_release(&doc->arena);
        free(doc);
        return -1;
    }
    doc->root = *result;
    *out = &doc->root;
    return 0;
}

void pk_free(pk_value_t *root)
{
    if (!root)
        return;
    pk_doc_t *doc = (pk_doc_t *)((char *)root - offsetof(pk_doc_t, root));
    arena_release(&doc->arena);
    free(doc);
}

/* ---- accessors ---------------------------------------------------------- */

pk_kind_t pk_kind(const pk_value_t *v)
{
    return v ? v->kind : PK_NONE;
}

const char *pk_kind_name(pk_kind_t k)
{
    static const char *const names[] = {"None", "bool", "int", "float", "str", "bytes", "list", "tuple", "dict"};
    return (unsigned)k < sizeof names / sizeof names[0] ? names[k] : "?";
}

int pk_int(const pk_value_t *v, int64_t *out)
{
    if (!v || v->kind != PK_INT)
        return -1;
    *out = v->u.i;
    return 0;
}

int pk_float(const pk_value_t *v, double *out)
{
    if (!v || (v->kind != PK_FLOAT && v->kind != PK_INT))
        return -1;
    *out = v->kind == PK_FLOAT ? v->u.f : (double)v->u.i;
    return 0;
}

int pk_bool(const pk_value_t *v, int *out)
{
    if (!v || v->kind != PK_BOOL)
        return -1;
    *out = v->u.b;
    return 0;
}

const char *pk_str(const pk_value_t *v, size_t *len)
{
    if (!v || v->kind != PK_STR)
        return NULL;
    if (len)
        *len = v->u.s.len;
    return v->u.s.p;
}

const void *pk_bytes(const pk_value_t *v, size_t *len)
{
    if (!v || v->kind != PK_BYTES)
        return NULL;
    if (len)
        *len = v->u.s.len;
    return v->u.s.p;
}

size_t pk_list_len(const pk_value_t *v)
{
    return v && (v->kind == PK_LIST || v->kind == PK_TUPLE) ? v->u.l.len : 0;
}

const pk_value_t *pk_list_at(const pk_value_t *v, size_t i)
{
    return i < pk_list_len(v) ? v->u.l.items[i] : NULL;
}

const pk_value_t *pk_dict_get(const pk_value_t *d, const char *key)
{
    if (!d || d->kind != PK_DICT || !key)
        return NULL;
    size_t n = strlen(key);
    pk_value_t k = {.kind = PK_STR, .u.s = {(char *)key, n}};
    size_t at = dict_find(d, &k);
    return at == SIZE_MAX ? NULL : d->u.d.e[at].val;
}

size_t pk_dict_len(const pk_value_t *d)
{
    return d && d->kind == PK_DICT ? d->u.d.len : 0;
}

const pk_value_t *pk_dict_key_at(const pk_value_t *d, size_t i)
{
    return i < pk_dict_len(d) ? d->u.d.e[i].key : NULL;
}

const pk_value_t *pk_dict_value_at(const pk_value_t *d, size_t i)
{
    return i < pk_dict_len(d) ? d->u.d.e[i].val : NULL;
}
