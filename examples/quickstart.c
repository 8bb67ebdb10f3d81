/* quickstart.c - README's "Using cca", as a program: every status checked,
 * the reason printed. Builds against the real runtime (-Ddevice=cuda, or
 * cc quickstart.c $(pkg-config --cflags --libs cca)) and runs on the
 * simulated device in the tests. */
#include <stdio.h>
#include <cuda_runtime_api.h>
#include <cca.h>

#define CHECK(call)                                                                  \
    do {                                                                             \
        cca_status_t s_ = (call);                                                    \
        if (s_ != CCA_OK) {                                                          \
            fprintf(stderr, "%s: %s\n", cca_status_string(s_), cca_last_error_string()); \
            return 1;                                                                \
        }                                                                            \
    } while (0)

int main(void)
{
    cca_config_t cfg;
    cca_config_init(&cfg);                       /* PyTorch's rules, device 0 */
    char err[256];
    if (cca_config_parse(&cfg, "preset:lean,memory_limit_mb:40960", err, sizeof err) != CCA_OK) {
        fprintf(stderr, "%s\n", err);
        return 1;
    }
    cca_allocator_t *a;
    CHECK(cca_create(&cfg, &a));                 /* one allocator per device: no GPU, no driver say so here */

    cudaStream_t stream = NULL, other_stream = NULL;
    if (cudaStreamCreate(&other_stream) != cudaSuccess) {
        fprintf(stderr, "cudaStreamCreate failed\n");
        return 1;
    }
    void *p;
    cca_status_t s = cca_malloc(a, &p, 64 << 20, stream);
    if (s == CCA_ERROR_OUT_OF_MEMORY) {
        cca_oom_report_t r;
        char text[1024];
        CHECK(cca_last_oom_report(a, &r));
        cca_oom_report_format(&r, text, sizeof text);
        fputs(text, stderr);                     /* three lines: figures, verdict, advice */
        return 1;
    }
    CHECK(s);
    CHECK(cca_record_stream(a, p, other_stream));   /* p is also used on other_stream (any thread) */
    CHECK(cca_free(a, p));                       /* from any thread; reusable on `stream` at once,
                                                    elsewhere once other_stream's work is done */
    cca_stats_t st;
    CHECK(cca_get_stats(a, &st));
    printf("peak allocated %zu bytes, reserved %zu\n", (size_t)st.allocated_bytes[CCA_POOL_ALL].peak,
           (size_t)st.reserved_bytes[CCA_POOL_ALL].current);
    CHECK(cca_stream_retire(a, other_stream));   /* before cudaStreamDestroy */
    cudaStreamDestroy(other_stream);
    cca_destroy(a);                              /* everything back to the device */
    return 0;
}
