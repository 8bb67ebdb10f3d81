/* test_loadable.c - cca's shared libraries load into a process where
 * libgomp (torch bundles one) took the static TLS space first: dlopen
 * libgomp.so.1, then each library named on the command line, and check
 * that none of them is marked STATIC_TLS (initial-exec thread-locals).
 * Then, in fresh threads of this process (a thread-local's first use
 * allocates it, in a dlopen'ed library), libcca's first error text of each
 * thread is whole: with TLS descriptors, glibc before 2.40 clobbered the
 * vector registers across that first use (glibc bug 31372), and the text
 * "no CUDA driver or GPU found: ..." came out empty. */
#include <dlfcn.h>
#include <elf.h>
#include <link.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

typedef int (*current_device_fn)(int *);
typedef const char *(*text_fn)(void);
static current_device_fn current_device;
static text_fn last_error;
static char seen[256];

static void *first_error_of_a_thread(void *arg)
{
    (void)arg;
    int d = -1;
    int s = current_device(&d);                       /* this thread's first call into libcca */
    snprintf(seen, sizeof seen, "%d:%s", s, last_error());
    return NULL;
}

static int static_tls(void *h)
{
    struct link_map *m = NULL;
    if (dlinfo(h, RTLD_DI_LINKMAP, &m) != 0 || !m) return -1;
    for (const ElfW(Dyn) *d = m->l_ld; d->d_tag != DT_NULL; d++)
        if (d->d_tag == DT_FLAGS && (d->d_un.d_val & DF_STATIC_TLS)) return 1;
    return 0;
}

int main(int argc, char **argv)
{
    int passed = 0, failed = 0;
    void *gomp = dlopen("libgomp.so.1", RTLD_NOW | RTLD_GLOBAL);
    if (!gomp) printf("note: libgomp.so.1 not found (%s); loading cca alone\n", dlerror());
    for (int i = 1; i < argc; i++) {
        void *h = dlopen(argv[i], RTLD_NOW | RTLD_LOCAL);
        if (!h) {
            printf("FAIL %s: %s\n", argv[i], dlerror());
            failed++;
            continue;
        }
        int st = static_tls(h);
        if (st != 0) {
            printf("FAIL %s: %s\n", argv[i], st > 0 ? "marked STATIC_TLS" : "no link map");
            failed++;
        } else {
            printf("ok   %s loads after libgomp, no STATIC_TLS\n", argv[i]);
            passed++;
        }
    }
    void (*no_driver)(int) = (void (*)(int))dlsym(RTLD_DEFAULT, "cca_sim_set_no_driver");
    int checked = 0;
    for (int i = 1; i < argc; i++) {
        void *h = dlopen(argv[i], RTLD_NOW | RTLD_GLOBAL);
        current_device = h ? (current_device_fn)dlsym(h, "cca_current_device") : NULL;
        last_error = h ? (text_fn)dlsym(h, "cca_last_error_string") : NULL;
        if (!no_driver) no_driver = (void (*)(int))dlsym(RTLD_DEFAULT, "cca_sim_set_no_driver");
        if (!current_device || !last_error || !no_driver) continue;
        no_driver(1);
        int bad = 0;
        for (int t = 0; t < 4; t++) {
            pthread_t th;
            if (pthread_create(&th, NULL, first_error_of_a_thread, NULL) != 0 || pthread_join(th, NULL) != 0) {
                bad = 1;
                break;
            }
            static const char want[] = "5:no CUDA driver or GPU found (or a driver older than, or not matching, this "
                                       "CUDA runtime): cca_current_device: ";
            if (strncmp(seen, want, sizeof want - 1) != 0) {
                printf("FAIL %s: thread %d's first error text is \"%s\"\n", argv[i], t, seen);
                bad = 1;
                break;
            }
        }
        no_driver(0);
        if (bad) failed++;
        else {
            printf("ok   %s: each new thread's first error text is whole (\"%.60s...\")\n", argv[i], seen + 2);
            passed++;
            checked++;
        }
    }
    if (!checked) {
        printf("FAIL: no library gave cca_current_device and the simulator's cca_sim_set_no_driver: "
               "the first-error-text check did not run\n");
        failed++;
    }
    printf("%d passed, %d failed\n", passed, failed);
    return failed != 0;
}
