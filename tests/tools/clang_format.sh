#!/bin/sh
# clang_format.sh SOURCE_DIR SKIP_CODE - the tree's lines changed since
# the commit named in .clang-format-since must be as .clang-format
# formats them.  Older lines are left as they are: reformatting the whole
# tree at once would bury its history.  Prints the reformatting needed and
# fails, or skips (SKIP_CODE) with the reason when this is not a git
# checkout holding that commit, or clang-format is not installed
# (make check-deps installs it as root on Debian).
src=$1
skip=$2
cd "$src" || exit 1
since=$(sed -n 's/^\([0-9a-f]\{40\}\).*/\1/p' .clang-format-since)
if ! command -v git-clang-format >/dev/null 2>&1 || ! command -v clang-format >/dev/null 2>&1; then
	echo "clang-format is not installed: nothing checked"
	exit "$skip"
fi
if ! git rev-parse --verify -q "$since^{commit}" >/dev/null; then
	echo "not a git checkout holding $since (.clang-format-since): nothing checked"
	exit "$skip"
fi
out=$(git clang-format --diff --extensions c,h,cpp,hpp "$since" -- src include tools tests examples bench 2>&1)
case $out in
"" | "no modified files to format" | "clang-format did not modify any files")
	echo "lines changed since ${since%${since#???????????}}: formatted"
	exit 0 ;;
esac
printf '%s\n' "$out"
echo "lines changed since $since are not formatted as .clang-format says:"
echo "run 'git clang-format $since' and commit the result"
exit 1
