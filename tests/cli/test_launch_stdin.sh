# The launcher's stdin reaches every rank; EOF is passed on; a rank that
# does not read (or has exited) does not stop the others.
# shellcheck disable=SC2016 # $VARS in rank commands are for the ranks' shells
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"

printf 'first line\nsecond line\n' | launch -n 3 -- sh -c 'cat > "$0.$MLX_RANK"' "$T/in" \
    || fail "stdin job failed"
for r in 0 1 2; do
    expect_eq "$(cat "$T/in.$r")" "$(printf 'first line\nsecond line')" "stdin of rank $r"
done

# 2 MB of input; rank 0 exits at once without reading, rank 1 reads late.
head -c 2000000 /dev/urandom > "$T/big"
launch -n 2 -- sh -c '[ "$MLX_RANK" = 0 ] && exit 0; sleep 0.5; cat > "$0.big"' "$T/got" \
    < "$T/big" || fail "launcher failed when a rank stopped reading stdin (rc $?)"
cmp -s "$T/big" "$T/got.big" || fail "rank 1 did not get all of stdin"

# /dev/null as stdin: ranks see EOF at once instead of hanging.
launch -n 2 -- sh -c 'cat > /dev/null; echo done' < /dev/null > "$T/null" \
    || fail "job with stdin at EOF failed"
expect_eq "$(cat "$T/null")" "$(printf 'done\ndone')" "ranks reached EOF"
expect_no_hostfile
echo PASS
