#!/bin/sh
# usage: install_test.sh BUILD_DIR SOURCE_DIR CC CXX
# Installs BUILD_DIR into a scratch prefix, then builds and runs consumer.c
# with pkg-config (shared and static) and with find_package(xfiber), and
# consumer.cpp (the C++ layer, C++17) with pkg-config.
set -eu
build=$1 src=$2 cc=$3 cxx=$4
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
prefix=$scratch/prefix

cmake --install "$build" --prefix "$prefix" >/dev/null
test -x "$prefix/bin/xfiber"
test -f "$prefix/share/xfiber/gdb/xfiber-gdb.py"
"$prefix/bin/xfiber" --version

export PKG_CONFIG_PATH=$prefix/lib/pkgconfig
# shellcheck disable=SC2046
"$cc" -o "$scratch/consumer" "$src/consumer.c" $(pkg-config --cflags --libs xfiber)
LD_LIBRARY_PATH=$prefix/lib "$scratch/consumer"
# shellcheck disable=SC2046
# The archive, and what its Libs.private adds (-luring with the io_uring engine).
"$cc" -static-libgcc -o "$scratch/consumer_static" "$src/consumer.c" \
	$(pkg-config --cflags xfiber) "$prefix/lib/libxfiber.a" -pthread \
	$(pkg-config --static --libs-only-l xfiber | sed 's/-lxfiber//')
"$scratch/consumer_static"
# shellcheck disable=SC2046
"$cxx" -std=c++17 -o "$scratch/consumer_cxx" "$src/consumer.cpp" $(pkg-config --cflags --libs xfiber)
LD_LIBRARY_PATH=$prefix/lib "$scratch/consumer_cxx"

mkdir "$scratch/cm"
cp "$src/consumer.c" "$scratch/cm/"
cp "$src/CMakeLists.consumer.txt" "$scratch/cm/CMakeLists.txt"
cmake -S "$scratch/cm" -B "$scratch/cm/build" -DCMAKE_PREFIX_PATH="$prefix" >/dev/null
cmake --build "$scratch/cm/build" >/dev/null
"$scratch/cm/build/consumer_static"
LD_LIBRARY_PATH=$prefix/lib "$scratch/cm/build/consumer_shared"
echo "install: pkg-config and find_package consumers built and ran"
