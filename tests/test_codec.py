"""Codec tests: round trip of every packet kind, property tests, and every decode error reason.

Spec: docs/spec/wire.md; each test cites the requirements it checks. The independent oracle (scapy) is in
test_codec_scapy.py; this file checks the codec against the spec text and against itself.
"""
import dataclasses
import json
import struct

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from metaroce.models import codec, wire
from metaroce.models.codec import (AETH, BTH, IP, MRAH, MRCH, MRDH, MRNH, MRSEC, MRSH, RETH, UDP, AtomicAck,
                                   AtomicETH, DecodeError, Eth, decode, decode_json, encode, make)
from metaroce.models.icrc import icrc_bytes
from metaroce.models.wire import Op, Reason

SETTINGS = settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])

# Distinctive non-default values for every extension header.
SAMPLE = {
    "reth": RETH(va=0x0123456789ABCDEF, rkey=0xCAFEF00D, dma_len=4097),
    "aeth": AETH(syndrome=0x60, msn=0xABCDEF),
    "imm": 0xDEADBEEF,
    "atomicack": AtomicAck(orig=0xFEDCBA9876543210),
    "atomiceth": AtomicETH(va=0x1122334455667788, rkey=0x99AABBCC, swap=0xFEDCBA9876543210,
                           compare=0x0F1E2D3C4B5A6978),
    "mrdh": MRDH(flags=wire.MrdhFlag.FIRST | wire.MrdhFlag.LAST, path=7, stream=513, msg=70000,
                 offset=8192, msg_len=12288),
    "mrsh": MRSH(recv_seq=0x01020304),
    "mrah": MRAH(flags=wire.MrahFlag.ECE, path=255, ce_count=3, cum_psn=0xFFFFFF, rate_mbps=100000,
                 trigger_psn=0xFFFFFE, sack=(1 << 255) | (1 << 128) | 1),
    "mrnh": MRNH(path=9, reason=wire.NakReason.RNR, psn=0x800000),
    "mrsec": MRSEC(flags=wire.SecFlag.ENCRYPTED, next_op=0xC0, path=5, epoch=3, seq=(1 << 63) + 5),
    "mrch": MRCH(flags=wire.ConnFlag.AUTH, reason=wire.RejectReason.REPLAY, paths=8, attempt=2,
                 src_qpn=0xABCDEF, dst_qpn=0x123456, init_psn=0xFEDCBA, mtu=4096, nonce=(1 << 127) | 3),
}


def sample_frame(op, version=4, vlan=None, payload_len=5, psn=0x123456):
    """A frame of opcode ``op`` with every field away from its default."""
    headers = {n: dataclasses.replace(SAMPLE[n]) if n != "imm" else SAMPLE[n]
               for n in wire.HEADERS[op] if n != "cnp"}
    if version == 4:
        ip = IP(version=4, src="192.168.1.10", dst="192.168.2.20", dscp=46, ecn=1, ttl=17, ident=0x4242)
    else:
        ip = IP(version=6, src="2001:db8::1", dst="fd00::2", dscp=10, ecn=2, ttl=3, flow_label=0xABCDE)
    payload = bytes((7 * i + 1) & 0xFF for i in range(payload_len)) if op in wire.PAYLOAD_OPS else b""
    return make(op, payload,
                eth=Eth(dst="0a:1b:2c:3d:4e:5f", src="02:aa:bb:cc:dd:ee", vlan=vlan, pcp=5 if vlan is not None else 0,
                        dei=1 if vlan is not None else 0),
                ip=ip, udp=UDP(sport=0xC0DE, checksum=0x1234 if version == 4 else 0),
                bth=BTH(se=1, mig=1, pkey=0x8001, fecn=1, becn=0, dest_qp=0xABCDEF, ack_req=1, psn=psn),
                **headers)


def normalized(f):
    """The frame as decode should return it: derived fields filled, ICRC fields cleared."""
    g = dataclasses.replace(f, icrc=None, icrc_ok=None)
    g.eth = dataclasses.replace(f.eth, ethertype=wire.ETHERTYPE_IPV4 if f.ip.version == 4 else wire.ETHERTYPE_IPV6)
    g.bth = dataclasses.replace(f.bth, pad=(-len(f.payload)) % 4)
    if f.ip.version == 6:
        g.udp = dataclasses.replace(f.udp, checksum=0)  # computed by encode (MR-WIRE-042)
    return g


def strip(f):
    g = dataclasses.replace(f, icrc=None, icrc_ok=None)
    if f.ip is not None and f.ip.version == 6:
        g.udp = dataclasses.replace(f.udp, checksum=0)
    return g


def reason_of(data, **kw):
    with pytest.raises(DecodeError) as ei:
        decode(data, **kw)
    assert not ei.value.detail.startswith("internal"), ei.value.detail
    return ei.value.reason


