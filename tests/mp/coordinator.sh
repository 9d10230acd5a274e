#!/bin/bash
# coordinator.sh PROBE CONFORMANCE: jobs started by hand (a shell loop, as
# a Slurm script would) with one coordinator address and no hostfile.
# Every variable set users have works (ours, MLX's JACCL names, torchrun's,
# Slurm's rank and size); late ranks are waited for; a missing rank, two
# processes claiming one rank, a world-size disagreement and a coordinator
# that dies are each a clear error on every rank, within the timeout.
set -u
probe=$1 conf=$2
. "$(dirname "$0")/mp_lib.sh"
unset MLX_RANK MLX_HOSTFILE DISTCOMM_JOB_TOKEN MLX_WORLD_SIZE RANK WORLD_SIZE \
  MASTER_ADDR MASTER_PORT SLURM_PROCID SLURM_NTASKS DISTCOMM_COORDINATOR \
  MLX_JACCL_COORDINATOR OMPI_COMM_WORLD_RANK PMI_RANK PMIX_RANK DISTCOMM_IFNAME
export DISTCOMM_TIMEOUT=20

. "$(dirname "$0")/by_hand.sh"

port() { echo $(($(mp_port_base) + $1)); }

# 4 ranks, the conformance suite, rank 0 last and 1 s after the others.
limit=400
p=$(port 0)
for r in 3 2 1; do
  start conf $r DISTCOMM_COORDINATOR=127.0.0.1:$p MLX_RANK=$r MLX_WORLD_SIZE=4 \
    -- "$conf" --size 4 --quick
  sleep 0.3
done
sleep 1
start conf 0 DISTCOMM_COORDINATOR=127.0.0.1:$p MLX_RANK=0 MLX_WORLD_SIZE=4 \
  -- "$conf" --size 4 --quick
expect_ok conf 4 "4 ranks by DISTCOMM_COORDINATOR, arriving late: conformance"

# The same over TCP only, by torchrun's names (a name, not an address).
p=$(port 1)
for r in 0 1 2; do
  start torch $r MASTER_ADDR=localhost MASTER_PORT=$p RANK=$r WORLD_SIZE=3 \
    DISTCOMM_SHM=0 -- "$conf" --size 3 --counts 0,1,7,4099
done
expect_ok torch 3 "3 ranks by MASTER_ADDR=localhost/MASTER_PORT/RANK/WORLD_SIZE over TCP: conformance"
limit=60

# MLX's JACCL names, and Slurm's rank and size (the coordinator comes before
# the MPI backend that SLURM_PROCID alone would pick).
p=$(port 2)
for r in 0 1; do
  start jaccl $r MLX_JACCL_COORDINATOR=127.0.0.1:$p MLX_RANK=$r \
    MLX_WORLD_SIZE=2 -- "$probe" init
done
expect_ok jaccl 2 "MLX_JACCL_COORDINATOR + MLX_RANK + MLX_WORLD_SIZE"
p=$(port 3)
for r in 0 1 2; do
  start slurm $r DISTCOMM_COORDINATOR=127.0.0.1:$p SLURM_PROCID=$r \
    SLURM_NTASKS=3 -- "$probe" init
done
expect_ok slurm 3 "DISTCOMM_COORDINATOR + SLURM_PROCID + SLURM_NTASKS"

# The coordinator's port is held for 2 s by another program: rank 0 retries.
p=$(port 4)
"$probe" occupy "$p" 2 >"$mp_tmp/occupy" 2>&1 &
mp_pids+=($!)
wait_for "$mp_tmp/occupy" "listening" 5 || fail "could not occupy port $p"
for r in 0 1; do
  start busy $r DISTCOMM_COORDINATOR=127.0.0.1:$p MLX_RANK=$r MLX_WORLD_SIZE=2 \
    -- "$probe" init
done
expect_ok busy 2 "the coordinator port busy for 2 s"

