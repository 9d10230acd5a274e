#!/usr/bin/python3
"""many_ranks.py OUT ERR START END LOAD LABEL: one line (wall, load, CPU) and
the phase table of one bench/scale/many-ranks.sh run. OUT holds bench/scale/many_ranks.c's
lines; ERR may hold "TR RANK PHASE WALL CPU" lines from an instrumented
build (the set-up's own phases), which the table then includes."""
import collections
import statistics
import sys

out, err, start, end, load, label = sys.argv[1:7]
start, end = float(start), float(end)
wall = collections.defaultdict(dict)
cpu = collections.defaultdict(dict)
ok = 0
for line in open(out):
    f = line.split()
    if len(f) == 12 and f[0] == "T":
        r = int(f[1])
        ok += f[6] == "1"
        for i, k in enumerate(["main", "init", "sum", "free"]):
            wall[r][k] = float(f[2 + i])
            cpu[r][k] = float(f[8 + i])
for line in open(err, errors="replace"):
    f = line.split()
    if len(f) == 5 and f[0] == "TR":
        wall[int(f[1])][f[2]] = float(f[3])
        cpu[int(f[1])][f[2]] = float(f[4])
total = sum(c["free"] for c in cpu.values() if "free" in c)
print(f"{label}: wall {end - start:.2f} s, load {load}, {ok} ranks right, "
      f"CPU {total:.2f} s summed over ranks")
order = ["main", "start", "first", "second", "s_create", "s_swap0",
         "s_attach", "s_swap1", "shm", "init", "sum", "free"]
names = {"main": "exec (launch to main)", "start": "init before connecting",
         "first": "dial lower ranks", "second": "accept higher ranks",
         "s_create": "shm: create segment", "s_swap0": "shm: swap offers",
         "s_attach": "shm: attach peers", "s_swap1": "shm: swap verdicts",
         "shm": "shm: wire", "init": "init: the rest", "sum": "all_sum",
         "free": "group free"}
if not any("shm" in w for w in wall.values()):
    names["init"] = "init (all of it)"
print(f"  {'phase':24s} {'done at (s, min/med/max)':>26s} {'CPU s':>7s}")
prev = None
for k in order:
    at = [w[k] - start for w in wall.values() if k in w]
    if not at:
        continue
    if prev is None:
        c = sum(v[k] for v in cpu.values() if k in v)
    else:
        c = sum(v[k] - v[prev] for v in cpu.values() if k in v and prev in v)
    print(f"  {names[k]:24s} {min(at):8.2f} {statistics.median(at):8.2f} "
          f"{max(at):8.2f} {c:7.2f}")
    prev = k
print(f"  {'launcher exits':24s} {'':17s} {end - start:8.2f}")
