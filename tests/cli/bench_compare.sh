#!/bin/bash
# bench_compare.sh COMPARE_PY: bench/tools/compare.py on made-up rounds. A side's
# time is the median of its rounds, the ratio comes from those medians, a
# WRONG check in any round marks the cell, and the memory-bound line uses
# the median memcpy traffic rate; the bounds lines read bench-copy-rate's
# (copy rates, and cross for the 1 MiB cells) and bench-tcp-floor's outputs.
set -u
py=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0
check() { # NAME PATTERN
  if grep -qE "$2" "$tmp/table"; then echo "ok: $1"; else
    echo "FAIL: $1 (no /$2/ in:)"; cat "$tmp/table"; fails=$((fails + 1)); fi
}
row() { # OP BYTES TIME [CHECK]
  echo "$1 $2 100 $3 0 0 ${4:-ok}"
}
{ row allreduce 1048576 10; row allgather 1024 5; row allreduce 134217728 20000; } >"$tmp/d1"
{ row allreduce 1048576 30; row allgather 1024 5 WRONG; row allreduce 134217728 20000; } >"$tmp/d2"
{ row allreduce 1048576 20; row allgather 1024 5; row allreduce 134217728 20000; } >"$tmp/d3"
for i in 1 2; do
  { echo "## ompi-shm"; echo "# nranks=2 runs=5"
    row allreduce 1048576 $((30 + 20 * i)); row allgather 1024 4
    echo "## memcpy"
    echo "memcpy   median 1 ms  copy-rate 10 GB/s  (read+write traffic $((10 * i + 10)).00 GB/s)  best 1 GB/s"
  } >"$tmp/p$i"
done
/usr/bin/python3 "$py" distcomm="$tmp/d1" distcomm="$tmp/d2" distcomm="$tmp/d3" \
  "$tmp/p1" "$tmp/p2" >"$tmp/table" 2>&1 || { echo "FAIL: compare.py exited $?"; cat "$tmp/table"; exit 1; }
# distcomm 1 MiB: median of 10, 30, 20 = 20; Open MPI: median of 50, 70 = 60
check "median of rounds and ratio" '^allreduce +1048576 +20\.00 .* ompi-shm +3\.00x +ok'
check "a WRONG round marks the cell" '^allgather +1024 +5\.00 +[0-9.]+! .* 0\.80x +MISS'
# traffic median of 20 and 30 = 25 GB/s: 4 x 134217728 B / 25 GB/s = 21.47 ms
check "memory bound" 'takes 20\.00 ms; .* rate 25\.00 GB/s is 21\.47 ms: 107% of the bound'

# What bounds the cells: the copies' yardstick from bench-copy-rate's lines
# (median of 4 and 6 = 5 GB/s memcpy, 2 GB/s process_vm_readv): all_gather
# of 16 MiB = 8 MiB at 5 + 8 MiB at 2 GB/s = 1677.7 + 4194.3 us = 5872 us;
# and the TCP floor's line (median of 6 and 8 = 7 us).
{ row allgather 16777216 5872; row pingpong 8 7; } >"$tmp/d4"
{ echo "## ompi-shm"; row allgather 16777216 11744; row pingpong 8 14; } >"$tmp/p3"
echo "copy rates, two processes at once (GB/s of bytes written): memcpy 4.00, process_vm_readv 2.00" >"$tmp/b1"
echo "copy rates, two processes at once (GB/s of bytes written): memcpy 6.00, process_vm_readv 2.00" >"$tmp/b2"
echo "tcp 127.0.0.1 8 B one way: blocking 60.00 us, spinning 6.00 us" >"$tmp/b3"
echo "tcp 127.0.0.1 8 B one way: blocking 70.00 us, spinning 8.00 us" >"$tmp/b4"
/usr/bin/python3 "$py" distcomm="$tmp/d4" "$tmp/p3" "$tmp/b1" "$tmp/b2" "$tmp/b3" "$tmp/b4" \
  >"$tmp/table" 2>&1 || { echo "FAIL: compare.py exited $?"; cat "$tmp/table"; exit 1; }
check "copies' yardstick" 'allgather +16777216: copies +5872 us; distcomm +5872 us \(100%\), ompi-shm +11744 us \( 50%\)'
check "tcp floor" 'spinning on recv: 7\.00 us \(median of 2\); distcomm 7\.00 us, ompi-shm 14\.00 us'
# The 1 MiB cells against bench-copy-rate cross 512 (median of 40 and 60 =
# 50 us): all_gather one trip, all_sum two.
{ row allgather 1048576 50; row allreduce 1048576 80; } >"$tmp/d5"
{ echo "## mpich"; row allgather 1048576 100; row allreduce 1048576 200; } >"$tmp/p5"
for u in 40 60; do
  echo "512 KiB through shared memory (write, then the sibling reads): both at once 9.00 GB/s each ($u.0 us), one at a time 10.00 GB/s (40.0 us)"
done >"$tmp/b5"
/usr/bin/python3 "$py" distcomm="$tmp/d5" "$tmp/p5" "$tmp/b5" \
  >"$tmp/table" 2>&1 || { echo "FAIL: compare.py exited $?"; cat "$tmp/table"; exit 1; }
check "pipe trips, all_gather" 'allgather +1048576: 1 x 50\.0 = +50\.0 us; distcomm +50\.0 us \(100%\), mpich +100\.0 us \( 50%\)'
check "pipe trips, all_sum" 'allreduce +1048576: 2 x 50\.0 = +100\.0 us; distcomm +80\.0 us \(125%\), mpich +200\.0 us \( 50%\)'
# A bound whose cell no peer ran (a placement table where no peer's 1 MiB
# run was kept): distcomm's share alone, not a crash.
{ echo "## mpich"; row allgather 8 2; } >"$tmp/p6"
/usr/bin/python3 "$py" distcomm="$tmp/d5" "$tmp/p6" "$tmp/b5" \
  >"$tmp/table" 2>&1 || { echo "FAIL: compare.py exited $?"; cat "$tmp/table"; exit 1; }
check "a bound no peer ran" 'allgather +1048576: 1 x 50\.0 = +50\.0 us; distcomm +50\.0 us \(100%\), no peer ran it'
echo "$((8 - fails)) passed, $fails failed"
[ "$fails" = 0 ]
