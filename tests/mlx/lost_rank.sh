#!/bin/bash
# A rank lost mid-run ends an MLX job on distcomm within DISTCOMM_TIMEOUT,
# with a message naming rank 1 (lost_rank.py). kill: the launcher sees the
# signal and stops the job. exit: rank 1 leaves with status 0, so only the
# survivors' face can notice: MPI_Allreduce must fail naming rank 1 and end
# them non-zero (MPI's fatal error handler). stop: rank 1 stays alive but
# silent, so the survivors' all_sum must time out (DISTCOMM_TIMEOUT=10)
# naming rank 1.
# Usage: lost_rank.sh LAUNCHER PYTHON_FILE kill|exit|stop N
set -u -o pipefail
launch=${1:?usage}; prog=${2:?usage}; how=${3:?usage}; n=${4:-3}
out=$(mktemp)
trap 'rm -f "$out"' EXIT
start=$(date +%s)
DISTCOMM_TIMEOUT=10 timeout 60 "$launch" --mlx -n "$n" -- python3 "$prog" "$how" >"$out" 2>&1
rc=$?
took=$(($(date +%s) - start))
cat "$out"
fail() { echo "FAIL ($how): $*" >&2; exit 1; }
[ "$rc" -ne 124 ] || fail "the job hung (killed by timeout 60)"
[ "$rc" -ne 0 ] || fail "the job exited 0"
[ "$took" -le 40 ] || fail "the job took ${took}s (DISTCOMM_TIMEOUT=10)"
grep -q "rank 1 leaves" "$out" || fail "rank 1 never left"
! grep -q "the loss went unseen" "$out" || fail "a survivor finished"
if [ "$how" = kill ]; then
    # the launcher's word, or (when a survivor's exit reached it first) the
    # survivors' face naming the peer it lost
    grep -qE "rank 1 .*killed by signal 9|MPI_Allreduce failed: .*rank 1" "$out" ||
        fail "no message names rank 1"
elif [ "$how" = exit ]; then
    grep -qE "\[distcomm-ompi rank [02]\] MPI_Allreduce failed: .*rank 1" "$out" ||
        fail "no survivor's MPI_Allreduce named rank 1"
else
    grep -qE "\[distcomm-ompi rank [02]\] MPI_Allreduce failed: ERR_TIMEOUT.*rank 1" "$out" ||
        fail "no survivor's MPI_Allreduce timed out naming rank 1"
    [ "$took" -ge 8 ] || fail "ended after ${took}s, before DISTCOMM_TIMEOUT=10 could pass"
fi
echo "PASS ($how): status $rc after ${took}s"
