#!/usr/bin/python3
"""compare.py - one side-by-side table from distcomm-perf and run-peers.sh outputs.

Usage: compare.py [LABEL=]FILE [[LABEL=]FILE ...]

Every FILE holds rows in run-peers.sh's columns
    op bytes iters time_us algbw_GB/s busbw_GB/s check
(distcomm-perf --peers-format prints them too). A "## name" line starts the
section of the peer `name` (run-peers.sh output); rows before any such line
belong to LABEL (default: the file name without extension). The first source
read is the subject ("distcomm"); the others are its peers. A source met in
several files (rounds of one run, taken in turns) counts with the median of
its times; a WRONG check in any round marks the cell.

For each op and size the table shows every source's bus bandwidth and the
ratio subject / best peer. The ratio is taken from the times (same bytes and
bus factor on both sides), which keep their precision at 8 bytes where the
printed GB/s do not. The goal column applies SPEC.md section 6 (TCP):
all-reduce 8 B no slower than Open MPI, all-reduce >= 16 MiB at least 2x the
best peer, every other op no slower than any peer at any size.
Standard library only (Debian's /usr/bin/python3).
"""
import os
import re
import sys

OPS = ["allreduce", "allgather", "reduce_scatter", "broadcast", "pingpong"]
MIB16 = 16 << 20


def bus_factor(op, n):
    if op == "allreduce":
        return 2.0 * (n - 1) / n
    if op in ("allgather", "reduce_scatter"):
        return (n - 1) / n
    return 1.0


def parse_row(fields):
    """(op, bytes, time_us, ok) from a data row, or None for anything else."""
    if len(fields) < 6 or fields[0] == "op":
        return None
    try:
        size, time_us = int(fields[1]), float(fields[3])
    except ValueError:
        return None
    ok = len(fields) < 7 or fields[6] != "WRONG"
    return fields[0], size, time_us, ok


def read_file(label, path, data, order, nranks):
    """Adds path's rows to data[source][(op, bytes)] = (time_us, ok)."""
    source = label
    with open(path, errors="replace") as f:
        for line in f:
            fields = line.split()
            if line.startswith("## "):
                source = fields[1]
                continue
            t = re.search(r"^memcpy .*read\+write traffic ([0-9.]+) GB/s", line)
            if t:
                data.setdefault("memcpy-traffic", []).append(float(t.group(1)))
                continue
            t = re.search(r"^copy rates.*: memcpy ([0-9.]+), process_vm_readv ([0-9.]+)",
                          line)
            if t:
                data.setdefault("copy-rates", []).append(tuple(map(float, t.groups())))
                continue
            t = re.search(r"^512 KiB through shared memory .*both at once [0-9.]+ GB/s"
                          r" each \(([0-9.]+) us\)", line)
            if t:
                data.setdefault("pipe-512k", []).append(float(t.group(1)))
                continue
            t = re.search(r"^tcp .* 8 B one way: .*spinning ([0-9.]+) us", line)
            if t:
                data.setdefault("tcp-floor", []).append(float(t.group(1)))
                continue
            m = re.search(r"nranks=(\d+)", line)
            if line.startswith("#"):
                if m:
                    nranks[source] = int(m.group(1))
                continue
            row = parse_row(fields)
            if row is None:
                continue
            op, size, time_us, ok = row
            if source not in data:
                data[source] = {}
                order.append(source)
            data[source].setdefault((op, size), []).append((time_us, ok))


def median(values):
    values = sorted(values)
    mid = len(values) // 2
    return values[mid] if len(values) % 2 else (values[mid - 1] + values[mid]) / 2


def median_of_rounds(data):
    """data[source][key]: a list of (time_us, ok) per round -> one pair."""
    for cells in data.values():
        for key, rounds in cells.items():
            cells[key] = (median(t for t, _ in rounds), all(ok for _, ok in rounds))


def print_memory_bound(rates, data, subject):
    """SPEC.md section 6: the largest all_sum against 4 x size bytes of
    DRAM traffic at the host's memcpy traffic rate (run-peers.sh memcpy)."""
    sums = [k for k in data[subject] if k[0] == "allreduce"]
    if not rates or not sums:
        return
    key = max(sums, key=lambda k: k[1])
    rate = median(rates)
    bound_ms = 4.0 * key[1] / (rate * 1e9) * 1e3
    mine_ms = data[subject][key][0] / 1e3
    print("\n# memory bound: all_sum of %d B takes %.2f ms; 4 x size at the memcpy"
          " traffic rate %.2f GB/s is %.2f ms: %.0f%% of the bound (goal: 70%%)"
          % (key[1], mine_ms, rate, bound_ms, 100.0 * bound_ms / mine_ms))