def l3_offset(data):
    return 18 if data[12:14] == b"\x81\x00" else 14


def fix_ip_checksum(data):
    """Recompute the IPv4 header checksum (RFC 791) of a frame, independently of the codec."""
    b = bytearray(data)
    o = l3_offset(b)
    if b[o] >> 4 == 4:
        b[o + 10:o + 12] = b"\0\0"
        s = sum(struct.unpack("!10H", bytes(b[o:o + 20])))
        while s >> 16:
            s = (s & 0xFFFF) + (s >> 16)
        b[o + 10:o + 12] = struct.pack("!H", ~s & 0xFFFF)
    return bytes(b)


def fix_icrc(data):
    """Recompute the ICRC over a frame whose lengths are right (the last 4 bytes are the ICRC)."""
    o = l3_offset(data)
    ih = wire.IPV4_HLEN if data[o] >> 4 == 4 else wire.IPV6_HLEN
    if len(data) - 4 - o < ih + wire.UDP_HLEN + wire.BTH_LEN:
        return data  # too short to carry an ICRC; the test is about an earlier check
    return data[:-4] + icrc_bytes(data[o:-4])


def patch(data, pos, new, icrc=True):
    """Replace bytes at ``pos`` and make every check before the field under test pass."""
    b = bytearray(data)
    b[pos:pos + len(new)] = new
    out = fix_ip_checksum(bytes(b))
    return fix_icrc(out) if icrc else out


def bth_offset(data):
    o = l3_offset(data)
    return o + (20 if data[o] >> 4 == 4 else 40) + 8


def relength(data, new_l4):
    """A frame with its UDP payload replaced by ``new_l4`` (BTH onward, without ICRC), with IP
    length, UDP length, IPv4 checksum and ICRC made consistent."""
    o = l3_offset(data)
    v = data[o] >> 4
    ihl = 20 if v == 4 else 40
    udp_len = 8 + len(new_l4) + 4
    b = bytearray(data[:o + ihl + 8] + new_l4 + b"\0\0\0\0")
    if v == 4:
        b[o + 2:o + 4] = struct.pack("!H", 20 + udp_len)
    else:
        b[o + 4:o + 6] = struct.pack("!H", udp_len)
    b[o + ihl + 4:o + ihl + 6] = struct.pack("!H", udp_len)
    b[o + ihl + 6:o + ihl + 8] = b"\0\0"  # UDP checksum: masked by the ICRC and not verified
    return fix_icrc(fix_ip_checksum(bytes(b)))


ALL_OPS = list(Op)


# ---------------------------------------------------------------------------------------------
# Round trip

@pytest.mark.parametrize("op", ALL_OPS, ids=lambda o: o.name)
@pytest.mark.parametrize("version,vlan", [(4, None), (6, None), (4, 100), (6, 4095)])
def test_round_trip_every_opcode(op, version, vlan):
    """MR-WIRE-052: every opcode encodes with its header set and decodes back field for field."""
    f = sample_frame(op, version, vlan)
    data = encode(f)
    assert len(data) == codec.wire_len(f)
    g = decode(data)
    assert g.icrc_ok is True
    assert strip(g) == normalized(f)
    assert g.headers() == wire.HEADERS[op]
    # Re-encoding the decoded frame gives the same bytes.
    assert encode(g) == data


@pytest.mark.parametrize("n", range(0, 9))
def test_pad_count_follows_payload_length(n):
    """MR-WIRE-080: PadCnt = (-len) mod 4, pad bytes are zeros, and the BTH-to-pad span is a multiple of 4."""
    f = sample_frame(Op.MR_SEND, payload_len=n)
    data = encode(f)
    b = bth_offset(data)
    assert (data[b + 1] >> 4) & 3 == (-n) % 4
    end = len(data) - 4
    assert (end - b) % 4 == 0
    assert data[end - (-n) % 4:end] == bytes((-n) % 4)
    assert decode(data).payload == f.payload


def test_bth_bit_layout():
    """MR-WIRE-050: BTH byte and bit offsets, checked against hand-written bytes."""
    b = BTH(opcode=0xC2, se=1, mig=0, pad=2, tver=0, pkey=0xABCD, fecn=0, becn=1, dest_qp=0x010203,
            ack_req=1, psn=0xFEDCBA)
    raw = codec.encode_bth(b)
    assert raw == bytes([0xC2, 0b1010_0000, 0xAB, 0xCD, 0b0100_0000, 1, 2, 3, 0x80, 0xFE, 0xDC, 0xBA])
    assert codec.decode_bth(raw) == b


