"""The RX parser's shared case list: frames with the outcome each must have.

Used by the parser's cocotb testbench (:mod:`metaroce.tb.parser`), its pytest entry, the
model-only sweeps and ``metaroce replay``.  A :class:`Case` is the bytes of one frame
(Ethernet header to ICRC, no FCS) plus the MAC error flag (``tuser`` on its last beat).
Expected outcomes come from :func:`metaroce.models.codec.decode` (the one decoder), except
for the scapy-built cases, whose fields are also read from scapy's own packet objects
(``oracle``): an implementation independent of the codec.

Groups (:func:`all_cases`):

* ``valid``: every opcode of :class:`~metaroce.models.wire.Op`, IPv4 and IPv6, with and
  without 802.1Q, payloads giving pad 0-3, PSN edges 0, 2^23-1, 2^23, 2^24-1, extreme
  header values, Ethernet padding after the IP packet;
* ``drop``: every drop reason (truncated, bad_ip, length, bad_opcode, bad_version, icrc,
  mac_error) in several places of the frame;
* ``bypass``: non-RoCE frames (ARP, LLDP, TCP, other UDP ports, IPv4 options and fragments,
  IPv6 non-UDP), which leave intact on the bypass stream;
* ``scapy``: frames built with ``scapy.contrib.roce`` (+ spec-table extension headers);
* ``random`` / ``mutated``: seeded random frames and single mutations of them.
"""
from __future__ import annotations

import random
import struct
from dataclasses import dataclass, field, replace

from metaroce.models import codec, wire
from metaroce.models.codec import AETH, BTH, IP, MRAH, MRDH, MRNH, MRSH, RETH, UDP, AtomicAck, Eth
from metaroce.models.wire import Op, Reason

PSN_EDGES = (0, (1 << 23) - 1, 1 << 23, (1 << 24) - 1)
MIN_FRAME = 60  # Ethernet minimum without FCS: a MAC pads shorter frames


@dataclass
class Case:
    name: str
    data: bytes
    mac_error: bool = False
    group: str = ""
    oracle: dict | None = field(default=None, repr=False)  # scapy's field values

    def decoded(self):
        """``(Frame or None, Reason)`` from the codec, ignoring the MAC error flag."""
        try:
            return codec.decode(self.data), Reason.NONE
        except codec.DecodeError as e:
            return e.frame, e.reason


def expected_reason(case: Case, max_frame: int = 9216) -> Reason:
    """What the RX parser must do with ``case`` (MR-HW-020): ``mac_error`` for a MAC error
    (whatever the frame), ``length`` for a frame longer than ``max_frame`` (MR-HW-031),
    otherwise the codec's verdict (``not_roce`` meaning bypass)."""
    if case.mac_error:
        return Reason.MAC_ERROR
    if len(case.data) > max_frame:
        return Reason.LENGTH
    return case.decoded()[1]


# ---------------------------------------------------------------------------------------
# building blocks

def _headers_for(op, rng=None, extreme=False):
    """Extension header objects for ``op`` (defaults, random, or all-ones values)."""
    def r(bits):
        if extreme:
            return (1 << bits) - 1
        return rng.getrandbits(bits) if rng else 0
    h = {}
    for name in wire.HEADERS[Op(op)]:
        if name == "reth":
            h["reth"] = RETH(r(64), r(32), r(32))
        elif name == "aeth":
            h["aeth"] = AETH(r(8), r(24))
        elif name == "imm":
            h["imm"] = r(32)
        elif name == "atomicack":
            h["atomicack"] = AtomicAck(r(64))
        elif name == "mrdh":
            h["mrdh"] = MRDH(wire.MR_VERSION, r(4), r(8), r(16), r(32), r(32), r(32))
        elif name == "mrsh":
            h["mrsh"] = MRSH(r(32))
        elif name == "mrah":
            h["mrah"] = MRAH(wire.MR_VERSION, r(4), r(8), r(16), r(32), r(32), r(32), r(256))
        elif name == "mrnh":
            h["mrnh"] = MRNH(wire.MR_VERSION, r(4), r(8), r(8), r(32))
    return h


