/* config.c - the configuration: defaults, the one table of keys
 * (CCA_CONFIG_KEYS in cca.h) with the checks both paths share, PyTorch's
 * "key:value,..." syntax (CCA_CONF), and request rounding (512 B, or
 * roundup_power2_divisions). */
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <locale.h>
#include <strings.h>
#include "internal.h"

#define MB ((size_t)1 << 20)

static void config_defaults(cca_config_t *cfg)
{
    memset(cfg, 0, sizeof *cfg);
    cfg->max_split_size = SIZE_MAX;
}

void cca_config_init_sized(cca_config_t *cfg, size_t cfg_size)
{
    if (!cfg || cfg_size < CCA_V1_CONFIG) return;
    cca_config_t c;
    config_defaults(&c);
    _cca_copy_out(cfg, cfg_size, &c, sizeof c);
}

/* ---- the keys: one table, from CCA_CONFIG_KEYS --------------------------- */

enum {
#define KEY_ENUM_(name, value, range, def, doc) K_##name,
    CCA_CONFIG_KEYS(KEY_ENUM_)
#undef KEY_ENUM_
    K_COUNT
};

static const cca_config_key_t keys[K_COUNT] = {
#define KEY_ROW_(name, value, range, def, doc) { #name, value, range, def, doc },
    CCA_CONFIG_KEYS(KEY_ROW_)
#undef KEY_ROW_
};

const cca_config_key_t *cca_config_keys(size_t *count)
{
    if (count) *count = K_COUNT;
    return keys;
}

#define MIN_FRACTION 0x1p-40                         /* below: not a share of any device */
#define MAX_DIVISIONS (1u << 20)
#define MAX_MB ((unsigned long long)(INT64_MAX / MB))   /* byte counts stay within int64 (the statistics') */

static bool config_pow2_or_zero(unsigned long long v) { return (v & (v - 1)) == 0; }

/* The checks of the struct's fields, shared by both paths: NULL when the
 * value is good, else what is wrong (naming the key). */
static const char *config_check_field(const cca_config_t *c, int k)
{
    switch (k) {
    case K_max_split_size_mb:
        return c->max_split_size != SIZE_MAX && (c->max_split_size <= CCA_LARGE_BUFFER || c->max_split_size > (size_t)INT64_MAX)
             ? "max_split_size_mb (max_split_size) must be above 20 MiB and below 2^63 bytes, or unlimited" : NULL;
    case K_roundup_power2_divisions:
        for (int i = 0; i < CCA_ROUNDUP_INTERVALS; i++)
            if (!config_pow2_or_zero(c->roundup_power2_divisions[i]) || c->roundup_power2_divisions[i] > MAX_DIVISIONS)
                return "roundup_power2_divisions must each be 0 or a power of 2 up to 1048576";
        return NULL;
    case K_garbage_collection_threshold:
        return !(c->garbage_collection_threshold >= 0.0 && c->garbage_collection_threshold < 1.0)
             ? "garbage_collection_threshold must be in (0, 1), or 0 for off" : NULL;
    case K_memory_fraction:
        return !(c->memory_fraction == 0.0 || (c->memory_fraction >= MIN_FRACTION && c->memory_fraction <= 1.0))
             ? "memory_fraction must be in [2^-40, 1], or 0 for no cap" : NULL;
    case K_memory_limit_mb:
        return c->memory_limit && (c->memory_limit < CCA_SMALL_BUFFER || c->memory_limit > (size_t)INT64_MAX)
             ? "memory_limit_mb (memory_limit) must be at least 2 MiB and below 2^63 bytes, or 0 for no cap" : NULL;
    case K_release_before_grow:
        return c->release_before_grow != 0 && c->release_before_grow != 1 ? "release_before_grow must be 0 or 1" : NULL;
    case K_segment_growth_percent:
        return c->segment_growth_percent > 1000 ? "segment_growth_percent must be from 0 to 1000" : NULL;
    case K_expandable_segments:
        return c->expandable_segments != 0 && c->expandable_segments != 1 ? "expandable_segments must be 0 or 1" : NULL;
    case K_trace_file:
        return !memchr(c->trace_file, 0, sizeof c->trace_file) ? "trace_file must end within its 1024 bytes" : NULL;
    default:
        return NULL;
    }
}

