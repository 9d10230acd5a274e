# MLX's flags that only name things: --python runs a .py command with that
# interpreter (by default the python3 of the venv whose bin holds the
# launcher, else python3 from PATH), --print-python prints it (no command
# needed), --nccl-port is accepted and checked; and the three tools
# (distcomm-config and distcomm-perf sit beside the launcher) refuse an
# unknown flag with one line and the hint.
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
C=$(dirname "$L")/distcomm-config

mkdir -p "$T/bin"
printf '#!/bin/sh\necho "mypy $MLX_RANK $*"\n' > "$T/bin/mypy"
chmod +x "$T/bin/mypy"
echo 'print("never run by this python")' > "$T/job.py"

# --python: a .py file that is not executable runs with it, on every rank.
out=$(launch -n 2 --python "$T/bin/mypy" -- "$T/job.py" a | sort)
expect_eq "$out" "mypy 0 $T/job.py a
mypy 1 $T/job.py a" "--python"
# found on PATH like any command
out=$(PATH=$T/bin:$PATH launch --python mypy "$T/job.py")
expect_eq "$out" "mypy 0 $T/job.py" "--python found on PATH"

# --print-python: the interpreter's path, exit 0, nothing launched.
out=$(PATH=$T/bin:$PATH launch --print-python --python mypy) || fail "--print-python failed"
expect_eq "$out" "$T/bin/mypy" "--print-python --python mypy"
out=$(launch --python /opt/py/bin/python3.11 --print-python -n 4)
expect_eq "$out" /opt/py/bin/python3.11 "--print-python with a path"
out=$(PATH=$T/bin:/usr/bin:/bin launch --print-python)
expect_eq "$out" "$(PATH=$T/bin:/usr/bin:/bin command -v python3)" "--print-python default (python3 on PATH)"
# A launcher in a venv's bin (pip install .; pyvenv.cfg one folder up): that
# venv's python3 by default, even with another python3 first on PATH.
mkdir -p "$T/venv/bin"
cp "$L" "$T/venv/bin/distcomm-launch"
printf '#!/bin/sh\necho "venvpy $MLX_RANK $*"\n' > "$T/venv/bin/python3"
chmod +x "$T/venv/bin/python3"
out=$(PATH=$T/bin:/usr/bin:/bin timeout 10 "$T/venv/bin/distcomm-launch" --print-python)
expect_eq "$out" "$(PATH=$T/bin:/usr/bin:/bin command -v python3)" "--print-python in a bin without pyvenv.cfg"
touch "$T/venv/pyvenv.cfg"
out=$(PATH=$T/bin:/usr/bin:/bin timeout 10 "$T/venv/bin/distcomm-launch" --print-python)
expect_eq "$out" "$T/venv/bin/python3" "--print-python from a venv's bin"
out=$(PATH=$T/bin:/usr/bin:/bin timeout 30 "$T/venv/bin/distcomm-launch" -n 2 -- "$T/job.py" b | sort)
expect_eq "$out" "venvpy 0 $T/job.py b
venvpy 1 $T/job.py b" "a .py from a venv's launcher"
out=$(timeout 10 "$T/venv/bin/distcomm-launch" --python "$T/bin/mypy" --print-python)
expect_eq "$out" "$T/bin/mypy" "--python over the venv's python"
timeout 10 env PATH="$T/bin" "$L" --print-python --python nopython > "$T/o" 2> "$T/e" && fail "a missing python printed"
grep -q "nopython is not on PATH" "$T/e" || fail "missing python not named: $(cat "$T/e")"

# --nccl-port: MLX's, checked, no effect on the ring.
out=$(launch -n 2 --nccl-port 23456 -- sh -c 'echo "r$MLX_RANK ${NCCL_PORT:-none}"' | sort | tr '\n' ' ')
expect_eq "$out" "r0 none r1 none " "--nccl-port with the ring"
launch --nccl-port 70000 -- true 2> "$T/e" && fail "--nccl-port 70000 accepted"
grep -q "nccl-port: '70000' is not an integer from 1 to 65535" "$T/e" || fail "bad --nccl-port: $(cat "$T/e")"

# Unknown flags: status 2, the flag named on one line, then the hint.
for tool in "$L" "$C" "$(dirname "$L")/distcomm-perf"; do
    name=$(basename "$tool")
    timeout 10 "$tool" --no-such-flag --hosts 127.0.0.1 > "$T/o" 2> "$T/e"
    expect_eq "$?" 2 "$name --no-such-flag: status"
    expect_eq "$(wc -l < "$T/e")" 2 "$name --no-such-flag: lines: $(cat "$T/e")"
    head -1 "$T/e" | grep -q "^$name: unknown option.*--no-such-flag" || fail "$name: flag not named: $(cat "$T/e")"
    [ "$name" = distcomm-perf ] && { timeout 10 "$tool" -t 2> "$T/e"; expect_eq "$?" 2 "distcomm-perf -t"; }
    expect_eq "$(tail -1 "$T/e")" "Try '$name --help' for more information." "$name: hint"
    [ -s "$T/o" ] && fail "$name printed on stdout: $(cat "$T/o")"
done
# distcomm-config's new MLX flags parse (and --help lists them).
help=$(timeout 10 "$C" --help)
for f in --hostfile --ignore-unreachable --output-hostfile --over --auto-setup --no-auto-setup --env jaccl-ring; do
    echo "$help" | grep -q -- "$f" || fail "distcomm-config --help lacks $f"
done
timeout 10 "$C" --backend bogus 2> "$T/e"
expect_eq "$?" 2 "distcomm-config --backend bogus"
grep -q "ring, mesh, jaccl or jaccl-ring: bogus" "$T/e" || fail "bad backend: $(cat "$T/e")"
timeout 10 "$C" --over wifi 2> "$T/e"
expect_eq "$?" 2 "distcomm-config --over wifi"
echo "PASS: MLX's flags"
