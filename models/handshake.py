"""The connection handshake: request, accept, reject (docs/spec/security.md, MR-CONN-100..107).

:class:`Client` and :class:`Server` are transport-free state machines: they take and return
:class:`~metaroce.models.codec.Frame` objects (opcodes MR_CONN_REQ/ACC/REJ, header MRCH, payload
MRKX) and leave sockets and clocks to their caller. Time is the caller's ``now`` (seconds); the
client's retries are a count (``max_attempts``) of per-attempt timeouts.

On success both sides hold a :class:`Session`: QPNs, initial PSNs, path count, MTU, mode and the
master secret, from which :meth:`Session.channel` makes the connection's
:class:`~metaroce.models.security.SecureChannel`.
"""
from __future__ import annotations

import collections
import hashlib
import hmac
import secrets
from dataclasses import dataclass, replace

from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey, X25519PublicKey
from cryptography.hazmat.primitives.kdf.hkdf import HKDFExpand

from . import codec, wire
from .headers import TABLE
from .security import SecureChannel
from .wire import ConnFlag, Op, RejectReason

__all__ = ["Config", "Session", "Client", "Server", "HandshakeHost", "random_qpn", "random_psn",
           "HandshakeError"]

NONCE_CACHE = 4096          # MR-CONN-105: request nonces a server remembers
MIN_MTU = 256
_kx_pack = TABLE["mrkx"].packer(raw=("pubkey", "confirm"))
_kx_unpack = TABLE["mrkx"].unpacker(raw=("pubkey", "confirm"))
_ZERO_CONFIRM = bytes(16)


class HandshakeError(Exception):
    """The handshake failed: rejected (``reason`` a RejectReason) or timed out (``reason`` None)."""

    def __init__(self, message, reason=None):
        super().__init__(message)
        self.reason = reason


def _bits(rng, n):
    # MR-CONN-108: a simulation may pass a seeded random.Random; otherwise the OS's CSPRNG
    return secrets.randbits(n) if rng is None else rng.getrandbits(n)


def random_qpn(taken=(), rng=None):
    """MR-CONN-107: a random non-zero 24-bit QPN not in ``taken``."""
    while True:
        q = _bits(rng, 24)
        if q and q not in taken:
            return q


def random_psn(rng=None):
    """MR-CONN-107: a random 24-bit initial PSN."""
    return _bits(rng, 24)


@dataclass(frozen=True)
class Config:
    """One side's handshake settings. ``psk``: optional pre-shared key (MR-CONN-104)."""
    paths: int = 8
    mtu: int = 4096
    auth: bool = True
    encrypt: bool = False
    psk: bytes | None = None
    max_attempts: int = 5
    timeout: float = 0.2
    max_conns: int = 4096

    def __post_init__(self):
        if not 1 <= self.paths <= 255:
            raise ValueError(f"paths must be 1..255, not {self.paths}")
        if not MIN_MTU <= self.mtu < 1 << 16:
            raise ValueError(f"mtu must be {MIN_MTU}..65535, not {self.mtu}")
        if self.encrypt and not self.auth:
            raise ValueError("encryption needs authentication")
        if not 1 <= self.max_attempts <= 255:
            raise ValueError(f"max_attempts must be 1..255, not {self.max_attempts}")
        if not self.timeout > 0:
            raise ValueError(f"timeout must be > 0, not {self.timeout}")
        if self.psk is not None and len(self.psk) < 16:
            raise ValueError("a pre-shared key has at least 16 bytes")

    @property
    def flags(self):
        return (ConnFlag.AUTH if self.auth else 0) | (ConnFlag.ENCRYPT if self.encrypt else 0)


@dataclass(frozen=True)
class Session:
    """An established connection as one side sees it."""
    local_qpn: int
    peer_qpn: int
    local_psn: int
    peer_psn: int
    paths: int
    mtu: int
    auth: bool
    encrypt: bool
    master: bytes
    direction: int      # 0 client, 1 server (MR-SEC-120)

    def channel(self):
        """The connection's SecureChannel, or None for an unauthenticated connection."""
        if not self.auth:
            return None
        return SecureChannel(self.master, self.direction, self.paths, encrypt=self.encrypt)

    def receipt_key(self):
        """MR-SEC-153: the receipt key of an unauthenticated connection (None when authenticated:
        its tags cover ACKs and NAKs)."""
        if self.auth:
            return None
        from .security import receipt_key
        return receipt_key(self.master)


def _canon(h):
    # MR-CONN-103: the transcript leaves out the retry number, so every attempt has one transcript.
    return codec.encode_ext("mrch", replace(h, attempt=0))


def _keypair():
    priv = X25519PrivateKey.generate()
    pub = priv.public_key().public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
    return priv, pub


