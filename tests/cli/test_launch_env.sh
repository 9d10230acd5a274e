# Each rank sees MLX_RANK 0..N-1, MLX_WORLD_SIZE, the same hostfile with N
# entries of distinct ports, and a shared job id that changes per job.
# shellcheck disable=SC2016 # $VARS in rank commands are for the ranks' shells
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"

run_job() { # $1: output dir
    mkdir -p "$1"
    launch -n 4 -- sh -c 'out=$0
        { echo "rank=$MLX_RANK"; echo "size=$MLX_WORLD_SIZE"; echo "job=$DISTCOMM_JOB_ID"
          echo "path=$MLX_HOSTFILE"; echo "verbose=${MLX_RING_VERBOSE:-unset}"
          echo "token=$DISTCOMM_JOB_TOKEN"
          echo "hostfile=$(cat "$MLX_HOSTFILE")"; } > "$out/rank.$MLX_RANK"' "$1" \
        || fail "launcher exited with $?"
}

run_job "$T/a"
for r in 0 1 2 3; do
    f=$T/a/rank.$r
    [ -f "$f" ] || fail "rank $r did not run"
    expect_eq "$(grep '^rank=' "$f")" "rank=$r" "MLX_RANK of rank $r"
    expect_eq "$(grep '^size=' "$f")" "size=4" "MLX_WORLD_SIZE of rank $r"
    expect_eq "$(grep '^verbose=' "$f")" "verbose=unset" "MLX_RING_VERBOSE without --verbose"
done
[ "$(find "$T/a" -type f | wc -l)" = 4 ] || fail "expected exactly 4 ranks: $(ls "$T/a")"

jobs=$(grep -h '^job=' "$T"/a/rank.* | sort -u)
[ "$(echo "$jobs" | wc -l)" = 1 ] || fail "ranks disagree on DISTCOMM_JOB_ID: $jobs"
echo "$jobs" | grep -Eq '^job=[0-9a-f]{16}$' || fail "DISTCOMM_JOB_ID is not 64-bit hex: $jobs"

tokens=$(grep -h '^token=' "$T"/a/rank.* | sort -u)
[ "$(echo "$tokens" | wc -l)" = 1 ] || fail "ranks disagree on DISTCOMM_JOB_TOKEN: $tokens"
echo "$tokens" | grep -Eq '^token=[0-9a-f]{32}$' || fail "DISTCOMM_JOB_TOKEN is not 128-bit hex: $tokens"

hf=$(grep -h '^hostfile=' "$T"/a/rank.* | sort -u)
[ "$(echo "$hf" | wc -l)" = 1 ] || fail "ranks read different hostfiles: $hf"
json=${hf#hostfile=}
echo "$json" | grep -Eq '^\[(\["127\.0\.0\.1:[0-9]+"\],){3}\["127\.0\.0\.1:[0-9]+"\]\]$' \
    || fail "hostfile is not a list of 4 one-address entries: $json"
ports=$(echo "$json" | grep -Eo ':[0-9]+' | sort -u | wc -l)
expect_eq "$ports" 4 "distinct ports in $json"

path=$(grep -h '^path=' "$T/a/rank.0")
path=${path#path=}
case $path in "$TMPDIR"/*) ;; *) fail "hostfile $path is not under TMPDIR" ;; esac
[ -e "$path" ] && fail "hostfile $path still exists after the job"
expect_no_hostfile

# A second job gets a fresh id.
run_job "$T/b"
job2=$(grep -h '^job=' "$T/b/rank.0")
[ "$job2" != "$jobs" ] || fail "two jobs got the same DISTCOMM_JOB_ID $job2"

# --verbose reaches the ranks and the launcher reports what it does on stderr.
launch --verbose -n 2 sh -c 'echo "v=$MLX_RING_VERBOSE"' > "$T/v.out" 2> "$T/v.err" \
    || fail "verbose job failed"
expect_eq "$(sort -u "$T/v.out")" "v=1" "MLX_RING_VERBOSE with --verbose"
grep -q 'hostfile' "$T/v.err" || fail "--verbose did not log the hostfile: $(cat "$T/v.err")"

# --env reaches every rank; a value may contain '='.
launch -n 2 --env FOO=bar --env=BAZ=a=b -- sh -c 'echo "$MLX_RANK $FOO $BAZ"' > "$T/e.out" \
    || fail "--env job failed"
expect_eq "$(sort "$T/e.out" | tr '\n' ';')" "0 bar a=b;1 bar a=b;" "--env values"

# Who wins: the launcher's own variables over --env, a later --env over an
# earlier one and over the launcher's environment, which passes through
# otherwise; each name once (the environment is built before the vfork).
FOO=outer OUTER=kept launch -n 2 --env FOO=a --env FOO=b --env MLX_RANK=9 -- \
    sh -c 'echo "$MLX_RANK $FOO $OUTER $(env | grep -c "^FOO=") $(env | grep -c "^MLX_RANK=")"' \
    > "$T/w.out" || fail "precedence job failed"
expect_eq "$(sort "$T/w.out" | tr '\n' ';')" "0 b kept 1 1;1 b kept 1 1;" "which value wins"

# The other spellings of -n.
for form in "-n3" "--repeat-hosts=3" "--repeat-hosts 3"; do
    # shellcheck disable=SC2086 # word splitting of $form is the point
    launch $form -- sh -c 'echo "$MLX_WORLD_SIZE"' > "$T/form" || fail "'$form' failed"
    expect_eq "$(tr '\n' ' ' < "$T/form")" "3 3 3 " "world size with $form"
done

# Like mlx.launch, a .py file that is not executable runs with python3.
if command -v python3 > /dev/null; then
    printf 'import os\nprint("py", os.environ["MLX_RANK"])\n' > "$T/script.py"
    launch -n 2 "$T/script.py" > "$T/py" || fail "python script job failed"
    expect_eq "$(sort "$T/py" | tr '\n' ';')" "py 0;py 1;" "output of a .py script"
fi
expect_no_hostfile
echo PASS
