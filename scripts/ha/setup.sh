#!/usr/bin/env bash
# Builds (once) the Home Assistant root for scripts/ha/test.sh and prints its path on stdout:
#   a Debian forky amd64 root (mmdebstrap) with python3.14 and a venv /opt/ha holding
#   homeassistant==$HA_VERSION, installed with Home Assistant's own package_constraints.txt
#   (from the wheel) as constraints, plus the requirements of the integrations it sets up here
#   (mqtt's paho-mqtt, the frontend, …), so that `hass --skip-pip` fetches nothing.
#   Bytecode is compiled here: the tests mount the root read-only.
# Cached in $KIOSK_CI_CACHE/ha-root-KEY (default /var/cache/kioskd-ci), KEY = HA version and
# FORMAT; built in a temporary directory next to it and renamed into place, so it appears
# complete or not at all. Needs root, mmdebstrap (scripts/apt-ha.txt), deb.debian.org and PyPI.
#   scripts/ha/setup.sh          # the root's path; built first when missing
#   scripts/ha/setup.sh --key    # only the cache key
set -euo pipefail

HA_VERSION=${KIOSK_HA_VERSION:-2026.11.0}
FORMAT=3                      # raise when the root's contents change
SUITE=forky                   # python3.14 (Home Assistant 2026.x needs Python >= 3.14.2)
MIRROR=http://deb.debian.org/debian
PKGS="python3.14 python3.14-venv ca-certificates tzdata libjpeg62-turbo zlib1g libffi8 libssl3t64"
CACHE=${KIOSK_CI_CACHE:-/var/cache/kioskd-ci}
KEY="$HA_VERSION-f$FORMAT"
dest="$CACHE/ha-root-$KEY"

log() { printf 'ha-setup: %s\n' "$*" >&2; }
die() { printf 'ha-setup: ERROR: %s\n' "$*" >&2; exit 1; }

if [ "${1:-}" = "--key" ]; then echo "$KEY"; exit 0; fi
if [ -f "$dest/opt/ha/.complete" ]; then
    log "cached: $dest (0 s)"
    echo "$dest"; exit 0
fi

[ "$(id -u)" = 0 ] || die "building the root needs root (mmdebstrap, chroot)"
command -v mmdebstrap >/dev/null || die "mmdebstrap missing (apt-get install \$(cat scripts/apt-ha.txt))"
mkdir -p "$CACHE"
tmp=$(mktemp -d "$CACHE/.ha-root-build.XXXXXX")
cleanup() {
    for m in dev/pts dev proc; do mountpoint -q "$tmp/$m" && umount -l "$tmp/$m"; done
    rm -rf --one-file-system "$tmp"
}
trap cleanup EXIT
t0=$SECONDS
log "building $dest (mmdebstrap $SUITE amd64 + venv; a few minutes)"
# shellcheck disable=SC2086
nice mmdebstrap --variant=essential --mode=root --quiet \
    --aptopt='Acquire::Check-Valid-Until "false"' --aptopt='Acquire::Languages "none"' \
    --dpkgopt='path-exclude=/usr/share/doc/*' --dpkgopt='path-exclude=/usr/share/man/*' \
    --dpkgopt='path-exclude=/usr/share/locale/*' \
    --include="$(echo $PKGS | tr ' ' ',')" \
    "$SUITE" "$tmp" "$MIRROR" >&2 || die "mmdebstrap $SUITE failed (see above)"
t1=$SECONDS
log "root: $((t1 - t0)) s ($(chroot "$tmp" python3.14 -c 'import sys; print("Python", sys.version.split()[0])'))"

cp -L /etc/resolv.conf "$tmp/etc/resolv.conf"
# pip inside the root trusts the CA bundle pip uses here (PIP_CERT, REQUESTS_CA_BUNDLE, else
# the host's bundle: a proxy's CA may be in it) and goes through the same proxy, if any.
ca=${PIP_CERT:-${REQUESTS_CA_BUNDLE:-/etc/ssl/certs/ca-certificates.crt}}
pipenv=()
if [ -f "$ca" ]; then cp -L "$ca" "$tmp/etc/ha-setup-ca.crt"; pipenv+=(PIP_CERT=/etc/ha-setup-ca.crt SSL_CERT_FILE=/etc/ha-setup-ca.crt); fi
for v in http_proxy https_proxy no_proxy HTTP_PROXY HTTPS_PROXY NO_PROXY PIP_INDEX_URL; do
    [ -n "${!v:-}" ] && pipenv+=("$v=${!v}")
