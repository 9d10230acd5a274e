# Test hosts for multi-host tests (sourced, not run): network namespaces on
# one management network, each with its own sshd, keys made for this run.
#
#   source tests/hosts/lib.sh   # exits 77 (ctest skip) without root, ip netns, sshd, ssh
#   hosts_up N                  # hosts 1..N at 10.99.0.1..N/24, sshd on each, port 22
#   hosts_link I J              # veth "dIJ" in host I <-> "dJI" in host J, up, no IPv4
#   hosts_exec I cmd...         # run cmd in host I's network namespace
#   hosts_private_tmp I [KEEP...]  # host I's sshd sees an empty /tmp of its own
#                               # (KEEP: paths under /tmp that stay visible there)
#   hosts_hide I PATH           # PATH (a directory) is empty for host I's sshd
#   hosts_down                  # kill everything in the namespaces, delete them
#
# HOSTS_SSHD_DEFAULTS=1 before hosts_up keeps sshd's own MaxStartups (10)
# and MaxSessions (10) instead of this file's generous ones.
# After hosts_up: HOSTS_N, HOSTS_DIR, HOSTS_ADDR[i], HOSTS_NS[i] and
# DISTCOMM_SSH (exported) are set. hosts_up installs hosts_down as the EXIT
# trap (kept in front of an EXIT trap set before it); INT/TERM/HUP exit, so
# the trap runs. Namespaces are isolated from the machine and from other runs:
# nothing here reaches outside them, and concurrent runs may reuse 10.99.0.x.
# Only what runs over ssh sees hosts_private_tmp / hosts_hide; hosts_exec
# sees the machine's own files.

_hosts_skip() {
    echo "skip: $*"
    exit 77
}

[ "$(id -u)" -eq 0 ] || _hosts_skip "test hosts need root"
command -v ip >/dev/null || _hosts_skip "test hosts need iproute2 (ip)"
[ -x /usr/sbin/sshd ] || _hosts_skip "test hosts need openssh-server (/usr/sbin/sshd)"
command -v ssh >/dev/null && command -v ssh-keygen >/dev/null ||
    _hosts_skip "test hosts need openssh-client (ssh, ssh-keygen)"

HOSTS_PREFIX=dch$$
HOSTS_N=0
HOSTS_DIR=
HOSTS_ADDR=()
HOSTS_NS=()
_HOSTS_SWITCH=
declare -A _HOSTS_MOUNTS=() # host -> lines "tmp KEEP..." / "hide PATH"

_hosts_log() { echo "hosts: $*" >&2; }

