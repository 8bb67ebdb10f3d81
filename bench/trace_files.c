/* trace_files.c - see trace_files.h. */
#include "trace_files.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

typedef struct entry { char *path; long long size; } entry_t;

static int has_path(const trace_files_t *f, const char *path)
{
    for (size_t i = 0; i < f->n; i++)
        if (strcmp(f->paths[i], path) == 0)
            return 1;
    return 0;
}

static int push(trace_files_t *f, const char *path)
{
    if (has_path(f, path))
        return 0;
    char **p = realloc(f->paths, (f->n + 1) * sizeof *p);
    if (!p)
        return -1;
    f->paths = p;
    if (!(p[f->n] = strdup(path)))
        return -1;
    f->n++;
    return 0;
}

static int is_csv(const char *name)
{
    size_t n = strlen(name);
    return n > 4 && strcmp(name + n - 4, ".csv") == 0;
}

static int by_name(const void *a, const void *b)
{
    return strcmp(((const entry_t *)a)->path, ((const entry_t *)b)->path);
}

static int by_size(const void *a, const void *b)
{
    long long x = ((const entry_t *)a)->size, y = ((const entry_t *)b)->size;
    return x < y ? -1 : x > y ? 1 : by_name(a, b);
}

static size_t list_dir(DIR *d, const char *dir, entry_t **out)
{
    struct dirent *de;
    size_t n = 0, cap = 0;
    entry_t *e = NULL;
    while ((de = readdir(d)) != NULL) {
        struct stat st;
        char path[2048];
        if (!is_csv(de->d_name))
            continue;
        snprintf(path, sizeof path, "%s/%s", dir, de->d_name);
        if (stat(path, &st) != 0 || !S_ISREG(st.st_mode))
            continue;
        if (n == cap) {
            cap = cap ? cap * 2 : 64;
            entry_t *bigger = realloc(e, cap * sizeof *e);
            if (!bigger)
                break;
            e = bigger;
        }
        e[n].path = strdup(path);
        e[n].size = (long long)st.st_size;
        if (e[n].path)
            n++;
    }
    *out = e;
    return n;
}

static int add_dir(trace_files_t *f, const char *dir, size_t max_from_dir)
{
    DIR *d = opendir(dir);
    entry_t *e = NULL;
    if (!d)
        return -1;
    size_t n = list_dir(d, dir, &e);
    closedir(d);
    if (max_from_dir && n > max_from_dir) {           /* n > 0 here */
        qsort(e, n, sizeof *e, by_size);
        for (size_t i = max_from_dir; i < n; i++)
            free(e[i].path);
        n = max_from_dir;
    }
    if (n)                                            /* an empty folder: e is NULL, and qsort wants a buffer */
        qsort(e, n, sizeof *e, by_name);
    int r = 0;
    for (size_t i = 0; i < n; i++) {
        if (push(f, e[i].path) != 0)
            r = -1;
        free(e[i].path);
    }
    free(e);
    return r;
}

int trace_files_add(trace_files_t *f, const char *path, size_t max_from_dir)
{
    struct stat st;
    if (stat(path, &st) != 0)
        return -1;
    if (S_ISDIR(st.st_mode))
        return add_dir(f, path, max_from_dir);
    return push(f, path);
}

void trace_files_free(trace_files_t *f)
{
    for (size_t i = 0; i < f->n; i++)
        free(f->paths[i]);
    free(f->paths);
    f->paths = NULL;
    f->n = 0;
}