def frame(op, payload=b"", *, ipv6=False, vlan=None, psn=0, qp=0x000123, rng=None,
          extreme=False, **bth_kw):
    """A codec :class:`~metaroce.models.codec.Frame` for ``op``."""
    op = Op(op)
    if op not in wire.PAYLOAD_OPS:
        payload = b""
    eth = Eth(vlan=vlan, pcp=5 if vlan is not None else 0)
    ip = IP(version=6, src="2001:db8::1", dst="2001:db8::2", flow_label=0xABCDE) if ipv6 else IP()
    bth = BTH(opcode=op, psn=psn, dest_qp=qp, **bth_kw)
    return codec.make(op, payload, eth=eth, ip=ip, bth=bth, **_headers_for(op, rng, extreme))


def enc(f) -> bytes:
    return codec.encode(f)


def _pad60(data: bytes) -> bytes:
    return data + bytes(max(0, MIN_FRAME - len(data)))


def _payload(n, seed=0):
    return bytes((i * 7 + seed) & 0xFF for i in range(n))


def _l3_offset(data: bytes) -> int:
    return 18 if data[12:14] == b"\x81\x00" else 14


def _fix_ipv4_checksum(data: bytearray, off: int) -> None:
    data[off + 10:off + 12] = b"\0\0"
    s = sum(struct.unpack("!10H", bytes(data[off:off + 20])))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    data[off + 10:off + 12] = struct.pack("!H", ~s & 0xFFFF)


def _fix_icrc(data: bytearray) -> None:
    """Recompute the ICRC of a (possibly edited) RoCE frame in place (IP length decides)."""
    from metaroce.models.icrc import icrc_bytes
    off = _l3_offset(data)
    if data[off] >> 4 == 4:
        end = off + struct.unpack("!H", data[off + 2:off + 4])[0]
    else:
        end = off + 40 + struct.unpack("!H", data[off + 4:off + 6])[0]
    data[end - 4:end] = icrc_bytes(bytes(data[off:end - 4]))


def _bth_offset(data: bytes) -> int:
    off = _l3_offset(data)
    return off + (20 if data[off] >> 4 == 4 else 40) + 8


# ---------------------------------------------------------------------------------------
# groups

def valid_cases() -> list[Case]:
    out = []
    for op in Op:
        has = op in wire.PAYLOAD_OPS
        sizes = (0, 1, 2, 3) if has else (0,)
        for n in sizes:
            out.append(Case(f"{op.name}-v4-len{n}", enc(frame(op, _payload(n, op))), group="valid"))
        out.append(Case(f"{op.name}-v6-vlan", enc(frame(op, _payload(45, op), ipv6=True, vlan=4094)),
                        group="valid"))
        out.append(Case(f"{op.name}-v4-vlan-extreme",
                        enc(frame(op, _payload(9, op), vlan=1, extreme=True, psn=(1 << 24) - 1,
                                  qp=(1 << 24) - 1, pkey=0xFFFF, se=1, mig=1, ack_req=1)),
                        group="valid"))
        out.append(Case(f"{op.name}-v6-extreme",
                        enc(frame(op, _payload(6, op), ipv6=True, extreme=True, qp=0)), group="valid"))
    for psn in PSN_EDGES:
        for op in (Op.MR_WRITE, Op.RC_SEND_ONLY, Op.MR_ACK):
            out.append(Case(f"psn-{psn:#x}-{op.name}", enc(frame(op, _payload(8), psn=psn)), group="valid"))
    for n in (4, 5, 6, 7, 60, 61, 62, 63, 64, 65, 127, 128, 129, 1024, 1500 - 80):
        out.append(Case(f"MR_SEND-len{n}", enc(frame(Op.MR_SEND, _payload(n, n))), group="valid"))
        out.append(Case(f"MR_WRITE-v6-len{n}", enc(frame(Op.MR_WRITE, _payload(n, n), ipv6=True)),
                        group="valid"))
    # FECN/BECN and ECN are masked out of the ICRC: marked frames stay valid.
    out.append(Case("fecn-becn-ce", enc(frame(Op.MR_WRITE, b"abcd", fecn=1, becn=1)), group="valid"))
    # Short frames padded by the MAC to 60 bytes: bytes after the IP packet are ignored.
    for op in (Op.RC_ACK, Op.CNP, Op.MR_NAK, Op.RC_SEND_ONLY):
        d = enc(frame(op, b"x"))
        out.append(Case(f"{op.name}-eth-padded", _pad60(d) if len(d) < MIN_FRAME else d + bytes(6),
                        group="valid"))
    out.append(Case("jumbo-9000", enc(frame(Op.MR_WRITE, _payload(9000 - 14 - 20 - 8 - 12 - 32 - 4, 3))),
                    group="valid"))
    return out


