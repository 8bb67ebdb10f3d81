/* config.c - the configuration: defaults, PyTorch's "key:value,..." syntax
 * (CCA_CONF), and request rounding (512 B, or roundup_power2_divisions). */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include "internal.h"

#define MB ((size_t)1 << 20)
#define ACCEPTED "accepted keys: max_split_size_mb, roundup_power2_divisions, " \
                 "garbage_collection_threshold, memory_fraction, memory_limit_mb, " \
                 "release_before_grow, segment_growth_percent, preset"

static void defaults(cca_config_t *cfg)
{
    memset(cfg, 0, sizeof *cfg);
    cfg->max_split_size = SIZE_MAX;
}

void cca_config_init_sized(cca_config_t *cfg, size_t cfg_size)
{
    if (!cfg || cfg_size < CCA_V1_CONFIG) return;
    cca_config_t c;
    defaults(&c);
    _cca_copy_out(cfg, cfg_size, &c, sizeof c);
}

void (cca_config_init)(cca_config_t *cfg) { cca_config_init_sized(cfg, CCA_V1_CONFIG); }

typedef struct parser {
    const char *p;                  /* cursor */
    char *err;
    size_t err_len;
} parser_t;

static cca_status_t bad(parser_t *ps, const char *fmt, const char *a, const char *b)
{
    char text[400];
    snprintf(text, sizeof text, fmt, a, b);
    if (ps->err && ps->err_len) snprintf(ps->err, ps->err_len, "%s", text);
    return _cca_fail(CCA_ERROR_INVALID_CONFIG, "%s", text);
}

static void skip_space(parser_t *ps) { while (isspace((unsigned char)*ps->p)) ps->p++; }

/* Copies the next token (up to one of `stops`) into buf. */
static size_t token(parser_t *ps, char *buf, size_t len, const char *stops)
{
    skip_space(ps);
    size_t n = 0;
    while (*ps->p && !strchr(stops, *ps->p)) {
        if (n + 1 < len) buf[n++] = *ps->p;
        ps->p++;
    }
    while (n && isspace((unsigned char)buf[n - 1])) n--;
    buf[n] = 0;
    return n;
}

static bool parse_u64(const char *s, unsigned long long *out)
{
    if (!*s || !isdigit((unsigned char)*s)) return false;
    char *end;
    errno = 0;
    *out = strtoull(s, &end, 10);
    return errno == 0 && *end == 0;
}

static bool parse_double(const char *s, double *out)
{
    if (!*s) return false;
    char *end;
    errno = 0;
    *out = strtod(s, &end);
    return errno == 0 && *end == 0 && isfinite(*out);
}

static bool parse_bool(const char *s, int *out)
{
    if (!strcasecmp(s, "true") || !strcmp(s, "1")) { *out = 1; return true; }
    if (!strcasecmp(s, "false") || !strcmp(s, "0")) { *out = 0; return true; }
    return false;
}

static bool pow2_or_zero(unsigned long long v) { return (v & (v - 1)) == 0; }

static int interval_of_mb(unsigned long long mb)
{
    int idx = 0;
    while (idx < CCA_ROUNDUP_INTERVALS - 1 && (1ull << (idx + 1)) <= mb) idx++;
    return idx;                     /* log2(mb), clamped */
}

/* "[256:1,512:2,>:4]": key in MB (a power of 2) or ">" for the rest. */
static cca_status_t parse_division_list(parser_t *ps, cca_config_t *c)
{
    char k[64], v[64];
    int next = 0;                   /* first interval not yet given a value */
    bool any = false;
    ps->p++;                        /* '[' */
    for (;;) {
        token(ps, k, sizeof k, ":,]");
        if (*ps->p != ':') return bad(ps, "roundup_power2_divisions: expected 'MB:divisions' in the list, got '%s'%s", k, "");
        ps->p++;
        token(ps, v, sizeof v, ",]");
        unsigned long long mb = 0, div;
        if (!parse_u64(v, &div) || !pow2_or_zero(div) || div > (1u << 20))
            return bad(ps, "roundup_power2_divisions: divisions '%s' must be 0 or a power of 2%s", v, "");
        if (strcmp(k, ">") == 0) {
            for (int i = next; i < CCA_ROUNDUP_INTERVALS; i++) c->roundup_power2_divisions[i] = (unsigned)div;
            next = CCA_ROUNDUP_INTERVALS;
        } else {
            if (!parse_u64(k, &mb) || mb == 0 || !pow2_or_zero(mb))
                return bad(ps, "roundup_power2_divisions: interval '%s' must be a power of 2 (MB) or '>'%s", k, "");
            int idx = interval_of_mb(mb);
            if (any && idx < next)
                return bad(ps, "roundup_power2_divisions: interval '%s' is not in increasing order%s", k, "");
            for (int i = any ? next : 0; i <= idx; i++) c->roundup_power2_divisions[i] = (unsigned)div;
            next = idx + 1;
        }
        any = true;
        skip_space(ps);
        if (*ps->p == ']') { ps->p++; return CCA_OK; }
        if (*ps->p != ',') return bad(ps, "roundup_power2_divisions: missing ']'%s%s", "", "");
        ps->p++;
    }
}