# What each rank of two moves in distcomm's single-copy algorithms
# (algo/pull.c), in units of the row's size: (memcpy, process_vm_readv).
# all_sum pulls the peer's half of its slice, adds its own, then pulls the
# peer's reduced half; all_gather copies its own half and pulls the other;
# reduce_scatter pulls and adds. An add works on the 64 KiB piece just
# pulled into cache, so its memory traffic is that of a copy of our own
# operand: counted as a memcpy.
WORK = {"allreduce": (0.5, 1.0), "allgather": (0.5, 0.5), "reduce_scatter": (0.5, 0.5)}


# 1 MiB cells through the pipes: how many times each rank sends its peer
# 512 KiB while the peer sends it as much (all_sum: its half, then the
# reduced half back).
PIPE_TRIPS = {"allgather": 1, "allreduce": 2}


def best_peer(data, peers, key):
    """(time_us, name) of the fastest peer that ran key, or None."""
    times = [(data[p][key][0], p) for p in peers if key in data[p]]
    return min(times) if times else None


def against(bound_us, num, subject, mine_us, best):
    """'subject T us (P%), peer T us (P%)': each side's time and the bound
    as a share of it (num formats the times)."""
    text = "%s %s us (%3.0f%%)" % (subject, num % mine_us, 100 * bound_us / mine_us)
    if best is None:
        return text + ", no peer ran it"
    return text + ", %s %s us (%3.0f%%)" % (best[1], num % best[0], 100 * bound_us / best[0])


def print_pipe_bound(data, subject, peers, pipe_us):
    """1 MiB cells against bench-copy-rate cross 512: a pipe's two copies
    of 512 KiB each way at once, with no bookkeeping."""
    mine = data[subject]
    t = median(pipe_us)
    print("\n# 512 KiB each way through shared memory at once, written then read"
          " by the sibling (bench-copy-rate cross): %.1f us (median of %d); over"
          " 100%%: faster than that many trips" % (t, len(pipe_us)))
    for op, trips in PIPE_TRIPS.items():
        key = (op, 1 << 20)
        if key not in mine:
            continue
        print("#   %-14s %10d: %d x %.1f = %6.1f us; %s"
              % (op, key[1], trips, t, trips * t,
                 against(trips * t, "%6.1f", subject, mine[key][0],
                         best_peer(data, peers, key))))


def print_bounds(data, subject, peers, copy_rates, tcp_floor):
    """What bounds the cells the goals are hardest on, measured in the same
    run: over shared memory the time of the copies a cell is made of at
    the rates bench-copy-rate measured (>= 16 MiB), over TCP the
    kernel's own 8 B ping-pong (bench-tcp-floor)."""
    mine = data[subject]
    if copy_rates:
        rate = [median(r[k] for r in copy_rates) for k in range(2)]
        print("\n# the copies a cell is made of, timed at the rates of two processes"
              " at once, memcpy %.2f and process_vm_readv %.2f GB/s (median of %d);"
              " over 100%%: faster than that yardstick (caches, overlap)"
              % (rate[0], rate[1], len(copy_rates)))
        for key in sorted(k for k in mine if k[0] in WORK and k[1] >= MIB16):
            copies_us = sum(w * key[1] / (r * 1e9) for w, r in zip(WORK[key[0]], rate)) * 1e6
            print("#   %-14s %10d: copies %8.0f us; %s"
                  % (key[0], key[1], copies_us,
                     against(copies_us, "%8.0f", subject, mine[key][0],
                             best_peer(data, peers, key))))
    key = ("pingpong", 8)
    if tcp_floor and key in mine:
        floor = median(tcp_floor)
        best = best_peer(data, peers, key)
        print("\n# floor: 8 B one way over TCP on 127.0.0.1 with no library, spinning"
              " on recv: %.2f us (median of %d); %s %.2f us, %s"
              % (floor, len(tcp_floor), subject, mine[key][0],
                 "%s %.2f us" % (best[1], best[0]) if best else "no peer ran it"))