cca_status_t _cca_config_check(const cca_config_t *c, size_t device_total)
{
    if (c->device < 0) return _cca_fail(CCA_ERROR_INVALID_ARGUMENT, "cca_create: device %d is negative", c->device);
    for (int k = 0; k < K_COUNT; k++) {
        const char *why = config_check_field(c, k);
        if (why) return _cca_fail(CCA_ERROR_INVALID_ARGUMENT, "cca_create: %s", why);
    }
    if (device_total && c->memory_fraction > 0.0 && c->memory_fraction * (double)device_total < (double)CCA_SMALL_BUFFER)
        return _cca_fail(CCA_ERROR_INVALID_ARGUMENT,
                         "cca_create: memory_fraction %g of device %d's %zu bytes leaves no room for one 2 MiB segment",
                         c->memory_fraction, c->device, device_total);
    return CCA_OK;
}

/* ---- the string: tokens of any length, parsed in a copy -------------------- */

typedef struct parser {
    char *err;
    size_t err_len;
    bool given[K_COUNT];                              /* set explicitly in this string */
    size_t held;                                      /* the caller's sizeof(cca_config_t) */
    cca_config_t base;                                /* the config before this string (defaults past held) */
} parser_t;

/* A token as an error message shows it: at most 40 characters. */
static const char *config_shown(const char *tok, char out[64])
{
    size_t n = strlen(tok);
    if (n <= 40) return tok;
    snprintf(out, 64, "%.24s...(%zu chars)", tok, n);
    return out;
}

