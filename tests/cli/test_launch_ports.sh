# --connections-per-ip and --starting-port shape the hostfile; a taken
# starting port is refused clearly.
# shellcheck disable=SC2016 # $VARS in rank commands are for the ranks' shells
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"

launch -n 3 --connections-per-ip 2 -- sh -c '[ "$MLX_RANK" = 0 ] && cat "$MLX_HOSTFILE"; true' \
    > "$T/k2" || fail "launcher failed"
json=$(cat "$T/k2")
echo "$json" | grep -Eq '^\[(\["127\.0\.0\.1:[0-9]+","127\.0\.0\.1:[0-9]+"\],){2}\["127\.0\.0\.1:[0-9]+","127\.0\.0\.1:[0-9]+"\]\]$' \
    || fail "expected 3 ranks x 2 addresses: $json"
expect_eq "$(echo "$json" | grep -Eo ':[0-9]+' | sort -u | wc -l)" 6 "distinct ports in $json"

# Rank r's i-th address is P + r*k + i. P varies per run so parallel test
# runs do not meet on it.
P=$((20000 + RANDOM % 5000))
launch -n 2 --starting-port $P --connections-per-ip 2 sh -c '[ "$MLX_RANK" = 1 ] && cat "$MLX_HOSTFILE"; true' \
    > "$T/sp" || fail "launcher with --starting-port failed"
expect_eq "$(cat "$T/sp")" \
    "[[\"127.0.0.1:$P\",\"127.0.0.1:$((P + 1))\"],[\"127.0.0.1:$((P + 2))\",\"127.0.0.1:$((P + 3))\"]]" \
    "hostfile with --starting-port $P"
launch -p $P -n 3 sh -c '[ "$MLX_RANK" = 0 ] && cat "$MLX_HOSTFILE"; true' > "$T/sp1" \
    || fail "launcher with -p failed"
expect_eq "$(cat "$T/sp1")" \
    "[[\"127.0.0.1:$P\"],[\"127.0.0.1:$((P + 1))\"],[\"127.0.0.1:$((P + 2))\"]]" "hostfile with -p $P"

# A port someone listens on is refused before any rank starts.
if command -v python3 > /dev/null; then
    timeout 30 python3 -c 'import socket,sys,time
s=socket.socket(); s.bind(("127.0.0.1",0)); s.listen(); print(s.getsockname()[1], flush=True); time.sleep(20)' \
        > "$T/busy" &
    holder=$!
    for _ in $(seq 50); do [ -s "$T/busy" ] && break; sleep 0.1; done
    busy=$(cat "$T/busy")
    [ -n "$busy" ] || fail "helper did not report its port"
    launch -n 1 --starting-port "$busy" -- sh -c 'echo ran' > "$T/b.out" 2> "$T/b.err"
    rc=$?
    kill $holder 2> /dev/null
    [ $rc -ne 0 ] || fail "a taken --starting-port was accepted"
    grep -q "port $busy" "$T/b.err" || fail "error does not name port $busy: $(cat "$T/b.err")"
    [ -s "$T/b.out" ] && fail "a rank ran although its port was taken"
fi
expect_no_hostfile
echo PASS
