/* oom_report.c - what cca says after an out-of-memory. On a 64 MiB simulated
 * device it allocates 30 blocks of 2 MiB, frees every other one (30 MiB
 * cached, in 2 MiB holes), asks for 6 MiB, and prints the OOM report the
 * callback received, the memory summary, and where the snapshot went.
 * Usage: oom_report [snapshot.json]   (default: cca_snapshot.json) */
#include <stdio.h>
#include "cca.h"
#include "cca_sim.h"

#define MiB ((size_t)1 << 20)

static size_t to_file(const char *data, size_t len, void *arg) { return fwrite(data, 1, len, arg); }

static void on_oom(const cca_oom_report_t *r, void *arg)
{
    (void)arg;
    char text[1024];
    cca_oom_report_format(r, text, sizeof text);
    fputs(text, stdout);
}

static int fail(const char *what, cca_status_t s)
{
    fprintf(stderr, "%s: %s (%s)\n", what, cca_status_string(s), cca_last_error_string());
    return 1;
}

int main(int argc, char **argv)
{
    const char *json = argc > 1 ? argv[1] : "cca_snapshot.json";
    cca_sim_set_capacity(0, 64 * MiB);
    cca_allocator_t *a;
    cca_status_t s = cca_create(NULL, &a);
    if (s != CCA_OK) return fail("cca_create", s);
    cca_set_oom_callback(a, on_oom, NULL);
    void *p[30];
    for (int i = 0; i < 30; i++)
        if ((s = cca_malloc(a, &p[i], 2 * MiB, NULL)) != CCA_OK) return fail("cca_malloc", s);
    for (int i = 0; i < 30; i += 2) cca_free(a, p[i]);
    printf("64 MiB device: 30 blocks of 2 MiB allocated, every other one freed\n");
    printf("cca_malloc(6 MiB); the OOM callback prints:\n");
    void *big;
    s = cca_malloc(a, &big, 6 * MiB, NULL);
    printf("cca_malloc returned %s\n\n", cca_status_string(s));
    cca_memory_summary(a, to_file, stdout);
    FILE *f = fopen(json, "w");
    if (!f || cca_snapshot_json(a, to_file, f) != CCA_OK || fclose(f) != 0) {
        fprintf(stderr, "cannot write %s\n", json);
        return 1;
    }
    printf("\nsnapshot (torch.cuda.memory_snapshot() layout): %s\n", json);
    for (int i = 1; i < 30; i += 2) cca_free(a, p[i]);
    cca_destroy(a);
    return 0;
}
