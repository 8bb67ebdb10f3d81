/* test_accounting.c - fragmentation figures, the snapshot walk, the JSON
 * snapshot (parsed with json-c and compared with the stats) and the memory
 * summary text, on exact layouts of the simulated device. */
#include <json-c/json.h>
#include "acct_util.h"

static void setup(void) { cca_sim_reset(); }
TestSuite(accounting, .init = setup);

typedef struct layout { char *p1, *p2, *p3, *big; } layout_t;

/* Small segment: [1024 alloc][512 free][3072 alloc][2 MiB - 4608 free];
 * large segment: [3 MiB alloc][17 MiB free]. */
static layout_t make_layout(cca_allocator_t *a)
{
    layout_t l;
    l.p1 = alloc_ok(a, 1000, NULL);
    l.p2 = alloc_ok(a, 512, NULL);
    l.p3 = alloc_ok(a, 3000, NULL);
    l.big = alloc_ok(a, 3 * MiB, NULL);
    free_ok(a, l.p2);
    return l;
}

#define SMALL_TAIL (2 * MiB - 4608)

Test(accounting, fragmentation_figures_exact)
{
    cca_allocator_t *a = make_alloc("");
    cca_frag_t f;
    cr_assert_eq(cca_get_fragmentation(a, &f), CCA_OK);
    cr_assert_eq(f.reserved, 0);
    cr_assert_eq(f.external_fragmentation, 0.0, "nothing free: 0");
    cr_assert_eq(f.utilization, 0.0);
    layout_t l = make_layout(a);
    cr_assert_eq(cca_get_fragmentation(a, &f), CCA_OK);
    cr_assert_eq(f.reserved, 22 * MiB);
    cr_assert_eq(f.segments, 2);
    cr_assert_eq(f.allocated, 1024 + 3072 + 3 * MiB);
    cr_assert_eq(f.requested, 1000 + 3000 + 3 * MiB);
    cr_assert_eq(f.internal_waste, 96);
    cr_assert_eq(f.active, f.allocated);
    cr_assert_eq(f.free_cached, 512 + SMALL_TAIL + 17 * MiB);
    cr_assert_eq(f.free_blocks, 3);
    cr_assert_eq(f.largest_free, 17 * MiB);
    cr_assert_eq(f.inactive_split, f.free_cached, "every free block is inside a split segment");
    cr_assert_float_eq(f.external_fragmentation, 1.0 - (double)(17 * MiB) / (double)f.free_cached, 1e-12);
    cr_assert_float_eq(f.utilization, (double)f.allocated / (double)(22 * MiB), 1e-12);
    cr_assert_eq(f.classes[9].free_blocks, 1);
    cr_assert_eq(f.classes[9].free_bytes, 512);
    cr_assert_eq(f.classes[10].allocated_blocks, 1);
    cr_assert_eq(f.classes[11].allocated_bytes, 3072);
    cr_assert_eq(f.classes[20].free_bytes, SMALL_TAIL);
    cr_assert_eq(f.classes[21].allocated_bytes, 3 * MiB);
    cr_assert_eq(f.classes[24].free_blocks, 1);
    cr_assert_eq(f.classes[24].free_bytes, 17 * MiB);
    size_t blocks = 0;
    for (int k = 0; k < CCA_SIZE_CLASSES; k++)
        blocks += f.classes[k].free_blocks + f.classes[k].allocated_blocks + f.classes[k].pending_blocks;
    cr_assert_eq(blocks, 6);
    cca_stats_t s = stats_of(a);
    cr_assert_eq((int64_t)f.inactive_split, s.inactive_split_bytes[CCA_POOL_ALL].current);
    free_ok(a, l.p1);
    free_ok(a, l.p3);
    free_ok(a, l.big);
    cr_assert_eq(cca_get_fragmentation(a, &f), CCA_OK);
    cr_assert_eq(f.free_cached, 22 * MiB);
    cr_assert_eq(f.largest_free, 20 * MiB);
    cr_assert_eq(f.inactive_split, 0, "whole free segments are not split");
    finish(a);
}

typedef struct walk { size_t segs, blocks, states[3], bytes; uintptr_t last_seg, next_addr; int stop_after; } walk_t;

static int on_seg(const cca_segment_info_t *s, void *arg)
{
    walk_t *w = arg;
    cr_assert_gt(s->address, w->last_seg, "segments come by address");
    w->last_seg = s->address;
    w->next_addr = s->address;
    w->bytes += s->total_size;
    return ++w->segs == (size_t)w->stop_after;
}

static int on_block(const cca_block_info_t *b, void *arg)
{
    walk_t *w = arg;
    cr_assert_eq(b->address, w->next_addr, "blocks come by address and tile the segment");
    w->next_addr += b->size;
    w->states[b->state]++;
    w->blocks++;
    return 0;
}

