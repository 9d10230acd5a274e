#!/bin/bash
# bench_paths.sh TOP: bench/'s scripts, and every page that names them, name
# paths that exist. bench/ is grouped in folders (bench/README.md); a script
# moved without its references would only fail when someone runs a
# benchmark by hand, so this checks, without running any benchmark:
#  - every bench/... path named in the tree (pages, scripts, comments; not
#    the dated records under bench/results/, which keep the paths of their
#    day) exists;
#  - every script of bench/ parses (bash -n);
#  - each path a script computes from its own place ($(dirname "$0")...: the
#    repository root, a sourced helper, a build) resolves: the root holds
#    CMakeLists.txt, a helper exists.
top=${1:?usage: bench_paths.sh TOP}
cd "$top" || exit 1
fail=0
self=tests/cli/bench_paths.sh # its own patterns are not paths

if git rev-parse --git-dir >/dev/null 2>&1; then
    mapfile -t files < <(git ls-files | grep -v '^bench/results/2' | grep -vx "$self")
else
    mapfile -t files < <(find . -type f -not -path './bench/results/2*' \
        -not -path './.git/*' -not -path './build*' | sed 's|^\./||' | grep -vx "$self")
fi
[ "${#files[@]}" -gt 50 ] || { echo "FAIL: only ${#files[@]} files found under $top"; exit 1; }

# Named paths: "bench/x/y" not inside a longer path (../shared/bench/peers
# is the peers' folder outside this repository).
named=0
while read -r p; do
    named=$((named + 1))
    [ -e "$p" ] && continue
    echo "FAIL: $p is named here but does not exist:"
    grep -IlE "(^|[^A-Za-z0-9_./\$-])$p([^A-Za-z0-9_./-]|\$)" "${files[@]}" | sed 's/^/    /'
    fail=1
done < <(grep -IohE '(^|[^A-Za-z0-9_./$-])bench/[A-Za-z0-9_./-]*[A-Za-z0-9_/]' "${files[@]}" |
    sed -E 's/^[^b]//' | grep -v YYYY | sort -u)
[ "$named" -gt 20 ] || { echo "FAIL: only $named bench/ paths found"; fail=1; }

mapfile -t scripts < <(printf '%s\n' "${files[@]}" | grep -E '^bench/.*(\.sh|/compare)$')
[ "${#scripts[@]}" -gt 10 ] || { echo "FAIL: only ${#scripts[@]} scripts in bench/"; exit 1; }
for s in "${scripts[@]}"; do
    bash -n "$s" || { echo "FAIL: $s does not parse"; fail=1; }
    # NAME=$(cd "$(dirname "$0")/REL" && pwd): the root or the script's folder.
    while IFS= read -r line; do
        dir=$(bash -c "d=${line#*=}; echo \"\$d\"" "$s" 2>/dev/null)
        case $line in
        repo=* | TOP=*) [ -f "$dir/CMakeLists.txt" ] && [ -d "$dir/bench" ] ||
            { echo "FAIL: $s: '$line' gives $dir, not the repository root"; fail=1; } ;;
        *) [ -d "$dir" ] || { echo "FAIL: $s: '$line' gives no folder"; fail=1; } ;;
        esac
    done < <(grep -E '^[A-Za-z_]+=\$\(cd "\$\(dirname "\$0"\)[^"]*" && pwd\)$' "$s")
    # "$repo/REL", "$TOP/REL": a file of the tree (not build*/, not ../).
    while IFS= read -r rel; do
        [ -e "$rel" ] || { echo "FAIL: $s names \$repo/$rel, which is not there"; fail=1; }
    done < <(grep -oE '\$(repo|TOP)/[A-Za-z0-9_./-]*[A-Za-z0-9_/]' "$s" | sed -E 's/^[^/]*\///' |
        grep -vE '^(build|\.\.)' | sort -u)
    # "$(dirname "$0")/REL", "$here/REL": a helper it sources or runs, or
    # results/ (not a build, not the peers' folder outside the repository).
    while IFS= read -r rel; do
        [ -e "$(dirname "$s")/$rel" ] ||
            { echo "FAIL: $s names $rel beside itself, which is not there"; fail=1; }
    done < <(grep -oE '(\$\(dirname "\$0"\)|\$here)/[A-Za-z0-9_./-]*[A-Za-z0-9_/]' "$s" |
        sed -E 's/^[^/]*\///' | grep -vE '(^|/)(build|shared)(/|$)' | sort -u)
done

[ "$fail" = 0 ] || exit 1
echo "PASS: $named bench/ paths named, ${#scripts[@]} scripts parse and resolve"
