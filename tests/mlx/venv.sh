#!/bin/bash
# The mlx tests' fixture: <build>/venv-mlx with MLX's Linux CPU build,
# mlx-lm and pytest from PyPI, made once per build folder. When PyPI cannot
# be reached it leaves a note instead (exit 0), and every mlx test then
# skips (77) quoting it: an offline machine is not a failure.
# Usage: venv.sh VENV_DIR PYTHON
set -u -o pipefail
venv=${1:?usage: $0 VENV_DIR PYTHON}
python=${2:-python3}
note=$venv.unavailable
# One maker at a time (two ctest runs in one build folder): wait for it.
exec 9>"$venv.lock"
flock -w 1000 9 || { echo "venv-mlx: $venv.lock stayed held" >&2; exit 1; }
if [ -x "$venv/bin/python" ] && [ -e "$venv/.complete" ]; then
    echo "venv-mlx: $venv is ready"
    exit 0
fi
rm -rf "$venv" "$note"
if ! "$python" -m venv "$venv" >"$note.log" 2>&1; then
    echo "cannot make a venv with $python (python3-venv missing?)" >"$note"
    cat "$note.log" >&2
    exit 1
fi
# The CPU wheel of MLX ("mlx[cpu]"); mlx-lm brings numpy.
if ! timeout 900 "$venv/bin/pip" install -q --disable-pip-version-check \
    "mlx[cpu]" mlx-lm pytest >"$note.log" 2>&1; then
    if grep -qiE "connection|resolve|network|No matching distribution|timed out" "$note.log"; then
        echo "PyPI cannot be reached: pip install \"mlx[cpu]\" mlx-lm pytest failed ($(grep -iE 'error|warning' "$note.log" | tail -1))" >"$note"
        cat "$note"
        rm -rf "$venv"
        exit 0
    fi
    cat "$note.log" >&2
    exit 1
fi
touch "$venv/.complete"
"$venv/bin/python" -c "import mlx.core as mx, mlx_lm; print('venv-mlx: mlx', mx.__version__)"
