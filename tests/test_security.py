"""Per-packet authentication (models/security.py, docs/spec/security.md chapter 5)."""
import copy
import os
import random
from dataclasses import replace

import pytest

from metaroce.models import codec, wire
from metaroce.models.codec import MRAH, MRDH, MRNH, RETH, AtomicETH, decode, encode, make
from metaroce.models.endpoint import Endpoint, Status
from metaroce.models.loopback import Loopback
from metaroce.models.security import (REPLAY_WINDOW, AuthenticatedHost, Drop, ReplayWindow, RKeyGenerator,
                                      SecureChannel, nonce)
from metaroce.models.wire import Op

MASTER = bytes(range(32))


def pair(paths=4, encrypt=False, master=MASTER):
    return SecureChannel(master, 0, paths, encrypt=encrypt), SecureChannel(master, 1, paths, encrypt=encrypt)


def frames():
    """One frame of every opcode a connection sends, with distinctive fields."""
    out = [
        make(Op.MR_WRITE, payload=bytes(range(37)), mrdh=MRDH(flags=5, path=3, stream=2, msg=9, offset=4096,
                                                              msg_len=4133), reth=RETH(0x1000, 0xCAFE, 4133)),
        make(Op.MR_ACK, mrah=MRAH(flags=1, path=2, ce_count=4, cum_psn=77, rate_mbps=1000, trigger_psn=76,
                                  sack=(1 << 255) | 5)),
        make(Op.MR_NAK, mrnh=MRNH(path=1, reason=wire.NakReason.BOUNDS, psn=12)),
        make(Op.MR_SEND_IMM, payload=b"hello", imm=0xDEADBEEF),
        make(Op.RC_WRITE_ONLY, payload=b"x" * 100, reth=RETH(1, 2, 100)),
        make(Op.RC_ACK),
        # READ and atomics (MR-WIRE-076, MR-WIRE-065)
        make(Op.MR_READ, mrdh=MRDH(path=2, stream=1, msg=4), reth=RETH(0x2000, 0xBEEF, 9000)),
        make(Op.MR_READ_RESP, payload=bytes(range(50)), mrdh=MRDH(flags=4, path=1, stream=1, msg=4, msg_len=9000)),
        make(Op.MR_CMP_SWAP, payload=bytes(range(16)), mrdh=MRDH(flags=5, path=0, msg=5, msg_len=16),
             reth=RETH(0x40, 0xBEEF, 8)),
        make(Op.MR_FETCH_ADD, payload=bytes(8), mrdh=MRDH(flags=5, path=3, msg=6, msg_len=8), reth=RETH(0x48, 0xBEEF, 8)),
        make(Op.RC_FETCH_ADD, atomiceth=AtomicETH(0x48, 0xBEEF, 7, 0)),
    ]
    for i, f in enumerate(out):
        f.bth = replace(f.bth, dest_qp=0x123456, psn=1000 + i, ack_req=1)
    return out


def on_wire(f):
    """The frame as a receiver decodes it (ICRC checked)."""
    return decode(encode(copy.deepcopy(f)))


def same(a, b):
    names = ("reth", "aeth", "imm", "atomiceth", "mrdh", "mrsh", "mrah", "mrnh")
    bth_a, bth_b = replace(a.bth, pad=0), replace(b.bth, pad=0)
    return bth_a == bth_b and bytes(a.payload) == bytes(b.payload) and \
        all(getattr(a, n) == getattr(b, n) for n in names)


@pytest.mark.parametrize("encrypt", [False, True])
def test_seal_open_every_opcode(encrypt):
    """MR-SEC-110, MR-SEC-111, MR-SEC-112, MR-WIRE-077, MR-WIRE-082: every frame kind survives
    sealing, the wire and opening unchanged; the MR_SEC frame carries the original opcode."""
    tx, rx = pair(encrypt=encrypt)
    for f in frames():
        g = tx.seal(f)
        assert g.bth.opcode == Op.MR_SEC and g.mrsec.next_op == f.bth.opcode
        assert g.mrsec.flags == (wire.SecFlag.ENCRYPTED if encrypt else 0)
        wire_bytes = encode(copy.deepcopy(g))
        assert len(g.payload) == wire.ext_len(f.bth.opcode) + len(f.payload) + wire.TAG_LEN
        assert len(wire_bytes) == codec.wire_len(g)
        inner = rx.open(decode(wire_bytes))
        assert same(inner, f)


