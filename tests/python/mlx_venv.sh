#!/bin/bash
# mlx_venv.sh BUILD_DIR DC_PYTHON: makes BUILD_DIR/venv-mlx once (the ctest
# fixture mlx.venv, which the MLX tests of tests/python require):
# "mlx[cpu]" mlx-lm numpy pytest from PyPI, marked done with .complete as
# tests/mlx/venv.sh marks it. Exit 77 (skip) when PyPI cannot be reached,
# so the tests that need it skip too. Used only where tests/mlx/venv.sh,
# which makes the same venv, is absent.
set -u
build=$1 dc_python=$2
venv=$build/venv-mlx
if "$venv/bin/python" -c "import mlx.core, mlx_lm, numpy, pytest" 2>/dev/null; then
  touch "$venv/.complete" # tests/mlx/run.sh's mark of a finished venv
  echo "mlx.venv: $venv is ready"; exit 0
fi
# The venv's python must load the extension built for dc_python: the same
# minor version (pyenv's python3 first on PATH, else dc_python itself).
want=$("$dc_python" -c 'import sys; print(sys.version_info[:2])')
py=$dc_python
if command -v python3 >/dev/null &&
  [ "$(python3 -c 'import sys; print(sys.version_info[:2])')" = "$want" ]; then
  py=$(command -v python3)
fi
rm -rf "$venv"
if ! timeout 120 "$py" -m venv "$venv"; then
  echo "mlx.venv: FAIL: $py -m venv $venv failed"; exit 1
fi
log=$build/venv-mlx.log
if timeout 900 "$venv/bin/pip" install --disable-pip-version-check -q \
  "mlx[cpu]" mlx-lm numpy pytest >"$log" 2>&1; then
  touch "$venv/.complete"
  echo "mlx.venv: made $venv with $py"; exit 0
fi
tail -20 "$log"
rm -rf "$venv"
if grep -qE "NewConnectionError|Network is unreachable|Temporary failure in name resolution|No matching distribution|Max retries exceeded|timed out" "$log"; then
  echo "mlx.venv: SKIP: PyPI cannot be reached (pip install \"mlx[cpu]\" failed); the MLX tests skip"
  exit 77
fi
echo "mlx.venv: FAIL: pip install failed (log: $log)"; exit 1
