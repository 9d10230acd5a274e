"""table.py RESULTS: bench/mlx/mlx.sh's table from its raw outputs
(allsum-CONFIG-ROUND.txt, decode-CONFIG-ROUND.txt, host.txt)."""
import glob
import os
import re
import statistics
import sys

CONFIGS = ["ring_tcp", "mpi_tcp", "mpi_shm", "dc_tcp", "dc_shm", "dcpy_tcp", "dcpy_shm"]
# (distcomm config, the other, column title)
RATIOS = [("dc_tcp", "ring_tcp", "ring/dc tcp"), ("dc_tcp", "mpi_tcp", "mpi/dc tcp"),
          ("dc_shm", "ring_tcp", "ring/dc shm"), ("dc_shm", "mpi_shm", "mpi/dc shm"),
          ("dcpy_tcp", "ring_tcp", "ring/dcpy tcp"), ("dcpy_tcp", "mpi_tcp", "mpi/dcpy tcp"),
          ("dcpy_shm", "mpi_shm", "mpi/dcpy shm")]


def cells(results, kind, pattern):
    """{config: {key: median over rounds}} from the files of one kind."""
    out = {}
    for c in CONFIGS:
        seen = {}
        for f in glob.glob(os.path.join(results, f"{kind}-{c}-*.txt")):
            for m in re.finditer(pattern, open(f).read(), re.M):
                seen.setdefault(int(m.group(1)) if m.lastindex > 1 else 0, []).append(
                    float(m.group(m.lastindex)))
        if seen:
            out[c] = {k: statistics.median(v) for k, v in seen.items()}
    return out


def size(n):
    for unit, s in (("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= s:
            return f"{n // s} {unit}"
    return f"{n} B"


def main():
    results = sys.argv[1]
    lat = cells(results, "allsum", r"^allsum (\d+) ([\d.]+)$")
    dec = cells(results, "decode", r"^decode ([\d.]+) tokens/s")
    print(open(os.path.join(results, "host.txt")).read().rstrip())
    print()
    # only the configurations that ran, and the ratios between them
    global CONFIGS, RATIOS
    CONFIGS = [c for c in CONFIGS if c in lat or c in dec]
    RATIOS = [r for r in RATIOS if r[0] in CONFIGS and r[1] in CONFIGS]
    head = CONFIGS + [t for _, _, t in RATIOS]
    print("| all_sum (us) | " + " | ".join(head) + " |")
    print("|---" * (len(head) + 1) + "|")
    sizes = sorted({n for c in lat.values() for n in c})
    for n in sizes:
        row = [f"{lat[c][n]:.1f}" if n in lat.get(c, {}) else "-" for c in CONFIGS]
        for dc, other, _ in RATIOS:
            a, b = lat.get(other, {}).get(n), lat.get(dc, {}).get(n)
            row.append(f"{a / b:.2f}x" if a and b else "-")
        print(f"| {size(n)} | " + " | ".join(row) + " |")
    row = [f"{dec[c][0]:.1f}" if c in dec else "-" for c in CONFIGS]
    # decode ratios: distcomm's tokens/s over the other's
    for dc, other, _ in RATIOS:
        a, b = dec.get(other, {}).get(0), dec.get(dc, {}).get(0)
        row.append(f"{b / a:.2f}x" if a and b else "-")
    print("| decode (tokens/s) | " + " | ".join(row) + " |")


if __name__ == "__main__":
    main()
