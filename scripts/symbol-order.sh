#!/usr/bin/env bash
# Writes scripts/kioskd-symbol-order.txt: the functions of the release kioskd that run from exec
# to the first frame and while it shows a clock, a counter or a painting, then stops on SIGTERM.
# The release link (Package.swift) passes the list to lld (--symbol-ordering-file), which puts
# these functions next to each other at the start of .text. The kernel maps an executable's pages
# around every page fault (fault-around, 64 KB), so code that runs at start-up and code that
# never runs no longer share pages: about 5 MB less resident memory for every scene
# (BENCHMARKS.md, "Start-up and memory").
#
# A stale list costs only memory, never correctness (lld skips names it does not find). Rerun it
# after large changes to the daemon or a new Swift toolchain:
#   swift build -c release --scratch-path .build-bench --product kioskd
#   scripts/symbol-order.sh [path/to/release/kioskd]
#   rm .build-bench/release/kioskd && swift build -c release --scratch-path .build-bench --product kioskd
# (SwiftPM does not see the list as an input of the link: removing the binary makes it relink.)
# Needs valgrind (callgrind), binutils (objcopy) and python3. Takes about a minute.
set -euo pipefail
cd "$(dirname "$0")/.."
kioskd="${1:-.build-bench/release/kioskd}"
out="scripts/kioskd-symbol-order.txt"
[ -x "$kioskd" ] || { echo "symbol-order.sh: no release kioskd at $kioskd (build it first, see the top of this script)" >&2; exit 1; }
command -v valgrind >/dev/null || { echo "symbol-order.sh: valgrind is missing (apt-get install valgrind)" >&2; exit 1; }

work=$(mktemp -d /tmp/k-order-XXXX)
trap 'rm -rf "$work"' EXIT
# valgrind cannot read the DWARF of the release build; the symbol table is enough.
objcopy --strip-debug "$kioskd" "$work/kioskd"

for kind in clock counter paint; do
    mkdir -p "$work/$kind/state"
    extra=""
    [ "$kind" = counter ] && extra="digits = 6"
    cat > "$work/$kind/kioskd.toml" <<EOF
theme = "dark"
state_dir = "$work/$kind/state"

[display]
backend = "headless"
headless_size = "1920x1080"

[control]
socket = "$work/$kind/c.sock"

[scenes]
order = ["$kind"]

[scene.$kind]
kind = "$kind"
$extra
EOF
    # Under valgrind the first frame takes a few seconds; then some idle ticks, then SIGTERM.
    NOTIFY_SOCKET= timeout -s TERM 20 valgrind --tool=callgrind --demangle=no --dump-instr=no \
        --compress-strings=no --compress-pos=no --callgrind-out-file="$work/$kind.out" \
        "$work/kioskd" --config "$work/$kind/kioskd.toml" --log-level warning >"$work/$kind.log" 2>&1 &
done
wait
for kind in clock counter paint; do
    # A run that drew no frame (bad config, state directory in use) would leave out the drawing.
    grep -q 'SceneManagerC16renderIfPossible' "$work/$kind.out" 2>/dev/null ||
        { echo "symbol-order.sh: the $kind run drew no frame; its log:" >&2; tail -20 "$work/$kind.log" >&2; exit 1; }
done

# Every function of the executable callgrind saw (as caller or callee), in order of appearance.
python3 - "$work/kioskd" "$work/clock.out" "$work/counter.out" "$work/paint.out" > "$out" <<'EOF'
import os, sys
exe, names, seen = os.path.realpath(sys.argv[1]), [], set()
for path in sys.argv[2:]:
    ob = cob = None
    for line in open(path, errors="replace"):
        if line.startswith("ob="):
            ob = line[3:].strip()
        elif line.startswith("cob="):
            cob = line[4:].strip()
        elif line.startswith(("fn=", "cfn=")):
            callee = line.startswith("cfn=")
            obj = (cob or ob) if callee else ob
            cob = None
            name = line.split("=", 1)[1].strip()
            # Skip what is not a symbol name: "(below main)", bare addresses.
            if obj and os.path.realpath(obj) == exe and name not in seen and not name.startswith(("(", "0x")):
                seen.add(name)
                names.append(name)
print("\n".join(names))
EOF
echo "symbol-order.sh: wrote $out ($(wc -l < "$out") functions)"
