#!/bin/bash
# strangers.sh LAUNCH CONFORMANCE STRANGER N [MODE]: an N-rank job
# (MLX_RING_VERBOSE=1) meets strangers on its ports. MODE:
#   launch      started by distcomm-launch (which gives it a job token)
#   hand-token  started by hand (a shell loop with MLX_RANK, MLX_HOSTFILE),
#               with DISTCOMM_JOB_TOKEN_FILE: the same verdicts as launched
#   hand        started by hand without a token: strangers that offer a
#               token are refused as such; one that offers none with the
#               right job id is not tried here, as this host may claim a
#               rank without a token (hosts.strangers_by_hand shows another
#               host cannot)
#   While setting up (ranks 1.. start 4 s late, so rank 0 sits accepting):
#   a port scan, garbage bytes, a frame header with a huge length, a hello
#   from another job, a hello without the job token, a hello with a forged
#   proof (claiming rank 1's slot before rank 1 comes), and 8 silent
#   connections held open. Each must be refused and logged by the rank,
#   naming the stranger's address, and rank 1 must be accepted while the
#   silent ones still hang (they cannot stall set-up).
#   While running collectives: the ports are closed (listeners live only
#   during set-up), so strangers get "connection refused". The ranks keep
#   running small all_sums after their checks until the test touches
#   $mp_tmp/stop (conformance --hold), so this phase cannot come too late.
# The job must pass the conformance checks. Everything runs under timeout.
set -u
launch=$1 conf=$2 stranger=$3 n=$4 mode=${5:-launch}
. "$(dirname "$0")/../mp/mp_lib.sh"
base=$(mp_port_base)
log=$mp_tmp/job.out
counts=1,1000,65537
# shellcheck disable=SC2016 # the ranks' shell expands these
rank_cmd='[ "$MLX_RANK" = 0 ] || sleep 4
    exec "$1" --size "$2" --counts "$3" --hold "$0/stop"'
if [ "$mode" = launch ]; then
  MLX_RING_VERBOSE=1 DISTCOMM_TIMEOUT=60 timeout -k 5 150 "$launch" -n "$n" \
    --starting-port "$base" -- sh -c 'echo "$DISTCOMM_JOB_ID" >"$0/job.$MLX_RANK"
      '"$rank_cmd" "$mp_tmp" "$conf" "$n" "$counts" >"$log" 2>&1 &
else
  unset DISTCOMM_JOB_TOKEN DISTCOMM_JOB_TOKEN_FILE
  hf=$mp_tmp/hosts.json
  { sep=; printf '['; for ((r = 0; r < n; r++)); do printf '%s["127.0.0.1:%d"]' "$sep" $((base + r)); sep=,; done; echo ']'; } >"$hf"
  tokvar=()
  if [ "$mode" = hand-token ]; then
    (umask 077 && printf 'strangers-hand-token-%s\n' "$RANDOM$RANDOM" >"$mp_tmp/token")
    tokvar=(DISTCOMM_JOB_TOKEN_FILE="$mp_tmp/token")
  fi
  echo 5eed0f0b >"$mp_tmp/job.0"
  (
    pids=()
    for ((r = 0; r < n; r++)); do
      env MLX_HOSTFILE="$hf" MLX_RANK=$r DISTCOMM_JOB_ID=5eed0f0b "${tokvar[@]}" \
        MLX_RING_VERBOSE=1 DISTCOMM_TIMEOUT=60 timeout -k 5 150 \
        sh -c "$rank_cmd" "$mp_tmp" "$conf" "$n" "$counts" &
      pids+=($!)
    done
    rc=0
    for p in "${pids[@]}"; do wait "$p" || rc=1; done
    exit $rc
  ) >"$log" 2>&1 &
fi
job_pid=$!
mp_pids+=("$job_pid")

wait_for "$mp_tmp/job.0" . 20 || { fail "rank 0 never started: $(cat "$log")"; mp_finish; }
job=$(cat "$mp_tmp/job.0")
port0="127.0.0.1:$base"

# stranger_run NAME MODE...: run one stranger in the background.
spids=()
stranger_run() {
  local name=$1
  shift
  timeout -k 2 40 "$stranger" "$@" >"$mp_tmp/s.$name" 2>&1 &
  spids+=($!)
  snames+=("$name")
}
snames=()
stranger_run scan scan "$port0"
stranger_run garbage garbage "$port0"
stranger_run huge huge "$port0"
stranger_run wrongjob wrong-job "$port0" "$job" "$n"
[ "$mode" = hand ] || stranger_run notoken no-token "$port0" "$job" "$n"
stranger_run wrongtoken wrong-token "$port0" "$job" "$n"
# Those that hang on come 1.5 s in, so that they are still hanging when rank
# 1 comes (4 s), and would be dropped after 5 s (at 6.5 s) at the earliest.
sleep 1.5
for i in 1 2 3 4 5 6 7 8; do stranger_run "silent$i" silent "$port0"; done
stranger_run squat squat "$port0" "$job" "$n"

