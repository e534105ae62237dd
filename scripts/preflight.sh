#!/usr/bin/env bash
# Checks, in well under a minute, that this machine has everything each step of scripts/test.sh
# needs, before an hour of building and testing: the apt packages of scripts/apt-*.txt, the
# commands the scripts call, the Swift toolchain (it compiles and links a small program, and
# has libFuzzer), QEMU with the devices the kernel tests use, binfmt_misc for aarch64 programs,
# the Python modules the scripts import, apt's package lists, root where a step needs it, and
# free disk for each folder a step fills. Names every missing one with the Debian package that
# provides it, all at once, and exits 1; exits 0 when nothing is missing. /dev/kvm is reported,
# never required (the VMs run under TCG).
#
# A step test.sh skips is not checked: KIOSK_ARM64=0 (the aarch64 job), KIOSK_ARM64_VM=0 (its
# kernel tests), KIOSK_VM_TESTS=0 (x86_64 kernel tests), KIOSK_BROWSER_TESTS=0, KIOSK_FUZZ=0,
# KIOSK_BENCH=0, KIOSK_HA_TESTS=0. An apt list says which of these makes it unneeded in a line
# `# needed unless: VAR=0 …` (any one of them); a list without that line is always needed.
#   scripts/preflight.sh          check; the list of what is missing goes to stderr
#   scripts/preflight.sh --list   print each step and whether it is checked, then check
# Environment for its own tests: KIOSK_PREFLIGHT_APT_DIR (default scripts), KIOSK_SWIFT_DIR
# (default /opt/swift; its usr/bin is put first on PATH, as .ci/run does), KIOSK_CI_CACHE.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 2
T0=$(date +%s%N)
swift_dir=${KIOSK_SWIFT_DIR:-/opt/swift}
PATH="$swift_dir/usr/bin:$PATH"
apt_dir=${KIOSK_PREFLIGHT_APT_DIR:-scripts}
cache=${KIOSK_CI_CACHE:-/var/cache/kioskd-ci}
list_steps=0
[ "${1:-}" = --list ] && list_steps=1

on() { [ "${!1:-1}" = 1 ]; }   # a step is on unless its variable is set to something else
ARM64_VM=0; on KIOSK_ARM64 && on KIOSK_ARM64_VM && ARM64_VM=1

missing=()      # "what — its package or how to get it (needed by: step)"
packages=()     # Debian packages that would provide the missing items
notes=()
miss() {  # step what package [how]; an empty step: not named
    missing+=("$2 — ${4:-apt package $3}${1:+ (needed by: $1)}")
    [ -n "$3" ] && packages+=("$3")
}
note() { notes+=("$*"); }

# ------------------------------------------------------------------ apt packages of the lists
# Each list's packages, unless a variable named in its `# needed unless:` line is off.
pkg_step=()     # "package list-file"
for f in "$apt_dir"/apt-*.txt; do
    [ -f "$f" ] || continue
    skip=""
    for v in $(sed -n 's/^#[[:space:]]*needed unless:[[:space:]]*//p' "$f" | tr ' ' '\n' | sed -n 's/=0$//p'); do
        on "$v" || skip="$v=0"
    done
    if [ -n "$skip" ]; then
        [ $list_steps = 1 ] && echo "preflight: $f: skipped ($skip)"
        continue
    fi
    [ $list_steps = 1 ] && echo "preflight: $f: checked"
    # shellcheck disable=SC2013 # one package name a line
    for p in $(grep -v '^[[:space:]]*#' "$f"); do
        pkg_step+=("$p $(basename "$f")")
    done
