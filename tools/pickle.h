/* pickle.h - a restricted unpickler: reads Python pickles (protocols 0-5)
 * that hold plain data only, and refuses, before building anything, every
 * opcode that would call code or look a name up (GLOBAL, REDUCE, ...).
 *
 * Words: a *value* is one plain object (pk_value_t, opaque); a *load* owns
 * every value it built, in one arena, and pk_free on its root frees them
 * all at once. Values may be shared (the memo's GET pushes the same value
 * again) and even cyclic (a list may hold itself): walk them with a depth
 * limit, never free one alone.
 *
 * Kinds: None, bool, int (64-bit signed; larger ints are an error), float,
 * str (UTF-8, NUL-terminated; as Python's surrogatepass allows, it may hold
 * encoded surrogates), bytes (bytearray too), list, tuple, dict (insertion
 * order kept; a repeated key keeps its first place and its last value).
 * Sets and frozensets load as lists (of their elements, in pickle order),
 * so a frozenset cannot be a dict key here (Python allows it).
 * Python 3 writes bytes, bytearray and sets through REDUCE below protocols
 * 3, 5 and 4: such pickles are refused. */
#ifndef CCA_PICKLE_H
#define CCA_PICKLE_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum pk_kind {
    PK_NONE,
    PK_BOOL,
    PK_INT,
    PK_FLOAT,
    PK_STR,
    PK_BYTES,
    PK_LIST,                    /* list, set and frozenset */
    PK_TUPLE,
    PK_DICT,
} pk_kind_t;

typedef struct pk_value_s pk_value_t;

/* Loads the pickle in buf[0, len) into *out. 0, or -1 with *out NULL and a
 * message in err naming the byte offset ("refused: ..." for an opcode that
 * would run code, "truncated"/"corrupt pickle at byte N: ..." otherwise).
 * Bytes after STOP are ignored, as Python's pickle.loads ignores them. */
int pk_load(const void *buf, size_t len, pk_value_t **out, char *err, size_t errlen);

/* Frees everything the load that returned root built. root NULL: nothing. */
void pk_free(pk_value_t *root);

pk_kind_t pk_kind(const pk_value_t *v);
const char *pk_kind_name(pk_kind_t k);       /* "None", "int", "dict", ... */

/* Scalars: 0 and the value, or -1 (v NULL or of another kind). pk_int takes
 * ints only (not bools); pk_float takes floats and ints. */
int pk_int(const pk_value_t *v, int64_t *out);
int pk_float(const pk_value_t *v, double *out);
int pk_bool(const pk_value_t *v, int *out);

/* str: the NUL-terminated text, or NULL for another kind; *len (may be
 * NULL) gets its length in bytes (a str may hold NUL bytes itself). */
const char *pk_str(const pk_value_t *v, size_t *len);
/* bytes and bytearray: the bytes (NUL-terminated too), or NULL. */
const void *pk_bytes(const pk_value_t *v, size_t *len);

/* list and tuple (and set): the length, 0 for other kinds; the item, or
 * NULL past the end or for another kind. */
size_t pk_list_len(const pk_value_t *v);
const pk_value_t *pk_list_at(const pk_value_t *v, size_t i);

/* dict: the value under the str key, or NULL (absent, or d not a dict). */
const pk_value_t *pk_dict_get(const pk_value_t *d, const char *key);
/* dict entries in insertion order: the length (0 for other kinds), and the
 * i-th key and value (NULL past the end). */
size_t pk_dict_len(const pk_value_t *d);
const pk_value_t *pk_dict_key_at(const pk_value_t *d, size_t i);
const pk_value_t *pk_dict_value_at(const pk_value_t *d, size_t i);

#ifdef __cplusplus
}
#endif
#endif /* CCA_PICKLE_H */
