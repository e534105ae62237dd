#!/bin/sh
# Installs kioskd on this machine (run as root from the repository):
#   binaries   → $PREFIX/bin/kioskd, $PREFIX/bin/kioskctl   (PREFIX=/usr/local)
#   unit       → /etc/systemd/system/kioskd.service
#   config     → /etc/kioskd/kioskd.toml (kept if it exists) and /etc/kioskd/themes/*.toml
#   docs       → $PREFIX/share/doc/kioskd/
#   udev rule  → /etc/udev/rules.d/90-kioskd-backlight.rules (group video may write the backlight's brightness)
#   user       → system user "kioskd" in the groups video, input and render;
#                group "kioskctl" owns nothing yet: add people to it and set control.group = "kioskctl"
# Options: --no-build (use the existing release build, or BINDIR=dir), --enable (enable and start the unit).
# DESTDIR=dir stages the files there (no user, no systemctl).
set -eu
cd "$(dirname "$0")/.."
PREFIX=${PREFIX:-/usr/local}
DESTDIR=${DESTDIR:-}
build=1
enable=0
for a in "$@"; do
    case "$a" in
        --no-build) build=0 ;;
        --enable) enable=1 ;;
        *) echo "install.sh: unknown option $a (use --no-build, --enable)" >&2; exit 2 ;;
    esac
done
if [ "$(id -u)" != 0 ] && [ -z "$DESTDIR" ]; then
    echo "install.sh: run as root (or set DESTDIR to stage the files)" >&2
    exit 1
fi

if [ "$build" = 1 ]; then
    swift build -c release --product kioskd
    swift build -c release --product kioskctl
fi
bindir=${BINDIR:-$(swift build -c release --show-bin-path)}

install -d "$DESTDIR$PREFIX/bin" "$DESTDIR/etc/systemd/system" "$DESTDIR/etc/kioskd/themes" "$DESTDIR$PREFIX/share/doc/kioskd" \
    "$DESTDIR/etc/udev/rules.d"
install -m 0755 "$bindir/kioskd" "$DESTDIR$PREFIX/bin/kioskd"
install -m 0755 "$bindir/kioskctl" "$DESTDIR$PREFIX/bin/kioskctl"
sed "s|/usr/local/bin/kioskd|$PREFIX/bin/kioskd|g; s|/usr/local/share/doc|$PREFIX/share/doc|g" systemd/kioskd.service \
    > "$DESTDIR/etc/systemd/system/kioskd.service"
chmod 0644 "$DESTDIR/etc/systemd/system/kioskd.service"
if [ -e "$DESTDIR/etc/kioskd/kioskd.toml" ]; then
    echo "keeping the existing /etc/kioskd/kioskd.toml (the shipped one is $PREFIX/share/doc/kioskd/kioskd.toml)"
else
    install -m 0644 config/kioskd.toml "$DESTDIR/etc/kioskd/kioskd.toml"
fi
install -m 0644 config/kioskd.toml "$DESTDIR$PREFIX/share/doc/kioskd/kioskd.toml"
# The backlight's brightness file is root's; this rule lets group video (kioskd is in it) write it.
# Not needed when kioskd runs in a logind session (it then asks logind: SetBrightness).
cat > "$DESTDIR/etc/udev/rules.d/90-kioskd-backlight.rules" <<'RULE'
# kioskd: members of group video may set the panel's backlight (/sys/class/backlight/*/brightness).
ACTION=="add", SUBSYSTEM=="backlight", RUN+="/bin/chgrp video /sys/class/backlight/%k/brightness", RUN+="/bin/chmod g+w /sys/class/backlight/%k/brightness"
RULE
chmod 0644 "$DESTDIR/etc/udev/rules.d/90-kioskd-backlight.rules"
for t in config/themes/*.toml; do install -m 0644 "$t" "$DESTDIR/etc/kioskd/themes/"; done
for d in README.md docs/*.md; do
    [ -e "$d" ] && install -m 0644 "$d" "$DESTDIR$PREFIX/share/doc/kioskd/"
done

if [ -z "$DESTDIR" ]; then
    for g in video input render kioskctl; do
        getent group "$g" >/dev/null || groupadd --system "$g"
    done
    if ! id kioskd >/dev/null 2>&1; then
        useradd --system --no-create-home --home-dir /var/lib/kioskd --shell /usr/sbin/nologin \
            --user-group --groups video,input,render,kioskctl kioskd
    else
        usermod -a -G video,input,render,kioskctl kioskd
    fi
    systemctl daemon-reload 2>/dev/null || true
    # Apply the backlight rule to the devices present now (it runs by itself at the next boot).
    if command -v udevadm >/dev/null 2>&1; then
        udevadm control --reload 2>/dev/null || true
        udevadm trigger --subsystem-match=backlight --action=add 2>/dev/null || true
    fi
    "$PREFIX/bin/kioskd" --check-config --config /etc/kioskd/kioskd.toml
    if [ "$enable" = 1 ]; then
        systemctl enable --now kioskd.service
    else
        echo "installed; start with: systemctl enable --now kioskd.service"
    fi
fi
