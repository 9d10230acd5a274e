#!/bin/bash
# soak.sh LAUNCHER SOAK N [SOAK ARGS...]: N ranks through the launcher run
# the soak program (tests/fault/soak.c); every rank must report its run
# correct with flat memory and descriptors.
set -u
launcher=$1 soak=$2 n=$3
shift 3
. "$(dirname "$0")/../mp/mp_lib.sh"
t0=$(now_ms)
timeout -k 5 300 "$launcher" -n "$n" -- "$soak" "$@" >"$mp_tmp/out" 2>&1
rc=$?
cat "$mp_tmp/out"
good=$(grep -c "^rank [0-9]*: soak [0-9]* steps ok" "$mp_tmp/out")
if [ $rc -ne 0 ] || [ "$good" -ne "$n" ]; then
  fail "soak on $n ranks: launcher exit $rc, $good of $n ranks ok"
else
  ok "soak on $n ranks ($*): $(($(now_ms) - t0)) ms"
fi
mp_finish
