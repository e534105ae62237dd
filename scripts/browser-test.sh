#!/usr/bin/env bash
# The phone page in a real browser (Tests/browser/test_phone.py): Debian's chromium driven
# headless by Playwright from PyPI, in a venv kept at .build/browser-venv (no browser download).
#
#   scripts/browser-test.sh                 the test (kioskd and kioskctl from .build/debug)
#   scripts/browser-test.sh --screenshots   also rewrites docs/screenshots/web-*.png
#
# Needs the packages of scripts/apt-browser.txt (chromium, python3-venv), zbar-tools and a built
# kioskd and kioskctl (KIOSKD_BIN_DIR, default .build/debug).
set -euo pipefail
cd "$(dirname "$0")/.."
venv=.build/browser-venv
playwright_version="1.65.*"
chromium=${CHROMIUM:-/usr/bin/chromium}
[ -x "$chromium" ] || { echo "browser-test: no $chromium (apt-get install chromium, or set CHROMIUM)" >&2; exit 2; }
if ! "$venv/bin/python" -c 'import playwright' 2>/dev/null; then
    echo "browser-test: making $venv with Playwright $playwright_version"
    rm -rf "$venv"
    /usr/bin/python3 -m venv "$venv"
    PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 "$venv/bin/pip" install --quiet --disable-pip-version-check "playwright==$playwright_version"
fi
args=(--bin "${KIOSKD_BIN_DIR:-.build/debug}" --chromium "$chromium")
if [ "${1:-}" = "--screenshots" ]; then
    args+=(--screenshots docs/screenshots)
fi
exec "$venv/bin/python" Tests/browser/test_phone.py "${args[@]}"
