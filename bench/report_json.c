/* report_json.c - see report_json.h. Layout:
 * {"meta": {...}, "summary": [lines], "rows": [{"scenario", "case", "allocator", "unit", "median",
 *  "min", "max", "reps", "calls_per_op": {...} | null, "ratio": {cca label: cca
 *  time / this time}, "extra": {...}, "error": text | null}, ...]} */
#include "report_json.h"

#include <string.h>
#include "alloc_ops.h"
#include "report_table.h"
#include "results.h"

#include <math.h>
#include <stdio.h>

static void str(FILE *f, const char *s)
{
    fputc('"', f);
    for (; *s; s++) {
        if (*s == '"' || *s == '\\')
            fprintf(f, "\\%c", *s);
        else if ((unsigned char)*s < 0x20)
            fprintf(f, "\\u%04x", *s);
        else
            fputc(*s, f);
    }
    fputc('"', f);
}

static void num(FILE *f, double v)
{
    if (isnan(v) || isinf(v))
        fprintf(f, "null");
    else if (v == floor(v) && fabs(v) < 9e15)
        fprintf(f, "%.0f", v);      /* byte and event counts, exactly */
    else
        fprintf(f, "%.9g", v);
}

static void meta(FILE *f, const machine_t *m, const bench_opts_t *o)
{
    fprintf(f, "\"meta\": {\"date\": ");
    str(f, m->date);
    fprintf(f, ", \"nproc\": %ld, \"cpu\": ", m->nproc);
    str(f, m->cpu);
    fprintf(f, ", \"runtime\": ");
    str(f, m->runtime);
    fprintf(f, ", \"reps\": %d, \"quick\": %s, \"allocators\": [", o->reps,
            o->quick ? "true" : "false");
    for (size_t i = 0; i < o->n_allocs; i++) {
        fprintf(f, "%s{\"label\": ", i ? ", " : "");
        str(f, o->allocs[i].label);
        fprintf(f, ", \"conf\": ");
        str(f, o->allocs[i].conf ? o->allocs[i].conf : "");
        fprintf(f, ", \"modelled\": %s}", o->allocs[i].modelled ? "true" : "false");
    }
    fprintf(f, "], \"skipped\": [");
    if (bench_torch_skipped[0]) {                      /* PyTorch's allocator, built only where a torch was found */
        fprintf(f, "{\"allocator\": \"torch-native\", \"skipped\": ");
        str(f, bench_torch_skipped);
        fprintf(f, "}, {\"allocator\": \"torch-expandable\", \"skipped\": ");
        str(f, bench_torch_skipped);
        fprintf(f, "}");
    }
    fprintf(f, "]}");
}

static void calls(FILE *f, const bench_figure_t *g)
{
    if (!g->have_calls) {
        fprintf(f, "null");
        return;
    }
    const simctl_calls_t *c = &g->calls;
    fprintf(f, "{\"total\": ");
    num(f, c->total);
    fprintf(f, ", \"cudaMalloc\": ");
    num(f, c->malloc);
    fprintf(f, ", \"cudaFree\": ");
    num(f, c->free);
    fprintf(f, ", \"cudaEventCreate\": ");
    num(f, c->event_create);
    fprintf(f, ", \"cudaEventRecord\": ");
    num(f, c->event_record);
    fprintf(f, ", \"cudaEventQuery\": ");
    num(f, c->event_query);
    fprintf(f, "}");
}

static void ratios(FILE *f, const bench_row_t *r, const bench_opts_t *o)
{
    int first = 1;
    fprintf(f, "{");
    for (size_t i = 0; i < o->n_allocs; i++) {
        const bench_row_t *c = results_find(r->scenario, r->case_name, o->allocs[i].label);
        if (!o->allocs[i].is_cca || !c || c == r || r->scenario[0] == 'g')
            continue;
        fprintf(f, "%s", first ? "" : ", ");
        str(f, o->allocs[i].label);
        fprintf(f, ": ");
        num(f, time_ratio(c, r));
        first = 0;
    }
    fprintf(f, "}");
}

static void extras(FILE *f, const bench_row_t *r)
{
    fprintf(f, "{");
    for (size_t i = 0; i < r->n_extra; i++) {
        fprintf(f, "%s", i ? ", " : "");
        str(f, r->extra[i].key);
        fprintf(f, ": ");
        num(f, r->extra[i].value);
    }
    fprintf(f, "}");
}

static void row(FILE *f, const bench_row_t *r, const bench_opts_t *o)
{
    fprintf(f, "{\"scenario\": ");
    str(f, r->scenario);
    fprintf(f, ", \"case\": ");
    str(f, r->case_name);
    fprintf(f, ", \"allocator\": ");
    str(f, r->alloc);
    fprintf(f, ", \"unit\": ");
    str(f, r->unit);
    fprintf(f, ", \"modelled\": %s, \"median\": ", r->modelled ? "true" : "false");
    num(f, r->fig.failed ? NAN : r->fig.median);
    fprintf(f, ", \"min\": ");
    num(f, r->fig.failed ? NAN : r->fig.min);
    fprintf(f, ", \"max\": ");
    num(f, r->fig.failed ? NAN : r->fig.max);
    fprintf(f, ", \"reps\": %d, \"calls_per_op\": ", r->fig.reps);
    calls(f, &r->fig);
    fprintf(f, ", \"ratio\": ");
    ratios(f, r, o);
    fprintf(f, ", \"extra\": ");
    extras(f, r);
    fprintf(f, ", \"error\": ");
    if (r->fig.failed && r->fig.msg[0])
        str(f, r->fig.msg);
    else
        fprintf(f, "null");
    fprintf(f, "}");
}

int report_json(const char *path, const machine_t *m, const bench_opts_t *o, const char *summary)
{
    FILE *f = fopen(path, "w");
    if (!f)
        return -1;
    fprintf(f, "{");
    meta(f, m, o);
    fprintf(f, ",\n\"summary\": [");                 /* the lines the run opened with (summary.c) */
    for (const char *line = summary; line && *line;) {
        const char *nl = strchr(line, '\n');
        size_t n = nl ? (size_t)(nl - line) : strlen(line);
        char buf[1024];
        snprintf(buf, sizeof buf, "%.*s", (int)(n < sizeof buf ? n : sizeof buf - 1), line);
        fprintf(f, "%s\n  ", line == summary ? "" : ",");
        str(f, buf);
        line += n + (nl != NULL);
    }
    fprintf(f, "],\n\"rows\": [\n");
    for (size_t i = 0; i < results_count(); i++) {
        fprintf(f, "%s", i ? ",\n" : "");
        row(f, results_get(i), o);
    }
    fprintf(f, "\n]}\n");
    return fclose(f) == 0 ? 0 : -1;
}
