/* test_accounting_tags.c - tags: who holds the memory. A block records the
 * allocating thread's own tag, else the process's shared tag; snapshots,
 * the summary and the OOM report name them; ids, names and bad input. */
#include <pthread.h>
#include "acct_util.h"

static void setup(void)
{
    cca_sim_reset();
    cca_tag_thread(0);
    cca_tag_shared(0);
}
TestSuite(tags, .init = setup, .timeout = 60);

static uint32_t tag(const char *name)
{
    uint32_t id = 0;
    cr_assert_eq(cca_tag_id(name, &id), CCA_OK, "%s", cca_last_error_string());
    return id;
}

typedef struct find { uintptr_t addr; uint32_t tag; } find_t;

static int find_block(const cca_block_info_t *b, void *arg)
{
    find_t *f = arg;
    if (b->address == f->addr) f->tag = b->tag;
    return 0;
}

static uint32_t tag_of(cca_allocator_t *a, void *p)
{
    find_t f = { (uintptr_t)p, UINT32_MAX };
    cr_assert_eq(cca_snapshot_walk(a, NULL, find_block, &f), CCA_OK);
    return f.tag;
}

Test(tags, ids_and_names)
{
    uint32_t a = tag("optimizer"), b = tag("activations");
    cr_assert_neq(a, 0u);
    cr_assert_neq(a, b);
    cr_assert_eq(tag("optimizer"), a, "the same name, the same id");
    cr_assert_str_eq(cca_tag_name(a), "optimizer");
    cr_assert_null(cca_tag_name(0));
    cr_assert_null(cca_tag_name(CCA_TAG_MAX + 5));
    uint32_t id = 7;
    cr_assert_eq(cca_tag_id("", &id), CCA_ERROR_INVALID_ARGUMENT);
    cr_assert_eq(cca_tag_id("bad\nname", &id), CCA_ERROR_INVALID_ARGUMENT);
    cr_assert_eq(cca_tag_id(NULL, &id), CCA_ERROR_INVALID_ARGUMENT);
    cr_assert_eq(cca_tag_id("x", NULL), CCA_ERROR_INVALID_ARGUMENT);
    char longname[300];
    memset(longname, 'a', sizeof longname - 1);
    longname[sizeof longname - 1] = 0;
    cr_assert_eq(cca_tag_id(longname, &id), CCA_ERROR_INVALID_ARGUMENT);
    cr_assert_eq(id, 7u, "untouched on failure");
    cr_assert_eq(cca_tag_thread(a), 0u);
    cr_assert_eq(cca_tag_thread(999999), a, "the previous one; an unknown id counts as none");
    cr_assert_eq(cca_tag_thread(0), 0u);
}

typedef struct other { cca_allocator_t *a; uint32_t own; void *p; } other_t;

static void *other_thread(void *arg)
{
    other_t *o = arg;
    if (o->own) cca_tag_thread(o->own);
    o->p = alloc_ok(o->a, 64 << 10, NULL);
    return NULL;
}

static void *in_other(cca_allocator_t *a, uint32_t own)
{
    other_t o = { a, own, NULL };
    pthread_t t;
    cr_assert_eq(pthread_create(&t, NULL, other_thread, &o), 0);
    pthread_join(t, NULL);
    return o.p;
}

Test(tags, own_tag_then_the_shared_one_for_threads_without)
{
    cca_allocator_t *a = make_alloc("");
    uint32_t opt = tag("optimizer"), grad = tag("gradients"), mine = tag("mine");
    void *p0 = alloc_ok(a, 4096, NULL);               /* nothing set: untagged */
    cca_tag_thread(opt);
    void *p1 = alloc_ok(a, 4096, NULL);
    void *q1 = in_other(a, 0);                        /* no own tag, no shared tag: untagged */
    cca_tag_shared(grad);
    void *q2 = in_other(a, 0);                        /* no own tag: the shared one (autograd's thread) */
    void *q3 = in_other(a, mine);                     /* its own wins */
    void *p2 = alloc_ok(a, 4096, NULL);               /* this thread's own still wins */
    cca_tag_thread(0);
    void *p3 = alloc_ok(a, 4096, NULL);               /* now the shared one */
    cca_tag_shared(0);
    cr_assert_eq(tag_of(a, p0), 0u);
    cr_assert_eq(tag_of(a, p1), opt);
    cr_assert_eq(tag_of(a, q1), 0u);
    cr_assert_eq(tag_of(a, q2), grad);
    cr_assert_eq(tag_of(a, q3), mine);
    cr_assert_eq(tag_of(a, p2), opt);
    cr_assert_eq(tag_of(a, p3), grad);
    /* a freed block taken again (parked, the same size back) gets the new tag */
    free_ok(a, p3);
    cca_tag_thread(mine);
    void *p4 = alloc_ok(a, 4096, NULL);
    cr_assert_eq(tag_of(a, p4), mine);
    cca_tag_thread(0);
    void *all[] = { p0, p1, q1, q2, q3, p2, p4 };
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) free_ok(a, all[i]);
    finish(a);
}

Test(tags, json_summary_and_oom_report_name_the_holders)
{
    cca_sim_set_capacity(0, 64 << 20);
    cca_allocator_t *a = make_alloc("");
    uint32_t big = tag("big \"quoted\" part"), small = tag("small");
    cca_tag_thread(big);
    void *p = alloc_ok(a, 30 << 20, NULL);
    cca_tag_thread(small);
    void *q = alloc_ok(a, 6 << 20, NULL);
    cca_tag_thread(0);
    void *u = alloc_ok(a, 2 << 20, NULL);
    sink_t k = { 0 };
    cr_assert_eq(cca_snapshot_json(a, sink_write, &k), CCA_OK);
    ASSERT_HAS(k.s, "\"tag\": \"big \\\"quoted\\\" part\"");
    ASSERT_HAS(k.s, "\"tag\": \"small\"");
    free(k.s);
    k = (sink_t){ 0 };
    cr_assert_eq(cca_memory_summary(a, sink_write, &k), CCA_OK);
    ASSERT_HAS(k.s, "Allocated by tag");
    ASSERT_HAS(k.s, "big \"quoted\" part");
    ASSERT_HAS(k.s, "(untagged)");
    char *big_row = strstr(k.s, "big \"quoted\" part"), *small_row = strstr(k.s, "| small");
    cr_assert(big_row && small_row && big_row < small_row, "most first:\n%s", k.s);
    free(k.s);
    void *r = NULL;
    cr_assert_eq(cca_malloc(a, &r, 48 << 20, NULL), CCA_ERROR_OUT_OF_MEMORY);
    cca_oom_report_t rep;
    cr_assert_eq(cca_last_oom_report(a, &rep), CCA_OK);
    cr_assert_eq(rep.n_holders, 3);
    cr_assert_eq(rep.holder_tags[0], big);
    cr_assert_eq(rep.holder_bytes[0], (size_t)30 << 20);
    cr_assert_eq(rep.holder_tags[1], small);
    cr_assert_eq(rep.holder_bytes[1], (size_t)6 << 20);
    cr_assert_eq(rep.holder_tags[2], 0u);
    cr_assert_eq(rep.holder_bytes[2], (size_t)2 << 20);
    char text[2048];
    cca_oom_report_format(&rep, text, sizeof text);
    ASSERT_HAS(text, "held by tag: big \"quoted\" part 30.00 MiB, small 6.00 MiB, (untagged) 2.00 MiB\n");
    ASSERT_HAS(cca_last_error_string(), "held by tag:");
    free_ok(a, p);
    free_ok(a, q);
    free_ok(a, u);
    finish(a);
}
