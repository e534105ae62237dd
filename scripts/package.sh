#!/usr/bin/env bash
# Builds the Debian package kioskd_VERSION_ARCH.deb from release binaries.
#   scripts/package.sh                          amd64 (this machine): builds (incrementally) the
#                                               release kioskd (static Swift runtime, Package.swift)
#                                               in .build-bench (scripts/release-kioskd.sh: the ICU
#                                               data cut down, the link map checked)
#   scripts/package.sh --arch arm64 [--bindir DIR --sysroot DIR]
#                                               aarch64 binaries (default: those .build-arm64/READY
#                                               names); the sysroot (an arm64 Debian root, with
#                                               a dpkg database or a .packages list) gives the
#                                               Depends and runs --help under qemu-user
# Options: --out DIR (default out/deb), --bindir DIR (kioskd; or BINDIR=),
#          --sysroot DIR (or SYSROOT=), --suite NAME (the sysroot's Debian release, default trixie),
#          --no-build.
# Version: the file VERSION (upstream) plus the Debian revision below.
# The package: /usr/bin/kioskd, /usr/bin/kioskctl (a link to it: kioskd called kioskctl is
# kioskctl, so the static Swift runtime, Foundation and ICU are shipped once), the unit in
# /usr/lib/systemd/system, the user through sysusers.d, the backlight udev rule, /etc/kioskd
# (conffiles), man pages from --help, docs; Depends computed from the binary's NEEDED libraries.
# Writes the .deb's path to OUT/READY, and the kioskd-dbgsym .ddeb's (the debug information) to
# OUT/DBGSYM.ARCH.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH=/opt/swift/usr/bin:$PATH
umask 022

host_arch=$(dpkg --print-architecture)
arch=$host_arch
out=out/deb
bindir=${BINDIR:-}
built_from=
sysroot=${SYSROOT:-}
build=1
suite=trixie
while [ $# -gt 0 ]; do
    case "$1" in
        --arch) arch=$2; shift ;;
        --bindir) bindir=$2; shift ;;
        --sysroot) sysroot=$2; shift ;;
        --out) out=$2; shift ;;
        --suite) suite=$2; shift ;;
        --no-build) build=0 ;;
        *) echo "package.sh: unknown option $1 (use --arch, --bindir, --sysroot, --suite, --out, --no-build)" >&2; exit 2 ;;
    esac
    shift
done
case "$arch" in
    amd64) triplet=x86_64-linux-gnu; machine="X86-64"; qemu="" ;;
    arm64) triplet=aarch64-linux-gnu; machine="AArch64"; qemu="qemu-aarch64-static" ;;
    *) echo "package.sh: --arch must be amd64 or arm64" >&2; exit 2 ;;
esac
foreign=0
[ "$arch" != "$host_arch" ] && foreign=1
mkdir -p "$out"
out=$(cd "$out" && pwd)

upstream=$(tr -d ' \n' < VERSION)
revision=1
version=$upstream-$revision
maintainer="kioskd maintainers <maintainers@users.noreply.a-seed-89189a4e.example>"
# Reproducible timestamps: the last commit's time.
export SOURCE_DATE_EPOCH=${SOURCE_DATE_EPOCH:-$(git log -1 --format=%ct 2>/dev/null || date +%s)}

fail() { echo "package.sh: $*" >&2; exit 1; }

# --- binaries
# scripts/build-arm64.sh names its binaries and sysroot in .build-arm64/READY.
if [ "$arch" = arm64 ] && [ -z "$bindir" ] && [ -f .build-arm64/READY ]; then
    bindir=$(dirname "$(sed -n 's/^kioskd=//p' .build-arm64/READY)")
    [ -n "$sysroot" ] || sysroot=$(sed -n 's/^sysroot=//p' .build-arm64/READY)
    built_from=$(sed -n 's/^commit=//p' .build-arm64/READY | cut -c1-7)