def test_metaroce_header_layouts():
    """MR-WIRE-071, MR-WIRE-072, MR-WIRE-073, MR-WIRE-074: MRDH, MRSH, MRAH and MRNH byte layouts, checked
    against hand-written bytes."""
    assert codec.encode_ext("mrdh", MRDH(version=1, flags=5, path=0xAA, stream=0x0102, msg=3, offset=4,
                                         msg_len=5)) == bytes.fromhex("15aa0102" "00000003" "00000004" "00000005")
    assert codec.encode_ext("mrsh", MRSH(0x0A0B0C0D)) == bytes.fromhex("0a0b0c0d")
    mrah = MRAH(version=1, flags=1, path=2, ce_count=0x0304, cum_psn=0x050607, rate_mbps=0x08090A0B,
                trigger_psn=0x0C0D0E, sack=1 | (1 << 8) | (1 << 255))
    raw = codec.encode_ext("mrah", mrah)
    assert raw[:16] == bytes.fromhex("1102" "0304" "00050607" "08090a0b" "000c0d0e")
    # bit 0 is the least significant bit of byte 47 (MR-WIRE-073)
    assert raw[16] == 0x80 and raw[47] == 0x01 and raw[46] == 0x01 and sum(raw[17:46]) == 0
    assert codec.encode_ext("mrnh", MRNH(version=1, flags=0, path=3, reason=4, psn=0x00ABCDEF)) == \
        bytes.fromhex("1003" "04" "00" "00abcdef")
    for name, h in [("mrah", mrah)]:
        assert codec.decode_ext(name, raw) == h


def test_rc_header_layouts():
    """MR-WIRE-060, MR-WIRE-061, MR-WIRE-062, MR-WIRE-063, MR-WIRE-064: RETH, AETH, ImmDt, AtomicAckETH and
    CNP layouts."""
    assert codec.encode_ext("reth", RETH(0x0102030405060708, 0x090A0B0C, 0x0D0E0F10)) == bytes(range(1, 17))
    assert codec.encode_ext("aeth", AETH(0x60, 0x010203)) == bytes([0x60, 1, 2, 3])
    assert codec.encode_ext("imm", 0x01020304) == bytes([1, 2, 3, 4])
    assert codec.encode_ext("atomicack", AtomicAck(0x0102030405060708)) == bytes(range(1, 9))
    data = encode(make(Op.CNP, bth=BTH(becn=1, dest_qp=77)))
    b = bth_offset(data)
    assert data[b + 12:b + 28] == bytes(16) and len(data) == b + 12 + 16 + 4
    assert decode(data).bth.becn == 1


def test_ipv4_and_udp_fields_on_the_wire():
    """MR-WIRE-020, MR-WIRE-021, MR-WIRE-022, MR-WIRE-040, MR-WIRE-042: IPv4 IHL 5, DF, no fragment, TOS =
    DSCP|ECN, port 4791, IPv4 UDP checksum as given (0 by default), IPv6 UDP checksum non-zero and correct."""
    f = sample_frame(Op.MR_WRITE, version=4)
    f.udp.checksum = 0
    d = encode(f)
    assert d[12:14] == b"\x08\x00" and d[14] == 0x45 and d[15] == (46 << 2) | 1
    assert struct.unpack("!H", d[20:22])[0] & 0x3FFF == 0 and d[23] == 17
    assert struct.unpack("!HHHH", d[34:42]) == (0xC0DE, 4791, len(d) - 34, 0)
    assert codec.ipv4_checksum_ok(d[14:34])
    d6 = encode(sample_frame(Op.MR_WRITE, version=6))
    assert d6[12:14] == b"\x86\xdd" and d6[14] >> 4 == 6 and d6[20] == 17
    udp = d6[54:]
    ck = struct.unpack("!H", udp[6:8])[0]
    assert ck != 0
    # The one's-complement sum over pseudo header and datagram (checksum included) is 0xFFFF.
    pseudo = d6[22:54] + struct.pack("!IxxxB", len(udp), 17)
    blob = pseudo + udp + (b"\0" if len(udp) % 2 else b"")
    s = sum(struct.unpack(f"!{len(blob) // 2}H", blob))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    assert s == 0xFFFF


def test_vlan_tag():
    """MR-WIRE-011: one 802.1Q tag with PCP, DEI and VID is encoded and decoded."""
    d = encode(sample_frame(Op.RC_SEND_ONLY, vlan=0xABC))
    assert d[12:16] == bytes([0x81, 0x00, (5 << 5) | (1 << 4) | 0xA, 0xBC])
    e = decode(d).eth
    assert (e.vlan, e.pcp, e.dei) == (0xABC, 5, 1)


@pytest.mark.parametrize("version", [4, 6])
def test_ethernet_padding_ignored(version):
    """MR-WIRE-012: bytes after the IP packet are Ethernet padding and are ignored."""
    f = sample_frame(Op.RC_ACK, version)
    d = encode(f)
    g = decode(d + bytes(64 - len(d) % 64 or 7))
    assert g.icrc_ok and strip(g) == normalized(f)


