"""all_sum latency/bandwidth of an unchanged MLX program (bench/mlx/mlx.sh
runs it under mlx.launch, mpirun and distcomm-launch --mlx in turns).

Each size is timed eval to eval: the time from asking for
mx.distributed.all_sum(x) to mx.eval returning, as an MLX program sees it;
the median of REPS after warm-up. Rank 0 prints "allsum BYTES MEDIAN_US".
--distcomm times distcomm.all_sum(mx.array) instead (the Python module:
DLPack in, one copy into the mx.array result out).
"""
import argparse
import statistics
import time

import mlx.core as mx


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--sizes", default="8,64,512,4096,65536,1048576,16777216,134217728")
    p.add_argument("--small-reps", type=int, default=300)
    p.add_argument("--distcomm", action="store_true",
                   help="distcomm.all_sum on the mx.array (distcomm's Python module "
                        "under distcomm-launch) instead of mx.distributed.all_sum")
    args = p.parse_args()
    if args.distcomm:
        import distcomm
        group = distcomm.init()
        all_sum = distcomm.all_sum
    else:
        group = mx.distributed.init()
        all_sum = mx.distributed.all_sum
    for nbytes in (int(s) for s in args.sizes.split(",")):
        x = mx.ones((max(1, nbytes // 4),), dtype=mx.float32)
        mx.eval(x)
        # fewer reps where one call is long: ~1 s per size at most
        reps = args.small_reps if nbytes <= 65536 else (50 if nbytes <= 1 << 20 else 7)
        times = []
        for i in range(reps + max(3, reps // 10)):
            t0 = time.perf_counter()
            y = all_sum(x, group=group)
            mx.eval(y)
            times.append(time.perf_counter() - t0)
        times = times[-reps:]  # the first ones were warm-up
        want = float(group.size())
        if y[0].item() != want:
            raise SystemExit(f"all_sum of {nbytes} B gave {y[0].item()}, not {want}")
        if group.rank() == 0:
            print(f"allsum {nbytes} {statistics.median(times) * 1e6:.1f}", flush=True)


if __name__ == "__main__":
    main()
