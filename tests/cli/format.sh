# The C sources are formatted as the top .clang-format says: clang-format
# --dry-run --Werror over every .c and .h of the tree. Skipped (77) when
# clang-format is not installed (scripts/deps --tests installs it).
# Usage: format.sh TOP
top=${1:?usage: format.sh TOP}
command -v clang-format >/dev/null || { echo "skip: clang-format is not installed"; exit 77; }
cd "$top" || exit 1
if git rev-parse --git-dir >/dev/null 2>&1; then
    mapfile -t files < <(git ls-files '*.c' '*.h')
else
    mapfile -t files < <(find include src tools tests examples python bench -name '*.[ch]')
fi
[ "${#files[@]}" -gt 50 ] || { echo "FAIL: only ${#files[@]} C files found under $top"; exit 1; }
if ! out=$(clang-format --dry-run --Werror "${files[@]}" 2>&1); then
    echo "$out" | head -40
    echo "FAIL: not formatted as .clang-format says; run: clang-format -i \$(git ls-files '*.c' '*.h')"
    exit 1
fi
echo "PASS: ${#files[@]} files formatted"
