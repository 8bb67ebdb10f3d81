/* machine.h - what the figures were measured on, printed at the top. */
#ifndef BENCH_MACHINE_H
#define BENCH_MACHINE_H

#include "bench.h"

#include <stdio.h>

typedef struct machine {
    char date[40];
    char cpu[128];
    long nproc;
    const char *runtime;
} machine_t;

void machine_probe(machine_t *m);
void machine_print(FILE *f, const machine_t *m, const bench_opts_t *o);

#endif
