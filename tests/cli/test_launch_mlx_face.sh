# --mlx: each rank gets distcomm's ring under DISTCOMM_RANK and
# DISTCOMM_HOSTFILE, MLX_MPI_LIBNAME naming libdistcomm-ompi.so beside the
# launcher, and no MLX_RANK/MLX_HOSTFILE (not even inherited ones), locally
# and through the remote agent. Refused with --backend mpi, and by a
# launcher with no face beside it, before any rank starts.
# shellcheck disable=SC2016 # $VARS in rank commands are for the ranks' shells
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"

face=$(realpath "$(dirname "$L")/../libdistcomm-ompi.so")
[ -f "$face" ] || fail "no face at $face"
show='echo "$DISTCOMM_RANK/$MLX_WORLD_SIZE ${MLX_RANK-none} ${MLX_HOSTFILE-none} $MLX_MPI_LIBNAME $(cat "$DISTCOMM_HOSTFILE")"'

out=$(MLX_RANK=7 MLX_HOSTFILE=/x launch --mlx -n 2 -- sh -c "$show" | sort)
expect_eq "$(echo "$out" | cut -d' ' -f1-4 | tr '\n' ,)" \
    "0/2 none none $face,1/2 none none $face," "--mlx ranks' variables: $out"
echo "$out" | grep -Eq '\[\["127\.0\.0\.1:[0-9]+"\],\["127\.0\.0\.1:[0-9]+"\]\]$' ||
    fail "DISTCOMM_HOSTFILE is not the job's address file: $out"
expect_no_hostfile

# Without --mlx nothing changes.
out=$(launch -n 1 -- sh -c 'echo "$MLX_RANK ${DISTCOMM_RANK-none} ${MLX_MPI_LIBNAME-none}"')
expect_eq "$out" "0 none none" "variables without --mlx"

# Through the agent (a stand-in ssh that runs the command here).
mkdir -p "$T/bin"
cat > "$T/bin/fake-ssh" <<'SH'
#!/bin/sh
while [ $# -gt 0 ]; do
    case $1 in -o | -F) shift 2 ;; -*) shift ;; *) break ;; esac
done
shift
exec sh -c "$*"
SH
chmod +x "$T/bin/fake-ssh"
out=$(DISTCOMM_SSH="$T/bin/fake-ssh" launch --mlx --hosts 127.0.0.2,127.0.0.3 -- sh -c "$show" | sort)
expect_eq "$(echo "$out" | cut -d' ' -f1-4 | tr '\n' ,)" \
    "0/2 none none $face,1/2 none none $face," "--mlx through the agent: $out"

# Refusals: one clear line, status 2, no rank started.
err=$(launch --mlx --backend mpi -n 2 -- sh -c 'echo started' 2>&1)
expect_eq "$?" 2 "--mlx --backend mpi"
echo "$err" | grep -q "give one of them" || fail "--mlx --backend mpi said: $err"
echo "$err" | grep -q started && fail "a rank started: $err"
printf '{"backend": "mpi", "hosts": [{"ssh": "127.0.0.1"}]}' > "$T/mpi.json"
err=$(launch --mlx --hostfile "$T/mpi.json" -- sh -c 'echo started' 2>&1)
expect_eq "$?" 2 "--mlx with a hostfile whose backend is mpi"
echo "$err" | grep -q 'backend "mpi" runs mpirun' || fail "--mlx --hostfile (mpi) said: $err"
echo "$err" | grep -q started && fail "a rank started: $err"
mkdir -p "$T/alone/bin"
cp "$L" "$T/alone/bin/"
err=$(timeout 20 "$T/alone/bin/$(basename "$L")" --mlx -n 2 -- sh -c 'echo started' 2>&1)
expect_eq "$?" 2 "--mlx without the face"
echo "$err" | grep -q "libdistcomm-ompi.so (MLX's MPI face) is not beside this launcher" ||
    fail "--mlx without the face said: $err"
echo "$err" | grep -q started && fail "a rank started: $err"
echo "PASS"