Test(accounting, snapshot_walk_states_and_order)
{
    cca_allocator_t *a = make_alloc("");
    layout_t l = make_layout(a);
    cudaStream_t s2;
    cr_assert_eq(cudaStreamCreate(&s2), cudaSuccess);
    cca_sim_stream_hold(s2);
    cr_assert_eq(cca_record_stream(a, l.p3, s2), CCA_OK);
    free_ok(a, l.p3);
    walk_t w = { 0 };
    cr_assert_eq(cca_snapshot_walk(a, on_seg, on_block, &w), CCA_OK);
    cr_assert_eq(w.segs, 2);
    cr_assert_eq(w.blocks, 6);
    cr_assert_eq(w.bytes, 22 * MiB);
    cr_assert_eq(w.states[CCA_STATE_ACTIVE_ALLOCATED], 2);
    cr_assert_eq(w.states[CCA_STATE_ACTIVE_PENDING_FREE], 1);
    cr_assert_eq(w.states[CCA_STATE_INACTIVE], 3);
    cca_frag_t f;
    cr_assert_eq(cca_get_fragmentation(a, &f), CCA_OK);
    cr_assert_eq(f.classes[11].pending_blocks, 1);
    cr_assert_eq(f.active - f.allocated, 3072, "pending bytes are active, not allocated");
    walk_t stop = { .stop_after = 1 };
    cr_assert_eq(cca_snapshot_walk(a, on_seg, NULL, &stop), CCA_OK);
    cr_assert_eq(stop.segs, 1, "a nonzero return stops the walk");
    cr_assert_eq(cca_snapshot_walk(a, NULL, NULL, NULL), CCA_OK);
    cca_sim_stream_release(s2);
    free_ok(a, l.p1);
    free_ok(a, l.big);
    cr_assert_eq(cca_empty_cache(a), CCA_OK);
    cr_assert_eq(cudaStreamDestroy(s2), cudaSuccess);
    finish(a);
}

static json_object *get(json_object *o, const char *key)
{
    json_object *v = NULL;
    cr_assert(json_object_object_get_ex(o, key, &v), "key \"%s\" missing", key);
    return v;
}

static int64_t num(json_object *o, const char *key) { return json_object_get_int64(get(o, key)); }

/* Sums of the parsed snapshot, checked against the stats. */
static void check_json_against_stats(const char *text, const cca_stats_t *st, cudaStream_t stream)
{
    enum json_tokener_error err;
    json_object *root = json_tokener_parse_verbose(text, &err);
    cr_assert_not_null(root, "JSON does not parse: %s\n%s", json_tokener_error_desc(err), text);
    json_object *segs = get(root, "segments");
    size_t n = json_object_array_length(segs);
    cr_assert_eq((int64_t)n, st->segment[CCA_POOL_ALL].current);
    int64_t total = 0, alloc = 0, active = 0, req = 0, small = 0;
    for (size_t i = 0; i < n; i++) {
        json_object *s = json_object_array_get_idx(segs, i);
        cr_assert_eq(num(s, "device"), 0);
        cr_assert_eq(num(s, "stream"), (int64_t)(uintptr_t)stream);
        total += num(s, "total_size");
        alloc += num(s, "allocated_size");
        active += num(s, "active_size");
        req += num(s, "requested_size");
        const char *type = json_object_get_string(get(s, "segment_type"));
        cr_assert(!strcmp(type, "small") || !strcmp(type, "large"), "segment_type %s", type);
        if (!strcmp(type, "small")) small += num(s, "total_size");
        json_object *blocks = get(s, "blocks");
        int64_t addr = num(s, "address"), sum = 0, seg_alloc = 0;
        for (size_t j = 0; j < json_object_array_length(blocks); j++) {
            json_object *b = json_object_array_get_idx(blocks, j);
            cr_assert_eq(num(b, "address"), addr + sum);
            const char *state = json_object_get_string(get(b, "state"));
            if (!strcmp(state, "active_allocated")) seg_alloc += num(b, "size");
            else cr_assert(!strcmp(state, "inactive") || !strcmp(state, "active_pending_free"), "state %s", state);
            cr_assert_leq(num(b, "requested_size"), num(b, "size"));
            sum += num(b, "size");
        }
        cr_assert_eq(sum, num(s, "total_size"));
        cr_assert_eq(seg_alloc, num(s, "allocated_size"));
    }
    cr_assert_eq(total, st->reserved_bytes[CCA_POOL_ALL].current);
    cr_assert_eq(small, st->reserved_bytes[CCA_POOL_SMALL].current);
    cr_assert_eq(alloc, st->allocated_bytes[CCA_POOL_ALL].current);
    cr_assert_eq(active, st->active_bytes[CCA_POOL_ALL].current);
    cr_assert_eq(req, st->requested_bytes[CCA_POOL_ALL].current);
    json_object_put(root);
}

