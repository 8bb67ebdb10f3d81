/* balance.h - the batch-size balance point (cca-replay --batch,
 * docs/replay.md): from recordings of the same step at two or more batch
 * sizes, the largest batch that fits a device under each configuration.
 *
 * Fitted on the first two recordings given (b0, b1):
 * - peak live bytes, reported as linear in the batch: P(b) = a + s * b
 *   through the two recordings' peaks;
 * - the allocations told apart: one whose size differs between the two
 *   recordings is per-micro-batch (activations, inputs), one of the same
 *   size per-step (weights, gradients, optimizer state, workspaces). Where
 *   both recordings make as many allocations they are paired in order
 *   (else by size: a size both have is per-step);
 * - paired, the step at any batch b is made from the first recording with
 *   each per-micro-batch size moved along the line through its two
 *   recorded sizes (balance_synth), and replayed: its peak live and its
 *   smallest device under each configuration are replays, not estimates.
 *   Not paired, the smallest device is reserve + P(b) * r, r the
 *   configuration's ratio of smallest device less the reserve to peak live
 *   at the recording nearer to b;
 * - with --accumulate K, a batch B runs as K micro-batches of B / K: each
 *   micro-batch window of the recording (its events from a per-micro-batch
 *   allocation until the per-micro-batch bytes are back at their floor) is
 *   made K times; what a window makes and keeps (gradients) is made once,
 *   and in the later micro-batches made again as a temporary (the gradient
 *   added into the kept one) freed with the first per-micro-batch
 *   allocation made before it that is freed after it (an input its
 *   backward step saved), else at the window's end; what a window makes
 *   and frees (workspaces, activations) is made again;
 * - a made step leaves out the recording's refused requests ("allocate
 *   failure"); the largest batch is searched by doubling then halving, a
 *   replay per try, up to BALANCE_MAX_BATCH ("any" where it still fits
 *   there); margins are as fine as the smallest-device search (1 MiB or
 *   0.05%).
 * Recordings past the first two are held out: recordings of what the
 * model predicts (with --accumulate, of accumulating runs), on which the
 * fit's error is reported. */
#ifndef CCA_BALANCE_H
#define CCA_BALANCE_H

#include <stdint.h>
#include <stdio.h>

#include "trace.h"

#define BALANCE_MAX_RECS 16
#define BALANCE_MAX_BATCH ((uint64_t)1 << 40)   /* batches and the search stay below it */

typedef struct balance_in {
    int n_recs;                          /* at least 2 */
    uint64_t batch[BALANCE_MAX_RECS];
    const trace_t *trace[BALANCE_MAX_RECS];
    int n_confs;
    const char *label[16];
    uint64_t min_device[16][BALANCE_MAX_RECS];   /* 0: fits on no device */
    uint64_t device, reserve;
    unsigned accumulate;                 /* K; 1: none */
} balance_in_t;

typedef struct balance_conf {
    double ratio[2];                     /* at the two fitted recordings */
    uint64_t largest;                    /* the largest batch that fits; 0: none; UINT64_MAX: every batch */
    int64_t margin;                      /* device less what the largest batch needs */
    uint64_t need_next;                  /* what the batch after the largest needs (K more with --accumulate) */
    uint64_t held_peak[BALANCE_MAX_RECS], held_pred[BALANCE_MAX_RECS], held_min[BALANCE_MAX_RECS];
    char error[300];                     /* a replay of a made step failed */
} balance_conf_t;

typedef struct balance_out {
    double a, s;                         /* P(b) = a + s * b */
    int paired;                          /* 1: paired in order, and predictions are replays of made steps */
    size_t per_step, per_micro;          /* allocations of each kind in the first recording */
    size_t windows;                      /* micro-batch windows in it */
    uint64_t kept;                       /* the most per-step bytes one window keeps (gradients) */
    unsigned char *kind;                 /* per allocation of the first recording */
    int64_t *delta;                      /* paired: per allocation, second size less first */
    balance_conf_t conf[16];
    char error[200];
} balance_out_t;

/* The fit and the allocations told apart; not paired, also the ratio
 * model's predictions. 0, or -1 with out->error set (the two fitted
 * batches equal, no device, out of memory). balance_free frees it. */
int balance_fit(const balance_in_t *in, balance_out_t *out);
void balance_free(balance_out_t *out);
/* Paired: the step at batch b (b / K per micro-batch with --accumulate K)
 * as a trace, named after the first recording. 0, or -1 out of memory. */
int balance_synth(const balance_in_t *in, const balance_out_t *out, uint64_t b, trace_t *t);
void balance_print(FILE *f, const balance_in_t *in, const balance_out_t *out);
/* Appends `, "balance": {...}` to a JSON object; jstr writes a string escaped. */
void balance_json(FILE *f, const balance_in_t *in, const balance_out_t *out, void (*jstr)(FILE *, const char *));

#endif