done
mount -t proc proc "$tmp/proc"
mount --bind /dev "$tmp/dev"
in_root() {
    nice chroot "$tmp" env -i PATH=/opt/ha/bin:/usr/bin:/bin HOME=/root LANG=C.UTF-8 \
        PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_DEFAULT_TIMEOUT=180 PIP_NO_CACHE_DIR=1 UV_NO_CACHE=1 UV_PYTHON_DOWNLOADS=never "${pipenv[@]}" "$@"
}
in_root python3.14 -m venv /opt/ha
mkdir -p "$tmp/opt/ha/wheel"
in_root pip download --quiet --no-deps --only-binary=:all: -d /opt/ha/wheel "homeassistant==$HA_VERSION" >&2 \
    || die "pip download homeassistant==$HA_VERSION failed"
in_root python3.14 -c '
import glob, zipfile
w = glob.glob("/opt/ha/wheel/homeassistant-*.whl")[0]
open("/opt/ha/package_constraints.txt", "wb").write(zipfile.ZipFile(w).read("homeassistant/package_constraints.txt"))'
# With uv (pinned by the constraints file; resolves and downloads in parallel, where pip's
# resolver backtracked for many minutes). pyric, a dependency of the bluetooth helpers, has no
# wheel and is built from its (pure Python) source.
in_root pip install --quiet --only-binary=:all: -c /opt/ha/package_constraints.txt uv >&2 \
    || die "pip install uv in the root failed (see above)"
in_root uv pip install --quiet --compile-bytecode --python /opt/ha/bin/python -c /opt/ha/package_constraints.txt \
    "/opt/ha/wheel/homeassistant-$HA_VERSION-py3-none-any.whl" >&2 \
    || die "uv pip install homeassistant in the root failed (see above)"
# `hass --skip-pip` installs nothing: the requirements of what Home Assistant sets up here are
# installed now, read from the manifests: the default integrations (frontend, …), mqtt, the
# integrations onboarding adds, and their dependencies and after_dependencies (mqtt's hassio).
in_root python - > "$tmp/opt/ha/requirements.txt" <<'EOF'
import json, pathlib
import homeassistant.bootstrap as b
import homeassistant.components as c
comp = pathlib.Path(c.__file__).parent
todo = set(b.DEFAULT_INTEGRATIONS) | set(b.CORE_INTEGRATIONS) | {
    "mqtt", "http", "api", "config", "onboarding", "google_translate", "met", "radio_browser", "shopping_list"}
seen, reqs = set(), set()
while todo:
    d = todo.pop()
    f = comp / d / "manifest.json"
    if d in seen or not f.exists():
        continue
    seen.add(d)
    m = json.loads(f.read_text())
    reqs.update(m.get("requirements", []))
    todo.update(m.get("dependencies", []) + m.get("after_dependencies", []))
print("\n".join(sorted(reqs)))
EOF
# One at a time, wheels only: a requirement without a wheel for Python 3.14 (pymicro-vad of
# assist_pipeline needs a C++ compiler) is skipped and named; its integration fails to set up,
# which the test does not need. mqtt's own requirements must install.
skipped=""
while read -r req; do
    in_root uv pip install --quiet --compile-bytecode --python /opt/ha/bin/python --only-binary :all: \
        -c /opt/ha/package_constraints.txt "$req" </dev/null >/dev/null 2>&1 || skipped="$skipped $req"
done < "$tmp/opt/ha/requirements.txt"
log "integration requirements: $(wc -l < "$tmp/opt/ha/requirements.txt"), skipped (no wheel):${skipped:- none}"
in_root python -c 'import paho.mqtt, aiohasupervisor, hass_frontend' \
    || die "the requirements of mqtt (paho-mqtt, hassio's aiohasupervisor) or of frontend are missing"
rm -rf "$tmp/opt/ha/wheel" "$tmp/etc/ha-setup-ca.crt"
in_root hass --version >&2 || die "hass does not run in the root"
t2=$SECONDS
log "venv: $((t2 - t1)) s"
umount -l "$tmp/dev" "$tmp/proc"
touch "$tmp/opt/ha/.complete"
if ! mv -T "$tmp" "$dest" 2>/dev/null; then
    [ -f "$dest/opt/ha/.complete" ] || die "could not rename $tmp to $dest"
    log "another run built $dest first"
fi
trap - EXIT
[ -d "$tmp" ] && rm -rf --one-file-system "$tmp"
# Roots of earlier keys (another Home Assistant version or FORMAT) are not used again.
for old in "$CACHE"/ha-root-*; do
    [ -d "$old" ] && [ "$old" != "$dest" ] && { log "removing old $old"; rm -rf --one-file-system "$old"; }
done
log "ready: $dest ($((SECONDS - t0)) s)"
echo "$dest"
