"""Hostile traffic at a running transfer (docs/spec/security.md chapter 5; issue 10 item 3).

Two harnesses, both bounded in count and time:

- the simulated fabric (models/loopback.py): an on-path attacker sees every frame as it is sent
  and injects forged frames right after it (at most ``CAP`` frames); deterministic, so the
  attacked transfer's completion time in simulated seconds is compared with the unattacked one;
- loopback UDP (127.0.0.1 only): a hostile socket sends forged, replayed and random datagrams at
  both ports of a running ``metaroce transfer`` (at most ``UDP_CAP`` datagrams).

With authentication on, every attack class leaves the transfer intact (memory equal, one
successful completion) and costs at most 20% of its simulated speed. With authentication off,
the receiver must never write outside a registered region and the sender must never report
success for bytes that were not placed (MR-SEC-150).
"""
import copy
import os
import random
import socket
from dataclasses import replace

import pytest

from metaroce.models import codec, wire
from metaroce.models.codec import MRAH, MRDH, MRNH, RETH, make
from metaroce.models.endpoint import Endpoint, Status
from metaroce.models.loopback import LoopFaults, Loopback
from metaroce.models.security import AuthenticatedHost, SecureChannel
from metaroce.models.wire import MrahFlag, NakReason, Op

A, B = "10.0.0.1", "10.0.0.2"
QA, QB = 10, 20                     # the attacker is on path: it sees the QPNs
N = 256 << 10
MTU = 1024
PATHS = 4
CAP = 600                           # forged frames per attack, at most
UNTIL = 0.02                        # simulated seconds, at most


