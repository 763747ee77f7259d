"""Proof of receipt in ACKs and NAKs of unauthenticated connections (docs/spec/security.md
MR-SEC-153..156; issue 10, authentication off)."""
import os
import random
from dataclasses import replace

import pytest

from metaroce.models import codec
from metaroce.models.codec import MRAH, MRNH, make
from metaroce.models.endpoint import Endpoint, Status
from metaroce.models.loopback import LoopFaults, Loopback
from metaroce.models.security import (PROOF_ACK, PROOF_NAK, join_proof, receipt_key, receipt_proof,
                                      split_proof)
from metaroce.models.wire import MR_ANNOUNCE, NakReason, Op

A, B = "10.0.0.1", "10.0.0.2"
QA, QB = 10, 20
N = 512 << 10
PATHS = 4


def _session(key, seed=1):
    kw = dict(mtu=1024, line_rate_bps=100e9, base_rtt=4e-6)
    rng = random.Random(seed)
    a, b = Endpoint(A, rng=rng, **kw), Endpoint(B, rng=rng, **kw)
    psn_a, psn_b = rng.getrandbits(24), rng.getrandbits(24)
    ca = a.connect(QA, B, QB, paths=PATHS, init_psn=psn_a, peer_init_psn=psn_b, receipt_key=key)
    cb = b.connect(QB, A, QA, paths=PATHS, init_psn=psn_b, peer_init_psn=psn_a, receipt_key=key)
    src = bytearray(random.Random(seed).randbytes(N))
    dst = bytearray(N)
    ka, kb = a.reg_mr(src), b.reg_mr(dst)
    return a, b, ca, cb, ka, kb, src, dst


class BlindAttacker:
    """Forges ACKs and NAKs at the sender without seeing a single frame. It is given more than a
    blind attacker could guess: the connection id, the addresses and, at every moment, each
    path's exact unresolved PSN range. What it cannot have is the receipt key."""

    def __init__(self, conn, rng, cap=3000):
        self.conn = conn
        self.rng = rng
        self.cap = cap
        self.acks = self.naks = 0

    def forge(self, now):
        """Forged frames for ``now``: an ACK that acknowledges every PSN in flight on a path
        (trigger its newest), and a fatal NAK for that PSN, each with a guessed proof."""
        out = []
        for p in self.conn.paths:
            if p.next_psn == p.floor or self.acks >= self.cap:
                continue
            newest = (p.next_psn - 1) & 0xFFFFFF
            bth_psn, trig = split_proof(self.rng.getrandbits(32), newest)
            f = make(Op.MR_ACK, mrah=MRAH(path=p.idx, cum_psn=p.next_psn, trigger_psn=trig),
                     bth=codec.BTH(opcode=Op.MR_ACK, dest_qp=QA, psn=bth_psn))
            out.append(f)
            self.acks += 1
            bth_psn, psn = split_proof(self.rng.getrandbits(32), newest)
            out.append(make(Op.MR_NAK, mrnh=MRNH(path=p.idx, reason=NakReason.ACCESS, psn=psn),
                            bth=codec.BTH(opcode=Op.MR_NAK, dest_qp=QA, psn=bth_psn)))
            self.naks += 1
        for f in out:
            f.ip = codec.IP(src=B, dst=A)
        return out


def _attacked_run(key):
    a, b, ca, cb, ka, kb, src, dst = _session(key)
    att = BlindAttacker(ca, random.Random(77))
    placed_at_success = []
    poll = a.poll_cq

    def poll_cq(*args):
        cq = poll(*args)
        placed_at_success.extend(dst == src for c in cq if c.status == Status.SUCCESS)
        return cq
    a.poll_cq = poll_cq
    lb = None

    def tick(f, now):       # a clock for the attacker: it never looks at the frame
        for g in att.forge(now):
            lb._at(now + 1e-8, 2, 0, g)
        return False
    lb = Loopback(a, b, delay=1.5e-6, faults_ab=LoopFaults(drop_if=tick), seed=3)
    ca.post_write(0, ka, 0, N, 0, kb, wr_id=1)
    lb.run(until=0.02)
    return a, lb, att, placed_at_success, src, dst


def test_blind_forged_acks_and_naks_are_refused():
    """MR-SEC-154, MR-SEC-155, MR-SEC-150: with authentication off and a receipt key, a blind
    attacker that knows the connection id and every PSN in flight forges thousands of ACKs that
    acknowledge them and fatal NAKs for them: every one is dropped (bad_proof), the sender never
    reports success for bytes that were not placed, and the write completes with every byte."""
    a, lb, att, placed, src, dst = _attacked_run(os.urandom(16))
    assert att.acks > 500 and att.naks > 500
    assert a.stats["drop_bad_proof"] == att.acks + att.naks
    assert a.stats["naks_received"] == 0
    assert [(c.wr_id, c.status) for c in lb.completions[0]] == [(1, Status.SUCCESS)]
    assert placed == [True] and dst == src


