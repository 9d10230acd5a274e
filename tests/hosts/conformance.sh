#!/bin/bash
# conformance.sh LAUNCHER CONFORMANCE HOSTS PER_HOST: the conformance suite
# on HOSTS namespace hosts, PER_HOST ranks on each, started over ssh by the
# launcher run from host 1. One rank per host: every byte goes over TCP
# between hosts; two per host: shared memory inside each host as well (the
# ring's log says so).
set -u
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
. "$here/checks.sh"
conf=$2 nh=$3 per=$4
n=$((nh * per))
hosts_up "$nh" || { fail "the test hosts did not come up"; finish; }
launch 400 --verbose -n "$per" --hosts "$(host_list "$nh")" --env DISTCOMM_TIMEOUT=60 \
    -- "$conf" --size "$n" --quick </dev/null >"$T/out" 2>&1
rc=$?
good=$(grep -c 'passed, 0 failed$' "$T/out")
[ $rc -eq 0 ] && ok "launcher exited 0" || fail "launcher exited $rc: $(grep -i -E 'fail|error' "$T/out" | head -5)"
[ "$good" -eq "$n" ] && ok "$n ranks on $nh hosts passed" || fail "$good of $n ranks passed"
shm=$(grep -c "shared memory with 1 same-host peer" "$T/out")
if [ "$per" -eq 1 ]; then
    [ "$shm" -eq 0 ] && ok "no shared memory between hosts" || fail "shared memory across hosts?"
else
    # n lines from the world group, n more from the hierarchy's groups of
    # each host (its large all_sums; each host group sets up its own)
    [ "$shm" -eq "$n" ] || [ "$shm" -eq $((2 * n)) ] &&
        ok "shared memory with the same-host peer on every rank" ||
        fail "$shm of $n ranks used shared memory with their host's other rank"
fi
for ((r = 0; r < n; r++)); do # rank r runs on host r / per + 1
    h=$((r / per + 1))
    grep -q "rank $r.*10\.99\.0\.$h:" "$T/out" || grep -q "rank $r of $n" "$T/out" ||
        fail "rank $r: no trace of it on host $h"
done
expect_none_left 5 && ok "no process of the job left on any host"
finish
