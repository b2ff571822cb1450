#!/bin/sh
# bench/plot-python.sh VENV - a Python 3 that can import matplotlib, for the
# plots of `xfiber bench` (bench/plot.py), set up without asking.  make
# passes what this prints to CMake as XFIBER_PYTHON, and the tool tries it
# first (tools/bench/plot.c).
#
# Prints nothing when the python3 on PATH or /usr/bin/python3 has matplotlib
# (the tool looks there itself).  Otherwise prints VENV's python3, after
# making the virtual environment VENV and pip-installing matplotlib into it
# if that has not been done, which one line on stderr says.  When that
# fails, one line says why and nothing is printed: the plots are then
# refused with the reason, and everything else runs.  Always exits 0.
set -u
venv=${1:?usage: bench/plot-python.sh VENV}

has_matplotlib() {
	"$1" -c 'import matplotlib' >/dev/null 2>&1
}

for py in python3 /usr/bin/python3; do
	has_matplotlib "$py" && exit 0
done
if ! command -v python3 >/dev/null 2>&1; then
	echo "no python3 on PATH: no plots (Debian python3-matplotlib: make deps)" >&2
	exit 0
fi
# An absolute path: the tool and its tests run from other directories.
mkdir -p "$venv" && venv=$(cd "$venv" && pwd) || exit 0
if has_matplotlib "$venv/bin/python3"; then
	echo "$venv/bin/python3"
	exit 0
fi

log=$venv/setup.log
echo "making $venv: a Python virtual environment with matplotlib (pip) for the plots" >&2
if ! python3 -m venv "$venv" >"$log" 2>&1; then
	echo "python3 -m venv failed (see $log; on Debian it needs python3-venv): no plots" >&2
	exit 0
fi
if ! "$venv/bin/python3" -m pip install --quiet --disable-pip-version-check matplotlib \
	>>"$log" 2>&1 || ! has_matplotlib "$venv/bin/python3"; then
	echo "pip install matplotlib failed (see $log): no plots" >&2
	exit 0
fi
echo "$venv/bin/python3"
