# A full mesh of 3 direct links: --backend mesh writes MLX's mesh (JACCL)
# hostfile, the interface towards each peer in "rdma", the management
# address in "ips"; the links get addresses; real jobs run with it: the ring
# over the "ips", and the mesh backend (distcomm-launch --backend jaccl),
# whose traffic goes over each pair's own link.
source "$(dirname "$0")/lib.sh" "$@"
hosts_up 3
hosts_link 1 2
hosts_link 1 3
hosts_link 2 3
hf=$HOSTS_DIR/mesh.json
config --hosts "$(hostlist)" --over direct --backend mesh --auto-setup --output "$hf" || fail "distcomm-config failed"
check_json "$hf" '[x["ssh"] for x in h] == ["10.99.0.1", "10.99.0.2", "10.99.0.3"]' "wrong hosts"
check_json "$hf" '[x["ips"] for x in h] == [["10.99.0.1"], ["10.99.0.2"], ["10.99.0.3"]]' "wrong ips"
check_json "$hf" '[x["rdma"] for x in h] == [[None, "d12", "d13"], ["d21", None, "d23"], ["d31", "d32", None]]' "wrong rdma matrix"
# every link got a /30 of its own and its two ends reach each other
for p in "1 2" "1 3" "2 3"; do
    set -- $p
    a=$(hosts_exec "$1" ip -4 -o addr show dev "d$1$2" | awk '{print $4}')
    b=$(hosts_exec "$2" ip -4 -o addr show dev "d$2$1" | awk '{print $4}')
    [ "${a%.*}" = "${b%.*}" ] && [ "${a#*/}" = 30 ] || fail "link $1-$2 has $a and $b"
    hosts_exec "$1" ping -c 1 -W 2 "${b%/*}" >/dev/null || fail "host $1 cannot reach ${b%/*} over d$1$2"
done
# a ring is there too (any 3 of a mesh)
config --hosts "$(hostlist)" --over direct --backend ring --output "$HOSTS_DIR/ring.json" || fail "no ring in a mesh"
config --hosts "$(hostlist)" --over direct --dot >"$HOSTS_DIR/links.dot" || fail "--dot failed"
[ "$(grep -c -- ' -- ' "$HOSTS_DIR/links.dot")" -eq 3 ] || fail "3 edges expected"
render_dot "$HOSTS_DIR/links.dot"
run_job "$hf" "$BUILD/examples/hello"
check_hello 3
run_job "$HOSTS_DIR/ring.json" "$BUILD/examples/hello"
check_hello 3
check_mesh_job "$hf" 3
echo "PASS: mesh of 3"