def drop_cases() -> list[Case]:
    out = []
    base4 = enc(frame(Op.MR_WRITE, _payload(100)))
    base6 = enc(frame(Op.MR_SEND, _payload(37), ipv6=True, vlan=7))
    # truncated: cut inside every header and inside the payload
    for base, tag in ((base4, "v4"), (base6, "v6vlan")):
        l3 = _l3_offset(base)
        bth = _bth_offset(base)
        for cut in sorted({6, 13, l3 + 1, l3 + 10, bth - 6, bth - 1, bth + 5, bth + 20, bth + 40,
                           len(base) - 30, len(base) - 4, len(base) - 1}):
            if 0 < cut < len(base):
                out.append(Case(f"truncated-{tag}-at{cut}", base[:cut], group="drop"))
    # bad IPv4 header checksum
    d = bytearray(base4)
    d[24] ^= 0x01
    out.append(Case("bad_ip-checksum", bytes(d), group="drop"))
    d = bytearray(enc(frame(Op.RC_ACK, vlan=100)))
    d[18 + 11] ^= 0x80
    out.append(Case("bad_ip-checksum-vlan-ack", bytes(d), group="drop"))
    # length: UDP length disagrees with the IP length
    for delta in (-4, -1, 1, 4):
        d = bytearray(base4)
        ul = struct.unpack("!H", d[14 + 24:14 + 26])[0]
        d[14 + 24:14 + 26] = struct.pack("!H", ul + delta)
        out.append(Case(f"length-udp{delta:+d}", bytes(d), group="drop"))
    # length: IP length shorter than the frame's headers need (IP and UDP agree)
    for op, keep in ((Op.MR_WRITE, 20), (Op.MR_ACK, 30), (Op.RC_ACK, 0)):
        f = frame(op, b"")
        d = bytearray(enc(f))
        l4 = 8 + 12 + keep + 4
        d[14 + 2:14 + 4] = struct.pack("!H", 20 + l4)
        d[14 + 24:14 + 26] = struct.pack("!H", l4)
        _fix_ipv4_checksum(d, 14)
        d = d[:14 + 20 + l4]
        _fix_icrc(d)
        out.append(Case(f"length-short-{op.name}", bytes(d), group="drop"))
    # length: payload on an opcode without payload; pad larger than the payload
    d = bytearray(enc(frame(Op.RC_SEND_ONLY, b"abcdefgh")))
    d[14 + 20 + 8] = Op.RC_ACK
    _fix_icrc(d)
    out.append(Case("length-payload-on-ack", bytes(d), group="drop"))
    d = bytearray(enc(frame(Op.RC_SEND_ONLY, b"ab")))
    d[14 + 20 + 8 + 1] = (d[14 + 20 + 8 + 1] & 0xCF) | 0x30  # PadCnt 3 > 4 body bytes? body=4
    d2 = bytearray(enc(frame(Op.RC_SEND_ONLY, b"")))
    d2[14 + 20 + 8 + 1] |= 0x30
    _fix_icrc(d2)
    out.append(Case("length-pad-exceeds-payload", bytes(d2), group="drop"))
    # bad opcode
    for bad_op in (0x15, 0x20, 0x64, 0x80, 0x82, 0xBF, 0xDF, 0xFF):
        d = bytearray(base4)
        d[14 + 20 + 8] = bad_op
        _fix_icrc(d)
        out.append(Case(f"bad_opcode-{bad_op:#04x}", bytes(d), group="drop"))
    # bad version: BTH TVer, MetaRoCE header version nibble
    for tver in (1, 8, 15):
        d = bytearray(base4)
        d[14 + 20 + 8 + 1] = (d[14 + 20 + 8 + 1] & 0xF0) | tver
        _fix_icrc(d)
        out.append(Case(f"bad_version-tver{tver}", bytes(d), group="drop"))
    for op in (Op.MR_WRITE, Op.MR_ACK, Op.MR_NAK, Op.MR_SEND_IMM):
        for v in (0, 2, 15):
            d = bytearray(enc(frame(op, b"xyz")))
            b = 14 + 20 + 8 + 12
            d[b] = (v << 4) | (d[b] & 0xF)
            _fix_icrc(d)
            out.append(Case(f"bad_version-{op.name}-v{v}", bytes(d), group="drop"))
    # ICRC: a flipped bit anywhere covered, a wrong ICRC
    for pos in (14 + 12, 14 + 20 + 0, 14 + 20 + 8 + 5, 14 + 20 + 8 + 12 + 3, 100, len(base4) - 5,
                len(base4) - 1):
        d = bytearray(base4)
        d[pos] ^= 0x10
        if pos < 14 + 20:
            _fix_ipv4_checksum(d, 14)
        out.append(Case(f"icrc-flip-at{pos}", bytes(d), group="drop"))
    d = bytearray(base6)
    d[-10] ^= 0xFF
    out.append(Case("icrc-flip-v6", bytes(d), group="drop"))
    out.append(Case("icrc-zero", enc(replace(frame(Op.RC_ACK), icrc=0)), group="drop"))
    # oversize (more than max_frame = 9216 bytes), RoCE or not; exactly 9216 is fine
    big = enc(frame(Op.MR_WRITE, _payload(9124, 5))) + bytes(2)  # + 2 bytes Ethernet padding
    assert len(big) == 9216
    out.append(Case("max-frame-9216", big, group="valid"))
    out.append(Case("length-oversize-roce", enc(frame(Op.MR_WRITE, _payload(9300, 6))), group="drop"))
    mac = bytes.fromhex("020000000002020000000001")
    out.append(Case("length-oversize-non-roce", mac + b"\x88\xb5" + _payload(9300, 7), group="drop"))
    # MAC error on otherwise good frames, on a bad one and on a non-RoCE one
    for c in (Case("mac_error-mrwrite", base4, True), Case("mac_error-v6", base6, True),
              Case("mac_error-ack-padded", _pad60(enc(frame(Op.RC_ACK))), True),
              Case("mac_error-and-icrc", bytes(out[-4].data), True),
              Case("mac_error-non-roce", mac + b"\x08\x06" + bytes(46), True)):
        c.group = "drop"
        out.append(c)
    return out


