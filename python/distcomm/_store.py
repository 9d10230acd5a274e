"""The key-value store that torch.distributed needs, served by rank 0 on the
job's own address (issue 33, L3: torch 1.13's TCPStore listens on every
interface, ``*:port``, whatever address it is given).

A ``torch.distributed.Store`` written in Python: rank 0 runs a small server
(one thread per client) bound to its hostfile address; every rank, rank 0
included, is a client. The protocol is ours, with no pickling: a message is
a count of fields, then each field's length and bytes, all bounded. Like
TCPStore, it does not authenticate its clients; unlike it, it is reachable
only on the address the job was given.
"""
import atexit
import datetime
import socket
import struct
import threading
import time

import torch.distributed as dist

_MAX_FIELDS = 4096       # keys in one wait or check
_MAX_FIELD = 256 << 20   # bytes in one value


def _recv_exact(sock, n):
    buf = bytearray()
    while len(buf) < n:
        got = sock.recv(min(n - len(buf), 1 << 20))
        if not got:
            raise ConnectionError("distcomm store: the connection closed")
        buf += got
    return bytes(buf)


def _send_msg(sock, fields):
    out = [struct.pack("!I", len(fields))]
    for f in fields:
        out += [struct.pack("!I", len(f)), f]
    sock.sendall(b"".join(out))


def _recv_msg(sock):
    (n,) = struct.unpack("!I", _recv_exact(sock, 4))
    if n > _MAX_FIELDS:
        raise ConnectionError(f"distcomm store: a message of {n} fields")
    fields = []
    for _ in range(n):
        (k,) = struct.unpack("!I", _recv_exact(sock, 4))
        if k > _MAX_FIELD:
            raise ConnectionError(f"distcomm store: a field of {k} bytes")
        fields.append(_recv_exact(sock, k))
    return fields


class _Server:
    """Rank 0's side: the keys, and a thread per client."""

    def __init__(self, host):
        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        self.sock = socket.socket(family, socket.SOCK_STREAM)
        self.sock.bind((host, 0))  # the job's address, never a wildcard
        self.sock.listen(128)
        self.port = self.sock.getsockname()[1]
        self.data = {}
        self.conns = 0  # clients connected
        self.cond = threading.Condition()
        threading.Thread(target=self._accept, daemon=True).start()

    def linger(self, secs):
        """At rank 0's exit: let the other ranks finish their last requests
        (torch's store-based barrier polls after rank 0 has passed it)."""
        end = time.monotonic() + secs
        with self.cond:
            while self.conns > 0 and time.monotonic() < end:
                self.cond.wait(end - time.monotonic())

    def _accept(self):
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn):
        with self.cond:
            self.conns += 1
        with conn:
            try:
                while True:
                    req = _recv_msg(conn)
                    _send_msg(conn, self._answer(req[0], req[1:]) if req else [b"bad"])
            except (OSError, ConnectionError, ValueError, struct.error, IndexError):
                pass
        with self.cond:
            self.conns -= 1
            self.cond.notify_all()

    def _wait(self, keys, ms):
        end = time.monotonic() + ms / 1000.0
        while not all(k in self.data for k in keys):
            left = end - time.monotonic()
            if left <= 0:
                return False
            self.cond.wait(left)
        return True

    def _answer(self, op, a):
        with self.cond:
            if op == b"set":
                self.data[a[0]] = a[1]
            elif op == b"get" or op == b"wait":
                keys = a[:1] if op == b"get" else a[1:]
                ms = int(a[1] if op == b"get" else a[0])
                if not self._wait(keys, ms):
                    return [b"timeout"]
                return [b"ok", self.data[a[0]]] if op == b"get" else [b"ok"]
            elif op == b"add":
                value = int(self.data.get(a[0], b"0")) + int(a[1])
                self.data[a[0]] = str(value).encode()
            elif op == b"cas":
                now = self.data.get(a[0])
                if (now is None and a[1] == b"") or now == a[1]:
                    self.data[a[0]] = now = a[2]
                    self.cond.notify_all()
                return [b"ok", a[1] if now is None else now]
            elif op == b"check":
                return [b"ok", b"1" if all(k in self.data for k in a) else b"0"]
            elif op == b"num":
                return [b"ok", str(len(self.data)).encode()]
            elif op == b"del":
                return [b"ok", b"1" if self.data.pop(a[0], None) is not None else b"0"]
            else:
                return [b"bad"]
            self.cond.notify_all()
            return [b"ok", self.data[a[0]]]


def _bytes(v):
    return v if isinstance(v, bytes) else bytes(v) if not isinstance(v, str) else v.encode()


class JobStore(dist.Store):
    """A client of rank 0's server (rank 0 keeps the server alive)."""

    def __init__(self, host, port, timeout, server=None):
        super().__init__()
        self.host, self.port, self._server = host, port, server
        self._timeout = timeout
        self._lock = threading.Lock()
        self._sock = self._connect(timeout.total_seconds())

    def _connect(self, secs):
        end = time.monotonic() + secs
        while True:
            try:
                s = socket.create_connection((self.host, self.port), timeout=secs)
                s.settimeout(None)
                s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                return s
            except OSError as e:
                if time.monotonic() > end:
                    raise RuntimeError(f"distcomm store: cannot reach rank 0's "
                                       f"store at {self.host}:{self.port}: {e}") from None
                time.sleep(0.05)

    def _ask(self, *fields, keys=()):
        with self._lock:
            _send_msg(self._sock, [_bytes(f) for f in fields])
            reply = _recv_msg(self._sock)
        if reply[0] == b"timeout":
            names = [_bytes(k).decode(errors="replace") for k in keys]
            raise RuntimeError(f"distcomm store: timed out waiting for the keys "
                               f"{names} in rank 0's store")
        if reply[0] != b"ok":
            raise RuntimeError("distcomm store: rank 0's store refused a request")
        return reply[1] if len(reply) > 1 else None

    def _ms(self, timeout=None):
        t = self._timeout if timeout is None else timeout
        if isinstance(t, datetime.timedelta):
            t = t.total_seconds()
        return str(int(t * 1000)).encode()

    def close(self):
        with self._lock:
            self._sock.close()

    def set(self, key, value):
        self._ask(b"set", key, value)

    def get(self, key):
        return self._ask(b"get", key, self._ms(), keys=[key])

    def add(self, key, amount):
        return int(self._ask(b"add", key, str(int(amount))))

    def compare_set(self, key, expected, desired):
        return self._ask(b"cas", key, expected, desired)

    def wait(self, keys, timeout=None):
        self._ask(b"wait", self._ms(timeout), *keys, keys=keys)

    def check(self, keys):
        return self._ask(b"check", *keys) == b"1"

    def num_keys(self):
        return int(self._ask(b"num"))

    def delete_key(self, key):
        return self._ask(b"del", key) == b"1"


def serve(host, timeout, linger=2.0):
    """Rank 0: the server on host (an ephemeral port), and its client. At
    exit, rank 0 waits up to `linger` seconds for the other ranks' clients
    to leave."""
    server = _Server(host)
    store = JobStore(host, server.port, timeout, server)

    def at_exit():
        store.close()
        server.linger(linger)

    atexit.register(at_exit)
    return store
