#!/bin/bash
# The folders of src/ are layers (docs/design.md): a file may include its
# own folder and the folders below it, never one above, and no two folders
# include each other. Reads every #include "..." under src/ and fails naming
# the file and the include that breaks the rule; a folder with no layer
# fails too, so a new folder is placed on purpose.
# Usage: bash layers.sh /path/to/repo
set -u -o pipefail
export LC_ALL=C
root=${1:?usage: $0 /path/to/repo}
src=$root/src
[ -d "$src" ] || { echo "FAIL: no $src" >&2; exit 1; }

# Bottom up. Folders of one layer may include each other's headers, but
# never both ways (the circle check below).
layer_of() {
    case $1 in
        base | kernels | config) echo 0 ;;
        transport) echo 1 ;;
        algo) echo 2 ;;
        core) echo 3 ;;
        compose) echo 4 ;;
        backends/*) echo 5 ;;
        bootstrap) echo 6 ;;
        nn) echo 7 ;;
        faces) echo 8 ;; # libraries of their own over distcomm.h (the MPI face)
        *) echo "" ;;
    esac
}

# backends/<name> is a folder of its own; elsewhere the first component.
folder_of() {
    case $1 in
        backends/*/*) echo "${1%/*}" ;;
        */*) echo "${1%%/*}" ;;
        *) echo "" ;;
    esac
}

status=0
edges=$(mktemp)
trap 'rm -f "$edges"' EXIT
while IFS= read -r file; do
    rel=${file#"$src"/}
    from=$(folder_of "$rel")
    lf=$(layer_of "$from")
    if [ -z "$lf" ]; then
        echo "FAIL: $rel: folder '$from' has no layer (add it to $0 and docs/design.md)" >&2
        status=1
        continue
    fi
    while IFS= read -r inc; do
        to=$(folder_of "$inc")
        [ -n "$to" ] || continue # "distcomm.h": the public header, below all
        [ -d "$src/$to" ] || continue # not a folder of src/
        [ "$to" = "$from" ] && continue
        lt=$(layer_of "$to")
        if [ -z "$lt" ]; then
            echo "FAIL: $rel includes \"$inc\": folder '$to' has no layer" >&2
            status=1
        elif [ "$lt" -gt "$lf" ]; then
            echo "FAIL: $rel includes \"$inc\": $from (layer $lf) may not include $to (layer $lt, above it)" >&2
            status=1
        fi
        echo "$from $to $rel $inc" >>"$edges"
    done < <(sed -nE 's/^[[:space:]]*#[[:space:]]*include[[:space:]]+"([^"]+)".*/\1/p' "$file")
done < <(find "$src" -type f \( -name '*.c' -o -name '*.h' \) | sort)

# Two folders that include each other, whatever their layers.
while read -r a b rel inc; do
    back=$(awk -v a="$a" -v b="$b" '$1 == b && $2 == a { print $3 " includes \"" $4 "\""; exit }' "$edges")
    if [ -n "$back" ] && [[ "$a" < "$b" ]]; then
        echo "FAIL: circle between $a and $b: $rel includes \"$inc\", and $back" >&2
        status=1
    fi
done < <(sort -u -k1,2 "$edges")

[ "$status" -eq 0 ] && echo "ok: every include under src/ runs down the layers, no circle"
exit "$status"
