# --backend mpi: distcomm-launch runs mpirun with the hosts converted to an
# MPI hostfile, --env passed with mpirun's own flag and the --mpi-arg words;
# --verbose prints the mpirun line. First through a fake mpirun that records
# what it was given (both dialects, no MPI needed), then a real job under the
# installed mpirun when there is one.
# shellcheck disable=SC2016 # $VARS in rank commands are for the ranks' shells
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"

# A fake mpirun: answers --version like Open MPI or hydra ($FAKE_KIND), else
# writes its arguments and its hostfile's lines to $FAKE_OUT and exits 5.
mkdir -p "$T/bin"
cat > "$T/bin/fake-mpirun" <<'EOF'
#!/bin/sh
if [ "$1" = --version ]; then
    [ "$FAKE_KIND" = hydra ] && echo "HYDRA build details:" || echo "mpirun (Open MPI) 5.0.0"
    exit 0
fi
echo "$*" > "$FAKE_OUT"
while [ $# -gt 0 ]; do
    case $1 in --hostfile|-f) cat "$2" >> "$FAKE_OUT.hosts" ;; esac
    shift
done
exit 5
EOF
chmod +x "$T/bin/fake-mpirun"
export FAKE_OUT=$T/fake.out
printf '[{"ssh": "alpha", "ips": ["10.0.0.1"]},\n {"ssh":"beta","ips":["10.0.0.2"]}]\n' > "$T/hosts.json"

# Open MPI dialect: "host slots=N", -x K=V, --mpi-arg split into words.
FAKE_KIND=ompi DISTCOMM_MPIRUN=$T/bin/fake-mpirun launch --backend mpi --verbose \
    --hostfile "$T/hosts.json" -n 2 --env DCL_A=1 --mpi-arg '--mca btl tcp,self' \
    -- prog arg > "$T/o" 2> "$T/e"
expect_eq "$?" 5 "mpirun's exit status"
grep -q "^distcomm-launch: Open MPI: running: $T/bin/fake-mpirun --hostfile $TMPDIR/[^ ]* -np 4 -x DCL_A=1 -x DISTCOMM_BACKEND=mpi -x MLX_RING_VERBOSE=1 --mca btl tcp,self prog arg$" "$T/e" \
    || fail "--verbose does not print the mpirun line: $(cat "$T/e")"
expect_eq "$(cat "$FAKE_OUT.hosts")" "$(printf 'alpha slots=2\nbeta slots=2')" "Open MPI hostfile"
expect_no_hostfile

# MPICH's hydra: "host:N", -f, -genv K V; --hosts instead of a file.
rm -f "$FAKE_OUT.hosts"
FAKE_KIND=hydra DISTCOMM_MPIRUN=$T/bin/fake-mpirun launch --backend mpi --hosts h1,h2,h3 \
    --env DCL_B=x=y --tag-output -- prog > "$T/o" 2> "$T/e"
expect_eq "$?" 5 "mpirun's exit status (hydra)"
expect_eq "$(cat "$FAKE_OUT")" "-f $(grep -o -- "$TMPDIR/[^ ]*" "$FAKE_OUT") -np 3 -genv DCL_B x=y -genv DISTCOMM_BACKEND mpi -prepend-rank prog" "hydra arguments"
expect_eq "$(cat "$FAKE_OUT.hosts")" "$(printf 'h1:1\nh2:1\nh3:1')" "hydra hostfile"
expect_no_hostfile

# As root, a failed Open MPI mpirun gets the hint that it refuses root
# without --allow-run-as-root; not once that is given, nor for hydra.
hint="mpirun exited with status 5; as root, Open MPI's mpirun refuses to start: add --mpi-arg --allow-run-as-root, or set OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1"
if [ "$(id -u)" = 0 ]; then
    (unset OMPI_ALLOW_RUN_AS_ROOT OMPI_ALLOW_RUN_AS_ROOT_CONFIRM
     FAKE_KIND=ompi DISTCOMM_MPIRUN=$T/bin/fake-mpirun launch --backend mpi -n 2 -- prog 2> "$T/e"
     expect_eq "$?" 5 "mpirun's exit status (as root)"
     grep -qxF "distcomm-launch: $hint" "$T/e" || fail "no root hint: $(cat "$T/e")"
     FAKE_KIND=ompi DISTCOMM_MPIRUN=$T/bin/fake-mpirun launch --backend mpi -n 2 \
         --mpi-arg --allow-run-as-root -- prog 2> "$T/e"
     grep -q "refuses to start" "$T/e" && fail "root hint despite --allow-run-as-root: $(cat "$T/e")"
     FAKE_KIND=hydra DISTCOMM_MPIRUN=$T/bin/fake-mpirun launch --backend mpi -n 2 -- prog 2> "$T/e"
     grep -q "refuses to start" "$T/e" && fail "root hint for hydra: $(cat "$T/e")"
     exit 0) || exit 1
else
    echo "not root: the root hint is not checked"
fi
rm -f "$FAKE_OUT.hosts"

# An MPI hostfile is passed as it is; its slots give -np.
printf 'n1 slots=2\n# comment\nn2 slots=3\n' > "$T/mpi.hosts"
FAKE_KIND=ompi DISTCOMM_MPIRUN=$T/bin/fake-mpirun launch --backend mpi --hostfile "$T/mpi.hosts" -- prog
expect_eq "$(cat "$FAKE_OUT")" "--hostfile $T/mpi.hosts -np 5 -x DISTCOMM_BACKEND=mpi prog" "MPI hostfile passed through"

