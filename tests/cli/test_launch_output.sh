# Output forwarding: --tag-output prefixes, stdout/stderr kept apart, whole
# lines from concurrent ranks, partial last lines, lines longer than the buffer.
# shellcheck disable=SC2016 # $VARS in rank commands are for the ranks' shells
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"

launch -n 3 --tag-output -- sh -c 'echo "out $MLX_RANK"; echo "err $MLX_RANK" >&2' \
    > "$T/o" 2> "$T/e" || fail "tagged job failed"
expect_eq "$(sort "$T/o" | tr '\n' ';')" "[0] out 0;[1] out 1;[2] out 2;" "tagged stdout"
expect_eq "$(sort "$T/e" | tr '\n' ';')" "[0] err 0;[1] err 1;[2] err 2;" "tagged stderr"

# Without --tag-output the lines come through untouched.
launch -n 2 -- sh -c 'echo "plain $MLX_RANK"' > "$T/p" || fail "plain job failed"
expect_eq "$(sort "$T/p" | tr '\n' ';')" "plain 0;plain 1;" "untagged stdout"

# A last line without a newline is still delivered.
launch -n 1 --tag-output -- printf 'no newline' > "$T/nn" || fail "printf job failed"
expect_eq "$(cat "$T/nn")" "[0] no newline" "partial last line"

# 4 ranks x 20000 lines of 150 bytes at full speed; awk writes in blocks that
# cut lines anywhere, the launcher must put them back together.
launch -n 4 -- awk -v r="x" 'BEGIN {
        r = ENVIRON["MLX_RANK"]; pad = sprintf("%130s", ""); gsub(/ /, "y", pad)
        for (i = 0; i < 20000; i++) printf "rank %s line %d %s\n", r, i, pad }' \
    > "$T/many" || fail "many-lines job failed"
awk '
    # (no {n} intervals: mawk lacks them)
    !/^rank [0-3] line [0-9]+ y+$/ || length($5) != 130 { print "bad line " NR ": " substr($0, 1, 80); bad = 1; exit }
    { if ($4 != next_line[$2] + 0) { print "rank " $2 " line " $4 " out of order"; bad = 1; exit }
      next_line[$2] = $4 + 1 }
    END { if (bad) exit 1
          for (r = 0; r < 4; r++) if (next_line[r] != 20000) { print "rank " r ": " next_line[r] " lines"; exit 1 } }
' "$T/many" || fail "lines from concurrent ranks were mixed or lost"

# The same with --tag-output on stderr.
launch -n 2 --tag-output -- awk 'BEGIN { r = ENVIRON["MLX_RANK"]
        for (i = 0; i < 5000; i++) printf "r%s-%d-abcdefghijklmnopqrstuvwxyz\n", r, i > "/dev/stderr" }' \
    2> "$T/many2" || fail "tagged many-lines job failed"
bad=$(grep -Evc '^\[([01])\] r\1-[0-9]+-abcdefghijklmnopqrstuvwxyz$' "$T/many2")
expect_eq "$bad" 0 "malformed tagged lines"
expect_eq "$(wc -l < "$T/many2")" 10000 "tagged line count"

# One line far longer than the launcher's line buffer must not hang.
launch -n 2 -- sh -c 'head -c 300000 /dev/zero | tr "\\0" z; echo' \
    > "$T/long" || fail "long-line job failed"
expect_eq "$(tr -d '\n' < "$T/long" | wc -c)" 600000 "bytes of two 300000-byte lines"
expect_eq "$(tr -d 'z\n' < "$T/long" | wc -c)" 0 "stray bytes in long lines"

# A reader that goes away ("| head") ends the job instead of leaving the
# ranks writing into the void forever.
launch -n 2 -- yes 2> "$T/yes.err" | head -n 3 > "$T/yes"
rc=${PIPESTATUS[0]}
case $rc in 124 | 137) fail "launcher kept running after its reader left" ;; esac
expect_eq "$(tr '\n' ' ' < "$T/yes")" "y y y " "output before the reader left"
grep -q "signal 13" "$T/yes.err" || fail "no broken-pipe message: $(cat "$T/yes.err")"
echo PASS
