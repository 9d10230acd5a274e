#!/bin/bash
# peer_timeout.sh PROBE: a peer that never comes up. With DISTCOMM_TIMEOUT=2
# the ranks that did start fail with ERR_TIMEOUT naming the missing rank,
# after about 2 s (between 1.5 and 4 s: the timeout is honoured, not ignored
# and not doubled).
set -u
probe=$1
. "$(dirname "$0")/mp_lib.sh"

# run_ranks N MISSING RANKS...: start RANKS of an N-rank job, check each.
run_ranks() {
  local n=$1 missing=$2 r rc dt out
  shift 2
  local base t0 pids=()
  base=$(mp_port_base)
  mp_hostfile "$mp_tmp/hf$n.json" "$n" "$base"
  t0=$(now_ms)
  for r in "$@"; do
    MLX_RANK=$r MLX_HOSTFILE="$mp_tmp/hf$n.json" DISTCOMM_TIMEOUT=2 \
      timeout -k 2 20 "$probe" init >"$mp_tmp/out$r" 2>&1 &
    pids+=($!)
    mp_pids+=($!)
  done
  local i=0
  for r in "$@"; do
    wait "${pids[$i]}"
    rc=$?
    i=$((i + 1))
    dt=$(($(now_ms) - t0))
    out=$(cat "$mp_tmp/out$r")
    local what="$n ranks, rank $r of ranks ($*) started"
    if [ "$rc" -ne 3 ] || ! contains "$out" "ERR ERR_TIMEOUT:" "rank $missing"; then
      fail "$what: exit $rc, want 3 and ERR_TIMEOUT naming rank $missing: $out"
    elif [ "$dt" -lt 1500 ] || [ "$dt" -ge 4000 ]; then
      fail "$what: failed after $dt ms, want about 2000: $out"
    else
      ok "$what ($dt ms): $out"
    fi
  done
}

run_ranks 2 1 0
run_ranks 2 0 1
run_ranks 3 2 0 1
mp_finish
