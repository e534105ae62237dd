#!/usr/bin/env bash
# shellcheck disable=SC2015 # ok and bad always succeed
# Checks the signed apt repository (scripts/apt-repo.sh) with apt itself, isolated from this
# machine's apt (its own Dir=, no trusted keys but the repository's Signed-By):
#   - apt-get update accepts it with no warning; the candidate is the package's version; the .deb
#     apt downloads is byte for byte the one that went in;
#   - a new version added to the same repository is what `apt-get upgrade` would install over an
#     installed older one (this machine's dpkg status plus kioskd N);
#   - refused: an InRelease changed after signing, a Packages index changed under a good
#     InRelease, a .deb changed in the pool, the repository checked against another key;
#   - the signatures and the key use no SHA-1 (trixie's apt refuses SHA-1 since 2026-02-01):
#     digest algorithms from the packets, and sqv (the verifier trixie's apt calls) accepts
#     Release.gpg and refuses a changed Release.
# Packages: those out/deb/READY names (scripts/package.sh, one a line), or given.
# The upgrade of a running kiosk (score, pairings, conffile kept) is the VM's test, not this one.
set -euo pipefail
cd "$(dirname "$0")/.."
repo_root=$PWD
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
failures=0
ok() { echo "ok: $*"; }
bad() { echo "FAIL: $*" >&2; failures=$((failures + 1)); }

