/* trace_files.h - which trace files to replay: the *.csv files of the
 * default folder and of every --trace folder, and every --trace file. */
#ifndef BENCH_TRACE_FILES_H
#define BENCH_TRACE_FILES_H

#include <stddef.h>

typedef struct trace_files { char **paths; size_t n; } trace_files_t;

/* Adds the *.csv files of dir (sorted by name), or the file itself.
 * max_from_dir: keep only the that many smallest files of a folder (0: all).
 * 0, or -1 when path cannot be read. */
int  trace_files_add(trace_files_t *f, const char *path, size_t max_from_dir);
void trace_files_free(trace_files_t *f);

#endif
