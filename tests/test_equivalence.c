/* test_equivalence.c - the hot path's shortcuts (parking a freed block and
 * carving the next request out of it, leases) must be invisible: the same
 * sequence of calls gives the same addresses and the same statistics as
 * when every call takes the all-locked path (forced here by a watch that
 * never fires). Two patterns: random frees and allocations over a few live
 * blocks, and pingpongs (allocate, free at once) cycling through sizes in
 * both pools over a background of live blocks - parking's own cases: the
 * same size back, another size carved out of the merged block, a parked
 * block in the other pool. */
#include <stdint.h>
#include "common.h"
#include "internal.h"                            /* park_always */

#define OPS 6000
#define LIVE 48
#define SNAPS (OPS / 500 + 2)

typedef struct run {
    uintptr_t addr[OPS];                  /* each allocation's offset from the first one */
    cca_stats_t stats[OPS / 500 + 2];
} run_t;

static void ignore(void *arg, cca_watch_kind_t which, size_t bytes, int rising)
{
    (void)arg; (void)which; (void)bytes; (void)rising;
}

static size_t pingpong_size(uint64_t seed, int i)
{
    static const size_t cycle[] = { 512, 4096, 1000, 65536, 1 << 20, 512, 3 << 20, 12 << 20, 2 << 20,
                                    25 << 20, 1536, 130 << 20, 7 << 20, 4096 };
    size_t n = sizeof cycle / sizeof cycle[0];
    return (seed >> 20) % 5 == 0 ? cycle[(seed >> 24) % n] : cycle[i / 2 % n];
}

static bool park_always;                       /* the hot-path run parks every free it can */
static bool refuse_admit;                      /* ... and sends every passed lease all locked */
static int check_every = 97;                   /* cca_check every this many calls (0: at the end only) */
#define MAX_STREAMS 16

static void run_sequence(const char *conf, bool all_locked, uint64_t seed, int nstreams, int pattern, run_t *out)
{
    static const size_t sizes[] = { 512, 1000, 4096, 65536, 1 << 20, 3 << 20, 12 << 20, 25 << 20, 130 << 20 };
    cca_sim_reset();
    cca_allocator_t *a = make_alloc(conf);
    a->park_always = park_always;
    a->refuse_admit = refuse_admit;
    uint64_t id;
    if (all_locked) cr_assert_eq(cca_watch_threshold(a, CCA_WATCH_ALLOCATED, SIZE_MAX / 2, ignore, NULL, &id), CCA_OK);
    cudaStream_t streams[MAX_STREAMS] = { NULL };
    cr_assert_leq(nstreams, MAX_STREAMS);
    for (int i = 1; i < nstreams; i++) cr_assert_eq(cudaStreamCreate(&streams[i]), cudaSuccess);
    void *live[LIVE] = { 0 };
    uintptr_t base = 0;
    int last = -1, snaps = 0;
    for (int i = 0; i < OPS; i++) {
        seed ^= seed << 13; seed ^= seed >> 7; seed ^= seed << 17;
        int slot = (int)(seed % LIVE);
        if ((seed >> 8) % 3 == 0 && last >= 0 && live[last]) slot = last;   /* free what was just allocated */
        size_t size = sizes[(seed >> 16) % 9] + (seed >> 40) % 3 * 512;
        if (pattern >= 1) {                        /* pingpong: mostly the block just allocated, at once */
            slot = last >= 0 && live[last] && (seed >> 8) % 8 != 0 ? last : (int)(seed % LIVE);
            size = pingpong_size(seed, i);
        }
        out->addr[i] = 0;
        if (live[slot]) {
            free_ok(a, live[slot]);
            live[slot] = NULL;
        } else {
            live[slot] = alloc_ok(a, size, streams[pattern == 2 ? i % nstreams : (int)((seed >> 50) % nstreams)]);
            if (!base) base = (uintptr_t)live[slot];
            out->addr[i] = (uintptr_t)live[slot] - base;
            last = slot;
        }
        if (i % 500 == 0 && snaps < SNAPS - 1) out->stats[snaps++] = stats_of(a);
        if (check_every && i % check_every == 0) check_ok(a);   /* leases too: no stream above its lease */
    }
    out->stats[snaps] = stats_of(a);
    check_ok(a);
    for (int i = 0; i < LIVE; i++) free_ok(a, live[i]);
    if (all_locked) cca_unwatch(a, id);
    finish(a);
    for (int i = 1; i < nstreams; i++) cudaStreamDestroy(streams[i]);
}

