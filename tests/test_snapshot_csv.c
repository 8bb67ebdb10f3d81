/* test_snapshot_csv.c - PyTorch memory snapshots to trace CSVs
 * (tools/snapshot_csv.c) and the restricted unpickler under them
 * (tools/pickle.c). The pickles come from the system python3's own pickle
 * module (plain dicts at protocols 0, 2, 4 and 5) or are built by hand;
 * every CSV is compared whole, with figures worked out by hand. Also: code
 * opcodes refused by name, and every truncation or corruption of a valid
 * pickle failing cleanly (run it under ASan/UBSan too). */
#define _POSIX_C_SOURCE 200809L             /* mkstemp, popen */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include "crit.h"
#include "pickle.h"
#include "snapshot_csv.h"

#define HEAD(d) "#cca-trace 1 device=" #d " source=torch-snapshot\nThread,Time,Action,Pointer,Size,Stream\n"

/* Helpers for the Python side: torch 2.x's field order and kinds. */
static const char preamble[] =
    "import os, pickle, sys\n"
    "FRAMES = [{'filename': 'train.py', 'line': 12, 'name': 'forward'}]\n"
    "def ev(action, addr=0, size=0, stream=0, t=None):\n"
    "    e = {'action': action, ('device_free' if action == 'oom' else 'addr'): addr, 'size': size,\n"
    "         'stream': stream}\n"
    "    if t is not None: e['time_us'] = t\n"
    "    e['frames'] = FRAMES\n"
    "    return e\n"
    "def blk(size, state, addr=None, req=None):\n"
    "    b = {} if addr is None else {'address': addr}\n"
    "    b['size'] = size\n"
    "    if req is not None: b['requested_size'] = req\n"
    "    b['state'] = state\n"
    "    b['frames'] = []\n"
    "    return b\n"
    "def seg(device, address, blocks, stream=0):\n"
    "    return {'device': device, 'address': address, 'total_size': sum(b['size'] for b in blocks),\n"
    "            'allocated_size': 0, 'active_size': 0, 'requested_size': 0, 'stream': stream,\n"
    "            'segment_type': 'large', 'segment_pool_id': (0, 0), 'is_expandable': False,\n"
    "            'frames': [], 'blocks': blocks}\n"
    "def snap(traces, segments=()):\n"
    "    return {'segments': list(segments), 'device_traces': traces}\n";

/* One python3 run for many pickles (its start-up is most of this suite's
 * time): the script body defines `obj` (or a list `objs`), and each object
 * is pickled at each protocol of the space-separated list protos, in that
 * order, each prefixed by its 8-byte length. The test skips where python3
 * is missing. */
typedef struct blob { unsigned char *p; size_t len; } blob_t;

static blob_t *py_pickles(const char *body, const char *protos, size_t *count)
{
    char script[] = "/tmp/cca_snapshot_csv.XXXXXX";
    int fd = mkstemp(script);
    cr_assert_geq(fd, 0);
    FILE *f = fdopen(fd, "w");
    cr_assert_not_null(f);
    fprintf(f, "%s%s\n"
               "out = sys.stdout.buffer\n"
               "for o in (objs if 'objs' in dir() else [obj]):\n"
               "    for proto in sys.argv[1:]:\n"
               "        d = pickle.dumps(o, protocol=int(proto))\n"
               "        out.write(len(d).to_bytes(8, 'little') + d)\n",
            preamble, body);
    cr_assert_eq(fclose(f), 0);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "python3 %s %s", script, protos);
    FILE *p = popen(cmd, "r");
    cr_assert_not_null(p);
    size_t cap = 1 << 16, n = 0;
    unsigned char *all = malloc(cap);
    cr_assert_not_null(all);
    for (size_t got; (got = fread(all + n, 1, cap - n, p)) > 0;) {
        n += got;
        if (n == cap) {
            all = realloc(all, cap *= 2);
            cr_assert_not_null(all);
        }
    }
    int st = pclose(p);
    unlink(script);
    if (WIFEXITED(st) && WEXITSTATUS(st) == 127)
        cr_skip_test("python3 not found");
    cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "python3 failed on:\n%s", body);
    size_t k = 0, max = n / 8 + 1;
    blob_t *b = calloc(max, sizeof *b);
    cr_assert_not_null(b);
    for (size_t at = 0; at < n; k++) {
        cr_assert_leq(at + 8, n);
        uint64_t len = 0;
        for (int i = 7; i >= 0; i--)
            len = len << 8 | all[at + (size_t)i];
        at += 8;
        cr_assert_leq(len, n - at);
        b[k].p = malloc(len ? len : 1);         /* each on its own, so ASan bounds it */
        cr_assert_not_null(b[k].p);
        memcpy(b[k].p, all + at, len);
        b[k].len = len;
        at += len;
    }
    free(all);
    *count = k;
    return b;
}

static void blobs_free(blob_t *b, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(b[i].p);
    free(b);
}

/* The pickle of `obj` at protocol proto. */
static unsigned char *py_pickle(const char *body, int proto, size_t *len)
{
    char protos[8];
    snprintf(protos, sizeof protos, "%d", proto);
    size_t n;
    blob_t *b = py_pickles(body, protos, &n);
    cr_assert_eq(n, 1);
    unsigned char *p = b[0].p;
    *len = b[0].len;
    free(b);
    return p;
}

/* Converts and expects success: the CSVs (n of them). */
static snapshot_csv_t *convert(const void *buf, size_t len, size_t *n)
{
    snapshot_csv_t *csv = NULL;
    char err[512];
    int r = snapshot_csv_from_pickle(buf, len, &csv, n, err, sizeof err);
    cr_assert_eq(r, 0, "%s", err);
    return csv;
}

