#!/bin/sh
# usage: memcheck.sh PROGRAM [ARGS...]
# Runs PROGRAM under Valgrind's memcheck; any error it finds fails the test.
if ! command -v valgrind >/dev/null 2>&1; then
	echo "valgrind is not installed (make check installs it as root on Debian)"
	exit 77
fi
exec valgrind -q --error-exitcode=9 "$@"