static void compare_pattern(const char *conf, uint64_t seed, int nstreams, int pattern)
{
    static run_t fast, slow;
    memset(&fast, 0, sizeof fast);
    memset(&slow, 0, sizeof slow);
    run_sequence(conf, false, seed, nstreams, pattern, &fast);
    run_sequence(conf, true, seed, nstreams, pattern, &slow);
    for (int i = 0; i < OPS; i++)
        cr_assert_eq(fast.addr[i], slow.addr[i], "'%s': call %d placed at +%#lx, all-locked at +%#lx",
                     conf, i, (unsigned long)fast.addr[i], (unsigned long)slow.addr[i]);
    if (pattern == 2 && !refuse_admit) {       /* the shared headroom was used (the last snapshot: after every call) */
        const cca_stats_t *f = &fast.stats[OPS / 500];
        cr_assert_gt(f->lock_headroom_acquisitions, 0, "'%s': the headroom was never taken", conf);
    }
    for (int k = 0; k < SNAPS; k++) {
        cca_stats_t *f = &fast.stats[k], *s = &slow.stats[k];
        const cca_stat_t *fo = &f->oversize_allocations, *so = &s->oversize_allocations;
        cr_assert(fo->current == so->current && fo->peak == so->peak && fo->allocated == so->allocated &&
                  fo->freed == so->freed, "'%s', snapshot %d: oversize_allocations differ", conf, k);
#define SAME_STAT_(name, doc) \
        for (int p = 0; p < CCA_POOL_COUNT; p++) \
            cr_assert(f->name[p].current == s->name[p].current && f->name[p].peak == s->name[p].peak && \
                      f->name[p].allocated == s->name[p].allocated && f->name[p].freed == s->name[p].freed, \
                      "'%s', snapshot %d: " #name "[%d] %lld/%lld/%lld/%lld, all-locked %lld/%lld/%lld/%lld", conf, k, p, \
                      (long long)f->name[p].current, (long long)f->name[p].peak, (long long)f->name[p].allocated, \
                      (long long)f->name[p].freed, (long long)s->name[p].current, (long long)s->name[p].peak, \
                      (long long)s->name[p].allocated, (long long)s->name[p].freed);
        CCA_STAT_FIELDS(SAME_STAT_)
#undef SAME_STAT_
#define SAME_COUNTER_(name, doc) cr_assert_eq(f->name, s->name, "'%s', snapshot %d: " #name, conf, k);
        CCA_COUNTER_FIELDS(SAME_COUNTER_)
#undef SAME_COUNTER_
    }
}

/* Each comparison three times: parking as it adapts, parking every free
 * it can, and that with every lease passed on the hot path refused there
 * (the refusal's own path: a carve-out's deferred figures stay applied). */
static void compare_both(const char *conf, uint64_t seed, int nstreams, int pattern)
{
    park_always = refuse_admit = false;
    compare_pattern(conf, seed, nstreams, pattern);
    park_always = true;
    compare_pattern(conf, seed, nstreams, pattern);
    refuse_admit = true;
    compare_pattern(conf, seed, nstreams, pattern);
    park_always = refuse_admit = false;
}

static void compare(const char *conf, uint64_t seed, int nstreams) { compare_both(conf, seed, nstreams, 0); }

TestSuite(equivalence);

Test(equivalence, default_rules) { compare("", 0x9E3779B97F4A7C15ull, 1); }
Test(equivalence, default_rules_other_seed) { compare("", 12345, 1); }
Test(equivalence, default_rules_three_streams) { compare("", 99, 3); }
Test(equivalence, max_split_size) { compare("max_split_size_mb:64", 777, 1); }
Test(equivalence, lean_preset) { compare("preset:lean", 4242, 1); }
Test(equivalence, roundup_power2_divisions) { compare("roundup_power2_divisions:[1:2,8:4,>:8]", 5150, 1); }
Test(equivalence, lean_preset_three_streams) { compare("preset:lean", 31337, 3); }
Test(equivalence, pingpongs) { compare_both("", 2718, 1, 1); }
Test(equivalence, pingpongs_three_streams) { compare_both("", 1618, 3, 1); }
Test(equivalence, pingpongs_max_split_size) { compare_both("max_split_size_mb:24", 1414, 1, 1); }
Test(equivalence, pingpongs_lean) { compare_both("preset:lean", 1732, 2, 1); }
Test(equivalence, pingpongs_rounded) { compare_both("roundup_power2_divisions:4", 2236, 1, 1); }

/* Many streams, call i on stream i mod S (pattern 2: pingpong sizes, so
 * peaks as tight as one block's), checked only at the snapshots: room
 * passes between streams through the shared headroom (counters.c) for
 * hundreds of calls at a time, and the figures stay the all-locked run's. */
static void compare_many(uint64_t seed, int nstreams)
{
    check_every = 0;
    compare_both("", seed, nstreams, 2);
    check_every = 97;
}
Test(equivalence, round_robin_sixteen_streams) { compare_many(4099, 16); }
Test(equivalence, round_robin_five_streams) { compare_many(8191, 5); }
