#!/usr/bin/env bash
# Fuzzes kioskd's parsers with libFuzzer (swiftc -sanitize=fuzzer, plus AddressSanitizer).
#
#   scripts/fuzz.sh TARGET [SECONDS | -runs=N] [libFuzzer options…]   one target (default 60 s)
#   scripts/fuzz.sh --ci [RUNS]          every target for RUNS executions (default 20000) with a fixed
#                                        seed (the same run every time), fails on a crash
#   scripts/fuzz.sh --build              only build
#   scripts/fuzz.sh --replay TARGET FILE…   run inputs once (e.g. a crash artifact)
#
# TARGET: config (TOML → DaemonConfig), theme (theme file → Theme), control (bytes on the control
# socket → NIO HTTP decoder → ControlRouter). Seeds: Fuzz/corpus/TARGET (read only); inputs the
# fuzzer finds go to .build-fuzz/corpus/TARGET, crashes to .build-fuzz/artifacts/TARGET/.
# Environment: KIOSK_FUZZ_ASAN=0 builds without AddressSanitizer; KIOSK_FUZZ_CONFIG=debug builds a
# debug binary into .build-fuzz-debug (quicker to build from nothing, slower to run: what CI uses);
# KIOSK_FUZZ_KEEP_GOING=1 keeps fuzzing after a crash (libFuzzer -fork=1 -ignore_crashes=1), collecting them.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH=/opt/swift/usr/bin:$PATH
CONFIG=${KIOSK_FUZZ_CONFIG:-release}
case "$CONFIG" in
    release) SCRATCH=.build-fuzz ;;
    debug) SCRATCH=.build-fuzz-debug ;;
    *) echo "fuzz: KIOSK_FUZZ_CONFIG must be release or debug, got '$CONFIG'" >&2; exit 64 ;;
esac
TARGETS=(config theme control)

build() {
    local san=fuzzer cflags=fuzzer-no-link
    if [[ "${KIOSK_FUZZ_ASAN:-1}" != 0 ]]; then san=fuzzer,address; cflags=fuzzer-no-link,address; fi
    echo "fuzz: building kiosk-fuzz ($CONFIG, -sanitize=$san) in $SCRATCH" >&2
    nice swift build -c "$CONFIG" --product kiosk-fuzz --scratch-path "$SCRATCH" \
        -Xswiftc -sanitize=$san -Xswiftc -DFUZZING -Xcc -fsanitize=$cflags -Xcxx -fsanitize=$cflags \
        2>&1 | grep -v -e "Cannot export local symbol" -e "prohibited flag" >&2
    test "${PIPESTATUS[0]}" = 0
}

binary() { echo "$SCRATCH/$CONFIG/kiosk-fuzz"; }

# Settings shared by every run.
export SWIFT_BACKTRACE=enable=no          # let libFuzzer report crashes (the Swift backtracer trips ASan)
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=0:allocator_may_return_null=1}

options() {
    case "$1" in
        config)  echo "-max_len=65536 -dict=Fuzz/dict/toml.dict" ;;
        theme)   echo "-max_len=16384 -dict=Fuzz/dict/toml.dict" ;;
        control) echo "-max_len=131072 -dict=Fuzz/dict/http.dict" ;;
        *) echo "fuzz: unknown target '$1' (targets: ${TARGETS[*]})" >&2; exit 64 ;;
    esac
}

# run TARGET [SECONDS | -runs=N] [options…]: prints "fuzz TARGET: N executions in S s (R exec/s)".
run() {
    local target=$1; shift
    local opts; opts=$(options "$target")
    local limit="-max_total_time=60"
    if [[ $# -gt 0 && "$1" =~ ^[0-9]+$ ]]; then limit="-max_total_time=$1"; shift
    elif [[ $# -gt 0 && "$1" == -runs=* ]]; then limit=$1; shift; fi
    mkdir -p "$SCRATCH/corpus/$target" "$SCRATCH/artifacts/$target"
    local log="$SCRATCH/artifacts/$target/last-run.log"
    touch "$log.start"
    local start=$SECONDS status=0 keep=""
    if [[ "${KIOSK_FUZZ_KEEP_GOING:-0}" != 0 ]]; then keep="-fork=1 -ignore_crashes=1 -ignore_timeouts=1 -ignore_ooms=1"; fi
    # shellcheck disable=SC2086
    nice "$(binary)" "$target" $opts $limit $keep -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
        -artifact_prefix="$SCRATCH/artifacts/$target/" "$@" "$SCRATCH/corpus/$target" "Fuzz/corpus/$target" \
        >"$log" 2>&1 || status=$?
    local runs secs
    runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
    [[ -n "$runs" ]] || runs=$(grep -o '^#[0-9]*' "$log" | tail -1 | tr -d '#')   # fork mode: the last status line
    secs=$((SECONDS - start))
    if [[ $status -ne 0 ]]; then
        grep -v "Cannot export" "$log" | tail -60 >&2
        echo "fuzz $target: FAILED (exit $status) after ${runs:-?} executions in $secs s; log $log, inputs in $SCRATCH/artifacts/$target/" >&2
        return 1
    fi
    local crashes; crashes=$(find "$SCRATCH/artifacts/$target" -name 'crash-*' -newer "$log.start" | wc -l)
    echo "fuzz $target: ${runs:-?} executions in $secs s ($(( ${runs:-0} / (secs > 0 ? secs : 1) )) exec/s), $crashes new crash inputs; corpus $(ls "$SCRATCH/corpus/$target" | wc -l) + $(ls "Fuzz/corpus/$target" | wc -l) seeds"
}

case "${1:-}" in
    --build) build ;;
    --ci)
        build
        failed=0
        # A fixed seed and run count from the seed corpus alone: the same binary gives the same run
        # every time, so CI passes or fails on the code, not on luck.
        rm -rf "$SCRATCH/corpus"
        for t in "${TARGETS[@]}"; do run "$t" "-runs=${2:-20000}" -seed=1 || failed=1; done
        exit $failed ;;
    --replay)
        shift; build
        t=$1; shift
        nice "$(binary)" "$t" $(options "$t") -runs=1 "$@" ;;
    config|theme|control)
        build
        run "$@" ;;
    *) sed -n '2,15p' "$0" >&2; exit 64 ;;
esac