class Attacker:
    """An on-path attacker in the simulated fabric: ``observe`` sees each frame sent (as sealed,
    in authenticated mode) and may answer with forged frames delivered right after it."""

    def __init__(self, kind, seed=1, old=None):
        self.kind = kind
        self.rng = random.Random(seed)
        self.sent = 0
        self.lb = None
        self.old = old or []            # frames captured from an older session
        self.captured = []              # frames of this session (for replays)
        self.high = {}                  # path -> one past the newest PSN seen sent
        self.wrong = SecureChannel(os.urandom(32), 0, PATHS)
        self.wrong_b = SecureChannel(os.urandom(32), 1, PATHS)

    def inject(self, to, frame, delay=1e-7):
        if self.sent >= CAP:
            return
        self.sent += 1
        self.lb._at(self.lb.now + delay, 2, to, frame)

    def observe(self, direction, f, now):
        self.captured.append((direction, copy.deepcopy(f)))
        k = self.kind
        inner = self.inner(f)
        if inner is None:
            return False
        if direction == 0 and inner.mrdh is not None:       # data, a -> b
            o = inner
            self.high[o.mrdh.path] = (o.bth.psn + 1) & 0xFFFFFF
            if k == "extend_ack" and f.bth.opcode != Op.MR_SEC and self.rng.random() < 0.1:
                # On path it also drops, where its forgeries can work (dropping alone is not
                # defended in any mode, MR-SEC-103): the extended ACKs cover the holes.
                return True
            if k == "forged_ack":
                # Alternately: acknowledge exactly what was sent (before it arrives), and claim
                # PSNs not yet sent (the endpoint's MR-ERR-010 check drops that one).
                for sack in (0, (1 << 256) - 1):
                    self.inject(0, self.spoof(make(Op.MR_ACK, mrah=MRAH(path=o.mrdh.path, cum_psn=(o.bth.psn + 1),
                                                                        sack=sack, trigger_psn=o.bth.psn)),
                                              QA, B, A), 5e-8)
            elif k == "forged_nak":
                self.inject(0, self.spoof(make(Op.MR_NAK, mrnh=MRNH(path=o.mrdh.path, reason=NakReason.ACCESS,
                                                                    psn=o.bth.psn)), QA, B, A))
            elif k in ("in_window", "oob_write"):
                g = copy.deepcopy(o)
                g.bth = replace(g.bth, psn=(o.bth.psn + 1 + self.rng.randrange(4)) & 0xFFFFFF)
                g.payload = bytes(self.rng.randrange(256) for _ in range(len(o.payload)))
                if k == "oob_write":
                    g.reth = replace(g.reth, va=N + self.rng.randrange(1 << 20))
                self.inject(1, g, 5e-8)
            elif k == "flood":
                for _ in range(4):
                    self.inject(self.rng.randrange(2), self.random_frame())
        if direction == 1 and inner.mrah is not None:       # ACK, b -> a
            if k == "forged_hint":
                self.inject(0, self.spoof(make(Op.MR_ACK, mrah=replace(inner.mrah, rate_mbps=1)), QA, B, A))
            elif k == "extend_ack" and inner.mrah.path in self.high:
                # A copy of the real ACK (its trigger and proof of receipt) that acknowledges
                # everything sent on the path, delivered before the real one.
                g = copy.deepcopy(inner)
                g.mrah = replace(g.mrah, cum_psn=self.high[inner.mrah.path], sack=0)
                g.bth = replace(g.bth, opcode=Op.MR_ACK)
                g.mrsec = None
                self.inject(0, g, 5e-8)
            elif k == "forged_ece":
                self.inject(0, self.spoof(make(Op.MR_ACK, mrah=replace(inner.mrah, flags=MrahFlag.ECE,
                                                                       ce_count=0xFFFF)), QA, B, A))
        if k == "replay_session" and self.old and self.rng.random() < 0.5:
            d, g = self.old.pop(0)
            self.inject(1 - d, g)
        if k == "replay_this" and len(self.captured) > 2:
            d, g = self.captured[self.rng.randrange(len(self.captured) - 1)]
            self.inject(1 - d, copy.deepcopy(g))
        if k == "wrong_keys":
            ch = self.wrong if direction == 0 else self.wrong_b
            self.inject(1 - direction, ch.seal(copy.deepcopy(inner)))
        return False

    def inner(self, f):
        """The frame as the attacker understands it: sealed frames are readable in authenticated
        mode (only the payload may be hidden), so it reads the headers from MR_SEC."""
        if f.bth.opcode != Op.MR_SEC:
            return f
        g = copy.copy(f)
        op = Op(f.mrsec.next_op)
        g.bth = replace(f.bth, opcode=op)
        off = 0
        for name in wire.HEADERS[op]:
            n = wire.HEADER_LEN[name]
            if name != "cnp":
                setattr(g, name, codec.decode_ext(name, f.payload[off:off + n]))
            off += n
        g.payload = f.payload[off:len(f.payload) - wire.TAG_LEN]
        g.mrsec = None
        return g

    @staticmethod
    def spoof(f, qpn, src, dst):
        f.bth = replace(f.bth, dest_qp=qpn)
        f.ip = codec.IP(src=src, dst=dst)
        return f

    def random_frame(self):
        r = self.rng
        kind = r.randrange(4)
        if kind == 0:
            f = make(Op.MR_WRITE, payload=r.randbytes(r.randrange(1, MTU)),
                     mrdh=MRDH(path=r.randrange(256), stream=r.randrange(4), msg=r.randrange(4),
                               offset=r.randrange(N), msg_len=r.randrange(1, 2 * N)),
                     reth=RETH(r.getrandbits(64), r.getrandbits(32), r.randrange(N)))
            return self.spoof(f, QB if r.random() < 0.9 else r.getrandbits(24), A, B)
        if kind == 1:
            f = make(Op.MR_ACK, mrah=MRAH(path=r.randrange(8), cum_psn=r.getrandbits(24), rate_mbps=r.getrandbits(32),
                                          sack=r.getrandbits(256), flags=r.getrandbits(4)))
        elif kind == 2:
            f = make(Op.MR_NAK, mrnh=MRNH(path=r.randrange(8), reason=r.randrange(1, 9), psn=r.getrandbits(24)))
        else:
            f = make(Op.MR_SEC, payload=r.randbytes(r.randrange(16, 200)),
                     mrsec=codec.MRSEC(next_op=r.choice([0xC0, 0xC4, 0xC5]), path=r.randrange(8),
                                       epoch=r.randrange(3), seq=r.getrandbits(16)))
        return self.spoof(f, QA if r.random() < 0.9 else r.getrandbits(24), B, A)


