# --hosts and --hostfile without real hosts: usage errors, loopback names
# (started locally), and the whole remote path (probe, agent, frames, stop)
# through a stand-in ssh (DISTCOMM_SSH) that runs the command on this
# machine, so that it also runs under the sanitizer builds. The real thing,
# over ssh between network namespaces, is tests/hosts.
# shellcheck disable=SC2016 # $VARS in rank commands are for the ranks' shells
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"

# Usage errors: status 2, the problem named.
bad() { # bad PATTERN ARGS...: the launcher refuses ARGS with PATTERN
    local pat=$1
    shift
    launch "$@" -- true 2> "$T/e"
    expect_eq "$?" 2 "$*"
    grep -q -- "$pat" "$T/e" || fail "$*: unexpected message: $(cat "$T/e")"
}
bad "a host name is empty" --hosts 10.0.0.1,,10.0.0.2
bad "cannot be mixed" --hosts 127.0.0.1,10.0.0.2
printf '[{"ssh": "10.0.0.1", "ips": [1]}]' > "$T/h1.json"
bad '"ips" of host 0 must be a list of strings' --hostfile "$T/h1.json"
printf '[{"ssh": "10.0.0.1",' > "$T/h2.json"
bad "not MLX's JSON hostfile" --hostfile "$T/h2.json"
# --backend jaccl (the mesh) needs each host's "rdma" row, one per host
bad 'host 0 (10.0.0.1) has no "rdma" row: write the hostfile with distcomm-config --backend mesh' \
    --backend jaccl --hosts 10.0.0.1,10.0.0.2
printf '[{"ssh": "10.0.0.1", "rdma": [null, "en1"]}, {"ssh": "10.0.0.2", "rdma": [null]}]' > "$T/h5.json"
bad 'the "rdma" row of host 1 (10.0.0.2) has 1 entries for 2 ranks' --backend mesh --hostfile "$T/h5.json"
printf '[{"ssh": "10.0.0.1", "rdma": "en1"}]' > "$T/h6.json"
bad '"rdma" of host 0 must be a list' --backend jaccl-ring --hostfile "$T/h6.json"
printf '{"backend": "jaccl", "hosts": [{"ssh": "10.0.0.1", "rdma": [null, "en1"]}]}' > "$T/h7.json"
bad 'has 2 entries for 1 ranks' --hostfile "$T/h7.json"
printf '[{"ips": ["10.0.0.1"]}]' > "$T/h3.json"
bad 'host 0 has no "ssh" name: {"ips":\["10.0.0.1"\]}; --hostfile wants a hosts file, \[{"ssh": NAME, "ips": \[IP, ...\]}, ...\]$' --hostfile "$T/h3.json"
# An address file (MLX_HOSTFILE's format) given as a hosts file is named so.
printf '[["127.0.0.1:5000"], ["127.0.0.1:5001"]]' > "$T/h3b.json"
bad 'host 0 has no "ssh" name: \["127.0.0.1:5000"\]; --hostfile wants a hosts file, .* (a list of "ip:port" lists is an address file, which ranks read from MLX_HOSTFILE)$' --hostfile "$T/h3b.json"
printf '{"backend": "nccl", "hosts": [{"ssh": "10.0.0.1"}]}' > "$T/h4.json"
bad 'backend "nccl": distcomm has no NCCL backend' --hostfile "$T/h4.json"
bad "give --hosts or --hostfile" --hosts 10.0.0.1 --hostfile "$T/h4.json"

# Loopback names are this machine: local ranks, -n each, no ssh.
out=$(DISTCOMM_SSH=/nonexistent launch -n 2 --hosts 127.0.0.1,localhost -- \
    sh -c 'echo "$MLX_RANK/$MLX_WORLD_SIZE"' | sort | tr '\n' ' ')
expect_eq "$out" "0/4 1/4 2/4 3/4 " "local ranks from --hosts 127.0.0.1,localhost"

# A stand-in for ssh: drops the options, runs the command here, so that
# hosts 127.0.0.2 and 127.0.0.3 are "remote" yet reachable.
mkdir -p "$T/bin"
cat > "$T/bin/fake-ssh" <<'SH'
#!/bin/sh
while [ $# -gt 0 ]; do
    case $1 in -o | -F) shift 2 ;; -*) shift ;; *) break ;; esac
done
host=$1
shift
[ -n "${DCL_SSH_LOG:-}" ] && echo "$host $*" >> "$DCL_SSH_LOG"
[ "$host" = 127.0.0.9 ] && { echo "ssh: connect to host $host port 22: Connection refused" >&2; exit 255; }
exec sh -c "$*"
SH
chmod +x "$T/bin/fake-ssh"
export DISTCOMM_SSH="$T/bin/fake-ssh -o Unused=1"

# Every rank gets its setup from the agent: variables, hostfile, cwd, stdin.
printf 'hello\n' | launch --tag-output -n 2 --hosts 127.0.0.2,127.0.0.3 --env DCL_E=e \
    --cwd / -- sh -c 'read -r l; echo "$MLX_RANK/$MLX_WORLD_SIZE $l $DCL_E $PWD ${#DISTCOMM_JOB_TOKEN} $(cat "$MLX_HOSTFILE")"' \
    > "$T/o" 2> "$T/e"
