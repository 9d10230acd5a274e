# Host names and addresses from --hosts or a hostfile never reach ssh as
# options: a name starting with '-' is refused (naming the entry), ssh gets
# "--" before the host, and "ips" must be IP addresses (they go into the
# generated hostfile verbatim).
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"

# A stand-in ssh that logs its whole argv, then runs the command here.
mkdir -p "$T/bin"
cat > "$T/bin/fake-ssh" <<'SH'
#!/bin/sh
echo "$*" >> "$DCL_SSH_LOG"
while [ $# -gt 0 ]; do
    case $1 in -o | -F) shift 2 ;; --) shift; break ;; -*) exit 99 ;; *) break ;; esac
done
shift
exec sh -c "$*"
SH
chmod +x "$T/bin/fake-ssh"
export DISTCOMM_SSH="$T/bin/fake-ssh" DCL_SSH_LOG="$T/ssh.log"
: > "$T/ssh.log"

refused() { # refused PATTERN ARGS...: status 2, PATTERN on one line, no ssh
    local pat=$1
    shift
    launch "$@" -- touch "$T/ran" 2> "$T/e"
    expect_eq "$?" 2 "status for $*"
    grep -q -- "$pat" "$T/e" || fail "$*: unexpected message: $(cat "$T/e")"
    [ -s "$T/ssh.log" ] && fail "$*: ssh ran: $(cat "$T/ssh.log")"
    [ -e "$T/ran" ] && fail "$*: a rank ran"
    [ -e "$T/pwned" ] && fail "$*: the injected option ran"
    return 0
}
refused "host name '-oProxyCommand=touch $T/pwned' starts with '-'" \
    --hosts "127.0.0.2,-oProxyCommand=touch $T/pwned"
printf '[{"ssh": "127.0.0.2"}, {"ssh": "-oProxyCommand=touch %s/pwned"}]' "$T" > "$T/h1.json"
refused "host 1: host name '-oProxyCommand=touch $T/pwned' starts with '-'" --hostfile "$T/h1.json"
printf '[{"ssh": "127.0.0.2", "ips": ["10.0.0.1", "10.0.0.2:99\\"],[\\"x"]}]' > "$T/h2.json"
refused "\"ips\" of host 0: '10.0.0.2:99\"\\],\\[\"x' is not an IPv4 or IPv6 address" \
    --hostfile "$T/h2.json"
printf '{"hosts": [{"ssh": "127.0.0.2", "ips": ["::1"]}, {"ssh": "h", "ips": ["example.com"]}]}' > "$T/h3.json"
refused "\"ips\" of host 1: 'example.com' is not an IPv4 or IPv6 address" --hostfile "$T/h3.json"

# Accepted names reach ssh after "--" (probe and agent alike).
printf '[{"ssh": "127.0.0.2", "ips": ["127.0.0.2"]}, {"ssh": "127.0.0.3", "ips": ["::1"]}]' > "$T/ok.json"
launch --hostfile "$T/ok.json" -- sh -c 'echo "r$MLX_RANK"' > "$T/o" 2> "$T/e"
expect_eq "$?" 0 "a job over the stand-in ssh: $(cat "$T/e")"
expect_eq "$(sort "$T/o" | tr '\n' ' ')" "r0 r1 " "ranks' output"
expect_eq "$(wc -l < "$T/ssh.log")" 4 "ssh invocations: $(cat "$T/ssh.log")"
expect_eq "$(grep -c -- ' -- 127\.0\.0\.[23] ' "$T/ssh.log")" 4 "'--' before the host: $(cat "$T/ssh.log")"
echo PASS