def bypass_cases() -> list[Case]:
    out = []
    mac = bytes.fromhex("020000000002020000000001")
    out.append(Case("arp", _pad60(mac + b"\x08\x06" + bytes(range(28))), group="bypass"))
    out.append(Case("lldp-vlan", _pad60(mac + b"\x81\x00\x00\x05\x88\xcc" + bytes(40)), group="bypass"))
    out.append(Case("short-ethertype-only", mac + b"\x88\xb5" + b"\x01", group="bypass"))
    base = bytearray(enc(frame(Op.MR_WRITE, _payload(20))))
    d = bytearray(base)
    d[14 + 9] = 6  # TCP
    _fix_ipv4_checksum(d, 14)
    out.append(Case("ipv4-tcp", bytes(d), group="bypass"))
    d = bytearray(base)
    d[14 + 22:14 + 24] = struct.pack("!H", 4792)
    out.append(Case("udp-port-4792", bytes(d), group="bypass"))
    d = bytearray(base)
    d[14 + 22:14 + 24] = struct.pack("!H", 53)
    d[14 + 20:14 + 22] = struct.pack("!H", 4791)  # RoCE port as *source* only
    out.append(Case("udp-dns-sport-4791", bytes(d), group="bypass"))
    d = bytearray(base)
    d[14] = 0x46  # IHL 6: options
    _fix_ipv4_checksum(d, 14)
    out.append(Case("ipv4-options", bytes(d), group="bypass"))
    for flags, tag in ((0x2000, "mf"), (0x0001, "offset")):
        d = bytearray(base)
        d[14 + 6:14 + 8] = struct.pack("!H", flags)
        _fix_ipv4_checksum(d, 14)
        out.append(Case(f"ipv4-fragment-{tag}", bytes(d), group="bypass"))
    d = bytearray(enc(frame(Op.MR_WRITE, _payload(20), ipv6=True)))
    d[14 + 6] = 6
    out.append(Case("ipv6-tcp", bytes(d), group="bypass"))
    d = bytearray(enc(frame(Op.MR_WRITE, _payload(20), ipv6=True)))
    d[14] = 0x40 | (d[14] & 0x0F)  # version 4 inside an IPv6 ethertype
    out.append(Case("ipv6-ethertype-version4", bytes(d), group="bypass"))
    out.append(Case("big-non-roce", mac + b"\x88\xb5" + _payload(1600, 9), group="bypass"))
    return out


