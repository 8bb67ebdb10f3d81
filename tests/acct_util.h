/* acct_util.h - helpers of the accounting suites: a growable text sink for
 * the write callbacks, and a write callback that fails. */
#ifndef CCA_ACCT_UTIL_H
#define CCA_ACCT_UTIL_H

#include <stdlib.h>
#include <string.h>
#include "common.h"

typedef struct sink { char *s; size_t n, cap; } sink_t;

static inline size_t sink_write(const char *data, size_t len, void *arg)
{
    sink_t *k = arg;
    if (k->n + len + 1 > k->cap) {
        k->cap = (k->n + len + 1) * 2;
        k->s = realloc(k->s, k->cap);
        cr_assert_not_null(k->s);
    }
    memcpy(k->s + k->n, data, len);
    k->n += len;
    k->s[k->n] = '\0';
    return len;
}

static inline size_t failing_write(const char *data, size_t len, void *arg)
{
    (void)data;
    (void)arg;
    return len / 2;
}

#define ASSERT_HAS(text, needle) cr_assert(strstr((text), (needle)) != NULL, "missing \"%s\" in:\n%s", (needle), (text))

#endif