def _keys(priv, peer_pub, psk, transcript):
    """MR-CONN-103: (master, confirm key)."""
    shared = priv.exchange(X25519PublicKey.from_public_bytes(peer_pub))
    prk = hmac.new(psk or bytes(32), shared, hashlib.sha256).digest()     # HKDF-Extract (RFC 5869)
    master = HKDFExpand(hashes.SHA256(), 32, b"metaroce v1 master" + transcript).derive(prk)
    confirm_key = HKDFExpand(hashes.SHA256(), 32, b"metaroce v1 confirm" + transcript).derive(prk)
    return master, confirm_key


def _mac(key, data):
    return hmac.new(key, data, hashlib.sha256).digest()[:16]


def _frame(op, mrch, payload=b"", dest_qp=0):
    return codec.make(op, payload=payload, mrch=mrch, bth=codec.BTH(opcode=op, dest_qp=dest_qp, psn=0))


class Client:
    """The requesting side (MR-CONN-100..105).

    ``start(now)`` gives the request frame; ``poll(now)`` gives a resend when the attempt timed
    out (or raises :class:`HandshakeError` after ``max_attempts``); ``receive(frame, now)`` takes
    an accept or reject. ``session`` is set once established. ``ignored`` counts answers
    dropped for a bad confirm or a mismatch (MR-CONN-104/106).
    """

    def __init__(self, cfg, *, qpn=None, init_psn=None, rng=None):
        self.cfg = cfg
        self.qpn = random_qpn(rng=rng) if qpn is None else qpn
        self.psn = random_psn(rng) if init_psn is None else init_psn
        self._priv, self._pub = _keypair()
        self.nonce = _bits(rng, 128)
        self.attempt = 0
        self.deadline = None
        self.state = "idle"
        self.session = None
        self.reject = None
        self.ignored = collections.Counter()
        self._req = codec.MRCH(flags=cfg.flags, paths=cfg.paths, src_qpn=self.qpn, dst_qpn=0,
                               init_psn=self.psn, mtu=cfg.mtu, nonce=self.nonce)
        canon = _canon(self._req)
        confirm = _mac(cfg.psk, canon + self._pub) if cfg.psk else _ZERO_CONFIRM
        self._req_kx = _kx_pack(self._pub, confirm)

    def _request(self, now):
        self.deadline = now + self.cfg.timeout
        return _frame(Op.MR_CONN_REQ, replace(self._req, attempt=self.attempt), self._req_kx)

    def start(self, now):
        if self.state != "idle":
            raise RuntimeError("the handshake has already started")
        self.state = "requesting"
        return self._request(now)

    def poll(self, now):
        """A resend of the request when the attempt has timed out, else None (MR-CONN-105)."""
        if self.state != "requesting" or now < self.deadline:
            return None
        self.attempt += 1
        if self.attempt >= self.cfg.max_attempts:
            self.state = "failed"
            raise HandshakeError(f"handshake timed out after {self.attempt} attempts")
        return self._request(now)

    def receive(self, f, now):
        """Take an answer. Returns the Session once established; raises HandshakeError on a
        valid reject; ignores (counts) anything else."""
        h = f.mrch
        if self.state != "requesting" or h is None or h.dst_qpn != self.qpn:
            self.ignored["unexpected"] += 1
            return self.session
        if f.bth.opcode == Op.MR_CONN_REJ:
            if h.nonce != self.nonce:
                self.ignored["reject_mismatch"] += 1
                return None
            self.state = "rejected"
            try:
                self.reject = RejectReason(h.reason)
                why = self.reject.name.lower()
            except ValueError:
                self.reject = h.reason
                why = f"reason {h.reason:#04x}"
            raise HandshakeError(f"connection rejected: {why}", self.reject)
        if f.bth.opcode != Op.MR_CONN_ACC or len(f.payload) != wire.MRKX_LEN:
            self.ignored["malformed"] += 1
            return None
        if h.flags != self.cfg.flags or not 1 <= h.paths <= self.cfg.paths or \
                not MIN_MTU <= h.mtu <= self.cfg.mtu or h.src_qpn == 0:
            self.ignored["bad_params"] += 1
            return None
        pub, confirm = _kx_unpack(f.payload)
        transcript = hashlib.sha256(_canon(self._req) + self._pub + _canon(h) + pub).digest()
        try:
            master, confirm_key = _keys(self._priv, pub, self.cfg.psk, transcript)
        except ValueError:      # a low-order point: X25519 gives all zeros
            self.ignored["bad_confirm"] += 1
            return None
        if not hmac.compare_digest(_mac(confirm_key, transcript), confirm):
            self.ignored["bad_confirm"] += 1
            return None
        self.state = "established"
        self.session = Session(self.qpn, h.src_qpn, self.psn, h.init_psn, h.paths, h.mtu, self.cfg.auth,
                               self.cfg.encrypt, master, 0)
        return self.session


