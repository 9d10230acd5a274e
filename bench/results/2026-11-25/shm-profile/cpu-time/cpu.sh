#!/bin/bash
# cpu.sh OUT: CPU time (task-clock of launcher + ranks) per call, from the
# difference of two runs (N2 and N1 calls), old and new in turns.
out=$1; mkdir -p $out
cells="all_gather:64K:2000:200 all_gather:1M:400:40 all_gather:16M:40:4 sendrecv:64K:2000:200 sendrecv:1M:400:40 sendrecv:16M:40:4 all_reduce:1M:400:40 all_reduce:16M:40:4"
for r in 1 2 3; do
 for cell in $cells; do
  IFS=: read op sz n2 n1 <<<"$cell"
  for b in old new; do
   d=/work/wt-shm-old/build; [ $b = new ] && d=/work/wt-shm/build
   for n in $n1 $n2; do
    ms=$(perf stat -x, -e task-clock -- $d/bin/distcomm-launch -n 2 -- $d/bin/distcomm-perf -t $op -l $sz -n $n -w 0 -c 0 2>&1 >/dev/null | grep task-clock | cut -d, -f1)
    echo "$r $op $sz $b $n $ms $(cut -d' ' -f1 /proc/loadavg)" >> $out/raw.txt
   done
  done
 done
done
echo done >> $out/raw.txt