@pytest.mark.parametrize("version", [4, 6])
def test_ce_mark_and_hop_changes_keep_icrc(version):
    """MR-WIRE-022, MR-WIRE-092: a switch that marks CE and decrements TTL / hop limit (and rewrites the
    flow label or FECN) does not invalidate the ICRC."""
    d = bytearray(encode(sample_frame(Op.MR_WRITE, version)))
    o = 14
    b = bth_offset(d)
    if version == 4:
        d[o + 1] |= 3
        d[o + 8] -= 1
    else:
        d[o + 1] |= 0x30  # ECN bits are the low 2 bits of the traffic class: byte 1 bits 5-4
        d[o + 3] ^= 0x55  # flow label
        d[o + 7] -= 1
    d[b + 4] ^= 0x80  # FECN
    g = decode(fix_ip_checksum(bytes(d)))
    assert g.icrc_ok and g.ip.ecn == 3 and g.bth.fecn == 0


# ---------------------------------------------------------------------------------------------
# Hypothesis: random field values round-trip

def u(bits):
    return st.integers(0, (1 << bits) - 1)


macs = st.binary(min_size=6, max_size=6).map(lambda b: ":".join(f"{x:02x}" for x in b))

HEADER_ST = {
    "reth": st.builds(RETH, u(64), u(32), u(32)),
    "aeth": st.builds(AETH, u(8), u(24)),
    "imm": u(32),
    "atomicack": st.builds(AtomicAck, u(64)),
    "atomiceth": st.builds(AtomicETH, u(64), u(32), u(64), u(64)),
    "mrdh": st.builds(MRDH, st.just(wire.MR_VERSION), u(4), u(8), u(16), u(32), u(32), u(32)),
    "mrsh": st.builds(MRSH, u(32)),
    "mrah": st.builds(MRAH, st.just(wire.MR_VERSION), u(4), u(8), u(16), u(32), u(32), u(32), u(256)),
    "mrnh": st.builds(MRNH, st.just(wire.MR_VERSION), u(4), u(8), u(8), u(32)),
    "mrsec": st.builds(MRSEC, st.just(wire.MR_VERSION), u(4), u(8), u(8), u(8), u(64)),
    "mrch": st.builds(MRCH, st.just(wire.MR_VERSION), u(4), u(8), u(8), u(8), u(24), u(24), u(24), u(16),
                      u(128)),
}


@st.composite
def frames(draw, ops=st.sampled_from(ALL_OPS)):
    op = draw(ops)
    v = draw(st.sampled_from([4, 6]))
    vlan = draw(st.none() | u(12))
    eth = Eth(dst=draw(macs), src=draw(macs), vlan=vlan, pcp=draw(u(3)) if vlan is not None else 0,
              dei=draw(u(1)) if vlan is not None else 0)
    if v == 4:
        ip = IP(4, str(draw(st.ip_addresses(v=4))), str(draw(st.ip_addresses(v=4))), draw(u(6)), draw(u(2)),
                draw(u(8)), draw(u(16)), 0)
    else:
        ip = IP(6, str(draw(st.ip_addresses(v=6))), str(draw(st.ip_addresses(v=6))), draw(u(6)), draw(u(2)),
                draw(u(8)), 0, draw(u(20)))
    udp = UDP(draw(u(16)), wire.ROCE_PORT, draw(u(16)) if v == 4 else 0)
    bth = BTH(op, draw(u(1)), draw(u(1)), 0, 0, draw(u(16)), draw(u(1)), draw(u(1)), draw(u(24)), draw(u(1)),
              draw(u(24)))
    hdrs = {n: draw(HEADER_ST[n]) for n in wire.HEADERS[op] if n != "cnp"}
    payload = draw(st.binary(max_size=40)) if op in wire.PAYLOAD_OPS else b""
    return make(op, payload, eth=eth, ip=ip, udp=udp, bth=bth, **hdrs)


@SETTINGS
@given(frames())
def test_property_random_fields_round_trip(f):
    """MR-WIRE-010, MR-WIRE-011, MR-WIRE-020, MR-WIRE-030, MR-WIRE-050, MR-WIRE-052, MR-WIRE-054, MR-WIRE-060,
    MR-WIRE-061, MR-WIRE-062, MR-WIRE-063, MR-WIRE-071, MR-WIRE-072, MR-WIRE-073, MR-WIRE-074, MR-WIRE-080:
    any field values within their widths survive encode then decode."""
    want = normalized(f)
    data = encode(f)
    g = decode(data)
    assert g.icrc_ok
    assert strip(g) == want