# Namespaces left by a run that was killed with SIGKILL (no trap ran).
_hosts_reap_stale() {
    local ns pid
    for ns in $(ip netns list 2>/dev/null | awk '{print $1}' | grep -E '^dch[0-9]+[hs]'); do
        pid=${ns#dch}
        pid=${pid%%[hs]*}
        [ -d "/proc/$pid" ] && continue
        _hosts_kill_ns "$ns"
        ip netns del "$ns" 2>/dev/null
        rm -rf "/run/dch$pid"
    done
}

_hosts_kill_ns() {
    local pids
    pids=$(ip netns pids "$1" 2>/dev/null)
    [ -n "$pids" ] && kill -9 $pids 2>/dev/null
    return 0
}

_hosts_sshd_config() { # i
    local d=$HOSTS_DIR/h$1
    cat >"$d/sshd_config" <<EOF
ListenAddress ${HOSTS_ADDR[$1]}:22
HostKey $d/host_key
PidFile $d/sshd.pid
AuthorizedKeysFile $HOSTS_DIR/authorized_keys
PermitRootLogin prohibit-password
PubkeyAuthentication yes
PasswordAuthentication no
KbdInteractiveAuthentication no
UsePAM no
StrictModes no
UseDNS no
PrintMotd no
$([ -n "${HOSTS_SSHD_DEFAULTS:-}" ] || printf 'MaxStartups 100:30:200\nMaxSessions 100')
Subsystem sftp internal-sftp
EOF
}

_hosts_client_config() {
    ssh-keygen -q -t ed25519 -N '' -C "distcomm-test-$$" -f "$HOSTS_DIR/id_ed25519" || return 1
    cp "$HOSTS_DIR/id_ed25519.pub" "$HOSTS_DIR/authorized_keys"
    cat >"$HOSTS_DIR/ssh_config" <<EOF
Host *
  User root
  IdentityFile $HOSTS_DIR/id_ed25519
  IdentitiesOnly yes
  UserKnownHostsFile /dev/null
  GlobalKnownHostsFile /dev/null
  StrictHostKeyChecking no
  BatchMode yes
  LogLevel ERROR
  ConnectTimeout 5
EOF
    export DISTCOMM_SSH="ssh -F $HOSTS_DIR/ssh_config"
}

# The shell line that starts host i's sshd in a mount namespace of its
# own: without the user's ~/.bashrc, and with what hosts_private_tmp /
# hosts_hide asked for.
_hosts_sshd_cmd() { # i
    local i=$1 d=$HOSTS_DIR/h$1 line kind rest keep
    local sshd="exec /usr/sbin/sshd -f $d/sshd_config -E $d/sshd.log"
    local s="set -e; mount --make-rprivate /;"
    # Sessions on a test host skip the user's ~/.bashrc, as on a fresh
    # machine: this VM's root runs `pyenv rehash` there, which waits 60 s on
    # a lock that any session killed during it leaves behind (every later
    # ssh then outlived its test's timeout).
    s="$s if [ -f '$HOME/.bashrc' ]; then mount --bind /dev/null '$HOME/.bashrc'; fi;"
    while read -r kind rest; do
        [ -z "$kind" ] && continue
        if [ "$kind" = hide ]; then
            s="$s mount -t tmpfs -o size=1m dchide '$rest';"
            continue
        fi
        # An empty /tmp, then the KEEP paths bound back from the old one,
        # reached through a mount point outside /tmp.
        local old=/run/$HOSTS_PREFIX/h$i
        s="$s mkdir -p $old; mount --bind /tmp $old;"
        s="$s mount -t tmpfs -o mode=1777 dctmp /tmp;"
        for keep in $rest; do
            s="$s mkdir -p '$keep'; mount --bind '$old/${keep#/tmp/}' '$keep';"
        done
        s="$s umount -l $old;"
    done <<<"${_HOSTS_MOUNTS[$i]:-}"
    echo "$s $sshd"
}

_hosts_start_sshd() { # i
    local i=$1
    rm -f "$HOSTS_DIR/h$i/sshd.pid"
    ip netns exec "${HOSTS_NS[$i]}" unshare -m --propagation private \
        bash -c "$(_hosts_sshd_cmd "$i")" </dev/null || {
        _hosts_log "sshd of host $i did not start: $(tail -3 "$HOSTS_DIR/h$i/sshd.log" 2>/dev/null)"
        return 1
    }
}

_hosts_stop_sshd() { # i
    local f=$HOSTS_DIR/h$1/sshd.pid pid
    pid=$(cat "$f" 2>/dev/null) || return 0
    kill "$pid" 2>/dev/null
    for _ in $(seq 50); do
        [ -d "/proc/$pid" ] || break
        sleep 0.05
    done
    rm -f "$f"
}

# Waits until host i's sshd runs a command for us (from host 1's side).
_hosts_wait_ssh() { # i
    local i=$1 from=${2:-1}
    for _ in $(seq 100); do
        if ip netns exec "${HOSTS_NS[$from]}" $DISTCOMM_SSH -o ConnectTimeout=2 \
            "${HOSTS_ADDR[$i]}" true </dev/null 2>/dev/null; then
            return 0
        fi
        sleep 0.1
    done
    _hosts_log "sshd of host $i (${HOSTS_ADDR[$i]}) does not answer"
    return 1
}

_hosts_make_ns() {
    local n=$1 i ns sw=$_HOSTS_SWITCH
    ip netns add "$sw" || return 1
    ip -n "$sw" link set lo up &&
        ip -n "$sw" link add br0 type bridge &&
        ip -n "$sw" link set br0 up || return 1
    for ((i = 1; i <= n; i++)); do
        ns=$HOSTS_PREFIX"h$i"
        HOSTS_NS[$i]=$ns
        HOSTS_ADDR[$i]=10.99.0.$i
        ip netns add "$ns" || return 1
        ip -n "$ns" link set lo up &&
            ip link add eth0 netns "$ns" type veth peer name "p$i" netns "$sw" &&
            ip -n "$sw" link set "p$i" master br0 &&
            ip -n "$sw" link set "p$i" up &&
            ip -n "$ns" addr add "10.99.0.$i/24" dev eth0 &&
            ip -n "$ns" link set eth0 up || return 1
    done
}

hosts_up() {
    local n=${1:?usage: hosts_up N} i
    [ "$HOSTS_N" -eq 0 ] || { _hosts_log "hosts_up: hosts are already up"; return 1; }
    _hosts_reap_stale
    local prev
    prev=$(trap -p EXIT | sed -e "s/^trap -- '//" -e "s/' EXIT\$//")
    # shellcheck disable=SC2064 # the earlier trap is expanded now, on purpose
    trap "hosts_down; $prev" EXIT
    trap 'exit 130' INT
    trap 'exit 143' TERM HUP
    HOSTS_DIR=$(mktemp -d "${TMPDIR:-/tmp}/dchosts.XXXXXX") || return 1
    chmod 755 "$HOSTS_DIR"
    _HOSTS_SWITCH=$HOSTS_PREFIX"s"
    HOSTS_N=$n
    if ! ip netns add "$HOSTS_PREFIX"probe 2>/dev/null; then
        HOSTS_N=0
        _hosts_skip "ip netns does not work here"
    fi
    ip netns del "$HOSTS_PREFIX"probe
    _hosts_make_ns "$n" || { _hosts_log "cannot build the namespaces"; return 1; }
    _hosts_client_config || return 1
    mkdir -p /run/sshd # sshd's privilege-separation directory
    for ((i = 1; i <= n; i++)); do
        mkdir -p "$HOSTS_DIR/h$i"
        ssh-keygen -q -t ed25519 -N '' -f "$HOSTS_DIR/h$i/host_key" || return 1
        _hosts_sshd_config "$i"
        _hosts_start_sshd "$i" || return 1
    done
    for ((i = 1; i <= n; i++)); do
        _hosts_wait_ssh "$i" || return 1
    done
    export HOSTS_N HOSTS_DIR
}

hosts_link() {
    local i=${1:?usage: hosts_link I J} j=${2:?usage: hosts_link I J}
    ip link add "d$i$j" netns "${HOSTS_NS[$i]}" type veth peer name "d$j$i" \
        netns "${HOSTS_NS[$j]}" &&
        ip -n "${HOSTS_NS[$i]}" link set "d$i$j" up &&
        ip -n "${HOSTS_NS[$j]}" link set "d$j$i" up
}

hosts_exec() {
    local i=${1:?usage: hosts_exec I cmd...}
    shift
    ip netns exec "${HOSTS_NS[$i]}" "$@"
}

# Restarts host i's sshd with its mounts; sessions already open keep theirs.
_hosts_restart_sshd() {
    _hosts_stop_sshd "$1"
    _hosts_start_sshd "$1" && _hosts_wait_ssh "$1" "$1"
}

hosts_private_tmp() {
    local i=${1:?usage: hosts_private_tmp I [KEEP...]} keep
    shift
    for keep in "$@"; do
        case $keep in /tmp/?*) ;; *) _hosts_log "hosts_private_tmp: $keep is not under /tmp"; return 1 ;; esac
    done
    case $HOSTS_DIR in /tmp/*) set -- "$HOSTS_DIR" "$@" ;; esac # its keys and config
    _HOSTS_MOUNTS[$i]="${_HOSTS_MOUNTS[$i]:-}tmp $*"$'\n'
    _hosts_restart_sshd "$i"
}

hosts_hide() {
    local i=${1:?usage: hosts_hide I PATH} path=${2:?usage: hosts_hide I PATH}
    [ -d "$path" ] || { _hosts_log "hosts_hide: $path is not a directory"; return 1; }
    _HOSTS_MOUNTS[$i]="${_HOSTS_MOUNTS[$i]:-}hide $path"$'\n'
    _hosts_restart_sshd "$i"
}

hosts_down() {
    local ns i
    [ "$HOSTS_N" -gt 0 ] || [ -n "$HOSTS_DIR" ] || return 0
    for ((i = 1; i <= HOSTS_N; i++)); do
        _hosts_kill_ns "${HOSTS_NS[$i]}"
    done
    [ -n "$_HOSTS_SWITCH" ] && _hosts_kill_ns "$_HOSTS_SWITCH"
    for ns in "${HOSTS_NS[@]}" $_HOSTS_SWITCH; do
        for _ in $(seq 50); do # killed processes must leave before the netns goes
            [ -z "$(ip netns pids "$ns" 2>/dev/null)" ] && break
            _hosts_kill_ns "$ns"
            sleep 0.05
        done
        ip netns del "$ns" 2>/dev/null
    done
    [ -n "$HOSTS_DIR" ] && rm -rf "$HOSTS_DIR"
    rm -rf "/run/$HOSTS_PREFIX"
    HOSTS_N=0
    HOSTS_DIR=
    HOSTS_NS=()
    HOSTS_ADDR=()
    _HOSTS_SWITCH=
    _HOSTS_MOUNTS=()
}
