#!/bin/bash
# shm_full.sh LAUNCHER CONFORMANCE: /dev/shm too small for every segment, as
# in a container (Docker gives 64 MiB). In a mount namespace of its own with
# a 16 MiB tmpfs on /dev/shm, an 8-rank job (7 peers x 2 lanes x 512 KiB
# of pipes per rank, 58 MiB in all) must complete correctly: the pairs
# whose segment cannot be reserved use TCP. Once, the segments were sized
# sparse and a rank died of SIGBUS when the tmpfs ran out under a pipe.
# Exits 77 (skip) without root or unshare.
set -u
launcher=$1 conf=$2
. "$(dirname "$0")/mp_lib.sh"
if [ "$(id -u)" -ne 0 ] || ! command -v unshare >/dev/null ||
  ! unshare -m true 2>/dev/null; then
  echo "skip: needs root and mount namespaces"; exit 77
fi
# shellcheck disable=SC2016 # expanded by the inner shell
timeout -k 5 500 unshare -m --propagation private bash -c '
  mount -t tmpfs -o size=16m tmpfs /dev/shm || exit 90
  DISTCOMM_VERBOSE=1 exec "$1" -n 8 -- "$2" --size 8 --counts 1000,65537
' _ "$launcher" "$conf" >"$mp_tmp/out" 2>&1
rc=$?
passed=$(grep -c "passed, 0 failed$" "$mp_tmp/out")
fellback=$(grep -c "no shared memory" "$mp_tmp/out")
if [ "$rc" -eq 0 ] && [ "$passed" -eq 8 ]; then
  ok "8 ranks on a 16 MiB /dev/shm: all passed ($fellback rank(s) fell back to TCP)"
else
  fail "8 ranks on a 16 MiB /dev/shm: exit $rc, $passed of 8 passed: $(grep -m5 -iE 'signal|bus|fail|err' "$mp_tmp/out")"
fi
if [ "$fellback" -ge 1 ]; then
  ok "verbose said which ranks had no shared memory"
else
  fail "no rank said it fell back to TCP (the tmpfs should be too small)"
fi
mp_finish
