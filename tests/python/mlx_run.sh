#!/bin/bash
# mlx_run.sh VENV COMMAND...: runs COMMAND (which names VENV's python) when
# the mlx venv exists; exit 77 (skip) with a message when it does not (the
# fixture mlx.venv skipped: PyPI unreachable).
set -u
venv=$1
shift
if ! "$venv/bin/python" -c "import mlx.core" 2>/dev/null; then
  echo "SKIP: $venv has no mlx (the mlx.venv fixture could not reach PyPI)"
  exit 77
fi
exec "$@"
