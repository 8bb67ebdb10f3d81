/* fuzz_libfuzzer.c - the fuzz driver under libFuzzer (scripts/fuzz.sh). */
#include "fuzz_ops.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_run(data, size, 4000);
    return 0;
}
