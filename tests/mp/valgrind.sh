#!/bin/bash
# valgrind.sh LAUNCHER PROBE: the error paths leak nothing and touch no bad
# memory. Under valgrind (definite leaks only; libcjson stays dlopen'ed):
# argument errors on a singleton group, a count mismatch on 2 ranks through
# the launcher, and a survivor of a SIGKILLed peer (started by hand).
set -u
launcher=$1 probe=$2
. "$(dirname "$0")/mp_lib.sh"
if ldd "$2" | grep -q -E "lib[at]san"; then
  echo "skip: a sanitizer build cannot run under valgrind"
  exit 77
fi
if ! command -v valgrind >/dev/null 2>&1; then
  echo "valgrind not installed: nothing to check"
  exit 0
fi
vg=(valgrind -q --leak-check=full --errors-for-leak-kinds=definite
    --error-exitcode=99)

out=$(env -u MLX_RANK -u MLX_HOSTFILE timeout 120 "${vg[@]}" "$probe" invalid 2>&1)
rc=$?
if [ $rc -eq 0 ]; then ok "invalid arguments, 1 rank"; else fail "invalid arguments: exit $rc: $out"; fi

out=$(DISTCOMM_TIMEOUT=60 timeout 120 "$launcher" -n 2 -- "${vg[@]}" "$probe" \
      mismatch count 100000 2>&1)
rc=$?
if [ $rc -eq 0 ]; then ok "count mismatch, 2 ranks"; else fail "count mismatch: exit $rc: $out"; fi

base=$(mp_port_base)
mp_hostfile "$mp_tmp/hf.json" 2 "$base"
export MLX_HOSTFILE="$mp_tmp/hf.json" DISTCOMM_TIMEOUT=60
MLX_RANK=0 timeout 120 "${vg[@]}" "$probe" loop 4 1000000 >"$mp_tmp/r0" 2>&1 &
r0=$!
mp_pids+=("$r0")
# In a subshell whose stderr is dropped: bash's "Killed" notice is noise.
(MLX_RANK=1 timeout 120 "$probe" loop 4 1000000 --die 1:300 >"$mp_tmp/r1" 2>&1
 exit $?) 2>/dev/null &
mp_pids+=($!)
wait $r0
rc=$?
out=$(cat "$mp_tmp/r0")
if [ $rc -eq 4 ] && contains "$out" "ERR_PEER_LOST" "rank 1"; then
  ok "survivor of a killed peer: $(grep ERR "$mp_tmp/r0")"
else
  fail "survivor of a killed peer: exit $rc (want 4; 99 = valgrind error): $out"
fi
mp_finish
