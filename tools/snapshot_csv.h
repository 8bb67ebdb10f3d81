/* snapshot_csv.h - PyTorch memory snapshots (the pickle that
 * torch.cuda.memory._dump_snapshot writes) as allocation traces in the CSV
 * layout of RMM's logging adaptor, one per device:
 *
 *   #cca-trace 1 device=0 source=torch-snapshot
 *   Thread,Time,Action,Pointer,Size,Stream
 *   0,00:00:00.000000,allocate,0x7f217a600000,2097152,0
 *
 * The blocks that were live before recording began come first, as
 * allocations at time 0 (see snapshot_csv.c for the rules). */
#ifndef CCA_SNAPSHOT_CSV_H
#define CCA_SNAPSHOT_CSV_H

#include <stddef.h>

#include "segmap.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct snapshot_csv {
    int device;                  /* the CUDA device index the rows belong to */
    char *csv;                   /* the whole file, NUL-terminated */
    size_t len;                  /* strlen(csv) */
    size_t events;               /* data rows, the preexisting ones included */
    size_t preexisting;          /* allocations at time 0 for blocks live before recording */
    size_t streams;              /* distinct Stream values among the rows */
    size_t ooms;                 /* "allocate failure" rows */
    int timed;                   /* 1: Time from time_us; 0: one microsecond per trace entry */
} snapshot_csv_t;

/* Converts the snapshot pickle in buf[0, len) into *n_out CSVs (*out, by
 * ascending device; one per device with a non-empty trace or a segment).
 * 0, or -1 with *out NULL, *n_out 0 and the reason in err (a refused or
 * corrupt pickle, or a pickle that is not a memory snapshot). */
int snapshot_csv_from_pickle(const void *buf, size_t len, snapshot_csv_t **out, size_t *n_out, char *err,
                             size_t errlen);

/* Frees what snapshot_csv_from_pickle returned; NULL is fine. */
void snapshot_csv_free(snapshot_csv_t *csvs, size_t n);

/* The segments of the snapshot pickle (a dict with a list of segments, as
 * torch.cuda.memory._snapshot() gives it) as one segment map per device,
 * by ascending device and, within one, in the pickle's order. 0, or -1
 * with *out NULL and the reason in err. */
int snapshot_segmaps_from_pickle(const void *buf, size_t len, svg_segmap_t **out, size_t *n_out, char *err,
                                 size_t errlen);
void snapshot_segmaps_free(svg_segmap_t *maps, size_t n);

/* 1 when buf starts as a pickle does (PROTO 0x80 and a protocol 0-5, or
 * the MARK, EMPTY_DICT, EMPTY_LIST or EMPTY_TUPLE that protocols 0 and 1
 * open with), 0 otherwise: tells a pickle from a CSV trace. */
int pickle_looks_like(const void *buf, size_t len);

#ifdef __cplusplus
}
#endif
#endif /* CCA_SNAPSHOT_CSV_H */