def test_without_proof_the_blind_attacker_wins():
    """MR-SEC-155 (what the proof is for): the same blind attacker against a connection without a
    receipt key makes the sender report SUCCESS before the write's bytes are placed."""
    a, lb, att, placed, src, dst = _attacked_run(None)
    assert a.stats["drop_bad_proof"] == 0
    c, = lb.completions[0]
    assert c.status == Status.SUCCESS and placed == [False]


def test_proof_format_and_check():
    """MR-SEC-153, MR-SEC-154, MR-WIRE-073, MR-WIRE-074: the proof of an ACK is keyed BLAKE2s over
    (kind, the data sender's connection id, path, trigger PSN, then the ACK's flags, CE count,
    cum_psn, rate hint and SACK); its low 24 bits ride in the ACK's BTH PSN and its high 8 bits in
    the high byte of trigger_psn. A real ACK passes; the same ACK with one proof bit flipped, with
    the proof of another PSN, with the NAK proof of its own PSN, with a proof of the trigger alone,
    or with its proof and any other field changed, is dropped and changes nothing."""
    key = os.urandom(16)
    a, b, ca, cb, ka, kb, src, dst = _session(key)
    ca.post_write(0, ka, 0, 1024, 0, kb, wr_id=1)
    p = ca.paths[ca.rr]
    f = a.next_packet(0.0)
    if f.bth.opcode == MR_ANNOUNCE:     # MR-CC-021: not delivered here (its answer proves nothing)
        f = a.next_packet(0.0)
    b.receive(f, 1e-6)
    ack = b.next_packet(1e-6)
    proof, trig = join_proof(ack.bth.psn, ack.mrah.trigger_psn)
    assert trig == f.bth.psn and proof == receipt_proof(key, PROOF_ACK, QA, p.idx, f.bth.psn, ack.mrah)
    assert split_proof(proof, trig) == (ack.bth.psn, ack.mrah.trigger_psn)
    assert codec.decode(codec.encode(ack)).bth.psn == ack.bth.psn
    bad = []
    for wrong in (proof ^ 1 << 31, proof ^ 1, receipt_proof(key, PROOF_ACK, QA, p.idx, f.bth.psn + 1, ack.mrah),
                  receipt_proof(key, PROOF_NAK, QA, p.idx, f.bth.psn),
                  receipt_proof(key, PROOF_ACK, QA, p.idx, f.bth.psn)):
        bth_psn, t = split_proof(wrong, trig)
        bad.append(replace(ack, bth=replace(ack.bth, psn=bth_psn), mrah=replace(ack.mrah, trigger_psn=t)))
    # the real proof on an ACK with any other field changed (MR-SEC-153: the proof binds them all)
    for field, value in (("cum_psn", ack.mrah.cum_psn + 1), ("sack", ack.mrah.sack ^ 1 << 200),
                         ("rate_mbps", 1), ("ce_count", 0xFFFF), ("flags", ack.mrah.flags ^ 1)):
        bad.append(replace(ack, mrah=replace(ack.mrah, **{field: value})))
    for g in bad:
        a.receive(g, 2e-6)
    # (a cum_psn or SACK moved past the one PSN sent is refused even earlier, MR-SEC-151)
    assert a.stats["drop_bad_proof"] + a.stats["drop_bad_ack"] == len(bad) == 10
    assert a.stats["drop_bad_proof"] >= 8 and not a.poll_cq() and p.floor == f.bth.psn
    a.receive(ack, 2e-6)
    assert [(c.wr_id, c.status) for c in a.poll_cq()] == [(1, Status.SUCCESS)]
    assert receipt_proof(key, PROOF_ACK, QA, 1, 5) != receipt_proof(key, PROOF_ACK, QB, 1, 5)
    assert receipt_key(bytes(32)) == receipt_key(bytes(32)) != receipt_key(b"\x01" * 32)


def test_real_naks_carry_a_proof():
    """MR-SEC-153, MR-SEC-154: a NAK from the real receiver (a write with an unknown key) carries a
    valid proof and fails the write; lossy, reordered traffic with a receipt key still delivers
    every byte (a legitimate ACK whose trigger the sender already resolved is dropped like a
    lost ACK, and the next ACK repairs it)."""
    a, b, ca, cb, ka, kb, src, dst = _session(os.urandom(16))
    ca.post_write(0, ka, 0, N, 0, kb, wr_id=1)
    ca.post_write(0, ka, 0, 4096, 0, kb ^ 3, wr_id=2)
    lb = Loopback(a, b, delay=1.5e-6, faults=LoopFaults(loss=0.02, ctrl_loss=0.02, reorder=0.01,
                                                         duplicate=0.01), seed=2)
    lb.run(until=0.05)
    assert [(c.wr_id, c.status) for c in lb.completions[0]] == [(1, Status.SUCCESS),
                                                                (2, Status.REM_ACCESS_ERR)]
    assert dst == src and a.stats["nak_access"] >= 1


