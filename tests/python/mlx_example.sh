#!/bin/bash
# mlx_example.sh LAUNCHER VENV N PATTERN LINES -- PROGRAM ARGS...
# Runs an unchanged MLX program (examples/mlx) on N ranks with
# `distcomm-launch --mlx` and VENV's python; passes when the job exits 0 and
# at least LINES output lines match the extended regex PATTERN. Skips (77)
# with a message when VENV has no mlx (no PyPI) or the launcher has no --mlx
# yet (issue 34 part 2, branch mlxface).
set -u
launch=$1 venv=$2 n=$3 pattern=$4 lines=$5
shift 6
if ! "$venv/bin/python" -c "import mlx.core" 2>/dev/null; then
  echo "SKIP: $venv has no mlx (the mlx.venv fixture could not reach PyPI)"; exit 77
fi
if ! "$launch" --help 2>&1 | grep -qE '^ *--mlx( |$)'; then
  echo "SKIP: $launch has no --mlx option"; exit 77
fi
out=$(timeout 120 "$launch" --mlx -n "$n" -- "$venv/bin/python" "$@" 2>&1)
rc=$?
printf '%s\n' "$out"
got=$(printf '%s\n' "$out" | grep -cE -- "$pattern")
if [ "$rc" -ne 0 ]; then echo "FAIL: the job exited with status $rc"; exit 1; fi
if [ "$got" -lt "$lines" ]; then
  echo "FAIL: $got lines match '$pattern', expected $lines"; exit 1
fi
echo "PASS: $got lines match"