# A hand-started job with a token file: every connection proves it; a file
# others may read is refused; another token is refused by the peers.
umask 077
printf 'coordinator-test-token-%s\n' "$RANDOM$RANDOM" >"$mp_tmp/token"
printf 'another-token-of-a-stranger-%s\n' "$RANDOM" >"$mp_tmp/other"
cp "$mp_tmp/token" "$mp_tmp/open"
chmod 644 "$mp_tmp/open"
p=$(port 10)
for r in 0 1; do
  start tokf $r DISTCOMM_COORDINATOR=127.0.0.1:$p MLX_RANK=$r MLX_WORLD_SIZE=2 \
    DISTCOMM_JOB_TOKEN_FILE="$mp_tmp/token" DISTCOMM_VERBOSE=1 -- "$probe" init
done
expect_ok tokf 2 "DISTCOMM_JOB_TOKEN_FILE (mode 600)"
if grep -q "job token proven" "$mp_tmp/tokf.1" &&
  ! grep -q "has no DISTCOMM_JOB_TOKEN" "$mp_tmp/tokf.0"; then
  ok "the token file's token was proven"
else
  fail "no proof logged with a token file: $(cat "$mp_tmp/tokf.1")"
fi
t0=$(now_ms)
start tokopen 0 DISTCOMM_COORDINATOR=127.0.0.1:$p MLX_RANK=0 MLX_WORLD_SIZE=1 \
  DISTCOMM_JOB_TOKEN_FILE="$mp_tmp/open" -- "$probe" init
expect_err tokopen 0 2000 ERR_CONFIG "DISTCOMM_JOB_TOKEN_FILE=$mp_tmp/open" "chmod 600"
export DISTCOMM_TIMEOUT=5
p=$(port 11)
t0=$(now_ms)
start tokbad 0 DISTCOMM_COORDINATOR=127.0.0.1:$p MLX_RANK=0 MLX_WORLD_SIZE=2 \
  DISTCOMM_JOB_TOKEN_FILE="$mp_tmp/token" -- "$probe" init
start tokbad 1 DISTCOMM_COORDINATOR=127.0.0.1:$p MLX_RANK=1 MLX_WORLD_SIZE=2 \
  DISTCOMM_JOB_TOKEN_FILE="$mp_tmp/other" -- "$probe" init
expect_err tokbad 1 12000 ERR_AUTH "did not prove the job token"

# Errors: every rank that joined says what went wrong, within the timeout.
export DISTCOMM_TIMEOUT=3
p=$(port 5)
t0=$(now_ms)
for r in 0 1; do
  start missing $r DISTCOMM_COORDINATOR=127.0.0.1:$p MLX_RANK=$r \
    MLX_WORLD_SIZE=4 -- "$probe" init
done
expect_err missing 0 8000 ERR_TIMEOUT "missing rank(s) 2 3" "2 of 4"
expect_err missing 1 8000 ERR_TIMEOUT "missing rank(s) 2 3" "rank 0"

p=$(port 6)
t0=$(now_ms)
for r in 0 1 2; do
  rr=$r; [ $r -eq 2 ] && rr=1
  start twice $r DISTCOMM_COORDINATOR=127.0.0.1:$p MLX_RANK=$rr \
    MLX_WORLD_SIZE=3 -- "$probe" init
  sleep 0.2
done
for r in 0 1 2; do
  expect_err twice $r 2500 ERR_CONFIG "rank 1 was claimed twice"
done

p=$(port 7)
t0=$(now_ms)
start size 0 DISTCOMM_COORDINATOR=127.0.0.1:$p MLX_RANK=0 MLX_WORLD_SIZE=2 \
  -- "$probe" init
start size 1 DISTCOMM_COORDINATOR=127.0.0.1:$p MLX_RANK=1 MLX_WORLD_SIZE=3 \
  -- "$probe" init
expect_err size 0 2500 ERR_CONFIG "world size disagreement" "3 ranks" "rank 0 with 2"
expect_err size 1 2500 ERR_CONFIG "world size disagreement" "3 ranks" "rank 0 with 2"

