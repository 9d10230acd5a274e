# A rank's pid is its process group's id, and the launcher (local ranks) and
# the agent (remote ones) signal that group after the rank has exited (what
# it left behind belongs to the job). Were the rank reaped first, its pid
# could be reused by a stranger's new group by then; so an exited rank stays
# unreaped (a zombie, its pid held) until the last kill of its group. Seen
# from a leftover in the group: when SIGTERM reaches it, the rank that
# started it must still be a zombie, not gone.
# shellcheck disable=SC2016 # $VARS in rank commands are for the ranks' shells
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"

# Rank 0 leaves a child in its group that, on SIGTERM, writes the state of
# rank 0's pid to $0.seen; then rank 0 fails. Other ranks just wait.
job='if [ "$MLX_RANK" != 0 ]; then exec sleep 30; fi
sh -c "trap '\''s=\$(cut -d\" \" -f3 /proc/$$/stat 2>/dev/null); echo \${s:-gone} > $0.seen; exit 0'\'' TERM
       echo > $0.ready; while :; do sleep 0.05; done" &
while [ ! -e "$0.ready" ]; do sleep 0.05; done
exit 3'

check() { # check NAME: the leftover saw rank 0 as a zombie
    [ -e "$T/$1.seen" ] || fail "$1: the leftover got no SIGTERM"
    expect_eq "$(cat "$T/$1.seen")" Z "$1: rank 0's pid when its group got SIGTERM"
}

# Local ranks: the launcher's SIGTERM to every group, after the settle time.
launch -n 2 -- sh -c "$job" "$T/local" > /dev/null 2> "$T/e"
expect_eq "$?" 3 "local job status: $(cat "$T/e")"
check local

# Remote ranks through the agent (a stand-in ssh, as in test_launch_hosts):
# the agent sends SIGTERM to an exited rank's group at once.
fake_ssh
DISTCOMM_SSH="$FAKE_SSH" launch -n 2 --hosts 127.0.0.2 -- sh -c "$job" "$T/remote" > /dev/null 2> "$T/e"
expect_eq "$?" 3 "remote job status: $(cat "$T/e")"
check remote
echo PASS
