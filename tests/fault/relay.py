#!/usr/bin/python3
"""relay.py PORT TARGET_HOST:TARGET_PORT [fault]: a fault-injecting TCP relay.

Listens on 127.0.0.1:PORT and joins every connection it accepts to a new
connection to the target, forwarding both ways. One fault at most:
  --delay S           every chunk is forwarded S seconds after it arrived
                      (a long line: latency, not a throughput cap)
  --stall S --after B once B bytes have gone through (both ways, all
                      connections), forward nothing for S seconds
  --cut --after B     once B bytes have gone through, close every connection
  --flip --after B    flip one bit (0x40) of byte number B of the stream
                      (both ways, all connections, counted from 0) and
                      forward everything else as it is: an on-path attacker
  --trickle S --after B  once B bytes have gone through, forward one byte
                      every S seconds (a peer that keeps a wait alive)
Prints "relay listening PORT" when ready, and "relay: stall at WALL",
"relay: cut at WALL", "relay: trickle at WALL" or "relay: flip at WALL" (wall-clock seconds) when the
fault begins. Runs until
killed. Only the standard library: tests use Debian's /usr/bin/python3.
"""
import argparse
import queue
import socket
import sys
import threading
import time

CHUNK = 65536


class Faults:
    def __init__(self, args):
        self.args = args
        self.lock = threading.Lock()
        self.moved = 0
        self.fired = False
        self.stall_until = 0.0
        self.socks = []
        self.flipped = 0  # --flip: bytes handed to writers so far

    def flip(self, data):
        """--flip: data with the chosen byte flipped, if it falls in data."""
        a = self.args
        with self.lock:
            start = self.flipped
            self.flipped += len(data)
            if not start <= a.after < start + len(data):
                return data
            at = a.after - start
            print("relay: flip at %.6f after %d bytes" % (time.time(), a.after),
                  flush=True)
        return data[:at] + bytes([data[at] ^ 0x40]) + data[at + 1:]

    def count(self, n):
        """Count n forwarded bytes; fire the fault when the mark is passed."""
        a = self.args
        with self.lock:
            self.moved += n
            if self.fired or a.flip or a.after is None or self.moved < a.after:
                return
            self.fired = True
            what = "stall" if a.stall else "trickle" if a.trickle else "cut"
            print("relay: %s at %.6f after %d bytes" % (what, time.time(), self.moved),
                  flush=True)
            if a.stall:
                self.stall_until = time.monotonic() + a.stall
            elif a.cut:
                for s in self.socks:
                    try:
                        s.shutdown(socket.SHUT_RDWR)
                    except OSError:
                        pass

    def hold(self):
        """Sleep out a stall."""
        while True:
            left = self.stall_until - time.monotonic()
            if left <= 0:
                return
            time.sleep(min(left, 0.1))


def reader(src, q, faults):
    while True:
        try:
            data = src.recv(CHUNK)
        except OSError:
            data = b""
        q.put((time.monotonic(), data))
        if not data:
            return


def writer(dst, q, faults):
    delay = faults.args.delay
    while True:
        t, data = q.get()
        if not data:
            break
        wait = t + delay - time.monotonic()
        if wait > 0:
            time.sleep(wait)
        faults.hold()
        if faults.fired and faults.args.cut:
            break
        if faults.args.flip:
            data = faults.flip(data)
        try:
            if faults.fired and faults.args.trickle:
                trickle(dst, data, faults.args.trickle)
            else:
                dst.sendall(data)
        except OSError:
            break
        faults.count(len(data))
    try:
        dst.shutdown(socket.SHUT_WR)
    except OSError:
        pass


def trickle(dst, data, every):
    """--trickle: one byte at a time, every `every` seconds."""
    for i in range(len(data)):
        dst.sendall(data[i:i + 1])
        time.sleep(every)


def pump(src, dst, faults):
    q = queue.Queue()
    threading.Thread(target=reader, args=(src, q, faults), daemon=True).start()
    threading.Thread(target=writer, args=(dst, q, faults), daemon=True).start()


def connect(addr, deadline):
    """Like a rank's own connect: retry while the target is not listening."""
    while True:
        try:
            return socket.create_connection(addr)
        except OSError:
            if time.monotonic() > deadline:
                return None
            time.sleep(0.05)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("port", type=int)
    p.add_argument("target")
    p.add_argument("--delay", type=float, default=0.0)
    p.add_argument("--stall", type=float, default=0.0)
    p.add_argument("--cut", action="store_true")
    p.add_argument("--flip", action="store_true")
    p.add_argument("--trickle", type=float, default=0.0)
    p.add_argument("--after", type=int)
    args = p.parse_args()
    host, port = args.target.rsplit(":", 1)
    faults = Faults(args)
    ls = socket.socket()
    ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    ls.bind(("127.0.0.1", args.port))
    ls.listen(64)
    print("relay listening %d" % args.port, flush=True)
    while True:
        a, _ = ls.accept()
        b = connect((host, int(port)), time.monotonic() + 10)
        if b is None:
            print("relay: cannot reach %s" % args.target, file=sys.stderr)
            a.close()
            continue
        for s in (a, b):
            s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        with faults.lock:
            faults.socks += [a, b]
        pump(a, b, faults)
        pump(b, a, faults)


if __name__ == "__main__":
    main()