done
if [ ${#pkg_step[@]} -gt 0 ]; then
    # One dpkg-query for all of them: "name status" of each installed one.
    # shellcheck disable=SC2016 # dpkg-query's own ${} fields
    installed=$(printf '%s\n' "${pkg_step[@]}" | cut -d' ' -f1 | sort -u \
        | xargs dpkg-query -W -f='${Package} ${db:Status-Status}\n' 2>/dev/null | awk '$2 == "installed" { print $1 }')
    seen=" "
    for ps in "${pkg_step[@]}"; do
        p=${ps%% *} f=${ps#* }
        case "$seen" in *" $p "*) continue ;; esac
        seen="$seen$p "
        grep -qxF "$p" <<<"$installed" || miss "" "apt package $p (scripts/$f)" "$p" "not installed"
    done
fi

# ------------------------------------------------------------------ commands
need_cmd() {  # step package command...
    local step=$1 pkg=$2 c; shift 2
    for c in "$@"; do
        if [[ "$c" == /* ]]; then [ -x "$c" ] && continue
        else command -v "$c" >/dev/null 2>&1 && continue
        fi
        miss "$step" "command $c" "$pkg"
    done
}
need_file() {  # step package path
    [ -e "$3" ] || miss "$1" "file $3" "$2"
}

# Every run: the builds, systemd checks, kill test, packages, swift test, the harness's own tests.
S="build, systemd checks, kill test, packages, swift test"
need_cmd "$S" git git
need_cmd "$S" pkg-config pkg-config
need_cmd "$S" python3 python3
need_cmd "$S" systemd systemd-analyze
need_cmd "$S" shellcheck shellcheck
need_cmd "$S" binutils readelf objcopy nm
need_cmd "$S" dpkg-dev dpkg-shlibdeps
need_cmd "$S" dpkg dpkg-deb
need_cmd "$S" chrpath chrpath
need_cmd "$S" help2man help2man
need_cmd "$S" lintian lintian
need_cmd "$S" reprepro reprepro
need_cmd "$S" gpg gpg
need_cmd "$S" gpg-agent gpg-agent
need_cmd "$S" sqv sqv
need_cmd "$S" gzip gzip zcat
need_cmd "$S" coreutils md5sum sha256sum mktemp
need_cmd "$S" util-linux /usr/bin/setpriv /usr/bin/prlimit flock unshare ionice
need_cmd "$S" libc-bin ldd getent
need_cmd "$S" mosquitto /usr/sbin/mosquitto /usr/bin/mosquitto_passwd
need_cmd "$S" mosquitto-clients /usr/bin/mosquitto_sub /usr/bin/mosquitto_pub
need_cmd "$S" zbar-tools /usr/bin/zbarimg
need_cmd "$S" dbus-daemon /usr/bin/dbus-daemon
need_cmd "$S" openssl /usr/bin/openssl
need_file "$S" fonts-dejavu-core /usr/share/fonts/truetype/dejavu/DejaVuSans.ttf
need_file "$S" debian-archive-keyring /usr/share/keyrings/debian-archive-keyring.gpg

if on KIOSK_ARM64; then
    S="aarch64 toolchain, cross build, tier 1, arm64 package (KIOSK_ARM64=0 skips)"
    need_cmd "$S" mmdebstrap mmdebstrap
    need_cmd "$S" apt apt-get apt-cache
    need_cmd "$S" util-linux flock unshare
    need_cmd "$S" coreutils chroot
    need_cmd "$S" rsync rsync
    need_cmd "$S" file file
    need_cmd "$S" qemu-user-static qemu-aarch64-static
    [ -x "$swift_dir/usr/bin/llvm-objcopy" ] || miss "$S" "llvm-objcopy in $swift_dir/usr/bin" "" "the Swift toolchain (swift.org's Linux build has it)"
fi
if [ $ARM64_VM = 1 ]; then
    S="aarch64 kernel tests (KIOSK_ARM64=0 or KIOSK_ARM64_VM=0 skips)"
    need_cmd "$S" qemu-system-arm qemu-system-aarch64
    need_cmd "$S" qemu-user-static qemu-aarch64-static
    need_cmd "$S" mmdebstrap mmdebstrap
    # mmdebstrap only recommends arch-test; without it a foreign-architecture root fails.
    need_cmd "$S" arch-test arch-test
    need_cmd "$S" binfmt-support update-binfmts
    need_cmd "$S" kmod depmod
    need_cmd "$S" cpio cpio
fi
if on KIOSK_VM_TESTS; then
    S="x86_64 kernel tests (KIOSK_VM_TESTS=0 skips)"
    need_cmd "$S" qemu-system-x86 qemu-system-x86_64
    need_cmd "$S" apt apt-get apt-cache
    need_cmd "$S" kmod depmod
    need_cmd "$S" cpio cpio
    need_cmd "$S" busybox-static busybox
    need_cmd "$S" e2fsprogs mkfs.ext4 e2fsck
    # The guest runs in this machine's root (9p): what the guest scripts call.
    need_cmd "$S" evemu-tools evemu-play evemu-device
    need_cmd "$S" udev udevadm
    need_cmd "$S" systemd systemctl journalctl /lib/systemd/systemd
    need_cmd "$S" util-linux nsenter /usr/bin/setpriv
    need_cmd "$S" passwd useradd
    need_cmd "$S" v4l-utils cec-ctl cec-follower
    if ! ls /var/lib/apt/lists/*_Packages* >/dev/null 2>&1; then
        miss "$S" "apt package lists (the kernel package is fetched with apt-get download)" "" "run apt-get update"
    fi
fi
if on KIOSK_BROWSER_TESTS; then
    S="browser tests (KIOSK_BROWSER_TESTS=0 skips)"
    need_cmd "$S" chromium /usr/bin/chromium
    need_cmd "$S" zbar-tools zbarimg
fi
if on KIOSK_HA_TESTS; then
    S="Home Assistant (KIOSK_HA_TESTS=0 skips)"
    need_cmd "$S" mmdebstrap mmdebstrap
    need_cmd "$S" mosquitto /usr/sbin/mosquitto
    need_cmd "$S" mosquitto-clients mosquitto_sub
    need_cmd "$S" util-linux unshare
    need_cmd "$S" coreutils chroot
fi

# ------------------------------------------------------------------ root
if [ "$(id -u)" != 0 ]; then
    on KIOSK_ARM64 && miss "aarch64 (KIOSK_ARM64=0 skips)" "root (chroot and mounts for the toolchain and the arm64 root)" "" "run as root"
    on KIOSK_HA_TESTS && miss "Home Assistant (KIOSK_HA_TESTS=0 skips)" "root (chroot and mounts)" "" "run as root"
fi

# ------------------------------------------------------------------ Python modules
# Standard library modules the scripts import that Debian may split out or leave out.
if command -v python3 >/dev/null; then
    mods="json lzma fcntl socket subprocess urllib.request dataclasses"
    on KIOSK_ARM64 && mods="$mods zoneinfo resource zlib"
    for m in $mods; do
        python3 -c "import $m" 2>/dev/null || miss "scripts (python3)" "Python module $m" "python3" "apt package python3 (the standard library)"
    done
    if on KIOSK_ARM64; then
        python3 -c 'import zoneinfo; zoneinfo.ZoneInfo("Europe/Berlin")' 2>/dev/null \
            || miss "aarch64 tier 1 (KIOSK_ARM64=0 skips)" "time zone data for Python's zoneinfo" "tzdata"
    fi
    # venv with pip: Playwright's venv (browser tests); the bench's pygame venv may fail (it then
    # runs without the peer).
    if on KIOSK_BROWSER_TESTS || on KIOSK_BENCH; then
        # Debian's ensurepip installs pip from the wheels in /usr/share/python-wheels (python3-venv).
        if ! python3 -c 'import venv, ensurepip' 2>/dev/null || ! ls /usr/share/python-wheels/pip-*.whl >/dev/null 2>&1; then
            if on KIOSK_BROWSER_TESTS; then
                miss "browser tests (KIOSK_BROWSER_TESTS=0 skips)" "Python venv with pip (ensurepip)" "python3-venv"
            else
                note "python3-venv missing: the bench runs without its pygame peer"
            fi
        fi
    fi
fi

# ------------------------------------------------------------------ the Swift toolchain
tmp=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null; rm -rf "$tmp"' EXIT
S="every Swift build"
if ! command -v swift >/dev/null; then
    miss "$S" "swift (a Swift 6 toolchain)" "" "swift.org's toolchain for Debian 12 unpacked in /opt (KIOSK_SWIFT_DIR), its usr/bin on PATH"
else
    if ! said=$(swift --version 2>&1); then
        miss "$S" "a Swift toolchain that runs (swift --version: $(head -n 1 <<<"$said"))" "" \
            "the toolchain's own packages (scripts/apt-swift.txt)"
    elif ! grep -q 'Swift version 6\.' <<<"$said"; then
        miss "$S" "Swift 6 (swift --version says: $(head -n 1 <<<"$said"))" "" "a Swift 6.x toolchain"
    fi
    # Compile and link a program in the background while the rest is checked: the toolchain runs
    # (its own libraries), and the C library, crt files and libstdc++ are there to link with.
    printf 'print("preflight \\(6 * 7)")\n' > "$tmp/main.swift"
    ( cd "$tmp" && swiftc -o main main.swift > swiftc.log 2>&1 && ./main > run.log 2>&1; echo $? > swiftc.rc ) &
    swiftc_pid=$!
    if on KIOSK_FUZZ; then
        for rt in fuzzer asan; do
            ls "$swift_dir"/usr/lib/clang/*/lib/linux/libclang_rt.$rt-x86_64.a >/dev/null 2>&1 \
                || miss "fuzz (KIOSK_FUZZ=0 skips)" "libclang_rt.$rt-x86_64.a in $swift_dir/usr/lib/clang/*/lib/linux" "" "swift.org's toolchain (it ships libFuzzer and ASan)"
        done
    fi
    ls "$swift_dir"/usr/lib/swift_static/linux/libswiftCore.a >/dev/null 2>&1 \
        || miss "release build (static Swift runtime)" "$swift_dir/usr/lib/swift_static/linux/libswiftCore.a" "" "swift.org's toolchain (static runtime)"
fi

# ------------------------------------------------------------------ QEMU: the devices the kernel tests use
# Each machine is started paused with the tests' devices and a read-only 9p share: a missing
# firmware or option ROM file, or a QEMU without 9p, fails here at once.
qemu_probe() {  # name binary machine-args... ; runs in the background, result in $tmp/qemu-NAME.rc
    local name=$1; shift
    ( timeout 4 "$@" -nodefaults -no-user-config -display none -S -monitor none -serial none \
        -virtfs "local,path=$tmp,mount_tag=t,security_model=none,readonly=on,multidevs=remap" \
        > "$tmp/qemu-$name.log" 2>&1; echo $? > "$tmp/qemu-$name.rc" ) &
}
qemu_devices=(-device VGA -device virtio-gpu-pci -device qemu-xhci -device usb-tablet -device virtio-serial-pci)
if on KIOSK_VM_TESTS && command -v qemu-system-x86_64 >/dev/null; then
    qemu_probe x86_64 qemu-system-x86_64 -machine q35 -accel tcg "${qemu_devices[@]}"
fi
if [ $ARM64_VM = 1 ] && command -v qemu-system-aarch64 >/dev/null; then
    qemu_probe aarch64 qemu-system-aarch64 -machine virt -cpu cortex-a72 -accel tcg "${qemu_devices[@]}"
fi

# ------------------------------------------------------------------ binfmt_misc (aarch64 root)
if [ $ARM64_VM = 1 ]; then
    S="aarch64 kernel tests (building the arm64 root; KIOSK_ARM64_VM=0 skips)"
    if [ -e /proc/sys/fs/binfmt_misc/qemu-aarch64 ]; then
        if ! grep -qx enabled /proc/sys/fs/binfmt_misc/qemu-aarch64 2>/dev/null; then
            note "binfmt_misc: qemu-aarch64 is registered but disabled; scripts/vm/arm64-root.sh enables it"
        elif command -v arch-test >/dev/null && ! arch-test arm64 >/dev/null 2>&1; then
            miss "$S" "arm64 programs through binfmt_misc (arch-test arm64 fails)" "qemu-user-static" \
                "apt packages qemu-user-static and binfmt-support (update-binfmts --enable qemu-aarch64)"
        fi
    elif ! grep -qw binfmt_misc /proc/filesystems; then
        miss "$S" "binfmt_misc in the kernel" "" "a kernel with CONFIG_BINFMT_MISC"
    elif command -v update-binfmts >/dev/null && ! update-binfmts --display qemu-aarch64 >/dev/null 2>&1; then
        miss "$S" "the qemu-aarch64 binfmt format (update-binfmts knows none)" "qemu-user-static" \
            "apt packages qemu-user-static and binfmt-support"
    else
        note "binfmt_misc: qemu-aarch64 not registered yet; scripts/vm/arm64-root.sh registers it (update-binfmts --enable qemu-aarch64)"
    fi
fi

# ------------------------------------------------------------------ /dev/kvm (reported only)
if [ -c /dev/kvm ]; then
    note "/dev/kvm is present (not used: the kernel tests run under TCG, the same on every machine)"
else
    note "/dev/kvm is absent (not needed: the kernel tests run under TCG)"
fi

# ------------------------------------------------------------------ free disk
# What a run with cold caches fills, with room to spare: the checkout's build folders (.build,
# .build-bench, .build-fuzz-debug, .build-arm64, vm/work, out), each cold cache of the CI cache
# (measured: the sid compiler root 3.4 GB, the arm64 sysroot 1.5 GB, the Home Assistant root
# 1.2 GB; the cross build's mirror and the arm64 root less), and /tmp for test files.
free_gib() {  # path → free GiB on its file system (of the nearest existing parent)
    local p=$1
    while [ ! -e "$p" ]; do p=$(dirname "$p"); done
    df -Pk "$p" | awk 'NR == 2 { printf "%d", $4 / 1048576 }'
}
declare -A need_gib=()
declare -A need_why=()
want_disk() {  # path GiB why
    need_gib[$1]=$(( ${need_gib[$1]:-0} + $2 ))
    need_why[$1]="${need_why[$1]:+${need_why[$1]}, }$3"
}
want_disk "$PWD" 8 "debug, release and test builds"
on KIOSK_FUZZ && want_disk "$PWD" 3 "fuzz build"
on KIOSK_ARM64 && want_disk "$PWD" 1 "aarch64 binaries and packages"
on KIOSK_VM_TESTS && want_disk "$PWD" 1 "kernel and initramfs (vm/work)"
want_disk /tmp 1 "test files"
if on KIOSK_ARM64; then
    ls -d "$cache"/sid-swift-*/usr/bin/swift >/dev/null 2>&1 || want_disk "$cache" 4 "the sid compiler root"
    ls "$cache"/sysroot-arm64-*/.complete >/dev/null 2>&1 || want_disk "$cache" 2 "the arm64 sysroot"
    [ -d "$cache/arm64-build/src" ] || want_disk "$cache" 2 "the cross build's mirror"
fi
if [ $ARM64_VM = 1 ]; then
    ls "$cache"/arm64-root-*/kernel/package >/dev/null 2>&1 || want_disk "$cache" 1 "the arm64 root"
fi
if on KIOSK_HA_TESTS; then
    ls "$cache"/ha-root-*/opt/ha/.complete >/dev/null 2>&1 || want_disk "$cache" 2 "the Home Assistant root"
fi
# Folders on the same file system share its free space: the needs are added per file system.
declare -A fs_need=() fs_what=() fs_free=()
for d in "${!need_gib[@]}"; do
    p=$d; while [ ! -e "$p" ]; do p=$(dirname "$p"); done
    fs=$(df -P "$p" | awk 'NR == 2 { print $1 " " $6 }')
    fs_need[$fs]=$(( ${fs_need[$fs]:-0} + need_gib[$d] ))
    fs_what[$fs]="${fs_what[$fs]:+${fs_what[$fs]}; }$d: ${need_gib[$d]} GiB (${need_why[$d]})"
    fs_free[$fs]=$(free_gib "$p")
done
for fs in "${!fs_need[@]}"; do
    if [ "${fs_free[$fs]}" -lt "${fs_need[$fs]}" ]; then
        miss "disk" "free space on ${fs#* } (${fs%% *}): ${fs_free[$fs]} GiB free, ${fs_need[$fs]} GiB needed — ${fs_what[$fs]}" "" "free some space"
    fi
done

# ------------------------------------------------------------------ background results
if [ -n "${swift_pid:-}${swiftc_pid:-}" ]; then
    wait "$swiftc_pid" 2>/dev/null
    if [ "$(cat "$tmp/swiftc.rc" 2>/dev/null)" != 0 ] || ! grep -qx "preflight 42" "$tmp/run.log" 2>/dev/null; then
        miss "every Swift build" "a working Swift toolchain: swiftc could not compile, link or run a one-line program: $(tail -n 3 "$tmp/swiftc.log" "$tmp/run.log" 2>/dev/null | tr '\n' ' ' | cut -c1-400)" \
            "" "the toolchain's own packages (scripts/apt-swift.txt)"
    fi
fi
for arch in x86_64 aarch64; do
    [ -e "$tmp/qemu-$arch.rc" ] || { wait 2>/dev/null; }
    [ -e "$tmp/qemu-$arch.rc" ] || continue
    rc=$(cat "$tmp/qemu-$arch.rc")
    if [ "$rc" != 124 ]; then   # 124: still running when timeout stopped it, i.e. it started
        pkg=qemu-system-x86; [ $arch = aarch64 ] && pkg=qemu-system-arm
        miss "$arch kernel tests" "qemu-system-$arch with the tests' devices (exit $rc: $(head -c 300 "$tmp/qemu-$arch.log" | tr '\n' ' '))" \
            "" "apt package $pkg and its firmware (seabios, qemu-system-data)"
    fi
done

ms=$(( ($(date +%s%N) - T0) / 1000000 ))
for n in "${notes[@]}"; do echo "preflight: note: $n"; done
if [ ${#missing[@]} -gt 0 ]; then
    {
        echo "preflight: ${#missing[@]} missing (checked in $((ms / 1000)).$(printf '%03d' $((ms % 1000))) s):"
        printf '  - %s\n' "${missing[@]}"
        if [ ${#packages[@]} -gt 0 ]; then
            echo "preflight: apt-get install --no-install-recommends $(printf '%s\n' "${packages[@]}" | sort -u | tr '\n' ' ')"
        fi
        echo "preflight: scripts/setup.sh installs every package of scripts/apt-*.txt"
    } >&2
    exit 1
fi
echo "preflight: OK: everything scripts/test.sh needs is here (checked in $((ms / 1000)).$(printf '%03d' $((ms % 1000))) s)"
