#!/usr/bin/env bash
# Sets up what scripts/build-arm64.sh and scripts/arm64/tier1.sh need, cached between runs under
# $KIOSK_CI_CACHE (default /var/cache/kioskd-ci):
#   sid-swift-<key>/      Debian sid amd64 root with swiftlang 6.2 (the compiler), made by mmdebstrap
#   sysroot-arm64-<key>/  Debian 13 arm64 tree made by extracting packages (no emulation): the -dev
#                         packages kioskd links, their libraries, fonts, and sid's arm64 Swift
#                         runtime in usr/lib/swift{,_static} and usr/lib/clang; also the qemu-user root
#   apt/<suite>-<arch>/   private apt states used to resolve and download packages
# Each <key> is a hash of the package versions, so a new version builds a new tree. Trees are built
# in a temporary directory and renamed into place; older trees of the same kind are removed.
# Prints the paths as shell assignments on stdout (SID_ROOT=..., SYSROOT=..., SDK_FLAGS=...);
# progress goes to stderr. Must run as root.
set -euo pipefail

CACHE="${KIOSK_CI_CACHE:-/var/cache/kioskd-ci}"
MIRROR="${KIOSK_DEBIAN_MIRROR:-http://deb.debian.org/debian}"
KEYRING=/usr/share/keyrings/debian-archive-keyring.gpg
HERE="$(cd "$(dirname "$0")" && pwd)"

# Compiler root: swiftlang and what it needs to build kioskd natively too (libstdc++-N-dev is not a
# dependency of swiftlang but C++ targets and -static-stdlib need it; N is the gcc sid's clang picks).
SID_PKGS="swiftlang git ca-certificates pkg-config libstdc++-16-dev
 libcairo2-dev libpango1.0-dev libdrm-dev libinput-dev libudev-dev libsystemd-dev
 libmosquitto-dev libqrencode-dev libssl-dev libasound2-dev fonts-dejavu-core"
# arm64 sysroot (Debian 13): headers and libraries kioskd links, and its runtime files.
SYSROOT_PKGS="libc6-dev libstdc++-14-dev libgcc-14-dev linux-libc-dev
 libcairo2-dev libpango1.0-dev libdrm-dev libinput-dev libudev-dev libsystemd-dev
 libmosquitto-dev libqrencode-dev libssl-dev libasound2-dev zlib1g-dev
 libudev1 libsystemd0 libinput10 libdrm2 libcairo2 libpango-1.0-0 libpangocairo-1.0-0
 libmosquitto1 libqrencode4 libssl3t64 libasound2t64 libstdc++6 libgcc-s1
 fonts-dejavu-core fontconfig-config tzdata"
# sid's arm64 Swift runtime (extracted only; it cannot be installed on trixie).
SWIFT_ARM64_PKGS="swiftlang libswiftlang"

log() { printf 'toolchain: %s\n' "$*" >&2; }
die() { printf 'toolchain: ERROR: %s\n' "$*" >&2; exit 1; }
now() { date +%s; }

[ "$(id -u)" = 0 ] || die "must run as root (chroot, mmdebstrap)"
for t in mmdebstrap dpkg-deb apt-get sha256sum python3; do
    command -v "$t" >/dev/null || die "$t missing (apt packages: scripts/apt-arm64.txt)"
done
mkdir -p "$CACHE/apt"
# One setup at a time per cache (CI jobs and people share the machine).
exec 9>"$CACHE/.lock"
flock -w 1800 9 || die "another toolchain.sh holds $CACHE/.lock for 30 minutes"

