# shellcheck shell=bash disable=SC2034
# Sourced: the cross-compilation settings for aarch64 in one place. Needs SYSROOT (the arm64
# sysroot from toolchain.sh). Sets ARM64_TRIPLE, ARM64_ENV (pkg-config, and the SDK's static Swift
# libraries for Package.swift's link order, as env assignments) and
# ARM64_SWIFT_FLAGS (swift build options). A 6.2 driver finds the runtime at
# <sdk>/usr/lib/swift{,_static}; lld for every product (the default would be GNU ld for the host);
# the static Swift runtime, since the arm64 runtime's shared libraries are not on the targets.
ARM64_TRIPLE=aarch64-unknown-linux-gnu
ARM64_ENV="KIOSKD_SWIFT_STATIC_DIR=$SYSROOT/usr/lib/swift_static/linux PKG_CONFIG_SYSROOT_DIR=$SYSROOT PKG_CONFIG_LIBDIR=$SYSROOT/usr/lib/aarch64-linux-gnu/pkgconfig:$SYSROOT/usr/share/pkgconfig PKG_CONFIG_PATH=$SYSROOT/usr/lib/aarch64-linux-gnu/pkgconfig:$SYSROOT/usr/share/pkgconfig"
ARM64_SWIFT_FLAGS="--triple $ARM64_TRIPLE --sdk $SYSROOT --static-swift-stdlib -Xswiftc -sdk -Xswiftc $SYSROOT -Xswiftc -resource-dir -Xswiftc $SYSROOT/usr/lib/swift_static -Xswiftc -use-ld=lld"
