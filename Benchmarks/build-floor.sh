#!/bin/sh
# Builds Benchmarks/.floor/startup-floor (Benchmarks/floor/startup-floor.c): the C floor that
# `kioskd-bench startup` times beside kioskd and the pygame peer. Needs a C compiler and the
# pango, cairo and fontconfig -dev packages kioskd itself builds with.
set -eu
here="$(cd "$(dirname "$0")" && pwd)"
mkdir -p "$here/.floor"
# shellcheck disable=SC2046 # pkg-config's flags, one word each
cc -O2 -Wall -Werror -o "$here/.floor/startup-floor" "$here/floor/startup-floor.c" $(pkg-config --cflags --libs pangocairo fontconfig)
echo "built $here/.floor/startup-floor"