# ---------------------------------------------------------------------------------------
# scapy: an independent implementation of the base headers and the ICRC

def scapy_cases() -> list[Case]:
    """Frames built by scapy (``scapy.contrib.roce`` computes the ICRC); extension headers
    from the spec tables with ``struct``.  ``oracle`` holds scapy's own field values."""
    from scapy.contrib.roce import BTH as SBTH
    from scapy.layers.inet import IP as SIP
    from scapy.layers.inet import UDP as SUDP
    from scapy.layers.inet6 import IPv6
    from scapy.layers.l2 import Dot1Q, Ether
    from scapy.packet import Raw

    out = []
    rng = random.Random(4791)
    specs = []
    for op in (Op.RC_SEND_ONLY, Op.RC_WRITE_ONLY, Op.RC_ACK, Op.RC_READ_REQUEST, Op.MR_WRITE,
               Op.MR_WRITE_IMM, Op.MR_SEND, Op.MR_SEND_IMM, Op.MR_ACK, Op.MR_NAK, Op.CNP):
        for v6 in (False, True):
            for psn in (PSN_EDGES if op in (Op.MR_WRITE, Op.RC_SEND_ONLY) else (rng.getrandbits(24),)):
                specs.append((op, v6, psn))
    for k, (op, v6, psn) in enumerate(specs):
        n = rng.choice([0, 1, 2, 3, 17, 64, 200]) if op in wire.PAYLOAD_OPS else 0
        payload = bytes(rng.getrandbits(8) for _ in range(n))
        pad = (-n) % 4
        vlan = rng.choice([None, rng.randrange(1, 4095)])
        ext_vals = {}
        ext = b""
        for name in wire.HEADERS[op]:
            if name == "reth":
                va, rkey, dl = rng.getrandbits(64), rng.getrandbits(32), rng.getrandbits(32)
                ext += struct.pack("!QII", va, rkey, dl)
                ext_vals["reth"] = {"va": va, "rkey": rkey, "dma_len": dl}
            elif name == "imm":
                imm = rng.getrandbits(32)
                ext += struct.pack("!I", imm)
                ext_vals["imm"] = imm
            elif name == "aeth":
                syn, msn = rng.getrandbits(8), rng.getrandbits(24)
                ext += struct.pack("!I", (syn << 24) | msn)
                ext_vals["aeth"] = {"syndrome": syn, "msn": msn}
            elif name == "mrdh":
                vals = dict(version=1, flags=rng.getrandbits(4), path=rng.getrandbits(8),
                            stream=rng.getrandbits(16), msg=rng.getrandbits(32),
                            offset=rng.getrandbits(32), msg_len=rng.getrandbits(32))
                ext += struct.pack("!BBHIII", 0x10 | vals["flags"], vals["path"], vals["stream"],
                                   vals["msg"], vals["offset"], vals["msg_len"])
                ext_vals["mrdh"] = vals
            elif name == "mrsh":
                rs = rng.getrandbits(32)
                ext += struct.pack("!I", rs)
                ext_vals["mrsh"] = {"recv_seq": rs}
            elif name == "mrah":
                vals = dict(version=1, flags=rng.getrandbits(4), path=rng.getrandbits(8),
                            ce_count=rng.getrandbits(16), cum_psn=rng.getrandbits(24),
                            rate_mbps=rng.getrandbits(32), trigger_psn=rng.getrandbits(24),
                            sack=rng.getrandbits(256))
                ext += struct.pack("!BBHIII", 0x10 | vals["flags"], vals["path"], vals["ce_count"],
                                   vals["cum_psn"], vals["rate_mbps"], vals["trigger_psn"])
                ext += vals["sack"].to_bytes(32, "big")
                ext_vals["mrah"] = vals
            elif name == "mrnh":
                vals = dict(version=1, flags=rng.getrandbits(4), path=rng.getrandbits(8),
                            reason=rng.getrandbits(8), psn=rng.getrandbits(24))
                ext += struct.pack("!BBBxI", 0x10 | vals["flags"], vals["path"], vals["reason"], vals["psn"])
                ext_vals["mrnh"] = vals
            elif name == "cnp":
                ext += bytes(16)
        l2 = Ether(src="0a:00:00:00:00:0a", dst="0b:00:00:00:00:0b")
        if vlan is not None:
            l2 = l2 / Dot1Q(vlan=vlan, prio=rng.randrange(8))
        if v6:
            l3 = IPv6(src="2001:db8::a", dst=f"2001:db8::{k + 1:x}", tc=rng.getrandbits(8),
                      fl=rng.getrandbits(20), hlim=rng.randrange(1, 256))
        else:
            l3 = SIP(src="10.1.2.3", dst=f"10.4.5.{k % 250 + 1}", tos=rng.getrandbits(8),
                     ttl=rng.randrange(1, 256), id=rng.getrandbits(16), flags="DF")
        bth = SBTH(opcode=int(op), solicited=rng.getrandbits(1), migreq=rng.getrandbits(1),
                   padcount=pad, pkey=rng.getrandbits(16), fecn=rng.getrandbits(1),
                   becn=rng.getrandbits(1), dqpn=rng.getrandbits(24), ackreq=rng.getrandbits(1), psn=psn)
        pkt = l2 / l3 / SUDP(sport=0xC000 | rng.getrandbits(14), dport=4791, chksum=0) / bth / \
            Raw(ext + payload + bytes(pad))
        data = bytes(pkt)
        b = pkt[SBTH]
        ipl = pkt[IPv6] if v6 else pkt[SIP]
        tos = ipl.tc if v6 else ipl.tos
        oracle = {
            "eth": {"dst": pkt[Ether].dst, "src": pkt[Ether].src, "vlan": vlan},
            "ip": {"version": 6 if v6 else 4, "src": ipl.src, "dst": ipl.dst,
                   "dscp": tos >> 2, "ecn": tos & 3},
            "udp": {"sport": pkt[SUDP].sport, "dport": pkt[SUDP].dport},
            "bth": {"opcode": b.opcode, "se": b.solicited, "mig": b.migreq, "pad": b.padcount,
                    "tver": b.version, "pkey": b.pkey, "fecn": b.fecn, "becn": b.becn,
                    "dest_qp": b.dqpn, "ack_req": b.ackreq, "psn": b.psn},
            "payload": payload,
            **ext_vals,
        }
        out.append(Case(f"scapy-{op.name}-{'v6' if v6 else 'v4'}-{k}", data, group="scapy", oracle=oracle))
    return out


