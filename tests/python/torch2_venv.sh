#!/bin/bash
# torch 2.13 for the torch2 tests: `torch2_venv.sh setup BUILD` makes
# BUILD/venv-torch once (pip install torch==2.13.0, the CPU wheel; any other
# torch spec would download GBs of CUDA); `torch2_venv.sh run BUILD -- CMD...`
# runs CMD when that venv is ready and skips (77) when it is not (PyPI was
# unreachable at setup). The venv's python must be the ABI the extension was
# built for (3.11 on Debian 12).
set -u
mode=$1 build=$2
venv=$build/venv-torch
ok=$venv/.torch2-ready
if [ "$mode" = run ]; then
  shift 3
  if [ ! -e "$ok" ]; then
    echo "SKIP: $venv has no torch 2.13 (see the torch2.venv test: PyPI unreachable?)"
    exit 77
  fi
  exec "$@"
fi
[ -e "$ok" ] && { echo "$venv: ready"; exit 0; }
py=$(command -v python3)
abi=$(/usr/bin/python3 -c 'import sys; print(sys.version_info[:2])')
if [ "$("$py" -c 'import sys; print(sys.version_info[:2])')" != "$abi" ]; then
  py=/usr/bin/python3 # Debian's has venv and the extension's ABI
fi
rm -rf "$venv"
if ! "$py" -m venv "$venv"; then
  echo "FAILED: $py -m venv $venv"
  exit 1
fi
if ! timeout 900 "$venv/bin/pip" install -q --timeout 30 torch==2.13.0 numpy pytest; then
  if ! timeout 30 "$venv/bin/python" -c "import urllib.request as u, os; \
u.urlopen(os.environ.get('PIP_INDEX_URL', 'https://pypi.org/simple').rstrip('/') + '/pip/', timeout=20)"; then
    echo "SKIP: PyPI is unreachable: the torch 2.13 tests are skipped"
    rm -rf "$venv"
    exit 77
  fi
  echo "FAILED: pip install torch==2.13.0 numpy pytest (PyPI is reachable)"
  exit 1
fi
"$venv/bin/python" -c 'import torch, numpy; assert torch.__version__.startswith("2.13")' || exit 1
touch "$ok"
echo "$venv: torch 2.13 ready"
