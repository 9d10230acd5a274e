# --keep-going (issue 37): a rank that is killed or exits badly does not
# stop the others; the launcher names it, the others finish, and its exit
# status is the survivors'. Here and on "remote" hosts (a stand-in ssh, as
# test_launch_hosts), where each host's agent reports ends one by one.
# shellcheck disable=SC2016 # $VARS in rank commands are for the ranks' shells
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"

# Rank 1 is killed; ranks 0 and 2 finish 1 s later: status 0.
rank='if [ "$MLX_RANK" = 1 ]; then kill -KILL $$; fi; sleep 1; echo "done $MLX_RANK"'
launch -n 3 --keep-going -- sh -c "$rank" > "$T/o1" 2> "$T/e1"
expect_eq "$?" 0 "a killed rank under --keep-going: $(cat "$T/e1")"
expect_eq "$(sort "$T/o1" | tr '\n' ' ')" "done 0 done 2 " "the survivors' output"
grep -Eq '^distcomm-launch: rank 1 \(pid [0-9]+ on localhost\) was killed by signal 9 \(Killed\); the other ranks go on \(--keep-going\)$' \
    "$T/e1" || fail "no line naming the lost rank: $(cat "$T/e1")"
grep -q '^distcomm-launch: --keep-going: 2 of 3 ranks finished, 1 lost' "$T/e1" ||
    fail "no closing count: $(cat "$T/e1")"

# A survivor that fails on its own decides the status (its error is the
# job's); the others are not stopped.
rank='if [ "$MLX_RANK" = 0 ]; then kill -KILL $$; fi
    if [ "$MLX_RANK" = 1 ]; then sleep 0.5; exit 4; fi; sleep 1.5; echo "done $MLX_RANK"'
launch -n 3 --keep-going -- sh -c "$rank" > "$T/o2" 2> "$T/e2"
expect_eq "$?" 4 "a survivor's own failure: $(cat "$T/e2")"
expect_eq "$(cat "$T/o2")" "done 2" "rank 2 was not stopped"
grep -q 'rank 1 (pid [0-9]* on localhost) exited with status 4; the other ranks go on' "$T/e2" ||
    fail "no line for rank 1: $(cat "$T/e2")"

# Every rank lost: the last one's status.
launch -n 2 --keep-going -- sh -c 'kill -KILL $$' 2> "$T/e3"
expect_eq "$?" 137 "every rank killed: $(cat "$T/e3")"

# Without --keep-going the same job still stops at the first loss.
start=$(date +%s)
launch -n 3 -- sh -c 'if [ "$MLX_RANK" = 1 ]; then kill -KILL $$; fi; sleep 20' 2> "$T/e4"
expect_eq "$?" 137 "without --keep-going"
[ $(($(date +%s) - start)) -lt 10 ] || fail "the job without --keep-going was not stopped"

# Remote hosts: the agent on 127.0.0.3 reports its rank's end; the rank on
# 127.0.0.2 goes on and finishes.
fake_ssh
rank='if [ "$MLX_RANK" = 1 ]; then kill -KILL $$; fi; sleep 1; echo "done $MLX_RANK"'
DISTCOMM_SSH="$FAKE_SSH" launch --keep-going --hosts 127.0.0.2,127.0.0.3 -- \
    sh -c "$rank" > "$T/o5" 2> "$T/e5"
expect_eq "$?" 0 "a killed remote rank under --keep-going: $(cat "$T/e5")"
expect_eq "$(cat "$T/o5")" "done 0" "the remote survivor's output"
grep -q 'rank 1 (on host 127.0.0.3) was killed by signal 9' "$T/e5" ||
    fail "no line naming the lost remote rank: $(cat "$T/e5")"

# mpirun ends the whole job on a failure: refused, with the reason.
out=$(launch --keep-going --backend mpi -n 2 -- true 2>&1)
expect_eq "$?" 2 "--keep-going with --backend mpi: $out"
case $out in *"--keep-going needs ranks started by distcomm-launch"*) ;;
    *) fail "no reason for refusing --keep-going with mpi: $out" ;; esac
echo PASS
