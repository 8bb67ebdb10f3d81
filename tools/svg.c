/* svg.c - the timeline and segment-map pictures (svg.h). Plain SVG 1.1 with
 * no script and no external reference: any browser, or an <img>, shows it. */
#include "svg.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define WIDTH 960
#define PLOT_X 90
#define PLOT_W 820
#define PLOT_H 300
#define MAP_X 20
#define MAP_W 920
#define ROW_H 22
#define BAR_H 16
#define GAP 4

struct svg_doc {
    FILE *body;
    char *buf;
    size_t len;
    int height;                          /* of the panels so far */
};

static const char *const colours[] = {"#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#17becf",
                                      "#8c564b", "#e377c2"};

svg_doc_t *svg_open(void)
{
    svg_doc_t *d = calloc(1, sizeof *d);
    if (d && !(d->body = open_memstream(&d->buf, &d->len))) {
        free(d);
        d = NULL;
    }
    return d;
}

void svg_discard(svg_doc_t *d)
{
    if (!d)
        return;
    fclose(d->body);
    free(d->buf);
    free(d);
}

int svg_save(svg_doc_t *d, const char *path)
{
    char tmp[4200];
    int ok = fflush(d->body) == 0 && snprintf(tmp, sizeof tmp, "%s.tmp%ld", path, (long)getpid()) < (int)sizeof tmp;
    FILE *f = ok ? fopen(tmp, "w") : NULL;
    if (f) {
        fprintf(f, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
                   "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\" "
                   "font-family=\"sans-serif\" font-size=\"12\">\n"
                   "<rect class=\"background\" x=\"0\" y=\"0\" width=\"%d\" height=\"%d\" fill=\"#ffffff\"/>\n",
                WIDTH, d->height, WIDTH, d->height, WIDTH, d->height);
        ok = fwrite(d->buf, 1, d->len, f) == d->len;
        ok = fputs("</svg>\n", f) >= 0 && ok;
        ok = fclose(f) == 0 && ok;
        ok = ok && rename(tmp, path) == 0;     /* the picture whole, or none */
        if (!ok) {
            int e = errno;
            remove(tmp);
            errno = e;
        }
    }
    int e = errno;
    svg_discard(d);
    errno = e;
    return f && ok ? 0 : -1;
}

int svg_utf8_len(const unsigned char *s)
{
    if (s[0] < 0x80)
        return 1;
    int n = s[0] >= 0xc2 && s[0] <= 0xdf ? 2 : s[0] >= 0xe0 && s[0] <= 0xef ? 3 : s[0] >= 0xf0 && s[0] <= 0xf4 ? 4 : 0;
    for (int i = 1; i < n; i++)
        if ((s[i] & 0xc0) != 0x80)
            return 0;
    if ((n == 3 && ((s[0] == 0xe0 && s[1] < 0xa0) || (s[0] == 0xed && s[1] >= 0xa0))) ||
        (n == 4 && ((s[0] == 0xf0 && s[1] < 0x90) || (s[0] == 0xf4 && s[1] >= 0x90))))
        return 0;
    return n;
}

/* Text as XML allows it in content and attributes: &, <, > and quotes
 * escaped, control characters and bytes that are not UTF-8 shown as '?'. */
static void text(FILE *f, const char *str)
{
    const unsigned char *s = (const unsigned char *)str;
    while (*s) {
        int n = svg_utf8_len(s);
        if (*s == '&')
            fputs("&amp;", f);
        else if (*s == '<')
            fputs("&lt;", f);
        else if (*s == '>')
            fputs("&gt;", f);
        else if (*s == '"')
            fputs("&quot;", f);
        else if (n == 0 || *s < 0x20)
            fputc('?', f);
        else
            fwrite(s, 1, (size_t)n, f);
        s += n ? n : 1;
    }
}

static const char *size_text(uint64_t b, char *out, size_t len)
{
    if (b == 0)
        snprintf(out, len, "0");
    else if (b >= ((uint64_t)1 << 30))
        snprintf(out, len, "%.2f GiB", (double)b / (double)((uint64_t)1 << 30));
    else if (b >= ((uint64_t)1 << 20))
        snprintf(out, len, "%.1f MiB", (double)b / (double)((uint64_t)1 << 20));
    else
        snprintf(out, len, "%.1f KiB", (double)b / 1024.0);
    return out;
}

/* ---- the timeline ----------------------------------------------------- */

