# A full mesh of 4 hosts (6 direct links): distcomm-config --backend mesh
# writes the file, distcomm-launch --backend jaccl runs the conformance
# suite on it, and every pair's traffic went over its own link.
source "$(dirname "$0")/lib.sh" "$@"
hosts_up 4
for p in "1 2" "1 3" "1 4" "2 3" "2 4" "3 4"; do
    hosts_link $p
done
hf=$HOSTS_DIR/mesh4.json
config --hosts "$(hostlist)" --over direct --backend mesh --auto-setup --output "$hf" || fail "distcomm-config failed"
check_json "$hf" 'all(len(x["rdma"]) == 4 and x["rdma"][i] is None for i, x in enumerate(h))' "wrong rdma matrix"
check_mesh_job "$hf" 4
echo "PASS: mesh of 4"