def test_encryption_hides_payload():
    """MR-SEC-112: in encrypted mode the payload does not appear on the wire; in authenticated
    mode it does (it is only authenticated)."""
    secret = b"the secret payload, 41 bytes long, really"
    f = make(Op.MR_WRITE, payload=secret, mrdh=MRDH(path=0), reth=RETH(0, 1, len(secret)))
    assert secret not in encode(pair(encrypt=True)[0].seal(f))
    assert secret in encode(pair(encrypt=False)[0].seal(f))


def test_any_modified_byte_is_dropped():
    """MR-SEC-111, MR-SEC-141, MR-SEC-102: flipping any bit from the BTH to the tag (ICRC
    recomputed, as an attacker would) makes the frame fail, except the bits outside the AAD:
    BTH byte 4 (FECN/BECN, set by the network), reserved bits (ignored on receipt) and pad; a
    failure changes no replay state."""
    tx, rx = pair()
    f = frames()[0]
    raw = bytearray(encode(tx.seal(f)))
    bth = wire.ETH_HLEN + wire.IPV4_HLEN + wire.UDP_HLEN
    end = len(raw) - wire.ICRC_LEN
    pad = decode(raw).bth.pad
    free = {(4, b) for b in range(8)} | {(8, b) for b in range(7)} | \
        {(wire.BTH_LEN + 4 + i, b) for i in range(4) for b in range(8)} | \
        {(end - bth - 1 - i, b) for i in range(pad) for b in range(8)}
    rng = random.Random(3)
    tried = 0
    for pos in range(bth, end):
        bit = rng.randrange(8)
        if (pos - bth, bit) in free:
            continue
        tried += 1
        bad = bytearray(raw)
        bad[pos] ^= 1 << bit
        try:
            g = decode(bad, verify_icrc=False)
        except codec.DecodeError:
            continue                # refused by the codec already
        g.icrc = None
        g = decode(encode(g))       # the attacker recomputes the ICRC
        before = [(w.top, w.bits) for w in rx._rx[0].windows]
        with pytest.raises(Drop):
            rx.open(g)
        assert [(w.top, w.bits) for w in rx._rx[0].windows] == before
    assert tried > 90 and not rx.opened
    g = decode(raw)
    g.bth = replace(g.bth, fecn=1, becn=1)
    marked = replace(f, bth=replace(f.bth, fecn=1, becn=1))
    assert same(rx.open(on_wire(g)), marked)    # congestion marking in flight is not a forgery


def test_wrong_keys_fail():
    """MR-SEC-102, MR-SEC-111: a frame sealed under another master secret, or for the other
    direction, fails its tag."""
    tx, _ = pair()
    _, rx_other = pair(master=os.urandom(32))
    g = on_wire(tx.seal(frames()[1]))
    with pytest.raises(Drop) as e:
        rx_other.open(g)
    assert e.value.reason == "bad_tag"
    same_dir = SecureChannel(MASTER, 0, 4)       # expects the peer's direction, gets its own
    with pytest.raises(Drop) as e:
        same_dir.open(on_wire(tx.seal(frames()[1])))
    assert e.value.reason == "bad_tag"


def test_nonces_never_repeat():
    """MR-SEC-120: a resend of the same frame is sealed with a new sequence number; nonces are
    unique per key across paths and frames."""
    tx, _ = pair(paths=4)
    seen = set()
    for i in range(200):
        f = frames()[i % 3]
        g = tx.seal(f)
        n = nonce(0, g.mrsec.epoch, g.mrsec.path, g.mrsec.seq)
        assert n not in seen
        seen.add(n)
    assert nonce(0, 0, 1, 2) != nonce(1, 0, 1, 2) != nonce(0, 1, 1, 2)


def test_replay_window():
    """MR-SEC-121, MR-SEC-122: a frame is accepted once; out-of-order inside the window is fine;
    older than the window or already seen is `replay`; a path beyond the connection is `bad_path`."""
    tx, rx = pair(paths=2)
    f = make(Op.MR_ACK, mrah=MRAH(path=1))
    sealed = [on_wire(tx.seal(f)) for _ in range(REPLAY_WINDOW + 10)]
    rx.open(sealed[5])
    rx.open(sealed[3])                       # out of order, within the window
    for g in (sealed[5], sealed[3]):
        with pytest.raises(Drop) as e:
            rx.open(g)
        assert e.value.reason == "replay"
    rx.open(sealed[-1])
    with pytest.raises(Drop) as e:
        rx.open(sealed[4])                   # never seen, but now older than the window
    assert e.value.reason == "replay"
    rx.open(sealed[-2])
    assert rx.drops["replay"] == 3
    w = ReplayWindow()
    for s in (0, 10 ** 12, 10 ** 12 + 5):
        w.mark(s)
    assert w.bits < 1 << REPLAY_WINDOW and not w.fresh(10 ** 12) and w.fresh(10 ** 12 + 1)
    tx4, _ = pair(paths=4)
    g = on_wire(tx4.seal(make(Op.MR_ACK, mrah=MRAH(path=3))))
    with pytest.raises(Drop) as e:
        rx.open(g)
    assert e.value.reason == "bad_path"


