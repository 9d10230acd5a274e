# A ring of 4 direct links (plus the management network): distcomm-config
# finds it, addresses it with --auto-setup, writes the ring hostfile (each
# host's address on the link from its left neighbour, neighbours-only mode)
# that then runs a real job across the 4 hosts; --dot renders.
source "$(dirname "$0")/lib.sh" "$@"
hosts_up 4
hosts_link 1 2
hosts_link 2 3
hosts_link 3 4
hosts_link 4 1
hf=$HOSTS_DIR/ring.json

# Without --auto-setup (MLX: the last of --auto-setup / --no-auto-setup wins):
# the commands per host, nothing written, exit 1.
config --hosts "$(hostlist)" --over direct --backend ring --auto-setup --no-auto-setup --output "$hf" >"$HOSTS_DIR/cmds" 2>&1 &&
    fail "unaddressed links but exit 0"
[ ! -e "$hf" ] || fail "a hostfile was written before the links had addresses"
grep -q "^on 10.99.0.3:" "$HOSTS_DIR/cmds" && grep -q "sudo ip addr add 192.168.[0-9]*.[12]/30 dev d34" "$HOSTS_DIR/cmds" ||
    fail "no setup commands printed: $(cat "$HOSTS_DIR/cmds")"

config --hosts "$(hostlist)" --over direct --backend ring --auto-setup --output "$hf" || fail "distcomm-config failed"
check_json "$hf" 'h["backend"] == "ring" and h["envs"] == ["DISTCOMM_RING_NEIGHBOURS=1"]' "not a neighbours-only ring hostfile"
check_json "$hf" '[x["ssh"] for x in h["hosts"]] == ["10.99.0.%d" % i for i in (1, 2, 3, 4)]' "wrong ring order"
check_json "$hf" 'all(len(x["ips"]) == 1 for x in h["hosts"])' "one ring expected"
# on a terminal (script(1)): a progress line per host while probing links
if command -v script >/dev/null; then
    hosts_exec 1 timeout 60 script -qec "$CONFIG --hosts $(hostlist) --over direct --dot" /dev/null >"$HOSTS_DIR/tty" 2>&1
    [ "$(grep -c "^distcomm-config: probing links: 10.99.0.[1-4] answered ([1-4]/4)" "$HOSTS_DIR/tty")" = 4 ] ||
        fail "no progress lines while probing: $(cat "$HOSTS_DIR/tty")"
fi
# MLX's --backend jaccl-ring is the same ring here; --env joins "envs"
config --hosts "$(hostlist)" --over thunderbolt --backend jaccl-ring --no-auto-setup --env DC_X=1 \
    --output "$HOSTS_DIR/jr.json" || fail "--backend jaccl-ring failed"
check_json "$HOSTS_DIR/jr.json" 'h["envs"] == ["DISTCOMM_RING_NEIGHBOURS=1", "DC_X=1"] and h["hosts"] == json.load(open(sys.argv[1].replace("jr.json", "ring.json")))["hosts"]' \
    "jaccl-ring with --env differs from the ring"
# rank r's address is on its link from rank r-1: host 1 <- 4, 2 <- 1, ...
left=(0 4 1 2 3)
for i in 1 2 3 4; do
    ip=$("$PY" -c 'import json,sys; print(json.load(open(sys.argv[1]))["hosts"][int(sys.argv[2])]["ips"][0])' "$hf" $((i - 1)))
    check_addr "$i" "d$i${left[$i]}" "$ip"
done

# A second run keeps the addresses (nothing to set up) and writes the same file.
config --hosts "$(hostlist)" --over direct --backend ring --output "$hf.again" || fail "second run failed"
cmp "$hf" "$hf.again" || fail "a second run changed the hostfile"

config --hosts "$(hostlist)" --over direct --dot >"$HOSTS_DIR/links.dot" || fail "--dot failed"
grep -q 'h1 -- h2 \[label="d12 — d21' "$HOSTS_DIR/links.dot" || fail "no d12 — d21 edge: $(cat "$HOSTS_DIR/links.dot")"
[ "$(grep -c -- ' -- ' "$HOSTS_DIR/links.dot")" -eq 4 ] || fail "4 edges expected"
render_dot "$HOSTS_DIR/links.dot"

# The real run needs the library's neighbours-only mode (DISTCOMM_RING_NEIGHBOURS):
# rank 0 and rank 2 share no link, so host 1 cannot reach host 3's address.
ip3=$("$PY" -c 'import json,sys; print(json.load(open(sys.argv[1]))["hosts"][2]["ips"][0])' "$hf")
hosts_exec 1 ping -c 1 -W 1 "$ip3" >/dev/null 2>&1 && fail "host 1 reaches $ip3: not a ring of direct links"
run_job "$hf" "$BUILD/examples/hello"
check_hello 4
time run_job "$hf" "$BUILD/tests/mp/mp_conformance" --size 4 --counts 1,4097
echo "PASS: ring of 4"
