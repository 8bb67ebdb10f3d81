/* fuzz_seeded.c - the fuzz driver on seeded operation sequences, as CI runs
 * it (under ASan+UBSan in the sanitizer build): seeds FIRST..LAST, STEPS
 * operations each. Usage: fuzz_seeded [FIRST LAST STEPS]   (default 1 200 2000)
 * A violation aborts with its seed (the run fails); otherwise it prints how
 * many seeds ran, each seed on its own line while stderr is a terminal. */
#include <unistd.h>

#include "fuzz_ops.h"

static uint64_t next(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

int main(int argc, char **argv)
{
    unsigned long first = argc > 3 ? strtoul(argv[1], NULL, 10) : 1, last = argc > 3 ? strtoul(argv[2], NULL, 10) : 200;
    unsigned long steps = argc > 3 ? strtoul(argv[3], NULL, 10) : 2000;
    size_t len = steps * 24;                          /* more bytes than the steps can read */
    uint8_t *buf = malloc(len);
    if (!buf) return 2;
    int tty = isatty(2);
    for (unsigned long seed = first; seed <= last; seed++) {
        uint64_t s = 0x9E3779B97F4A7C15ull * seed + 1;
        for (size_t i = 0; i < len; i++) buf[i] = (uint8_t)(next(&s) >> 32);
        if (tty) fprintf(stderr, "\rseed %lu", seed);
        fuzz_run(buf, len, steps);
    }
    if (tty) fprintf(stderr, "\n");
    free(buf);
    printf("seeds %lu..%lu, %lu steps each: no violation (one would have aborted with its seed)\n", first, last, steps);
    return 0;
}