def test_epochs_and_rekey():
    """MR-SEC-130, MR-SEC-131: after a rekey the receiver takes the new epoch and still accepts the
    previous one (frames in flight); two rekeys later the oldest is `stale_epoch`. The usage limit
    rekeys by itself."""
    tx, rx = pair()
    f = frames()[1]
    old = [on_wire(tx.seal(f)) for _ in range(3)]
    rx.open(old[0])
    tx.rekey()
    e1 = on_wire(tx.seal(f))
    assert e1.mrsec.epoch == 1 and e1.mrsec.seq == 0
    rx.open(e1)
    assert rx.rx_epoch == 1
    rx.open(old[1])                          # previous epoch, still in flight
    tx.rekey()
    rx.open(on_wire(tx.seal(f)))
    assert rx.rx_epoch == 2
    with pytest.raises(Drop) as e:
        rx.open(old[2])
    assert e.value.reason == "stale_epoch"
    small, rx2 = SecureChannel(MASTER, 0, 4, seq_limit=3), SecureChannel(MASTER, 1, 4)
    epochs = [small.seal(f).mrsec.epoch for _ in range(7)]
    assert epochs == [0, 0, 0, 1, 1, 1, 2]
    for _ in range(300):                     # the wire's 8-bit epoch wraps; the key does not repeat
        small.rekey()
    g = on_wire(small.seal(f))
    assert g.mrsec.epoch == small.tx_epoch & 0xFF and small.tx_epoch > 255
    with pytest.raises(Drop):
        rx2.open(g)


def test_malformed_sec_frames():
    """MR-SEC-140, MR-WIRE-077: an MR_SEC frame too short for its tag, with a handshake or MR_SEC
    inner opcode, or with the wrong ENCRYPTED flag is `malformed`."""
    tx, rx = pair()
    g = on_wire(tx.seal(frames()[1]))
    for change in (dict(payload=g.payload[:wire.MRAH_LEN + 3]),
                   dict(mrsec=replace(g.mrsec, next_op=Op.MR_SEC)),
                   dict(mrsec=replace(g.mrsec, next_op=Op.MR_CONN_REQ)),
                   dict(mrsec=replace(g.mrsec, next_op=0x15)),
                   dict(mrsec=replace(g.mrsec, flags=wire.SecFlag.ENCRYPTED))):
        with pytest.raises(Drop) as e:
            rx.open(replace(g, **change))
        assert e.value.reason == "malformed", change


def run_pair(auth, n=256 << 10, encrypt=False, inject=None):
    a, b = Endpoint("10.0.0.1", mtu=1024, line_rate_bps=100e9, base_rtt=4e-6), \
        Endpoint("10.0.0.2", mtu=1024, line_rate_bps=100e9, base_rtt=4e-6)
    ca = a.connect(10, "10.0.0.2", 20, paths=4)
    b.connect(20, "10.0.0.1", 10, paths=4)
    src = bytearray(random.Random(1).randbytes(n))
    dst = bytearray(n)
    ca.post_write(0, a.reg_mr(src), 0, n, 0, b.reg_mr(dst), wr_id=5)
    if auth:
        m = os.urandom(32)
        a = AuthenticatedHost(a, {10: (20, SecureChannel(m, 0, 4, encrypt=encrypt))})
        b = AuthenticatedHost(b, {20: (10, SecureChannel(m, 1, 4, encrypt=encrypt))})
    lb = Loopback(a, b)
    if inject:
        inject(lb)
    lb.run(until=0.05)
    return src, dst, lb, a, b