debs=("$@")
if [ ${#debs[@]} -eq 0 ]; then
    # out/deb/READY names every package built, one a line (READY.amd64, READY.arm64 each one).
    [ -f out/deb/READY ] && mapfile -t debs < out/deb/READY
fi
[ ${#debs[@]} -gt 0 ] || { echo "apt-repo-test: no packages (scripts/package.sh first, or give .deb files)" >&2; exit 1; }
amd64=
for d in "${debs[@]}"; do [ "$(dpkg-deb -f "$d" Architecture)" = amd64 ] && amd64=$d; done
[ -n "$amd64" ] || { echo "apt-repo-test: needs the amd64 package (apt here is amd64)" >&2; exit 1; }
version=$(dpkg-deb -f "$amd64" Version)

# The test key lives in the test's folder: a fresh key each run, never a real one.
export KIOSK_APT_GNUPGHOME=
new_key() {  # folder, user id: an Ed25519 signing key without passphrase in a new GnuPG home
    mkdir -m 700 "$1"
    GNUPGHOME=$1 gpg --batch --quiet --pinentry-mode loopback --passphrase '' --quick-generate-key "$2" ed25519 sign never
}
new_key "$tmp/key" "kioskd test archive (tests only) <archive@kioskd.invalid>"
repo=$tmp/apt
bash scripts/apt-repo.sh --out "$repo" --gnupghome "$tmp/key" "${debs[@]}" > "$tmp/repo.log" \
    && ok "apt-repo.sh made the repository ($(tail -n +2 "$tmp/repo.log" | tr '\n' ' '))" \
    || { cat "$tmp/repo.log" >&2; bad "apt-repo.sh failed"; exit 1; }
for f in dists/trixie/InRelease dists/trixie/Release dists/trixie/Release.gpg kioskd-archive-keyring.gpg kioskd.sources 52kioskd-unattended-upgrades; do
    [ -s "$repo/$f" ] || bad "no $f"
done
for d in "${debs[@]}"; do
    a=$(dpkg-deb -f "$d" Architecture)
    grep -qx "Version: $(dpkg-deb -f "$d" Version)" "$repo/dists/trixie/main/binary-$a/Packages" \
        && ok "binary-$a/Packages lists kioskd $(dpkg-deb -f "$d" Version)" || bad "binary-$a/Packages lacks $d"
done
[ ! -e "$repo/db" ] && [ ! -e "$repo/conf" ] && ok "reprepro's database and configuration are not served" || bad "db/ or conf/ in the served folder"

# An apt of its own: everything under $1, no keys trusted but the sources' Signed-By.
apt_root() {
    local r=$1
    mkdir -p "$r/etc/apt/sources.list.d" "$r/etc/apt/apt.conf.d" "$r/etc/apt/preferences.d" "$r/etc/apt/trusted.gpg.d" \
        "$r/var/lib/apt/lists/partial" "$r/var/cache/apt/archives/partial" "$r/var/lib/dpkg"
    : > "$r/var/lib/dpkg/status"
}
apt_in() {  # root, apt command and arguments
    local r=$1; shift
    local cmd=$1; shift
    "$cmd" -o Dir="$r" -o Dir::State::status="$r/var/lib/dpkg/status" -o Dir::Etc::trusted="$r/etc/apt/trusted.gpg" \
        -o Dir::Etc::trustedparts="$r/etc/apt/trusted.gpg.d" -o APT::Architecture=amd64 -o 'APT::Architectures::=amd64' \
        -o Debug::NoLocking=1 -o APT::Sandbox::User=root -o Acquire::Languages=none "$@"
}
sources() {  # root, repository folder, keyring
    cat > "$1/etc/apt/sources.list.d/kioskd.sources" <<EOF
Types: deb
URIs: file:$2
Suites: trixie
Components: main
Signed-By: $3
EOF
}

echo "== install from the repository"
a=$tmp/root-good
apt_root "$a"
sed "s|^URIs: .*|URIs: file:$repo|; s|^Signed-By: .*|Signed-By: $repo/kioskd-archive-keyring.gpg|" "$repo/kioskd.sources" \
    > "$a/etc/apt/sources.list.d/kioskd.sources"
if apt_in "$a" apt-get update > "$tmp/update.log" 2>&1; then ok "apt-get update with the example kioskd.sources"; else cat "$tmp/update.log" >&2; bad "apt-get update failed"; fi
if grep -E '^(W|E):' "$tmp/update.log"; then bad "apt-get update warned"; else ok "no warning from apt-get update"; fi
cand=$(apt_in "$a" apt-cache policy kioskd | awk '$1 == "Candidate:" { print $2 }')
[ "$cand" = "$version" ] && ok "candidate kioskd $cand" || bad "candidate is '$cand', not $version"
(cd "$tmp" && apt_in "$a" apt-get download -q kioskd > "$tmp/download.log" 2>&1) || { cat "$tmp/download.log" >&2; bad "apt-get download failed"; }
got=$(find "$tmp" -maxdepth 1 -name 'kioskd_*_amd64.deb' | head -1)
[ -n "$got" ] && cmp -s "$got" "$amd64" && ok "the downloaded .deb is the one that went in" || bad "downloaded package differs or is missing"
rm -f "$tmp"/kioskd_*.deb

echo "== a new version in the same repository"
# The same package with the next Debian revision (the repository's path; the new build itself is the VM's test).
next=${version%-*}-$((${version##*-} + 1))
mkdir "$tmp/repack"
dpkg-deb -R "$amd64" "$tmp/repack/x"
sed -i "s/^Version: .*/Version: $next/" "$tmp/repack/x/DEBIAN/control"
dpkg-deb -b -Zgzip -z1 "$tmp/repack/x" "$tmp/repack/kioskd_${next}_amd64.deb" >/dev/null
bash scripts/apt-repo.sh --out "$repo" --gnupghome "$tmp/key" "$tmp/repack/kioskd_${next}_amd64.deb" > "$tmp/repo2.log"
grep -qx "Version: $next" "$repo/dists/trixie/main/binary-amd64/Packages" && ! grep -qx "Version: $version" "$repo/dists/trixie/main/binary-amd64/Packages" \
    && ok "the index now names $next only" || bad "the index after adding $next: $(grep '^Version' "$repo/dists/trixie/main/binary-amd64/Packages" | tr '\n' ' ')"
# This machine's packages plus kioskd N installed: upgrade would install N+1.
cp /var/lib/dpkg/status "$a/var/lib/dpkg/status"
{ echo; dpkg-deb -f "$amd64" Package Version Architecture Maintainer Depends Description | sed '1a Status: install ok installed'; } >> "$a/var/lib/dpkg/status"
apt_in "$a" apt-get update -q > "$tmp/update2.log" 2>&1 || { cat "$tmp/update2.log" >&2; bad "apt-get update after the new version"; }
apt_in "$a" apt-get -s upgrade > "$tmp/upgrade.log" 2>&1 || true
if grep -qF "Inst kioskd [$version] ($next " "$tmp/upgrade.log"; then
    ok "apt-get upgrade would replace kioskd $version by $next"
else
    tail -5 "$tmp/upgrade.log" >&2; bad "apt-get -s upgrade does not upgrade kioskd $version to $next"
fi

echo "== what apt must refuse"
refused() {  # name, repository copy, keyring, pattern the error must match
    local name=$1 r=$tmp/root-$1
    apt_root "$r"
    sources "$r" "$2" "$3"
    if apt_in "$r" apt-get update > "$tmp/$name.log" 2>&1 && ! grep -qE '^(W|E):' "$tmp/$name.log"; then
        bad "$name: apt-get update accepted it"
    elif ! grep -qE "$4" "$tmp/$name.log"; then
        cat "$tmp/$name.log" >&2; bad "$name: refused, but not with /$4/"
    elif [ -n "$(find "$r/var/lib/apt/lists" -name '*_Packages*' -print -quit)" ]; then
        bad "$name: a Packages index was kept"
    else
        ok "$name refused: $(grep -E '^(W|E):' "$tmp/$name.log" | head -1 | cut -c1-150)"
    fi
}
cp -a "$repo" "$tmp/t1"
# One letter of the signed text changed (the Description line), the signature left as it was.
sed -i 's/^Description: kioskd, a kiosk display daemon/Description: kioskd, a kiosk display daemoN/' "$tmp/t1/dists/trixie/InRelease"
grep -q daemoN "$tmp/t1/dists/trixie/InRelease" || bad "the InRelease change did not apply"
refused "tampered-InRelease" "$tmp/t1" "$repo/kioskd-archive-keyring.gpg" "BADSIG|not signed|signatures were invalid|invalid"
cp -a "$repo" "$tmp/t2"
rm -f "$tmp/t2/dists/trixie/main/binary-amd64/Packages.gz" "$tmp/t2/dists/trixie/main/binary-amd64/Packages.xz"
sed -i 's/^Depends: /Depends: evil-package, /' "$tmp/t2/dists/trixie/main/binary-amd64/Packages"
refused "tampered-Packages" "$tmp/t2" "$repo/kioskd-archive-keyring.gpg" "Hash Sum mismatch|unexpected size|File has unexpected"
new_key "$tmp/other" "someone else <x@kioskd.invalid>"
GNUPGHOME=$tmp/other gpg --batch --export > "$tmp/other.gpg"
refused "another-key" "$repo" "$tmp/other.gpg" "NO_PUBKEY|not signed|public key is not available"
# A .deb changed in the pool after the index was signed.
cp -a "$repo" "$tmp/t3"
p=$(find "$tmp/t3/pool" -name "kioskd_${next}_amd64.deb")
printf 'x' | dd of="$p" bs=1 seek=2000 conv=notrunc status=none
r=$tmp/root-t3
apt_root "$r"
sources "$r" "$tmp/t3" "$repo/kioskd-archive-keyring.gpg"
apt_in "$r" apt-get update -q > /dev/null 2>&1 || bad "update of the repository with a changed .deb"
if (cd "$tmp" && apt_in "$r" apt-get download -q kioskd > "$tmp/t3.log" 2>&1); then
    bad "a changed .deb was downloaded"
else
    grep -qE "Hash Sum mismatch|unexpected size" "$tmp/t3.log" && ok "a .deb changed in the pool refused: $(grep -E '^E:' "$tmp/t3.log" | head -1 | cut -c1-120)" \
        || { cat "$tmp/t3.log" >&2; bad "changed .deb refused for another reason"; }
fi

echo "== no SHA-1 anywhere"
export GNUPGHOME=$tmp/key
# The signatures of InRelease (its armoured block) and of Release.gpg.
{ sed -n '/-----BEGIN PGP SIGNATURE/,$p' "$repo/dists/trixie/InRelease" | gpg --batch --list-packets
  gpg --batch --list-packets "$repo/dists/trixie/Release.gpg"; } > "$tmp/sig.txt" 2>/dev/null || true
algo=$(awk '/digest algo/ { for (i = 1; i <= NF; i++) if ($i == "algo") { sub(",", "", $(i+1)); print $(i+1) } }' "$tmp/sig.txt" | sort -u | xargs)
case " $algo " in
    *" 2 "*|"  ") bad "InRelease's signature digest algorithm: '$algo' (2 is SHA-1)" ;;
    *) ok "InRelease and Release.gpg signed with digest algorithm $algo (8 SHA-256, 10 SHA-512)" ;;
esac
gpg --batch --list-packets "$repo/kioskd-archive-keyring.gpg" > "$tmp/key.txt" 2>/dev/null || true
grep -A1 ':public key packet:' "$tmp/key.txt" | grep -q 'algo 22,' && ok "the key is EdDSA (Ed25519)" || bad "the key is not Ed25519: $(grep -A1 -m1 ':public key packet:' "$tmp/key.txt" | tail -1)"
if grep 'digest algo' "$tmp/key.txt" | grep -q 'digest algo 2,'; then bad "a self-signature of the key uses SHA-1"; else ok "the key's self-signatures use $(grep -o 'digest algo [0-9]*' "$tmp/key.txt" | sort -u | xargs)"; fi
if command -v sqv >/dev/null; then
    sqv --keyring "$repo/kioskd-archive-keyring.gpg" "$repo/dists/trixie/Release.gpg" "$repo/dists/trixie/Release" >/dev/null 2>&1 \
        && ok "sqv (trixie's apt verifier) accepts Release.gpg" || bad "sqv refuses Release.gpg"
    sed 's/^Label: kioskd/Label: kioskD/' "$repo/dists/trixie/Release" > "$tmp/Release.changed"
    if sqv --keyring "$repo/kioskd-archive-keyring.gpg" "$repo/dists/trixie/Release.gpg" "$tmp/Release.changed" >/dev/null 2>&1; then
        bad "sqv accepts a changed Release"
    else
        ok "sqv refuses a changed Release"
    fi
else
    bad "sqv is missing (apt-get install sqv; scripts/apt-package.txt)"
fi
grep -q '"origin=kioskd,label=kioskd"' "$repo/52kioskd-unattended-upgrades" && grep -qx 'Origin: kioskd' "$repo/dists/trixie/Release" \
    && grep -qx 'Label: kioskd' "$repo/dists/trixie/Release" && ok "unattended-upgrades' pattern matches the Release's Origin and Label" \
    || bad "unattended-upgrades pattern and Release disagree"

cd "$repo_root"
if [ "$failures" -gt 0 ]; then echo "apt-repo-test: $failures failure(s)" >&2; exit 1; fi
echo "apt-repo-test: all checks passed"
