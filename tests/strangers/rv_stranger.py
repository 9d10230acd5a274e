"""rv_stranger.py MODE PORT [N]: a stranger at a coordinator (rank 0's
rendezvous, src/bootstrap/coordinator.c) that knows no job token.

  size   one JOIN claiming rank 1 of 3 ranks (the job has 2), with a MAC of
         zeros; prints what rank 0 answered ("answer kind K" or "closed")
  flood  N connections, each announcing a 1 MiB JOIN and sending all but
         its last byte; held open until stdin closes (prints "flooded N")
  hold   N connections that say nothing, held until stdin closes

It reads rank 0's NONCE first when one comes (rendezvous version 2), and
speaks version 1 otherwise (an older rank 0), so the same test runs against
the code before the fix."""
import select
import socket
import struct
import sys
import time

MAGIC = 0x56524344


def dial(port):
    for _ in range(400):  # rank 0 may not listen yet
        try:
            return socket.create_connection(("127.0.0.1", port), timeout=2)
        except OSError:
            time.sleep(0.05)
    sys.exit("stranger: rank 0 never listened")


def greeting(s):
    """Rank 0's version: 2 when it sent a NONCE within 0.5 s, else 1."""
    r, _, _ = select.select([s], [], [], 0.5)
    if not r:
        return 1
    got = b""
    while len(got) < 64:
        b = s.recv(64 - len(got))
        if not b:
            break
        got += b
    return 2 if len(got) == 64 else 1


def header(version, kind, rank, size, naddrs, length):
    return struct.pack("<IHHIIIIQ", MAGIC, version, kind, rank, size, naddrs,
                       length, 0)


def size_mode(port):
    s = dial(port)
    v = greeting(s)
    text = b"127.0.0.1:5001\n"
    tail = b"\0" * 64 if v == 2 else b""  # a nonce and a MAC it cannot make
    s.sendall(header(v, 1, 1, 3, 1, len(text) + len(tail)) + text + tail)
    s.settimeout(5)
    try:
        h = s.recv(32)
        print("answer kind %d" % struct.unpack("<H", h[6:8])[0] if len(h) >= 8
              else "closed")
    except OSError as e:
        print("answer: %s" % e)


def read_nonce(s):
    s.settimeout(2)
    got = b""
    while len(got) < 64:
        b = s.recv(64 - len(got))
        if not b:
            raise OSError("closed")
        got += b


def flood_mode(port, n, announce):
    held = []
    chunk = b"x" * 65536
    v = None
    for _ in range(n):
        try:
            s = dial(port)
            if announce and v is None:
                v = greeting(s)  # once: an old rank 0 would cost 0.5 s each
            elif announce and v == 2:
                read_nonce(s)
            if announce:
                s.sendall(header(v, 1, 1, 2, 1, 1 << 20))
                s.settimeout(0.5)
                for _ in range(15):  # all but its last byte, if rank 0
                    s.sendall(chunk)  # takes it: never a whole JOIN
                s.sendall(chunk[1:])
            held.append(s)
        except OSError:
            pass
    print("flooded %d" % n, flush=True)
    sys.stdin.read()


mode, port = sys.argv[1], int(sys.argv[2])
if mode == "size":
    size_mode(port)
else:
    flood_mode(port, int(sys.argv[3]), mode == "flood")
