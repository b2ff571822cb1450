#!/bin/sh
# clang_format.sh SOURCE_DIR SKIP_CODE [fix] - the tree's lines changed since
# the commit named in .clang-format-since must be as .clang-format
# formats them.  Older lines are left as they are: reformatting the whole
# tree at once would bury its history; a file moved since is compared with
# where it was (git diff -M), so only what the move changed counts.
# Prints the reformatting needed and fails, or skips (SKIP_CODE) with the
# reason when this is not a git checkout holding that commit, or
# clang-format is not installed (make check-deps installs it as root on
# Debian).  With `fix`, formats those lines in place instead.
src=$1
skip=$2
fix=$3
cd "$src" || exit 1
since=$(sed -n 's/^\([0-9a-f]\{40\}\).*/\1/p' .clang-format-since)
if ! command -v clang-format >/dev/null 2>&1; then
	echo "clang-format is not installed: nothing checked"
	exit "$skip"
fi
if ! git rev-parse --verify -q "$since^{commit}" >/dev/null; then
	echo "not a git checkout holding $since (.clang-format-since): nothing checked"
	exit "$skip"
fi
# "FILE --lines=A:B --lines=C:D ..." for each C or C++ file changed since,
# from the new side of each hunk (+start,count; a count of 0 adds nothing).
changes=$(git diff -M -U0 --no-color --diff-filter=AMR "$since" -- src include tools tests examples bench |
	awk '/^\+\+\+ b\// { file = substr($0, 7); next }
	     /^@@/ && file ~ /\.(c|h|cpp|hpp)$/ {
		split($3, plus, ","); start = substr(plus[1], 2); count = (2 in plus) ? plus[2] : 1
		if (count > 0) lines[file] = lines[file] " --lines=" start ":" (start + count - 1)
	     }
	     END { for (f in lines) print f lines[f] }' | sort)
bad=0
checked=0
while read -r file ranges; do
	[ -n "$file" ] || continue
	checked=$((checked + 1))
	if [ "$fix" = fix ]; then
		# shellcheck disable=SC2086
		clang-format -i $ranges "$file"
		continue
	fi
	# shellcheck disable=SC2086 # the ranges are separate arguments
	if ! clang-format $ranges "$file" | diff -u "$file" - >/tmp/xf-format.$$; then
		sed "1,2s|^\([-+]\{3\}\) .*|\1 $file|" /tmp/xf-format.$$
		bad=1
	fi
done <<LIST
$changes
LIST
rm -f /tmp/xf-format.$$
if [ "$bad" = 1 ]; then
	echo "lines changed since $since are not formatted as .clang-format says:"
	echo "apply the changes above, or run: tests/tools/clang_format.sh . 77 fix"
	exit 1
fi
echo "$checked files changed since $(echo "$since" | cut -c1-12): their changed lines are formatted"
