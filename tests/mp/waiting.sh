#!/bin/bash
# waiting.sh PROBE: start-up says what it waits for (issue 36, part 5)
# without DISTCOMM_VERBOSE: after DISTCOMM_WAIT_NOTE s (default 5) one line
# on stderr names the awaited ranks or address; something that is not a
# coordinator at the coordinator's port is named as such; a job that starts
# normally prints nothing new. Every case ends within its timeout.
set -u
probe=$1
. "$(dirname "$0")/mp_lib.sh"
unset MLX_RANK MLX_HOSTFILE DISTCOMM_JOB_TOKEN DISTCOMM_JOB_TOKEN_FILE \
  MLX_WORLD_SIZE RANK WORLD_SIZE MASTER_ADDR MASTER_PORT SLURM_PROCID \
  SLURM_NTASKS DISTCOMM_COORDINATOR MLX_JACCL_COORDINATOR DISTCOMM_VERBOSE \
  MLX_RING_VERBOSE OMPI_COMM_WORLD_RANK PMI_RANK PMIX_RANK DISTCOMM_WAIT_NOTE
. "$(dirname "$0")/by_hand.sh"
base=$(mp_port_base)
co() { echo "DISTCOMM_COORDINATOR=127.0.0.1:$((base + $1))"; }

# has NAME.R WORD...: the rank's output holds every WORD.
has() {
  local f=$mp_tmp/$1 out
  shift
  out=$(cat "$f")
  if contains "$out" "$@"; then ok "$f: $*"
  else fail "$f: want '$*' in: $out"; fi
}

# Occupied ports: one for a joiner, one for rank 0 (held 20 s, past both).
"$probe" occupy $((base + 2)) 20 >"$mp_tmp/occ2" 2>&1 &
mp_pids+=($!)
"$probe" occupy $((base + 3)) 20 >"$mp_tmp/occ3" 2>&1 &
mp_pids+=($!)
wait_for "$mp_tmp/occ2" listening 5 && wait_for "$mp_tmp/occ3" listening 5 ||
  fail "could not occupy ports $((base + 2)), $((base + 3))"

# After the rendezvous (here an address file): rank 1's peer at base+5 is
# a program that accepts (the kernel does) but never answers, as a stopped
# rank would; rank 0 at base+6 waits for a rank 1 that never dials.
"$probe" occupy $((base + 5)) 20 >"$mp_tmp/occ5" 2>&1 &
mp_pids+=($!)
wait_for "$mp_tmp/occ5" listening 5 || fail "could not occupy port $((base + 5))"
hf=$mp_tmp/stuck.json
printf '[["127.0.0.1:%d"],["127.0.0.1:%d"]]\n' $((base + 5)) $((base + 7)) >"$hf"
hf0=$mp_tmp/alone0.json
printf '[["127.0.0.1:%d"],["127.0.0.1:%d"]]\n' $((base + 6)) $((base + 8)) >"$hf0"

# A program that accepts and closes at once, at base+9.
python3 - $((base + 9)) >"$mp_tmp/closer" 2>&1 <<'PY' &
import socket, sys
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", int(sys.argv[1])))
s.listen(16)
print("listening", flush=True)
while True:
    s.accept()[0].close()
PY
mp_pids+=($!)
wait_for "$mp_tmp/closer" listening 5 || fail "could not listen on $((base + 9))"

t0=$(now_ms)
start closer 1 $(co 9) MLX_RANK=1 MLX_WORLD_SIZE=2 DISTCOMM_TIMEOUT=3 \
  DISTCOMM_WAIT_NOTE=1 -- "$probe" init
start stuck 1 MLX_RANK=1 MLX_HOSTFILE="$hf" DISTCOMM_TIMEOUT=3 \
  DISTCOMM_WAIT_NOTE=1 -- "$probe" init
start lone0 0 MLX_RANK=0 MLX_HOSTFILE="$hf0" DISTCOMM_TIMEOUT=3 \
  DISTCOMM_WAIT_NOTE=1 -- "$probe" init
