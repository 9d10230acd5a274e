#!/bin/bash
# bench/mlx/mlx.sh [BUILD] [VENV] [RESULTS]: the same unchanged MLX programs,
# in turns in one run, on 2 ranks of this host under
#   ring     MLX's own ring (mlx.launch; TCP only)
#   mpi      MLX's mpi backend on Open MPI (mpirun; --mca btl tcp,self and
#            vader,self with --mca pml ob1, so the btl named is the one used)
#   distcomm MLX's mpi backend on distcomm (distcomm-launch --mlx;
#            DISTCOMM_SHM=0 for TCP, the default for shared memory)
#   dcpy     not MLX's API: distcomm.all_sum(mx.array) from distcomm's Python
#            module under distcomm-launch (all_sum only; no decode), the
#            same transports; for reference where --mlx is missing
# bench/mlx/allsum.py: mx.distributed.all_sum 8 B - 128 MiB of float32,
# timed eval to eval, the median of many after warm-up; examples/mlx/
# generate.py --no-check: tensor-parallel greedy decode of a small mlx-lm
# Llama (random weights), tokens/s. ROUNDS rounds (default 3) run every
# configuration in turn; a cell is the median of its rounds. Prints one
# table (times in us, ratios: the other's time / distcomm's, > 1 is
# distcomm faster; decode: distcomm's tokens/s / the other's) and the
# host's memcpy rate. PIN=1 pins every rank of ring, distcomm and dcpy to
# one CPU (rank % CPUs, taskset), as Open MPI binds its ranks to cores at
# -np 2 by default. Raw outputs go to RESULTS (default
# bench/results/<date>-mlx). Configurations whose launcher is missing
# (distcomm-launch without --mlx) show "-".
set -u
repo=$(cd "$(dirname "$0")/../.." && pwd)
build=$(cd "${1:-$repo/build}" && pwd) || exit 1
venv=${2:-$build/venv-mlx}
results=${3:-$repo/bench/results/$(date -u +%F)-mlx}
rounds=${ROUNDS:-3}
py=$venv/bin/python
launch=$build/bin/distcomm-launch
"$py" -c "import mlx.core, mlx_lm" || { echo "no mlx in $venv (make it: ctest -R mlx.venv)"; exit 1; }
mkdir -p "$results"
rpy=$py # the python the ranks of ring, distcomm and dcpy run
if [ "${PIN:-0}" = 1 ]; then
  rpy=$results/pinned-python
  printf '%s\n' '#!/bin/bash' \
    'r=${DISTCOMM_RANK:-${MLX_RANK:-0}}' \
    "exec taskset -c \$((r % $(nproc))) $(cd "$(dirname "$py")" && pwd)/$(basename "$py") \"\$@\"" >"$rpy"
  chmod +x "$rpy"
fi

mpi() { # mpi BTL PROGRAM ARGS...
  local btl=$1
  shift
  MLX_MPI_LIBNAME=libmpi.so.40 mpirun --allow-run-as-root --oversubscribe --mca pml ob1 \
    --mca btl "$btl" -np 2 -x MLX_MPI_LIBNAME "$py" "$@"
}
run() { # run CONFIG PROGRAM ARGS...
  local c=$1
  shift
  case $c in
  ring_tcp) "$venv/bin/mlx.launch" -n 2 --python "$rpy" "$@" ;;
  mpi_tcp) mpi tcp,self "$@" ;;
  mpi_shm) mpi vader,self "$@" ;;
  dc_tcp) "$launch" --mlx -n 2 --env DISTCOMM_SHM=0 -- "$rpy" "$@" ;;
  dc_shm) "$launch" --mlx -n 2 -- "$rpy" "$@" ;;
  dcpy_tcp) PYTHONPATH=$build/python "$launch" -n 2 --env DISTCOMM_SHM=0 -- "$rpy" "$@" --distcomm ;;
  dcpy_shm) PYTHONPATH=$build/python "$launch" -n 2 -- "$rpy" "$@" --distcomm ;;
  esac
}

configs="ring_tcp mpi_tcp mpi_shm dcpy_tcp dcpy_shm"
if "$launch" --help 2>&1 | grep -qE '^ *--mlx( |$)'; then
  configs="$configs dc_tcp dc_shm"
else
  echo "# $launch has no --mlx: the distcomm columns are empty"
fi
for r in $(seq 1 "$rounds"); do
  for c in $configs; do
    echo "# round $r: $c"
    timeout 600 bash -c "$(declare -f mpi run); py='$py' rpy='$rpy' venv='$venv' launch='$launch' \
      build='$build' run $c '$repo/bench/mlx/allsum.py'" >"$results/allsum-$c-$r.txt" 2>&1 ||
      echo "# allsum on $c failed (see $results/allsum-$c-$r.txt)"
    case $c in dcpy_*) continue ;; esac
    timeout 600 bash -c "$(declare -f mpi run); py='$py' rpy='$rpy' venv='$venv' launch='$launch' \
      run $c '$repo/examples/mlx/generate.py' --no-check --tokens 64" \
      >"$results/decode-$c-$r.txt" 2>&1 ||
      echo "# decode on $c failed (see $results/decode-$c-$r.txt)"
  done
done
{
  echo "# $(date -u '+%F %T UTC') at $(git -C "$repo" rev-parse --short HEAD 2>/dev/null)," \
    "$(lscpu | sed -n 's/^Model name: *//p'), $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg)"
  echo "# mlx $("$py" -c 'import mlx.core as m; print(m.__version__)'), $(mpirun --version | head -1), PIN=${PIN:-0}"
  echo "# memcpy: $("$build/bin/bench-copy-rate" 128 5 2>&1 | tail -1)"
} >"$results/host.txt"
python3 "$repo/bench/mlx/table.py" "$results" | tee "$results/table.md"