typedef struct frame { double x, y, w, h; size_t events; uint64_t max_bytes; } frame_t;

static double fx(const frame_t *fr, double event)
{
    return fr->events > 1 ? fr->x + event * fr->w / (double)(fr->events - 1) : fr->x;
}

static double fy(const frame_t *fr, uint64_t b)
{
    return fr->y + fr->h - (double)b * fr->h / (double)fr->max_bytes;
}

/* A round number of bytes at least b: 1, 2 or 5 times a power of 2^10 steps. */
static uint64_t nice_ceiling(uint64_t b)
{
    uint64_t unit = 1;
    while (unit <= b / 1024)
        unit *= 1024;
    static const int steps[] = {1, 2, 4, 5, 8, 10, 16, 20, 25, 32, 40, 50, 64, 80, 100, 128, 160, 200, 256,
                                320, 400, 512, 640, 800, 1024};
    for (size_t i = 0; i < sizeof steps / sizeof steps[0]; i++)
        if (unit <= UINT64_MAX / 1024 && (uint64_t)steps[i] * unit >= b)
            return (uint64_t)steps[i] * unit;
    return b;
}

static void axes(FILE *f, const frame_t *fr)
{
    char s[32];
    fprintf(f, "<rect class=\"plot\" x=\"%.0f\" y=\"%.0f\" width=\"%.0f\" height=\"%.0f\" data-events=\"%zu\" "
               "data-max-bytes=\"%" PRIu64 "\" fill=\"#fafafa\" stroke=\"#888888\"/>\n",
            fr->x, fr->y, fr->w, fr->h, fr->events, fr->max_bytes);
    for (int k = 0; k <= 4; k++) {
        uint64_t b = fr->max_bytes / 4 * (uint64_t)k;
        double y = fy(fr, b);
        fprintf(f, "<line x1=\"%.0f\" y1=\"%.2f\" x2=\"%.0f\" y2=\"%.2f\" stroke=\"#dddddd\"/>"
                   "<text x=\"%.0f\" y=\"%.2f\" text-anchor=\"end\">%s</text>\n",
                fr->x, y, fr->x + fr->w, y, fr->x - 6, y + 4, size_text(b, s, sizeof s));
    }
    for (int k = 0; k <= 4 && fr->events > 1; k++) {
        size_t e = (fr->events - 1) * (size_t)k / 4;
        fprintf(f, "<text x=\"%.2f\" y=\"%.0f\" text-anchor=\"middle\">%zu</text>\n", fx(fr, (double)e),
                fr->y + fr->h + 16, e);
    }
    fprintf(f, "<text x=\"%.0f\" y=\"%.0f\" text-anchor=\"middle\">event</text>\n", fr->x + fr->w / 2,
            fr->y + fr->h + 32);
}

/* The first event of bucket b of n over `events` events. */
static size_t bucket_event(size_t b, size_t n, size_t events)
{
    return (size_t)(((unsigned __int128)b * events + n - 1) / n);
}

static void polyline(FILE *f, const frame_t *fr, const replay_series_t *s, const replay_point_t *p,
                     const char *cls, const char *label, const char *colour)
{
    fprintf(f, "<polyline class=\"%s\" data-conf=\"", cls);
    text(f, label);
    fprintf(f, "\" fill=\"none\" stroke=\"%s\" stroke-width=\"1.5\"%s points=\"", colour,
            strcmp(cls, "live") ? "" : " stroke-dasharray=\"4 2\"");
    for (size_t b = 0; b < s->n; b++) {
        if (!p[b].used)
            continue;
        double x = fx(fr, (double)bucket_event(b, s->n, fr->events));
        uint64_t first = p[b].lo_first ? p[b].lo : p[b].hi, second = p[b].lo_first ? p[b].hi : p[b].lo;
        fprintf(f, "%.2f,%.2f ", x, fy(fr, first));
        if (second != first)
            fprintf(f, "%.2f,%.2f ", x, fy(fr, second));
        if (p[b].last != second)
            fprintf(f, "%.2f,%.2f ", x, fy(fr, p[b].last));
    }
    fputs("\"/>\n", f);
}

static uint64_t series_peak(const replay_series_t *s, const replay_point_t *p)
{
    uint64_t m = 0;
    for (size_t b = 0; b < s->n; b++)
        if (p[b].used && p[b].hi > m)
            m = p[b].hi;
    return m;
}