# A joiner alone, the default note time (5 s), a 7 s timeout.
start alone 1 $(co 0) MLX_RANK=1 MLX_WORLD_SIZE=2 DISTCOMM_TIMEOUT=7 -- "$probe" init
# Rank 0 and 1 of 3: rank 2 never comes.
for r in 0 1; do
  start two $r $(co 1) MLX_RANK=$r MLX_WORLD_SIZE=3 DISTCOMM_TIMEOUT=4 \
    DISTCOMM_WAIT_NOTE=1 -- "$probe" init
done
# A joiner whose coordinator port a silent program holds.
start silent 1 $(co 2) MLX_RANK=1 MLX_WORLD_SIZE=2 DISTCOMM_TIMEOUT=6 \
  DISTCOMM_WAIT_NOTE=1 -- "$probe" init
# Rank 0 whose coordinator port another program holds.
start busy 0 $(co 3) MLX_RANK=0 MLX_WORLD_SIZE=2 DISTCOMM_TIMEOUT=3 \
  DISTCOMM_WAIT_NOTE=1 -- "$probe" init
# A job that starts normally: nothing but its OK line.
for r in 0 1; do
  start fine $r $(co 4) MLX_RANK=$r MLX_WORLD_SIZE=2 -- "$probe" init
done

expect_err alone 1 11000 ERR_TIMEOUT "could not reach the coordinator"
has alone.1 "[distcomm rank 1] waiting for the coordinator 127.0.0.1:$base (DISTCOMM_COORDINATOR): nothing listens there yet (is rank 0 running?), after "
grep -qE "running\?\), after [56] s" "$mp_tmp/alone.1" && ok "the first note after 5 s" ||
  fail "the first note not after 5 s: $(cat "$mp_tmp/alone.1")"
expect_err two 0 11000 ERR_TIMEOUT "missing rank(s) 2"
expect_err two 1 11000 ERR_TIMEOUT "missing rank(s) 2"
has two.0 "[distcomm rank 0] waiting at the coordinator 127.0.0.1:$((base + 1)) (DISTCOMM_COORDINATOR) for rank(s) 2: 2 of 3 here after "
has two.1 "[distcomm rank 1] waiting for the coordinator 127.0.0.1:$((base + 1)) (DISTCOMM_COORDINATOR): joined; rank 0 answers once every rank has joined"
expect_err silent 1 11000 ERR_TIMEOUT "could not join the coordinator 127.0.0.1:$((base + 2))" \
  "something there answered but is not a distcomm coordinator (it sent nothing within 5 s)"
has silent.1 "[distcomm rank 1] waiting for the coordinator 127.0.0.1:$((base + 2)) (DISTCOMM_COORDINATOR): something there answered"
expect_err busy 0 11000 ERR_SYSTEM "cannot listen on the coordinator address 127.0.0.1:$((base + 3))"
has busy.0 "[distcomm rank 0] waiting to listen on the coordinator address 127.0.0.1:$((base + 3)) (DISTCOMM_COORDINATOR): another process holds the port"
expect_err stuck 1 11000 ERR_TIMEOUT "rank 0 (127.0.0.1:$((base + 5)))"
has stuck.1 "[distcomm rank 1] set-up: waiting for rank 0 (127.0.0.1:$((base + 5))) to answer our hello (is it stopped or stuck?)"
expect_err lone0 0 11000 ERR_TIMEOUT "waiting for rank 1 (127.0.0.1:$((base + 8))) to connect"
has lone0.0 "[distcomm rank 0] set-up: waiting for rank 1 (127.0.0.1:$((base + 8))) to connect"
expect_err closer 1 11000 ERR_TIMEOUT "could not join the coordinator 127.0.0.1:$((base + 9))" \
  "something there answered but is not a distcomm coordinator (it closed the connection at once)"
has closer.1 "[distcomm rank 1] waiting for the coordinator 127.0.0.1:$((base + 9)) (DISTCOMM_COORDINATOR): something there answered but is not a distcomm coordinator (it closed the connection at once)"
expect_ok fine 2 "a normal start"
for r in 0 1; do
  out=$(cat "$mp_tmp/fine.$r")
  [ "$out" = "OK rank $r size 2 backend ring" ] && ok "fine.$r prints only: $out" ||
    fail "fine.$r printed more: $out"
done
mp_finish
