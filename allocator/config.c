/* config.c - the configuration: defaults, the one table of keys
 * (CCA_CONFIG_KEY_TABLE in cca.h, read by type: the checks both paths
 * and the cap setters share, the messages, the defaults), PyTorch's
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

/* ---- the keys: one table, from CCA_CONFIG_KEY_TABLE ---------------------- */

enum {
#define KEY_ENUM_(name, type, field, off, lo, hi, value, range, def, doc) K_##name,
    CCA_CONFIG_KEY_TABLE(KEY_ENUM_)
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

/* What the table says of each key's value, typed. */
typedef enum { T_MIB, T_INTEGER, T_NUMBER, T_OPEN, T_BOOL, T_DIVISIONS, T_PRESET, T_PATH } key_type_t;
typedef struct key_spec {
    key_type_t type;
    const char *field;                                /* the cca_config_t member ("" for a preset) */
    size_t offset, size;
    unsigned long long off_u, lo_u, hi_u;             /* integer types (MIB in bytes) */
    double off_d, lo_d, hi_d;                         /* NUMBER, OPEN */
} key_spec_t;

#define SPEC_T_CCA_KEY_MIB T_MIB
#define SPEC_T_CCA_KEY_INTEGER T_INTEGER
#define SPEC_T_CCA_KEY_NUMBER T_NUMBER
#define SPEC_T_CCA_KEY_OPEN T_OPEN
#define SPEC_T_CCA_KEY_BOOL T_BOOL
#define SPEC_T_CCA_KEY_DIVISIONS T_DIVISIONS
#define SPEC_T_CCA_KEY_PRESET T_PRESET
#define SPEC_T_CCA_KEY_PATH T_PATH
#define SPEC_AT_(field) offsetof(cca_config_t, field), sizeof(((cca_config_t *)0)->field)
#define SPEC_AT_CCA_KEY_MIB(field) SPEC_AT_(field)
#define SPEC_AT_CCA_KEY_INTEGER(field) SPEC_AT_(field)
#define SPEC_AT_CCA_KEY_NUMBER(field) SPEC_AT_(field)
#define SPEC_AT_CCA_KEY_OPEN(field) SPEC_AT_(field)
#define SPEC_AT_CCA_KEY_BOOL(field) SPEC_AT_(field)
#define SPEC_AT_CCA_KEY_DIVISIONS(field) SPEC_AT_(field)
#define SPEC_AT_CCA_KEY_PATH(field) SPEC_AT_(field)
#define SPEC_AT_CCA_KEY_PRESET(field) 0, 0
static const key_spec_t specs[K_COUNT] = {
#define KEY_SPEC_(name, type, field, off, lo, hi, value, range, def, doc) \
    { SPEC_T_##type, #field, SPEC_AT_##type(field), (unsigned long long)(off), (unsigned long long)(lo), \
      (unsigned long long)(hi), (double)(off), (double)(lo), (double)(hi) },
    CCA_CONFIG_KEY_TABLE(KEY_SPEC_)
#undef KEY_SPEC_
};

/* Each key's field has the C type its kind reads and writes. */
#define SPEC_FIELD_(field, type) \
    _Static_assert(sizeof(((cca_config_t *)0)->field) == sizeof(type), #field " is no " #type);
#define SPEC_FIELD_CCA_KEY_MIB(field) SPEC_FIELD_(field, size_t)
#define SPEC_FIELD_CCA_KEY_INTEGER(field) SPEC_FIELD_(field, size_t)
#define SPEC_FIELD_CCA_KEY_NUMBER(field) SPEC_FIELD_(field, double)
#define SPEC_FIELD_CCA_KEY_OPEN(field) SPEC_FIELD_(field, double)
#define SPEC_FIELD_CCA_KEY_BOOL(field) SPEC_FIELD_(field, int)
#define SPEC_FIELD_CCA_KEY_DIVISIONS(field) SPEC_FIELD_(field, unsigned[CCA_ROUNDUP_INTERVALS])
#define SPEC_FIELD_CCA_KEY_PATH(field) _Static_assert(sizeof(((cca_config_t *)0)->field[0]) == 1, #field " is no char array");
#define SPEC_FIELD_CCA_KEY_PRESET(field)
#define KEY_FIELD_(name, type, field, off, lo, hi, value, range, def, doc) SPEC_FIELD_##type(field)
CCA_CONFIG_KEY_TABLE(KEY_FIELD_)
#undef KEY_FIELD_

static void *config_spec_field(cca_config_t *c, int k) { return (char *)c + specs[k].offset; }
static const void *config_spec_cfield(const cca_config_t *c, int k) { return (const char *)c + specs[k].offset; }

/* Every key's field at its off value; device 0. */
static void config_defaults(cca_config_t *cfg)
{
    memset(cfg, 0, sizeof *cfg);
    for (int k = 0; k < K_COUNT; k++) {
        const key_spec_t *sp = &specs[k];
        if (sp->type == T_MIB || sp->type == T_INTEGER) *(size_t *)config_spec_field(cfg, k) = (size_t)sp->off_u;
        else if (sp->type == T_NUMBER || sp->type == T_OPEN) *(double *)config_spec_field(cfg, k) = sp->off_d;
        else if (sp->type == T_BOOL) *(int *)config_spec_field(cfg, k) = (int)sp->off_u;
    }
}

void cca_config_init_sized(cca_config_t *cfg, size_t cfg_size)
{
    if (!cfg || cfg_size < CCA_V1_CONFIG) return;
    cca_config_t c;
    config_defaults(&c);
    _cca_copy_out(cfg, cfg_size, &c, sizeof c);
}

static bool config_pow2_or_zero(unsigned long long v) { return (v & (v - 1)) == 0; }

/* Whether a number is in the key's bounds (NaN never is). */
static bool config_spec_number_ok(const key_spec_t *sp, double d)
{
    return sp->type == T_OPEN ? d > sp->lo_d && d < sp->hi_d : d >= sp->lo_d && d <= sp->hi_d;
}

/* The struct's field of key k against the table, shared by both paths:
 * true when good, else what is wrong (naming the key and its field) in why. */
static bool config_field_ok(const cca_config_t *c, int k, char *why, size_t len)
{
    const key_spec_t *sp = &specs[k];
    const void *f = config_spec_cfield(c, k);
    const char *name = keys[k].name;
    switch (sp->type) {
    case T_MIB:
    case T_INTEGER: {
        unsigned long long v = *(const size_t *)f;
        if (v == sp->off_u || (v >= sp->lo_u && v <= sp->hi_u)) return true;
        char off[96] = "", who[96];
        if (sp->off_u == SIZE_MAX) snprintf(off, sizeof off, ", or SIZE_MAX (%s)", keys[k].default_value);
        else if (sp->off_u < sp->lo_u || sp->off_u > sp->hi_u)  /* off outside the bounds: say it too */
            snprintf(off, sizeof off, ", or %llu (%s)", sp->off_u, keys[k].default_value);
        if (strcmp(name, sp->field)) snprintf(who, sizeof who, "%s (%s)", name, sp->field);
        else snprintf(who, sizeof who, "%s", name);
        snprintf(why, len, "%s is %llu: it must be %llu .. %llu%s%s", who, v, sp->lo_u, sp->hi_u,
                 sp->type == T_MIB ? " bytes" : "", off);
        return false;
    }
    case T_NUMBER:
    case T_OPEN: {
        double d = *(const double *)f;
        if (d == sp->off_d || config_spec_number_ok(sp, d)) return true;
        snprintf(why, len, "%s is %g: it must be in %s, or %g (%s)", name, d, keys[k].range, sp->off_d,
                 keys[k].default_value);
        return false;
    }
    case T_BOOL:
        if (*(const int *)f == 0 || *(const int *)f == 1) return true;
        snprintf(why, len, "%s is %d: it must be 0 or 1", name, *(const int *)f);
        return false;
    case T_DIVISIONS:
        for (int i = 0; i < CCA_ROUNDUP_INTERVALS; i++) {
            unsigned v = ((const unsigned *)f)[i];
            if (config_pow2_or_zero(v) && v <= sp->hi_u) continue;
            snprintf(why, len, "%s[%d] is %u: each must be 0 or a power of 2 up to %llu", name, i, v, sp->hi_u);
            return false;
        }
        return true;
    case T_PATH:
        if (memchr(f, 0, sp->size)) return true;
        snprintf(why, len, "%s must end within its %zu bytes", name, sp->size);
        return false;
    default:
        return true;
    }
}

cca_status_t _cca_config_check(const cca_config_t *c, size_t device_total)
{
    char why[256];
    if (c->device < 0) return _cca_errors_fail(CCA_ERROR_INVALID_ARGUMENT, "cca_create: device %d is negative", c->device);
    for (int k = 0; k < K_COUNT; k++)
        if (!config_field_ok(c, k, why, sizeof why)) return _cca_errors_fail(CCA_ERROR_INVALID_ARGUMENT, "cca_create: %s", why);
    if (device_total && c->memory_fraction > 0.0 && c->memory_fraction * (double)device_total < (double)CCA_SMALL_BUFFER)
        return _cca_errors_fail(CCA_ERROR_INVALID_ARGUMENT,
                         "cca_create: memory_fraction %g of device %d's %zu bytes leaves no room for one 2 MiB segment",
                         c->memory_fraction, c->device, device_total);
    return CCA_OK;
}

/* The run-time setters' check of one key (cca_set_memory_fraction, ...). */
bool _cca_config_key_ok(const cca_config_t *c, const char *key, char *why, size_t len)
{
    for (int k = 0; k < K_COUNT; k++)
        if (!strcmp(keys[k].name, key)) return config_field_ok(c, k, why, len);
    snprintf(why, len, "%s is no configuration key", key);
    return false;
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
    return _cca_errors_fail(CCA_ERROR_INVALID_CONFIG, "%s", text);
}

/* A value the key's type does not take: the table's words for what it takes. */
static cca_status_t config_bad_value(parser_t *ps, int k, const char *v)
{
    char sh[64];
    return config_bad(ps, "%s: '%s' must be %s: %s", keys[k].name, config_shown(v, sh), keys[k].value, keys[k].range);
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
        if (!config_parse_u64(v, &div) || !config_pow2_or_zero(div) || div > specs[K_roundup_power2_divisions].hi_u)
            return config_bad(ps, "roundup_power2_divisions: divisions '%s' must be 0 or a power of 2 up to %llu", config_shown(v, sh),
                              specs[K_roundup_power2_divisions].hi_u);
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

/* The presets, from CCA_CONFIG_PRESETS. */
typedef struct config_preset { const char *name, *settings; } config_preset_t;
static const config_preset_t presets[] = {
#define PRESET_ROW_(name, settings) { #name, settings },
    CCA_CONFIG_PRESETS(PRESET_ROW_)
#undef PRESET_ROW_
};

/* Whether preset p sets key k: pytorch every key but itself and
 * trace_file (where to record is no policy), another the keys it names. */
static bool config_preset_sets(const config_preset_t *p, int k)
{
    if (k == K_trace_file) return false;
    if (!*p->settings) return k != K_preset;
    size_t n = strlen(keys[k].name);
    for (const char *s = p->settings; s; s = strchr(s, ',') ? strchr(s, ',') + 1 : NULL)
        if (!strncmp(s, keys[k].name, n) && s[n] == ':') return true;
    return false;
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
    if (!config_parse_u64(v, &u) || !config_pow2_or_zero(u) || u > specs[K_roundup_power2_divisions].hi_u)
        return config_bad_value(ps, K_roundup_power2_divisions, v);
    for (int i = 0; i < CCA_ROUNDUP_INTERVALS; i++) c->roundup_power2_divisions[i] = (unsigned)u;
    return CCA_OK;
}

static cca_status_t config_apply(parser_t *ps, int k, char *v, cca_config_t *c);
static int config_key_index(const char *name);
static char *config_next_entry(char **at);

/* A preset's settings applied over c (the table's own strings: valid). */
static cca_status_t config_apply_settings(parser_t *ps, const char *settings, cca_config_t *c)
{
    char text[256];
    snprintf(text, sizeof text, "%s", settings);
    for (char *at = text; *at;) {
        char *entry = config_next_entry(&at), *colon = strchr(entry, ':');
        int k = colon ? (*colon = 0, config_key_index(entry)) : -1;
        if (k < 0) return config_bad(ps, "preset: '%s' in its settings is no key", entry);
        cca_status_t st = config_apply(ps, k, colon + 1, c);
        if (st != CCA_OK) return st;
    }
    return CCA_OK;
}

/* preset:NAME, refused after a key it sets again; pytorch keeps the device and the trace file. */
static cca_status_t config_apply_preset(parser_t *ps, const char *v, cca_config_t *c)
{
    char sh[64];
    const config_preset_t *p = NULL;
    for (size_t i = 0; i < sizeof presets / sizeof presets[0]; i++)
        if (!strcmp(v, presets[i].name)) p = &presets[i];
    if (!p) return config_bad(ps, "preset: '%s' is not a preset (accepted: %s)", config_shown(v, sh), keys[K_preset].range);
    for (int j = 0; j < K_COUNT; j++)
        if (ps->given[j] && config_preset_sets(p, j))
            return config_bad(ps, "%s is given before preset:%s, which sets it again: put the preset first", keys[j].name, v);
    if (*p->settings) return config_apply_settings(ps, p->settings, c);
    cca_config_t keep = *c;
    config_defaults(c);
    c->device = keep.device;
    memcpy(c->trace_file, keep.trace_file, sizeof c->trace_file);
    return CCA_OK;
}

/* The string's value v of key k, read and checked as the table types it. */
static cca_status_t config_apply(parser_t *ps, int k, char *v, cca_config_t *c)
{
    const key_spec_t *sp = &specs[k];
    void *f = config_spec_field(c, k);
    unsigned long long u;
    double d;
    int b;
    switch (sp->type) {
    case T_MIB:                                       /* u <= hi / MB: no overflow */
        if (!config_parse_u64(v, &u) || u > sp->hi_u / MB || u * MB < sp->lo_u) return config_bad_value(ps, k, v);
        *(size_t *)f = (size_t)(u * MB);
        return CCA_OK;
    case T_INTEGER:
        if (!config_parse_u64(v, &u) || u < sp->lo_u || u > sp->hi_u) return config_bad_value(ps, k, v);
        *(size_t *)f = (size_t)u;
        return CCA_OK;
    case T_NUMBER:
    case T_OPEN:
        if (!config_parse_double(v, &d) || !config_spec_number_ok(sp, d)) return config_bad_value(ps, k, v);
        *(double *)f = d;
        return CCA_OK;
    case T_BOOL:
        if (!config_parse_bool(v, &b)) return config_bad_value(ps, k, v);
        *(int *)f = b;
        return CCA_OK;
    case T_DIVISIONS:
        return config_apply_roundup(ps, v, c);
    case T_PATH:
        if (strlen(v) >= sp->size)
            return config_bad(ps, "%s: the path is %zu bytes, more than %zu", keys[k].name, strlen(v), sp->size - 1);
        memcpy(f, v, strlen(v) + 1);
        return CCA_OK;
    case T_PRESET:
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
    if (!cfg) return _cca_errors_fail(CCA_ERROR_INVALID_ARGUMENT, "cca_config_parse: cfg is NULL");
    if (cfg_size < CCA_V1_CONFIG)
        return _cca_errors_fail(CCA_ERROR_INVALID_ARGUMENT, "cca_config_parse: a config of %zu bytes is no cca_config_t", cfg_size);
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
    if (!text) return _cca_errors_fail(CCA_ERROR_OUT_OF_MEMORY, "cca_config_parse: out of host memory");
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
size_t _cca_config_round_size(const cca_config_t *cfg, size_t size)
{
    if (size < CCA_MIN_BLOCK) return CCA_MIN_BLOCK;
    unsigned div = cfg->roundup_power2_divisions[config_roundup_interval(size)];
    if (div > 1 && size > CCA_MIN_BLOCK * div) return config_next_division(size, div);
    return CCA_MIN_BLOCK * ((size + CCA_MIN_BLOCK - 1) / CCA_MIN_BLOCK);
}
