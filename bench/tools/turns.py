#!/usr/bin/python3
"""turns.py DIR BASE LABEL...: builds run in turns (bench/ab/shm-turns.sh).

DIR holds LABEL.ROUND.txt files in run-peers.sh's columns (op bytes iters
time_us ...). For every op and size: each label's median time, and for each
LABEL the median over rounds of BASE's time / LABEL's time in the same round
(above 1: LABEL is faster). Standard library only.
"""
import glob
import os
import re
import statistics
import sys


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    d, base, labels = sys.argv[1], sys.argv[2], sys.argv[3:]
    t = {}
    for f in glob.glob(os.path.join(d, "*.txt")):
        m = re.match(r"([\w-]+)\.(\d+)\.txt$", os.path.basename(f))
        if not m:
            continue
        label, rnd = m.group(1), int(m.group(2))
        for line in open(f):
            p = line.split()
            if len(p) >= 7 and p[1].isdigit() and not line.startswith("#"):
                cell = t.setdefault((p[0], int(p[1])), {})
                cell.setdefault(label, {})[rnd] = float(p[3])
    names = [base] + labels
    head = "%-15s %10s %3s " % ("op", "bytes", "n")
    head += " ".join("%12s" % (n + " us") for n in names)
    head += "".join("  %10s" % (base + "/" + n) for n in labels)
    print(head)
    for op, b in sorted(t):
        cell = t[(op, b)]
        if base not in cell:
            continue
        row = "%-15s %10d %3d " % (op, b, len(cell[base]))
        row += " ".join("%12.2f" % statistics.median(cell[n].values())
                        if n in cell else "%12s" % "-" for n in names)
        for n in labels:
            r = [cell[base][k] / cell[n][k] for k in cell[base]
                 if n in cell and k in cell[n]]
            row += "  %9.2fx" % statistics.median(r) if r else "  %10s" % "-"
        print(row)


main()