/* The one CSV of a single-device snapshot made from body at proto. */
static snapshot_csv_t *convert_py(const char *body, int proto, size_t *n)
{
    size_t len;
    unsigned char *buf = py_pickle(body, proto, &len);
    snapshot_csv_t *csv = convert(buf, len, n);
    free(buf);
    return csv;
}

static void expect_csv(const snapshot_csv_t *c, const char *want, size_t events, size_t pre)
{
    cr_assert_str_eq(c->csv, want, "got:\n%s\nwant:\n%s", c->csv, want);
    cr_assert_eq(c->len, strlen(want));
    cr_assert_eq(c->events, events);
    cr_assert_eq(c->preexisting, pre);
}

/* The error a conversion fails with (it must fail, leaving nothing). */
static void expect_error(const void *buf, size_t len, char *err, size_t errlen)
{
    snapshot_csv_t *csv = (snapshot_csv_t *)buf;     /* anything not NULL: must come back NULL */
    size_t n = 7;
    cr_assert_eq(snapshot_csv_from_pickle(buf, len, &csv, &n, err, errlen), -1);
    cr_assert_null(csv);
    cr_assert_eq(n, 0);
    cr_assert_gt(strlen(err), 0);
}

/* ---- conversion ---------------------------------------------------------- */

static const char pairs_body[] =
    "obj = snap([[ev('segment_alloc', 0x7f0000000000, 2097152, 0, 1000),\n"
    "             ev('alloc', 0x7f0000000000, 512, 0, 1002),\n"
    "             ev('alloc', 0x7f0000000200, 1000, 0, 1500),\n"
    "             ev('free_requested', 0x7f0000000000, 512, 0, 2000),\n"
    "             ev('free_completed', 0x7f0000000000, 512, 0, 2001),\n"
    "             ev('snapshot', 0, 0, 0, 2500),\n"
    "             ev('free_requested', 0x7f0000000200, 1000, 0, 3601000000 + 1000),\n"
    "             ev('free_completed', 0x7f0000000200, 1000, 0, 3601000000 + 1001)]])\n";

Test(snapshot, pairs_allocs_with_frees_at_every_protocol)
{
    static const char want[] = HEAD(0)
        "0,00:00:00.000002,allocate,0x7f0000000000,512,0\n"
        "0,00:00:00.000500,allocate,0x7f0000000200,1000,0\n"
        "0,00:00:00.001000,free,0x7f0000000000,512,0\n"
        "0,01:00:01.000000,free,0x7f0000000200,1000,0\n";
    size_t count;
    blob_t *b = py_pickles(pairs_body, "0 2 4 5", &count);
    cr_assert_eq(count, 4);
    for (size_t i = 0; i < count; i++) {
        size_t n;
        snapshot_csv_t *c = convert(b[i].p, b[i].len, &n);
        cr_assert_eq(n, 1, "pickle %zu", i);
        cr_assert_eq(c[0].device, 0);
        expect_csv(&c[0], want, 4, 0);
        cr_assert_eq(c[0].timed, 1);
        cr_assert_eq(c[0].streams, 1);
        cr_assert_eq(c[0].ooms, 0);
        snapshot_csv_free(c, n);
    }
    blobs_free(b, count);
}

Test(snapshot, renumbers_streams_in_first_seen_order)
{
    size_t n;
    snapshot_csv_t *c = convert_py(
        "obj = snap([[ev('alloc', 0x1000, 16, 0, 0), ev('alloc', 0x2000, 32, 94000000000000, 1),\n"
        "             ev('alloc', 0x3000, 48, 7, 2), ev('free_requested', 0x2000, 32, 94000000000000, 3),\n"
        "             ev('alloc', 0x4000, 64, 2, 4), ev('free_requested', 0x3000, 48, 7, 5),\n"
        "             ev('free_requested', 0x1000, 16, 0, 6)]])\n",
        4, &n);
    static const char want[] = HEAD(0)
        "0,00:00:00.000000,allocate,0x1000,16,0\n"
        "0,00:00:00.000001,allocate,0x2000,32,1\n"
        "0,00:00:00.000002,allocate,0x3000,48,2\n"
        "0,00:00:00.000003,free,0x2000,32,1\n"
        "0,00:00:00.000004,allocate,0x4000,64,3\n"
        "0,00:00:00.000005,free,0x3000,48,2\n"
        "0,00:00:00.000006,free,0x1000,16,0\n";
    cr_assert_eq(n, 1);
    expect_csv(&c[0], want, 7, 0);
    cr_assert_eq(c[0].streams, 4);
    snapshot_csv_free(c, n);
}

Test(snapshot, time_counts_entries_without_time_us)
{
    size_t n;
    /* torch before 2.1 records no time: one microsecond per entry, skipped ones included */
    snapshot_csv_t *c = convert_py(
        "obj = snap([[ev('segment_alloc', 0x1000, 4096), ev('alloc', 0x1000, 100), ev('alloc', 0x1200, 200),\n"
        "             ev('free_requested', 0x1000, 100), ev('free_completed', 0x1000, 100),\n"
        "             ev('free_requested', 0x1200, 200)]])\n"
        "for e in obj['device_traces'][0]: del e['frames']\n",
        2, &n);
    static const char want[] = HEAD(0)
        "0,00:00:00.000001,allocate,0x1000,100,0\n"
        "0,00:00:00.000002,allocate,0x1200,200,0\n"
        "0,00:00:00.000003,free,0x1000,100,0\n"
        "0,00:00:00.000005,free,0x1200,200,0\n";
    cr_assert_eq(n, 1);
    expect_csv(&c[0], want, 4, 0);
    cr_assert_eq(c[0].timed, 0);
    snapshot_csv_free(c, n);
}

