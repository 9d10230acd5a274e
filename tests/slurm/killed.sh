#!/bin/bash
# killed.sh STATE TRAIN: rank 3 of a training step under srun (3 hosts x 2
# ranks) is killed (SIGKILL) while it trains: the 5 others fail with
# distcomm's error naming rank 3 and its address, and the step ends within
# 30 s with no process left on any host.
set -u
. "$(dirname "$0")/case.sh"
train=$2
cl_login timeout -k 5 120 env DISTCOMM_JOB_TOKEN_FILE="$CL_TOKEN" DISTCOMM_TIMEOUT=60 \
    srun -N 3 -n 6 -l "$train" --steps 100000000 --batch 240 --log-every 100 </dev/null >"$T/out" 2>&1 &
bg=$!
for _ in $(seq 600); do # rank 0 logs step 1 once every rank is set up
    grep -q '^0: step' "$T/out" && break
    sleep 0.1
done
victim=
for pid in $(cl_pids 2); do # rank 3 runs on the second host
    grep -qa '^SLURM_PROCID=3$' <(tr '\0' '\n' <"/proc/$pid/environ" 2>/dev/null) &&
        grep -qaF "$train" "/proc/$pid/cmdline" 2>/dev/null && victim=$pid
done
if [ -z "$victim" ]; then
    kill "$bg" 2>/dev/null
    fail "rank 3 not found on dcsl2: $(tail -3 "$T/out")"
    finish
fi
t0=$(date +%s)
kill -9 "$victim"
wait "$bg"
rc=$? took=$(($(date +%s) - t0))
grep -v ' step ' "$T/out"
[ $rc -ne 0 ] && [ $rc -ne 124 ] && ok "srun exited $rc, ${took} s after the kill" ||
    fail "srun exited $rc, ${took} s after the kill"
[ $took -lt 30 ] && ok "the step ended within 30 s" || fail "the step took $took s to end"
named=0
for r in 0 1 2 4 5; do
    grep -q "^$r: train: rank $r: .*rank 3 (10\.98\.0\.2:[0-9]*)" "$T/out" &&
        named=$((named + 1))
done
[ $named -eq 5 ] && ok "the 5 others failed naming rank 3 and its address" ||
    fail "$named of 5 ranks named rank 3"
grep -q 'dcsl2: task 3: Killed' "$T/out" && ok "srun saw task 3 killed" || fail "no 'task 3: Killed' from srun"
expect_none_left 10 "$train"
finish
