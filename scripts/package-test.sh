#!/usr/bin/env bash
# shellcheck disable=SC2015 # ok and bad always succeed
# Builds the amd64 package (scripts/package.sh) and checks it:
#   - the file list, modes and owners, conffiles, control fields;
#   - Depends names the libraries kioskd links (libdrm2, libinput10, libcairo2, pango …), nothing
#     of Swift, and scripts/deb-shlibs.py (used for arm64) computes the same as dpkg-shlibdeps;
#   - the binaries load no libswift*.so and run (--help, --check-config of the packaged config);
#   - lintian reports no errors;
#   - the packaged unit passes scripts/check-systemd.sh (systemd-analyze verify and security);
#   - the maintainer scripts under shellcheck, and a real dpkg install, remove and purge into an
#     empty directory (dpkg --root, scripts run outside a chroot with DPKG_ROOT set): the user
#     from sysusers.d, the unit enabled, state and config gone after purge;
#   - the arm64 .deb when there is one (the same files, AArch64 binaries, lintian; with SYSROOT or
#     .build-arm64/READY, --check-config under qemu-user).
# PACKAGE_TEST_NO_BUILD=1 checks an existing out/deb/kioskd_*_amd64.deb.
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$PWD
export PATH=/opt/swift/usr/bin:$PATH
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
failures=0
ok() { echo "ok: $*"; }
bad() { echo "FAIL: $*" >&2; failures=$((failures + 1)); }

arch=amd64
version=$(tr -d ' \n' < VERSION)-1
deb=out/deb/kioskd_${version}_$arch.deb
if [ "${PACKAGE_TEST_NO_BUILD:-0}" != 1 ]; then
    bash scripts/package.sh --arch "$arch"
fi
[ -f "$deb" ] || { echo "package-test: no $deb" >&2; exit 1; }
grep -qx "$repo/$deb" out/deb/READY && ok "out/deb/READY names $deb" || bad "out/deb/READY does not name $deb"