Test(snapshot, time_never_steps_back)
{
    size_t n;
    snapshot_csv_t *c = convert_py(
        "obj = snap([[ev('alloc', 0x1000, 8, 0, 5000), ev('alloc', 0x2000, 8, 0, 4000),\n"
        "             ev('alloc', 0x3000, 8, 0, 7000), ev('alloc', 0x4000, 8, 0, 6500),\n"
        "             ev('alloc', 0x5000, 8, 0, 12345678901)]])\n",
        5, &n);
    static const char want[] = HEAD(0)
        "0,00:00:00.000000,allocate,0x1000,8,0\n"
        "0,00:00:00.000000,allocate,0x2000,8,0\n"
        "0,00:00:00.002000,allocate,0x3000,8,0\n"
        "0,00:00:00.002000,allocate,0x4000,8,0\n"
        "0,03:25:45.673901,allocate,0x5000,8,0\n";
    cr_assert_eq(n, 1);
    expect_csv(&c[0], want, 5, 0);
    snapshot_csv_free(c, n);
}

Test(snapshot, preexisting_from_frees_and_segments)
{
    size_t n;
    /* (a) 0x20000 and 0x8000 are freed without an allocation; (b) segment
     * blocks still active that the trace never names: 0x10000 (requested
     * 1000 of 1024) and 0x10600 (pending free, requested 100). Not
     * preexisting: 0x10400 (inactive), 0x10800 (live in the trace), 0x10a00
     * (the trace allocated and freed it: its pending free), 0x20000 (the
     * segment's view of (a)). Rows at time 0 in address order, the
     * segment's stream numbered where it first appears. */
    snapshot_csv_t *c = convert_py(
        "obj = snap([[ev('alloc', 0x10800, 512, 0, 100), ev('free_requested', 0x20000, 4096, 5, 200),\n"
        "             ev('alloc', 0x10a00, 256, 0, 300), ev('free_requested', 0x10a00, 256, 0, 400),\n"
        "             ev('free_requested', 0x8000, 64, 0, 500)]],\n"
        "           [seg(0, 0x10000, [blk(1024, 'active_allocated', 0x10000, 1000), blk(512, 'inactive', 0x10400, 512),\n"
        "                             blk(512, 'active_pending_free', 0x10600, 100),\n"
        "                             blk(512, 'active_allocated', 0x10800, 512),\n"
        "                             blk(512, 'active_pending_free', 0x10a00, 256)], stream=77),\n"
        "            seg(0, 0x20000, [blk(4096, 'inactive', 0x20000, 4096)], stream=5)])\n",
        4, &n);
    static const char want[] = HEAD(0)
        "0,00:00:00.000000,allocate,0x8000,64,0\n"
        "0,00:00:00.000000,allocate,0x10000,1000,1\n"
        "0,00:00:00.000000,allocate,0x10600,100,1\n"
        "0,00:00:00.000000,allocate,0x20000,4096,2\n"
        "0,00:00:00.000000,allocate,0x10800,512,0\n"
        "0,00:00:00.000100,free,0x20000,4096,2\n"
        "0,00:00:00.000200,allocate,0x10a00,256,0\n"
        "0,00:00:00.000300,free,0x10a00,256,0\n"
        "0,00:00:00.000400,free,0x8000,64,0\n";
    cr_assert_eq(n, 1);
    expect_csv(&c[0], want, 9, 4);
    cr_assert_eq(c[0].streams, 3);
    snapshot_csv_free(c, n);
}

Test(snapshot, blocks_without_address_lie_back_to_back)
{
    size_t n;
    /* the layouts of torch 1.13/2.0: no block address, no requested_size
     * (then history[0].real_size, else size), no time_us */
    snapshot_csv_t *c = convert_py(
        "b = [{'size': 0x200, 'state': 'active_allocated'}, {'size': 0x400, 'state': 'inactive'},\n"
        "     {'size': 0x200, 'state': 'active_allocated', 'history': [{'addr': 0, 'real_size': 300}]},\n"
        "     {'size': 0x800, 'state': 'active_allocated'}]\n"
        "obj = {'segments': [{'device': 0, 'address': 0x100000, 'total_size': 0x1000, 'stream': 0,\n"
        "                     'segment_type': 'small', 'blocks': b}],\n"
        "       'device_traces': [[{'action': 'free_requested', 'addr': 0x100800, 'size': 2000, 'stream': 0}]]}\n",
        2, &n);
    static const char want[] = HEAD(0)
        "0,00:00:00.000000,allocate,0x100000,512,0\n"
        "0,00:00:00.000000,allocate,0x100600,300,0\n"
        "0,00:00:00.000000,allocate,0x100800,2000,0\n"
        "0,00:00:00.000000,free,0x100800,2000,0\n";
    cr_assert_eq(n, 1);
    expect_csv(&c[0], want, 4, 3);
    snapshot_csv_free(c, n);
}

Test(snapshot, oom_rows_are_allocate_failures)
{
    size_t n;
    snapshot_csv_t *c = convert_py(
        "obj = snap([[ev('alloc', 0x1000, 1 << 30, 0, 10), ev('oom', 123456, 8589934592, 0, 20),\n"
        "             ev('free_requested', 0x1000, 1 << 30, 0, 30)]])\n",
        4, &n);
    static const char want[] = HEAD(0)
        "0,00:00:00.000000,allocate,0x1000,1073741824,0\n"
        "0,00:00:00.000010,allocate failure,(nil),8589934592,0\n"
        "0,00:00:00.000020,free,0x1000,1073741824,0\n";
    cr_assert_eq(n, 1);
    expect_csv(&c[0], want, 3, 0);
    cr_assert_eq(c[0].ooms, 1);
    snapshot_csv_free(c, n);
}