@SETTINGS
@given(st.data())
def test_property_every_header_round_trips(data):
    """MR-WIRE-050, MR-WIRE-060, MR-WIRE-061, MR-WIRE-062, MR-WIRE-063, MR-WIRE-071, MR-WIRE-072, MR-WIRE-073,
    MR-WIRE-074: each header alone round-trips through its encoder."""
    for name, strat in HEADER_ST.items():
        h = data.draw(strat)
        raw = codec.encode_ext(name, h)
        assert len(raw) == wire.HEADER_LEN[name]
        assert codec.decode_ext(name, raw) == h
    b = BTH(data.draw(u(8)), data.draw(u(1)), data.draw(u(1)), data.draw(u(2)), data.draw(u(4)), data.draw(u(16)),
            data.draw(u(1)), data.draw(u(1)), data.draw(u(24)), data.draw(u(1)), data.draw(u(24)))
    raw = codec.encode_bth(b)
    assert len(raw) == wire.BTH_LEN and codec.decode_bth(raw) == b


# ---------------------------------------------------------------------------------------------
# Hypothesis: bad bytes never escape as anything but DecodeError (MR-WIRE-105)

JSON_KEYS = {"frame", "ok", "error", "eth", "ip", "udp", "bth", "payload_len", "icrc_ok"}
OPTIONAL_KEYS = {"reth", "aeth", "atomicack", "atomiceth", "imm", "mrdh", "mrsh", "mrah", "mrnh", "mrsec", "mrch"}


def check_total(data):
    """decode returns a Frame or raises DecodeError (never the internal fallback); decode_json
    never raises and gives a JSON-serialisable object with the documented keys."""
    try:
        f = decode(data)
    except DecodeError as e:
        assert not e.detail.startswith("internal"), e.detail
        assert isinstance(e.reason, Reason) and e.reason != Reason.NONE
        verdict = e.reason.label
    else:
        assert f.icrc_ok is True
        verdict = None
    obj = decode_json(1, data)
    json.dumps(obj)
    assert JSON_KEYS <= set(obj) <= JSON_KEYS | OPTIONAL_KEYS
    assert obj["error"] == verdict and obj["ok"] == (verdict is None)
    return verdict


@SETTINGS
@given(st.binary(max_size=200))
def test_property_random_bytes_never_crash(data):
    """MR-WIRE-105: arbitrary bytes give a Frame or a DecodeError with a reason."""
    check_total(data)


@SETTINGS
@given(st.binary(max_size=120), st.sampled_from([4, 6]), st.booleans())
def test_property_random_bytes_behind_roce_headers(body, version, vlan):
    """MR-WIRE-105: random bytes after valid Ethernet/IP/UDP-4791 headers, with lengths and
    checksums consistent (so the BTH and later checks are reached)."""
    base = encode(sample_frame(Op.RC_ACK, version, 5 if vlan else None))
    check_total(relength(base, body))


mutation = st.one_of(
    st.tuples(st.just("flip"), st.integers(0, 10_000), u(3)),
    st.tuples(st.just("insert"), st.integers(0, 10_000), u(8)),
    st.tuples(st.just("delete"), st.integers(0, 10_000), st.just(0)),
    st.tuples(st.just("set"), st.integers(0, 10_000), u(8)),
)


@SETTINGS
@given(frames(), st.lists(mutation, min_size=1, max_size=4), st.integers(0, 300))
def test_property_mutated_frames_never_crash(f, muts, cut):
    """MR-WIRE-105: valid frames with bit flips, byte insertions, deletions and truncation."""
    b = bytearray(encode(f))
    for kind, pos, val in muts:
        pos %= len(b) + (kind == "insert")
        if kind == "flip":
            b[pos] ^= 1 << val
        elif kind == "insert":
            b.insert(pos, val)
        elif kind == "delete" and b:
            del b[pos]
        elif kind == "set":
            b[pos] = val
        if not b:
            break
    check_total(bytes(b))
    check_total(bytes(b[:cut]))


# ---------------------------------------------------------------------------------------------
# Every error reason, exactly

@pytest.mark.parametrize("op", ALL_OPS, ids=lambda o: o.name)
@pytest.mark.parametrize("version,vlan", [(4, None), (6, 7)])
def test_truncated_at_every_length(op, version, vlan):
    """MR-WIRE-102: every proper prefix of a valid frame is `truncated`, with the headers decoded
    so far reported."""
    data = encode(sample_frame(op, version, vlan))
    l3 = l3_offset(data)
    udp_at = l3 + (20 if version == 4 else 40)
    for n in range(len(data)):
        with pytest.raises(DecodeError) as ei:
            decode(data[:n])
        e = ei.value
        assert e.reason == Reason.TRUNCATED, (n, e)
        pf = e.frame
        assert pf.bth is None  # the IP length is checked before the BTH is read
        if n >= 14:
            assert pf.eth.src == "02:aa:bb:cc:dd:ee"
        if n >= udp_at:
            assert pf.ip.src in ("192.168.1.10", "2001:db8::1")
        if n >= udp_at + 4:
            assert pf.udp.sport == 0xC0DE
        obj = decode_json(3, data[:n])
        assert obj["error"] == "truncated" and obj["ok"] is False and obj["payload_len"] is None
        assert obj["bth"] is None