def session(auth, attacker=None, seed=1):
    """One write of N bytes from a to b; returns (src, dst, canary, lb, hosts). Without
    authentication the connection has a receipt key, as the handshake gives it (MR-SEC-153)."""
    kw = dict(mtu=MTU, line_rate_bps=100e9, base_rtt=4e-6)
    # MR-CONN-107, MR-SEC-152: every session has its own random initial PSNs (as the handshake
    # draws them) and R_Keys; drawn from the seed so that the run is reproducible.
    rng = random.Random(seed)
    a, b = Endpoint(A, rng=rng, **kw), Endpoint(B, rng=rng, **kw)
    psn_a, psn_b = rng.getrandbits(24), rng.getrandbits(24)
    key = None if auth else rng.randbytes(16)
    ca = a.connect(QA, B, QB, paths=PATHS, init_psn=psn_a, peer_init_psn=psn_b, receipt_key=key)
    b.connect(QB, A, QA, paths=PATHS, init_psn=psn_b, peer_init_psn=psn_a, receipt_key=key)
    src = bytearray(random.Random(seed).randbytes(N))
    dst = bytearray(N)
    canary = bytearray(b"\xA5" * 8192)          # a registered region nobody writes to
    b.reg_mr(canary)
    ca.post_write(0, a.reg_mr(src), 0, N, 0, b.reg_mr(dst), wr_id=5)
    # The sender's claim is judged when it is made: at each successful completion, were all the
    # bytes in place?
    placed_at_success = []
    poll = a.poll_cq

    def poll_cq(*args):
        cq = poll(*args)
        placed_at_success.extend(dst == src for c in cq if c.status == Status.SUCCESS)
        return cq

    a.poll_cq = poll_cq
    if auth:
        m = random.Random(seed).randbytes(32)
        a = AuthenticatedHost(a, {QA: (QB, SecureChannel(m, 0, PATHS))})
        b = AuthenticatedHost(b, {QB: (QA, SecureChannel(m, 1, PATHS))})
    faults = [LoopFaults(), LoopFaults()]
    if attacker is not None:
        faults[0].drop_if = lambda f, now: attacker.observe(0, f, now)
        faults[1].drop_if = lambda f, now: attacker.observe(1, f, now)
    lb = Loopback(a, b, faults_ab=faults[0], faults_ba=faults[1], delay=1.5e-6, seed=seed)
    if attacker is not None:
        attacker.lb = lb
    lb.run(until=UNTIL)
    lb.placed_at_success = placed_at_success
    return src, dst, canary, lb, (a, b)


def old_session(auth):
    """Every frame of an earlier session (other data, other keys) for the replay attack."""
    rec = Attacker("record")
    session(auth, rec, seed=99)
    return rec.captured


ATTACKS = ["forged_ack", "extend_ack", "forged_nak", "forged_hint", "forged_ece", "in_window",
           "oob_write", "replay_session", "replay_this", "wrong_keys", "flood"]

_BASE = {}


def baseline(auth):
    if auth not in _BASE:
        src, dst, _, lb, _ = session(auth)
        assert dst == src
        _BASE[auth] = lb.last_completion
    return _BASE[auth]