echo "== contents"
# Every file and directory, with mode and owner.
dpkg-deb -c "$deb" | awk '{ print $1, $2, $6 }' | sed 's|^\(.*\) \./|\1 /|; s|/$||' | sort -k3 > "$tmp/list"
cat > "$tmp/expected-files" <<EOF
-rwxr-xr-x /usr/bin/kioskd
lrwxrwxrwx /usr/bin/kioskctl
-rw-r--r-- /usr/lib/systemd/system/kioskd.service
-rw-r--r-- /usr/lib/sysusers.d/kioskd.conf
-rw-r--r-- /usr/lib/udev/rules.d/90-kioskd-backlight.rules
-rw-r--r-- /etc/kioskd/kioskd.toml
$(for t in config/themes/*.toml; do echo "-rw-r--r-- /etc/kioskd/themes/$(basename "$t")"; done)
-rw-r--r-- /usr/share/man/man8/kioskd.8.gz
-rw-r--r-- /usr/share/man/man1/kioskctl.1.gz
-rw-r--r-- /usr/share/doc/kioskd/copyright
-rw-r--r-- /usr/share/doc/kioskd/changelog.Debian.gz
-rw-r--r-- /usr/share/doc/kioskd/README.md
$(for d in docs/*.md; do echo "-rw-r--r-- /usr/share/doc/kioskd/$(basename "$d")"; done)
-rw-r--r-- /usr/share/doc/kioskd/examples/wall-clock.toml
-rw-r--r-- /usr/share/doc/kioskd/examples/scoreboard.toml
-rw-r--r-- /usr/share/doc/kioskd/examples/painting-kiosk.toml
EOF
awk '$1 !~ /^d/ { print $1, $3 }' "$tmp/list" | sort > "$tmp/files"
if diff <(sort "$tmp/expected-files") "$tmp/files"; then ok "file list and modes"; else bad "file list differs (< expected, > packaged)"; fi
if awk '$2 != "root/root" { exit 1 }' "$tmp/list"; then ok "everything root/root"; else bad "a file not owned by root/root"; fi
if grep -q '/usr/local' "$tmp/list"; then bad "a path under /usr/local"; else ok "nothing under /usr/local"; fi

echo "== control"
mkdir -p "$tmp/ctl" "$tmp/x"
dpkg-deb -e "$deb" "$tmp/ctl"
dpkg-deb -x "$deb" "$tmp/x"
(cd "$tmp/x" && find etc -type f | sed 's|^|/|' | sort) > "$tmp/etc-files"
if diff "$tmp/etc-files" <(sort "$tmp/ctl/conffiles"); then ok "conffiles are every file in /etc"; else bad "conffiles differ from the files in /etc"; fi
grep -qx /etc/kioskd/kioskd.toml "$tmp/ctl/conffiles" && ok "kioskd.toml is a conffile" || bad "kioskd.toml is not a conffile"
for f in Package Version Architecture Maintainer Installed-Size Depends Section Priority Description; do
    [ -n "$(dpkg-deb -f "$deb" "$f")" ] || bad "no $f field"
done
[ "$(dpkg-deb -f "$deb" Version)" = "$version" ] && ok "Version $version (VERSION file)" || bad "Version is $(dpkg-deb -f "$deb" Version)"
[ "$(dpkg-deb -f "$deb" Architecture)" = "$arch" ] || bad "Architecture is not $arch"
depends=$(dpkg-deb -f "$deb" Depends)
echo "Depends: $depends"
for p in libc6 libdrm2 libinput10 libudev1 libsystemd0 libcairo2 libpango-1.0-0 libpangocairo-1.0-0 libstdc++6 fonts-dejavu-core tzdata; do
    if printf '%s\n' "$depends" | tr ',' '\n' | awk -v p="$p" '$1 == p { found = 1 } END { exit !found }'; then ok "Depends: $p"; else bad "Depends lacks $p"; fi
done
printf '%s\n' "$depends" | grep -c 'systemd | systemd-sysusers' >/dev/null && ok "Depends: systemd | systemd-sysusers" || bad "Depends lacks systemd | systemd-sysusers"
if printf '%s\n' "$depends" | grep -qi swift; then bad "Depends names Swift: $depends"; else ok "no Swift package in Depends"; fi
# deb-shlibs.py (the arm64 path) must agree with dpkg-shlibdeps here.
mine=$(python3 scripts/deb-shlibs.py --root / --arch amd64 --triplet x86_64-linux-gnu "$tmp/x/usr/bin/kioskd" "$tmp/x/usr/bin/kioskctl")
# (Depends is the shared libraries' part, then the packages package.sh names itself from
# fonts-dejavu-core on: those are checked one by one above.)
if [ "${depends%%, fonts-dejavu-core*}" = "$mine" ]; then ok "deb-shlibs.py gives dpkg-shlibdeps's result"; else bad "deb-shlibs.py: $mine; the package's shared libraries: ${depends%%, fonts-dejavu-core*}"; fi
(cd "$tmp/x" && find . -type f ! -path './DEBIAN/*' -printf '%P\0' | sort -z | xargs -0 md5sum) | diff - <(sort -k2 "$tmp/ctl/md5sums") >/dev/null \
    && ok "md5sums match the files" || bad "md5sums do not match"

echo "== binaries"
# One binary: kioskd called kioskctl is kioskctl (the static Swift runtime, Foundation and ICU once).
[ "$(readlink "$tmp/x/usr/bin/kioskctl")" = kioskd ] && ok "kioskctl is a link to kioskd" || bad "kioskctl is not a link to kioskd"
for b in kioskd kioskctl; do
    d=$(readelf -d "$tmp/x/usr/bin/$b")
    if printf '%s\n' "$d" | grep -c 'libswift\|libFoundation\|libdispatch\|libBlocksRuntime' >/dev/null; then bad "$b loads the Swift runtime: $(printf '%s\n' "$d" | grep -o 'lib[A-Za-z_]*\.so[.0-9]*' | tr '\n' ' ')"; else ok "$b: no Swift runtime library in NEEDED"; fi
    if printf '%s\n' "$d" | grep -c 'RPATH\|RUNPATH' >/dev/null; then bad "$b has an RPATH/RUNPATH"; fi
    # Load it: every NEEDED library resolves from the system alone.
    if env -i "$tmp/x/usr/bin/$b" --help > "$tmp/$b.help" 2>&1 && grep -q "USAGE" "$tmp/$b.help"; then ok "$b --help runs"; else bad "$b --help: $(head -3 "$tmp/$b.help")"; fi
done
if env -i "$tmp/x/usr/bin/kioskd" --check-config --config "$tmp/x/etc/kioskd/kioskd.toml" > "$tmp/check.txt" 2>&1; then
    ok "kioskd --check-config accepts the packaged kioskd.toml"
else
    bad "kioskd --check-config on the packaged config: $(cat "$tmp/check.txt")"
fi
# No shell from `apt install` to a configured kiosk: the packaged config serves the phone page on
# the LAN port docs/web.md and docs/install.md name, with the first-boot setup code (the unit's IP
# allowances are checked below).
web=$(sed -n '/^\[web\]/,/^\[/p' "$tmp/x/etc/kioskd/kioskd.toml")
if printf '%s\n' "$web" | grep -c '^listen = "0\.0\.0\.0:8080"' >/dev/null && printf '%s\n' "$web" | grep -c '^setup = true' >/dev/null; then
    ok "the packaged kioskd.toml serves the phone page on port 8080 with the first-boot setup code"
else
    bad "the packaged kioskd.toml has no [web] listen = \"0.0.0.0:8080\" with setup = true: $web"
fi
# The wall clock example's Europe/Berlin is looked up in the cut-down ICU data (scripts/icu-data.py;
# an unknown zone is a config error).
if env -i "$tmp/x/usr/bin/kioskd" --check-config --config "$tmp/x/usr/share/doc/kioskd/examples/wall-clock.toml" > "$tmp/check.txt" 2>&1; then
    ok "kioskd --check-config accepts wall-clock.toml (time zone Europe/Berlin)"
else
    bad "kioskd --check-config on wall-clock.toml: $(cat "$tmp/check.txt")"
fi
# The size the package was cut to (BENCHMARKS.md, "Package size"): 70.7 MB with all of ICU's data.
size=$(stat -c %s "$tmp/x/usr/bin/kioskd")
[ "$size" -lt 50000000 ] && ok "kioskd is $((size / 1000000)) MB (under 50 MB)" || bad "kioskd is $((size / 1000000)) MB: over 50 MB (all of ICU's data linked again?)"
zcat "$tmp/x/usr/share/man/man8/kioskd.8.gz" | grep -c -- 'check\\-config' >/dev/null && ok "kioskd.8 describes --check-config" || bad "kioskd.8 lacks --check-config"
zcat "$tmp/x/usr/share/man/man1/kioskctl.1.gz" | grep -c 'status' >/dev/null && ok "kioskctl.1 lists the subcommands" || bad "kioskctl.1 lacks status"

echo "== kioskd-dbgsym"
ddeb=out/deb/kioskd-dbgsym_${version}_$arch.ddeb
if [ -f "$ddeb" ]; then
    mkdir -p "$tmp/dbg"
    dpkg-deb -x "$ddeb" "$tmp/dbg"
    id=$(readelf -n "$tmp/x/usr/bin/kioskd" | sed -n 's/^ *Build ID: *//p')
    [ -n "$id" ] && [ "$(dpkg-deb -f "$ddeb" Build-Ids)" = "$id" ] && ok "kioskd-dbgsym: Build-Ids is kioskd's build id $id" || bad "kioskd-dbgsym: Build-Ids $(dpkg-deb -f "$ddeb" Build-Ids), kioskd's build id '$id'"
    [ "$(dpkg-deb -f "$ddeb" Depends)" = "kioskd (= $version)" ] && ok "kioskd-dbgsym: Depends kioskd (= $version)" || bad "kioskd-dbgsym: Depends $(dpkg-deb -f "$ddeb" Depends)"
    f=$tmp/dbg/usr/lib/debug/.build-id/${id:0:2}/${id:2}.debug
    if [ -f "$f" ] && readelf -S "$f" | grep -c '\.debug_info' >/dev/null && [ "$(readelf -n "$f" | sed -n 's/^ *Build ID: *//p')" = "$id" ]; then
        ok "kioskd-dbgsym: /usr/lib/debug/.build-id/${id:0:2}/${id:2}.debug holds this kioskd's debug information"
    else
        bad "kioskd-dbgsym: no debug information for build id $id"
    fi
else
    bad "no $ddeb"
fi
if readelf -S "$tmp/x/usr/bin/kioskd" | grep -c '\.debug_\|\.symtab' >/dev/null; then bad "the packaged kioskd keeps debug information or a symbol table"; else ok "the packaged kioskd is stripped"; fi

echo "== lintian"
if lintian --fail-on error --no-tag-display-limit "$deb" > "$tmp/lintian.txt" 2>&1; then
    ok "lintian: no errors ($(grep -c '^W:' "$tmp/lintian.txt" || true) warnings)"
else
    bad "lintian reported errors"
fi
cat "$tmp/lintian.txt"

echo "== the unit"
unit=$tmp/x/usr/lib/systemd/system/kioskd.service
grep -q '^ExecStart=/usr/bin/kioskd ' "$unit" && ok "ExecStart=/usr/bin/kioskd" || bad "ExecStart is not /usr/bin/kioskd"
grep -q '^StateDirectory=kioskd' "$unit" && ok "StateDirectory= (no tmpfiles.d needed)" || bad "the unit has no StateDirectory=; a tmpfiles.d entry would be needed"
# The phone page of the packaged config is reached from the local network, nothing else.
if grep -c '^RestrictAddressFamilies=.*AF_INET ' "$unit" >/dev/null && grep -c '^IPAddressDeny=any$' "$unit" >/dev/null \
    && grep -c '^IPAddressAllow=localhost link-local multicast 10\.0\.0\.0/8 172\.16\.0\.0/12 192\.168\.0\.0/16 100\.64\.0\.0/10 fc00::/7$' "$unit" >/dev/null; then
    ok "the unit allows IP to and from the local network only (docs/install.md)"
else
    bad "the unit's IP allowances differ from docs/install.md: $(grep -E '^(RestrictAddressFamilies|IPAddress)' "$unit" | tr '\n' ' ')"
fi
sed "s|/usr/bin/kioskd|$tmp/x/usr/bin/kioskd|g" "$unit" > "$tmp/kioskd.service"
if UNIT="$tmp/kioskd.service" KIOSKD_BIN="$tmp/x/usr/bin/kioskd" bash scripts/check-systemd.sh > "$tmp/check-systemd.txt" 2>&1; then
    ok "scripts/check-systemd.sh on the packaged unit"
else
    cat "$tmp/check-systemd.txt"; bad "scripts/check-systemd.sh on the packaged unit"
fi
diff <(sed -n "/^cat > .*90-kioskd-backlight\.rules.*<<'RULE'/,/^RULE\$/p" scripts/install.sh | sed '1d;$d') \
    "$tmp/x/usr/lib/udev/rules.d/90-kioskd-backlight.rules" && ok "udev rule as scripts/install.sh writes it" || bad "udev rule differs"

echo "== maintainer scripts"
for s in postinst prerm postrm; do
    head -1 "$tmp/ctl/$s" | grep -cx '#!/bin/sh' >/dev/null || bad "$s is not #!/bin/sh"
    grep -qx 'set -e' "$tmp/ctl/$s" || bad "$s has no set -e"
done
if command -v shellcheck >/dev/null; then
    shellcheck -s sh "$tmp/ctl/postinst" "$tmp/ctl/prerm" "$tmp/ctl/postrm" && ok "shellcheck (POSIX sh)" || bad "shellcheck"
fi
# A real install into an empty root: dpkg runs the scripts on this host with DPKG_ROOT set
# (--force-script-chrootless), so the sysusers and deb-systemd-helper steps act on $r only.
r=$tmp/root
mkdir -p "$r/var/lib/dpkg/info" "$r/var/lib/dpkg/updates" "$r/etc" "$r/usr/sbin"
: > "$r/var/lib/dpkg/status"
dpkgr() { dpkg --root="$r" --force-script-chrootless --force-depends --force-not-root --log=/dev/null "$@"; }
if dpkgr -i "$deb" > "$tmp/dpkg.txt" 2>&1; then ok "dpkg -i into an empty root"; else cat "$tmp/dpkg.txt"; bad "dpkg -i"; fi
grep -q '^kioskd:x:[0-9]*:[0-9]*:kioskd kiosk display daemon:/var/lib/kioskd:/usr/sbin/nologin$' "$r/etc/passwd" 2>/dev/null \
    && ok "postinst: user kioskd (sysusers.d)" || bad "no kioskd user in $r/etc/passwd: $(cat "$r/etc/passwd" 2>/dev/null)"
for g in video input render kioskctl; do
    grep -q "^$g:x:[0-9]*:.*kioskd" "$r/etc/group" 2>/dev/null && ok "kioskd in group $g" || bad "kioskd not in group $g"
done
[ -L "$r/etc/systemd/system/multi-user.target.wants/kioskd.service" ] && ok "postinst: unit enabled (multi-user.target.wants)" || bad "unit not enabled"
echo 'theme = "x"' > "$r/etc/kioskd/themes/extra.toml"
mkdir -p "$r/var/lib/kioskd" && echo 1 > "$r/var/lib/kioskd/state"
if dpkgr -r kioskd > "$tmp/dpkg-r.txt" 2>&1; then ok "dpkg -r"; else cat "$tmp/dpkg-r.txt"; bad "dpkg -r"; fi
[ ! -e "$r/usr/bin/kioskd" ] && [ -e "$r/etc/kioskd/kioskd.toml" ] && ok "remove: binaries gone, config kept" || bad "remove: wrong files left"
[ -e "$r/var/lib/kioskd/state" ] && ok "remove: state kept" || bad "remove: state deleted"
if dpkgr -P kioskd > "$tmp/dpkg-p.txt" 2>&1; then ok "dpkg -P"; else cat "$tmp/dpkg-p.txt"; bad "dpkg -P"; fi
[ ! -e "$r/etc/kioskd" ] && [ ! -e "$r/var/lib/kioskd" ] && ok "purge: /etc/kioskd and /var/lib/kioskd gone" || bad "purge left $(ls -d "$r/etc/kioskd" "$r/var/lib/kioskd" 2>/dev/null)"
if [ -e "$r/etc/systemd/system/multi-user.target.wants/kioskd.service" ] || [ -L "$r/etc/systemd/system/kioskd.service" ]; then
    bad "purge left the unit's symlinks"
else
    ok "purge: no enable or mask symlink left"
fi

echo "== $deb: $(du -h "$deb" | cut -f1), installed $(dpkg-deb -f "$deb" Installed-Size) KiB"

# The arm64 package, when scripts/package.sh --arch arm64 has made one: the same files, aarch64
# binaries without the Swift runtime, Debian 13's library packages, lintian.
arm=out/deb/kioskd_${version}_arm64.deb
if [ -f "$arm" ]; then
    echo "== $arm"
    dpkg-deb -c "$arm" | awk '$1 !~ /^d/ { print $1, $6 }' | sed 's| \./| /|' | sort > "$tmp/arm-files"
    if diff "$tmp/files" "$tmp/arm-files"; then ok "arm64: the same files and modes as amd64"; else bad "arm64: files differ from amd64"; fi
    [ "$(dpkg-deb -f "$arm" Architecture)" = arm64 ] || bad "arm64: Architecture is not arm64"
    mkdir -p "$tmp/a"
    dpkg-deb -x "$arm" "$tmp/a"
    for b in kioskd kioskctl; do
        readelf -h "$tmp/a/usr/bin/$b" | grep -c 'Machine:.*AArch64' >/dev/null || bad "arm64: $b is not an AArch64 binary"
        if readelf -d "$tmp/a/usr/bin/$b" | grep -c 'libswift\|RPATH\|RUNPATH' >/dev/null; then bad "arm64: $b loads the Swift runtime or has a RUNPATH"; else ok "arm64: $b without libswift or RUNPATH"; fi
    done
    adeps=$(dpkg-deb -f "$arm" Depends)
    echo "Depends: $adeps"
    for p in libc6 libdrm2 libinput10 libudev1 libsystemd0 libcairo2 libpango-1.0-0 libpangocairo-1.0-0 libglib2.0-0t64 fonts-dejavu-core; do
        printf '%s\n' "$adeps" | tr ',' '\n' | awk -v p="$p" '$1 == p { found = 1 } END { exit !found }' || bad "arm64: Depends lacks $p"
    done
    if printf '%s\n' "$adeps" | grep -qi swift; then bad "arm64: Depends names Swift"; else ok "arm64: Depends names Debian 13's libraries, nothing of Swift"; fi
    if lintian --fail-on error --tag-display-limit 0 "$arm" > "$tmp/lintian-arm64.txt" 2>&1; then
        ok "arm64: lintian: no errors ($(grep -c '^W:' "$tmp/lintian-arm64.txt" || true) warnings)"
    else
        bad "arm64: lintian reported errors"
    fi
    grep -E '^[EWI]:' "$tmp/lintian-arm64.txt" || true
    # The packaged config, checked by the aarch64 kioskd under qemu-user with the sysroot's libraries.
    sysroot=${SYSROOT:-$(sed -n "s/^sysroot=//p" .build-arm64/READY 2>/dev/null || true)}
    if [ -n "$sysroot" ] && [ -d "$sysroot" ] && command -v qemu-aarch64-static >/dev/null; then
        if qemu-aarch64-static -L "$sysroot" "$tmp/a/usr/bin/kioskd" --check-config --config "$tmp/a/etc/kioskd/kioskd.toml" > "$tmp/arm-check.txt" 2>&1; then
            ok "arm64: kioskd --check-config (qemu-user) accepts the packaged kioskd.toml"
        else
            bad "arm64: kioskd --check-config under qemu-user: $(cat "$tmp/arm-check.txt")"
        fi
    fi
fi
if [ "$failures" -gt 0 ]; then
    echo "package-test: $failures FAILED" >&2
    exit 1
fi
echo "package-test: OK"