Test(accounting, snapshot_json_parses_and_matches_stats)
{
    cca_allocator_t *a = make_alloc("");
    sink_t k = { 0 };
    cr_assert_eq(cca_snapshot_json(a, sink_write, &k), CCA_OK);
    cca_stats_t st = stats_of(a);
    check_json_against_stats(k.s, &st, NULL);
    cr_assert_eq(cca_snapshot_json(a, failing_write, NULL), CCA_ERROR_INVALID_ARGUMENT);
    layout_t l = make_layout(a);
    void *more[200];
    for (int i = 0; i < 200; i++) more[i] = alloc_ok(a, (size_t)(i % 7 + 1) * 40000, NULL);
    for (int i = 0; i < 200; i += 3) free_ok(a, more[i]);
    k.n = 0;
    cr_assert_eq(cca_snapshot_json(a, sink_write, &k), CCA_OK);
    cr_assert_gt(k.n, 4096, "more than one emitter buffer");
    st = stats_of(a);
    check_json_against_stats(k.s, &st, NULL);
    ASSERT_HAS(k.s, "\"state\": \"inactive\"");
    cr_assert_eq(cca_snapshot_json(a, failing_write, NULL), CCA_ERROR_INVALID_ARGUMENT);
    for (int i = 0; i < 200; i++) if (i % 3) free_ok(a, more[i]);
    free_ok(a, l.p1);
    free_ok(a, l.p3);
    free_ok(a, l.big);
    free(k.s);
    finish(a);
}

Test(accounting, memory_summary_contents)
{
    cca_allocator_t *a = make_alloc("memory_limit_mb:100");
    layout_t l = make_layout(a);
    sink_t k = { 0 };
    cr_assert_eq(cca_memory_summary(a, sink_write, &k), CCA_OK);
    ASSERT_HAS(k.s, "cca memory summary, device 0, cap 100.00 MiB");
    ASSERT_HAS(k.s, "OOMs: 0    cudaMalloc retries: 0    cudaMalloc: 2    cudaFree: 0");
    ASSERT_HAS(k.s, "| Allocated memory      |   3.00 MiB |   3.00 MiB |   3.00 MiB |      512 B |");
    ASSERT_HAS(k.s, "|       from small pool |   4.00 KiB |   4.50 KiB |   4.50 KiB |      512 B |");
    ASSERT_HAS(k.s, "| GPU reserved memory   |  22.00 MiB |  22.00 MiB |  22.00 MiB |        0 B |");
    ASSERT_HAS(k.s, "| GPU reserved segments |          2 |          2 |          2 |          0 |");
    ASSERT_HAS(k.s, "| Largest free block    | 17.00 MiB ");
    ASSERT_HAS(k.s, "| Internal waste        | 96 B ");
    ASSERT_HAS(k.s, "| [16 MiB, 32 MiB)    |    1  17.00 MiB |    0        0 B |    0        0 B |");
    ASSERT_HAS(k.s, "| [512 B, 1 KiB)      |    1      512 B |    0        0 B |    0        0 B |");
    cr_assert_null(strstr(k.s, "last OOM"));
    void *p = NULL;
    cr_assert_eq(cca_malloc(a, &p, 90 * MiB, NULL), CCA_ERROR_OUT_OF_MEMORY);
    k.n = 0;
    cr_assert_eq(cca_memory_summary(a, sink_write, &k), CCA_OK);
    ASSERT_HAS(k.s, "OOMs: 1");
    ASSERT_HAS(k.s, "last OOM: cap, 90.00 MiB requested");
    for (char *line = k.s; *line; line = strchr(line, '\n') + 1)
        cr_assert_eq(strchr(line, '\n') - line, 77, "every line is 77 wide: %.*s", (int)(strchr(line, '\n') - line), line);
    cr_assert_eq(cca_memory_summary(a, failing_write, NULL), CCA_ERROR_INVALID_ARGUMENT);
    free_ok(a, l.p1);
    free_ok(a, l.p3);
    free_ok(a, l.big);
    free(k.s);
    finish(a);
}

Test(accounting, bad_input_leaves_allocator_usable)
{
    cca_allocator_t *a = make_alloc("");
    cca_frag_t f;
    cr_assert_eq(cca_get_fragmentation(NULL, &f), CCA_ERROR_INVALID_ARGUMENT);
    cr_assert_eq(cca_get_fragmentation(a, NULL), CCA_ERROR_INVALID_ARGUMENT);
    cr_assert_eq(cca_snapshot_walk(NULL, NULL, NULL, NULL), CCA_ERROR_INVALID_ARGUMENT);
    cr_assert_eq(cca_snapshot_json(a, NULL, NULL), CCA_ERROR_INVALID_ARGUMENT);
    cr_assert_eq(cca_snapshot_json(NULL, sink_write, NULL), CCA_ERROR_INVALID_ARGUMENT);
    cr_assert_eq(cca_memory_summary(a, NULL, NULL), CCA_ERROR_INVALID_ARGUMENT);
    cr_assert_eq(cca_memory_summary(NULL, sink_write, NULL), CCA_ERROR_INVALID_ARGUMENT);
    cr_assert_str_eq(cca_snapshot_state_string(CCA_STATE_ACTIVE_PENDING_FREE), "active_pending_free");
    cr_assert_str_eq(cca_snapshot_state_string((cca_snapshot_state_t)42), "unknown");
    free_ok(a, alloc_ok(a, 100, NULL));
    finish(a);
}