Test(snapshot, one_csv_per_device)
{
    size_t n;
    /* device 1: a segment only; device 2: a trace only, its own stream
     * numbers; device 3: an empty trace and nothing else: no CSV; device 4: a
     * segment with nothing active */
    snapshot_csv_t *c = convert_py(
        "obj = snap([[ev('alloc', 0xa000, 10, 9, 1)], [], [ev('alloc', 0xb000, 20, 8, 5), ev('alloc', 0xc000, 30, 9, 6)], []],\n"
        "           [seg(4, 0xf000, [blk(512, 'inactive', 0xf000, 512)]),\n"
        "            seg(1, 0xd000, [blk(512, 'active_allocated', 0xd000, 40)], stream=3)])\n",
        4, &n);
    cr_assert_eq(n, 4);
    static const int devices[] = {0, 1, 2, 4};
    static const char *const want[] = {
        HEAD(0) "0,00:00:00.000000,allocate,0xa000,10,1\n",
        HEAD(1) "0,00:00:00.000000,allocate,0xd000,40,1\n",
        HEAD(2) "0,00:00:00.000000,allocate,0xb000,20,1\n0,00:00:00.000001,allocate,0xc000,30,2\n",
        HEAD(4),
    };
    static const size_t events[] = {1, 1, 2, 0}, pre[] = {0, 1, 0, 0};
    for (size_t i = 0; i < n; i++) {
        cr_assert_eq(c[i].device, devices[i]);
        expect_csv(&c[i], want[i], events[i], pre[i]);
    }
    snapshot_csv_free(c, n);
}

Test(snapshot, wrapped_trace_frees_the_block_an_alloc_lands_on)
{
    size_t n;
    /* an alloc at a live pointer: the free between was lost, so the old block
     * is freed first (its own size and stream); a second free is dropped */
    snapshot_csv_t *c = convert_py(
        "obj = snap([[ev('alloc', 0x1000, 100, 4, 0), ev('alloc', 0x1000, 200, 0, 1),\n"
        "             ev('free_requested', 0x1000, 200, 0, 2), ev('free_requested', 0x1000, 200, 0, 3)]])\n",
        4, &n);
    static const char want[] = HEAD(0)
        "0,00:00:00.000000,allocate,0x1000,100,1\n"
        "0,00:00:00.000001,free,0x1000,100,1\n"
        "0,00:00:00.000001,allocate,0x1000,200,0\n"
        "0,00:00:00.000002,free,0x1000,200,0\n";
    cr_assert_eq(n, 1);
    expect_csv(&c[0], want, 4, 0);
    snapshot_csv_free(c, n);
}

Test(snapshot, refuses_what_is_not_a_snapshot)
{
    static const char body[] =
        "objs = [[seg(0, 0, [])], {'segments': []}, {'device_traces': []}, snap({0: []}),\n"
        "        snap([[{'action': 'alloc', 'addr': '0x10', 'size': 1, 'stream': 0}]]),\n"
        "        snap([[ev('alloc', 16, -1)]]), snap([], [seg(0, 0, [blk(4, 'leased', 0)])]),\n"
        "        snap([[{'addr': 16, 'size': 1, 'stream': 0}]]), snap([[7]])]\n";
    static const char *const msgs[] = {
        "not a PyTorch memory snapshot: the pickle holds a list, not a dict",
        "not a PyTorch memory snapshot: no device_traces",
        "not a PyTorch memory snapshot: no segments",
        "not a PyTorch memory snapshot: device_traces is a dict, not a list",
        "not a PyTorch memory snapshot: device_traces[0][0] 'addr' is a str, not an int",
        "not a PyTorch memory snapshot: device_traces[0][0] 'size' is negative (-1)",
        "not a PyTorch memory snapshot: segments[0].blocks[0] has the unknown state 'leased'",
        "not a PyTorch memory snapshot: device_traces[0][0] has no action",
        "not a PyTorch memory snapshot: device_traces[0][0] is a int, not a dict",
    };
    size_t count;
    blob_t *b = py_pickles(body, "4", &count);
    cr_assert_eq(count, sizeof msgs / sizeof msgs[0]);
    for (size_t i = 0; i < count; i++) {
        char err[256];
        expect_error(b[i].p, b[i].len, err, sizeof err);
        cr_assert(strncmp(err, msgs[i], strlen(msgs[i])) == 0, "case %zu: %s", i, err);
    }
    blobs_free(b, count);
}

Test(snapshot, looks_like_tells_pickles_from_csv)
{
    cr_assert_eq(pickle_looks_like("\x80\x04\x95", 3), 1);
    cr_assert_eq(pickle_looks_like("\x80\x02}", 3), 1);
    cr_assert_eq(pickle_looks_like("(dp0\n", 5), 1);
    cr_assert_eq(pickle_looks_like("}q\x00", 3), 1);
    cr_assert_eq(pickle_looks_like("]", 1), 1);
    cr_assert_eq(pickle_looks_like("\x80\x09", 2), 0);
    cr_assert_eq(pickle_looks_like("\x80", 1), 0);
    cr_assert_eq(pickle_looks_like("Thread,Time,Action,Pointer,Size,Stream\n", 39), 0);
    cr_assert_eq(pickle_looks_like("#cca-trace 1 device=0\n", 22), 0);
    cr_assert_eq(pickle_looks_like("", 0), 0);
    cr_assert_eq(pickle_looks_like(NULL, 4), 0);
}

/* ---- refusals ------------------------------------------------------------ */