@pytest.mark.parametrize("kind", ATTACKS)
def test_authenticated_transfer_survives(kind):
    """MR-SEC-102, MR-SEC-121, MR-SEC-122, MR-SEC-140, MR-SEC-141: with authentication on, each
    attack class leaves the transfer intact (memory equal, one successful completion, the canary
    region untouched), every forged frame is dropped and counted before the endpoint, and the
    transfer keeps at least 80% of its unattacked speed (simulated time)."""
    old = old_session(True) if kind == "replay_session" else None
    att = Attacker(kind, old=old)
    src, dst, canary, lb, (a, b) = session(True, att)
    assert att.sent > 0
    assert dst == src and canary == b"\xA5" * 8192
    assert [(c.wr_id, c.status) for c in lb.completions[0]] == [(5, Status.SUCCESS)]
    assert lb.placed_at_success == [True]
    drops = a.drops + b.drops
    assert sum(drops.values()) >= att.sent - (att.sent // 4 if kind == "flood" else 0)
    expected = {"forged_ack": "unauthenticated", "forged_nak": "unauthenticated", "in_window": "unauthenticated",
                "replay_session": "bad_tag", "replay_this": "replay", "wrong_keys": "bad_tag"}
    if kind in expected:
        assert drops[expected[kind]] > 0, drops
    # The endpoints saw no forged frame: nothing NAKed, nothing dropped inside them.
    assert a.ep.stats.get("naks_received", 0) == 0 and b.ep.stats.get("bad_ack", 0) == 0
    ratio = baseline(True) / lb.last_completion
    assert ratio >= 0.8, ratio


# With authentication off (the RoCEv2-compatible mode), the proof of receipt (MR-SEC-153..156)
# refuses ACKs forged for PSNs that have not arrived ("forged_ack": their proof cannot be
# computed without the receipt key) and copies of real ACKs extended to acknowledge more
# ("extend_ack": the proof binds every field of the ACK). Replaying an older session is stopped
# by MR-CONN-107 and MR-SEC-152: its PSNs and R_Keys are not the new session's. What stays
# undefended (MR-SEC-156): the content of data an on-path attacker injects first ("in_window"
# places its bytes, inside the registered region), and a man in the middle of the handshake.
@pytest.mark.parametrize("kind", [k for k in ATTACKS if k != "wrong_keys"])
def test_unauthenticated_limits(kind):
    """MR-SEC-150, MR-SEC-151, MR-SEC-001: with authentication off, whatever the attack, the
    receiver writes nowhere outside its registered regions (the buffer keeps its size, the other
    region is untouched) and the sender never reports success for a write whose bytes were not
    all placed when it reported it."""
    old = old_session(False) if kind == "replay_session" else None
    att = Attacker(kind, old=old)
    src, dst, canary, lb, (a, b) = session(False, att)
    assert att.sent > 0
    assert len(dst) == N and canary == b"\xA5" * 8192
    assert all(lb.placed_at_success), "success reported for bytes that were not placed"
    if kind in ("forged_ack", "extend_ack"):
        ep = getattr(a, "ep", a)
        assert ep.stats["drop_bad_proof"] > 0          # MR-SEC-154: refused by the proof


# ---------------------------------------------------------------------------------------------
# Loopback UDP: a hostile local process against a running `metaroce transfer`

UDP_CAP = 1500          # hostile datagrams per test, at most
UDP_BYTES = 2 << 20


class _Capture:
    """Stands in for the sender's pcap writer: the attacker sniffs every datagram (MR-SEC-101 3)."""

    def __init__(self):
        self.frames = []

    def write(self, frame_bytes, t):
        if len(self.frames) < 4000:
            self.frames.append(bytes(frame_bytes))


class UdpAttacker:
    def __init__(self, kind, seed=2):
        from metaroce.sim.udp import LOOPBACK
        self.kind = kind
        self.rng = random.Random(seed)
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.sock.bind((LOOPBACK, 0))
        self.sock.setblocking(False)
        self.port = self.sock.getsockname()[1]
        self.sent = 0
        self.cap = None
        self.wrong = SecureChannel(os.urandom(32), 0, 8)
        self.wrong._tx_seq = [1 << 40] * 8          # fresh sequence numbers: the tag decides

    def close(self):
        self.sock.close()

    def send(self, frame, to):
        from metaroce.sim.udp import LOOPBACK, wire_payload
        data = frame if isinstance(frame, bytes) else wire_payload(frame, self.port)
        try:
            self.sock.sendto(data, (LOOPBACK, to))
            self.sent += 1
        except OSError:
            pass

    def __call__(self, host):
        if self.cap is None:
            self.cap = host.pcap = _Capture()
        if self.sent >= UDP_CAP or len(self.cap.frames) < 4:
            return
        r = self.rng
        seen = []
        for b in r.sample(self.cap.frames[-64:], min(4, len(self.cap.frames))):
            try:
                seen.append(codec.decode(b))
            except codec.DecodeError:
                pass            # the sniffer also sees our own random datagrams
        for f in seen:
            if f.bth.opcode in wire.CONN_OPS:
                continue
            inner = Attacker.inner(None, f) if f.bth.opcode == Op.MR_SEC else f
            if self.kind == "forged_control":
                if inner.mrdh is not None:      # the sender's data frame: answer as the receiver
                    self.send(make(Op.MR_ACK, mrah=MRAH(path=inner.mrdh.path, cum_psn=inner.bth.psn + 1),
                                   bth=codec.BTH(dest_qp=inner.bth.dest_qp)), host.port)
                    self.send(make(Op.MR_NAK, mrnh=MRNH(path=inner.mrdh.path, reason=NakReason.ACCESS,
                                                        psn=inner.bth.psn)), host.port)
                elif inner.mrah is not None:
                    self.send(make(Op.MR_ACK, mrah=replace(inner.mrah, rate_mbps=1, flags=MrahFlag.ECE),
                                   bth=replace(inner.bth, opcode=Op.MR_ACK)), host.port)
            elif self.kind == "in_window" and inner.mrdh is not None:
                g = copy.deepcopy(inner)
                g.bth = replace(g.bth, psn=(g.bth.psn + 1) & 0xFFFFFF)
                g.payload = r.randbytes(len(g.payload))
                self.send(g, host.peer_port)
                g.reth = replace(g.reth, va=UDP_BYTES + 4096)      # and out of bounds
                self.send(g, host.peer_port)
            elif self.kind == "replay":
                f.icrc = None       # recomputed for the attacker's own port
                self.send(f, host.peer_port if inner.mrdh is not None else host.port)
            elif self.kind == "wrong_keys":
                self.send(self.wrong.seal(copy.deepcopy(inner)), host.peer_port if inner.mrdh else host.port)
            elif self.kind == "flood":
                for _ in range(8):
                    self.send(r.randbytes(r.randrange(1, 300)), r.choice((host.port, host.peer_port)))
                g = copy.deepcopy(f)
                g.payload = r.randbytes(len(g.payload))          # a sealed frame with random bytes
                if g.mrsec is not None:
                    g.mrsec = replace(g.mrsec, seq=g.mrsec.seq + r.randrange(1, 512))
                g.icrc = None
                self.send(g, r.choice((host.port, host.peer_port)))


@pytest.mark.parametrize("kind, where, reason", [
    ("forged_control", "sender", "unauthenticated"),
    ("in_window", "receiver", "unauthenticated"),
    ("replay", "receiver", "replay"),
    ("wrong_keys", "receiver", "bad_tag"),
    ("flood", "receiver", "bad_tag"),
])
def test_udp_transfer_under_attack(kind, where, reason):
    """MR-SEC-101, MR-SEC-102, MR-SEC-140, MR-UDP-001: a local process on 127.0.0.1 sniffs a
    running authenticated `metaroce transfer` and sends it forged ACKs, NAKs, rate hints and ECE,
    in-window and out-of-bounds writes, replays, frames under wrong keys and random datagrams
    (bounded): the transfer completes with the right bytes, and the forgeries are counted drops."""
    from metaroce.commands.transfer import transfer
    att = UdpAttacker(kind)
    try:
        r = transfer(UDP_BYTES, paths=4, seed=5, timeout=120, attack=att)
    finally:
        att.close()
    assert att.sent > 20, att.sent
    assert r["ok"] and r["sha256_match"] and r["status"] == "SUCCESS" and not r["timed_out"]
    drops = r[where]["auth_drops"]
    assert drops.get(reason, 0) > 0, (r["sender"]["auth_drops"], r["receiver"]["auth_drops"])
    ep = r["sender"]["endpoint"]
    assert ep.get("naks_received", 0) == 0 and ep.get("drop_bad_ack", 0) == 0
    if kind == "flood":
        assert r["receiver"]["decode_drops"] > 0 and r["sender"]["decode_drops"] > 0
