/* scen_hooks.c - alloc+free pairs through the torch hook library
 * (cca_torch_malloc/cca_torch_free) against cca_malloc/cca_free, both from
 * shared libraries loaded with dlopen as frameworks load them; nanoseconds
 * per pair (instructions: scripts/instructions.sh). Both run on the
 * simulated device that libcca.so links, not the benchmark's own. */
#include "bench.h"
#include "clock.h"
#include "measure.h"
#include "report_table.h"

#include <dlfcn.h>
#include <stdio.h>
#include <string.h>
#include "cca.h"

#if defined(BENCH_LIBCCA) && defined(BENCH_HOOKS)
typedef cca_status_t (*default_fn)(int, cca_allocator_t **);
typedef cca_status_t (*malloc_fn)(cca_allocator_t *, void **, size_t, cudaStream_t);
typedef cca_status_t (*free_fn)(cca_allocator_t *, void *);
typedef void *(*tmalloc_fn)(size_t, int, cudaStream_t);
typedef void (*tfree_fn)(void *, size_t, int, cudaStream_t);

static struct { cca_allocator_t *a; malloc_fn m; free_fn f; tmalloc_fn tm; tfree_fn tf; int ok; } dl;

static int load(void)
{
    if (dl.ok) return dl.ok > 0;
    dl.ok = -1;
    void *lc = dlopen(BENCH_LIBCCA, RTLD_NOW | RTLD_LOCAL), *lh = dlopen(BENCH_HOOKS, RTLD_NOW | RTLD_LOCAL);
    if (!lc || !lh) return 0;
    default_fn df = (default_fn)dlsym(lc, "cca_default");
    dl.m = (malloc_fn)dlsym(lc, "cca_malloc");
    dl.f = (free_fn)dlsym(lc, "cca_free");
    dl.tm = (tmalloc_fn)dlsym(lh, "cca_torch_malloc");
    dl.tf = (tfree_fn)dlsym(lh, "cca_torch_free");
    if (!df || !dl.m || !dl.f || !dl.tm || !dl.tf || df(0, &dl.a) != CCA_OK) return 0;
    dl.ok = 1;
    return 1;
}

typedef struct hk_arg { int hooks; size_t size; } hk_arg_t;

static void run(const bench_alloc_t *a, void *arg, size_t iters, bench_sample_t *out)
{
    (void)a;
    const hk_arg_t *h = arg;
    bench_timer_t t;
    timer_start(&t);
    for (size_t i = 0; i < iters; i++) {
        if (h->hooks) {
            void *p = dl.tm(h->size, 0, NULL);
            dl.tf(p, h->size, 0, NULL);
        } else {
            void *p = NULL;
            if (dl.m(dl.a, &p, h->size, NULL) != CCA_OK || dl.f(dl.a, p) != CCA_OK) {
                sample_fail(out, "cca_malloc failed");
                return;
            }
        }
    }
    timer_stop(&t, (double)iters, out);
    out->have_calls = 0;
}

void scen_hooks(const bench_opts_t *o)
{
    printf("\n== hooks: alloc+free through libcca_hooks (torch's entry points) vs libcca, both dlopen'ed ==\n");
    if (!load()) {
        printf("  skipped: %s or %s did not load (%s)\n", BENCH_LIBCCA, BENCH_HOOKS, dlerror());
        return;
    }
    static const size_t sizes[] = { 512, 64u << 10, 4u << 20 };
    for (size_t s = 0; s < 3; s++) {
        hk_arg_t args[2] = { { 0, sizes[s] }, { 1, sizes[s] } };
        bench_alloc_t allocs[2] = { { .label = "cca_malloc", .is_cca = 1 }, { .label = "cca_torch_malloc" } };
        allocs[0].ops = allocs[1].ops = o->allocs[0].ops;
        void *argv[2] = { &args[0], &args[1] };
        bench_figure_t figs[2];
        bench_case_t c = { .scenario = "hooks", .unit = "ns/pair", .run = run, .calib_iters = 10000,
                           .max_iters = 20000000 };
        snprintf(c.name, sizeof c.name, "%zuB", sizes[s]);
        measure_variants(&c, allocs, argv, 2, o, figs);
        printf("  %-8s cca_malloc+cca_free %7.2f ns, cca_torch_malloc+cca_torch_free %7.2f ns (%.3fx)\n", c.name,
               figs[0].median, figs[1].median, figs[1].median / figs[0].median);
    }
}
#else
void scen_hooks(const bench_opts_t *o)
{
    (void)o;
    printf("\n== hooks ==\n  skipped: built without libcca.so and libcca_hooks.so\n");
}
#endif
