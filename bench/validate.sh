#!/usr/bin/env bash
# bench/validate.sh - xfiber's kernel rows beside the tools they reproduce,
# run the same way: `perf bench sched pipe` against `xfiber bench pipe`, and
# rt-tests' `hackbench` and `perf bench sched messaging` against `xfiber bench
# messaging`, all pinned to one CPU, interleaved round by round so a noisy
# neighbour hits both sides alike.  Prints the median and the minimum of
# each and their differences; the goal is agreement within +-10%.
#
# Every measured run of a reference tool follows an unmeasured run of the
# same command, as xfiber warms up before it measures: on a VM the first
# second of a busy vCPU is measurably slower (up to 1.5x here), which would
# otherwise count against the tools run cold.
#
# usage: bench/validate.sh [XFIBER [ROUNDS]]
#   XFIBER  the xfiber binary (default build-bench/tools/xfiber: `make bench` builds it)
#   ROUNDS  runs of each tool (default 7)
# environment: BENCH_CPU (default 0), BENCH_PIPE_LOOPS (100000), and for
#   messaging BENCH_GROUPS (10), BENCH_FDS (20), BENCH_LOOPS (100),
#   BENCH_SIZE (100): hackbench's and perf's defaults.
set -euo pipefail

XFIBER=${1:-build-bench/tools/xfiber}
ROUNDS=${2:-7}
CPU=${BENCH_CPU:-0}
PIPE_LOOPS=${BENCH_PIPE_LOOPS:-100000}
GROUPS_=${BENCH_GROUPS:-10}
FDS=${BENCH_FDS:-20}
LOOPS=${BENCH_LOOPS:-100}
SIZE=${BENCH_SIZE:-100}

die() { echo "validate.sh: $*" >&2; exit 1; }
[ -x "$XFIBER" ] || die "no xfiber at $XFIBER (run 'make bench' first, or pass its path)"
command -v perf >/dev/null || die "perf is missing: apt-get install linux-perf"
command -v hackbench >/dev/null || die "hackbench is missing: apt-get install rt-tests"
command -v taskset >/dev/null || die "taskset is missing: apt-get install util-linux"
perf bench sched pipe -l 10 >/dev/null 2>&1 || die "perf bench does not run here"

# The command once to warm up, then again with its output kept.
warm() { taskset -c "$CPU" "$@" >/dev/null 2>&1; taskset -c "$CPU" "$@"; }
# The Mean column of one row of an xfiber table.
xf_mean() { awk -F'|' -v row="$1" '{ r = $1; gsub(/ /, "", r) } r == row { gsub(/ /, "", $3); print $3 }'; }
median() { sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

msg_args=(--groups="$GROUPS_" --fds="$FDS" --loops="$LOOPS" --size="$SIZE" --cpus=1 --cpu="$CPU" --runs=1)
for r in $(seq "$ROUNDS"); do
	echo "round $r/$ROUNDS" >&2
	warm perf bench sched pipe -l "$PIPE_LOOPS" | awk '/usecs\/op/ { print $1 }' >>"$tmp/perf_pipe_process"
	"$XFIBER" bench pipe --process --cpus=1 --cpu="$CPU" --iterations="$PIPE_LOOPS" --runs=1 2>/dev/null |
		xf_mean process/1cpu >>"$tmp/xf_pipe_process"
	warm perf bench sched pipe -T -l "$PIPE_LOOPS" | awk '/usecs\/op/ { print $1 }' >>"$tmp/perf_pipe_threads"
	"$XFIBER" bench pipe --threads --cpus=1 --cpu="$CPU" --iterations="$PIPE_LOOPS" --runs=1 2>/dev/null |
		xf_mean threads/1cpu >>"$tmp/xf_pipe_threads"
	warm hackbench -g "$GROUPS_" -f "$FDS" -l "$LOOPS" -s "$SIZE" | awk '/^Time:/ { print $2 }' >>"$tmp/hb_process"
	warm perf bench sched messaging -g "$GROUPS_" -l "$LOOPS" | awk '/Total time/ { print $3 }' >>"$tmp/perf_msg_process"
	"$XFIBER" bench messaging --process "${msg_args[@]}" 2>/dev/null |
		xf_mean process/socket/1cpu >>"$tmp/xf_msg_process"
	warm hackbench -T -g "$GROUPS_" -f "$FDS" -l "$LOOPS" -s "$SIZE" | awk '/^Time:/ { print $2 }' >>"$tmp/hb_threads"
	warm perf bench sched messaging -t -g "$GROUPS_" -l "$LOOPS" | awk '/Total time/ { print $3 }' >>"$tmp/perf_msg_threads"
	"$XFIBER" bench messaging --threads "${msg_args[@]}" 2>/dev/null |
		xf_mean threads/socket/1cpu >>"$tmp/xf_msg_threads"
done

minimum() { sort -g | head -n 1; }

row() { # name unit reference-file xfiber-file reference-name
	awk -v n="$1 ($5)" -v u="$2" -v a="$(median <"$tmp/$3")" -v b="$(median <"$tmp/$4")" \
		-v amin="$(minimum <"$tmp/$3")" -v bmin="$(minimum <"$tmp/$4")" 'BEGIN {
		d = 100 * (b - a) / a
		dmin = 100 * (bmin - amin) / amin
		printf "%-50s %-8s %9.3f %9.3f %+7.1f%% %9.3f %9.3f %+7.1f%%  %s\n", n, u, a, b, d,
			amin, bmin, dmin, (d <= 10 && d >= -10) ? "yes" : "NO"
	}'
}
echo
echo "$ROUNDS interleaved runs each, everything pinned to CPU $CPU; Linux $(uname -r); $(date -u +%F)"
printf "%-50s %-8s %9s %9s %8s %9s %9s %8s  %s\n" "comparison (reference)" "unit" "ref med" "xf med" \
	"diff" "ref min" "xf min" "diff" "median within 10%"
row "pipe, processes" usecs/op perf_pipe_process xf_pipe_process "perf bench sched pipe"
row "pipe, threads" usecs/op perf_pipe_threads xf_pipe_threads "perf bench sched pipe -T"
row "messaging, processes" s hb_process xf_msg_process "hackbench"
row "messaging, processes" s perf_msg_process xf_msg_process "perf bench sched messaging"
row "messaging, threads" s hb_threads xf_msg_threads "hackbench -T"
row "messaging, threads" s perf_msg_threads xf_msg_threads "perf bench sched messaging -t"
