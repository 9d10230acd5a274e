#!/bin/bash
# A real Slurm cluster for the tests, in network namespaces:
#   cluster.sh STATE up     munged, slurmctld on a login host (dcslctl,
#                           10.98.0.10) and one slurmd per compute host
#                           (dcsl1..3, 10.98.0.1..3, 2 CPUs each); STATE
#                           (a file) records where it all is
#   cluster.sh STATE down   kill every daemon, delete the namespaces and files
#   . cluster.sh; cluster_load STATE   (for a test case) sets CL_DIR, CL_NS[],
#                           cl_login (a command on the login host) and
#                           cl_pids (the processes of a host)
# Exits 77 (ctest: skipped) naming what is missing: root, ip netns, unshare,
# Slurm's daemons and clients (Debian's slurm-wlm), munged (munge).
# Each daemon runs in a namespace host of its own: its own network, hostname
# (UTS) and /etc/hosts (a private mount), so Slurm's node names resolve on
# every host as on a real cluster. Every host has its own config folder
# (the same slurm.conf, and an mpi.conf naming its own PMIxCliTmpDirBase:
# several slurmd sharing one /tmp collide in PMIx's per-step folders).
# Ports need not be unique: every daemon listens inside its own namespace.
set -u

CL_HOSTS=3
CL_NET=10.98.0
PATH=$PATH:/usr/sbin:/sbin # the daemons, for a user whose PATH lacks them

_cl_skip() {
    echo "skip: $*"
    exit 77
}

_cl_need() {
    [ "$(id -u)" -eq 0 ] || _cl_skip "a Slurm cluster needs root"
    local p f missing=""
    for p in ip unshare slurmctld slurmd srun sbatch sinfo scontrol munged; do
        f=$(command -v "$p") && [ -f "$f" ] && [ -x "$f" ] || missing="$missing $p"
    done
    [ -z "$missing" ] || _cl_skip "a Slurm cluster needs$missing (Debian: apt-get install slurm-wlm munge iproute2)"
    ip netns add dcslurmprobe$$ 2>/dev/null || _cl_skip "ip netns does not work here"
    ip netns del dcslurmprobe$$
}

# The namespace names of a cluster whose prefix is $1: login, hosts, switch.
_cl_names() { # prefix
    CL_NS=([0]="$1c")
    local i
    for ((i = 1; i <= CL_HOSTS; i++)); do CL_NS[$i]="$1h$i"; done
    CL_SW="$1s"
}

_cl_addr() { # i (0: the login host)
    [ "$1" -eq 0 ] && echo "$CL_NET.10" || echo "$CL_NET.$1"
}
_cl_name() { [ "$1" -eq 0 ] && echo dcslctl || echo "dcsl$1"; }

_cl_net() {
    ip netns add "$CL_SW" && ip -n "$CL_SW" link set lo up &&
        ip -n "$CL_SW" link add br0 type bridge && ip -n "$CL_SW" link set br0 up || return 1
    local i ns
    for ((i = 0; i <= CL_HOSTS; i++)); do
        ns=${CL_NS[$i]}
        ip netns add "$ns" && ip -n "$ns" link set lo up &&
            ip link add eth0 netns "$ns" type veth peer name "p$i" netns "$CL_SW" &&
            ip -n "$CL_SW" link set "p$i" master br0 && ip -n "$CL_SW" link set "p$i" up &&
            ip -n "$ns" addr add "$(_cl_addr "$i")/24" dev eth0 &&
            ip -n "$ns" link set eth0 up || return 1
    done
}

_cl_conf() { # the cluster's slurm.conf
    local D=$CL_DIR
    cat <<EOF
ClusterName=dcslurm
SlurmctldHost=dcslctl($(_cl_addr 0))
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$D/munge/munge.socket
StateSaveLocation=$D/ctl/state
SlurmctldPidFile=$D/ctl/slurmctld.pid
SlurmctldLogFile=$D/ctl/slurmctld.log
SlurmdSpoolDir=$D/%n/spool
SlurmdPidFile=$D/%n/slurmd.pid
SlurmdLogFile=$D/%n/slurmd.log
TmpFS=$D/%n/tmp
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
SwitchType=switch/none
MpiDefault=none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
SchedulerType=sched/backfill
ReturnToService=2
MessageTimeout=30
SlurmdTimeout=120
InactiveLimit=0
KillWait=5
MinJobAge=30
SlurmctldDebug=info
SlurmdDebug=info
EOF
    local i
    for ((i = 1; i <= CL_HOSTS; i++)); do
        echo "NodeName=dcsl$i NodeAddr=$(_cl_addr "$i") CPUs=2 RealMemory=1 State=UNKNOWN"
    done
    echo "PartitionName=dc Nodes=dcsl[1-$CL_HOSTS] Default=YES MaxTime=INFINITE State=UP OverSubscribe=FORCE:4"
}

