# --bind-to core (Open MPI's flag): each rank of a host runs on a CPU of its
# own when the host's ranks fit its CPUs, here and through a host's agent
# (a stand-in ssh, as test_launch_hosts); more ranks than CPUs: one line,
# no binding; the default binds nothing.
# shellcheck disable=SC2016 # $VARS in rank commands are for the ranks' shells
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"

mine=$(grep Cpus_allowed_list /proc/self/status | cut -f2)
ncpu=$(nproc)
n=$((ncpu < 2 ? ncpu : 2))
show='echo "$MLX_RANK $(grep Cpus_allowed_list /proc/self/status | cut -f2)"'

# bound N: each of the N ranks' CPU lists (in "$T/o") is one CPU, all differ.
bound() {
    local cpus
    cpus=$(cut -d' ' -f2 "$T/o" | sort -u)
    expect_eq "$(wc -l < "$T/o")" "$1" "ranks that printed: $(cat "$T/o")"
    expect_eq "$(echo "$cpus" | wc -l)" "$1" "distinct CPUs: $(cat "$T/o")"
    if echo "$cpus" | grep -q '[-,]'; then fail "a rank may run on several CPUs: $(cat "$T/o")"; fi
}

launch -n "$n" --bind-to core -- sh -c "$show" > "$T/o" 2> "$T/e"
expect_eq "$?" 0 "--bind-to core: $(cat "$T/e")"
bound "$n"

launch -n "$n" -- sh -c "$show" > "$T/o" 2> "$T/e"
expect_eq "$(cut -d' ' -f2 "$T/o" | sort -u)" "$mine" "the default binds nothing"

over=$((ncpu + 1))
launch -n "$over" --bind-to core -- sh -c "$show" > "$T/o" 2> "$T/e"
expect_eq "$?" 0 "more ranks than CPUs: $(cat "$T/e")"
grep -q "^distcomm-launch: --bind-to core: $over ranks here but $ncpu CPUs to run on: not binding them$" "$T/e" ||
    fail "no line saying why it did not bind: $(cat "$T/e")"
expect_eq "$(cut -d' ' -f2 "$T/o" | sort -u)" "$mine" "more ranks than CPUs: nothing bound"

out=$(launch -n 2 --bind-to socket -- true 2>&1)
expect_eq "$?" 2 "--bind-to socket: $out"
case $out in *"--bind-to 'socket': give core or none"*) ;; *) fail "no reason: $out" ;; esac

# Through a host's agent.
fake_ssh
DISTCOMM_SSH="$FAKE_SSH" launch -n "$n" --bind-to core --hosts 127.0.0.2 -- \
    sh -c "$show" > "$T/o" 2> "$T/e"
expect_eq "$?" 0 "--bind-to core through an agent: $(cat "$T/e")"
bound "$n"
echo PASS