class _Entry:
    __slots__ = ("session", "accept", "open")

    def __init__(self, session, accept):
        self.session = session
        self.accept = accept
        self.open = True


class Server:
    """The accepting side (MR-CONN-100..107). ``receive(frame, now)`` returns the answer to
    send (accept or reject) or None; ``sessions`` maps the server's QPN to its Session, and
    ``new_sessions`` lists sessions established since the caller last cleared it. ``taken``: QPNs
    the server must not hand out (the host's other connections); ``rng``: MR-CONN-108."""

    def __init__(self, cfg, *, taken=(), rng=None):
        self.cfg = cfg
        self.taken = taken
        self.rng = rng
        self._nonces = collections.OrderedDict()     # request nonce -> _Entry, bounded
        self.sessions = {}
        self.new_sessions = []
        self.rejects = collections.Counter()

    def close(self, qpn):
        """End a connection: its request nonce stays remembered, so a replay is rejected."""
        s = self.sessions.pop(qpn, None)
        for e in self._nonces.values():
            if e.session is s:
                e.open = False

    def _reject(self, h, reason):
        self.rejects[reason.name.lower()] += 1
        r = codec.MRCH(flags=self.cfg.flags, reason=reason, paths=0, attempt=h.attempt, src_qpn=0,
                       dst_qpn=h.src_qpn, init_psn=0, mtu=0, nonce=h.nonce)
        return _frame(Op.MR_CONN_REJ, r, dest_qp=h.src_qpn)

    def receive(self, f, now):
        h = f.mrch
        if f.bth.opcode != Op.MR_CONN_REQ or h is None:
            return None
        seen = self._nonces.get(h.nonce)
        if seen is not None:
            if not seen.open:
                return self._reject(h, RejectReason.REPLAY)
            acc = seen.accept
            return replace(acc, mrch=replace(acc.mrch, attempt=h.attempt))     # a retransmission
        if len(f.payload) != wire.MRKX_LEN:
            return self._reject(h, RejectReason.BAD_PARAMS)
        pub, confirm = _kx_unpack(f.payload)
        cfg = self.cfg
        if cfg.psk is not None and not hmac.compare_digest(_mac(cfg.psk, _canon(h) + pub), confirm):
            return self._reject(h, RejectReason.BAD_CONFIRM)
        if h.flags != cfg.flags:
            return self._reject(h, RejectReason.AUTH_MISMATCH)
        if h.paths == 0 or h.mtu < MIN_MTU or h.src_qpn == 0:
            return self._reject(h, RejectReason.BAD_PARAMS)
        if len(self.sessions) >= cfg.max_conns:
            return self._reject(h, RejectReason.NO_RESOURCES)
        priv, my_pub = _keypair()
        rng = self.rng
        qpn = random_qpn(self.sessions, rng)
        while qpn in self.taken:
            qpn = random_qpn(self.sessions, rng)
        acc = codec.MRCH(flags=cfg.flags, paths=min(h.paths, cfg.paths), attempt=h.attempt,
                         src_qpn=qpn, dst_qpn=h.src_qpn, init_psn=random_psn(rng),
                         mtu=min(h.mtu, cfg.mtu), nonce=_bits(rng, 128))
        transcript = hashlib.sha256(_canon(h) + pub + _canon(acc) + my_pub).digest()
        try:
            master, confirm_key = _keys(priv, pub, cfg.psk, transcript)
        except ValueError:
            return self._reject(h, RejectReason.BAD_PARAMS)
        frame = _frame(Op.MR_CONN_ACC, acc, _kx_pack(my_pub, _mac(confirm_key, transcript)), dest_qp=h.src_qpn)
        s = Session(acc.src_qpn, h.src_qpn, acc.init_psn, h.init_psn, acc.paths, acc.mtu, cfg.auth, cfg.encrypt,
                    master, 1)
        self.sessions[s.local_qpn] = s
        self.new_sessions.append(s)
        self._nonces[h.nonce] = _Entry(s, frame)
        while len(self._nonces) > NONCE_CACHE:
            self._nonces.popitem(last=False)
        return frame


class _Taken:
    """QPNs in use on a host: its connections and its pending client handshakes."""

    def __init__(self, *tables):
        self.tables = tables

    def __contains__(self, qpn):
        return any(qpn in t for t in self.tables)