expect_eq "$?" 0 "a job through the agent"
expect_eq "$(grep -c " hello e / 32 \[\[\"127.0.0.2:[0-9]*\"\],\[\"127.0.0.2:[0-9]*\"\],\[\"127.0.0.3:[0-9]*\"\],\[\"127.0.0.3:[0-9]*\"\]\]$" "$T/o")" 4 \
    "ranks' variables, stdin, cwd, token and hostfile: $(cat "$T/o" "$T/e")"
for r in 0 1 2 3; do
    grep -q "^\[$r\] $r/4 " "$T/o" || fail "no line from rank $r"
done
expect_no_hostfile

# The token never appears on a command line.
launch --hosts 127.0.0.2 -- sh -c 'ps -eo args; echo "T=$DISTCOMM_JOB_TOKEN"' > "$T/o" 2>&1
tok=$(sed -n 's/^T=//p' "$T/o")
[ ${#tok} -eq 32 ] || fail "no token in the rank: $(cat "$T/o")"
[ "$(grep -c -- "$tok" "$T/o")" -eq 1 ] || fail "the token shows in ps: $(grep -- "$tok" "$T/o")"

# One ssh per host, however many ranks (sshd drops logins beyond its
# MaxStartups): 2 hosts x 3 ranks make 2 probes and 2 agents. Each rank's
# lines come back through its host's agent, tagged with the rank, stdout and
# stderr apart.
: > "$T/ssh.log"
DCL_SSH_LOG="$T/ssh.log" launch --tag-output -n 3 --hosts 127.0.0.2,127.0.0.3 -- \
    sh -c 'echo "out $MLX_RANK"; echo "err $MLX_RANK" >&2' > "$T/o" 2> "$T/e"
expect_eq "$?" 0 "2 hosts x 3 ranks"
expect_eq "$(grep -c -- ' --remote-agent$' "$T/ssh.log")" 2 "agents: $(cat "$T/ssh.log")"
expect_eq "$(wc -l < "$T/ssh.log")" 4 "ssh invocations: $(cat "$T/ssh.log")"
expect_eq "$(sort "$T/ssh.log" | cut -d' ' -f1 | uniq -c | tr -s ' ' | tr '\n' ,)" \
    " 2 127.0.0.2, 2 127.0.0.3," "ssh invocations per host (a probe and an agent)"
for r in 0 1 2 3 4 5; do
    grep -qx "\[$r\] out $r" "$T/o" || fail "no stdout line from rank $r: $(cat "$T/o")"
    grep -qx "\[$r\] err $r" "$T/e" || fail "no stderr line from rank $r: $(cat "$T/e")"
done
expect_eq "$(wc -l < "$T/o")" 6 "stdout lines of 6 ranks: $(cat "$T/o")"
expect_eq "$(wc -l < "$T/e")" 6 "stderr lines of 6 ranks: $(cat "$T/e")"

# A failing rank among others on its host: named with its host; the others
# there and on the other host are stopped, with what they started.
launch -n 3 --hosts 127.0.0.2,127.0.0.3 -- sh -c '
    echo $$ > "$0.pid.$MLX_RANK"
    if [ "$MLX_RANK" = 4 ]; then sleep 0.5; exit 5; fi
    sleep 60 & echo $! > "$0.child.$MLX_RANK"; wait' "$T/g" 2> "$T/e"
expect_eq "$?" 5 "status of a failing rank on a 3-rank host"
grep -q "^distcomm-launch: rank 4 (on host 127.0.0.3) exited with status 5; stopping the other ranks$" "$T/e" ||
    fail "unexpected failure line: $(cat "$T/e")"
expect_eq "$(ls "$T"/g.pid.* | wc -l)" 6 "ranks that ran"
expect_gone "$T"/g.pid.* "$T"/g.child.*

# Checks before anything starts: an unreachable host, a missing command.
launch --hosts 127.0.0.2,127.0.0.9 -- touch "$T/ran" 2> "$T/e"
expect_eq "$?" 255 "an unreachable host"
grep -q "cannot reach host 127.0.0.9 over ssh: ssh: connect to host 127.0.0.9 port 22: Connection refused" "$T/e" ||
    fail "unexpected message: $(cat "$T/e")"
launch --hosts 127.0.0.2 -- no-such-command-dcl 2> "$T/e"
expect_eq "$?" 127 "a missing command"
grep -q "host 127.0.0.2: command 'no-such-command-dcl' not found" "$T/e" || fail "unexpected message: $(cat "$T/e")"
[ ! -e "$T/ran" ] || fail "a rank ran although the checks failed"

# On a terminal (script(1) gives one), a line per host as it is checked;
# not in a log (every run above wrote stderr to a file).
if command -v script >/dev/null; then
    timeout 40 script -qec "$L --hosts 127.0.0.2,127.0.0.9,127.0.0.3 -- true" /dev/null > "$T/tty" 2>&1
    for l in "127.0.0.2 reached (1/3)" "127.0.0.9 unreachable (2/3)" "127.0.0.3 reached (3/3)"; do
        grep -q "^distcomm-launch: checking hosts: $l" "$T/tty" || fail "no progress line '$l': $(cat "$T/tty")"
    done
    grep -q "checking hosts" "$T/e" && fail "progress lines in a log: $(cat "$T/e")"
else
    echo "note: no script(1) (util-linux); progress lines not checked"
fi
echo PASS
