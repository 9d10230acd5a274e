#!/bin/bash
# many.sh LAUNCHER CONFORMANCE: 2 hosts x 12 ranks, more than sshd's default
# MaxStartups (10 logins at once) and MaxSessions (10): the launcher makes
# one ssh login per host, whose agent runs all 12 ranks, so every rank
# starts. The quick conformance suite (two small counts: 24 ranks share 2
# cores here) must pass on all 24 ranks.
set -u
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
. "$here/checks.sh"
conf=$2 per=12
n=$((2 * per))
HOSTS_SSHD_DEFAULTS=1 hosts_up 2 || { fail "the test hosts did not come up"; finish; }
# 24 busy ranks on 2 cores: here the launcher's heartbeats reached the
# agents 20 s late (its ssh got no core), and the agents stopped a healthy
# job; this test is about logins, so the agents wait for 200 s of silence.
export DISTCOMM_HEARTBEAT_MS=10000
logins() { cat "$HOSTS_DIR"/h*/sshd.log | grep -c 'Accepted publickey'; }
before=$(logins)
start=$(date +%s%N)
launch 380 -n "$per" --hosts "$(host_list 2)" --env DISTCOMM_TIMEOUT=120 --env DCL_MARK="$MARK" \
    -- "$conf" --size "$n" --quick --counts 1,7 </dev/null >"$T/out" 2>&1
rc=$?
ms=$((($(date +%s%N) - start) / 1000000))
good=$(grep -c 'passed, 0 failed$' "$T/out")
[ $rc -eq 0 ] && ok "launcher exited 0 after $ms ms" ||
    fail "launcher exited $rc: $(grep -i -E 'fail|error|ssh' "$T/out" | head -5)"
[ "$good" -eq "$n" ] || tail -20 "$T/out"
[ "$good" -eq "$n" ] && ok "$n ranks on 2 hosts passed" || fail "$good of $n ranks passed"
logins=$(($(logins) - before))
[ "$logins" -eq 4 ] && ok "4 ssh logins: a check and an agent per host" || fail "$logins ssh logins, expected 4"
expect_none_left 5 && ok "no process of the job left on any host"
finish