static void expect_refusal(const void *buf, size_t len, const char *msg)
{
    char err[512];
    pk_value_t *v = (pk_value_t *)buf;
    cr_assert_eq(pk_load(buf, len, &v, err, sizeof err), -1);
    cr_assert_null(v);
    cr_assert_str_eq(err, msg);
    expect_error(buf, len, err, sizeof err);
    cr_assert_str_eq(err, msg);
}

Test(refuse, global_names_what_it_would_call)
{
    /* {'cmd': os.system} by hand at protocol 2: GLOBAL at byte 15 */
    static const char p[] = "\x80\x02}q\x00X\x03\x00\x00\x00" "cmdq\x01" "cos\nsystem\nq\x02s.";
    expect_refusal(p, sizeof p - 1,
                   "refused: the pickle would call code (opcode GLOBAL 'os system' at byte 15); cca reads plain data only");
}

Test(refuse, os_system_at_every_protocol)
{
    size_t count;
    blob_t *b = py_pickles("obj = os.system", "0 1 2 3 4 5", &count);
    cr_assert_eq(count, 6);
    for (int proto = 0; proto <= 5; proto++) {
        char err[512];
        expect_error(b[proto].p, b[proto].len, err, sizeof err);
        const char *want = proto >= 4 ? "refused: the pickle would call code (opcode STACK_GLOBAL 'posix system' at byte "
                                      : "refused: the pickle would call code (opcode GLOBAL 'posix system' at byte ";
        cr_assert(strncmp(err, want, strlen(want)) == 0, "protocol %d: %s", proto, err);
        cr_assert(strstr(err, "); cca reads plain data only"), "%s", err);
    }
    blobs_free(b, count);
}

Test(refuse, reduce_payload_nested_in_a_snapshot)
{
    char flag[] = "/tmp/cca_snapshot_flag.XXXXXX";
    int fd = mkstemp(flag);
    cr_assert_geq(fd, 0);
    close(fd);
    unlink(flag);
    char body[1024];
    /* a plain snapshot whose first event's frames hide an object that would
     * run `touch flag` when Python unpickled it */
    snprintf(body, sizeof body,
             "class Evil:\n"
             "    def __reduce__(self): return (os.system, ('touch %s',))\n"
             "obj = snap([[ev('alloc', 0x1000, 8, 0, 1)]])\n"
             "obj['device_traces'][0][0]['frames'] = [Evil()]\n",
             flag);
    size_t count;
    blob_t *b = py_pickles(body, "0 1 2 3 4 5", &count);
    cr_assert_eq(count, 6);
    for (int proto = 0; proto <= 5; proto++) {
        char err[512];
        expect_error(b[proto].p, b[proto].len, err, sizeof err);
        static const char call[] = "refused: the pickle would call code (opcode ";
        cr_assert(strncmp(err, call, strlen(call)) == 0, "protocol %d: %s", proto, err);
        cr_assert(strstr(err, "GLOBAL 'posix system' at byte "), "protocol %d: %s", proto, err);
    }
    blobs_free(b, count);
    struct stat st;
    cr_assert_neq(stat(flag, &st), 0, "the payload ran");
}