static cca_status_t parse_value(parser_t *ps, const char *key, cca_config_t *c)
{
    char v[64];
    skip_space(ps);
    if (strcmp(key, "roundup_power2_divisions") == 0 && *ps->p == '[')
        return parse_division_list(ps, c);
    token(ps, v, sizeof v, ",");
    unsigned long long u;
    double d;
    if (strcmp(key, "max_split_size_mb") == 0) {
        if (!parse_u64(v, &u) || u <= CCA_LARGE_BUFFER / MB || u > (SIZE_MAX / MB))
            return bad(ps, "max_split_size_mb: '%s' must be an integer above 20 (MB)%s", v, "");
        c->max_split_size = (size_t)u * MB;
    } else if (strcmp(key, "roundup_power2_divisions") == 0) {
        if (!parse_u64(v, &u) || !pow2_or_zero(u) || u > (1u << 20))
            return bad(ps, "roundup_power2_divisions: '%s' must be 0 or a power of 2, or a list [MB:N,...,>:N]%s", v, "");
        for (int i = 0; i < CCA_ROUNDUP_INTERVALS; i++) c->roundup_power2_divisions[i] = (unsigned)u;
    } else if (strcmp(key, "garbage_collection_threshold") == 0) {
        if (!parse_double(v, &d) || d <= 0.0 || d >= 1.0)
            return bad(ps, "garbage_collection_threshold: '%s' must be a number between 0 and 1 (exclusive)%s", v, "");
        c->garbage_collection_threshold = d;
    } else if (strcmp(key, "memory_fraction") == 0) {
        if (!parse_double(v, &d) || d <= 0.0 || d > 1.0)
            return bad(ps, "memory_fraction: '%s' must be a number in (0, 1]%s", v, "");
        c->memory_fraction = d;
    } else if (strcmp(key, "memory_limit_mb") == 0) {
        if (!parse_u64(v, &u) || u == 0 || u > (SIZE_MAX / MB))
            return bad(ps, "memory_limit_mb: '%s' must be a positive integer (MB)%s", v, "");
        c->memory_limit = (size_t)u * MB;
    } else if (strcmp(key, "preset") == 0) {
        if (strcmp(v, "pytorch") == 0) {
            int device = c->device;
            defaults(c);
            c->device = device;
        } else if (strcmp(v, "lean") == 0) {
            c->release_before_grow = 1;
            c->max_split_size = CCA_LEAN_MAX_SPLIT;
            c->segment_growth_percent = CCA_LEAN_GROWTH_PERCENT;
        } else {
            return bad(ps, "preset: '%s' is not a preset (accepted: pytorch, lean)%s", v, "");
        }
    } else if (strcmp(key, "release_before_grow") == 0) {
        if (!parse_bool(v, &c->release_before_grow))
            return bad(ps, "release_before_grow: '%s' must be True or False%s", v, "");
    } else if (strcmp(key, "segment_growth_percent") == 0) {
        if (!parse_u64(v, &u) || u > 1000)
            return bad(ps, "segment_growth_percent: '%s' must be an integer from 0 to 1000%s", v, "");
        c->segment_growth_percent = (size_t)u;
    } else {
        return bad(ps, "unknown key '%s'; %s", key, ACCEPTED);
    }
    return CCA_OK;
}

cca_status_t (cca_config_parse)(cca_config_t *cfg, const char *conf, char *err, size_t err_len)
{
    return cca_config_parse_sized(cfg, CCA_V1_CONFIG, conf, err, err_len);
}

static cca_status_t parse(cca_config_t *cfg, const char *conf, char *err, size_t err_len);

cca_status_t cca_config_parse_sized(cca_config_t *cfg, size_t cfg_size, const char *conf, char *err, size_t err_len)
{
    if (err && err_len) err[0] = 0;
    if (!cfg) return _cca_fail(CCA_ERROR_INVALID_ARGUMENT, "cca_config_parse: cfg is NULL");
    if (cfg_size < CCA_V1_CONFIG)
        return _cca_fail(CCA_ERROR_INVALID_ARGUMENT, "cca_config_parse: a config of %zu bytes is no cca_config_t", cfg_size);
    cca_config_t c;
    defaults(&c);
    memcpy(&c, cfg, cfg_size < sizeof c ? cfg_size : sizeof c);
    cca_status_t s = parse(&c, conf, err, err_len);
    if (s == CCA_OK) memcpy(cfg, &c, cfg_size < sizeof c ? cfg_size : sizeof c);   /* the caller's unknown tail stays */
    return s;
}

static cca_status_t parse(cca_config_t *cfg, const char *conf, char *err, size_t err_len)
{
    if (!conf) return CCA_OK;
    cca_config_t c = *cfg;
    parser_t ps = { conf, err, err_len };
    for (;;) {
        char key[64];
        skip_space(&ps);
        if (!*ps.p) break;
        if (*ps.p == ',') { ps.p++; continue; }
        token(&ps, key, sizeof key, ":,");
        if (*ps.p != ':') return bad(&ps, "'%s' has no value (expected key:value); %s", key, ACCEPTED);
        ps.p++;
        cca_status_t s = parse_value(&ps, key, &c);
        if (s != CCA_OK) return s;
        skip_space(&ps);
        if (*ps.p && *ps.p != ',') return bad(&ps, "unexpected '%s' after the value of %s", ps.p, key);
    }
    *cfg = c;
    return CCA_OK;
}

static int roundup_interval(size_t size)
{
    int log = 63 - __builtin_clzll((unsigned long long)size);
    int idx = log > 20 ? log - 20 : 0;
    return idx < CCA_ROUNDUP_INTERVALS ? idx : CCA_ROUNDUP_INTERVALS - 1;
}

static size_t next_division(size_t size, unsigned divisions)
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
    unsigned div = cfg->roundup_power2_divisions[roundup_interval(size)];
    if (div > 1 && size > CCA_MIN_BLOCK * div) return next_division(size, div);
    return CCA_MIN_BLOCK * ((size + CCA_MIN_BLOCK - 1) / CCA_MIN_BLOCK);
}
