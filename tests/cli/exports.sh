#!/bin/bash
# libdistcomm.so exports the public API of include/distcomm.h (the functions
# marked DC_API) and nothing else: every other symbol is hidden, so users
# cannot come to depend on internals and the names cannot clash with theirs.
# Usage: bash exports.sh /path/to/libdistcomm.so /path/to/distcomm.h
set -u -o pipefail
export LC_ALL=C
lib=${1:?usage: $0 libdistcomm.so distcomm.h}
hdr=${2:?usage: $0 libdistcomm.so distcomm.h}

declared=$(grep -E '^DC_API ' "$hdr" | grep -oE '\bdc_[a-z0-9_]+\(' | tr -d '(' | sort -u) ||
    { echo "FAIL: no DC_API declarations in $hdr" >&2; exit 1; }
# Names of the toolchain's own (_init, _end, __bss_start, sanitizers'
# __odr_asan.*) are not ours; versions (name@@V) are cut off.
exported=$(nm -D --defined-only "$lib" | awk '{print $NF}' | sed 's/@.*//' |
    grep -vE '^(_init|_fini|_edata|_end|__.*)$' | sort -u) ||
    { echo "FAIL: nm -D $lib listed nothing" >&2; exit 1; }

status=0
extra=$(comm -13 <(echo "$declared") <(echo "$exported"))
if [ -n "$extra" ]; then
    echo "FAIL: $lib exports symbols that are not declared DC_API in distcomm.h:" >&2
    echo "$extra" | sed 's/^/  /' >&2
    status=1
fi
missing=$(comm -23 <(echo "$declared") <(echo "$exported"))
if [ -n "$missing" ]; then
    echo "FAIL: declared DC_API in distcomm.h but not exported by $lib:" >&2
    echo "$missing" | sed 's/^/  /' >&2
    status=1
fi
[ $status = 0 ] && echo "ok: $lib exports exactly the $(echo "$declared" | wc -l) functions of distcomm.h"
exit $status
