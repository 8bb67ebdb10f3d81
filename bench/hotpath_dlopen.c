/* hotpath_dlopen.c - alloc+free pairs through a shared library loaded with
 * dlopen, as frameworks load allocators: cca_malloc/cca_free from libcca,
 * or cca_torch_malloc/cca_torch_free from the hook library. No timing: run
 * it under callgrind at two counts and divide the difference
 * (scripts/instructions.sh). Usage: hotpath_dlopen LIB N [one|twelve] [cca|hooks] */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cca.h"

typedef cca_status_t (*default_fn)(int, cca_allocator_t **);
typedef cca_status_t (*malloc_fn)(cca_allocator_t *, void **, size_t, cudaStream_t);
typedef cca_status_t (*free_fn)(cca_allocator_t *, void *);
typedef void *(*torch_malloc_fn)(size_t, int, cudaStream_t);
typedef void (*torch_free_fn)(void *, size_t, int, cudaStream_t);

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: %s LIB N [one|twelve] [cca|hooks]\n", argv[0]);
        return 2;
    }
    long n = atol(argv[2]);
    int twelve = argc > 3 && !strcmp(argv[3], "twelve"), hooks = argc > 4 && !strcmp(argv[4], "hooks");
    void *h = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        fprintf(stderr, "dlopen: %s\n", dlerror());
        return 1;
    }
    size_t size[12];
    for (int i = 0; i < 12; i++) size[i] = twelve ? (size_t)512 << i : 4096;
    if (hooks) {
        torch_malloc_fn tm = (torch_malloc_fn)dlsym(h, "cca_torch_malloc");
        torch_free_fn tf = (torch_free_fn)dlsym(h, "cca_torch_free");
        if (!tm || !tf) return 1;
        for (long i = 0; i < n + 1000; i++) {
            void *p = tm(size[i % 12], 0, NULL);
            tf(p, size[i % 12], 0, NULL);
        }
        return 0;
    }
    default_fn df = (default_fn)dlsym(h, "cca_default");
    malloc_fn mf = (malloc_fn)dlsym(h, "cca_malloc");
    free_fn ff = (free_fn)dlsym(h, "cca_free");
    cca_allocator_t *a = NULL;
    if (!df || !mf || !ff || df(0, &a) != CCA_OK) return 1;
    for (long i = 0; i < n + 1000; i++) {         /* 1,000 warm-up pairs at either count */
        void *p = NULL;
        if (mf(a, &p, size[i % 12], NULL) != CCA_OK || ff(a, p) != CCA_OK) return 1;
    }
    return 0;
}
