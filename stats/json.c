/* json.c - the snapshot as JSON with the keys of torch.cuda.memory_snapshot(),
 * so that tools written for PyTorch's snapshots read cca's. Addresses and
 * streams are integers, as PyTorch writes them; cca records no stack
 * frames itself (frames: []): a block or event with a context
 * (cca_history_set_context) has "context", which the caller that set the
 * context function turns into frames (python/cca/snapshots.py); no segment
 * belongs to a graph pool (segment_pool_id: [0, 0]); is_expandable tells
 * expandable segments. */
#include <inttypes.h>
#include <stdlib.h>
#include "stats_internal.h"

static void json_string(cca_emit_t *e, const char *key, const char *value)
{
    _cca_emit(e, ", \"%s\": \"", key);                 /* tag names are 1..255 bytes without control characters */
    for (const char *c = value; *c; c++) _cca_emit(e, *c == '"' || *c == '\\' ? "\\%c" : "%c", *c);
    _cca_emit(e, "\"");
}

static void json_block(cca_emit_t *e, const cca_block_info_t *b, bool last)
{
    _cca_emit(e, "        {\"address\": %" PRIuPTR ", \"size\": %zu, \"requested_size\": %zu, \"state\": \"%s\","
                 " \"frames\": []",
              b->address, b->size, b->requested_size, cca_snapshot_state_string(b->state));
    const char *tag = cca_tag_name(b->tag);
    if (tag) json_string(e, "tag", tag);
    if (b->context) _cca_emit(e, ", \"context\": %" PRIu64, b->context);
    _cca_emit(e, "}%s\n", last ? "" : ",");
}

static void json_segment(cca_emit_t *e, const cca_segment_info_t *s, const cca_block_info_t *blocks, bool last)
{
    _cca_emit(e, "    {\"device\": %d, \"address\": %" PRIuPTR ", \"total_size\": %zu, \"allocated_size\": %zu,"
                 " \"active_size\": %zu, \"requested_size\": %zu, \"stream\": %" PRIuPTR ","
                 " \"segment_type\": \"%s\", \"segment_pool_id\": [0, 0], \"is_expandable\": %s,"
                 " \"frames\": [], \"blocks\": [\n",
              s->device, s->address, s->total_size, s->allocated_size, s->active_size, s->requested_size,
              (uintptr_t)s->stream, s->pool == CCA_POOL_SMALL ? "small" : "large", s->is_expandable ? "true" : "false");
    for (size_t j = 0; j < s->n_blocks; j++) json_block(e, &blocks[j], j + 1 == s->n_blocks);
    _cca_emit(e, "    ]}%s\n", last ? "" : ",");
}

static void json_event(cca_emit_t *e, const cca_history_entry_t *h, bool last)
{
    _cca_emit(e, "    {\"action\": \"%s\", \"addr\": %" PRIuPTR ", \"size\": %zu, \"stream\": %" PRIuPTR
                 ", \"time_us\": %" PRIu64 ", \"frames\": []",
              cca_history_action_string(h->action), h->addr, h->size, (uintptr_t)h->stream, h->time_us);
    if (h->action == CCA_HISTORY_OOM) _cca_emit(e, ", \"device_free\": %zu", h->device_free);
    const char *tag = cca_tag_name(h->tag);
    if (tag) json_string(e, "tag", tag);
    if (h->context) _cca_emit(e, ", \"context\": %" PRIu64, h->context);
    _cca_emit(e, "}%s\n", last ? "" : ",");
}

static cca_status_t json_write(cca_allocator_t *a, cca_write_fn write, void *arg, bool with_history, const char *what)
{
    if (!a || !write) return _cca_errors_fail(CCA_ERROR_INVALID_ARGUMENT, "%s: %s is NULL", what, a ? "write" : "allocator");
    cca_snap_t s;
    cca_status_t st = _cca_snapshot_take(a, &s, with_history);
    if (st != CCA_OK) return st;
    cca_emit_t *e = malloc(sizeof *e);
    if (!e) {
        _cca_snapshot_free(&s);
        return _cca_errors_fail(CCA_ERROR_OUT_OF_MEMORY, "%s: out of host memory", what);
    }
    _cca_emit_init(e, write, arg);
    _cca_emit(e, "{\"segments\": [\n");
    const cca_block_info_t *b = s.blocks;
    for (size_t i = 0; i < s.n_segs; b += s.segs[i++].n_blocks) json_segment(e, &s.segs[i], b, i + 1 == s.n_segs);
    _cca_emit(e, "]");
    if (with_history) {
        _cca_emit(e, ", \"trace_dropped\": %" PRIu64 ", \"trace\": [\n", s.hist_dropped);
        for (size_t i = 0; i < s.n_hist; i++) json_event(e, &s.hist[i], i + 1 == s.n_hist);
        _cca_emit(e, "]");
    }
    _cca_emit(e, "}\n");
    bool ok = _cca_emit_finish(e);
    free(e);
    _cca_snapshot_free(&s);
    return ok ? CCA_OK : _cca_errors_fail(CCA_ERROR_INVALID_ARGUMENT, "%s: the write callback failed", what);
}

cca_status_t cca_snapshot_json(cca_allocator_t *a, cca_write_fn write, void *arg)
{
    return json_write(a, write, arg, false, "cca_snapshot_json");
}

cca_status_t cca_snapshot_json_history(cca_allocator_t *a, cca_write_fn write, void *arg)
{
    return json_write(a, write, arg, true, "cca_snapshot_json_history");
}
