/* test_loadable.c - cca's shared libraries load into a process where
 * libgomp (torch bundles one) took the static TLS space first: dlopen
 * libgomp.so.1, then each library named on the command line, and check
 * that none of them is marked STATIC_TLS (initial-exec thread-locals). */
#include <dlfcn.h>
#include <elf.h>
#include <link.h>
#include <stdio.h>
#include <string.h>

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
    printf("%d passed, %d failed\n", passed, failed);
    return failed != 0;
}
