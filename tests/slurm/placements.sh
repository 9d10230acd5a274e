#!/bin/bash
# placements.sh STATE TRAIN: the training example under srun's other
# placements of ranks on the 3 hosts: 5 ranks (2, 2, 1: the hierarchy is
# off, the flat ring runs), and 6 ranks cyclic (rank r on host r mod 3: the
# hierarchy finds each host's ranks). Every rank ends with the same weights.
set -u
. "$(dirname "$0")/case.sh"
train=$2
run() { # NAME SRUN-ARGS...
    local name=$1
    shift
    cl_login timeout -k 5 120 env DISTCOMM_JOB_TOKEN_FILE="$CL_TOKEN" DISTCOMM_VERBOSE=1 \
        srun -N 3 "$@" -l "$train" --steps 20 --batch 240 </dev/null >"$T/$name" 2>&1
    local rc=$?
    grep -E 'weights identical|hierarchy' "$T/$name" | sort | head -4
    [ $rc -eq 0 ] && ok "srun -N 3 $* exited 0" || fail "srun -N 3 $* exited $rc: $(tail -3 "$T/$name")"
}
run uneven -n 5
grep -q '^0: weights identical on all 5 ranks' "$T/uneven" && ok "5 ranks on 2+2+1: weights identical" ||
    fail "5 ranks: no 'weights identical on all 5 ranks'"
grep -q '^0: .*hierarchy off: hosts have different numbers of ranks' "$T/uneven" &&
    ok "5 ranks: the hierarchy is off (hosts of 2, 2 and 1 ranks)" || fail "5 ranks: no 'hierarchy off' line"
run cyclic -n 6 -m cyclic
grep -q '^0: weights identical on all 6 ranks' "$T/cyclic" && ok "6 ranks cyclic: weights identical" ||
    fail "6 ranks cyclic: no 'weights identical on all 6 ranks'"
grep -q '^1: .*hierarchy: 3 hosts x 2 ranks, this one local rank 0 of host 1$' "$T/cyclic" &&
    ok "cyclic: rank 1 is host 1's first rank in the hierarchy" ||
    fail "cyclic: $(grep '^1: .*hierarchy' "$T/cyclic")"
expect_none_left 10 "$train"
finish