fi
if [ -z "$bindir" ]; then
    [ "$foreign" = 1 ] && fail "--arch $arch needs --bindir (the aarch64 kioskd) or .build-arm64/READY"
    # kioskd links the Swift runtime statically in release builds (Package.swift); the release
    # build the benchmark and the process tests use (scripts/release-kioskd.sh, scripts/test.sh).
    if [ "$build" = 1 ]; then
        bash scripts/release-kioskd.sh
    fi
    kioskd_bin=.build-bench/release/kioskd
else
    kioskd_bin=$bindir/kioskd
fi
b=$kioskd_bin
[ -x "$b" ] || fail "no executable $b"
readelf -h "$b" | grep -q "Machine:.*$machine" || fail "$b is not a $arch ($machine) binary"
if readelf -d "$b" | grep -q 'NEEDED.*libswift'; then
    fail "$b loads the Swift runtime as a shared library ($(readelf -d "$b" | grep -o 'libswift[^]]*' | tr '\n' ' ')); build it with --static-swift-stdlib"
fi
if [ "$foreign" = 1 ]; then
    { [ -n "$sysroot" ] && [ -d "$sysroot" ]; } || fail "--arch $arch needs --sysroot (an arm64 Debian root)"
    command -v "$qemu" >/dev/null || fail "$qemu is missing (apt package qemu-user-static)"
    sysroot=$(cd "$sysroot" && pwd)
fi

work=$out/build-$arch
root=$work/root
rm -rf "$work"
mkdir -p "$root/DEBIAN"

# --- files
install -d "$root/usr/bin" "$root/usr/lib/systemd/system" "$root/usr/lib/sysusers.d" \
    "$root/usr/lib/udev/rules.d" "$root/etc/kioskd/themes" "$root/usr/share/doc/kioskd/examples" \
    "$root/usr/share/man/man1" "$root/usr/share/man/man8"
if [ "$arch" = arm64 ]; then strip=llvm-objcopy; else strip=objcopy; fi
# As dh_strip does for executables: no symbol tables, no .comment (the build id stays).
"$strip" --strip-all --remove-section=.comment "$kioskd_bin" "$root/usr/bin/kioskd"
# SwiftPM's RUNPATH $ORIGIN: nothing is loaded from /usr/bin.
chrpath -d "$root/usr/bin/kioskd" >/dev/null
chmod 0755 "$root/usr/bin/kioskd"
ln -s kioskd "$root/usr/bin/kioskctl"
sed 's|/usr/local/bin/kioskd|/usr/bin/kioskd|g; s|/usr/local/share/doc|/usr/share/doc|g' systemd/kioskd.service \
    > "$root/usr/lib/systemd/system/kioskd.service"
grep -q /usr/local "$root/usr/lib/systemd/system/kioskd.service" && fail "the unit still names /usr/local"
install -m 0644 packaging/debian/kioskd.sysusers "$root/usr/lib/sysusers.d/kioskd.conf"
# The same rule scripts/install.sh writes.
sed -n "/^cat > .*90-kioskd-backlight\.rules.*<<'RULE'/,/^RULE\$/p" scripts/install.sh | sed '1d;$d' \
    > "$root/usr/lib/udev/rules.d/90-kioskd-backlight.rules"
