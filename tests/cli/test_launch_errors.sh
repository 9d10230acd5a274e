# Commands that cannot run and bad options fail fast with one clear line.
# shellcheck disable=SC2016 # $VARS in rank commands are for the ranks' shells
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"

launch -n 2 -- no-such-command-dcl --flag > "$T/o" 2> "$T/e"
expect_eq "$?" 127 "status for a missing command"
grep -Eq "^distcomm-launch: cannot run 'no-such-command-dcl': No such file or directory$" "$T/e" \
    || fail "unexpected message: $(cat "$T/e")"
expect_eq "$(wc -l < "$T/e")" 1 "lines for a missing command"

printf 'echo hi\n' > "$T/noexec.sh"
chmod -x "$T/noexec.sh"
launch -n 1 "$T/noexec.sh" 2> "$T/e2"
expect_eq "$?" 126 "status for a file that is not executable"
grep -q "Permission denied" "$T/e2" || fail "unexpected message: $(cat "$T/e2")"

launch -n 2 --cwd "$T/does-not-exist" -- true 2> "$T/e3" && fail "a missing --cwd was accepted"
grep -q "cannot change directory" "$T/e3" || fail "unexpected message: $(cat "$T/e3")"
mkdir -p "$T/wd"
launch -n 1 --cwd "$T/wd" -- sh -c 'pwd; cat "$MLX_HOSTFILE" > /dev/null' > "$T/pwd" \
    || fail "--cwd job failed (hostfile must be reachable from any directory)"
expect_eq "$(cat "$T/pwd")" "$T/wd" "working directory with --cwd"

# Bad usage: status 2, an error line then a hint, and no rank started.
bad_usage() { # $1: text expected in the error; the rest: arguments
    local want=$1
    shift
    launch "$@" > "$T/bo" 2> "$T/be"
    local rc=$?
    [ $rc = 2 ] || fail "'$*' gave status $rc, expected 2"
    head -1 "$T/be" | grep -q "^distcomm-launch: .*$want" || fail "'$*': unexpected error: $(cat "$T/be")"
    grep -q -- "--help" "$T/be" || fail "'$*': no usage hint"
    [ -s "$T/bo" ] && fail "'$*': something ran: $(cat "$T/bo")"
    return 0
}
bad_usage "'0'" -n 0 -- echo ran
bad_usage "'abc'" -n abc -- echo ran
# mpirun's -np: the integer error, and what was meant.
bad_usage "-n: 'p' is not an integer from 1 to 4096; did you mean -n 2?$" -np 2 -- echo ran
bad_usage "'-3'" --repeat-hosts -3 echo ran
bad_usage "unknown option '--frobnicate'" --frobnicate -- echo ran
bad_usage "no command" -n 2
bad_usage "no command" -n 2 --
bad_usage "needs a value" -n
bad_usage "K=V" --env NOEQUALS -- echo ran
bad_usage "'0'" --starting-port 0 -- echo ran
bad_usage "'70000'" --starting-port 70000 -- echo ran
bad_usage "65536" --starting-port 65535 -n 2 -- echo ran
bad_usage "'0'" --connections-per-ip 0 -- echo ran
# MLX's backends that distcomm cannot run: one line naming what is missing.
unavailable() { # $1: text expected in the one line; the rest: arguments
    local want=$1
    shift
    launch "$@" > "$T/bo" 2> "$T/be"
    local rc=$?
    [ $rc = 2 ] || fail "'$*' gave status $rc, expected 2"
    expect_eq "$(wc -l < "$T/be")" 1 "'$*': lines of error"
    grep -q "^distcomm-launch: .*$want.*; use --backend ring or mpi$" "$T/be" || fail "'$*': unexpected error: $(cat "$T/be")"
    [ -s "$T/bo" ] && fail "'$*': something ran: $(cat "$T/bo")"
    return 0
}
unavailable "--backend nccl: distcomm has no NCCL backend (it needs libnccl and CUDA GPUs)" --backend nccl -- echo ran
bad_usage "'abc'" --nccl-port abc -- echo ran
bad_usage "unknown backend" --backend carrier-pigeon -- echo ran
bad_usage "takes no value" --verbose=1 -- echo ran

# Options after the command belong to the command.
launch -n 1 echo -n --verbose > "$T/cmdopts" || fail "command options were parsed"
expect_eq "$(cat "$T/cmdopts")" "--verbose" "the command's own options"

# --help lists every option and exits 0.
launch --help > "$T/help" || fail "--help exited with $?"
for opt in -n --repeat-hosts --backend --env --starting-port --connections-per-ip \
    --cwd --tag-output --verbose --no-verify-script --hosts --hostfile --mpi-arg --help; do
    grep -q -- "$opt" "$T/help" || fail "--help does not mention $opt"
done
expect_no_hostfile
echo PASS