def test_handshake_gives_unauthenticated_connections_a_receipt_key():
    """MR-SEC-153, MR-CONN-108: the handshake derives the receipt key from its master secret; both
    ends of an unauthenticated connection hold the same key, an authenticated one none."""
    import random as _random

    from metaroce.models.handshake import Client, Config, Server
    for auth in (False, True):
        c, s = Client(Config(auth=auth), rng=_random.Random(1)), Server(Config(auth=auth))
        acc = s.receive(codec.decode(codec.encode(c.start(0.0))), 0.0)
        sc, ss = c.receive(codec.decode(codec.encode(acc)), 0.0), s.new_sessions[0]
        if auth:
            assert sc.receipt_key() is None and ss.receipt_key() is None
        else:
            assert sc.receipt_key() == ss.receipt_key() == receipt_key(sc.master)
            assert len(sc.receipt_key()) == 16


@pytest.mark.parametrize("key", [b"short", "x" * 16])
def test_receipt_key_checked(key):
    """MR-SEC-153: a receipt key is 16 bytes."""
    with pytest.raises(ValueError, match="receipt_key"):
        Endpoint(A).connect(1, B, 2, receipt_key=key)


class UdpBlindAttacker:
    """A local process that cannot sniff (MR-SEC-101 3, without privileges): it sends forged ACKs
    and NAKs to the sender's port of a running `metaroce transfer --auth off`. It is handed the
    connection id and each path's PSNs in flight by the test (more than it could know), never
    a frame."""

    def __init__(self, cap=1500):
        import socket

        from metaroce.sim.udp import LOOPBACK
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.sock.bind((LOOPBACK, 0))
        self.port = self.sock.getsockname()[1]
        self.rng = random.Random(5)
        self.cap = cap
        self.sent = 0

    def __call__(self, host):
        from metaroce.sim.udp import LOOPBACK, wire_payload
        if self.sent >= self.cap:
            return
        for conn in list(host.ep._conns.values()):
            att = BlindAttacker(conn, self.rng)
            for f in att.forge(0.0):
                f.bth = replace(f.bth, dest_qp=conn.local_id)
                self.sock.sendto(wire_payload(f, self.port), (LOOPBACK, host.port))
                self.sent += 1

    def close(self):
        self.sock.close()


def test_udp_transfer_auth_off_refuses_blind_forgeries(tmp_path):
    """MR-SEC-153, MR-SEC-155, MR-SEC-160: `metaroce transfer --auth off` gives its connection the
    handshake's receipt key (its ACKs carry proofs: non-zero BTH PSNs), and a local process that
    cannot see the traffic, sending forged ACKs and NAKs for every PSN in flight, gets every one
    dropped: the transfer completes with the right bytes."""
    from metaroce.commands.transfer import transfer
    from metaroce.models.pcap import iter_records
    att = UdpBlindAttacker()
    pcap = tmp_path / "t.pcap"
    try:
        r = transfer(1 << 20, paths=4, seed=5, timeout=120, auth=False, attack=att, pcap_path=str(pcap))
    finally:
        att.close()
    assert att.sent > 50
    assert r["ok"] and r["sha256_match"] and r["status"] == "SUCCESS" and r["auth"] == "off"
    ep = r["sender"]["endpoint"]
    # every forgery that reached the endpoint while it still covered a PSN in flight is refused
    assert ep["drop_bad_proof"] > att.sent // 2 and ep.get("naks_received", 0) == 0
    frames = [codec.decode(rec.data) for rec in iter_records(str(pcap))]
    acks = [f for f in frames if f.bth.opcode == Op.MR_ACK]
    real = [f for f in acks if f.udp.sport != att.port]
    assert real and sum(f.bth.psn != 0 for f in real) >= len(real) - 1


def test_receipt_key_record_and_one_block():
    """MR-ENG-032: the engine's per-connection receipt-key row is a valid bit and the 128-bit key,
    and every proof message (an ACK's, with all its fields, or a NAK's) fits one 64-byte BLAKE2s
    block, so one compression per ACK or NAK."""
    from metaroce.models import records as R
    from metaroce.models import security as S
    assert dict((n, f.width) for n, f in R.CONN_KEY) == {"valid": 1, "receipt_key": 128}
    assert S._PROOF_MSG.size + S._PROOF_ACK_FIELDS.size + 32 <= 64
    assert S._PROOF_MSG.size <= 64