static void legend(FILE *f, const frame_t *fr, const svg_line_t *l, int k, int y)
{
    char a[32], b[32];
    fprintf(f, "<line x1=\"%.0f\" y1=\"%d\" x2=\"%.0f\" y2=\"%d\" stroke=\"%s\" stroke-width=\"3\"/>"
               "<text x=\"%.0f\" y=\"%d\">",
            fr->x, y - 4, fr->x + 24, y - 4, colours[k % 8], fr->x + 30, y);
    text(f, l->label);
    fprintf(f, ": reserved (solid) peak %s, live (dashed) peak %s",
            size_text(series_peak(l->series, l->series->reserved), a, sizeof a),
            size_text(series_peak(l->series, l->series->live), b, sizeof b));
    if (l->oom_event >= 0)
        fprintf(f, "; out of memory at event %lld", l->oom_row);
    fputs("</text>\n", f);
}

void svg_timeline(svg_doc_t *d, const char *title, size_t n_events, uint64_t device_bytes,
                  const svg_line_t *lines, int n_lines)
{
    FILE *f = d->body;
    frame_t fr = {PLOT_X, d->height + 40, PLOT_W, PLOT_H, n_events, device_bytes};
    for (int k = 0; k < n_lines; k++) {
        uint64_t r = series_peak(lines[k].series, lines[k].series->reserved);
        uint64_t l = series_peak(lines[k].series, lines[k].series->live);
        fr.max_bytes = r > fr.max_bytes ? r : fr.max_bytes;
        fr.max_bytes = l > fr.max_bytes ? l : fr.max_bytes;
    }
    uint64_t room = fr.max_bytes > UINT64_MAX / 2 ? UINT64_MAX / 2 : fr.max_bytes;   /* no wrap below */
    fr.max_bytes = nice_ceiling(room ? room + room / 20 : 1);
    fprintf(f, "<g class=\"timeline\">\n<text x=\"%d\" y=\"%d\" font-size=\"14\" font-weight=\"bold\">", MAP_X,
            d->height + 24);
    text(f, title);
    fputs("</text>\n", f);
    axes(f, &fr);
    if (device_bytes) {
        char s[32];
        double y = fy(&fr, device_bytes);
        fprintf(f, "<line class=\"device\" x1=\"%.0f\" y1=\"%.2f\" x2=\"%.0f\" y2=\"%.2f\" stroke=\"#000000\" "
                   "stroke-dasharray=\"8 4\"/><text x=\"%.0f\" y=\"%.2f\" text-anchor=\"end\">device less the "
                   "reserve: %s</text>\n",
                fr.x, y, fr.x + fr.w, y, fr.x + fr.w - 4, y - 4, size_text(device_bytes, s, sizeof s));
    }
    for (int k = 0; k < n_lines; k++) {
        const char *colour = colours[lines[k].colour % 8];
        polyline(f, &fr, lines[k].series, lines[k].series->reserved, "reserved", lines[k].label, colour);
        polyline(f, &fr, lines[k].series, lines[k].series->live, "live", lines[k].label, colour);
        if (lines[k].oom_event >= 0) {
            double x = fx(&fr, (double)lines[k].oom_event);
            fprintf(f, "<line class=\"oom\" data-conf=\"");
            text(f, lines[k].label);
            fprintf(f, "\" data-event=\"%lld\" data-row=\"%lld\" x1=\"%.2f\" y1=\"%.0f\" x2=\"%.2f\" "
                       "y2=\"%.0f\" stroke=\"%s\" stroke-width=\"2\" stroke-dasharray=\"2 2\"/>"
                       "<text x=\"%.2f\" y=\"%.0f\" fill=\"%s\">OOM</text>\n",
                    lines[k].oom_event, lines[k].oom_row, x, fr.y, x, fr.y + fr.h, colour, x + 3,
                    fr.y + 14 + 13.0 * (k % 4), colour);
        }
    }
    int y = (int)(fr.y + fr.h) + 56;
    for (int k = 0; k < n_lines; k++, y += 18)
        legend(f, &fr, &lines[k], k, y);
    fputs("</g>\n", f);
    d->height = y + 10;
}

/* ---- the segment map -------------------------------------------------- */

static const char *const state_names[] = {"active_allocated", "active_pending_free", "inactive"};
static const char *const state_fill[] = {"#1f77b4", "#ff7f0e", "#ffffff"};

