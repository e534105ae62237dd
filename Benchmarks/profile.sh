#!/bin/sh
# Instructions per frame of each scene, counted by valgrind's callgrind: repeatable on a busy
# machine, unlike times. Each work runs twice under callgrind (FEW and MANY frames after the
# first); (Ir(MANY) - Ir(FEW)) / (MANY - FEW) is the cost of one frame without start-up.
# "fill" is the floor: one solid cairo_paint of the whole frame.
# With --annotate, a third run collects only inside SceneManager.renderIfPossible (drawing and
# presenting the frames) and lists the functions that take the most of it.
#
#   Benchmarks/profile.sh [--sizes 1920x1080,3840x2160] [--work fill,clock,clock-theme,counter,paint] [--annotate] [--copy-path]
#
# --copy-path presents every frame by copying from the frame canvas, as before frames that
# repaint the whole screen were drawn straight into the display's buffer.
#
# Uses the release build of `kioskd-bench` in .build-bench (built if missing) unless
# KIOSKD_BENCH names a binary. valgrind 3.19 cannot read the DWARF 5 debug info the Swift
# toolchain links into it ("Possibly corrupted debuginfo file"), so it profiles a copy without
# debug info (`objcopy --strip-debug`): the symbol table stays, functions keep their names.
set -eu
cd "$(dirname "$0")/.."
sizes=1920x1080,3840x2160
works=fill,clock,clock-theme,counter,paint
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
bench=${KIOSKD_BENCH:-.build-bench/release/kioskd-bench}
if [ ! -x "$bench" ]; then
    swift build -c release --scratch-path .build-bench --product kioskd-bench >&2
fi
tmp=$(mktemp -d /tmp/kioskd-profile-XXXXXX)
trap 'rm -rf "$tmp"' EXIT
objcopy --strip-debug "$bench" "$tmp/kioskd-bench"
bench=$tmp/kioskd-bench

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
            out="$tmp/$work-$size-render.out"
            valgrind --tool=callgrind --toggle-collect='*renderIfPossible*' --callgrind-out-file="$out" \
                "$bench" profile --work "$work" --size "$size" --frames "$many" $copy >"$tmp/log" 2>&1 || { cat "$tmp/log" >&2; exit 1; }
            callgrind_annotate "$out" 2>/dev/null | awk '/file:function/ { on = 1; getline; next } on && NF' | head -n 12 \
                | sed 's/\[[^]]*\/\([^/]*\)\]$/[\1]/; s/^/    /' | cut -c1-150
        fi
    done
done
