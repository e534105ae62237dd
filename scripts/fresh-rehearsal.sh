#!/usr/bin/env bash
# A fresh machine, rehearsed: a clean Debian 12 (bookworm) root made by mmdebstrap with no
# package of the project in it, this machine's Swift toolchain (/opt/swift) and its local Swift
# package mirror (the directories git's system config redirects github.com to) bound in
# read-only, the repository's committed HEAD cloned into it, and the README's two commands run
# there as a new user would: `bash scripts/demo.sh`, then `bash scripts/test.sh`. Nothing of the
# project's caches comes in: /var/cache/kioskd-ci inside the root starts empty (cold caches).
#
#   scripts/fresh-rehearsal.sh            the README's two commands (over an hour on 2 cores)
#   scripts/fresh-rehearsal.sh --quick    only scripts/setup.sh and scripts/preflight.sh (a few
#                                         minutes): proves that setup installs everything
#                                         preflight checks
#   --keep                                keep the root afterwards (its path is printed)
#
# Runs as root (mmdebstrap, chroot, mounts). The bare root is cached as a tarball in
# $KIOSK_CI_CACHE (default /var/cache/kioskd-ci), fresh-bookworm-f<FORMAT>-<variant>-<date>.tar:
# one a day, so the packages are the archive's of that day. Each run unpacks it into a new
# directory under $KIOSK_REHEARSAL_DIR (default /var/tmp) and deletes it at the end. Every mount
# lives in a private mount and PID namespace: when the run ends, however it ends, the mounts and
# every process started inside are gone. Prints each step's time; the log is also written to
# out/fresh-rehearsal.log. Exits with the failing command's status.
# Environment: KIOSK_REHEARSAL_VARIANT (mmdebstrap variant, default minbase: the fewest packages,
# so nothing the project needs can be there by chance), KIOSK_SWIFT_DIR (default /opt/swift),
# KIOSK_DEBIAN_MIRROR. The other KIOSK_* variables (KIOSK_ARM64=0, …) are passed to the commands
# in the root.
set -euo pipefail
cd "$(dirname "$0")/.."
checkout=$PWD

quick=0 keep=0
for a in "$@"; do
    case "$a" in
        --quick) quick=1 ;;
        --keep) keep=1 ;;
        *) echo "usage: scripts/fresh-rehearsal.sh [--quick] [--keep]" >&2; exit 2 ;;
    esac
done

log() { printf 'fresh-rehearsal: %s\n' "$*" >&2; }
die() { printf 'fresh-rehearsal: ERROR: %s\n' "$*" >&2; exit 1; }

[ "$(id -u)" = 0 ] || die "needs root (mmdebstrap, chroot, mount namespaces)"
for t in mmdebstrap git unshare chroot tar mount; do
    command -v "$t" >/dev/null || die "$t missing (apt-get install mmdebstrap git util-linux tar mount)"
done
swift_dir=${KIOSK_SWIFT_DIR:-/opt/swift}
[ -x "$swift_dir/usr/bin/swift" ] || die "no Swift toolchain at $swift_dir/usr/bin/swift (set KIOSK_SWIFT_DIR)"

