#!/bin/bash
# refusal.sh PROBE: a stranger on the path to rank 0 answers rank 1's hello
# with a forged refusal ("world size differs", no MAC or a made-up one;
# issue 33). With a job token only a refusal that proves the token is
# believed: forged twice, then the real rank 0 behind it, set-up completes
# on both ranks; forged for good, rank 1 fails promptly with ERR_AUTH naming
# rank 0 and saying it could not prove the token, never the forged reason.
set -u
probe=$1
. "$(dirname "$0")/../mp/mp_lib.sh"
forger=$(dirname "$0")/forge_refusal.py
unset DISTCOMM_JOB_TOKEN_FILE
export DISTCOMM_JOB_ID=f0a9ed DISTCOMM_JOB_TOKEN=refusal-test-token-0123456789

# run CASE FORGED: rank 1 reaches rank 0 through the forger; sets rc0 rc1.
run() {
  local name=$1 forged=$2 base
  base=$(mp_port_base)
  printf '[["127.0.0.1:%d"],["127.0.0.1:%d"]]\n' "$base" $((base + 1)) >"$mp_tmp/hf0.json"
  printf '[["127.0.0.1:%d"],["127.0.0.1:%d"]]\n' $((base + 5)) $((base + 1)) >"$mp_tmp/hf1.json"
  : >"$mp_tmp/forger.$name"
  /usr/bin/python3 "$forger" $((base + 5)) "127.0.0.1:$base" "$forged" 3 \
    >"$mp_tmp/forger.$name" 2>&1 &
  fpid=$!
  mp_pids+=("$fpid")
  wait_for "$mp_tmp/forger.$name" "forger listening" 10 || fail "$name: the forger did not start"
  MLX_HOSTFILE=$mp_tmp/hf0.json MLX_RANK=0 timeout -k 2 60 "$probe" init \
    >"$mp_tmp/r0.$name" 2>&1 &
  r0=$!
  mp_pids+=("$r0")
  t0=$(now_ms)
  MLX_HOSTFILE=$mp_tmp/hf1.json MLX_RANK=1 MLX_RING_VERBOSE=1 timeout -k 2 60 \
    "$probe" init >"$mp_tmp/r1.$name" 2>&1
  rc1=$?
  dt=$(($(now_ms) - t0))
  wait "$r0"
  rc0=$?
  kill "$fpid" 2>/dev/null
  out1=$(grep -v '^\[distcomm' "$mp_tmp/r1.$name")
}

export DISTCOMM_TIMEOUT=20
run twice 2
if [ "$rc0" -eq 0 ] && [ "$rc1" -eq 0 ] &&
  grep -q "^OK rank 1 size 2" "$mp_tmp/r1.twice" &&
  grep -q "^OK rank 0 size 2" "$mp_tmp/r0.twice"; then
  ok "forged twice, then the real rank: set up on both ($dt ms)"
else
  fail "forged twice: exits $rc0/$rc1: $out1 $(tail -2 "$mp_tmp/r0.twice")"
fi
n=$(grep -c "without proving the job token.*not believed" "$mp_tmp/r1.twice")
[ "$n" -eq 2 ] || fail "rank 1 logged $n refusals not believed (want 2): $(cat "$mp_tmp/r1.twice")"
grep -q "forged 2" "$mp_tmp/forger.twice" || fail "the forger forged no 2 refusals: $(cat "$mp_tmp/forger.twice")"

# For good: rank 0 sees nobody and times out; rank 1 gives up long before.
export DISTCOMM_TIMEOUT=8
run always -1
if [ "$rc1" -eq 3 ] && [ "$dt" -lt 6000 ] &&
  contains "$out1" "ERR ERR_AUTH" "rank 0 (127.0.0.1:" "could not prove our job token" \
    "or a stranger answered" && ! contains "$out1" "world size differs"; then
  ok "forged for good: rank 1 fails in $dt ms: $out1"
else
  fail "forged for good: rank 1 exit $rc1 after $dt ms: $out1"
fi
[ "$rc0" -ne 0 ] || fail "forged for good: rank 0 set up without rank 1"
mp_finish
