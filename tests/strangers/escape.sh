#!/bin/bash
# escape.sh PROBE STRANGER: a peer's abort text is printed by the ranks it
# reaches (stderr, Python exceptions): terminal escape sequences in it must
# come out escaped. A hand-started rank 0 (no token) lets a stranger in as
# rank 1, which sends an abort frame whose text holds ESC, BEL, CR, LF and
# a C1 CSI; rank 0's error must name rank 1, carry the text, and hold no
# control byte.
set -u
probe=$1 stranger=$2
. "$(dirname "$0")/../mp/mp_lib.sh"
unset DISTCOMM_JOB_TOKEN
export DISTCOMM_TIMEOUT=20 DISTCOMM_JOB_ID=5eed DISTCOMM_SOCKETS=1
base=$(mp_port_base)
printf '[["127.0.0.1:%d"],["127.0.0.1:%d"]]\n' "$base" $((base + 1)) >"$mp_tmp/hf.json"
MLX_HOSTFILE=$mp_tmp/hf.json MLX_RANK=0 timeout -k 2 40 "$probe" init \
  >"$mp_tmp/r0" 2>&1 &
r0=$!
mp_pids+=("$r0")
timeout -k 2 40 "$stranger" abort-escape "127.0.0.1:$base" 5eed 2 >"$mp_tmp/s" 2>&1
wait "$r0"
rc=$?
line=$(grep -a "^ERR" "$mp_tmp/r0")
if [ "$rc" -eq 3 ] && contains "$line" "rank 1" "evil" "done"; then
  ok "rank 0 adopted the abort: $(cat -v <<<"$line")"
else
  fail "rank 0: exit $rc: $(cat -v "$mp_tmp/r0") / stranger: $(cat "$mp_tmp/s")"
fi
if LC_ALL=C grep -aqP '[\x00-\x08\x0b-\x1f\x7f-\xff]' "$mp_tmp/r0"; then
  fail "control bytes reached the output: $(cat -v "$mp_tmp/r0")"
else
  ok "no control byte in rank 0's output"
fi
if contains "$line" '\x1b' '\x07'; then
  ok "the escapes are shown as \\xNN"
else
  fail "the escapes are not shown as \\xNN: $(cat -v <<<"$line")"
fi
mp_finish
