#!/bin/sh
# usage: test_gdb.sh live|core|crash STATES_PROGRAM CHECKER [SCRIPT]
#
# Runs gdb in batch mode on runtime_fiber_states (100 fibers in every
# state), prints `info fibers` and `fiber apply all bt`, and has
# check_fibers judge what the extension said.
#   live   the running process, stopped where every fiber is in its state;
#          the extension loads by itself from the library's section
#   core   a core written there by the extension's `fiber gcore` (plain
#          gcore loses the stacks behind the runtime's guards: see below);
#          read back with the extension loaded by hand (SCRIPT), as for a
#          program whose library carries none
#   spin   PROGRAM (spin_fibers) runs to its end under gdb, its fibers
#          preempted all along; CHECKER is not used
#   crash  the core the kernel writes when the program crashes (SIGSEGV);
#          where the kernel's core_pattern hands cores to a program
#          instead of a file, gdb catches the crash and writes it
set -eu
mode=$1 prog=$(realpath "$2") check=$3 script=${4:-}
if ! command -v gdb >/dev/null 2>&1; then
	echo "gdb is not installed (make check installs it as root on Debian)"
	exit 77
fi
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
out=$scratch/gdb.out

# What every session asks, after its own setup.
cat >"$scratch/look.gdb" <<'GDB'
info fibers
fiber apply all bt
GDB
# A live session: to where every fiber is in its state.
cat >"$scratch/run.gdb" <<'GDB'
set pagination off
set print thread-events off
handle SIGURG nostop noprint pass
break states_ready
run
GDB

gdb_batch() {
	timeout 240 gdb -nx -batch -iex "set auto-load safe-path /" "$@" >"$out" 2>&1 || {
		echo "gdb failed:"
		cat "$out"
		exit 1
	}
}

case $mode in
live)
	gdb_batch -x "$scratch/run.gdb" -x "$scratch/look.gdb" \
		-ex "fiber 21" -ex "info frame" -ex "fiber none" -ex kill --args "$prog" ready
	# `fiber N` selected a blocked fiber's frame for `frame` and `info
	# frame`: its innermost frame is in the scheduler, on its own stack.
	grep -q '^Fiber 21 "locker-0" (blocked on mutex' "$out" || {
		echo "fiber 21 did not select locker-0:"
		cat "$out"
		exit 1
	}
	;;
core)
	# gdb 13's gcore drops the rest of a mapping at the first page it
	# cannot read, which a guard of MADV_GUARD_INSTALL is: `fiber gcore`
	# lifts the guards while it runs (docs/observability.md).  The default
	# guards, as a user's program has them.
	gdb_batch -x "$scratch/run.gdb" -ex "fiber gcore $scratch/core" \
		-ex kill --args "$prog" ready
	gdb_batch -iex "set auto-load python-scripts off" -ex "source $script" \
		-x "$scratch/look.gdb" "$prog" "$scratch/core"
	;;
crash)
	pattern=$(cat /proc/sys/kernel/core_pattern 2>/dev/null || echo "|")
	core=
	case $pattern in
	"|"*) ;;
	*)
		(cd "$scratch" && ulimit -c unlimited && exec "$prog" crash) >/dev/null 2>&1 &
		pid=$!
		wait $pid || true
		# The pattern's %p is the pid; other specifiers match anything.
		dir=$scratch
		case $pattern in /*) dir= ;; esac
		glob=$(printf '%s' "$pattern" | sed -e "s/%p/$pid/g" -e 's/%[a-zA-Z]/*/g')
		for c in ${dir:+$dir/}$glob; do
			[ -f "$c" ] && core=$c
		done
		;;
	esac
	if [ -z "$core" ]; then
		echo "the kernel's core_pattern ($pattern) left no core file here: gdb catches the crash"
		XFIBER_STACK_GUARD=mprotect gdb_batch -ex "set pagination off" \
			-ex "handle SIGURG nostop noprint pass" -ex run -ex "gcore $scratch/core" \
			-ex kill --args "$prog" crash
		core=$scratch/core
	fi
	gdb_batch -x "$scratch/look.gdb" "$prog" "$core"
	case $core in "$scratch"/*) ;; *) rm -f "$core" ;; esac
	;;
spin)
	# The program runs to its end under gdb, preempted all along.
	cat >"$scratch/spin.gdb" <<'GDB'
set pagination off
set print thread-events off
handle SIGURG nostop noprint pass
run
GDB
	gdb_batch -x "$scratch/spin.gdb" "$prog"
	if ! grep -q "exited normally" "$out" || ! grep -q "^spin: " "$out"; then
		echo "the program did not run to its end under gdb:"
		cat "$out"
		exit 1
	fi
	grep "^spin: " "$out"
	exit 0
	;;
*)
	echo "usage: $0 live|core|crash|spin PROGRAM CHECKER [SCRIPT]"
	exit 2
	;;
esac
"$check" "$out"
