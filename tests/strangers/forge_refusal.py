#!/usr/bin/python3
"""forge_refusal.py PORT TARGET_HOST:TARGET_PORT FORGED REASON: a stranger on
the path to a rank that answers a real dialer with a forged refusal.

Listens on 127.0.0.1:PORT. The first FORGED connections (-1: every one) get,
after the dialer's hello, a refusal hello with reason REASON (a number of
dc_hello_reason) and no MAC, or, on every second one, a proof message whose
MAC is random bytes (a stranger cannot make a real one); then the connection
is closed. Later connections are relayed to the target both ways, untouched.
Prints "forger listening PORT" when ready and "forger: forged N" for each
forged refusal. Runs until killed. Only the standard library.
"""
import os
import socket
import struct
import sys
import threading
import time

HELLO = 84
MASK = (1 << 64) - 1


def check(b):
    """header_check of src/transport/frame.c over b."""
    h = 0x9E3779B97F4A7C15
    for i in range(0, len(b), 4):
        (w,) = struct.unpack_from("<I", b, i)
        h ^= ((w + i) * 0xBF58476D1CE4E5B9) & MASK
    return (h ^ (h >> 29) ^ (h >> 47)) & 0xFFFFFFFF


def refusal(version, reason):
    b = bytearray(80)
    struct.pack_into("<IHH", b, 0, 0x4D434344, 3, version)
    struct.pack_into("<H", b, 34, reason)
    return bytes(b) + struct.pack("<I", check(b))


def read_exact(s, n):
    got = b""
    while len(got) < n:
        c = s.recv(n - len(got))
        if not c:
            return None
        got += c
    return got


def pump(a, b):
    try:
        while True:
            c = a.recv(65536)
            if not c:
                break
            b.sendall(c)
    except OSError:
        pass
    for s in (a, b):
        try:
            s.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass


def forge(c, n, reason):
    c.settimeout(10)
    hello = read_exact(c, HELLO)
    if hello:
        (version,) = struct.unpack_from("<H", hello, 6)
        out = refusal(version, reason)
        if n % 2 == 0:  # a proof message with a MAC made up
            out += struct.pack("<IHH", 0x46504344, version, 0) + os.urandom(32)
        c.sendall(out)
        print("forger: forged %d" % (n + 1), flush=True)
    c.close()


def relay(c, target):
    """Join c to a new connection to target, retried for 20 s (the rank
    may not listen yet); c is closed if none comes."""
    host, port = target.rsplit(":", 1)
    deadline = time.monotonic() + 20
    while True:
        try:
            t = socket.create_connection((host, int(port)), timeout=5)
            break
        except OSError:
            if time.monotonic() > deadline:
                c.close()
                return
            time.sleep(0.1)
    t.settimeout(None)
    for a, b in ((c, t), (t, c)):
        threading.Thread(target=pump, args=(a, b), daemon=True).start()


def main():
    port, target, forged, reason = (int(sys.argv[1]), sys.argv[2],
                                    int(sys.argv[3]), int(sys.argv[4]))
    ls = socket.socket()
    ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    ls.bind(("127.0.0.1", port))
    ls.listen(64)
    print("forger listening %d" % port, flush=True)
    n = 0
    while True:
        c, _ = ls.accept()
        if forged < 0 or n < forged:
            forge(c, n, reason)
            n += 1
        else:
            threading.Thread(target=relay, args=(c, target),
                             daemon=True).start()


if __name__ == "__main__":
    main()
