#!/usr/bin/env bash
# libFuzzer over the fuzz driver (tests/fuzz_ops.h): the allocator, the
# accounting and the simulated device built with clang and
# -fsanitize=fuzzer,address,undefined. Inputs that add coverage are kept in
# tests/fuzz-corpus/ (merged back there at the end). CI runs the same driver
# on fixed seeds instead (tests/fuzz_seeded.c) and needs none of this.
# Usage: scripts/fuzz.sh [SECONDS] [JOBS]   (default 60 seconds, 1 job)
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${1:-60}
jobs=${2:-1}
if ! command -v clang >/dev/null || ! ls /usr/lib/llvm-*/lib/clang/*/lib/linux/libclang_rt.fuzzer-x86_64.a >/dev/null 2>&1; then
    apt-get update -qq && apt-get install -y -qq clang libclang-rt-14-dev >/dev/null
fi
cuda=${CUDA_PATH:-/usr/local/cuda}
out=build-fuzz
mkdir -p "$out" tests/fuzz-corpus
flags="-std=c17 -O1 -g -D_GNU_SOURCE -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined"
flags="$flags -Iinclude -Icommon -Iallocator -Istats -Isim -I$cuda/include -fvisibility=hidden"
# shellcheck disable=SC2086
clang $flags -o "$out/fuzz_cca" tests/fuzz_libfuzzer.c allocator/*.c stats/*.c sim/*.c -lpthread -lm
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
par=()
[ "$jobs" -gt 1 ] && par=(-fork="$jobs")            # one job: the fuzzer's own log, in this process
corpus=$PWD/tests/fuzz-corpus
rc=0
(cd "$out" && ./fuzz_cca -max_total_time="$secs" "${par[@]}" -max_len=4096 -print_final_stats=1 \
    -artifact_prefix="$PWD/" "$work" "$corpus") > "$out/fuzz.log" 2>&1 || rc=$?
grep -E "^#[0-9]+ +(INITED|DONE)|stat::|ERROR|SUMMARY|artifact" "$out/fuzz.log" | tail -n 12
# a crash, a leak or a sanitizer report fails the run (libFuzzer exits non-zero; the log says which input)
if [ "$rc" != 0 ] || grep -qE "ERROR: (libFuzzer|AddressSanitizer|LeakSanitizer|UndefinedBehaviorSanitizer)|runtime error:" \
        "$out/fuzz.log"; then
    echo "fuzz: failed (exit $rc); see $out/fuzz.log and the artifact it names" >&2
    exit 1
fi
# keep only what adds coverage
(cd "$out" && ./fuzz_cca -merge=1 "$corpus" "$work" >/dev/null 2>&1) || true
echo "corpus: $(ls tests/fuzz-corpus | wc -l) inputs in tests/fuzz-corpus"
