#!/usr/bin/env bash
# Builds the release kioskd as the amd64 package ships it, in .build-bench (scripts/test.sh's
# benchmark and process tests run this binary, scripts/package.sh packages it: one link for
# both): the static Swift runtime (Package.swift), the ICU data cut down to what kioskd reaches
# (scripts/icu-data.py; nothing is taken from it when no ICU is linked) and lld's link map. Then
# checks that map: the bytes loaded per library, and kioskd links FoundationEssentials alone,
# nothing of full Foundation or ICU (scripts/size-map.py --essentials-only names each member
# that breaks this and the symbol that pulled it in).
#   KIOSK_ESSENTIALS_ONLY=warn   reports a full-Foundation link without failing (the default,
#                                fail, stops the build there)
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH=/opt/swift/usr/bin:$PATH
icu_data=$(python3 scripts/icu-data.py)
# shellcheck disable=SC2046 # the linker options size-map.py prints, one word each
KIOSKD_ICU_DATA=$icu_data nice -n 5 swift build -c release --scratch-path .build-bench --product kioskd \
    $(python3 scripts/size-map.py --link-options .build-bench)
python3 scripts/size-map.py .build-bench/kioskd.map --essentials-only
