#!/usr/bin/env bash
# Tests/fuzz/run.sh [SECONDS] [libFuzzer options...]
#
# Builds the libFuzzer target with clang (build-fuzz: the library instrumented with
# -fsanitize=fuzzer-no-link,address,undefined, the target with -fsanitize=fuzzer) and fuzzes for
# SECONDS (default 60). New inputs go to build-fuzz/fuzz-corpus (the committed seeds in
# Tests/fuzz/corpus are read, never written); crashes, timeouts and leaks are written to
# Tests/fuzz/crashes/ (not committed). Extra arguments go to libFuzzer, e.g.
#   Tests/fuzz/run.sh 600 -workers=1 -jobs=1
# Environment: CLANG (default: the clang next to `swift` on the PATH, else clang on the PATH), BUILD_FUZZ
# (default <repo>/build-fuzz).
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
secs=${1:-60}
shift || true

clang=${CLANG:-}
if [ -z "$clang" ]; then
    # The Swift toolchain's clang (it has libFuzzer), found next to `swift` on the PATH.
    swift_bin=$(command -v swift || true)
    if [ -n "$swift_bin" ] && [ -x "$(dirname "$(readlink -f "$swift_bin")")/clang" ]; then
        clang=$(dirname "$(readlink -f "$swift_bin")")/clang
    else
        clang=$(command -v clang || true)
    fi
fi
if [ -z "$clang" ] || [ ! -x "$clang" ]; then
    echo "run.sh: no clang found (set CLANG=/path/to/clang)" >&2
    exit 1
fi
build=${BUILD_FUZZ:-$root/build-fuzz}

# lld when it sits next to clang: the default gold linker warns about every instrumented
# local symbol ("Cannot export local symbol").
linker=()
if [ -x "$(dirname "$clang")/ld.lld" ] || command -v ld.lld >/dev/null 2>&1; then
    linker=(-DCMAKE_EXE_LINKER_FLAGS=-fuse-ld=lld)
fi

cmake -S "$root" -B "$build" -G Ninja \
    -DCMAKE_C_COMPILER="$clang" -DCMAKE_CXX_COMPILER="${clang}++" \
    -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DCQ_SANITIZE=fuzzer-no-link,address,undefined \
    -DCQ_BUILD_BENCH=OFF -DCQ_BUILD_EXAMPLES=OFF "${linker[@]}" >/dev/null
ninja -C "$build" fuzz_api

mkdir -p "$build/fuzz-corpus" "$here/crashes"
# halt_on_error: UBSan reports abort like every other finding; detect_leaks: LeakSanitizer runs
# when an input's mallocs and frees do not balance (libFuzzer's -detect_leaks).
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1:symbolize=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-halt_on_error=1:print_stacktrace=1}

set +e
"$build/Tests/fuzz/fuzz_api" \
    -max_total_time="$secs" -timeout=30 -rss_limit_mb=4096 -max_len=512 \
    -dict="$here/fuzz_api.dict" -artifact_prefix="$here/crashes/" -print_final_stats=1 \
    "$@" "$build/fuzz-corpus" "$here/corpus"
rc=$?
set -e
if [ $rc -ne 0 ]; then
    echo "run.sh: libFuzzer exited with $rc; reproducers in $here/crashes/:" >&2
    ls -l "$here/crashes/" >&2
    echo "replay one with: $build/Tests/fuzz/fuzz_api <file>  (CQ_FUZZ_TRACE=1 prints the program)" >&2
fi
exit $rc