# ---------------------------------------------------------------------------------------
# random and mutated

def random_frame(rng: random.Random, max_payload: int = 300) -> bytes:
    op = rng.choice(list(Op))
    n = rng.choice([0, 1, 2, 3, 4, rng.randint(0, 64), rng.randint(0, max_payload)])
    f = frame(op, bytes(rng.getrandbits(8) for _ in range(n)), ipv6=rng.random() < 0.4,
              vlan=rng.randrange(4096) if rng.random() < 0.3 else None,
              psn=rng.choice([rng.getrandbits(24), *PSN_EDGES]), qp=rng.getrandbits(24), rng=rng,
              se=rng.getrandbits(1), mig=rng.getrandbits(1), pkey=rng.getrandbits(16),
              fecn=rng.getrandbits(1), becn=rng.getrandbits(1), ack_req=rng.getrandbits(1))
    f.udp = UDP(sport=wire.ENTROPY_BASE | rng.getrandbits(14))
    f.ip.dscp, f.ip.ecn, f.ip.ttl = rng.getrandbits(6), rng.getrandbits(2), rng.randrange(256)
    data = enc(f)
    if len(data) < MIN_FRAME and rng.random() < 0.5:
        data = _pad60(data)
    return data


def mutate(rng: random.Random, data: bytes) -> tuple[str, bytes, bool]:
    """One random mutation of ``data``: ``(kind, bytes, mac_error)``."""
    d = bytearray(data)
    kind = rng.choice(["flip", "byte", "truncate", "extend", "header", "header_fixed", "mac", "icrc"])
    hdr_end = min(len(d), _bth_offset(data) + 12 + 48)
    if kind == "flip":
        i = rng.randrange(len(d))
        d[i] ^= 1 << rng.randrange(8)
    elif kind == "byte":
        d[rng.randrange(len(d))] = rng.getrandbits(8)
    elif kind == "truncate":
        d = d[:rng.randrange(1, len(d))]
    elif kind == "extend":
        d += bytes(rng.getrandbits(8) for _ in range(rng.randint(1, 70)))
    elif kind in ("header", "header_fixed"):
        i = rng.randrange(min(hdr_end, len(d)))
        d[i] = rng.getrandbits(8)
        if kind == "header_fixed":  # keep the checksums right so deeper checks are reached
            off = _l3_offset(d)
            if len(d) >= off + 20 and d[off] == 0x45:
                _fix_ipv4_checksum(d, off)
            try:
                _fix_icrc(d)
            except (ValueError, IndexError, struct.error):
                pass
    elif kind == "mac":
        return kind, bytes(d), True
    elif kind == "icrc":
        d[-1 - rng.randrange(4)] ^= 0xFF
    return kind, bytes(d), False


def random_cases(n: int, seed: int, max_payload: int = 300) -> list[Case]:
    rng = random.Random(seed)
    return [Case(f"random-{seed}-{k}", random_frame(rng, max_payload), group="random") for k in range(n)]


def mutated_cases(n: int, seed: int, max_payload: int = 300) -> list[Case]:
    rng = random.Random(seed ^ 0x5A5A)
    out = []
    for k in range(n):
        kind, data, mac = mutate(rng, random_frame(rng, max_payload))
        out.append(Case(f"mutated-{seed}-{k}-{kind}", data, mac, group="mutated"))
    return out


def all_cases(n_random: int = 0, n_mutated: int = 0, seed: int = 1, max_payload: int = 300) -> list[Case]:
    """Every fixed group, then ``n_random`` random and ``n_mutated`` mutated frames."""
    return (valid_cases() + drop_cases() + bypass_cases() + scapy_cases()
            + random_cases(n_random, seed, max_payload) + mutated_cases(n_mutated, seed, max_payload))