for i in "${!spids[@]}"; do
  wait "${spids[$i]}"
  rc=$?
  name=${snames[$i]}
  if [ $rc -ne 0 ]; then
    fail "stranger $name: exit $rc: $(cat "$mp_tmp/s.$name")"
  fi
done

# address_of NAME: the address a stranger connected from, as it printed it.
address_of() { sed -n 's/^stranger [a-z-]* from \([0-9.:]*\)$/\1/p' "$mp_tmp/s.$1"; }

# refused_as NAME WORDS: the rank's log names this stranger's address and why.
# A stranger that closed early may see its source port reused by a later
# one, so an address can have two lines: take the one that says why.
refused_as() {
  local name=$1 why=$2 from lines line
  from=$(address_of "$name")
  lines=$(grep "refused a connection from $from: " "$log")
  line=$(grep -F -- "$why" <<<"$lines" | head -1)
  [ -n "$line" ] || line=$(head -1 <<<"$lines")
  if [ -n "$from" ] && contains "$line" "$why"; then
    ok "$name ($from) refused: ${line#*: }"
  else
    fail "$name ($from): no log line with \"$why\": ${line:-none}; stranger said: $(cat "$mp_tmp/s.$name")"
  fi
}

wait_for "$log" "ring ready: rank $((n - 1)) " 60 || fail "set-up did not finish: $(tail -5 "$log")"
refused_as scan "without a hello"
refused_as garbage "not a distcomm hello"
refused_as huge "not a distcomm hello"
refused_as wrongjob "another job"
if [ "$mode" = hand ]; then # no token here: those that offer one are refused for it
  refused_as wrongtoken "the accepting rank has none"
else
  refused_as notoken "peer did not prove the job token"
  refused_as wrongtoken "did not prove the job token (wrong DISTCOMM_JOB_TOKEN"
  grep -q "refused (reason 5" "$mp_tmp/s.notoken" || fail "no-token stranger was not told why: $(cat "$mp_tmp/s.notoken")"
  grep -q "OK and its proof" "$mp_tmp/s.wrongtoken" || fail "wrong-token stranger did not reach the proof step: $(cat "$mp_tmp/s.wrongtoken")"
fi
# Those that hung on are refused when they run out of time or when set-up
# ends; rank 1 (4 s late, after they connected) must have been accepted
# before any of them was dropped: they did not stall set-up.
rank1=$(grep -n "rank 0\] accepted rank 1 lane 0" "$log" | head -1 | cut -d: -f1)
held="silent1 silent2 silent3 silent4 silent5 silent6 silent7 silent8 squat"
[ "$mode" = hand ] && held=${held% squat} && refused_as squat "the accepting rank has none"
for name in $held; do
  refused_as "$name" " "
  from=$(address_of "$name")
  # The held ones connect last, so their line is the address's last one.
  at=$(grep -n "refused a connection from $from: " "$log" | tail -1 | cut -d: -f1)
  if [ -z "$rank1" ] || [ -z "$at" ] || [ "$at" -lt "$rank1" ]; then
    fail "$name dropped at log line ${at:-never}, rank 1 accepted at ${rank1:-never}: set-up waited for it"
  fi
done
if [ "$mode" = hand ]; then
  grep -q "refused (reason 6" "$mp_tmp/s.squat" || fail "squat stranger was not refused at once: $(cat "$mp_tmp/s.squat")"
else
  grep -q "OK and its proof" "$mp_tmp/s.squat" || fail "squat stranger did not get the rank's answer: $(cat "$mp_tmp/s.squat")"
fi

# Running: every rank keeps its first port for dc_group_shrink; a stranger
# there is let into the kernel's queue but answered nothing (only a shrink
# reads it: a connection without a good hello is closed there).
for ((r = 0; r < n; r++)); do
  if out=$(timeout 10 "$stranger" unanswered "127.0.0.1:$((base + r))"); then
    ok "while running, rank $r: $out"
  else
    fail "while running, rank $r: $out"
  fi
done
if kill -0 "$job_pid" 2>/dev/null; then
  ok "the job was still running collectives"
else
  fail "the job had finished before the running-phase strangers"
fi
touch "$mp_tmp/stop"

wait "$job_pid"
rc=$?
passed=$(grep -c 'passed, 0 failed$' "$log")
if [ $rc -eq 0 ] && [ "$passed" -eq "$n" ]; then
  ok "job of $n ranks completed: $passed ranks passed the conformance checks"
else
  fail "job exit $rc, $passed of $n ranks passed: $(grep -v distcomm "$log" | tail -5)"
fi
mp_finish