static cca_status_t config_bad(parser_t *ps, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static cca_status_t config_bad(parser_t *ps, const char *fmt, ...)
{
    char text[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    if (ps->err && ps->err_len) snprintf(ps->err, ps->err_len, "%s", text);
    return _cca_fail(CCA_ERROR_INVALID_CONFIG, "%s", text);
}

static char *config_trim(char *s)
{
    while (isspace((unsigned char)*s)) s++;
    size_t n = strlen(s);
    while (n && isspace((unsigned char)s[n - 1])) s[--n] = 0;
    return s;
}

/* Digits only (leading zeros are fine), no overflow. */
static bool config_parse_u64(const char *s, unsigned long long *out)
{
    if (!*s) return false;
    unsigned long long v = 0;
    for (; *s; s++) {
        if (!isdigit((unsigned char)*s)) return false;
        unsigned d = (unsigned)(*s - '0');
        if (v > (ULLONG_MAX - d) / 10) return false;
        v = v * 10 + d;
    }
    *out = v;
    return true;
}

/* A decimal number ("0.5", "1e-3"), read the same whatever the program's
 * locale; hex floats, inf and nan are refused. */
static bool config_parse_double(const char *s, double *out)
{
    static locale_t c_locale;
    if (!*s || strpbrk(s, "xXpP")) return false;
    if (!c_locale) c_locale = newlocale(LC_NUMERIC_MASK, "C", (locale_t)0);   /* a benign race: both store the same */
    char *end;
    errno = 0;
    *out = c_locale ? strtod_l(s, &end, c_locale) : strtod(s, &end);
    return errno == 0 && *end == 0 && isfinite(*out);
}

static bool config_parse_bool(const char *s, int *out)
{
    if (!strcasecmp(s, "true") || !strcmp(s, "1")) { *out = 1; return true; }
    if (!strcasecmp(s, "false") || !strcmp(s, "0")) { *out = 0; return true; }
    return false;
}

static int config_interval_of_mb(unsigned long long mb)
{
    int idx = 0;
    while (idx < CCA_ROUNDUP_INTERVALS - 1 && (1ull << (idx + 1)) <= mb) idx++;
    return idx;                     /* log2(mb), clamped */
}

/* "256:1,512:2,>:4" (the list without its brackets): MB (a power of 2,
 * increasing, each once) or ">" (once, last) for the rest. */
static cca_status_t config_parse_division_list(parser_t *ps, char *list, cca_config_t *c)
{
    char sh[64];
    int next = 0;                   /* first interval not yet given a value */
    bool any = false, rest = false;
    if (!*config_trim(list)) return config_bad(ps, "roundup_power2_divisions: the list [] is empty");
    for (char *item = list, *end; item; item = end) {
        end = strchr(item, ',');
        if (end) *end++ = 0;
        char *colon = strchr(item, ':');
        if (!colon) return config_bad(ps, "roundup_power2_divisions: expected 'MB:divisions' in the list, got '%s'", config_shown(config_trim(item), sh));
        *colon = 0;
        char *k = config_trim(item), *v = config_trim(colon + 1);
        unsigned long long mb = 0, div;
        if (!config_parse_u64(v, &div) || !config_pow2_or_zero(div) || div > MAX_DIVISIONS)
            return config_bad(ps, "roundup_power2_divisions: divisions '%s' must be 0 or a power of 2 up to 1048576", config_shown(v, sh));
        if (rest) return config_bad(ps, "roundup_power2_divisions: '%s' after '>', which must come last and once", config_shown(k, sh));
        if (strcmp(k, ">") == 0) {
            for (int i = next; i < CCA_ROUNDUP_INTERVALS; i++) c->roundup_power2_divisions[i] = (unsigned)div;
            next = CCA_ROUNDUP_INTERVALS;
            rest = true;
        } else {
            if (!config_parse_u64(k, &mb) || mb == 0 || !config_pow2_or_zero(mb))
                return config_bad(ps, "roundup_power2_divisions: interval '%s' must be a power of 2 (MB) or '>'", config_shown(k, sh));
            if (mb > (1ull << (CCA_ROUNDUP_INTERVALS - 1)))
                return config_bad(ps, "roundup_power2_divisions: interval '%s' MB is past the last one (%llu MB and up): use '>'",
                           config_shown(k, sh), 1ull << (CCA_ROUNDUP_INTERVALS - 1));
            int idx = config_interval_of_mb(mb);
            if (any && idx < next)
                return config_bad(ps, "roundup_power2_divisions: interval '%s' is repeated or not in increasing order", config_shown(k, sh));
            for (int i = any ? next : 0; i <= idx; i++) c->roundup_power2_divisions[i] = (unsigned)div;
            next = idx + 1;
        }
        any = true;
    }
    return CCA_OK;
}

/* Whether preset `name` sets key k. */
static bool config_preset_sets(const char *name, int k)
{
    if (k == K_trace_file) return false;               /* where to record is no policy */
    if (!strcmp(name, "pytorch")) return k != K_preset;
    if (!strcmp(name, "expandable")) return k == K_expandable_segments;
    return k == K_release_before_grow || k == K_max_split_size_mb;
}

/* roundup_power2_divisions: N, or a list [MB:N,...,>:N]. */
static cca_status_t config_apply_roundup(parser_t *ps, char *v, cca_config_t *c)
{
    char sh[64];
    unsigned long long u;
    if (*v == '[') {
        size_t n = strlen(v);
        if (v[n - 1] != ']') return config_bad(ps, "roundup_power2_divisions: missing ']' in '%s'", config_shown(v, sh));
        v[n - 1] = 0;
        return config_parse_division_list(ps, v + 1, c);
    }
    if (!config_parse_u64(v, &u) || !config_pow2_or_zero(u) || u > MAX_DIVISIONS)
        return config_bad(ps, "roundup_power2_divisions: '%s' must be 0 or a power of 2 up to 1048576, or a list [MB:N,...,>:N]",
                   config_shown(v, sh));
    for (int i = 0; i < CCA_ROUNDUP_INTERVALS; i++) c->roundup_power2_divisions[i] = (unsigned)u;
    return CCA_OK;
}

/* preset:NAME, refused after a key it sets again; pytorch keeps the device and the trace file. */
static cca_status_t config_apply_preset(parser_t *ps, const char *v, cca_config_t *c)
{
    char sh[64];
    if (strcmp(v, "pytorch") && strcmp(v, "lean") && strcmp(v, "expandable"))
        return config_bad(ps, "preset: '%s' is not a preset (accepted: pytorch, lean, expandable)", config_shown(v, sh));
    for (int j = 0; j < K_COUNT; j++)
        if (ps->given[j] && config_preset_sets(v, j))
            return config_bad(ps, "%s is given before preset:%s, which sets it again: put the preset first", keys[j].name, v);
    if (!strcmp(v, "pytorch")) {
        cca_config_t keep = *c;
        config_defaults(c);
        c->device = keep.device;
        memcpy(c->trace_file, keep.trace_file, sizeof c->trace_file);
    } else if (!strcmp(v, "expandable")) {
        c->expandable_segments = 1;
    } else {
        c->release_before_grow = 1;
        c->max_split_size = CCA_LEAN_MAX_SPLIT;
    }
    return CCA_OK;
}

static cca_status_t config_apply(parser_t *ps, int k, char *v, cca_config_t *c)
{
    char sh[64];
    unsigned long long u;
    double d;
    switch (k) {
    case K_max_split_size_mb:
        if (!config_parse_u64(v, &u) || u <= CCA_LARGE_BUFFER / MB || u > MAX_MB)
            return config_bad(ps, "max_split_size_mb: '%s' must be an integer above 20 (MiB)", config_shown(v, sh));
        c->max_split_size = (size_t)u * MB;
        break;
    case K_roundup_power2_divisions:
        return config_apply_roundup(ps, v, c);
    case K_garbage_collection_threshold:
        if (!config_parse_double(v, &d) || d <= 0.0 || d >= 1.0)
            return config_bad(ps, "garbage_collection_threshold: '%s' must be a number between 0 and 1 (exclusive)", config_shown(v, sh));
        c->garbage_collection_threshold = d;
        break;
    case K_memory_fraction:
        if (!config_parse_double(v, &d) || d < MIN_FRACTION || d > 1.0)
            return config_bad(ps, "memory_fraction: '%s' must be a number in [2^-40, 1]", config_shown(v, sh));
        c->memory_fraction = d;
        break;
    case K_memory_limit_mb:
        if (!config_parse_u64(v, &u) || u < CCA_SMALL_BUFFER / MB || u > MAX_MB)
            return config_bad(ps, "memory_limit_mb: '%s' must be an integer of at least 2 (MiB)", config_shown(v, sh));
        c->memory_limit = (size_t)u * MB;
        break;
    case K_release_before_grow:
        if (!config_parse_bool(v, &c->release_before_grow))
            return config_bad(ps, "release_before_grow: '%s' must be True or False (any case; 1 and 0 too)", config_shown(v, sh));
        break;
    case K_segment_growth_percent:
        if (!config_parse_u64(v, &u) || u > 1000)
            return config_bad(ps, "segment_growth_percent: '%s' must be an integer from 0 to 1000", config_shown(v, sh));
        c->segment_growth_percent = (size_t)u;
        break;
    case K_expandable_segments:
        if (!config_parse_bool(v, &c->expandable_segments))
            return config_bad(ps, "expandable_segments: '%s' must be True or False (any case; 1 and 0 too)", config_shown(v, sh));
        break;
    case K_trace_file:
        if (strlen(v) >= sizeof c->trace_file)
            return config_bad(ps, "trace_file: the path is %zu bytes, more than %zu", strlen(v), sizeof c->trace_file - 1);
        memcpy(c->trace_file, v, strlen(v) + 1);
        break;
    case K_preset:
        return config_apply_preset(ps, v, c);
    }
    return CCA_OK;
}

static int config_key_index(const char *name)
{
    for (int k = 0; k < K_COUNT; k++)
        if (!strcmp(keys[k].name, name)) return k;
    return -1;
}

/* The next entry of *at: "key:value" up to a ',' outside brackets. */
static char *config_next_entry(char **at)
{
    char *s = *at, *p = s;
    int depth = 0;
    for (; *p; p++) {
        if (*p == '[') depth++;
        else if (*p == ']' && depth) depth--;
        else if (*p == ',' && !depth) break;
    }
    if (*p) *p++ = 0;
    *at = p;
    return s;
}

/* The first field of c that differs from base and ends past `held` bytes:
 * a setting the caller's (older, smaller) struct cannot hold; NULL if none. */
static const char *config_field_past(const cca_config_t *c, const cca_config_t *base, size_t held)
{
#define CONFIG_PAST_(type, name, dims, doc) \
    if (offsetof(cca_config_t, name) + sizeof c->name > held && memcmp(&c->name, &base->name, sizeof c->name)) return #name;
    CCA_CONFIG_FIELDS(CONFIG_PAST_)
#undef CONFIG_PAST_
    return NULL;
}

/* Edit distance of a and b (both short: keys), for "did you mean". */
static size_t config_distance(const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b);
    if (la > 63 || lb > 63) return SIZE_MAX;
    size_t row[64];
    for (size_t j = 0; j <= lb; j++) row[j] = j;
    for (size_t i = 1; i <= la; i++) {
        size_t diag = row[0];
        row[0] = i;
        for (size_t j = 1; j <= lb; j++) {
            size_t up = row[j], cost = a[i - 1] == b[j - 1] ? 0 : 1;
            size_t best = diag + cost;
            if (up + 1 < best) best = up + 1;
            if (row[j - 1] + 1 < best) best = row[j - 1] + 1;
            diag = up;
            row[j] = best;
        }
    }
    return row[lb];
}

/* An unknown key: "key=value" written for "key:value", else the nearest
 * key when it is close, else the accepted keys. */
static cca_status_t config_unknown_key(parser_t *ps, const char *key, const char *accepted)
{
    char sh[64], name[64];
    const char *eq = strchr(key, '=');
    if (eq && (size_t)(eq - key) < sizeof name) {
        memcpy(name, key, (size_t)(eq - key));
        name[eq - key] = 0;
        if (config_key_index(config_trim(name)) >= 0)
            return config_bad(ps, "unknown key '%s': a key and its value are separated by ':' (%s:%s)",
                              config_shown(key, sh), config_trim(name), eq + 1);
    }
    int near = -1;
    size_t best = SIZE_MAX;
    for (int k = 0; k < K_COUNT; k++) {
        size_t d = config_distance(key, keys[k].name);
        if (d < best) best = d, near = k;
    }
    size_t len = strlen(key);
    if (near >= 0 && best <= 3 && best * 3 <= len)
        return config_bad(ps, "unknown key '%s' (did you mean '%s'?); accepted keys: %s", config_shown(key, sh),
                          keys[near].name, accepted);
    return config_bad(ps, "unknown key '%s'; accepted keys: %s", config_shown(key, sh), accepted);
}

static cca_status_t config_parse_all(parser_t *ps, char *text, cca_config_t *c)
{
    char sh[64], accepted[300] = "";
    for (int k = 0; k < K_COUNT; k++)
        snprintf(accepted + strlen(accepted), sizeof accepted - strlen(accepted), "%s%s", k ? ", " : "", keys[k].name);
    for (char *at = text; *at;) {
        char *entry = config_next_entry(&at), *colon = strchr(entry, ':');
        if (colon) *colon = 0;
        char *key = config_trim(entry);
        if (!*key && !colon) continue;                /* "a:1,,b:2" and a trailing comma */
        if (!*key) return config_bad(ps, "an entry has no key (':%s'); accepted keys: %s", config_shown(config_trim(colon + 1), sh), accepted);
        int k = config_key_index(key);
        if (k < 0) return config_unknown_key(ps, key, accepted);
        if (!colon) return config_bad(ps, "'%s' has no value (expected key:value)", key);
        char *v = config_trim(colon + 1);
        if (!*v) return config_bad(ps, "%s: the value is empty", key);
        if (ps->given[k]) return config_bad(ps, "%s is given twice", key);
        if (k != K_roundup_power2_divisions && (strchr(v, '[') || strchr(v, ']')))
            return config_bad(ps, "%s: '%s' is not a value of this key", key, config_shown(v, sh));
        cca_status_t st = config_apply(ps, k, v, c);
        if (st != CCA_OK) return st;
        const char *field = config_field_past(c, &ps->base, ps->held);
        if (field)
            return config_bad(ps, "%s sets cca_config_t's %s, which this program's %zu-byte cca_config_t (an older cca.h) "
                              "does not hold: rebuild the program against the installed cca.h to use it", key, field, ps->held);
        ps->given[k] = true;
    }
    return CCA_OK;
}

static cca_status_t config_parse(cca_config_t *cfg, size_t held, const char *conf, char *err, size_t err_len);

cca_status_t cca_config_parse_sized(cca_config_t *cfg, size_t cfg_size, const char *conf, char *err, size_t err_len)
{
    if (err && err_len) err[0] = 0;
    if (!cfg) return _cca_fail(CCA_ERROR_INVALID_ARGUMENT, "cca_config_parse: cfg is NULL");
    if (cfg_size < CCA_V1_CONFIG)
        return _cca_fail(CCA_ERROR_INVALID_ARGUMENT, "cca_config_parse: a config of %zu bytes is no cca_config_t", cfg_size);
    cca_config_t c;
    config_defaults(&c);
    memcpy(&c, cfg, cfg_size < sizeof c ? cfg_size : sizeof c);
    cca_status_t s = config_parse(&c, cfg_size, conf, err, err_len);
    if (s == CCA_OK) memcpy(cfg, &c, cfg_size < sizeof c ? cfg_size : sizeof c);   /* the caller's unknown tail stays */
    return s;
}

static cca_status_t config_parse(cca_config_t *cfg, size_t held, const char *conf, char *err, size_t err_len)
{
    if (!conf) return CCA_OK;
    parser_t ps = { .err = err, .err_len = err_len, .held = held, .base = *cfg };
    char *text = strdup(conf);
    if (!text) return _cca_fail(CCA_ERROR_OUT_OF_MEMORY, "cca_config_parse: out of host memory");
    cca_config_t c = *cfg;
    cca_status_t s = config_parse_all(&ps, text, &c);
    free(text);
    if (s == CCA_OK) *cfg = c;
    return s;
}

static int config_roundup_interval(size_t size)
{
    int log = 63 - __builtin_clzll((unsigned long long)size);
    int idx = log > 20 ? log - 20 : 0;
    return idx < CCA_ROUNDUP_INTERVALS ? idx : CCA_ROUNDUP_INTERVALS - 1;
}

static size_t config_next_division(size_t size, unsigned divisions)
{
    if ((size & (size - 1)) == 0) return size;
    size_t floor2 = (size_t)1 << (63 - __builtin_clzll((unsigned long long)size));
    size_t step = floor2 >> (31 - __builtin_clz(divisions));
    if (step == 0) return floor2 << 1;
    size_t down = size & ~(step - 1);
    return down == size ? size : down + step;
}

/* PyTorch's round_size: at least 512 B; power-of-2 divisions where set. */
size_t _cca_round_size(const cca_config_t *cfg, size_t size)
{
    if (size < CCA_MIN_BLOCK) return CCA_MIN_BLOCK;
    unsigned div = cfg->roundup_power2_divisions[config_roundup_interval(size)];
    if (div > 1 && size > CCA_MIN_BLOCK * div) return config_next_division(size, div);
    return CCA_MIN_BLOCK * ((size + CCA_MIN_BLOCK - 1) / CCA_MIN_BLOCK);
}
