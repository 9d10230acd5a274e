#!/bin/bash
# preflight.sh LAUNCHER: what the launcher checks before starting anything,
# and the ways of naming hosts. On 3 hosts:
#  - an unreachable host (no sshd at 10.99.0.9) is named, fast, nothing runs;
#  - a command missing on one host (hidden there) names that host only,
#    nothing runs; with --no-verify-script the rank there fails instead;
#  - MLX's hostfile as a list ({"ssh","ips"}) and as {"backend","envs",
#    "hosts"}: each rank gets its host's "ips" in MLX_HOSTFILE, "envs" reach
#    every rank, --env wins over them; --cwd; stdin reaches every rank.
set -u
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
. "$here/checks.sh"
hosts_up 3 || { fail "the test hosts did not come up"; finish; }

# Unreachable host.
start=$(date +%s)
launch 30 --hosts 10.99.0.1,10.99.0.9 --no-verify-script -- touch "$T/started" </dev/null >"$T/out" 2>&1
rc=$?
[ $rc -ne 0 ] && grep -q "cannot reach host 10.99.0.9" "$T/out" && ok "unreachable host named (status $rc)" ||
    fail "unreachable host: status $rc, $(cat "$T/out")"
grep -q "10.99.0.1 " "$T/out" && fail "the reachable host was named too: $(cat "$T/out")"
[ ! -e "$T/started" ] && ok "nothing started" || fail "a rank ran despite the unreachable host"
[ $(($(date +%s) - start)) -le 10 ] && ok "reported within 10 s" || fail "took $(($(date +%s) - start)) s"

# Command missing on host 2 only.
bin=$(mktemp -d /var/tmp/dchosts-bin.XXXXXX)
printf '#!/bin/sh\ntouch %s/ran.$MLX_RANK\n' "$T" >"$bin/dctool"
chmod +x "$bin/dctool"
hosts_hide 2 "$bin" || fail "hosts_hide 2"
launch 30 --hosts "$(host_list 3)" -- "$bin/dctool" </dev/null >"$T/out" 2>&1
rc=$?
grep -q "host 10.99.0.2: command '$bin/dctool' not found" "$T/out" && [ $rc -ne 0 ] &&
    ok "missing command: host 10.99.0.2 named (status $rc)" || fail "missing command: status $rc, $(cat "$T/out")"
grep -q -E "host 10.99.0.(1|3):" "$T/out" && fail "other hosts named: $(cat "$T/out")"
ls "$T"/ran.* >/dev/null 2>&1 && fail "a rank ran despite the missing command" || ok "nothing started"
launch 30 --no-verify-script --hosts "$(host_list 3)" -- "$bin/dctool" </dev/null >"$T/out" 2>&1
rc=$?
[ $rc -eq 127 ] && grep -q "rank 1 (on host 10.99.0.2) exited with status 127" "$T/out" &&
    ok "--no-verify-script: the rank on host 10.99.0.2 fails with 127" ||
    fail "--no-verify-script: status $rc, $(cat "$T/out")"
rm -rf "$bin" "$T"/ran.*

# MLX's hostfile, the list form; stdin and --cwd.
show='read -r line; echo "rank $MLX_RANK/$MLX_WORLD_SIZE got $line in $PWD F=${DCL_FILE:-} B=${DCL_BOTH:-} hf=$(cat "$MLX_HOSTFILE")"'
printf '[{"ssh": "10.99.0.3", "ips": ["10.99.0.3"]}, {"ssh": "10.99.0.1", "ips": ["10.99.0.1"]}]\n' >"$T/list.json"
echo hello | launch 30 --cwd /var/tmp --hostfile "$T/list.json" -- sh -c "$show" >"$T/out" 2>&1
rc=$?
cat "$T/out"
[ $rc -eq 0 ] && ok "list hostfile: status 0" || fail "list hostfile: status $rc"
for r in 0 1; do
    grep -q "^rank $r/2 got hello in /var/tmp " "$T/out" && ok "rank $r got stdin, ran in --cwd" ||
        fail "rank $r: no stdin or wrong directory"
done
grep -q 'hf=\[\["10.99.0.3:[0-9]*"\],\["10.99.0.1:[0-9]*"\]\]' "$T/out" &&
    ok "MLX_HOSTFILE: rank 0 at 10.99.0.3, rank 1 at 10.99.0.1" || fail "unexpected MLX_HOSTFILE"

# The object form: "backend", "envs" (with --env winning), two ips per host.
cat >"$T/obj.json" <<'JSON'
{"backend": "ring", "envs": ["DCL_FILE=from-file", "DCL_BOTH=file"],
 "hosts": [{"ssh": "10.99.0.2", "ips": ["10.99.0.2", "10.99.0.2"]},
           {"ssh": "10.99.0.3", "ips": ["10.99.0.3", "10.99.0.3"]}]}
JSON
echo hi | launch 30 --hostfile "$T/obj.json" --env DCL_BOTH=cli -- sh -c "$show" >"$T/out" 2>&1
rc=$?
cat "$T/out"
[ $rc -eq 0 ] && ok "object hostfile: status 0" || fail "object hostfile: status $rc"
[ "$(grep -c 'F=from-file B=cli ' "$T/out")" -eq 2 ] && ok "\"envs\" reach every rank, --env wins" ||
    fail "\"envs\" / --env not as expected"
grep -q 'hf=\[\["10.99.0.2:[0-9]*","10.99.0.2:[0-9]*"\],\["10.99.0.3:[0-9]*","10.99.0.3:[0-9]*"\]\]' "$T/out" &&
    ok "two addresses per rank from \"ips\"" || fail "unexpected MLX_HOSTFILE for two ips"
expect_none_left 5 && ok "no process of the job left on any host"
finish
