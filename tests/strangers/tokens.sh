#!/bin/bash
# tokens.sh LAUNCH PROBE: job tokens that differ or are missing between the
# ranks of one job fail set-up at once with an error naming the token, on
# the rank that found out, within the timeout; by hand, equal tokens work.
# shellcheck disable=SC2016 # the ranks' shell expands $MLX_RANK
set -u
launch=$1 probe=$2
. "$(dirname "$0")/../mp/mp_lib.sh"
other=0123456789abcdef0123456789abcdef
export DISTCOMM_TIMEOUT=20

# launched CASE SETUP WORDS...: rank 1 runs SETUP (shell) before the probe;
# the launcher must fail before DISTCOMM_TIMEOUT and the output must carry
# every WORD.
launched() {
  local name=$1 setup=$2 out rc t0 dt
  shift 2
  t0=$(now_ms)
  out=$(timeout -k 5 60 "$launch" -n 2 -- sh -c "$setup; exec \"\$0\" init" \
    "$probe" 2>&1)
  rc=$?
  dt=$(($(now_ms) - t0))
  if [ $rc -eq 0 ] || [ $rc -ge 124 ]; then
    fail "$name: launcher exit $rc: $out"
  elif [ "$dt" -ge 15000 ]; then
    fail "$name: took $dt ms (the timeout is 20 s): $out"
  elif ! contains "$out" "$@"; then
    fail "$name: the output lacks one of: $*: $out"
  else
    ok "$name ($dt ms): $(grep 'ERR' <<<"$out" | head -1)"
  fi
}

launched "rank 1 with another token" \
  "[ \"\$MLX_RANK\" = 1 ] && export DISTCOMM_JOB_TOKEN=$other" \
  "ERR ERR_AUTH" "rank 0 (127.0.0.1:" "did not prove the job token" \
  "DISTCOMM_JOB_TOKEN differs"
launched "rank 1 without a token" \
  '[ "$MLX_RANK" = 1 ] && unset DISTCOMM_JOB_TOKEN' \
  "ERR ERR_AUTH" "refused rank 1's connection" "peer did not prove the job token"
launched "rank 0 without a token" \
  '[ "$MLX_RANK" = 0 ] && unset DISTCOMM_JOB_TOKEN' \
  "ERR ERR_AUTH" "refused rank 1's connection" "the accepting rank has none"
launched "a token too short to protect anything" \
  'export DISTCOMM_JOB_TOKEN=abc' "ERR ERR_CONFIG" "DISTCOMM_JOB_TOKEN is too short"

# By hand (MLX_RANK / MLX_HOSTFILE): rank 1 learns at once that rank 0
# cannot prove its token; rank 0 waits out its timeout and names what it
# refused meanwhile.
base=$(mp_port_base)
mp_hostfile "$mp_tmp/hf.json" 2 "$base"
export MLX_HOSTFILE=$mp_tmp/hf.json DISTCOMM_TIMEOUT=4 DISTCOMM_JOB_ID=5eed
MLX_RANK=0 DISTCOMM_JOB_TOKEN=$other$other timeout -k 2 30 "$probe" init \
  >"$mp_tmp/r0" 2>&1 &
r0=$!
mp_pids+=("$r0")
out=$(MLX_RANK=1 DISTCOMM_JOB_TOKEN=$other timeout -k 2 30 "$probe" init 2>&1)
rc=$?
if [ $rc -eq 3 ] && contains "$out" "ERR ERR_AUTH" "did not prove the job token"; then
  ok "by hand, rank 1: $out"
else
  fail "by hand, rank 1: exit $rc: $out"
fi
wait "$r0"
rc=$?
out=$(cat "$mp_tmp/r0")
if [ $rc -eq 3 ] && contains "$out" "ERR ERR_TIMEOUT" "proving the job token"; then
  ok "by hand, rank 0: $out"
else
  fail "by hand, rank 0: exit $rc: $out"
fi

# By hand with the same token on both: a working job.
base=$(mp_port_base)
mp_hostfile "$mp_tmp/hf.json" 2 "$base"
export DISTCOMM_TIMEOUT=20 DISTCOMM_JOB_TOKEN=$other
MLX_RANK=0 timeout -k 2 30 "$probe" init >"$mp_tmp/r0" 2>&1 &
r0=$!
mp_pids+=("$r0")
out=$(MLX_RANK=1 MLX_RING_VERBOSE=1 timeout -k 2 30 "$probe" init 2>&1)
rc=$?
wait "$r0"
rc0=$?
if [ $rc -eq 0 ] && [ $rc0 -eq 0 ] && contains "$out" "job token proven" "OK rank 1 size 2"; then
  ok "by hand, one token on both ranks: $(tail -1 <<<"$out")"
else
  fail "by hand, one token: exits $rc0/$rc: $out $(cat "$mp_tmp/r0")"
fi
mp_finish
