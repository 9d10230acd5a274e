# --over ethernet on the management network: one entry per host with the
# address the hosts reach each other at; a real job runs with it.
source "$(dirname "$0")/lib.sh" "$@"
hosts_up 3
hosts_link 1 2 # a direct link must not confuse the ethernet address
hf=$HOSTS_DIR/eth.json
config --hosts "$(hostlist)" --over ethernet --output "$hf" || fail "distcomm-config failed"
check_json "$hf" 'h == [{"ssh": "10.99.0.%d" % i, "ips": ["10.99.0.%d" % i]} for i in (1, 2, 3)]' "wrong ethernet hostfile"
# printed to stdout without --output, same content
config --hosts "$(hostlist)" --over ethernet >"$HOSTS_DIR/eth2.json" 2>/dev/null || fail "no hostfile on stdout"
cmp "$hf" "$HOSTS_DIR/eth2.json" || fail "stdout and --output differ"
# the hosts read back from an MLX hostfile (--hostfile) give the same file
config --hostfile "$hf" --over ethernet --output "$HOSTS_DIR/eth3.json" || fail "--hostfile failed"
cmp "$hf" "$HOSTS_DIR/eth3.json" || fail "--hostfile and --hosts differ"
config --hosts "$(hostlist)" --over ethernet --dot >"$HOSTS_DIR/hosts.dot" || fail "--dot failed"
render_dot "$HOSTS_DIR/hosts.dot"
# an unreachable host is named, fast
timeout 30 "$CONFIG" --help | grep -q DISTCOMM_SSH || fail "--help does not document DISTCOMM_SSH"
config --hosts 10.99.0.1,10.99.0.9 --over ethernet >"$HOSTS_DIR/err" 2>&1 && fail "unreachable host accepted"
grep -q "cannot reach 10.99.0.9 over ssh" "$HOSTS_DIR/err" || fail "unreachable host not named: $(cat "$HOSTS_DIR/err")"
# MLX's --ignore-unreachable leaves 10.99.0.9 out (named); --env lands in
# "envs" (MLX's object form); --output-hostfile is --output
config --hosts 10.99.0.1,10.99.0.9,10.99.0.2 --over ethernet --ignore-unreachable --env DC_A=1 \
    --env DC_B=x --output-hostfile "$HOSTS_DIR/ign.json" 2>"$HOSTS_DIR/err" || fail "--ignore-unreachable: $(cat "$HOSTS_DIR/err")"
grep -q "leaving out 10.99.0.9 (--ignore-unreachable)" "$HOSTS_DIR/err" || fail "dropped host not named: $(cat "$HOSTS_DIR/err")"
check_json "$HOSTS_DIR/ign.json" 'h == {"envs": ["DC_A=1", "DC_B=x"], "hosts": [{"ssh": "10.99.0.%d" % i, "ips": ["10.99.0.%d" % i]} for i in (1, 2)]}' \
    "wrong hostfile with --ignore-unreachable and --env"
config --hosts 10.99.0.9 --over ethernet --ignore-unreachable >"$HOSTS_DIR/err" 2>&1 && fail "no host left, yet success"
grep -q "none of the hosts can be reached" "$HOSTS_DIR/err" || fail "no reachable host: $(cat "$HOSTS_DIR/err")"
# on a terminal (script(1)), a progress line per host; never in a log
if command -v script >/dev/null; then
    hosts_exec 1 timeout 60 script -qec "$CONFIG --hosts $(hostlist) --over ethernet" /dev/null >"$HOSTS_DIR/tty" 2>&1
    for i in 1 2 3; do
        grep -q "^distcomm-config: checking hosts: 10.99.0.$i answered ([123]/3)" "$HOSTS_DIR/tty" ||
            fail "no progress line for host $i: $(cat "$HOSTS_DIR/tty")"
    done
    grep -q "answered" "$HOSTS_DIR/err" && fail "progress lines in a log: $(cat "$HOSTS_DIR/err")"
fi
run_job "$HOSTS_DIR/ign.json" sh -c 'echo "env $MLX_RANK $DC_A$DC_B"'
grep -q "^env 1 1x$" "$HOSTS_DIR/job.out" || fail "--env not set in the ranks: $(cat "$HOSTS_DIR/job.out")"
run_job "$hf" "$BUILD/examples/hello"
check_hello 3
echo "PASS: ethernet"