def busbw(op, size, time_us, n):
    return size / (time_us * 1e-6) / 1e9 * bus_factor(op, n)


def goal(op, size, ratio, vs_ompi, shm):
    """'ok' / 'MISS' / '' against SPEC.md section 6, from time ratios: over
    TCP all_sum >= 16 MiB must be 2x the best peer, over shared memory
    all_sum >= 1 MiB 2x Open MPI; 8 B no slower than Open MPI; the other
    ops no slower than any peer."""
    if op == "allreduce" and size <= 8:
        return "" if vs_ompi is None else ("ok" if vs_ompi >= 1.0 else "MISS")
    if op == "allreduce" and shm and size >= MIB16 // 16:
        return "" if vs_ompi is None else ("ok" if vs_ompi >= 2.0 else "MISS")
    if op == "allreduce" and not shm and size >= MIB16:
        return "ok" if ratio >= 2.0 else "MISS"
    if op == "allreduce" or ratio is None:
        return ""
    return "ok" if ratio >= 1.0 else "MISS"


def fmt_bw(cell, op, size, n):
    if cell is None:
        return "-"
    text = "%.4f" % busbw(op, size, cell[0], n)
    return text if cell[1] else text + "!"


def table_row(key, subject, peers, data, nranks):
    op, size = key
    n = nranks.get(subject, 2)
    cells = [data[s].get(key) for s in [subject] + peers]
    mine = cells[0]
    others = [(c[0], p) for c, p in zip(cells[1:], peers) if c is not None]
    ratio = best = vs_ompi = None
    if mine is not None and others:
        best_t, best = min(others)
        ratio = best_t / mine[0]
        ompi = (data.get("ompi-tcp") or data.get("ompi-shm") or {}).get(key)
        vs_ompi = ompi[0] / mine[0] if ompi else None
    bws = [fmt_bw(c, op, size, n) for c in cells]
    return "%-15s %11d %10s %s %-10s %7s %5s" % (
        op, size, "%.2f" % mine[0] if mine else "-",
        " ".join("%10s" % b for b in bws), best or "-",
        "%.2fx" % ratio if ratio is not None else "-",
        goal(op, size, ratio, vs_ompi, "ompi-shm" in data)
        if ratio is not None else "")


def print_table(data, order, nranks):
    subject, peers = order[0], order[1:]
    keys = sorted({k for s in order for k in data[s]},
                  key=lambda k: (OPS.index(k[0]) if k[0] in OPS else 99, k[0], k[1]))
    print("# time_us: %s's time per call (one way for pingpong); then busbw in GB/s of"
          " every source ('!' = check WRONG)" % subject)
    print("# ratio = %s / best peer (from the times), goal = SPEC.md section 6 (%s)"
          % (subject, "shared memory" if "ompi-shm" in data else "TCP"))
    head = " ".join("%10s" % s[:10] for s in [subject] + peers)
    print("%-15s %11s %10s %s %-10s %7s %5s" % ("op", "bytes", "time_us", head,
                                                "best_peer", "ratio", "goal"))
    last_op = None
    for key in keys:
        if last_op is not None and key[0] != last_op:
            print()
        last_op = key[0]
        print(table_row(key, subject, peers, data, nranks))


def main(argv):
    if len(argv) < 2 or argv[1] in ("-h", "--help"):
        print(__doc__.strip())
        return 0 if len(argv) >= 2 else 2
    data, order, nranks = {}, [], {}
    for arg in argv[1:]:
        label, _, path = arg.rpartition("=")
        if not label:
            label = os.path.splitext(os.path.basename(path))[0]
        read_file(label, path, data, order, nranks)
    if not order:
        print("compare.py: no rows found", file=sys.stderr)
        return 1
    rates = data.pop("memcpy-traffic", None)
    copy_rates = data.pop("copy-rates", None)
    tcp_floor = data.pop("tcp-floor", None)
    pipe_us = data.pop("pipe-512k", None)
    order = [s for s in order if s in data]
    median_of_rounds(data)
    print_table(data, order, nranks)
    print_memory_bound(rates, data, order[0])
    print_bounds(data, order[0], order[1:], copy_rates, tcp_floor)
    if pipe_us:
        print_pipe_bound(data, order[0], order[1:], pipe_us)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
