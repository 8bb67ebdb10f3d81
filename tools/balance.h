/* balance.h - the batch-size balance point (cca-replay --batch,
 * docs/replay.md): from recordings of the same step at two or more batch
 * sizes, the largest batch that fits a device under each configuration.
 *
 * The model, fitted on the first two recordings given:
 * - peak live bytes are linear in the batch: P(b) = a + s * b, through the
 *   two fitted recordings' peaks;
 * - a configuration's smallest device (the reserve included) at batch b is
 *   reserve + P(b) * r, r its ratio of smallest device less the reserve to
 *   peak live at the fitted recording nearer to b;
 * - with --accumulate K, a batch B runs as K micro-batches of B / K. An
 *   allocation whose size differs between the two fitted recordings is
 *   per-micro-batch (activations, inputs), one of the same size per-step
 *   (weights, gradients, optimizer state, workspaces): the recordings'
 *   allocations are paired in order where both have as many, else by size
 *   (a size both have is per-step). Peak live is then
 *   max(P(m), F + G + V(m)) for m = B / K: V(m) the per-micro-batch bytes at
 *   their last peak (linear in m, through the two recordings), F the
 *   per-step bytes live then, G the per-step bytes allocated after it and
 *   still live once the micro-batch's allocations are all freed (what is
 *   kept from one micro-batch to the next: gradients).
 * Recordings past the first two are held out: the fit's error on each is
 * reported. */
#ifndef CCA_BALANCE_H
#define CCA_BALANCE_H

#include <stdint.h>
#include <stdio.h>

#include "trace.h"

#define BALANCE_MAX_RECS 16

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
    uint64_t need_next;                  /* what the batch after the largest needs (a micro-batch step with K) */
    uint64_t held_pred[BALANCE_MAX_RECS], held_min[BALANCE_MAX_RECS];
} balance_conf_t;

typedef struct balance_out {
    double a, s;                         /* P(b) = a + s * b */
    double v0, v1;                       /* V(m) = v0 + v1 * m (accumulation) */
    uint64_t fixed_at_peak, kept;        /* F and G */
    size_t per_step, per_micro;          /* allocations of each kind (in the first recording) */
    int paired;                          /* 1: paired in order; 0: by size */
    balance_conf_t conf[16];
    char error[200];
} balance_out_t;

/* 0, or -1 with out->error set (the two fitted batches equal, or no device). */
int balance_fit(const balance_in_t *in, balance_out_t *out);
/* Predicted peak live at batch b (B with the accumulation, as fitted). */
double balance_peak(const balance_in_t *in, const balance_out_t *out, uint64_t b);
void balance_print(FILE *f, const balance_in_t *in, const balance_out_t *out);
/* Appends `, "balance": {...}` to a JSON object; jstr writes a string escaped. */
void balance_json(FILE *f, const balance_in_t *in, const balance_out_t *out, void (*jstr)(FILE *, const char *));

#endif