@pytest.mark.parametrize("version", [4, 6])
def test_icrc_error(version):
    """MR-WIRE-093: a corrupted payload byte or ICRC byte is `icrc`; fields are still reported."""
    data = encode(sample_frame(Op.MR_WRITE, version, payload_len=9))
    for pos in (len(data) - 6, len(data) - 1, bth_offset(data) + 13):
        bad = bytearray(data)
        bad[pos] ^= 0x40
        with pytest.raises(DecodeError) as ei:
            decode(bytes(bad))
        assert ei.value.reason == Reason.ICRC
        assert ei.value.frame.icrc_ok is False
        assert ei.value.frame.bth.dest_qp == 0xABCDEF
        obj = decode_json(1, bytes(bad))
        assert obj["error"] == "icrc" and obj["icrc_ok"] is False and obj["bth"]["psn"] == 0x123456
        # Without verification the frame decodes.
        assert decode(bytes(bad), verify_icrc=False).icrc_ok is None


@pytest.mark.parametrize("version", [4, 6])
def test_single_bit_flips_are_detected(version):
    """MR-WIRE-023, MR-WIRE-090, MR-WIRE-092: every single-bit flip from the IP header to the ICRC is
    rejected, except in the fields the ICRC masks and nothing else checks (IPv4: UDP checksum, BTH byte 4;
    IPv6: traffic class, flow label, hop limit, UDP checksum, BTH byte 4)."""
    data = encode(sample_frame(Op.MR_SEND_IMM, version, vlan=3, payload_len=6))
    l3 = l3_offset(data)
    ih = 20 if version == 4 else 40
    b = bth_offset(data)
    masked = {l3 + ih + 6, l3 + ih + 7, b + 4}
    if version == 6:
        masked |= {l3 + 1, l3 + 2, l3 + 3, l3 + 7}
    for pos in range(l3, len(data)):
        for bit in range(8):
            if version == 6 and pos == l3 and bit >= 4:
                continue  # IP version nibble: checked below as not_roce
            bad = bytearray(data)
            bad[pos] ^= 1 << bit
            try:
                decode(bytes(bad))
                accepted = True
            except DecodeError:
                accepted = False
            want = pos in masked or (version == 6 and pos == l3 and bit < 4)
            assert accepted == want, (pos, bit)


def test_not_roce():
    """MR-WIRE-040, MR-WIRE-101: frames that are not UDP/4791 RoCE candidates are `not_roce` with the
    headers reached reported."""
    good = encode(sample_frame(Op.RC_SEND_ONLY))
    cases = {
        "arp": good[:12] + b"\x08\x06" + bytes(28),
        "qinq": good[:12] + b"\x88\xa8" + good[12:],
        "ipv4_options": patch(good, 14, b"\x46"),
        "ipv4_fragment": patch(good, 20, b"\x20\x00"),
        "ipv4_tcp": patch(good, 23, b"\x06"),
        "udp_other_port": patch(good, 36, struct.pack("!H", 4792)),
        "udp_port_swapped": patch(good, 34, struct.pack("!HH", 4791, 0xC0DE)),
        "ipv6_ethertype_v4_packet": good[:12] + b"\x86\xdd" + good[14:] + bytes(20),
    }
    for name, d in cases.items():
        with pytest.raises(DecodeError) as ei:
            decode(d)
        assert ei.value.reason == Reason.NOT_ROCE, name
    # Partial fields: a wrong port still reports IP and UDP.
    with pytest.raises(DecodeError) as ei:
        decode(cases["udp_other_port"])
    assert ei.value.frame.udp.dport == 4792 and ei.value.frame.ip.dst == "192.168.2.20"
    obj = decode_json(1, cases["udp_other_port"])
    assert obj["udp"] == {"sport": 0xC0DE, "dport": 4792} and obj["bth"] is None
    v6 = encode(sample_frame(Op.RC_SEND_ONLY, 6))
    assert reason_of(patch(v6, 14 + 6, b"\x06")) == Reason.NOT_ROCE  # next header TCP
    assert reason_of(patch(v6, 14 + 40 + 2, struct.pack("!H", 53))) == Reason.NOT_ROCE


def test_bad_ip_checksum():
    """MR-WIRE-023: a wrong IPv4 header checksum is `bad_ip`, even with a good ICRC."""
    good = encode(sample_frame(Op.MR_ACK))
    bad = bytearray(good)
    bad[24] ^= 0x01
    assert reason_of(bytes(bad)) == Reason.BAD_IP
    # A TTL change without fixing the checksum is bad_ip (the ICRC alone would accept it).
    bad = bytearray(good)
    bad[22] -= 1
    assert reason_of(bytes(bad)) == Reason.BAD_IP