# Private apt state for one suite and architecture; nothing on the host's apt is touched.
apt_dir() { echo "$CACHE/apt/$1-$2"; }
apt_opts() {  # suite arch
    local d; d="$(apt_dir "$1" "$2")"
    echo "-o Dir=$d -o Dir::State::status=$d/status -o Dir::Etc::trusted=$KEYRING -o Dir::Etc::TrustedParts=$d/trusted.d
 -o APT::Architecture=$2 -o APT::Architectures=$2 -o Acquire::Check-Valid-Until=false -o Acquire::Languages=none
 -o APT::Install-Recommends=false -o APT::Sandbox::User=root -o Debug::NoLocking=1 -o Dpkg::Use-Pty=0"
}
apt_update() {  # suite arch
    local d; d="$(apt_dir "$1" "$2")"
    mkdir -p "$d/etc/apt/apt.conf.d" "$d/etc/apt/preferences.d" "$d/trusted.d" "$d/var/lib/apt/lists/partial" "$d/var/cache/apt/archives/partial"
    touch "$d/status"
    echo "deb [signed-by=$KEYRING] $MIRROR $1 main" > "$d/etc/apt/sources.list"
    # shellcheck disable=SC2046
    if ! apt-get $(apt_opts "$1" "$2") -qq update >&2; then
        return 1
    fi
}
# "pkg=version" of the packages and everything they depend on, sorted (empty dpkg status).
apt_closure() {  # suite arch pkgs...
    local s="$1" a="$2"; shift 2
    # shellcheck disable=SC2046
    apt-get $(apt_opts "$s" "$a") -s install "$@" 2>/dev/null | awk '/^Inst /{gsub(/[()]/,"",$3); print $2"="$3}' | sort
}
key_of() { sha256sum | cut -c1-12; }

# Newest existing tree of a kind, for running without the network.
# shellcheck disable=SC2010
existing() { ls -dt "$CACHE/$1"-*/ 2>/dev/null | grep -v '\.tmp' | head -1 | sed 's:/$::'; }
prune() {  # kind keep-path
    local d
    for d in "$CACHE/$1"-*; do
        [ -e "$d" ] || continue
        [ "$d" = "$2" ] && continue
        log "removing old $d"; rm -rf --one-file-system "$d"
    done
}

