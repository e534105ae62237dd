#!/usr/bin/env bash
# Runs a command inside the sid compiler root, in a private mount namespace (nothing stays mounted):
# the checkout at the same path, the arm64 sysroot at the same path, /proc, /dev, and git's system
# config with the package copy it points to (SwiftPM fetches dependencies through git).
# usage: chroot.sh SID_ROOT SYSROOT CHECKOUT COMMAND...   (COMMAND runs in CHECKOUT via bash -c)
set -euo pipefail
[ $# -ge 4 ] || { echo "usage: chroot.sh SID_ROOT SYSROOT CHECKOUT COMMAND..." >&2; exit 2; }
root="$1" sysroot="$2" checkout="$3"; shift 3
[ -L "$root/usr/bin/swift" ] || { echo "chroot.sh: $root has no usr/bin/swift" >&2; exit 1; }

binds=("$checkout" "$sysroot")
# Directories git's system config redirects to (url.<dir>.insteadOf); absolute paths only.
if [ -f /etc/gitconfig ]; then
    while read -r d; do
        [ -d "$d" ] && binds+=("$d")
    done < <(git config --system --get-regexp '^url\..*\.insteadof$' 2>/dev/null | sed -E 's/^url\.(.*)\.insteadof .*/\1/I' | grep '^/' | sort -u)
fi

# shellcheck disable=SC2016 # the inner script expands its own arguments
exec unshare --mount --propagation private bash -euo pipefail -c '
root="$1"; checkout="$2"; shift 2
n="$1"; shift
for ((i = 0; i < n; i++)); do
    d="$1"; shift
    mkdir -p "$root$d"
    mount --rbind "$d" "$root$d"
done
mount -t proc proc "$root/proc"
mount --rbind /dev "$root/dev"
if [ -f /etc/gitconfig ]; then touch "$root/etc/gitconfig"; mount --bind /etc/gitconfig "$root/etc/gitconfig"; fi
if [ -f /etc/gitignore ]; then touch "$root/etc/gitignore"; mount --bind /etc/gitignore "$root/etc/gitignore"; fi
cmd="$*"
exec chroot "$root" /usr/bin/env -i HOME=/root PATH=/usr/bin:/bin LANG=C.UTF-8 TERM=dumb \
    bash -euo pipefail -c "cd \"$checkout\" && $cmd"
' chroot-sh "$root" "$checkout" "${#binds[@]}" "${binds[@]}" "$@"