static void segment_bar(FILE *f, const svg_segmap_t *m, const svg_segment_t *s, double x, double y, double bpp)
{
    char a[32], b[32];
    fprintf(f, "<g><title>segment at 0x%" PRIx64 ": %s, %s pool, stream %lld</title>"
               "<rect class=\"segment\" data-size=\"%" PRIu64 "\" x=\"%.3f\" y=\"%.0f\" width=\"%.3f\" "
               "height=\"%d\" fill=\"#eeeeee\" stroke=\"#555555\" stroke-width=\"0.5\"/>\n",
            s->address, size_text(s->size, a, sizeof a), s->large ? "large" : "small", s->stream, s->size, x, y,
            (double)s->size / bpp, BAR_H);
    for (size_t j = 0; j < s->n_blocks; j++) {
        const svg_block_t *k = &m->blocks[s->first_block + j];
        fprintf(f, "<rect class=\"block\" data-state=\"%s\" data-size=\"%" PRIu64 "\" x=\"%.3f\" y=\"%.0f\" "
                   "width=\"%.3f\" height=\"%d\" fill=\"%s\"%s><title>%s, %s</title></rect>\n",
                state_names[k->state], k->size, x + (double)k->offset / bpp, y + 2, (double)k->size / bpp,
                BAR_H - 4, state_fill[k->state], k->state == SVG_INACTIVE ? " stroke=\"#999999\" stroke-width=\"0.5\"" : "",
                size_text(k->size, b, sizeof b), state_names[k->state]);
    }
    fputs("</g>\n", f);
}

static void map_key(FILE *f, int y)
{
    static const char *const words[] = {"allocated", "freed, awaiting its stream", "free (a hole)"};
    for (int k = 0; k < 3; k++)
        fprintf(f, "<rect x=\"%d\" y=\"%d\" width=\"14\" height=\"10\" fill=\"%s\" stroke=\"#999999\"/>"
                   "<text x=\"%d\" y=\"%d\">%s</text>\n",
                MAP_X + 230 * k, y - 9, state_fill[k], MAP_X + 230 * k + 20, y, words[k]);
}

/* Segments left to right in rows MAP_W wide, all at one scale: the largest
 * segment fills a row, smaller ones share rows. */
void svg_segments(svg_doc_t *d, const char *title, const svg_segmap_t *m)
{
    FILE *f = d->body;
    uint64_t largest = 1;
    for (size_t i = 0; i < m->n_segs; i++)
        largest = m->segs[i].size > largest ? m->segs[i].size : largest;
    double bpp = (double)largest / MAP_W;
    fprintf(f, "<g class=\"segmap\" data-bytes-per-px=\"%.6f\">\n<text x=\"%d\" y=\"%d\" font-size=\"14\" "
               "font-weight=\"bold\">", bpp, MAP_X, d->height + 24);
    text(f, title);
    fputs("</text>\n", f);
    uint64_t held = 0, used[3] = {0, 0, 0}, hole = 0;
    for (size_t i = 0; i < m->n_segs; i++)
        held += m->segs[i].size;
    for (size_t j = 0; j < m->n_blocks; j++) {
        used[m->blocks[j].state] += m->blocks[j].size;
        if (m->blocks[j].state == SVG_INACTIVE && m->blocks[j].size > hole)
            hole = m->blocks[j].size;
    }
    char a[32], b[32], c[32], e[32];
    fprintf(f, "<text x=\"%d\" y=\"%d\">%zu segments, %s reserved: %s allocated, %s free (largest free block "
               "%s)</text>\n", MAP_X, d->height + 42, m->n_segs, size_text(held, a, sizeof a),
            size_text(used[SVG_ALLOCATED] + used[SVG_PENDING_FREE], b, sizeof b), size_text(used[SVG_INACTIVE], c, sizeof c),
            size_text(hole, e, sizeof e));
    map_key(f, d->height + 62);
    double x = MAP_X, y = d->height + 74;
    for (size_t i = 0; i < m->n_segs; i++) {
        double w = (double)m->segs[i].size / bpp;
        if (x > MAP_X && x + w > MAP_X + MAP_W) {
            x = MAP_X;
            y += ROW_H;
        }
        segment_bar(f, m, &m->segs[i], x, y, bpp);
        x += w + GAP;
    }
    if (!m->n_segs)
        fprintf(f, "<text x=\"%d\" y=\"%.0f\">no segments</text>\n", MAP_X, y + 12);
    fputs("</g>\n", f);
    d->height = (int)y + ROW_H + 10;
}
