/* summary.h - the run's answers first: see summary.c. */
#ifndef BENCH_SUMMARY_H
#define BENCH_SUMMARY_H

#include <stdio.h>

/* Prints the summary of the figures measured so far (results.h) and how
 * to read the tables. */
void summary_print(FILE *out);

#endif