Test(refuse, every_code_opcode_by_name)
{
    /* each opcode at byte 2, after PROTO 5, with what it would need before it
     * ignored: the refusal comes first, before any stack check */
    static const struct { const char *p; size_t len; const char *msg; } cases[] = {
        {"\x80\x05R.", 4, "call code (opcode REDUCE at byte 2)"},
        {"\x80\x05" "b.", 4, "call code (opcode BUILD at byte 2)"},
        {"\x80\x05iposix\nsystem\n.", 17, "call code (opcode INST 'posix system' at byte 2)"},
        {"\x80\x05o.", 4, "call code (opcode OBJ at byte 2)"},
        {"\x80\x05\x81.", 4, "call code (opcode NEWOBJ at byte 2)"},
        {"\x80\x05\x92.", 4, "call code (opcode NEWOBJ_EX at byte 2)"},
        {"\x80\x05\x93.", 4, "call code (opcode STACK_GLOBAL at byte 2)"},
        {"\x80\x05\x82\x01.", 5, "look up a registered name (opcode EXT1 at byte 2)"},
        {"\x80\x05\x83\x01\x00.", 6, "look up a registered name (opcode EXT2 at byte 2)"},
        {"\x80\x05\x84\x01\x00\x00\x00.", 8, "look up a registered name (opcode EXT4 at byte 2)"},
        {"\x80\x05Pid\n.", 7, "look up a persistent object (opcode PERSID at byte 2)"},
        {"\x80\x05NQ.", 5, "look up a persistent object (opcode BINPERSID at byte 3)"},
        {"\x80\x05\x97.", 4, "read an out-of-band buffer (opcode NEXT_BUFFER at byte 2)"},
        {"\x80\x05N\x98.", 5, "read an out-of-band buffer (opcode READONLY_BUFFER at byte 3)"},
        {"\x80\x05" "c" "builtins\neval\n.", 18, "call code (opcode GLOBAL 'builtins eval' at byte 2)"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char want[256];
        snprintf(want, sizeof want, "refused: the pickle would %s; cca reads plain data only", cases[i].msg);
        expect_refusal(cases[i].p, cases[i].len, want);
    }
}

/* ---- truncation and corruption ------------------------------------------- */

static const char rich_body[] =
    "obj = snap([[ev('segment_alloc', 0x7f0000000000, 2097152, 0, 1700000000000000),\n"
    "             ev('alloc', 0x7f0000000000, 512, 0, 1700000000000002),\n"
    "             ev('alloc', 0x7f0000000200, 70000, 94000000000000, 1700000000000010),\n"
    "             ev('oom', 5, 1 << 40, 0, 1700000000000020),\n"
    "             ev('free_requested', 0x7f0000000000, 512, 0, 1700000000000030)]],\n"
    "           [seg(0, 0x7f0000000000, [blk(512, 'inactive', 0x7f0000000000, 512),\n"
    "                                    blk(70144, 'active_allocated', 0x7f0000000200, 70000),\n"
    "                                    blk(4096, 'active_allocated', 0x7f0000011400, 4000)])])\n"
    "obj['allocator_settings'] = {'PYTORCH_CUDA_ALLOC_CONF': 'expandable_segments:True', 'gc': 0.5,\n"
    "                             'flags': (True, False, None), 'names': 'caf\\u00e9 \\u65e5\\u672c \\\\u0041'}\n";

Test(corrupt, every_truncation_fails_cleanly)
{
    static const int protos[] = {0, 2, 4, 5};
    size_t count;
    blob_t *b = py_pickles(rich_body, "0 2 4 5", &count);
    cr_assert_eq(count, 4);
    for (size_t k = 0; k < count; k++) {
        size_t n, len = b[k].len;
        const unsigned char *buf = b[k].p;
        snapshot_csv_t *whole = convert(buf, len, &n);      /* whole, it converts */
        snapshot_csv_free(whole, n);
        for (size_t cut = 0; cut < len; cut++) {
            /* a copy of exactly cut bytes, so that ASan sees any read past it */
            unsigned char *part = malloc(cut ? cut : 1);
            cr_assert_not_null(part);
            memcpy(part, buf, cut);
            pk_value_t *v = (pk_value_t *)part;
            char err[256] = "";
            cr_assert_eq(pk_load(part, cut, &v, err, sizeof err), -1, "protocol %d, %zu of %zu bytes", protos[k], cut, len);
            cr_assert_null(v);
            cr_assert(strncmp(err, "truncated pickle at byte ", 25) == 0 || strncmp(err, "corrupt pickle at byte ", 23) == 0,
                      "protocol %d, %zu bytes: %s", protos[k], cut, err);
            expect_error(part, cut, err, sizeof err);
            free(part);
        }
    }
    blobs_free(b, count);
}

Test(corrupt, changed_bytes_never_crash)
{
    size_t len;
    unsigned char *buf = py_pickle(rich_body, 4, &len);
    static const unsigned char subs[] = {0x00, 0x01, 0x7f, 0x80, 0xff, '(', '.', 'h', 'j', 0x8a, 0x95};
    unsigned char *copy = malloc(len);
    cr_assert_not_null(copy);
    size_t loaded = 0;
    for (size_t i = 0; i < len; i++) {
        for (size_t s = 0; s < sizeof subs + 1; s++) {
            memcpy(copy, buf, len);
            copy[i] = s < sizeof subs ? subs[s] : (unsigned char)(buf[i] ^ 0x10);
            pk_value_t *v;
            char err[256];
            if (pk_load(copy, len, &v, err, sizeof err) == 0) {
                loaded++;
                pk_free(v);
            } else {
                cr_assert_gt(strlen(err), 0);
            }
            snapshot_csv_t *c;
            size_t n;
            if (snapshot_csv_from_pickle(copy, len, &c, &n, err, sizeof err) == 0)
                snapshot_csv_free(c, n);
        }
    }
    cr_assert_gt(loaded, 0);                 /* some changes (a digit of a number) still load */
    free(copy);
    free(buf);
}

static void expect_corrupt(const char *p, size_t len, const char *msg)
{
    pk_value_t *v;
    char err[256];
    cr_assert_eq(pk_load(p, len, &v, err, sizeof err), -1, "%s", msg);
    cr_assert_str_eq(err, msg);
}

Test(corrupt, bad_input_names_the_offset)
{
    expect_corrupt("\x80\x04X\xff\xff\xff\xff" "abc.", 11, "truncated pickle at byte 2: BINUNICODE needs 4294967295 more bytes, 4 left");
    expect_corrupt("\x80\x04\x8d\x00\x00\x00\x00\x00\x00\x00\x80.", 12,
                   "truncated pickle at byte 2: BINUNICODE8 needs 9223372036854775808 more bytes, 1 left");
    expect_corrupt("\x80\x04\x95\x10\x00\x00\x00\x00\x00\x00\x00N.", 13, "truncated pickle at byte 2: FRAME needs 16 more bytes, 2 left");
    expect_corrupt("\x80\x04J\x01\x02", 5, "truncated pickle at byte 2: BININT needs 4 more bytes, 2 left");
    expect_corrupt("\x80\x04N", 3, "truncated pickle at byte 3: no STOP opcode");
    expect_corrupt("\x80\x04h\x05.", 5, "corrupt pickle at byte 2: memo index 5 was never stored");
    expect_corrupt("\x80\x04j\xff\xff\xff\xff.", 8, "corrupt pickle at byte 2: memo index 4294967295 was never stored");
    expect_corrupt("\x80\x04]a.", 5, "corrupt pickle at byte 3: stack underflow (APPEND needs 2 values)");
    expect_corrupt("\x80\x04.", 3, "corrupt pickle at byte 2: stack underflow (STOP needs 1 value)");
    expect_corrupt("\x80\x04](.", 5, "corrupt pickle at byte 4: stack underflow (STOP needs 1 value)");
    expect_corrupt("\x80\x04(e.", 5, "corrupt pickle at byte 3: stack underflow (APPENDS has no target below its MARK)");
    expect_corrupt("\x80\x04N(e.", 6, "corrupt pickle at byte 4: APPENDS to a None");
    expect_corrupt("\x80\x04\x8f(Ne.", 7, "corrupt pickle at byte 5: APPENDS to a set");
    expect_corrupt("\x80\x04](]\x90.", 7, "corrupt pickle at byte 5: ADDITEMS to a list");
    expect_corrupt("\x80\x04}NNNu.", 8, "corrupt pickle at byte 6: SETITEMS without a MARK");
    expect_corrupt("\x80\x04}(NNNu.", 9, "corrupt pickle at byte 7: SETITEMS with an odd number of items");
    expect_corrupt("\x80\x04}]Ns.", 7, "corrupt pickle at byte 5: unhashable dict key (list)");
    expect_corrupt("\x80\x04NNa.", 6, "corrupt pickle at byte 4: APPEND to a None");
    expect_corrupt("\x80\x06N.", 4, "corrupt pickle at byte 0: unsupported pickle protocol 6 (cca reads 0-5)");
    expect_corrupt("\x80\x04\xf0.", 4, "corrupt pickle at byte 2: unknown opcode 0xf0");
    expect_corrupt("\x80\x04\x8c\x02\xc3(.", 7, "corrupt pickle at byte 2: SHORT_BINUNICODE is not UTF-8");
    expect_corrupt("I12", 3, "truncated pickle at byte 0: INT has no end of line");
    expect_corrupt("I1x\n.", 5, "corrupt pickle at byte 0: INT argument is not a number");
    expect_corrupt("p-1\n.", 5, "corrupt pickle at byte 0: PUT index out of range");
}

Test(corrupt, nesting_and_ints_have_limits)
{
    size_t n = 2 + 20000 + 1;
    char *p = malloc(n);
    cr_assert_not_null(p);
    memcpy(p, "\x80\x04", 2);
    memset(p + 2, '(', 20000);
    p[n - 1] = '.';
    expect_corrupt(p, n, "corrupt pickle at byte 10002: nesting deeper than 10000");
    /* tuples of tuples: ) then 10,000 TUPLE1 is 10,001 deep */
    n = 3 + 10000 + 1;
    p = realloc(p, n);
    cr_assert_not_null(p);
    memcpy(p, "\x80\x04)", 3);
    memset(p + 3, 0x85, 10000);
    p[n - 1] = '.';
    expect_corrupt(p, n, "corrupt pickle at byte 10002: nesting deeper than 10000");
    free(p);
    expect_corrupt("\x80\x04\x8a\x09\x00\x00\x00\x00\x00\x00\x00\x80\x00.", 14,
                   "corrupt pickle at byte 2: LONG1 beyond 64 bits (cca reads 64-bit ints)");
    expect_corrupt("L9223372036854775808L\n.", 23, "corrupt pickle at byte 0: LONG beyond 64 bits (cca reads 64-bit ints)");
    expect_corrupt("I-9223372036854775809\n.", 23, "corrupt pickle at byte 0: INT beyond 64 bits (cca reads 64-bit ints)");
}

/* ---- plain data ---------------------------------------------------------- */

static pk_value_t *load_py(const char *body, int proto)
{
    size_t len;
    unsigned char *buf = py_pickle(body, proto, &len);
    pk_value_t *v;
    char err[256];
    cr_assert_eq(pk_load(buf, len, &v, err, sizeof err), 0, "protocol %d: %s", proto, err);
    free(buf);
    return v;
}

static int64_t int_at(const pk_value_t *l, size_t i)
{
    int64_t x = 0;
    cr_assert_eq(pk_int(pk_list_at(l, i), &x), 0, "item %zu is a %s", i, pk_kind_name(pk_kind(pk_list_at(l, i))));
    return x;
}

Test(pickle, scalars_at_every_protocol)
{
    size_t count;
    blob_t *bl = py_pickles(
        "obj = [0, 255, 256, 65535, 65536, -1, 2**31 - 1, -2**31, 2**31, 2**63 - 1, -2**63, -2**40,\n"
        "       None, True, False, 1.5, -0.0, 1e300, float('inf'),\n"
        "       '', 'plain', 'caf\\u00e9', '\\U0001F600', 'a\\nb\\\\c', '\\\\u0041', (1, 'x'), ()]\n",
        "0 1 2 3 4 5", &count);
    cr_assert_eq(count, 6);
    for (int proto = 0; proto <= 5; proto++) {
        pk_value_t *v;
        char err[256];
        cr_assert_eq(pk_load(bl[proto].p, bl[proto].len, &v, err, sizeof err), 0, "protocol %d: %s", proto, err);
        static const int64_t ints[] = {0, 255, 256, 65535, 65536, -1, INT32_MAX, INT32_MIN, 2147483648LL, INT64_MAX,
                                       INT64_MIN, -1099511627776LL};
        cr_assert_eq(pk_kind(v), PK_LIST);
        cr_assert_eq(pk_list_len(v), 27);
        for (size_t i = 0; i < 12; i++)
            cr_assert_eq(int_at(v, i), ints[i], "protocol %d, item %zu", proto, i);
        int b;
        cr_assert_eq(pk_kind(pk_list_at(v, 12)), PK_NONE);
        cr_assert(pk_bool(pk_list_at(v, 13), &b) == 0 && b == 1);
        cr_assert(pk_bool(pk_list_at(v, 14), &b) == 0 && b == 0);
        cr_assert_eq(pk_int(pk_list_at(v, 13), &(int64_t){0}), -1);   /* a bool is not an int here */
        double f;
        cr_assert(pk_float(pk_list_at(v, 15), &f) == 0 && f == 1.5);
        cr_assert(pk_float(pk_list_at(v, 16), &f) == 0 && f == 0.0);
        cr_assert(pk_float(pk_list_at(v, 17), &f) == 0 && f == 1e300);
        cr_assert(pk_float(pk_list_at(v, 18), &f) == 0 && f > 1e308);
        static const char *const strs[] = {"", "plain", "caf\xc3\xa9", "\xf0\x9f\x98\x80", "a\nb\\c", "\\u0041"};
        for (size_t i = 0; i < 6; i++) {
            size_t len;
            const char *s = pk_str(pk_list_at(v, 19 + i), &len);
            cr_assert_not_null(s, "protocol %d, item %zu", proto, 19 + i);
            cr_assert_str_eq(s, strs[i], "protocol %d, item %zu", proto, 19 + i);
            cr_assert_eq(len, strlen(strs[i]));
        }
        const pk_value_t *t = pk_list_at(v, 25);
        cr_assert_eq(pk_kind(t), PK_TUPLE);
        cr_assert_eq(pk_list_len(t), 2);
        cr_assert_eq(int_at(t, 0), 1);
        cr_assert_str_eq(pk_str(pk_list_at(t, 1), NULL), "x");
        cr_assert_eq(pk_kind(pk_list_at(v, 26)), PK_TUPLE);
        cr_assert_eq(pk_list_len(pk_list_at(v, 26)), 0);
        cr_assert_null(pk_list_at(v, 27));
        pk_free(v);
    }
    blobs_free(bl, count);
}

Test(pickle, memo_values_are_shared_and_freed_once)
{
    pk_value_t *v = load_py("a = [1, 2]\nc = []\nc.append(c)\nobj = [a, a, {'k': a}, c]\n", 4);
    cr_assert_eq(pk_list_at(v, 0), pk_list_at(v, 1));
    cr_assert_eq(pk_dict_get(pk_list_at(v, 2), "k"), pk_list_at(v, 0));
    const pk_value_t *c = pk_list_at(v, 3);
    cr_assert_eq(pk_list_at(c, 0), c);                  /* a list that holds itself */
    pk_free(v);
    pk_free(NULL);
}

Test(pickle, dicts_keep_order_and_the_last_value)
{
    for (int proto = 0; proto <= 5; proto += 5) {
        /* 1 and True are one key in Python: its first spelling stays */
        pk_value_t *v = load_py("obj = {'b': 1, 'a': 2, 1: 'one', (1, 2): 'pair', None: 0}\n"
                                "obj[True] = 'true'\n"
                                "obj.update({'k%d' % i: i for i in range(100)})\n",
                                proto);
        cr_assert_eq(pk_dict_len(v), 105);
        cr_assert_str_eq(pk_str(pk_dict_key_at(v, 0), NULL), "b");
        cr_assert_str_eq(pk_str(pk_dict_key_at(v, 1), NULL), "a");
        int64_t one;
        cr_assert(pk_int(pk_dict_key_at(v, 2), &one) == 0 && one == 1);
        cr_assert_str_eq(pk_str(pk_dict_value_at(v, 2), NULL), "true");
        cr_assert_eq(pk_kind(pk_dict_key_at(v, 3)), PK_TUPLE);
        int64_t x;
        cr_assert(pk_int(pk_dict_get(v, "a"), &x) == 0 && x == 2);
        cr_assert(pk_int(pk_dict_get(v, "k99"), &x) == 0 && x == 99);
        cr_assert_null(pk_dict_get(v, "k100"));
        cr_assert_null(pk_dict_get(pk_dict_get(v, "a"), "a"));
        pk_free(v);
    }
    /* a repeated key by hand: DICT of 'x': 1, 'x': 2 */
    pk_value_t *v;
    char err[128];
    static const char dup[] = "(Vx\nI1\nVx\nI2\nd.";
    cr_assert_eq(pk_load(dup, sizeof dup - 1, &v, err, sizeof err), 0, "%s", err);
    int64_t x;
    cr_assert_eq(pk_dict_len(v), 1);
    cr_assert(pk_int(pk_dict_get(v, "x"), &x) == 0 && x == 2);
    pk_free(v);
}

Test(pickle, sets_bytes_and_python2_strings)
{
    /* sets and frozensets load as lists; bytes from protocol 3, bytearray from 5 */
    pk_value_t *v = load_py("obj = [{7}, frozenset([8]), b'\\x00\\xffab', bytearray(b'xyz')]\n", 5);
    cr_assert_eq(pk_kind(pk_list_at(v, 0)), PK_LIST);
    cr_assert_eq(int_at(pk_list_at(v, 0), 0), 7);
    cr_assert_eq(int_at(pk_list_at(v, 1), 0), 8);
    size_t n;
    const unsigned char *b = pk_bytes(pk_list_at(v, 2), &n);
    cr_assert(b && n == 4 && b[0] == 0 && b[1] == 0xff && b[2] == 'a');
    cr_assert(pk_bytes(pk_list_at(v, 3), &n) && n == 3);
    cr_assert_null(pk_str(pk_list_at(v, 2), NULL));
    pk_free(v);
    /* below protocol 3 Python writes bytes through a call: refused */
    size_t len;
    unsigned char *buf = py_pickle("obj = [b'ab']", 2, &len);
    char err[256];
    cr_assert_eq(pk_load(buf, len, &v, err, sizeof err), -1);
    cr_assert(strstr(err, "refused: the pickle would call code (opcode GLOBAL '_codecs encode' at byte "), "%s", err);
    free(buf);
    /* Python 2's str: STRING, SHORT_BINSTRING, BINSTRING */
    static const char py2[] = "(S'a\\'b\\n\\x41'\nU\x02hiT\x03\x00\x00\x00" "abcl.";
    cr_assert_eq(pk_load(py2, sizeof py2 - 1, &v, err, sizeof err), 0, "%s", err);
    cr_assert_str_eq(pk_str(pk_list_at(v, 0), NULL), "a'b\nA");
    cr_assert_str_eq(pk_str(pk_list_at(v, 1), NULL), "hi");
    cr_assert_str_eq(pk_str(pk_list_at(v, 2), NULL), "abc");
    pk_free(v);
}
