/* torch_peer_check.c - the torch peer records a stream use as torch does
 * (bench/peers/torch_peer.cpp): a block freed while a use on a held stream
 * is pending is not handed out again until that stream's work is done; and
 * without the recorded use it would be (so the check can tell). Run by the
 * frameworks tier (python/tests/frameworks/test_bench_torch.py) under
 * scripts/torch-sim. Prints one line per check; exit 0 when all hold. */
#include "torch_peer.h"

#include <cca_sim.h>
#include <stdio.h>

static int fails;

static void check(int ok, const char *what)
{
    printf("%s %s\n", ok ? "ok  " : "FAIL", what);
    fails += !ok;
}

int main(void)
{
    char err[256] = "";
    if (torch_peer_create(0, err, sizeof err) != 0) {
        printf("FAIL torch_peer_create: %s\n", err);
        return 1;
    }
    cudaStream_t side;
    if (cudaStreamCreateWithFlags(&side, cudaStreamNonBlocking) != cudaSuccess) {
        printf("FAIL cudaStreamCreate\n");
        return 1;
    }
    const size_t size = 3u << 20;
    void *p = NULL, *q = NULL, *r = NULL;
    check(torch_peer_malloc(&p, size, NULL, err, sizeof err) == 0 && p, "a block on the default stream");
    torch_peer_free(p, err, sizeof err);
    check(torch_peer_malloc(&q, size, NULL, err, sizeof err) == 0 && q == p, "without a recorded use, freed and taken again at once");
    cca_sim_stream_hold(side);
    check(torch_peer_record_stream(q, side, err, sizeof err) == 0, "recordStream on the held side stream");
    torch_peer_free(q, err, sizeof err);
    check(torch_peer_malloc(&r, size, NULL, err, sizeof err) == 0 && r && r != q,
          "while the side stream's work is pending, the block is not handed out");
    cca_sim_stream_release(side);
    void *s = NULL;
    check(torch_peer_malloc(&s, size, NULL, err, sizeof err) == 0 && s == q, "once it is done, the block comes back");
    torch_peer_free(r, err, sizeof err);
    torch_peer_free(s, err, sizeof err);
    cudaStreamDestroy(side);
    torch_peer_destroy();
    check(torch_peer_reserved() == 0, "empty after the cache is emptied");
    printf("torch %s: %d failed\n", torch_peer_version(), fails);
    return fails != 0;
}
