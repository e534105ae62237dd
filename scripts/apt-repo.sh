#!/usr/bin/env bash
# A signed apt repository of kioskd's packages, made by reprepro:
#   scripts/apt-repo.sh [--out DIR] [--suite NAME] [--gnupghome DIR] [DEB...]
# DEBs default to the packages out/deb/READY names (scripts/package.sh, one a line).
# Writes DIR (default out/apt):
#   dists/SUITE/{InRelease,Release,Release.gpg}, dists/SUITE/main/binary-{amd64,arm64}/Packages*,
#   pool/main/k/kioskd/*.deb            the repository (serve DIR over HTTP, or a file: URI)
#   kioskd-archive-keyring.gpg          the public key (binary OpenPGP, for Signed-By:)
#   kioskd.sources                      a deb822 source for /etc/apt/sources.list.d/ (URIs: to edit)
#   52kioskd-unattended-upgrades        lets unattended-upgrades install kioskd's updates
#   KEY                                 the signing key's fingerprint
# The signing key: --gnupghome DIR (or KIOSK_APT_GNUPGHOME) holds the real archive key, which never
# goes in git. Without one, a test key is generated once into out/apt-test-key (Ed25519, no
# passphrase, SHA-512 signatures: trixie's apt refuses SHA-1 since 2026-02-01) — for tests only.
# reprepro's own configuration and database live beside it, in DIR.db (kept, so that a later run
# adds a new version to the same repository); DIR itself holds only what apt fetches.
# Packages already in the repository with the same version are kept; a new version of a package
# replaces the older one in the index (the .debs of earlier versions stay out of the index).
set -euo pipefail
cd "$(dirname "$0")/.."
umask 022

out=out/apt
suite=trixie
gnupghome=${KIOSK_APT_GNUPGHOME:-}
debs=()
while [ $# -gt 0 ]; do
    case "$1" in
        --out) out=$2; shift ;;
        --suite) suite=$2; shift ;;
        --gnupghome) gnupghome=$2; shift ;;
        -*) echo "apt-repo.sh: unknown option $1 (use --out, --suite, --gnupghome, then .deb files)" >&2; exit 2 ;;
        *) debs+=("$1") ;;
    esac
    shift
done
fail() { echo "apt-repo.sh: $*" >&2; exit 1; }
for c in reprepro gpg gpgconf; do
    command -v "$c" >/dev/null || fail "$c is missing (apt-get install reprepro gpg gpg-agent; scripts/apt-package.txt)"
done
if [ ${#debs[@]} -eq 0 ]; then
    # out/deb/READY names every package built, one a line (READY.amd64, READY.arm64 each one).
    [ -f out/deb/READY ] && mapfile -t debs < out/deb/READY
fi
[ ${#debs[@]} -gt 0 ] || fail "no packages: give .deb files, or build them first (scripts/package.sh [--arch arm64])"
for d in "${debs[@]}"; do
    [ -f "$d" ] || fail "no such package: $d"
    dpkg-deb -f "$d" Package >/dev/null 2>&1 || fail "$d is not a Debian package"
done

if [ -z "$gnupghome" ]; then
    gnupghome=out/apt-test-key
    if [ ! -f "$gnupghome/pubring.kbx" ] || ! GNUPGHOME=$gnupghome gpg --batch --list-secret-keys 2>/dev/null | grep -q sec; then
        rm -rf "$gnupghome"
        mkdir -p "$gnupghome"
        chmod 700 "$gnupghome"
        GNUPGHOME=$gnupghome gpg --batch --quiet --pinentry-mode loopback --passphrase '' \
            --quick-generate-key "kioskd test archive (tests only) <archive@kioskd.invalid>" ed25519 sign never
        echo "apt-repo.sh: generated a test signing key in $gnupghome (for tests only; --gnupghome names a real one)"
    fi
fi
[ -d "$gnupghome" ] || fail "--gnupghome $gnupghome: no such folder"
gnupghome=$(cd "$gnupghome" && pwd)
export GNUPGHOME=$gnupghome
fpr=$(gpg --batch --with-colons --list-secret-keys 2>/dev/null | awk -F: '$1 == "fpr" { print $10; exit }')
[ -n "$fpr" ] || fail "no secret key in $gnupghome"
# Signing keys whose self-signature uses SHA-1 are refused by trixie's apt (sqv) since 2026-02-01.
if gpg --batch --export "$fpr" | gpg --batch --list-packets 2>/dev/null | grep -q 'digest algo 2,'; then
    fail "key $fpr has a SHA-1 signature; trixie's apt refuses it (make an Ed25519 or RSA ≥ 3072 key with SHA-256 or better)"
fi

mkdir -p "$out" "$out.db/conf"
out=$(cd "$out" && pwd)
state=$out.db
archs=$(for d in "${debs[@]}"; do dpkg-deb -f "$d" Architecture; done | sort -u | xargs)
cat > "$state/conf/distributions" <<EOF
Origin: kioskd
Label: kioskd
Codename: $suite
Suite: $suite
Architectures: amd64 arm64
Components: main
Description: kioskd, a kiosk display daemon
SignWith: $fpr
EOF
rr=(reprepro --silent --basedir "$state" --outdir "$out")
for d in "${debs[@]}"; do
    "${rr[@]}" includedeb "$suite" "$d"
done
"${rr[@]}" export "$suite"

gpg --batch --export "$fpr" > "$out/kioskd-archive-keyring.gpg"
echo "$fpr" > "$out/KEY"
cat > "$out/kioskd.sources" <<EOF
# /etc/apt/sources.list.d/kioskd.sources — kioskd's apt repository. Put the repository's address
# in URIs (https://… or file:/…) and the key in /usr/share/keyrings/kioskd-archive-keyring.gpg.
Types: deb
URIs: file:$out
Suites: $suite
Components: main
Signed-By: /usr/share/keyrings/kioskd-archive-keyring.gpg
EOF
cat > "$out/52kioskd-unattended-upgrades" <<'EOF'
// /etc/apt/apt.conf.d/52kioskd-unattended-upgrades — unattended-upgrades also installs updates
// from kioskd's repository (its Release file says Origin: kioskd, Label: kioskd).
Unattended-Upgrade::Origins-Pattern {
        "origin=kioskd,label=kioskd";
};
EOF
echo "apt-repo.sh: $out (suite $suite, architectures $archs, key $fpr)"
"${rr[@]}" list "$suite"