T0=$(now)
# Package lists are refreshed when older than KIOSK_CI_APT_MAX_AGE minutes (default 60).
online=1
for sa in "sid amd64" "trixie arm64" "sid arm64"; do
    # shellcheck disable=SC2086
    d="$(apt_dir $sa)"
    if [ -n "$(find "$d/var/lib/apt/lists" -maxdepth 1 -name '*_InRelease' -mmin -"${KIOSK_CI_APT_MAX_AGE:-60}" 2>/dev/null)" ]; then
        continue
    fi
    # shellcheck disable=SC2086
    apt_update $sa || { online=0; log "apt update for $sa failed"; break; }
    touch "$d"/var/lib/apt/lists/*_InRelease
done
log "package lists: $(( $(now) - T0 )) s (online=$online)"
# Resolving the closures takes apt a while on a busy machine: each is kept per state of the
# package lists (their InRelease files) and the packages asked for.
lists_state="$(cat "$CACHE"/apt/*/var/lib/apt/lists/*_InRelease 2>/dev/null | key_of)"
closure() {  # name suite arch pkgs...
    local name="$1" k f; shift
    k="$( { echo "$lists_state"; echo "$*"; } | key_of)"
    f="$CACHE/apt/closure-$name-$k"
    if [ ! -s "$f" ]; then
        apt_closure "$@" > "$f.tmp" && mv "$f.tmp" "$f"
        find "$CACHE/apt" -maxdepth 1 -name "closure-$name-*" ! -name "closure-$name-$k" -delete
    fi
    cat "$f"
}

# ---------------------------------------------------------------- sid amd64 compiler root
t=$(now)
if [ "$online" = 1 ]; then
    # shellcheck disable=SC2086
    cl="$(closure sid sid amd64 $SID_PKGS)"
    [ -n "$cl" ] || die "cannot resolve sid amd64 packages: $SID_PKGS"
    key="$( { echo "$SID_PKGS"; grep -E '^(swiftlang|libswiftlang|libstdc\+\+-16-dev|libc6-dev|linux-libc-dev|git)=' <<<"$cl"; } | key_of)"
    SID_ROOT="$CACHE/sid-swift-$key"
else
    SID_ROOT="$(existing sid-swift)"; [ -n "$SID_ROOT" ] || die "offline and no cached sid root"
fi
if [ ! -L "$SID_ROOT/usr/bin/swift" ] && [ ! -e "$SID_ROOT/usr/bin/swift" ]; then
    tmp="$SID_ROOT.tmp"; rm -rf --one-file-system "$tmp"
    log "building $SID_ROOT (mmdebstrap sid, swiftlang; a few minutes)"
    # shellcheck disable=SC2086,SC2016
    mmdebstrap --variant=minbase --mode=root --quiet \
        --aptopt='Acquire::Check-Valid-Until "false"' --aptopt='Acquire::Languages "none"' \
        --dpkgopt='path-exclude=/usr/share/doc/*' --dpkgopt='path-exclude=/usr/share/man/*' \
        --dpkgopt='path-exclude=/usr/share/locale/*' \
        --include="$(echo $SID_PKGS | tr ' ' ',')" \
        --customize-hook='chroot "$1" apt-get clean' \
        sid "$tmp" "$MIRROR" >&2 || die "mmdebstrap sid failed (see above)"
    [ -L "$tmp/usr/bin/swift" ] || [ -e "$tmp/usr/bin/swift" ] || die "no usr/bin/swift in the sid root"
    mv "$tmp" "$SID_ROOT"
    log "sid root ready: $(( $(now) - t )) s"
    prune sid-swift "$SID_ROOT"
else
    log "sid root cached: $SID_ROOT"
fi

# ---------------------------------------------------------------- arm64 sysroot
t=$(now)
if [ "$online" = 1 ]; then
    # shellcheck disable=SC2086
    cl_t="$(closure sysroot trixie arm64 $SYSROOT_PKGS)"; [ -n "$cl_t" ] || die "cannot resolve trixie arm64 packages"
    # Only the Swift packages themselves: their dependencies are trixie's.
    # shellcheck disable=SC2086
    cl_s="$(closure swift sid arm64 $SWIFT_ARM64_PKGS | grep -E '^(swiftlang|libswiftlang)=' || true)"
    [ "$(wc -l <<<"$cl_s")" = 2 ] || die "cannot resolve sid arm64 swiftlang/libswiftlang"
    key="$( { cat "$HERE/fix-sysroot.py"; echo "$cl_t"; echo "$cl_s"; } | key_of)"
    SYSROOT="$CACHE/sysroot-arm64-$key"
else
    SYSROOT="$(existing sysroot-arm64)"; [ -n "$SYSROOT" ] || die "offline and no cached sysroot"
fi
if [ ! -f "$SYSROOT/.complete" ]; then
    tmp="$SYSROOT.tmp"; rm -rf --one-file-system "$tmp"; mkdir -p "$tmp"
    log "building $SYSROOT (download and extract $(wc -l <<<"$cl_t") trixie arm64 packages + sid Swift runtime)"
    for sa in "trixie arm64" "sid arm64"; do
        # shellcheck disable=SC2086
        rm -f "$(apt_dir $sa)"/var/cache/apt/archives/*.deb
    done
    # shellcheck disable=SC2046,SC2086
    apt-get $(apt_opts trixie arm64) -qq --download-only install $SYSROOT_PKGS >&2 || die "download of trixie arm64 packages failed"
    # shellcheck disable=SC2046,SC2086
    (cd "$(apt_dir sid arm64)/var/cache/apt/archives" && apt-get $(apt_opts sid arm64) -qq download $SWIFT_ARM64_PKGS >&2) \
        || die "download of sid arm64 swiftlang failed"
    log "downloaded: $(( $(now) - t )) s"
    for deb in "$(apt_dir trixie arm64)"/var/cache/apt/archives/*.deb; do
        dpkg-deb -x "$deb" "$tmp" || die "cannot extract $deb"
    done
    # Of the Swift packages only the runtime (not the arm64 compiler).
    rm -rf --one-file-system "$tmp.swift"; mkdir -p "$tmp.swift"
    for deb in "$(apt_dir sid arm64)"/var/cache/apt/archives/*.deb; do
        dpkg-deb --fsys-tarfile "$deb" | tar -x -C "$tmp.swift" --wildcards './usr/libexec/swift/lib/*' \
            || die "cannot extract $deb"
    done
    python3 "$HERE/fix-sysroot.py" "$tmp" "$tmp.swift" >&2 || die "fix-sysroot failed"
    rm -rf --one-file-system "$tmp.swift"
    for sa in "trixie arm64" "sid arm64"; do
        # shellcheck disable=SC2086
        rm -f "$(apt_dir $sa)"/var/cache/apt/archives/*.deb
    done
    { echo "$cl_t"; echo "$cl_s"; } > "$tmp/.packages"
    touch "$tmp/.complete"
    mv "$tmp" "$SYSROOT"
    log "sysroot ready: $(( $(now) - t )) s"
    prune sysroot-arm64 "$SYSROOT"
else
    log "sysroot cached: $SYSROOT"
fi

log "total: $(( $(now) - T0 )) s"
echo "SID_ROOT=$SID_ROOT"
echo "SYSROOT=$SYSROOT"
