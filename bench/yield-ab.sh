#!/usr/bin/env bash
# bench/yield-ab.sh - two builds of the library side by side: each one's
# yield ping-pong against the minimal assembly switch (bench/yield_ab/),
# alternated round by round on one CPU so that this machine's noisy phases
# hit both alike.  The rounds are then split into thirds by how noisy they
# were (both builds' time together), and each third's medians printed: a change
# can help where a neighbour is busy and not where it is quiet, or the other
# way round, and a plain median hides that.
#
# usage: bench/yield-ab.sh A B [ROUNDS]
#   A, B    git revisions of this repository, or source trees (directories)
#   ROUNDS  rounds (default 45); a round runs each build's yield_ab once,
#           5 reps of 2,000,000 round trips each
# environment: BENCH_CPU (default 0), YIELD_AB_N (round trips per rep)
set -euo pipefail

if [ $# -lt 2 ] || [ $# -gt 3 ]; then
	echo "usage: bench/yield-ab.sh A B [ROUNDS]" >&2
	exit 2
fi
here=$(cd "$(dirname "$0")/.." && pwd)
ROUNDS=${3:-45}
CPU=${BENCH_CPU:-0}
case $ROUNDS in '' | *[!0-9]* | 0)
	echo "yield-ab: ROUNDS must be a positive number, not '$ROUNDS'" >&2
	exit 2
	;;
esac
work=$(mktemp -d)
worktrees=()
cleanup() {
	for w in "${worktrees[@]}"; do git -C "$here" worktree remove --force "$w" >/dev/null 2>&1 || true; done
	rm -rf "$work"
}
trap cleanup EXIT

# build NAME REV: the library of REV (a revision or a directory) and the
# harness of this tree linked with it, as $work/NAME/yield_ab.
build() {
	local name=$1 rev=$2 src
	if [ -d "$rev" ]; then
		src=$(cd "$rev" && pwd)
	else
		src=$work/$name-src
		git -C "$here" worktree add --detach "$src" "$rev" >/dev/null 2>&1 ||
			{ echo "yield-ab: '$rev' is neither a directory nor a revision of $here" >&2; exit 2; }
		worktrees+=("$src")
	fi
	echo "yield-ab: building $name = $rev" >&2
	cmake -S "$src" -B "$work/$name" -DCMAKE_BUILD_TYPE=Release >/dev/null
	cmake --build "$work/$name" -j "$(nproc)" --target xfiber_static >/dev/null
	cc -O2 -I"$src/include" -I"$here/src" "$here/bench/yield_ab/yield_ab.c" \
		"$here/tools/bench/minswitch_x86_64_sysv_elf_gas.S" \
		"$work/$name/src/libxfiber.a" -lpthread -o "$work/$name/yield_ab"
}
build A "$1"
build B "$2"

# Each line: A's ratio, ns, yardstick ns, then B's, and the sum of both
# builds' ns, by which the rounds are sorted: both builds alike decide how
# noisy a round was.  (Sorting by one build's own result would favour the
# other: a round where A happened to be slow lands in the noisy third
# whatever B did.)  Which build runs first alternates.
for ((i = 1; i <= ROUNDS; i++)); do
	if ((i % 2)); then
		a=$(taskset -c "$CPU" "$work/A/yield_ab")
		b=$(taskset -c "$CPU" "$work/B/yield_ab")
	else
		b=$(taskset -c "$CPU" "$work/B/yield_ab")
		a=$(taskset -c "$CPU" "$work/A/yield_ab")
	fi
	echo "$a $b" | awk '{ print $0, $2 + $5 }'
	echo "yield-ab: round $i/$ROUNDS" >&2
done | sort -g -k7,7 >"$work/rounds"

median() { # FILE COLUMN-EXPRESSION (awk)
	awk "{ print $2 }" "$1" | sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'
}
n=$(wc -l <"$work/rounds")
third=$((n / 3))
head -n "$third" "$work/rounds" >"$work/quiet"
head -n $((n - third)) "$work/rounds" | tail -n $((n - 2 * third)) >"$work/middle"
tail -n "$third" "$work/rounds" >"$work/noisy"
echo "A = $1, B = $2: $n rounds on CPU $CPU, split by both builds' time"
printf '%-13s %8s %8s %8s %8s %9s\n' "" "A ratio" "B ratio" "A ns" "B ns" "B/A time"
for part in quiet middle noisy rounds; do
	[ -s "$work/$part" ] || continue
	label=$part
	[ "$part" = rounds ] && label=all
	[ "$part" != rounds ] && label="$part third"
	printf '%-13s %8s %8s %8s %8s %9.3f\n' "$label" \
		"$(median "$work/$part" '$1')" "$(median "$work/$part" '$4')" \
		"$(median "$work/$part" '$2')" "$(median "$work/$part" '$5')" \
		"$(median "$work/$part" '$5 / $2')"
done