@pytest.mark.parametrize("opcode", [0x15, 0x16, 0x20, 0x24, 0x64, 0x80, 0x82, 0xBF, 0xCF, 0xDF, 0xFF])
def test_bad_opcode(opcode):
    """MR-WIRE-051: opcodes outside the accepted set are `bad_opcode`, with the BTH reported
    (0xCE, MR_ANNOUNCE, is optional: tests/test_announce.py, MR-WIRE-084)."""
    good = encode(sample_frame(Op.RC_SEND_ONLY))
    b = bth_offset(good)
    with pytest.raises(DecodeError) as ei:
        decode(patch(good, b, bytes([opcode])))
    assert ei.value.reason == Reason.BAD_OPCODE
    assert ei.value.frame.bth.opcode == opcode and ei.value.frame.bth.psn == 0x123456
    obj = decode_json(1, patch(good, b, bytes([opcode])))
    assert obj["bth"]["opcode"] == opcode and obj["error"] == "bad_opcode"


@pytest.mark.parametrize("tver", range(1, 16))
def test_bad_bth_version(tver):
    """MR-WIRE-050: BTH TVer other than 0 is `bad_version`."""
    good = encode(sample_frame(Op.MR_WRITE))
    b = bth_offset(good)
    assert reason_of(patch(good, b + 1, bytes([(good[b + 1] & 0xF0) | tver]))) == Reason.BAD_VERSION


@pytest.mark.parametrize("op", sorted(wire.MR_OPS), ids=lambda o: o.name)
@pytest.mark.parametrize("version", [0, 2, 15])
def test_bad_metaroce_version(op, version):
    """MR-WIRE-001, MR-WIRE-075: a MetaRoCE header version other than 1 is `bad_version`, also when the
    header is cut short (the version is checked before the length)."""
    good = encode(sample_frame(op))
    b = bth_offset(good)
    bad = patch(good, b + 12, bytes([(version << 4) | (good[b + 12] & 0xF)]))
    assert reason_of(bad) == Reason.BAD_VERSION
    short = relength(good, bad[b:b + 12 + 3])
    assert reason_of(short) == Reason.BAD_VERSION
    # ... and with the right version the short header is a length error.
    assert reason_of(relength(good, good[b:b + 12 + 3])) == Reason.LENGTH


def test_length_errors():
    """MR-WIRE-101 step 3 and 5, MR-WIRE-080, MR-WIRE-081: lengths that disagree are `length`."""
    good = encode(sample_frame(Op.MR_WRITE, payload_len=6))
    b = bth_offset(good)
    udp = b - 8
    # UDP length != IP payload length (both directions).
    for delta in (-4, -1, 1, 4):
        ulen = struct.unpack("!H", good[udp + 4:udp + 6])[0]
        assert reason_of(patch(good, udp + 4, struct.pack("!H", ulen + delta), icrc=False)) == Reason.LENGTH
    # IPv6 payload length shorter than the UDP length (the rest would be Ethernet padding).
    g6 = encode(sample_frame(Op.MR_WRITE, 6))
    plen = struct.unpack("!H", g6[18:20])[0]
    assert reason_of(patch(g6, 18, struct.pack("!H", plen - 4), icrc=False)) == Reason.LENGTH
    # UDP payload too short for BTH + ICRC.
    assert reason_of(relength(good, good[b:b + 8])) == Reason.LENGTH
    # Headers longer than the packet: MRAH cut to 20 bytes; RETH missing from an MR write.
    ack = encode(sample_frame(Op.MR_ACK))
    assert reason_of(relength(ack, ack[b:b + 12 + 20])) == Reason.LENGTH
    assert reason_of(relength(good, good[b:b + 12 + 16])) == Reason.LENGTH
    # Pad larger than the bytes after the headers: an RC ACK (no payload) with PadCnt 3.
    rc_ack = encode(sample_frame(Op.RC_ACK))
    assert reason_of(patch(rc_ack, b + 1, bytes([rc_ack[b + 1] | 0x30]))) == Reason.LENGTH
    # A send whose body after the headers is 1 byte but whose PadCnt says 3.
    send = encode(sample_frame(Op.RC_SEND_ONLY, payload_len=0))
    one = relength(send, send[b:b + 12] + b"\x00")
    one = patch(one, b + 1, bytes([one[b + 1] | 0x30]))
    assert reason_of(one) == Reason.LENGTH
    # Bytes after the headers of an opcode without payload.
    assert reason_of(relength(ack, ack[b:-4] + b"\0\0\0\0")) == Reason.LENGTH
    # Partial fields: the BTH and the headers before the failure are reported.
    with pytest.raises(DecodeError) as ei:
        decode(relength(ack, ack[b:-4] + b"\0\0\0\0"))
    assert ei.value.frame.bth.opcode == Op.MR_ACK