class HandshakeHost:
    """An endpoint that opens its connections with the handshake on the wire (MR-CONN-108).

    It has the endpoint contract's transport side (``next_packet``, ``next_wakeup``,
    ``receive``, ``poll_cq``; everything else is the endpoint's), so it runs on the simulated
    fabric or the loopback pair in place of the endpoint. :meth:`connect` starts a client
    handshake toward a peer address; with ``listen`` the host answers requests as a server. The
    request, accept and reject travel as frames (IP addresses and a UDP source port of their own)
    and meet the fabric's loss like any frame; the client resends after ``timeout`` seconds, at
    most ``max_attempts`` times. A session opens the endpoint's connection with the handshake's
    QPNs, initial PSNs and path count (MR-CONN-107) and, with ``auth``, its authentication
    channel (an :class:`~metaroce.models.security.AuthenticatedHost` seals and opens every other
    frame). ``connected`` lists ``(now, role, session, connection)``, ``failed`` lists
    ``(now, peer address, HandshakeError)``.
    """

    def __init__(self, ep, *, auth=True, encrypt=False, psk=None, listen=True, streams=1,
                 timeout=20e-6, max_attempts=8, rng=None):
        from .security import AuthenticatedHost
        self.ep = ep
        self._cfg = Config(paths=min(255, ep.max_paths), mtu=ep.mtu, auth=auth, encrypt=encrypt,
                           psk=psk, max_attempts=max_attempts, timeout=timeout)
        self.guard = AuthenticatedHost(ep) if auth else None
        self._clients = {}          # client QPN -> [Client, peer address, streams, callback]
        self.server = Server(self._cfg, taken=_Taken(ep._conns, self._clients), rng=rng) if listen else None
        self.streams = streams
        self.rng = rng
        self._starting = []
        self._out = collections.deque()
        self.connected = []
        self.failed = []

    def __getattr__(self, name):
        return getattr(self.ep, name)

    def connect(self, peer_addr, *, paths=8, streams=1, on_connected=None):
        """Start a handshake toward ``peer_addr`` when the host next runs; ``on_connected(conn)``
        is called with the endpoint's new connection. Returns the client QPN."""
        cfg = replace(self._cfg, paths=paths)
        qpn = random_qpn(_Taken(self.ep._conns, self._clients), self.rng)
        c = Client(cfg, qpn=qpn, rng=self.rng)
        self._clients[qpn] = [c, peer_addr, streams, on_connected]
        self._starting.append(c)
        return qpn

    def _send(self, f, peer_addr, qpn):
        f.ip = codec.IP(src=self.ep.addr, dst=peer_addr, ecn=0)
        f.udp = codec.UDP(sport=wire.ENTROPY_BASE | (qpn & wire.ENTROPY_MASK))
        self._out.append(f)

    def _open(self, s, peer_addr, streams, now, role):
        conn = self.ep.connect(s.local_qpn, peer_addr, s.peer_qpn, paths=s.paths, streams=streams,
                               init_psn=s.local_psn, peer_init_psn=s.peer_psn,
                               receipt_key=s.receipt_key())
        if self.guard is not None:
            self.guard.add(s.local_qpn, s.peer_qpn, s.channel())
        self.connected.append((now, role, s, conn))
        return conn

    def _handshake_frames(self, now):
        for c in self._starting:
            self._send(c.start(now), self._clients[c.qpn][1], c.qpn)
        self._starting.clear()
        for qpn, entry in list(self._clients.items()):
            c = entry[0]
            try:
                f = c.poll(now)
            except HandshakeError as e:
                del self._clients[qpn]
                self.failed.append((now, entry[1], e))
                continue
            if f is not None:
                self._send(f, entry[1], qpn)

    def next_packet(self, now):
        self._handshake_frames(now)
        if self._out:
            return self._out.popleft()
        return (self.guard or self.ep).next_packet(now)

    def next_wakeup(self, now):
        if self._out or self._starting:
            return now
        t = self.ep.next_wakeup(now)
        for c, *_ in self._clients.values():
            if c.state == "requesting" and (t is None or c.deadline < t):
                t = c.deadline
        return t

    def receive(self, f, now):
        op = f.bth.opcode
        if op == Op.MR_CONN_REQ:
            if self.server is None:
                return
            answer = self.server.receive(f, now)
            for s in self.server.new_sessions:
                self._open(s, f.ip.src, self.streams, now, "server")
            self.server.new_sessions.clear()
            if answer is not None:
                self._send(answer, f.ip.src, f.mrch.src_qpn if f.mrch else 0)
        elif op in wire.CONN_OPS:
            entry = self._clients.get(f.bth.dest_qp)
            if entry is None or f.ip.src != entry[1]:
                return
            c = entry[0]
            try:
                s = c.receive(f, now)
            except HandshakeError as e:
                del self._clients[f.bth.dest_qp]
                self.failed.append((now, entry[1], e))
                return
            if s is not None:
                del self._clients[f.bth.dest_qp]
                conn = self._open(s, entry[1], entry[2], now, "client")
                if entry[3] is not None:
                    entry[3](conn)
        elif self.guard is not None:
            self.guard.receive(f, now)
        else:
            self.ep.receive(f, now)