grep -q 'SUBSYSTEM=="backlight"' "$root/usr/lib/udev/rules.d/90-kioskd-backlight.rules" || fail "no backlight rule found in scripts/install.sh"
install -m 0644 config/kioskd.toml "$root/etc/kioskd/kioskd.toml"
install -m 0644 config/themes/*.toml "$root/etc/kioskd/themes/"
install -m 0644 README.md docs/*.md "$root/usr/share/doc/kioskd/"
install -m 0644 config/wall-clock.toml config/scoreboard.toml config/painting-kiosk.toml "$root/usr/share/doc/kioskd/examples/"
chmod 0644 "$root/usr/lib/systemd/system/kioskd.service" "$root/usr/lib/udev/rules.d/90-kioskd-backlight.rules"

# Man pages from --help. A foreign binary runs under qemu-user with the sysroot's libraries.
mandir=$work/man-run
mkdir -p "$mandir"
for b in kioskd kioskctl; do
    if [ "$foreign" = 1 ]; then
        printf '#!/bin/sh\nexec %s -L %s %s "$@"\n' "$qemu" "$sysroot" "$root/usr/bin/$b" > "$mandir/$b"
    else
        printf '#!/bin/sh\nexec %s "$@"\n' "$root/usr/bin/$b" > "$mandir/$b"
    fi
    chmod 0755 "$mandir/$b"
done
help2man --no-info --no-discard-stderr --section 8 --version-string "$upstream" \
    --name "kiosk display daemon (DRM/KMS scenes: clock, counter, paint)" "$mandir/kioskd" > "$work/kioskd.8"
help2man --no-info --no-discard-stderr --section 1 --version-string "$upstream" \
    --name "control a running kioskd through its control socket" "$mandir/kioskctl" > "$work/kioskctl.1"
grep -q 'check\\-config' "$work/kioskd.8" || fail "kioskd --help gave no usable text"
grep -q -- 'status' "$work/kioskctl.1" || fail "kioskctl --help gave no usable text"
gzip -9n < "$work/kioskd.8" > "$root/usr/share/man/man8/kioskd.8.gz"
gzip -9n < "$work/kioskctl.1" > "$root/usr/share/man/man1/kioskctl.1.gz"

# copyright and changelog
install -m 0644 packaging/debian/copyright "$root/usr/share/doc/kioskd/copyright"
commit=${built_from:-$(git rev-parse --short HEAD 2>/dev/null || echo unknown)}
{
    printf 'kioskd (%s) unstable; urgency=medium\n\n' "$version"
    printf '  * Built from the kioskd repository at commit %s.\n\n' "$commit"
    printf ' -- %s  %s\n' "$maintainer" "$(date -u -R -d "@$SOURCE_DATE_EPOCH")"
} | gzip -9n > "$root/usr/share/doc/kioskd/changelog.Debian.gz"

# --- Depends: NEEDED libraries → Debian packages
# fetch_debs LIST DIR: the library packages of LIST (lib*, and zlib1g for libz; name=version lines) as .debs in DIR/debs, through
# a private apt state in DIR (Debian $suite for $arch; the host's apt is not touched).
fetch_debs() {
    local list=$1 dir=$2 key=/usr/share/keyrings/debian-archive-keyring.gpg
    mkdir -p "$dir/debs" "$dir/apt/etc/apt/apt.conf.d" "$dir/apt/etc/apt/preferences.d" "$dir/apt/trusted.d" \
        "$dir/apt/var/lib/apt/lists/partial" "$dir/apt/var/cache/apt/archives/partial"
    dir=$(cd "$dir" && pwd)
    touch "$dir/apt/status"
    echo "deb [signed-by=$key] ${KIOSK_DEBIAN_MIRROR:-http://deb.debian.org/debian} $suite main" > "$dir/apt/etc/apt/sources.list"
    local opts=(-o "Dir=$dir/apt" -o "Dir::State::status=$dir/apt/status" -o "Dir::Etc::trusted=$key"
        -o "Dir::Etc::TrustedParts=$dir/apt/trusted.d" -o "APT::Architecture=$arch" -o "APT::Architectures=$arch"
        -o Acquire::Languages=none -o APT::Sandbox::User=root -o Debug::NoLocking=1)
    local want=() p
    # shellcheck disable=SC2013 # one name=version a line, no spaces
    for p in $(grep -E '^(lib|zlib1g=)' "$list" | grep -vE -- '-(dev|doc|bin|common|data)=' | grep -vE '^libswiftlang='); do
        ls "$dir/debs/${p%%=*}_"*"_$arch.deb" >/dev/null 2>&1 || want+=("$p")
    done
    [ ${#want[@]} -eq 0 ] && return 0
    echo "package.sh: fetching ${#want[@]} $suite $arch library packages into $dir/debs"
    ls "$dir/apt/var/lib/apt/lists/"*Packages* >/dev/null 2>&1 || apt-get "${opts[@]}" -qq update
    (cd "$dir/debs" && apt-get "${opts[@]}" -qq download "${want[@]}") \
        || { apt-get "${opts[@]}" -qq update && (cd "$dir/debs" && apt-get "${opts[@]}" -qq download "${want[@]}"); } \
        || fail "could not download the $arch library packages"
}
if [ "$foreign" = 0 ]; then
    # dpkg-shlibdeps with the host's dpkg database and symbols files (minimal debian/ tree).
    sd=$work/shlibdeps
    mkdir -p "$sd/debian"
    printf 'Source: kioskd\n\nPackage: kioskd\nArchitecture: any\n' > "$sd/debian/control"
    shlibs=$(cd "$sd" && dpkg-shlibdeps -O "$root/usr/bin/kioskd" 2>"$work/shlibdeps.log" \
        | sed -n 's/^shlibs:Depends=//p') || { cat "$work/shlibdeps.log" >&2; fail "dpkg-shlibdeps failed"; }
elif [ -d "$sysroot/var/lib/dpkg/info" ] && ls "$sysroot"/var/lib/dpkg/info/*.list >/dev/null 2>&1; then
    # The sysroot's dpkg database: the package owning each library, its symbols or shlibs.
    shlibs=$(python3 scripts/deb-shlibs.py --root "$sysroot" --arch "$arch" --triplet "$triplet" \
        "$root/usr/bin/kioskd") || fail "no dependency for a library (scripts/deb-shlibs.py)"
else
    # A sysroot of extracted packages (scripts/arm64/toolchain.sh) has no dpkg database, but lists
    # them in .packages: the same versions of its library packages are fetched (once, into
    # $out/cache-$arch) and read as .deb files.
    [ -f "$sysroot/.packages" ] || fail "$sysroot has neither a dpkg database nor a .packages list"
    fetch_debs "$sysroot/.packages" "$out/cache-$arch"
    shlibs=$(python3 scripts/deb-shlibs.py --debs "$out/cache-$arch/debs" --arch "$arch" --triplet "$triplet" \
        "$root/usr/bin/kioskd") || fail "no dependency for a library (scripts/deb-shlibs.py)"
fi
[ -n "$shlibs" ] || fail "no shared-library dependencies found"
# DejaVu Sans is the built-in themes' font; systemd-sysusers creates the user; a clock's
# `time_zone` is read from the system's zone files (tzdata; kioskd links no ICU and its zones).
depends="$shlibs, fonts-dejavu-core, tzdata, systemd | systemd-sysusers"
# Opened when the DRM backend starts (input devices, the logind backlight), not linked, so
# dpkg-shlibdeps does not see them; every board needs them (CKioskLazy).
depends="$depends, libudev1, libinput10, libsystemd0"
# Opened only when the config needs them: [mqtt], [web] session tokens, the pairing QR code,
# [audio]'s horn.
if [ "$arch" = arm64 ]; then ssl=libssl3t64; asound=libasound2t64; else ssl=libssl3; asound=libasound2; fi
suggests="libmosquitto1, $ssl, libqrencode4, $asound"

# --- control files
cat > "$root/DEBIAN/conffiles" <<EOF
$(cd "$root" && find etc -type f | sort | sed 's|^|/|')
EOF
installed_size=$(du -sk --exclude=DEBIAN "$root" | cut -f1)
cat > "$root/DEBIAN/control" <<EOF
Package: kioskd
Version: $version
Architecture: $arch
Maintainer: $maintainer
Installed-Size: $installed_size
Depends: $depends
Suggests: $suggests
Section: misc
Priority: optional
Description: kiosk display daemon for DRM/KMS screens and touch input
 kioskd turns a Linux board with a display and a touchscreen into a
 single-purpose kiosk. systemd starts it at boot; it takes the display
 directly through DRM/KMS (no X11, no Wayland), reads touch, pointer and
 keys through libinput, and shows scenes chosen by a config file: a colour
 clock, a scoreboard with rolling digits, a finger-painting table.
 .
 The package runs it as the unprivileged user kioskd with systemd's
 sandboxing, enables the unit on installation, and installs kioskctl, the
 client of its control socket. The configuration is /etc/kioskd/kioskd.toml.
EOF
for s in postinst prerm postrm; do install -m 0755 "packaging/debian/$s" "$root/DEBIAN/$s"; done
(cd "$root" && find . -path ./DEBIAN -prune -o -type f -printf '%P\0' | sort -z | xargs -0 md5sum) > "$root/DEBIAN/md5sums"
chmod 0644 "$root/DEBIAN/control" "$root/DEBIAN/conffiles" "$root/DEBIAN/md5sums"
find "$root" -type d -exec chmod 0755 {} +
find "$root" -exec touch -h -d "@$SOURCE_DATE_EPOCH" {} +

deb=$out/kioskd_${version}_$arch.deb
dpkg-deb --root-owner-group -Zxz -z0 --build "$root" "$deb" >/dev/null
# The data member compressed again: xz with the branch filter of the binary's machine code
# (x86 or arm64: call and jump targets made absolute, so repeated calls compress) before LZMA2
# at -9e (the first pass above is -z0, only for the small control member). dpkg, apt and
# reprepro read any xz stream (liblzma; the arm64 filter needs xz ≥ 5.4, bookworm and later);
# unpacking needs 65 MiB. amd64 11.30 → 10.05 MB, arm64 9.89 → 8.76 MB (BENCHMARKS.md,
# "Package size").
recompress_data() {
    local tmp
    tmp=$(mktemp -d)
    (cd "$tmp" && ar x "$1" && [ "$(ar t "$1" | tr '\n' ' ')" = "debian-binary control.tar.xz data.tar.xz " ] \
        && xz -dc data.tar.xz | xz -T1 "--$2" --lzma2=preset=9e -c > data.tar.xz.new && mv data.tar.xz.new data.tar.xz \
        && rm -f "$1" && ar rcD "$1" debian-binary control.tar.xz data.tar.xz) || { rm -rf "$tmp"; fail "cannot recompress $1"; }
    rm -rf "$tmp"
}
case "$arch" in amd64) recompress_data "$deb" x86 ;; arm64) recompress_data "$deb" arm64 ;; esac
echo "$deb" > "$out/READY.$arch"
cat "$out"/READY.* > "$out/READY"

# --- kioskd-dbgsym: the debug information stripped above, as dh_strip keeps it (a .ddeb, found by
# build id: /usr/lib/debug/.build-id/XX/REST.debug, sections compressed). Named in OUT/DBGSYM.ARCH,
# not in READY (the apt repository serves the packages a board installs).
build_id=$(readelf -n "$root/usr/bin/kioskd" | sed -n 's/^ *Build ID: *//p')
[ -n "$build_id" ] || fail "kioskd has no build id"
dbg=$work/dbgsym
debug_file=$dbg/usr/lib/debug/.build-id/${build_id:0:2}/${build_id:2}.debug
install -d "$dbg/DEBIAN" "$(dirname "$debug_file")" "$dbg/usr/share/doc"
"$strip" --only-keep-debug --compress-debug-sections=zlib "$kioskd_bin" "$debug_file"
chmod 0644 "$debug_file"
ln -s kioskd "$dbg/usr/share/doc/kioskd-dbgsym"
cat > "$dbg/DEBIAN/control" <<CONTROL
Package: kioskd-dbgsym
Source: kioskd
Version: $version
Architecture: $arch
Maintainer: $maintainer
Installed-Size: $(du -sk --exclude=DEBIAN "$dbg" | cut -f1)
Depends: kioskd (= $version)
Section: debug
Priority: optional
Auto-Built-Package: debug-symbols
Build-Ids: $build_id
Description: debug symbols for kioskd
CONTROL
chmod 0644 "$dbg/DEBIAN/control"
find "$dbg" -type d -exec chmod 0755 {} +
find "$dbg" -exec touch -h -d "@$SOURCE_DATE_EPOCH" {} +
ddeb=$out/kioskd-dbgsym_${version}_$arch.ddeb
dpkg-deb --root-owner-group -Zxz --build "$dbg" "$ddeb" >/dev/null
echo "$ddeb" > "$out/DBGSYM.$arch"
echo "package.sh: $deb ($(du -h "$deb" | cut -f1), $installed_size KB installed), $ddeb ($(du -h "$ddeb" | cut -f1)); Depends: $depends"
