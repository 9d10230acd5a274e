#!/bin/bash
# failure.sh LAUNCHER: a remote rank fails (rank 3 of 4 on 2 hosts exits 3):
# the launcher exits 3 naming the rank and its host, and stops every other
# rank on every host with its whole process group (each rank also leaves a
# child behind): no process of the job survives anywhere.
set -u
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
. "$here/checks.sh"
hosts_up 2 || { fail "the test hosts did not come up"; finish; }
prog='sleep 300 & if [ "$MLX_RANK" = 3 ]; then sleep 1; exit 3; fi; echo "rank $MLX_RANK up"; wait'
start=$(date +%s)
launch 60 -n 2 --hosts "$(host_list 2)" --env DCL_MARK="$MARK" -- sh -c "$prog" </dev/null >"$T/out" 2>&1
rc=$?
cat "$T/out"
[ $rc -eq 3 ] && ok "launcher exited 3" || fail "launcher exited $rc, expected 3"
grep -q "rank 3 (on host 10.99.0.2) exited with status 3" "$T/out" &&
    ok "the failure names rank 3, host 10.99.0.2 and status 3" || fail "no line naming rank 3's host"
[ $(($(date +%s) - start)) -lt 20 ] && ok "stopped within 20 s" || fail "took $(($(date +%s) - start)) s"
expect_none_left 5 && ok "no process of the job left on any host"
finish
