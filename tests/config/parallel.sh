# Two hosts joined by two direct links: two parallel rings, so each host
# gets two addresses (one per link) and the job uses both links.
source "$(dirname "$0")/lib.sh" "$@"
hosts_up 2
hosts_link 1 2
# a second pair of interfaces between the same hosts
ip link add d12b netns "${HOSTS_NS[1]}" type veth peer name d21b netns "${HOSTS_NS[2]}"
hosts_exec 1 ip link set d12b up
hosts_exec 2 ip link set d21b up
hf=$HOSTS_DIR/ring.json
config --hosts "$(hostlist)" --over direct --auto-setup --output "$hf" 2>"$HOSTS_DIR/err" || fail "distcomm-config failed: $(cat "$HOSTS_DIR/err")"
grep -q "(2 parallel rings)" "$HOSTS_DIR/err" || fail "2 rings expected: $(cat "$HOSTS_DIR/err")"
check_json "$hf" 'all(len(x["ips"]) == 2 for x in h["hosts"])' "two addresses per host expected"
for i in 0 1; do
    ips=$("$PY" -c 'import json,sys; print(*json.load(open(sys.argv[1]))["hosts"][int(sys.argv[2])]["ips"])' "$hf" $i)
    read -r a b <<<"$ips"
    me=$((i + 1)) peer=$((2 - i))
    check_addr $me "d$me$peer" "$a"
    check_addr $me "d$me${peer}b" "$b"
done
config --hosts "$(hostlist)" --over direct --dot >"$HOSTS_DIR/links.dot" || fail "--dot failed"
[ "$(grep -c -- 'h1 -- h2' "$HOSTS_DIR/links.dot")" -eq 2 ] || fail "2 edges expected"
render_dot "$HOSTS_DIR/links.dot"
run_job "$hf" "$BUILD/examples/hello"
check_hello 2
echo "PASS: parallel links"