# Host i's config folder: slurm.conf, cgroup.conf, mpi.conf.
_cl_etc() { # i
    local name d
    name=$(_cl_name "$1")
    d=$CL_DIR/$name
    mkdir -p "$d/etc" "$d/spool" "$d/tmp" "$d/pmix" || return 1
    _cl_conf >"$d/etc/slurm.conf"
    _cl_cgroup_conf >"$d/etc/cgroup.conf"
    echo "PMIxCliTmpDirBase=$d/pmix" >"$d/etc/mpi.conf"
    {
        echo "127.0.0.1 localhost"
        local j
        for ((j = 0; j <= CL_HOSTS; j++)); do echo "$(_cl_addr "$j") $(_cl_name "$j")"; done
    } >"$d/etc/hosts"
}

# slurmstepd always loads a cgroup plugin. These machines' /sys/fs/cgroup is
# a v1 hybrid that its autodetection misreads (and cgroup/v2 refuses:
# "Hybrid mode is not supported"): cgroup/v1. On a unified (v2 only)
# machine, cgroup/v2 without systemd (untested here).
_cl_cgroup_conf() {
    if [ -f /sys/fs/cgroup/cgroup.controllers ]; then
        printf 'CgroupPlugin=cgroup/v2\nIgnoreSystemd=yes\n'
    else
        echo "CgroupPlugin=cgroup/v1"
    fi
}

# Runs a command line on host i: its network, its hostname, its /etc/hosts.
_cl_on() { # i command-line
    local name=$(_cl_name "$1")
    ip netns exec "${CL_NS[$1]}" unshare -m -u --propagation private \
        bash -c "mount --bind '$CL_DIR/$name/etc/hosts' /etc/hosts && hostname $name && $2"
}

_cl_munge() {
    local m=$CL_DIR/munge
    mkdir -p "$m" && chmod 700 "$m" || return 1
    dd if=/dev/urandom of="$m/munge.key" bs=1024 count=1 status=none && chmod 400 "$m/munge.key" || return 1
    timeout 20 munged --force --socket="$m/munge.socket" --key-file="$m/munge.key" \
        --log-file="$m/munged.log" --pid-file="$m/munged.pid" --seed-file="$m/munged.seed" \
        </dev/null >"$m/munged.out" 2>&1 || { echo "munged did not start: $(tail -3 "$m/munged.log" 2>/dev/null)"; return 1; }
}

# Waits up to 60 s until sinfo shows every node idle; fails at once when a
# daemon has died.
_cl_wait_idle() {
    local out i
    for _ in $(seq 120); do
        out=$(cl_login timeout 10 sinfo -h -N -o '%N %t' 2>&1)
        [ "$(grep -c ' idle$' <<<"$out")" -eq "$CL_HOSTS" ] && return 0
        for ((i = 0; i <= CL_HOSTS; i++)); do
            [ -n "$(cl_pids "$i")" ] || { echo "the $(_cl_name "$i") daemon died"; return 1; }
        done
        sleep 0.5
    done
    echo "the nodes are not idle after 60 s: $out"
    return 1
}

# What the daemons complained of; 77 (skip) when it is the machine's
# cgroups, which slurmd and slurmstepd always use.
_cl_why() {
    local why logs=("$CL_DIR"/ctl/slurmctld.* "$CL_DIR"/dcsl*/slurmd.*)
    why=$(grep -h -i fatal "${logs[@]}" 2>/dev/null | sed "s/^\[[^]]*\] //" | sort -u | tail -4)
    # else the errors, less slurmctld's first start without a saved state
    [ -n "$why" ] || why=$(grep -h -i error "${logs[@]}" 2>/dev/null |
        grep -v -i 'state file\|state save file' | sort -u | tail -4)
    if grep -qi cgroup <<<"$why"; then
        echo "skip: Slurm cannot use this machine's cgroups ($(tr '\n' ' ' <"$CL_DIR/dcsl1/etc/cgroup.conf")): $why"
        return 77
    fi
    echo "the daemons said: ${why:-nothing}"
    return 1
}

