/* fuzz_corpus.c - replays the libFuzzer corpus (tests/fuzz-corpus, what
 * scripts/fuzz.sh kept for its coverage) through the fuzz driver, as
 * libFuzzer would run each input: a violation aborts with the input's name
 * on stderr. Usage: fuzz_corpus DIR */
#include <dirent.h>
#include <stdio.h>
#include <string.h>

#include "fuzz_ops.h"

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: fuzz_corpus DIR\n");
        return 2;
    }
    DIR *d = opendir(argv[1]);
    if (!d) {
        fprintf(stderr, "fuzz_corpus: cannot open %s\n", argv[1]);
        return 2;
    }
    static uint8_t buf[1 << 16];
    unsigned long n = 0;
    char path[4096];
    for (struct dirent *e; (e = readdir(d));) {
        if (e->d_name[0] == '.') continue;
        snprintf(path, sizeof path, "%s/%s", argv[1], e->d_name);
        FILE *f = fopen(path, "rb");
        if (!f) {
            fprintf(stderr, "fuzz_corpus: cannot read %s\n", path);
            closedir(d);
            return 1;
        }
        size_t len = fread(buf, 1, sizeof buf, f);
        fclose(f);
        fprintf(stderr, "%s\n", e->d_name);           /* the input a violation's abort follows */
        fuzz_run(buf, len, 4000);
        n++;
    }
    closedir(d);
    if (n == 0) {
        fprintf(stderr, "fuzz_corpus: %s holds no input\n", argv[1]);
        return 1;
    }
    printf("%lu corpus inputs replayed: no violation\n", n);
    return 0;
}
