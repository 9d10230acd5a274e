# Jobs started at the same moment without --starting-port get disjoint ports.
# shellcheck disable=SC2016 # $VARS in rank commands are for the ranks' shells
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"

# Like real ranks, each rank listens on its addresses while the other jobs
# start (a port is only "taken" once something is bound to it).
cat > "$T/hold.py" << 'PY'
import json, os, socket, sys, time
everyone = json.load(open(os.environ["MLX_HOSTFILE"]))
me = everyone[int(os.environ["MLX_RANK"])]
socks = []
for addr in me:
    host, port = addr.rsplit(":", 1)
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind((host, int(port)))  # fails (and the rank with it) on a collision
    s.listen()
    socks.append(s)
open(sys.argv[1] + "." + os.environ["MLX_RANK"], "w").write(json.dumps(everyone))
time.sleep(1.5)
PY
if command -v python3 > /dev/null; then
    rank_cmd=(python3 "$T/hold.py")
else # without python the ranks only record their ports
    rank_cmd=(sh -c 'cat "$MLX_HOSTFILE" > "$0.$MLX_RANK"; sleep 1.5')
fi

pids=
for j in 1 2 3 4; do
    launch -n 4 --connections-per-ip 2 -- "${rank_cmd[@]}" "$T/job$j" 2> "$T/err$j" &
    pids="$pids $!"
done
for p in $pids; do
    wait "$p" || fail "a job failed (port collision?): $(cat "$T"/err?)"
done
for j in 1 2 3 4; do
    [ -s "$T/job$j.0" ] || fail "job $j did not run"
done
total=$(cat "$T"/job?.0 | grep -Eo ':[0-9]+' | wc -l)
distinct=$(cat "$T"/job?.0 | grep -Eo ':[0-9]+' | sort -u | wc -l)
expect_eq "$total" 32 "ports in 4 jobs x 4 ranks x 2 connections"
expect_eq "$distinct" 32 "distinct ports across concurrent jobs"
expect_no_hostfile
echo PASS