cluster_up() {
    _cl_need
    local state=$1 i prefix=dcslurm$$
    [ -f "$state" ] && cluster_down "$state"
    CL_DIR=$(mktemp -d /tmp/dcslurm.XXXXXX) || return 1
    chmod 755 "$CL_DIR"
    _cl_names "$prefix"
    printf 'CL_DIR=%s\nCL_PREFIX=%s\n' "$CL_DIR" "$prefix" >"$state"
    _cl_net || { echo "cannot build the namespaces"; return 1; }
    for ((i = 0; i <= CL_HOSTS; i++)); do _cl_etc "$i" || return 1; done
    mkdir -p "$CL_DIR/ctl/state"
    _cl_munge || return 1
    # a token every rank reads (a shared home's, mode 600)
    (umask 077 && head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$CL_DIR/token")
    _cl_on 0 "exec setsid slurmctld -D -i -f $CL_DIR/dcslctl/etc/slurm.conf" \
        </dev/null >"$CL_DIR/ctl/slurmctld.out" 2>&1 &
    for ((i = 1; i <= CL_HOSTS; i++)); do
        _cl_on "$i" "exec setsid slurmd -D -N dcsl$i -f $CL_DIR/dcsl$i/etc/slurm.conf" \
            </dev/null >"$CL_DIR/dcsl$i/slurmd.out" 2>&1 &
    done
    _cl_wait_idle && _cl_probe_step || {
        _cl_why
        return $?
    }
    echo "cluster up in $CL_DIR: $(cl_login sinfo -h -o '%P %D %N %t')"
}

# One task per host runs: slurmstepd starts there.
_cl_probe_step() {
    local out
    out=$(cl_login timeout -k 5 60 srun -N "$CL_HOSTS" -n "$CL_HOSTS" true 2>&1) && return 0
    echo "a first step (srun true on each host) failed: $out"
    return 1
}

cluster_load() { # state
    [ -f "$1" ] || _cl_skip "no Slurm cluster (slurm.up was skipped or failed)"
    . "$1"
    _cl_names "$CL_PREFIX"
    [ -d "$CL_DIR" ] && ip netns list | grep -q "^${CL_NS[0]}\b" ||
        _cl_skip "the Slurm cluster of $1 is gone"
    export CL_DIR CL_TOKEN=$CL_DIR/token
}

# A command on the login host, with the cluster's slurm.conf.
cl_login() {
    ip netns exec "${CL_NS[0]}" env SLURM_CONF="$CL_DIR/dcslctl/etc/slurm.conf" "$@"
}

# The processes of host i (its namespace).
cl_pids() { ip netns pids "${CL_NS[$1]}" 2>/dev/null; }

_cl_kill_ns() {
    local pids
    pids=$(ip netns pids "$1" 2>/dev/null)
    [ -n "$pids" ] && kill -9 $pids 2>/dev/null
    return 0
}

cluster_down() { # state
    local state=$1 ns pid
    [ -f "$state" ] || return 0
    . "$state"
    _cl_names "$CL_PREFIX"
    for ns in "${CL_NS[@]}" "$CL_SW"; do _cl_kill_ns "$ns"; done
    for ns in "${CL_NS[@]}" "$CL_SW"; do
        for _ in $(seq 50); do # killed processes leave before the netns goes
            [ -z "$(ip netns pids "$ns" 2>/dev/null)" ] && break
            _cl_kill_ns "$ns"
            sleep 0.1
        done
        ip netns del "$ns" 2>/dev/null
    done
    # munged writes its seed file as it exits: gone before its folder goes
    if pid=$(cat "$CL_DIR/munge/munged.pid" 2>/dev/null) && kill "$pid" 2>/dev/null; then
        for _ in $(seq 50); do
            [ -d "/proc/$pid" ] && [ "$(cut -d' ' -f3 "/proc/$pid/stat" 2>/dev/null)" != Z ] || break
            sleep 0.1
        done
    fi
    case $CL_DIR in /tmp/dcslurm.*) rm -rf "$CL_DIR" ;; esac
    rm -f "$state"
}

if [ "${BASH_SOURCE[0]}" = "$0" ]; then
    case ${2:-} in
        up)
            cluster_up "$1"
            rc=$?
            [ $rc -eq 0 ] && exit 0
            cluster_down "$1"
            [ $rc -eq 77 ] && exit 77
            exit 1
            ;;
        down) cluster_down "$1" ;;
        *) echo "usage: cluster.sh STATE up|down" >&2 && exit 2 ;;
    esac
fi