@pytest.mark.parametrize("sport", [0, 4791, 0xBFFF, 0xC000, 0xFFFF])
@pytest.mark.parametrize("pkey", [0, 0x7FFF, 0xFFFF])
def test_source_port_and_pkey_are_carried(sport, pkey):
    """MR-WIRE-041, MR-WIRE-053: the UDP source port (path entropy) and the P_Key are carried and
    reported as sent, and neither decides whether a frame is accepted; the default source port
    lies in the entropy range 0xC000-0xFFFF."""
    f = sample_frame(Op.MR_ACK)
    f.udp.sport, f.bth.pkey = sport, pkey
    g = decode(encode(f))
    assert (g.udp.sport, g.bth.pkey) == (sport, pkey)
    assert make(Op.MR_WRITE).udp.sport & ~wire.ENTROPY_MASK == wire.ENTROPY_BASE


@pytest.mark.parametrize("header,field,value", [
    ("bth", "psn", 1 << 24), ("bth", "psn", -1), ("bth", "dest_qp", 1 << 24), ("bth", "tver", 16),
    ("bth", "se", 2), ("ip", "ecn", 4), ("ip", "dscp", 64), ("ip", "flow_label", 1 << 20),
    ("eth", "vlan", 4096), ("udp", "sport", 1 << 16), ("mrdh", "flags", 16), ("mrdh", "path", 256),
    ("reth", "va", 1 << 64), ("imm", None, 1 << 32),
])
def test_encode_refuses_values_that_do_not_fit(header, field, value):
    """MR-WIRE-011, MR-WIRE-022, MR-WIRE-050, MR-WIRE-060, MR-WIRE-062, MR-WIRE-071: a field value
    wider than its wire field is refused with the field's name, instead of being truncated into
    its neighbours (a PSN of 2^24 would otherwise go out as 0, an ECN of 4 would change the DSCP)."""
    f = sample_frame(Op.MR_WRITE_IMM, 6)
    if field is None:
        setattr(f, header, value)
    else:
        setattr(getattr(f, header), field, value)
    with pytest.raises(ValueError, match=f"{header}.{field}" if field else header):
        encode(f)


def test_reason_labels():
    """MR-WIRE-100: the JSON reason labels."""
    assert {r.label for r in Reason} >= {"truncated", "icrc", "not_roce", "bad_ip", "bad_opcode",
                                         "bad_version", "length"}


def test_decode_accepts_bytearray_and_memoryview():
    """MR-WIRE-105: any bytes-like input."""
    d = encode(sample_frame(Op.MR_NAK))
    assert decode(bytearray(d)).mrnh == SAMPLE["mrnh"]
    assert decode(memoryview(d)).mrnh == SAMPLE["mrnh"]


def test_to_json_documented_names():
    """MR-WIRE-110: JSON names and types for an accepted MetaRoCE ACK and write."""
    ack = decode_json(4, encode(sample_frame(Op.MR_ACK, 6, vlan=12)))
    assert ack["frame"] == 4 and ack["ok"] is True and ack["error"] is None and ack["icrc_ok"] is True
    assert ack["eth"] == {"src": "02:aa:bb:cc:dd:ee", "dst": "0a:1b:2c:3d:4e:5f", "vlan": 12}
    assert ack["ip"] == {"version": 6, "src": "2001:db8::1", "dst": "fd00::2", "dscp": 10, "ecn": 2}
    assert ack["udp"] == {"sport": 0xC0DE, "dport": 4791}
    assert ack["bth"] == {"opcode": 0xC4, "se": 1, "mig": 1, "pad": 0, "tver": 0, "pkey": 0x8001, "fecn": 1,
                          "becn": 0, "dest_qp": 0xABCDEF, "ack_req": 1, "psn": 0x123456}
    assert ack["mrah"] == dataclasses.asdict(SAMPLE["mrah"]) and ack["payload_len"] == 0
    assert json.loads(json.dumps(ack))["mrah"]["sack"] == SAMPLE["mrah"].sack
    w = decode_json(1, encode(sample_frame(Op.MR_WRITE_IMM, payload_len=7)))
    assert w["mrdh"] == dataclasses.asdict(SAMPLE["mrdh"]) and w["reth"] == dataclasses.asdict(SAMPLE["reth"])
    assert w["imm"] == 0xDEADBEEF and w["payload_len"] == 7 and w["bth"]["pad"] == 1
    assert "mrsh" not in w and "aeth" not in w


def test_summary_line():
    """MR-WIRE-110: the human-readable summary is one line naming the opcode and the verdict."""
    d = encode(sample_frame(Op.MR_SEND, payload_len=3))
    line = codec.summary(1, decode_json(1, d))
    assert "\n" not in line and "MR_SEND" in line and line.endswith("OK") and "len=3" in line
    bad = codec.summary(2, decode_json(2, d[:-1] + bytes([d[-1] ^ 1])))
    assert bad.endswith("ERROR icrc")
