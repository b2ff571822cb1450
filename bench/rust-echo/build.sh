#!/bin/sh
# build.sh CARGO SOURCE_DIR OUT_DIR - builds the Rust peers of `xfiber bench
# server`'s echo rows (tokio-echo, monoio-echo) with cargo, the crates'
# versions pinned by Cargo.lock and fetched from crates.io into OUT_DIR
# (nothing under HOME).  Never fails the build: when cargo cannot build
# them (no network, a Rust too old), OUT_DIR/why says so in one line, the
# binaries are gone, and the rows skip with that line.
cargo=$1
src=$2
out=$3
mkdir -p "$out"
rm -f "$out/why"
if CARGO_HOME="$out/cargo-home" CARGO_TARGET_DIR="$out/target" \
	"$cargo" build --release --locked --manifest-path "$src/Cargo.toml" >"$out/cargo.log" 2>&1; then
	cp "$out/target/release/tokio-echo" "$out/target/release/monoio-echo" "$out/"
else
	rm -f "$out/tokio-echo" "$out/monoio-echo"
	echo "cargo could not build the Rust peers: $(grep -m1 '^error' "$out/cargo.log" || tail -n1 "$out/cargo.log") ($out/cargo.log)" >"$out/why"
	echo "xfiber bench: $(cat "$out/why")" >&2
fi
exit 0
