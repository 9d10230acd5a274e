#!/bin/bash
# secure.sh LAUNCH PROBE: DISTCOMM_SECURE set-up errors through the real
# launcher (2 ranks over TCP). Each must fail set-up at once, with an error
# that names the variable, long before the timeout:
#   only rank 1 has DISTCOMM_SECURE=1, only rank 0 has it (mode mismatch,
#   whichever side has it), SECURE without a job token, and a
#   value that is not 0, 1 or auth. And with SECURE=1 on both, set-up logs
#   "frames authenticated" for every connection.
# shellcheck disable=SC2016 # the ranks' shell expands $MLX_RANK
set -u
launch=$1 probe=$2
. "$(dirname "$0")/../mp/mp_lib.sh"
export DISTCOMM_TIMEOUT=20 DISTCOMM_SHM=0
unset DISTCOMM_SECURE

# launched CASE SETUP WORDS...: every rank runs SETUP (shell) before the
# probe; the launcher must fail before DISTCOMM_TIMEOUT and the output must
# carry every WORD.
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

# Rank 1 connects to rank 0: rank 0 (acceptor) refuses a hello whose
# secure flag differs from its own, rank 1 prints the refusal.
launched "only rank 1 has DISTCOMM_SECURE=1" \
  '[ "$MLX_RANK" = 1 ] && export DISTCOMM_SECURE=1' \
  "ERR ERR_CONFIG" "refused rank 1's connection" \
  "DISTCOMM_SECURE differs between the two ranks"
launched "only rank 0 has DISTCOMM_SECURE=1" \
  '[ "$MLX_RANK" = 0 ] && export DISTCOMM_SECURE=1' \
  "ERR ERR_CONFIG" "refused rank 1's connection" \
  "DISTCOMM_SECURE differs between the two ranks"
launched "DISTCOMM_SECURE=1 without a job token" \
  'unset DISTCOMM_JOB_TOKEN; export DISTCOMM_SECURE=1' \
  "ERR ERR_CONFIG" "DISTCOMM_SECURE=1 needs a job token"
launched "DISTCOMM_SECURE=encrypt (not offered)" \
  'export DISTCOMM_SECURE=encrypt' \
  "ERR ERR_CONFIG" "DISTCOMM_SECURE=encrypt: use 0" "nothing is encrypted"

# Both with SECURE=1 (and "auth" on one: the same mode): a working job
# whose every connection says so.
out=$(DISTCOMM_VERBOSE=1 timeout -k 5 60 "$launch" -n 2 -- sh -c \
  '[ "$MLX_RANK" = 1 ] && export DISTCOMM_SECURE=auth || export DISTCOMM_SECURE=1; exec "$0" init' \
  "$probe" 2>&1)
rc=$?
n=$(grep -c "frames authenticated" <<<"$out")
lanes=${DISTCOMM_SOCKETS:-2}
if [ $rc -eq 0 ] && [ "$n" -eq $((2 * lanes)) ] &&
  contains "$out" "OK rank 0 size 2" "OK rank 1 size 2"; then
  ok "SECURE=1 and SECURE=auth: set up, $n connection ends say frames authenticated"
else
  fail "SECURE on both: exit $rc, $n 'frames authenticated' (want $((2 * lanes))): $out"
fi
mp_finish