@pytest.mark.parametrize("encrypt", [False, True])
def test_authenticated_read_and_atomic(encrypt):
    """MR-SEC-100, MR-SEC-110, MR-VERB-001, MR-VERB-010: a READ and a FETCH_ADD between two
    authenticated hosts complete with the right bytes; requests and responses are MR_SEC frames."""
    a, b = Endpoint("10.0.0.1", mtu=1024, line_rate_bps=100e9, base_rtt=4e-6), \
        Endpoint("10.0.0.2", mtu=1024, line_rate_bps=100e9, base_rtt=4e-6)
    ca = a.connect(10, "10.0.0.2", 20, paths=4)
    b.connect(20, "10.0.0.1", 10, paths=4)
    remote = bytearray(random.Random(2).randbytes(50_000))
    remote[64:72] = (100).to_bytes(8, "little")
    local = bytearray(60_000)
    rkey, lkey = b.reg_mr(remote), a.reg_mr(local)
    ca.post_read(0, lkey, 1000, 40_000, 5000, rkey, wr_id=7)
    ca.post_atomic(0, "fetch_add", lkey, 0, 64, rkey, wr_id=8, add=5)
    m = os.urandom(32)
    host_a = AuthenticatedHost(a, {10: (20, SecureChannel(m, 0, 4, encrypt=encrypt))})
    host_b = AuthenticatedHost(b, {20: (10, SecureChannel(m, 1, 4, encrypt=encrypt))})
    lb = Loopback(host_a, host_b)
    seen = []
    for fl in lb.faults:
        fl.drop_if = lambda f, now: seen.append(int(f.bth.opcode)) and False
    lb.run(until=0.02)
    assert [(c.wr_id, c.status) for c in lb.completions[0]] == [(7, Status.SUCCESS), (8, Status.SUCCESS)]
    assert local[1000:41_000] == remote[5000:45_000]
    assert int.from_bytes(local[0:8], "little") == 100 and int.from_bytes(remote[64:72], "little") == 105
    assert set(seen) == {Op.MR_SEC} and not host_a.drops and not host_b.drops


@pytest.mark.parametrize("encrypt", [False, True])
def test_authenticated_transfer_in_the_fabric(encrypt):
    """MR-SEC-100, MR-SEC-110: a write between two authenticated hosts lands intact, every frame
    on the wire is MR_SEC, and nothing is dropped."""
    seen = []
    src, dst, lb, a, b = run_pair(True, encrypt=encrypt, inject=lambda lb: [
        setattr(fl, "drop_if", lambda f, now: seen.append(int(f.bth.opcode)) and False) for fl in lb.faults])
    assert dst == src and [c.wr_id for c in lb.completions[0]] == [5]
    assert set(seen) == {Op.MR_SEC} and not a.drops and not b.drops


def test_plain_frames_never_reach_an_authenticated_endpoint():
    """MR-SEC-113, MR-SEC-140: a plain frame to an authenticated host is `unauthenticated`, an
    MR_SEC frame naming no connection is `no_connection`; neither reaches the endpoint."""
    ep = Endpoint("10.0.0.2")
    ep.connect(20, "10.0.0.1", 10, paths=4)
    host = AuthenticatedHost(ep, {20: (10, SecureChannel(MASTER, 1, 4))})
    calls = []
    ep.receive = lambda f, now: calls.append(f)
    f = frames()[0]
    host.receive(on_wire(replace(f, bth=replace(f.bth, dest_qp=20))), 0.0)
    other = SecureChannel(MASTER, 0, 4).seal(replace(f, bth=replace(f.bth, dest_qp=99)))
    host.receive(on_wire(other), 0.0)
    assert calls == [] and host.drops == {"unauthenticated": 1, "no_connection": 1}
    good = SecureChannel(MASTER, 0, 4).seal(replace(f, bth=replace(f.bth, dest_qp=20)))
    host.receive(on_wire(good), 0.0)
    assert len(calls) == 1


def test_rkeys_are_random_and_unique():
    """MR-SEC-152: R_Keys carry 32 random bits, never 0, unique among live registrations."""
    g = RKeyGenerator(random.Random(7))
    keys = [g.new() for _ in range(5000)]
    assert len(set(keys)) == 5000 and all(0 < k < 1 << 32 for k in keys)
    assert max(keys).bit_length() == 32 and sum(k >> 31 for k in keys) > 2000   # the top bit is random
    g.free(keys[0])
    assert keys[0] not in g.live
    assert len({RKeyGenerator().new() for _ in range(8)}) == 8      # the default source is `secrets`


def test_bench_auth_smoke(capsys):
    """MR-SEC-111, MR-SEC-112: `metaroce bench auth` runs and reports each mode; authentication
    costs 32 bytes per frame on the wire (MRSEC + tag) and CPU per packet."""
    import json

    from metaroce.cli import main
    rc = main(["bench", "auth", "--bytes", "64Ki", "--udp-bytes", "0", "--packets", "50", "--json",
               "--losses", "0", "--seeds", "1", "--no-plot", "--jobs", "1"])
    obj = json.loads(capsys.readouterr().out)
    assert rc == 0 and [r["mode"] for r in obj["rows"]] == ["off", "auth", "encrypt"]
    off, auth, enc = obj["rows"]
    assert all(r["delivered_ok"] for r in obj["rows"])
    assert off["wire_overhead"] == 0 and auth["wire_overhead"] == enc["wire_overhead"] > 0
    assert auth["seal_open_us"] > 0 and enc["seal_open_us"] > 0 and off["seal_open_us"] == 0