SUITE=bookworm
FORMAT=1   # raise when the way the bare root is made changes
VARIANT=${KIOSK_REHEARSAL_VARIANT:-minbase}
MIRROR=${KIOSK_DEBIAN_MIRROR:-http://deb.debian.org/debian}
CACHE=${KIOSK_CI_CACHE:-/var/cache/kioskd-ci}
head=$(git rev-parse HEAD)
if ! git diff --quiet HEAD 2>/dev/null; then
    log "note: uncommitted changes are not rehearsed (the root gets a clone of HEAD $(git rev-parse --short HEAD))"
fi

mkdir -p out
exec > >(tee out/fresh-rehearsal.log) 2>&1
T0=$SECONDS
step_t=$SECONDS
step() { log "$1: $((SECONDS - step_t)) s (total $((SECONDS - T0)) s)"; step_t=$SECONDS; }

# ------------------------------------------------------------------ the bare root (cached a day)
mkdir -p "$CACHE"
bare="$CACHE/fresh-$SUITE-f$FORMAT-$VARIANT-$(date -u +%Y%m%d).tar"
exec 8> "$CACHE/.fresh-root.lock"
flock 8
if [ ! -s "$bare" ]; then
    log "making $bare (mmdebstrap $SUITE, variant $VARIANT)"
    # The archive, its updates and security suites, as on an installed machine.
    mmdebstrap --variant="$VARIANT" --mode=root --format=tar --quiet \
        --aptopt='Acquire::Languages "none"' \
        "$SUITE" "$bare.tmp" \
        "deb $MIRROR $SUITE main" "deb $MIRROR $SUITE-updates main" \
        "deb ${MIRROR%/debian}/debian-security $SUITE-security main" \
        || die "mmdebstrap $SUITE failed (see above)"
    mv "$bare.tmp" "$bare"
    for old in "$CACHE"/fresh-"$SUITE"-f*-"$VARIANT"-*.tar; do
        [ "$old" != "$bare" ] && [ -f "$old" ] && { log "removing old $old"; rm -f "$old"; }
    done
fi
flock -u 8
step "bare root $(basename "$bare") ($(du -h "$bare" | cut -f1))"

# ------------------------------------------------------------------ this run's root
base=${KIOSK_REHEARSAL_DIR:-/var/tmp}
mkdir -p "$base"
work=$(mktemp -d "$base/kioskd-rehearsal.XXXXXX")
root=$work/root
ns_pid=
# shellcheck disable=SC2317 # run by the EXIT trap
cleanup() {
    local rc=$?
    [ -n "$ns_pid" ] && kill -TERM "$ns_pid" 2>/dev/null && wait "$ns_pid" 2>/dev/null
    if [ "$keep" = 1 ]; then
        log "kept the root: $root"
    else
        # The mounts were made in the run's own mount namespace: here the root is plain files.
        rm -rf --one-file-system "$work"
    fi
    exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
mkdir -p "$root"
tar -xf "$bare" -C "$root"

# This machine's network settings, as a fresh machine on this network would have them: the
# resolver, proxies, and local certificate authorities (picked up by ca-certificates when setup
# installs it) with pip's configuration.
cp -L /etc/resolv.conf "$root/etc/resolv.conf"
if [ -d /usr/local/share/ca-certificates ]; then
    mkdir -p "$root/usr/local/share/ca-certificates"
    cp -rL /usr/local/share/ca-certificates/. "$root/usr/local/share/ca-certificates/"
fi
[ -f /etc/pip.conf ] && cp -L /etc/pip.conf "$root/etc/pip.conf"
[ -d /etc/apt/apt.conf.d ] && for f in /etc/apt/apt.conf.d/*proxy*; do [ -f "$f" ] && cp -L "$f" "$root/etc/apt/apt.conf.d/"; done

# git's redirection of github.com to the local package mirror (SwiftPM fetches through git):
# the url.<dir>.insteadOf lines of the system config, and those directories bound read-only.
binds=("$swift_dir")
: > "$root/etc/gitconfig"
while read -r key value; do
    dir=$(sed -E 's/^url\.(.*)\.insteadof$/\1/I' <<<"$key")
    case "$dir" in /*) ;; *) continue ;; esac
    [ -d "$dir" ] || continue
    git config --file "$root/etc/gitconfig" --add "url.$dir.insteadOf" "$value"
    printf '%s\n' "${binds[@]}" | grep -qxF "$dir" || binds+=("$dir")
done < <(git config --system --get-regexp '^url\..*\.insteadof$' 2>/dev/null || true)

git clone --quiet --no-hardlinks "$checkout" "$root/root/kioskd"
git -C "$root/root/kioskd" checkout --quiet --detach "$head"
step "root unpacked in $root, HEAD $(git rev-parse --short "$head") cloned to /root/kioskd"

if [ "$quick" = 1 ]; then
    commands='bash scripts/setup.sh && bash scripts/preflight.sh'
else
    commands='bash scripts/demo.sh && bash scripts/test.sh'
fi
# The caller's KIOSK_* settings for test.sh (not the rehearsal's own, nor host paths).
passed=()
while IFS='=' read -r name _; do
    case "$name" in KIOSK_REHEARSAL_*|KIOSK_SWIFT_DIR|KIOSK_CI_CACHE) continue ;; esac
    passed+=("$name=${!name}")
done < <(env | grep -E '^KIOSK_[A-Z0-9_]*=' || true)
# The host's /dev is bound in: demo.sh must not take a display the host may have.
printf '%s\n' "${passed[@]}" | grep -q '^KIOSK_HEADLESS=' || passed+=(KIOSK_HEADLESS=1)
log "running in the root: ${passed[*]} $commands"

# The run: a mount and PID namespace of its own (when its first process ends, the kernel ends
# every process left in it and drops every mount), /proc, /sys, /dev and a tmpfs /run and
# /dev/shm, the toolchain and the package mirror read-only at their own paths.
# shellcheck disable=SC2016 # the inner script expands its own arguments
unshare --mount --pid --fork --propagation private bash -euo pipefail -c '
root=$1 commands=$2 npassed=$3; shift 3
passed=("${@:1:npassed}"); shift "$npassed"
mount -t proc proc "$root/proc"
mount -t sysfs sysfs "$root/sys"
mount --rbind /dev "$root/dev"
mount -t tmpfs -o mode=1777 tmpfs "$root/dev/shm"
mount -t tmpfs -o mode=0755 tmpfs "$root/run"
for d in "$@"; do
    mkdir -p "$root$d"
    mount --bind "$d" "$root$d"
    mount -o remount,bind,ro "$root$d"
done
exec chroot "$root" /usr/bin/env -i HOME=/root LANG=C.UTF-8 TERM=dumb "${passed[@]}" \
    PATH="'"$swift_dir"'/usr/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin" \
    bash -euo pipefail -c "cd /root/kioskd && $commands"
' fresh-rehearsal "$root" "$commands" "${#passed[@]}" "${passed[@]}" "${binds[@]}" &
ns_pid=$!
rc=0
wait "$ns_pid" || rc=$?
ns_pid=
step "$commands: $([ $rc = 0 ] && echo passed || echo "FAILED (exit $rc)")"
log "$([ "$quick" = 1 ] && echo quick || echo full) rehearsal of $(git rev-parse --short "$head") on $(date -u +%Y-%m-%d): $([ $rc = 0 ] && echo PASS || echo FAIL) in $((SECONDS - T0)) s"
exit "$rc"
