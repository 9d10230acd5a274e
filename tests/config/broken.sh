# A ring of 4 with the link between hosts 2 and 3 missing: the error names
# exactly that pair, nothing is written; --dot still draws the 3 links.
source "$(dirname "$0")/lib.sh" "$@"
hosts_up 4
hosts_link 1 2
hosts_link 3 4
hosts_link 4 1
hf=$HOSTS_DIR/ring.json
config --hosts "$(hostlist)" --over direct --auto-setup --output "$hf" >"$HOSTS_DIR/err" 2>&1 &&
    fail "a broken ring was accepted"
cat "$HOSTS_DIR/err"
grep -q "no direct link between 10.99.0.2 and 10.99.0.3$" "$HOSTS_DIR/err" || fail "the missing link is not named"
[ "$(grep -c "no direct link" "$HOSTS_DIR/err")" -eq 1 ] || fail "only one link is missing"
[ ! -e "$hf" ] || fail "a hostfile was written for a broken ring"
hosts_exec 2 ip -4 -o addr show dev d21 | grep -q inet && fail "--auto-setup changed hosts of a broken ring"

# the mesh check names every missing pair
config --hosts "$(hostlist)" --over direct --backend mesh >"$HOSTS_DIR/err" 2>&1 && fail "not a mesh"
for p in "10.99.0.1 and 10.99.0.3" "10.99.0.2 and 10.99.0.3" "10.99.0.2 and 10.99.0.4"; do
    grep -q "no direct link between $p$" "$HOSTS_DIR/err" || fail "mesh: $p not named: $(cat "$HOSTS_DIR/err")"
done

config --hosts "$(hostlist)" --over direct --dot >"$HOSTS_DIR/links.dot" || fail "--dot failed"
[ "$(grep -c -- ' -- ' "$HOSTS_DIR/links.dot")" -eq 3 ] || fail "3 edges expected: $(cat "$HOSTS_DIR/links.dot")"
render_dot "$HOSTS_DIR/links.dot"
echo "PASS: broken ring"
