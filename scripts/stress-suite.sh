#!/usr/bin/env bash
# The unit, daemon and process tests run N times in a row (default 20) with `stress-ng --cpu 2`
# loading every core beside them: a test that depends on the machine being quiet fails here.
# Prints one line per run (passed or failed, seconds, the slowest test) and, at the end, the
# tests slower than 10 s in any run. Exits 1 when a run failed; the failing run's output is kept
# in .build/stress-run-K.txt. Needs a debug build with tests (`swift build --build-tests`).
#   scripts/stress-suite.sh [N]
set -euo pipefail
cd "$(dirname "$0")/.."
runs="${1:-20}"
command -v stress-ng >/dev/null || { echo "stress-ng is not installed (apt-get install stress-ng)" >&2; exit 2; }
[ -x .build/debug/kioskd ] || { echo "build first: swift build --build-tests" >&2; exit 2; }
stress-ng --cpu 2 --quiet --timeout 0 &
load=$!
trap 'kill $load 2>/dev/null; wait $load 2>/dev/null || true' EXIT
failed=0
for k in $(seq 1 "$runs"); do
    out=".build/stress-run-$k.txt"
    start=$(date +%s)
    if KIOSK_SLOW_TESTS=1 swift test --skip-build --skip VMTests >"$out" 2>&1; then status=passed; else status=FAILED; failed=$((failed + 1)); fi
    slowest=$(python3 - "$out" <<'EOF'
import re, sys
times = [(float(t), n) for n, t in re.findall(r'✔ Test (\S+) passed after ([0-9.]+) seconds', open(sys.argv[1], errors='replace').read())]
times.sort(reverse=True)
print(f"{times[0][1]} {times[0][0]:.1f} s" if times else "-")
EOF
)
    echo "run $k/$runs: $status in $(( $(date +%s) - start )) s; slowest test: $slowest"
    if [ "$status" = FAILED ]; then grep -E '✘|error:' "$out" | head -8; else rm -f "$out"; fi
done
echo "$((runs - failed)) of $runs runs passed beside stress-ng --cpu 2"
[ "$failed" = 0 ]
