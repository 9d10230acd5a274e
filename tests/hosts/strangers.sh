#!/bin/bash
# strangers.sh UNUSED CONFORMANCE STRANGER: a job started by hand (no
# launcher) on hosts 1 and 2, and a stranger on host 3 that claims rank 1 at
# rank 0 before the real rank 1 starts. It reads the refusal of a first
# wrong hello (which must reveal nothing: zeros) and then claims rank 1
# with the job id, which it knows (the worst case: a hand-started job's id
# is a hash of its hostfile). Rank 0 refuses it because it cannot prove the
# token; the real rank 1 then joins and the job passes the conformance
# suite. Without a token the job refuses to start (it spans hosts).
set -u
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
. "$here/checks.sh" "$1"
conf=$2 stranger=$3
hosts_up 3 || { fail "the test hosts did not come up"; finish; }
unset MLX_RANK MLX_HOSTFILE DISTCOMM_JOB_TOKEN DISTCOMM_JOB_TOKEN_FILE MLX_WORLD_SIZE \
  DISTCOMM_COORDINATOR MLX_JACCL_COORDINATOR MLX_IBV_DEVICES
printf '[["10.99.0.1:29611"], ["10.99.0.2:29611"]]\n' >"$T/h.json"
umask 077
printf 'hand-started-job-token-%s\n' "$RANDOM$RANDOM" >"$T/token"

# scenario NAME REASON TEXT [VAR=VALUE...]: rank 0, the stranger, rank 1.
scenario() {
  local name=$1 reason=$2 text=$3 r0 r1
  shift 3
  hosts_exec 1 env MLX_HOSTFILE="$T/h.json" MLX_RANK=0 DISTCOMM_JOB_ID=5eed1e55 \
    DISTCOMM_TIMEOUT=60 DISTCOMM_VERBOSE=1 "$@" \
    timeout -k 2 120 "$conf" --size 2 --counts 0,1,7,4099 >"$T/$name.0" 2>&1 &
  r0=$!
  hosts_exec 3 timeout 60 "$stranger" impostor 10.99.0.1:29611 5eed1e55 2 >"$T/$name.s" 2>&1
  local src=$?
  if [ $src -eq 0 ] && grep -q "reveals job 0 group 0 rank 0 size 0 host 0 flags 0 nonce zero" "$T/$name.s" &&
    grep -q "impostor: refused (reason $reason" "$T/$name.s"; then
    ok "$name: the refusal revealed nothing and the impostor was refused: $(grep refused "$T/$name.s")"
  else
    fail "$name: the stranger (exit $src): $(cat "$T/$name.s")"
  fi
  hosts_exec 2 env MLX_HOSTFILE="$T/h.json" MLX_RANK=1 DISTCOMM_JOB_ID=5eed1e55 \
    DISTCOMM_TIMEOUT=60 "$@" timeout -k 2 120 "$conf" --size 2 --counts 0,1,7,4099 >"$T/$name.1" 2>&1 &
  r1=$!
  if wait $r0 && wait $r1 && grep -q 'passed, 0 failed$' "$T/$name.0" &&
    grep -q 'passed, 0 failed$' "$T/$name.1"; then
    ok "$name: the real ranks then ran the conformance suite"
  else
    fail "$name: the job: $(tail -3 "$T/$name.0" "$T/$name.1")"
  fi
  if grep -q "refused a connection from 10\.99\.0\.3:.*$text" "$T/$name.0"; then
    ok "$name: rank 0 logged it: $(grep -m1 'refused a connection from 10\.99\.0\.3:.*'"$text" "$T/$name.0")"
  else
    fail "$name: rank 0 did not log the refusal: $(grep refused "$T/$name.0")"
  fi
}
# Without a token a job across hosts refuses to start (protected mode,
# issue 33), saying how to give it one: no stranger gets a chance.
out=$(hosts_exec 1 env MLX_HOSTFILE="$T/h.json" MLX_RANK=0 DISTCOMM_JOB_ID=5eed1e55 \
  DISTCOMM_TIMEOUT=60 timeout -k 2 30 "$conf" --size 2 --counts 0 2>&1)
rc=$?
if [ $rc -ne 0 ] && grep -q "span hosts.*no job token.*DISTCOMM_INSECURE=1" <<<"$out"; then
  ok "no_token: the job across hosts refused to start: $(grep -m1 'span hosts' <<<"$out")"
else
  fail "no_token: exit $rc: $out"
fi
scenario token 5 "did not prove the job token" DISTCOMM_JOB_TOKEN_FILE="$T/token"
finish
