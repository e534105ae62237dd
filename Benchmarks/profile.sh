#!/bin/sh
# Instructions per frame of each scene, counted by valgrind's callgrind: repeatable on a busy
# machine, unlike times. Each work runs twice under callgrind (FEW and MANY frames after the
# first); (Ir(MANY) - Ir(FEW)) / (MANY - FEW) is the cost of one frame without start-up.
# With --annotate, the functions that take the most of the MANY run are listed too.
#
#   Benchmarks/profile.sh [--sizes 1920x1080,3840x2160] [--work clock,clock-theme,counter,paint] [--annotate] [--copy-path]
#
# --copy-path presents every frame by copying from the frame canvas, as before frames that
# repaint the whole screen were drawn straight into the display's buffer.
# Builds `kioskd-bench` in release with debug info into .build-profile (valgrind reads its
# DWARF; the ordinary release build is left alone) unless KIOSKD_BENCH points at a binary.
set -eu
cd "$(dirname "$0")/.."
sizes=1920x1080,3840x2160
works=clock,clock-theme,counter,paint
annotate=no
copy=
few=4
many=24
while [ $# -gt 0 ]; do
    case "$1" in
        --sizes) sizes=$2; shift 2 ;;
        --work) works=$2; shift 2 ;;
        --annotate) annotate=yes; shift ;;
        --copy-path) copy=--copy-path; shift ;;
        --frames) many=$2; shift 2 ;;
        *) echo "profile.sh: unknown option $1" >&2; exit 2 ;;
    esac
done
command -v valgrind >/dev/null || { echo "profile.sh: valgrind is not installed (apt-get install valgrind, scripts/apt-bench.txt)" >&2; exit 1; }
bench=${KIOSKD_BENCH:-}
if [ -z "$bench" ]; then
    swift build -c release --scratch-path .build-profile --product kioskd-bench \
        -Xswiftc -g -Xcc -g -Xlinker --compress-debug-sections=none >&2
    bench=.build-profile/release/kioskd-bench
fi
tmp=$(mktemp -d /tmp/kioskd-profile-XXXXXX)
trap 'rm -rf "$tmp"' EXIT

# Total instructions (Ir) of one callgrind run of WORK at SIZE with N frames.
count() {
    out="$tmp/$1-$2-$3.out"
    valgrind --tool=callgrind --callgrind-out-file="$out" "$bench" profile --work "$1" --size "$2" --frames "$3" $copy \
        >"$tmp/log" 2>&1 || { cat "$tmp/log" >&2; exit 1; }
    sed -n 's/^summary: *//p; s/^totals: *//p' "$out" | head -n 1
}

printf '%-12s %-10s %16s\n' work size "Ir per frame"
for size in $(echo "$sizes" | tr , ' '); do
    for work in $(echo "$works" | tr , ' '); do
        a=$(count "$work" "$size" "$few")
        b=$(count "$work" "$size" "$many")
        printf '%-12s %-10s %16d\n' "$work" "$size" $(( (b - a) / (many - few) ))
        if [ "$annotate" = yes ]; then
            callgrind_annotate --inclusive=no "$tmp/$work-$size-$many.out" 2>/dev/null | sed -n '/^-* *$/,$p' | head -n 30 | sed 's/^/    /'
        fi
    done
done