# The JSON hostfile is read by the launcher's one parser: a host without
# "ssh" is an error naming the entry, not a host skipped; bad names too.
rm -f "$FAKE_OUT"
printf '[{"ssh": "alpha"}, {"ips": ["10.0.0.2"]}]' > "$T/nossh.json"
DISTCOMM_MPIRUN=$T/bin/fake-mpirun launch --backend mpi --hostfile "$T/nossh.json" -- prog 2> "$T/e"
expect_eq "$?" 2 "a host without \"ssh\" (--backend mpi)"
grep -q "^distcomm-launch: --hostfile $T/nossh.json: host 1 has no \"ssh\" name: {\"ips\":\[\"10.0.0.2\"\]}; --hostfile wants a hosts file" "$T/e" ||
    fail "unexpected message: $(cat "$T/e")"
printf '{"backend": "mpi", "hosts": [{"ssh": "alpha"}, {"ssh": ""}]}' > "$T/nossh2.json"
DISTCOMM_MPIRUN=$T/bin/fake-mpirun launch --hostfile "$T/nossh2.json" -- prog 2> "$T/e"
expect_eq "$?" 2 "an empty \"ssh\" (backend mpi from the file)"
grep -q 'host 1 has no "ssh" name: {"ssh":""}; --hostfile wants a hosts file' "$T/e" || fail "unexpected message: $(cat "$T/e")"
DISTCOMM_MPIRUN=$T/bin/fake-mpirun launch --backend mpi --hosts alpha,-oX=y -- prog 2> "$T/e"
expect_eq "$?" 2 "a host name starting with '-' (--backend mpi)"
grep -q "host name '-oX=y' starts with '-'" "$T/e" || fail "unexpected message: $(cat "$T/e")"
printf '[{"ssh": "alpha", "ips": ["nope"]}]' > "$T/badip.json"
DISTCOMM_MPIRUN=$T/bin/fake-mpirun launch --backend mpi --hostfile "$T/badip.json" -- prog 2> "$T/e"
expect_eq "$?" 2 "a bad \"ips\" value (--backend mpi)"
grep -q "'nope' is not an IPv4 or IPv6 address" "$T/e" || fail "unexpected message: $(cat "$T/e")"
[ -e "$FAKE_OUT" ] && fail "mpirun ran for a bad hostfile: $(cat "$FAKE_OUT")"
expect_no_hostfile

# Usage errors: status 2 and one line.
launch --mpi-arg -v -- true 2> "$T/e"
expect_eq "$?" 2 "--mpi-arg without --backend mpi"
grep -q "needs --backend mpi" "$T/e" || fail "unexpected message: $(cat "$T/e")"
launch --hosts a,,b -- true 2> "$T/e"
expect_eq "$?" 2 "an empty name in --hosts"
grep -q "a host name is empty" "$T/e" || fail "unexpected message: $(cat "$T/e")"
DISTCOMM_MPIRUN=no-such-mpirun-dcl launch --backend mpi -n 2 -- true 2> "$T/e"
expect_eq "$?" 127 "a missing mpirun"
grep -q "cannot run no-such-mpirun-dcl" "$T/e" || fail "unexpected message: $(cat "$T/e")"

# A real job under the installed mpirun: every rank runs, sees --env and
# MPI's own rank variable, and the exit status comes back.
if ! command -v mpirun > /dev/null; then
    echo "SKIP: no mpirun installed; the real-run part is skipped"
    echo PASS
    exit 0
fi
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 # CI runs as root
unset DISTCOMM_MPIRUN
launch --backend mpi --verbose -n 2 --env DCL_C=seen -- \
    sh -c 'echo "rank ${OMPI_COMM_WORLD_RANK:-$PMI_RANK} $DCL_C"' > "$T/o" 2> "$T/e"
expect_eq "$?" 0 "real mpirun job"
expect_eq "$(sort "$T/o")" "$(printf 'rank 0 seen\nrank 1 seen')" "ranks' output"
grep -q "running: mpirun .*-np 2 .*DCL_C.*sh -c" "$T/e" || fail "no mpirun line: $(cat "$T/e")"
# --backend mpi means MPI's backend, not the PMIx start of "any"; an --env
# DISTCOMM_BACKEND wins.
launch --backend mpi -n 2 -- sh -c 'echo "$DISTCOMM_BACKEND"' > "$T/o" 2> "$T/e"
expect_eq "$(cat "$T/o")" "$(printf 'mpi\nmpi')" "DISTCOMM_BACKEND under --backend mpi"
launch --backend mpi -n 1 --env DISTCOMM_BACKEND=ring -- sh -c 'echo "$DISTCOMM_BACKEND"' > "$T/o" 2> "$T/e"
expect_eq "$(cat "$T/o")" "ring" "--env DISTCOMM_BACKEND under --backend mpi"
launch --backend mpi -n 2 -- sh -c 'exit 7' > /dev/null 2>&1
expect_eq "$?" 7 "a failing rank's status through mpirun"
expect_no_hostfile
echo PASS
