/* results.c - see results.h. */
#include "results.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Each row is allocated on its own and never moves: scenarios keep the
 * pointers results_add returned while they add more rows (a realloc'd
 * array of rows left them dangling once it grew). */
static bench_row_t **rows;
static size_t n_rows, cap_rows;

bench_row_t *results_add(const char *scenario, const char *case_name, const char *alloc,
                         const char *unit)
{
    if (n_rows == cap_rows) {
        size_t cap = cap_rows ? cap_rows * 2 : 256;
        bench_row_t **grown = realloc(rows, cap * sizeof *grown);
        if (!grown) {
            fprintf(stderr, "cca-bench: out of memory\n");
            exit(1);
        }
        rows = grown;
        cap_rows = cap;
    }
    bench_row_t *r = calloc(1, sizeof *r);
    if (!r) {
        fprintf(stderr, "cca-bench: out of memory\n");
        exit(1);
    }
    rows[n_rows++] = r;
    snprintf(r->scenario, sizeof r->scenario, "%s", scenario);
    snprintf(r->case_name, sizeof r->case_name, "%s", case_name);
    snprintf(r->alloc, sizeof r->alloc, "%s", alloc);
    snprintf(r->unit, sizeof r->unit, "%s", unit);
    return r;
}

void results_extra(bench_row_t *r, const char *key, double value)
{
    if (r->n_extra == RESULT_MAX_EXTRA)
        return;
    bench_extra_t *e = &r->extra[r->n_extra++];
    snprintf(e->key, sizeof e->key, "%s", key);
    e->value = value;
}

size_t results_count(void) { return n_rows; }
const bench_row_t *results_get(size_t i) { return i < n_rows ? rows[i] : NULL; }

const bench_row_t *results_find(const char *scenario, const char *case_name, const char *alloc)
{
    for (size_t i = 0; i < n_rows; i++)
        if (!strcmp(rows[i]->scenario, scenario) && !strcmp(rows[i]->case_name, case_name) &&
            !strcmp(rows[i]->alloc, alloc))
            return rows[i];
    return NULL;
}

double results_extra_get(const bench_row_t *r, const char *key)
{
    for (size_t i = 0; r && i < r->n_extra; i++)
        if (!strcmp(r->extra[i].key, key))
            return r->extra[i].value;
    return NAN;
}

void results_clear(void)
{
    for (size_t i = 0; i < n_rows; i++)
        free(rows[i]);
    free(rows);
    rows = NULL;
    n_rows = cap_rows = 0;
}
