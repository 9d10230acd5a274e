"""Started as torch users start jobs, without distcomm-launch (issue 35):
two ranks given exactly torchrun's variables (MASTER_ADDR, MASTER_PORT,
RANK, WORLD_SIZE; no hostfile, no other port) run examples/python/ddp.py on
the "distcomm" backend and both finish with the same parameters. torch's
env:// store takes MASTER_PORT; distcomm's coordinator and job token come
through that store. Before that, rank 0's coordinator tried to bind
MASTER_PORT too and both ranks waited out the timeout.

usage: torch_plain_start.py PYTHON   (the interpreter with torch for the ranks)
Exits 0 when both ranks print "parameters identical on all 2 ranks" within
the bound, 1 otherwise (each rank's output is shown)."""
import os
import socket
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
DDP = os.path.join(HERE, "..", "..", "examples", "python", "ddp.py")
BOUND = 90  # seconds; a rank that waits for a port it cannot have takes DISTCOMM_TIMEOUT


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def main():
    python = sys.argv[1]
    port = free_port()
    procs = []
    for r in range(2):
        env = {k: v for k, v in os.environ.items()
               if not k.startswith(("MLX_", "DISTCOMM_COORDINATOR", "DISTCOMM_JOB_TOKEN"))}
        env.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), RANK=str(r),
                   WORLD_SIZE="2", DISTCOMM_TIMEOUT="30")
        procs.append(subprocess.Popen([python, DDP, "--steps", "20"], env=env,
                                      stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                      text=True))
    t0, outs = time.monotonic(), []
    for p in procs:
        try:
            outs.append(p.communicate(timeout=max(1, BOUND - (time.monotonic() - t0)))[0])
        except subprocess.TimeoutExpired:
            p.kill()
            outs.append(p.communicate()[0] + f"\n(killed: still running after {BOUND} s)")
    ok = True
    for r, (p, out) in enumerate(zip(procs, outs)):
        print(f"--- rank {r} (exit {p.returncode})\n{out.rstrip()}")
        if r == 0:
            ok = ok and "parameters identical on all 2 ranks" in out
        ok = ok and p.returncode == 0
    print("both ranks finished" if ok else "FAILED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