# A stranger's JOIN claiming rank 2^31 + 1 (fuzz_coordinator found rank 0
# indexing its table with it as a negative int, and crashing): refused as
# out of range, a clear error on rank 0, no crash.
p=$(port 10)
t0=$(now_ms)
start forged 0 DISTCOMM_COORDINATOR=127.0.0.1:$p MLX_RANK=0 MLX_WORLD_SIZE=2 \
  -- "$probe" init
/usr/bin/python3 - "$p" <<'PY' >"$mp_tmp/forged.stranger" 2>&1
import socket, struct, sys, time
payload = b"127.0.0.1:5001\n"
join = struct.pack("<IHHIIIIQ", 0x56524344, 2, 1, 2**31 + 1, 2, 1,
                   len(payload), 0) + payload
for _ in range(200):  # rank 0 may not listen yet
    try:
        s = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
        break
    except OSError:
        time.sleep(0.05)
s.settimeout(5)
nonce = b""
while len(nonce) < 64:  # rank 0's NONCE first (rendezvous version 2)
    nonce += s.recv(64 - len(nonce))
s.sendall(join)
s.settimeout(5)
try:
    print("stranger got %d bytes back" % len(s.recv(4096)))
except OSError as e:
    print("stranger: %s" % e)
PY
expect_err forged 0 5000 ERR_CONFIG "claims rank 2147483649, which is out of range"

# The coordinator dies during the rendezvous: the joined rank knows at once.
p=$(port 8)
export DISTCOMM_TIMEOUT=30
start dies 0 DISTCOMM_COORDINATOR=127.0.0.1:$p MLX_RANK=0 MLX_WORLD_SIZE=3 \
  -- "$probe" init
start dies 1 DISTCOMM_COORDINATOR=127.0.0.1:$p MLX_RANK=1 MLX_WORLD_SIZE=3 \
  -- "$probe" init
sleep 1
t0=$(now_ms)
pkill -9 -P "$pid_dies_0" mp_probe 2>/dev/null
kill -9 "$pid_dies_0" 2>/dev/null
expect_err dies 1 3000 ERR_PEER_LOST "coordinator 127.0.0.1:$p" "closed the connection" "did rank 0 exit?"

# Nobody listens: a bounded wait naming the coordinator.
export DISTCOMM_TIMEOUT=2
p=$(port 9)
t0=$(now_ms)
start alone 1 DISTCOMM_COORDINATOR=127.0.0.1:$p MLX_RANK=1 MLX_WORLD_SIZE=2 \
  -- "$probe" init
expect_err alone 1 6000 ERR_TIMEOUT "could not reach the coordinator 127.0.0.1:$p" "is rank 0 running?"

# Configuration errors, at once.
t0=$(now_ms)
start norank 0 DISTCOMM_COORDINATOR=127.0.0.1:$p MLX_WORLD_SIZE=2 \
  -- "$probe" init
expect_err norank 0 1500 ERR_CONFIG "DISTCOMM_COORDINATOR is set, but no rank is"
start noport 0 MASTER_ADDR=127.0.0.1 RANK=0 WORLD_SIZE=2 -- "$probe" init
expect_err noport 0 1500 ERR_CONFIG "MASTER_ADDR is set but MASTER_PORT is not"
start range 0 DISTCOMM_COORDINATOR=127.0.0.1:$p MLX_RANK=2 MLX_WORLD_SIZE=2 \
  -- "$probe" init
expect_err range 0 1500 ERR_CONFIG "MLX_RANK=2 is out of range" "MLX_WORLD_SIZE=2"
start badaddr 0 DISTCOMM_COORDINATOR=nohost.invalid:1 MLX_RANK=0 \
  MLX_WORLD_SIZE=2 -- "$probe" init
expect_err badaddr 0 5000 ERR_CONFIG "DISTCOMM_COORDINATOR='nohost.invalid:1'" "cannot resolve"
mp_finish
