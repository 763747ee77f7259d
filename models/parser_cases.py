"""The RX parser's one verification stack, simulator-independent part (MR-HW-*).

Used alike by the model-only tests, the Amaranth-simulator tests, the cocotb/Verilator
testbench (:mod:`metaroce.tb.parser`), ``metaroce replay``, ``bench parser`` and
``coverage parser``; the simulator adapters and the lockstep core live in ``tb/``.

* :class:`Case`: one frame (Ethernet header to ICRC, no FCS), the beat whose ``tuser``
  (MAC error) is set, and the expected :class:`~metaroce.models.wire.Reason`;
* case groups: :func:`all_cases` (basic: every opcode, every drop reason, bypass),
  :func:`valid_edge_cases`, :func:`drop_edge_cases`, :func:`bypass_edge_cases`,
  :func:`oversize_cases`, :func:`scapy_cases` (built by ``scapy.contrib.roce``, with scapy's
  field values as an ``oracle`` independent of the codec), :func:`random_cases`,
  :func:`mutated_cases`; :func:`suite` is all of them;
* :class:`Driver`: the one traffic driver (source with idle cycles, sinks and meta ready with
  backpressure patterns, counter reads, tkeep edge cases), all from a seed;
* :func:`check`: the one checker (outputs against the codec, scapy and the counters);
* :func:`run_model`: the model alone through the driver.

Expected outcomes come from :func:`metaroce.models.codec.decode` (the one decoder), through
:func:`metaroce.models.parser.verdict`.
"""
from __future__ import annotations

import ipaddress
import random
import struct
from dataclasses import dataclass, field, replace

from . import codec, wire
from .codec import AETH, BTH, IP, MRAH, MRDH, MRNH, MRSH, RETH, UDP, AtomicAck, Eth
from .driver import CounterReadout, run_alone
from .parser import N_COUNTERS
from .wire import Op, Reason

MIN_FRAME = 60                  # Ethernet minimum without FCS (MR-WIRE-012)
PSN_EDGES = (0, (1 << 23) - 1, 1 << 23, (1 << 24) - 1)
#: ``mac_error_beat`` meaning "the frame's last beat" (indices are clipped to the last beat).
MAC_ERROR_LAST = 1 << 30
#: The counters behind reg_addr/reg_data (N_COUNTERS, from the model): one per Reason code
#: (MR-HW-060), then the drop-on-full overflow counter (MR-HW-082).
OVERFLOW_COUNTER = max(Reason) + 1
EXT_NAMES = ("reth", "aeth", "imm", "atomicack", "mrdh", "mrsh", "mrah", "mrnh")


@dataclass(frozen=True)
class Case:
    """A frame and what the parser must do with it.

    ``mac_error_beat``: index of the beat with ``tuser`` set (``None``: no MAC error;
    clipped to the last beat, see :data:`MAC_ERROR_LAST`).  ``expect``: the reason with
    the default ``max_frame`` (9216); ``None`` computes it from the codec.  ``oracle``:
    scapy's field values (scapy-built cases).
    """
    name: str
    data: bytes
    mac_error_beat: int | None = None
    expect: Reason | None = None
    group: str = ""
    oracle: dict | None = field(default=None, repr=False, compare=False)

    def __post_init__(self):
        if self.expect is None:
            object.__setattr__(self, "expect", expected_reason(self))

    @property
    def mac_error(self) -> bool:
        return self.mac_error_beat is not None


def expected_reason(case: Case, max_frame: int = 9216, beats: int | None = None,
                    width: int | None = None) -> Reason:
    """What the RX parser must do with ``case`` (MR-HW-020, MR-HW-031): ``mac_error`` for a
    MAC error (whatever the frame), ``length`` for a frame of more than ``max_frame`` bytes
    (or, given ``beats`` and ``width``, of more beats than ``max_frame`` takes), otherwise
    the codec's verdict (``not_roce`` meaning bypass)."""
    from .parser import verdict
    if case.mac_error_beat is not None:
        return Reason.MAC_ERROR
    return verdict(case.data, False, oversize(case, max_frame, beats, width))[0]


def oversize(case: Case, max_frame: int = 9216, beats: int | None = None,
             width: int | None = None) -> bool:
    """Whether the parser takes ``case`` as longer than ``max_frame`` (MR-HW-031): by its
    beats at ``width`` (``beats`` if the driver sent more than the bytes need), else bytes."""
    from .parser import params
    if width is None:
        return len(case.data) > max_frame
    n = beats if beats is not None else max(1, -(-len(case.data) // (width // 8)))
    return n > params(width, max_frame)["max_beats"]


def pad_eth(b):
    """Pad a frame to the Ethernet minimum of 60 bytes with zeros (MR-WIRE-012)."""
    return b + bytes(max(0, MIN_FRAME - len(b)))


def _headers(op, rng):
    h = {}
    for name in wire.HEADERS[op]:
        if name == "reth":
            h["reth"] = RETH(rng.getrandbits(64), rng.getrandbits(32), rng.getrandbits(32))
        elif name == "aeth":
            h["aeth"] = AETH(rng.getrandbits(8), rng.getrandbits(24))
        elif name == "imm":
            h["imm"] = rng.getrandbits(32)
        elif name == "atomicack":
            h["atomicack"] = AtomicAck(rng.getrandbits(64))
        elif name == "mrdh":
            h["mrdh"] = MRDH(wire.MR_VERSION, rng.getrandbits(4), rng.getrandbits(8),
                             rng.getrandbits(16), rng.getrandbits(32), rng.getrandbits(32),
                             rng.getrandbits(32))
        elif name == "mrsh":
            h["mrsh"] = MRSH(rng.getrandbits(32))
        elif name == "mrah":
            h["mrah"] = MRAH(wire.MR_VERSION, rng.getrandbits(4), rng.getrandbits(8),
                             rng.getrandbits(16), rng.getrandbits(32), rng.getrandbits(32),
                             rng.getrandbits(32), rng.getrandbits(256))
        elif name == "mrnh":
            h["mrnh"] = MRNH(wire.MR_VERSION, rng.getrandbits(4), rng.getrandbits(8),
                             rng.getrandbits(8), rng.getrandbits(32))
        elif name in codec.RECORDS:     # headers the parser does not extract (MRSEC, MRCH)
            h[name] = codec.RECORDS[name](**{f: wire.MR_VERSION if f == "version" else rng.getrandbits(w)
                                             for f, w in wire.HEADER_TABLE[name].layout().items()})
    return h


def random_valid(rng, op=None, *, ipv6=None, vlan=None, plen=None, psn=None, max_payload=300):
    """A random well-formed frame (codec.encode) as bytes, padded to 60."""
    op = Op(rng.choice(list(Op)) if op is None else op)
    ipv6 = rng.random() < 0.5 if ipv6 is None else ipv6
    vlan = rng.random() < 0.3 if vlan is None else vlan
    if op not in wire.PAYLOAD_OPS:
        plen = 0
    elif plen is None:
        plen = rng.choice([0, 1, 2, 3, 4, 5, 7, 8, 63, 64, 65, rng.randrange(max_payload + 1)])
    eth = Eth(vlan=rng.randrange(4096) if vlan else None, pcp=rng.randrange(8) if vlan else 0,
              dei=rng.randrange(2) if vlan else 0)
    if ipv6:
        ip = IP(6, "fd00::%x" % rng.getrandbits(16), "fd00::1:%x" % rng.getrandbits(16),
                dscp=rng.randrange(64), ecn=rng.randrange(4), ttl=rng.randrange(256),
                flow_label=rng.getrandbits(20))
    else:
        ip = IP(4, "10.0.%d.%d" % (rng.randrange(256), rng.randrange(256)), "10.1.0.%d" % rng.randrange(256),
                dscp=rng.randrange(64), ecn=rng.randrange(4), ttl=rng.randrange(256),
                ident=rng.getrandbits(16))
    bth = BTH(se=rng.randrange(2), mig=rng.randrange(2), pkey=rng.getrandbits(16),
              fecn=rng.randrange(2), becn=rng.randrange(2), dest_qp=rng.getrandbits(24),
              ack_req=rng.randrange(2), psn=rng.getrandbits(24) if psn is None else psn)
    f = codec.make(op, bytes(rng.getrandbits(8) for _ in range(plen)), eth=eth, ip=ip,
                   udp=codec.UDP(sport=0xC000 | rng.getrandbits(14)), bth=bth, **_headers(op, rng))
    return pad_eth(codec.encode(f))


def _l3(b):
    return 18 if b[12:14] == b"\x81\x00" else 14


def reip4(b):
    """Recompute the IPv4 header checksum of a frame (after editing its header)."""
    b = bytearray(b)
    o = _l3(b)
    b[o + 10:o + 12] = b"\0\0"
    s = sum(struct.unpack("!10H", bytes(b[o:o + 20])))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    b[o + 10:o + 12] = struct.pack("!H", (~s) & 0xFFFF)
    return bytes(b)


def _refix_icrc(b):
    """Recompute the ICRC of an (edited) well-formed frame, so a later check is reached."""
    from .icrc import icrc_bytes
    b = bytearray(b)
    o = _l3(b)
    ipv6 = b[o] >> 4 == 6
    l4 = o + (40 if ipv6 else 20)
    ipl = struct.unpack("!H", b[o + 4:o + 6])[0] if ipv6 else struct.unpack("!H", b[o + 2:o + 4])[0] - 20
    end = l4 + ipl
    b[end - 4:end] = icrc_bytes(bytes(b[o:end - 4]))
    return bytes(b)


def valid_cases(seed=1):
    """Every opcode on IPv4/IPv6 with and without VLAN, pad 0..3, PSN edge values."""
    rng = random.Random(seed)
    out = []
    for op in Op:
        for ipv6 in (False, True):
            for vlan in (False, True):
                out.append(Case(f"{op.name}-v{6 if ipv6 else 4}{'-vlan' if vlan else ''}",
                                random_valid(rng, op, ipv6=ipv6, vlan=vlan)))
    for plen in (0, 1, 2, 3, 4, 5, 6, 7):
        out.append(Case(f"pad-plen{plen}", random_valid(rng, Op.RC_SEND_ONLY, plen=plen, ipv6=False, vlan=False)))
    for psn in (0, 1, 0x7FFFFF, 0x800000, 0xFFFFFE, 0xFFFFFF):
        out.append(Case(f"psn-{psn:#x}", random_valid(rng, Op.MR_WRITE, psn=psn)))
    for plen in (1000, 4096):
        out.append(Case(f"big-{plen}", random_valid(rng, Op.MR_SEND, plen=plen)))
    # The smallest RoCE frame: IPv4 + BTH-only opcode + ICRC = 58 bytes + 2 Ethernet pad.
    out.append(Case("smallest", random_valid(rng, Op.RC_SEND_ONLY, plen=0, ipv6=False, vlan=False)))
    return out


def drop_cases(seed=2):
    """One or more frames per drop reason (MR-HW-020)."""
    rng = random.Random(seed)
    out = []
    good4 = random_valid(rng, Op.MR_WRITE, ipv6=False, vlan=False, plen=40)
    good6 = random_valid(rng, Op.MR_SEND_IMM, ipv6=True, vlan=True, plen=20)
    T = Reason.TRUNCATED
    for cut in (0, 5, 13, 14, 15, 20, 33, 34, 37, 41, 60, len(good4) - 1):
        out.append(Case(f"trunc4-{cut}", good4[:cut], expect=T))
    for cut in (16, 17, 19, 57, 61, 65, len(good6) - 5):
        out.append(Case(f"trunc6-{cut}", good6[:cut], expect=T))
    b = bytearray(good4)
    b[14 + 10] ^= 0x01
    out.append(Case("bad-ipv4-checksum", bytes(b), expect=Reason.BAD_IP))
    b = bytearray(good4)
    b[14 + 2:14 + 4] = struct.pack("!H", 0xFFFF)  # total length beyond the frame
    out.append(Case("ip-len-beyond-frame", reip4(bytes(b)), expect=T))
    for name, good in (("4", good4), ("6", good6)):
        l3 = _l3(good)
        l4 = l3 + (40 if name == "6" else 20)
        b = bytearray(good)
        b[l4 + 8 + 12 + 20] ^= 0x04             # a payload byte: the ICRC no longer matches
        out.append(Case(f"bad-icrc-payload{name}", bytes(b), expect=Reason.ICRC))
        b = bytearray(good)
        ipl = struct.unpack("!H", good[l4 + 4:l4 + 6])[0]
        b[l4 + ipl - 1] ^= 0xFF                 # the last ICRC byte
        out.append(Case(f"bad-icrc{name}", bytes(b), expect=Reason.ICRC))
        b = bytearray(good)
        b[l4 + 4:l4 + 6] = struct.pack("!H", ipl - 4)  # UDP length disagrees with IP length
        out.append(Case(f"udp-len{name}", bytes(b), expect=Reason.LENGTH))
        b = bytearray(good)
        b[l4 + 8] = 0x15                        # unknown opcode
        out.append(Case(f"bad-opcode{name}", bytes(b), expect=Reason.BAD_OPCODE))
        b = bytearray(good)
        b[l4 + 8 + 1] |= 0x01                   # BTH TVer
        out.append(Case(f"bad-tver{name}", bytes(b), expect=Reason.BAD_VERSION))
        b = bytearray(good)
        b[l4 + 8 + 12] = (2 << 4) | (b[l4 + 8 + 12] & 0xF)  # MetaRoCE header version 2
        out.append(Case(f"bad-mr-version{name}", bytes(b), expect=Reason.BAD_VERSION))
        b = bytearray(good)
        b[l4 + 8 + 4] ^= 0xC0                   # FECN/BECN are variant: still good
        out.append(Case(f"variant-bth4-{name}", bytes(b), expect=Reason.NONE))
    # IPv4 total length shorter than UDP length.
    b = bytearray(good4)
    tl = struct.unpack("!H", b[16:18])[0]
    b[16:18] = struct.pack("!H", tl - 4)
    out.append(Case("ip-len-short", reip4(bytes(b)), expect=Reason.LENGTH))
    # IPv4 total length below 20 (negative IP payload length).
    b = bytearray(good4)
    b[16:18] = struct.pack("!H", 8)
    out.append(Case("ip-len-tiny", reip4(bytes(b)), expect=Reason.LENGTH))
    # Pad larger than the payload, and bytes after a payload-less opcode.
    f = codec.make(Op.RC_SEND_ONLY, b"")
    b = bytearray(codec.encode(f))
    b[14 + 20 + 8 + 1] |= 0x30
    out.append(Case("pad-exceeds-payload", pad_eth(_refix_icrc(bytes(b))), expect=Reason.LENGTH))
    f = codec.make(Op.RC_ACK, b"\x01\x02\x03\x04")
    out.append(Case("ack-with-payload", pad_eth(codec.encode(f)), expect=Reason.LENGTH))
    # MR_ACK opcode on a BTH-only packet: headers do not fit (version check skipped).
    b = bytearray(codec.encode(codec.make(Op.RC_SEND_ONLY, b"")))
    b[14 + 20 + 8] = Op.MR_ACK
    out.append(Case("mr-ack-short", pad_eth(bytes(b)), expect=Reason.LENGTH))
    # UDP payload too short for BTH + ICRC.
    b = bytearray(good4[:14 + 20 + 8 + 10])
    b[16:18] = struct.pack("!H", 38)
    b[38:40] = struct.pack("!H", 18)
    out.append(Case("udp-too-short", pad_eth(reip4(bytes(b))), expect=Reason.LENGTH))
    # MAC errors on the first and on the last beat.
    out.append(Case("mac-error-first", good4, mac_error_beat=0, expect=Reason.MAC_ERROR))
    out.append(Case("mac-error-last", good6, mac_error_beat=10 ** 6, expect=Reason.MAC_ERROR))
    out.append(Case("mac-error-bypass", _arp(), mac_error_beat=0, expect=Reason.MAC_ERROR))
    return out


def _arp():
    return pad_eth(bytes.fromhex("ffffffffffff020000000001" "0806") + bytes(range(28)))


def bypass_cases():
    """Non-RoCE frames: they leave on m_bypass intact (MR-HW-032)."""
    from scapy.layers.inet import IP as SIP, TCP, UDP as SUDP
    from scapy.layers.inet6 import IPv6 as SIP6
    from scapy.layers.l2 import ARP, Dot1Q, Ether
    out = [
        Case("arp", bytes(Ether(dst="ff:ff:ff:ff:ff:ff", src="02:00:00:00:00:01") / ARP(hwsrc="02:00:00:00:00:01", psrc="10.0.0.1", pdst="10.0.0.2"))),
        Case("tcp4", bytes(Ether(dst="02:00:00:00:00:02", src="02:00:00:00:00:01") / SIP(src="10.0.0.1", dst="10.0.0.2") / TCP(dport=4791) / (b"x" * 100))),
        Case("udp4-53", bytes(Ether(dst="02:00:00:00:00:02", src="02:00:00:00:00:01") / SIP(src="10.0.0.1", dst="10.0.0.2") / SUDP(dport=53) / (b"q" * 30))),
        Case("udp6-other", bytes(Ether(dst="02:00:00:00:00:02", src="02:00:00:00:00:01") / SIP6(src="fd00::1", dst="fd00::2") / SUDP(dport=4790) / (b"z" * 77))),
        Case("tcp6", bytes(Ether(dst="02:00:00:00:00:02", src="02:00:00:00:00:01") / SIP6(src="fd00::1", dst="fd00::2") / TCP() / (b"y" * 5))),
        Case("vlan-udp4", bytes(Ether(dst="02:00:00:00:00:02", src="02:00:00:00:00:01") / Dot1Q(vlan=7) / SIP(src="10.0.0.1", dst="10.0.0.2") / SUDP(dport=1234) / (b"w" * 300))),
        Case("ipv4-options", bytes(Ether(dst="02:00:00:00:00:02", src="02:00:00:00:00:01") / SIP(src="10.0.0.1", dst="10.0.0.2", options=b"\x01\x01\x01\x00") / SUDP(dport=4791) / (b"o" * 40))),
        Case("ipv4-fragment", bytes(Ether(dst="02:00:00:00:00:02", src="02:00:00:00:00:01") / SIP(src="10.0.0.1", dst="10.0.0.2", flags=1) / SUDP(dport=4791) / (b"f" * 40))),
        Case("jumbo-other", bytes(Ether(dst="02:00:00:00:00:02", src="02:00:00:00:00:01") / SIP(src="10.0.0.1", dst="10.0.0.2") / SUDP(dport=9) / (b"j" * 3000))),
        Case("ethertype-v6-version4", pad_eth(bytes.fromhex("020000000002020000000001" "86dd") + bytes([0x45]) + bytes(50))),
    ]
    return [replace(c, data=pad_eth(c.data), expect=Reason.NOT_ROCE) for c in out]


def all_cases():
    """The basic list: :func:`valid_cases`, :func:`drop_cases`, :func:`bypass_cases`."""
    return valid_cases() + drop_cases() + bypass_cases()


def mutate(b, rng):
    """A random mutation of frame ``b``: flip, cut, extend, or edit a header byte."""
    b = bytearray(b)
    kind = rng.randrange(6)
    if kind == 0 and b:
        i = rng.randrange(len(b))
        b[i] ^= 1 << rng.randrange(8)
    elif kind == 1:
        b = b[:rng.randrange(len(b) + 1)]
    elif kind == 2:
        b += bytes(rng.getrandbits(8) for _ in range(rng.randrange(1, 70)))
    elif kind == 3 and len(b) > 70:
        i = rng.randrange(12, 70)
        b[i] = rng.getrandbits(8)
    elif kind == 4 and len(b) > 60:
        i = rng.randrange(12, 60)
        b[i] = rng.getrandbits(8)
        b = bytearray(reip4(bytes(b))) if b[12:14] == b"\x08\x00" else b
    else:
        o = _l3(b)
        if len(b) > o + 60:
            i = rng.randrange(o, o + 60)
            b[i] = rng.getrandbits(8)
    return bytes(b)




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
        elif name in codec.RECORDS:     # headers the parser does not extract (MRSEC, MRCH)
            h[name] = codec.RECORDS[name](**{f: wire.MR_VERSION if f == "version" else r(w)
                                             for f, w in wire.HEADER_TABLE[name].layout().items()})
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

def valid_edge_cases() -> list[Case]:
    """Every opcode with extreme header values, PSN edges, payload lengths around beat
    boundaries, Ethernet padding after the IP packet, a 9,000-byte jumbo frame."""
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
    # payloads of 2,048-4,095 bytes (bit 11 of the lengths)
    out.append(Case("MR_WRITE-len3000", enc(frame(Op.MR_WRITE, _payload(3000, 11))), group="valid"))
    out.append(Case("RC_SEND_ONLY-v6-len2500", enc(frame(Op.RC_SEND_ONLY, _payload(2500, 12), ipv6=True)),
                    group="valid"))
    # sizes that fill their last beat at every width (the driver may then end the frame
    # with an extra tkeep = 0 beat), Ethernet padding after the IP packet
    for size in (64, 128, 192, 256, 320, 512, 1024, 2048):
        for ipv6 in (False, True):
            op, overhead = (Op.MR_WRITE, 130) if size >= 130 else (Op.RC_SEND_ONLY, 78)
            d = enc(frame(op, _payload(max(0, size - overhead) // 4 * 4, size), ipv6=ipv6))
            if len(d) <= size:
                out.append(Case(f"aligned-{size}-v{6 if ipv6 else 4}", d + bytes(size - len(d)),
                                group="valid"))
                if not ipv6 and size >= 128:        # and dropped (a wrong ICRC byte)
                    bad = bytearray(d + bytes(size - len(d)))
                    bad[len(d) - 1] ^= 0x08
                    out.append(Case(f"aligned-{size}-v4-icrc", bytes(bad), expect=Reason.ICRC,
                                    group="drop"))
    return out


def drop_edge_cases() -> list[Case]:
    """Every drop reason in several places of the frame (cuts in every header, checksum,
    length, opcode, version, ICRC flips, MAC errors on several beats)."""
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
    # truncated by the IP length alone: a length field of 0xFFFF puts the end of the IP
    # packet (l4_end) at 2^16 or more, with and without VLAN (coverage: l4_end bit 16)
    for tag, base in (("v4", base4), ("v4vlan", enc(frame(Op.MR_WRITE, _payload(100), vlan=9))),
                      ("v6vlan", base6)):
        d = bytearray(base)
        l3 = _l3_offset(d)
        if d[l3] >> 4 == 4:
            d[l3 + 2:l3 + 4] = b"\xff\xff"
            _fix_ipv4_checksum(d, l3)
        else:
            d[l3 + 4:l3 + 6] = b"\xff\xff"
        out.append(Case(f"truncated-iplen-ffff-{tag}", bytes(d), expect=Reason.TRUNCATED, group="drop"))
    # bad IPv4 header checksum
    d = bytearray(base4)
    d[24] ^= 0x01
    out.append(Case("bad_ip-checksum", bytes(d), group="drop"))
    d = bytearray(enc(frame(Op.RC_ACK, vlan=100)))
    d[18 + 11] ^= 0x80
    out.append(Case("bad_ip-checksum-vlan-ack", bytes(d), group="drop"))
    # a checksum field of 0xFFFF (one's complement's other zero): wrong on this header, and
    # on a header whose checksum is 0 (identification chosen so) the same sum as 0x0000
    d = bytearray(base4)
    d[24:26] = b"\xff\xff"
    out.append(Case("bad_ip-checksum-ffff", bytes(d), group="drop"))
    d = bytearray(base4)
    d[18:20] = d[24:26] = b"\0\0"
    s = sum(struct.unpack("!10H", bytes(d[14:34])))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    d[18:20] = struct.pack("!H", 0xFFFF - s)       # the header now sums to 0xFFFF
    for tag, field_value in (("0000", b"\0\0"), ("ffff", b"\xff\xff")):
        d[24:26] = field_value
        _fix_icrc(d)
        case = Case(f"ip-checksum-zero-sum-{tag}", bytes(d))
        out.append(Case(case.name, case.data, group="drop" if case.expect != Reason.NONE else "valid"))
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
    # the checks after the IP header, over each base header stack (IPv4/IPv6, VLAN or not)
    for ipv6 in (False, True):
        for vlan in (None, 5):
            tag = f"v{6 if ipv6 else 4}{'-vlan' if vlan else ''}"
            good = enc(frame(Op.MR_WRITE, _payload(24, 3), ipv6=ipv6, vlan=vlan))
            bth = _bth_offset(good)
            for name, pos, value in (("bad_opcode", bth, 0x15), ("bad_version-tver", bth + 1, 0x01),
                                     ("bad_version-mrdh", bth + 12, 0x20)):
                d = bytearray(good)
                d[pos] = value if name == "bad_opcode" else (d[pos] & 0x0F if pos == bth + 12 else d[pos] & 0xF0) | value
                _fix_icrc(d)
                out.append(Case(f"{name}-{tag}", bytes(d), expect=Reason[name.split("-")[0].upper()],
                                group="drop"))
            d = bytearray(good)
            d[bth - 4:bth - 2] = struct.pack("!H", struct.unpack("!H", good[bth - 4:bth - 2])[0] - 4)
            out.append(Case(f"length-udp-{tag}", bytes(d), expect=Reason.LENGTH, group="drop"))
            d = bytearray(good)
            d[-6] ^= 0x40
            out.append(Case(f"icrc-{tag}", bytes(d), expect=Reason.ICRC, group="drop"))
    icrc_zero = enc(replace(frame(Op.RC_ACK), icrc=0))
    out.append(Case("icrc-zero", icrc_zero, group="drop"))
    # MAC error on otherwise good frames, on a bad one and on a non-RoCE one; on the last
    # beat, the first beat and beats in between (MR-WIRE-104)
    mac = bytes.fromhex("020000000002020000000001")
    for name, data in (("mac_error-mrwrite", base4), ("mac_error-v6", base6),
                       ("mac_error-ack-padded", _pad60(enc(frame(Op.RC_ACK)))),
                       ("mac_error-and-icrc", icrc_zero),
                       ("mac_error-non-roce", mac + b"\x08\x06" + bytes(46))):
        out.append(Case(name, data, MAC_ERROR_LAST, group="drop"))
    for beat in (0, 1, 2, 3, 5, 8, 13):
        out.append(Case(f"mac_error-beat{beat}-v6", base6, beat, group="drop"))
        out.append(Case(f"mac_error-beat{beat}-non-roce", mac + b"\x88\xb5" + _payload(300, beat),
                        beat, group="drop"))
    return out


def bypass_edge_cases() -> list[Case]:
    """Non-RoCE frames built by editing RoCE ones (TCP, other ports, options, fragments)."""
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
    # lengths that fill whole 512-bit beats: with the drivers' p_empty_last these may end in
    # an extra beat with tkeep = 0 at every width (MR-HW-003)
    for n in (64, 128, 192):
        out.append(Case(f"non-roce-{n}", mac + b"\x88\xb5" + _payload(n - 14, n), group="bypass"))
    return out


# ---------------------------------------------------------------------------------------
# scapy: an independent implementation of the base headers and the ICRC

def oversize_cases() -> list[Case]:
    """Frames around ``max_frame`` = 9216 bytes (MR-HW-031): exactly 9216 passes, longer
    ones, RoCE or not, are dropped as ``length`` (their verdict depends on ``max_frame``,
    so they are kept out of :func:`all_cases`)."""
    out = []
    big = enc(frame(Op.MR_WRITE, _payload(9124, 5))) + bytes(2)  # + 2 bytes Ethernet padding
    assert len(big) == 9216
    out.append(Case("max-frame-9216", big, group="valid"))
    out.append(Case("length-oversize-roce", enc(frame(Op.MR_WRITE, _payload(9300, 6))), group="drop"))
    mac = bytes.fromhex("020000000002020000000001")
    out.append(Case("length-oversize-non-roce", mac + b"\x88\xb5" + _payload(9300, 7), group="drop"))
    return out


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
            elif name in codec.RECORDS:     # not extracted by the parser (MRSEC, MRCH)
                ext += codec.encode_ext(name, codec.RECORDS[name](
                    **{f: wire.MR_VERSION if f == "version" else rng.getrandbits(w)
                       for f, w in wire.HEADER_TABLE[name].layout().items()}))
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

def _random_mac(rng):
    return ":".join(f"{b:02x}" for b in rng.getrandbits(48).to_bytes(6, "big"))


def random_frame(rng: random.Random, max_payload: int = 300) -> bytes:
    """A random well-formed frame: any opcode, random header fields and addresses."""
    op = rng.choice(list(Op))
    n = rng.choice([0, 1, 2, 3, 4, rng.randint(0, 64), rng.randint(0, max_payload)])
    f = frame(op, bytes(rng.getrandbits(8) for _ in range(n)), ipv6=rng.random() < 0.4,
              vlan=rng.randrange(4096) if rng.random() < 0.3 else None,
              psn=rng.choice([rng.getrandbits(24), *PSN_EDGES]), qp=rng.getrandbits(24), rng=rng,
              se=rng.getrandbits(1), mig=rng.getrandbits(1), pkey=rng.getrandbits(16),
              fecn=rng.getrandbits(1), becn=rng.getrandbits(1), ack_req=rng.getrandbits(1))
    f.udp = UDP(sport=wire.ENTROPY_BASE | rng.getrandbits(14))
    f.ip.dscp, f.ip.ecn, f.ip.ttl = rng.getrandbits(6), rng.getrandbits(2), rng.randrange(256)
    # random addresses: every bit of the MAC and IP fields toggles (coverage, item 6)
    f.eth.dst, f.eth.src = _random_mac(rng), _random_mac(rng)
    if f.ip.version == 6:
        f.ip.src, f.ip.dst = (str(ipaddress.IPv6Address(rng.getrandbits(128))) for _ in range(2))
    else:
        f.ip.src, f.ip.dst = (str(ipaddress.IPv4Address(rng.getrandbits(32))) for _ in range(2))
        f.ip.ident = rng.getrandbits(16)
    if f.ip.version == 6:
        f.ip.flow_label = rng.getrandbits(20)
    data = enc(f)
    if len(data) < MIN_FRAME and rng.random() < 0.5:
        data = _pad60(data)
    return data


def mutate_frame(rng: random.Random, data: bytes) -> tuple[str, bytes, int | None]:
    """One random mutation of ``data``: ``(kind, bytes, mac_error_beat)``; a MAC error
    goes on any beat (the index is clipped to the frame's last beat)."""
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
        return kind, bytes(d), rng.choice([0, 1, 2, rng.randrange(200), MAC_ERROR_LAST])
    elif kind == "icrc":
        d[-1 - rng.randrange(4)] ^= 0xFF
    return kind, bytes(d), None


def random_cases(n: int, seed: int, max_payload: int = 300) -> list[Case]:
    rng = random.Random(seed)
    return [Case(f"random-{seed}-{k}", random_frame(rng, max_payload), group="random") for k in range(n)]


def mutated_cases(n: int, seed: int, max_payload: int = 300) -> list[Case]:
    rng = random.Random(seed ^ 0x5A5A)
    out = []
    for k in range(n):
        kind, data, mac = mutate_frame(rng, random_frame(rng, max_payload))
        out.append(Case(f"mutated-{seed}-{k}-{kind}", data, mac, group="mutated"))
    return out


def suite(n_random: int = 0, n_mutated: int = 0, seed: int = 1, max_payload: int = 300) -> list[Case]:
    """Every fixed group (basic, edge, oversize, scapy), then ``n_random`` random and
    ``n_mutated`` mutated frames: the list of the Verilator lockstep, the model sweeps and
    coverage."""
    return (all_cases() + valid_edge_cases() + drop_edge_cases() + bypass_edge_cases()
            + oversize_cases() + scapy_cases()
            + random_cases(n_random, seed, max_payload) + mutated_cases(n_mutated, seed, max_payload))


# ---------------------------------------------------------------------------------------------
# The one traffic driver, for the model alone, the Amaranth simulator and Verilator.

#: Traffic shapes: (probability of an idle input cycle, probability of ready low per output).
SHAPES = {"none": (0.0, 0.0), "idle": (0.3, 0.0), "bp": (0.0, 0.5), "both": (0.25, 0.4)}


#: (stream, tvalid, tready, tdata, tkeep, tlast) of the parser's two output streams.
_OUT_STREAMS = tuple((n, f"m_{n}__tvalid", f"m_{n}__tready", f"m_{n}__tdata", f"m_{n}__tkeep",
                      f"m_{n}__tlast") for n in ("payload", "bypass"))


class Driver(CounterReadout):
    """The parser's AXI4-Stream source, output sinks, meta ready and counter reads, cycle by
    cycle from one seed, and the collector of the three output streams (MR-HW-002).

    Per cycle: ``inp = drv.inputs()``, apply ``inp`` to the DUT and/or the model, read the
    outputs ``out`` of the same cycle, then ``drv.observe(inp, out)`` and
    ``drv.settle(busy)`` (``busy``: the model's :meth:`~ParserModel.busy` after the step)
    until ``drv.finished``.  The source holds a beat until ``s_axis__tready`` takes it (the
    handshake is the DUT's); idle cycles (``p_idle``) show random data; each ready is low
    with ``p_bp`` (plus, with ``bursts``, occasional runs of up to ``bursts`` cycles, which
    fill the frame store); ``reg_addr`` is random while traffic flows, then every counter is
    read (``reg_data`` follows ``reg_addr`` one cycle later).

    tkeep edge cases (MR-HW-003), none of which changes a frame's bytes: ``p_keep_noise``
    sets random bits in the tkeep of non-last beats (ignored) and above the first zero of a
    last beat's tkeep (only the run of ones from lane 0 counts); ``p_empty_last`` ends a
    frame whose last beat is full with an extra beat of tkeep = 0.  ``p_garble_keep`` randomises tkeep outright
    (bytes change: no stream check).

    Results in ``drv.res``: ``meta`` (flat ``m_meta__payload`` values), ``payload`` and
    ``bypass`` (bytes per frame), ``accepted_beats``, ``accept_log`` ((cycle, tlast) of
    accepted beats), ``meta_new_cycles`` (cycles a new meta record shows), ``tready_low``,
    ``case_beats`` (beats sent per case), then ``cycles`` and ``counters``.
    """

    def __init__(self, width, cases, *, seed=0, p_idle=0.2, p_bp=0.3, p_meta_bp=None,
                 p_garble_keep=0.0, p_keep_noise=0.0, p_empty_last=0.0, bursts=None,
                 poll_regs=True, read_counters=True, quiet_cycles=3, log_accepts=True):
        from .parser import beats_of
        self.width = width
        self.rng = rng = random.Random(seed)
        self.p_idle, self.p_bp = p_idle, p_bp
        self.p_meta_bp = p_bp if p_meta_bp is None else p_meta_bp
        self.p_garble_keep = p_garble_keep
        self.bursts = (40 if p_bp or self.p_meta_bp else 0) if bursts is None else bursts
        self.poll_regs = poll_regs
        self.read_counters = read_counters
        self.quiet_cycles = quiet_cycles
        self.log_accepts = log_accepts
        nb = width // 8
        full = (1 << nb) - 1
        self.beats = []
        case_beats = []
        for ci, c in enumerate(cases):
            bl = [list(b) for b in beats_of(c.data, width)]
            # keep on a non-last beat is ignored (all lanes count): only a full last beat
            # may become non-last without changing the frame
            if (p_empty_last and 0 < len(c.data) < 4096 and len(c.data) % nb == 0
                    and rng.random() < p_empty_last):
                bl[-1][2] = 0
                bl.append([0, 0, 1, 0])
            if c.mac_error_beat is not None:
                bl[min(c.mac_error_beat, len(bl) - 1)][3] = 1
            if p_keep_noise:
                for b in bl:
                    if rng.random() < p_keep_noise:
                        if not b[2]:
                            b[1] = rng.getrandbits(nb)
                        elif b[1] != full:
                            n = b[1].bit_length()          # run of ones from lane 0
                            b[1] |= (rng.getrandbits(nb) >> (n + 1)) << (n + 1)
            case_beats.append(len(bl))
            self.beats += [(ci, *b) for b in bl]
        self.i = 0
        self.presenting = False
        self.cycle = 0
        self.history = []
        self._cur = {"payload": bytearray(), "bypass": bytearray()}
        self._meta_held = 0
        self.n_counters = N_COUNTERS
        self._readout_reset()
        self._bp = {"m_meta__ready": 0, "m_payload__tready": 0, "m_bypass__tready": 0}
        self.limit = 400 + 20 * len(self.beats) * (1 + int(10 * max(p_bp, self.p_meta_bp)))
        self.res = {"meta": [], "payload": [], "bypass": [], "accepted_beats": 0, "accept_log": [],
                    "meta_new_cycles": [], "tready_low": 0, "case_beats": case_beats,
                    "cycles": 0, "counters": None}
        self._idle = {"s_axis__tvalid": 0, "s_axis__tdata": 0, "s_axis__tkeep": 0,
                      "s_axis__tlast": 0, "s_axis__tuser": 0}

    @property
    def sent_all(self):
        return self.i >= len(self.beats)

    def _ready(self, name, p):
        # low with probability p, and now and then for a run of up to `bursts` cycles
        if not p:
            return 1
        if self._bp[name]:
            self._bp[name] -= 1
            return 0
        rng = self.rng
        if self.bursts and rng.random() < 0.01:
            self._bp[name] = rng.randint(1, self.bursts)
            return 0
        return int(rng.random() >= p)

    def inputs(self):
        rng, w = self.rng, self.width
        if self._phase:
            inp = dict(self._idle)
            inp.update({"m_meta__ready": 1, "m_payload__tready": 1, "m_bypass__tready": 1,
                        "reg_addr": self._readout_addr()})
            return inp
        if not self.presenting and self.i < len(self.beats) and (self.p_idle == 0 or rng.random() >= self.p_idle):
            self.presenting = True
            if self.p_garble_keep and rng.random() < self.p_garble_keep:
                b = self.beats[self.i]
                self.beats[self.i] = b[:2] + (rng.getrandbits(w // 8),) + b[3:]
        if self.presenting:
            _, d, k, last, user = self.beats[self.i]
            inp = {"s_axis__tvalid": 1, "s_axis__tdata": d, "s_axis__tkeep": k,
                   "s_axis__tlast": last, "s_axis__tuser": user}
        elif self.p_idle:
            inp = {"s_axis__tvalid": 0, "s_axis__tdata": rng.getrandbits(w),
                   "s_axis__tkeep": rng.getrandbits(w // 8), "s_axis__tlast": rng.getrandbits(1),
                   "s_axis__tuser": rng.getrandbits(1)}
        else:
            inp = dict(self._idle)
        if self.p_bp or self.p_meta_bp:
            inp["m_meta__ready"] = self._ready("m_meta__ready", self.p_meta_bp)
            inp["m_payload__tready"] = self._ready("m_payload__tready", self.p_bp)
            inp["m_bypass__tready"] = self._ready("m_bypass__tready", self.p_bp)
        else:
            inp["m_meta__ready"] = inp["m_payload__tready"] = inp["m_bypass__tready"] = 1
        if self.poll_regs:
            # rng.randrange(16), the same draws without its overhead (run once per cycle)
            addr = rng.getrandbits(5)
            while addr >= 16:
                addr = rng.getrandbits(5)
            inp["reg_addr"] = addr
        else:
            inp["reg_addr"] = 0
        return inp

    def observe(self, inp, out):
        res = self.res
        if self._readout_observe(out):
            return
        if self.presenting:
            if out["s_axis__tready"]:
                if self.log_accepts:
                    self.history.append((self.cycle,) + self.beats[self.i])
                    del self.history[:-8]
                    res["accept_log"].append((self.cycle, self.beats[self.i][3]))
                res["accepted_beats"] += 1
                self.i += 1
                self.presenting = False
            else:
                res["tready_low"] += 1
        mv = out["m_meta__valid"]
        if mv:
            if not self._meta_held:
                res["meta_new_cycles"].append(self.cycle)
            if inp["m_meta__ready"]:
                res["meta"].append(out["m_meta__payload"])
            # a record still held next cycle is the same record; after a transfer it is new
            self._meta_held = not inp["m_meta__ready"]
        else:
            self._meta_held = 0
        for name, valid, ready, tdata, tkeep, tlast in _OUT_STREAMS:
            if out[valid] and inp[ready]:
                nb = self.width // 8
                d = out[tdata].to_bytes(nb, "little")
                keep = out[tkeep]
                cur = self._cur[name]
                if keep & (keep + 1) == 0:          # a run of ones from lane 0 (or none)
                    cur += d[:keep.bit_length()]
                else:
                    cur += bytes(d[j] for j in range(nb) if keep >> j & 1)
                if out[tlast]:
                    res[name].append(bytes(cur))
                    cur.clear()
        self.cycle += 1

    def _stuck(self):
        return f"({self.i}/{len(self.beats)} beats accepted); last input beats: {self.last_beats()}"

    def last_beats(self):
        return "; ".join(f"cycle {h[0]} case {h[1]} tdata={h[2]:#x} tkeep={h[3]:#x} tlast={h[4]} tuser={h[5]}"
                         for h in self.history[-4:])


def run_model(width, cases, *, seed=0, p_idle=0.2, p_bp=0.3, max_frame=9216, check=True,
              drop_on_full=False, on_cycle=None, **kw):
    """Run ``cases`` through :class:`ParserModel` alone with the :class:`Driver`; return its
    results (plus ``log``, the model's verdicts, and ``overflow``, its drop-on-full count);
    ``check``: :func:`check_streams`; ``on_cycle(cycle, inputs, outputs)`` every cycle."""
    from .parser import ParserModel
    model = ParserModel(width, max_frame=max_frame, drop_on_full=drop_on_full)
    drv = Driver(width, cases, seed=seed, p_idle=p_idle, p_bp=p_bp, **kw)
    run_alone(model, drv, on_cycle=on_cycle)
    res = dict(drv.res, log=list(model.log), overflow=model.cnt_overflow)
    if check:
        check_streams(cases, res, max_frame=max_frame, width=width)
    return res


def meta_latency(width, max_frame=9216):
    """Cycles from a frame's accepted last beat to its meta record in the model, without
    backpressure (MR-HW-050): what RTL tests compare a measured latency with, so that no
    testbench carries a number of its own (tests/test_parser_model.py checks the model's)."""
    res = run_model(width, valid_cases()[:1], p_idle=0, p_bp=0, max_frame=max_frame,
                    check=False, poll_regs=False)
    last = next(c for c, is_last in res["accept_log"] if is_last)
    return res["meta_new_cycles"][0] - last


# ---------------------------------------------------------------------------------------------
# The one checker: outputs against the codec, scapy and the counters.

def reason_of(value) -> Reason:
    """A Reason from a meta record's reason (a label from ``meta_to_dict`` or a code)."""
    if isinstance(value, str):
        return Reason[value.upper()]
    return Reason(value)


def _expected(cases, res, max_frame, width):
    beats = res.get("case_beats") or [None] * len(cases)
    return [expected_reason(c, max_frame, b, width) for c, b in zip(cases, beats)]


def match_outputs(cases, res, *, max_frame=9216, width=None, expected=None):
    """Pair the collected outputs with the input frames, in order.

    Per case: ``(verdict, reason, meta int or None, payload or None, bypass or None)``,
    verdict one of accepted / dropped / bypassed / missing; then the numbers of unmatched
    (meta, bypass, payload) outputs.
    """
    from .parser import unpack_meta
    expected = expected or _expected(cases, res, max_frame, width)
    metas, byps, pays = res["meta"], res["bypass"], res["payload"]
    out = []
    mi = bi = pi = 0
    for case, exp in zip(cases, expected):
        if exp == Reason.NOT_ROCE and bi < len(byps):
            out.append(("bypassed", Reason.NOT_ROCE, None, None, byps[bi]))
            bi += 1
            continue
        if mi >= len(metas):
            out.append(("missing", None, None, None, None))
            continue
        meta = metas[mi]
        mi += 1
        d = unpack_meta(meta)
        reason = reason_of(d["reason"]) if d["reason"] <= max(Reason) else d["reason"]
        payload = None
        if not d["drop"] and d["payload_len"]:
            payload = pays[pi] if pi < len(pays) else None
            pi += 1
        out.append(("dropped" if d["drop"] else "accepted", reason, meta, payload, None))
    return out, (len(metas) - mi, len(byps) - bi, len(pays) - pi)


def _mac_int(s):
    return int(s.replace(":", ""), 16)


def _ip_int(s):
    return int(ipaddress.ip_address(s))


def expected_meta(f: codec.Frame, data: bytes) -> dict:
    """The meta record fields an accepted frame must carry, from the codec's Frame (written
    apart from :func:`metaroce.models.parser.frame_meta`, as a second derivation)."""
    v6 = f.ip.version == 6
    vlan = f.eth.vlan is not None
    l4 = 14 + (4 if vlan else 0) + (40 if v6 else 20)
    hlen = wire.ext_len(f.bth.opcode)
    exp = {
        "drop": 0, "ipv6": int(v6), "vlan_present": int(vlan),
        "frame_len": len(data),
        "payload_offset": l4 + 8 + 12 + hlen,
        "payload_len": len(f.payload),
        "eth": {"dst": _mac_int(f.eth.dst), "src": _mac_int(f.eth.src),
                "pcp": f.eth.pcp if vlan else 0, "dei": f.eth.dei if vlan else 0,
                "vlan": f.eth.vlan if vlan else 0},
        "ip": {"dscp": f.ip.dscp, "ecn": f.ip.ecn, "ttl": f.ip.ttl,
               "ident": 0 if v6 else f.ip.ident, "flow_label": f.ip.flow_label if v6 else 0,
               "src": _ip_int(f.ip.src), "dst": _ip_int(f.ip.dst)},
        "udp": {"sport": f.udp.sport},
        "bth": {k: int(v) for k, v in vars(f.bth).items()},
    }
    for name in ("reth", "aeth", "atomicack", "mrdh", "mrsh", "mrah", "mrnh"):
        h = getattr(f, name)
        if h is not None:
            exp[name] = dict(vars(h))
    if f.imm is not None:
        exp["imm"] = f.imm
    return exp


def oracle_meta(oracle: dict) -> dict:
    """The meta fields scapy's packet says (for scapy-built frames)."""
    exp = {
        "eth": {"dst": _mac_int(oracle["eth"]["dst"]), "src": _mac_int(oracle["eth"]["src"]),
                "vlan": oracle["eth"]["vlan"] or 0},
        "ipv6": int(oracle["ip"]["version"] == 6),
        "ip": {"src": _ip_int(oracle["ip"]["src"]), "dst": _ip_int(oracle["ip"]["dst"]),
               "dscp": oracle["ip"]["dscp"], "ecn": oracle["ip"]["ecn"]},
        "udp": {"sport": oracle["udp"]["sport"]},
        "bth": dict(oracle["bth"]),
        "payload_len": len(oracle["payload"]),
    }
    for name in ("reth", "aeth", "mrdh", "mrsh", "mrah", "mrnh"):
        if name in oracle:
            exp[name] = dict(oracle[name])
    if "imm" in oracle:
        exp["imm"] = oracle["imm"]
    return exp


def _diff(exp, got, path=""):
    """Differences between an expected (sub)dict and the record (keys of ``exp`` only)."""
    out = []
    if isinstance(exp, dict):
        if not isinstance(got, dict):
            return [f"{path}: expected {exp}, got {got!r}"]
        for k, v in exp.items():
            if k not in got:
                out.append(f"{path}.{k}: missing in the record")
            else:
                out += _diff(v, got[k], f"{path}.{k}" if path else k)
    elif int(exp) != int(got):
        out.append(f"{path}: expected {exp:#x}, got {int(got):#x}")
    return out


def check(cases, res, *, max_frame=9216, width=None):
    """Every frame's fate and fields against the codec and scapy, and the counters
    (MR-HW-010..012, MR-HW-020, MR-HW-030..033, MR-HW-060, MR-HW-082, MR-WIRE-103, MR-WIRE-104).

    Per frame: the reason the case was built for equals the codec's verdict; a bypassed
    frame leaves byte for byte; every other frame has a meta record equal, bit for bit, to
    :func:`~metaroce.models.parser.verdict`'s, whose fields also match a second derivation
    from the codec's Frame (:func:`expected_meta`) and, for scapy-built frames, scapy's own
    values; an accepted frame's payload bytes are the codec's.  Returns ``(problems,
    tally)``: problem lines (empty when all is right) and the expected per-reason tally.
    """
    from .parser import ParserModel, verdict
    expected = _expected(cases, res, max_frame, width)
    outcomes, extra = match_outputs(cases, res, max_frame=max_frame, width=width, expected=expected)
    problems = []
    tally = [0] * N_COUNTERS
    # frames dropped whole on a full store (drop_on_full) are not among ``cases``
    tally[OVERFLOW_COUNTER] = res.get("overflow", 0)
    beats = res.get("case_beats") or [None] * len(cases)
    for case, n_beats, exp, (got, reason, meta, payload, byp) in zip(cases, beats, expected, outcomes):
        tally[int(exp)] += 1
        where = f"{case.name} ({len(case.data)} bytes)"
        if exp != case.expect:
            problems.append(f"{where}: verdict {exp!r}, the case says {case.expect!r}")
        if got == "missing":
            problems.append(f"{where}: no meta record and no bypass frame")
            continue
        if exp == Reason.NOT_ROCE:
            if got != "bypassed":
                problems.append(f"{where}: expected bypass, got {got} {reason!r}")
            elif byp != case.data:
                problems.append(f"{where}: bypass bytes differ from the input frame")
            continue
        if reason != exp:
            problems.append(f"{where}: expected {exp.label}, got {got} {reason!r}")
            continue
        want = verdict(case.data, case.mac_error, oversize(case, max_frame, n_beats, width))[1]
        if meta != want:
            problems.append(f"{where}: meta {ParserModel.meta_to_dict(meta)} != "
                            f"{ParserModel.meta_to_dict(want)}")
        if exp != Reason.NONE:
            continue
        d = ParserModel.meta_to_dict(meta)
        f = codec.decode(case.data)
        problems += [f"{where}: codec: {x}" for x in _diff(expected_meta(f, case.data), d)]
        present = {h for h in EXT_NAMES if h in d}
        # The parser extracts EXT_NAMES; MRSEC and MRCH frames pass as payload (security.md).
        want_h = {h for h in wire.HEADERS[f.bth.opcode] if h in EXT_NAMES}
        if present != want_h:
            problems.append(f"{where}: headers present {sorted(present)}, expected {sorted(want_h)}")
        if case.oracle is not None:
            problems += [f"{where}: scapy: {x}" for x in _diff(oracle_meta(case.oracle), d)]
            if payload is not None and payload != case.oracle["payload"]:
                problems.append(f"{where}: scapy: payload bytes differ")
        if (f.payload or payload) and payload != f.payload:
            problems.append(f"{where}: payload bytes differ "
                            f"({0 if payload is None else len(payload)} vs {len(f.payload)})")
    if any(extra):
        problems.append(f"unexpected extra outputs: {extra[0]} meta, {extra[1]} bypass, "
                        f"{extra[2]} payload frames")
    counters = res.get("counters")
    if counters is not None and list(counters) != tally:
        names = [Reason(i).label for i in range(OVERFLOW_COUNTER)] + ["overflow"]
        problems.append("counters " + ", ".join(f"{n}={g} (expected {e})"
                                                for n, g, e in zip(names, counters, tally) if g != e))
    return problems, tally


def check_streams(cases, res, *, max_frame=9216, width=None):
    """:func:`check`, raising ``AssertionError`` with the first problems."""
    problems, _ = check(cases, res, max_frame=max_frame, width=width)
    assert not problems, f"{len(problems)} problem(s):\n" + "\n".join(problems[:30])


def coverage_point(case: Case, outcome, beats: int | None = None, width: int | None = None) -> dict:
    """The functional-coverage coordinates of one frame's outcome: ``reason`` (what the
    parser did: a reason label, ``bypass`` or ``missing``), ``opcode`` (BTH opcode when the
    frame reaches it), ``headers`` (base header stack, e.g. ``v6-vlan``), ``mac_beat``
    (``first``/``middle``/``last`` for a MAC error), ``beats``, ``empty_last`` (the driver
    ended the frame with a tkeep = 0 beat)."""
    verdict_, reason, _, _, _ = outcome
    data = case.data
    if verdict_ == "bypassed":
        label = "bypass"
    elif verdict_ == "missing":
        label = "missing"
    else:
        label = Reason(reason).label
    vlan = data[12:14] == b"\x81\x00"
    l3 = 18 if vlan else 14
    ip = None
    if len(data) > l3:
        ip = {4: 4, 6: 6}.get(data[l3] >> 4)
    opcode = None
    if ip is not None:
        bth = l3 + (20 if ip == 4 else 40) + 8
        if len(data) > bth:
            opcode = data[bth]
    mac_beat = None
    if case.mac_error_beat is not None and beats:
        b = min(case.mac_error_beat, beats - 1)
        mac_beat = "last" if b == beats - 1 else ("first" if b == 0 else "middle")
    empty_last = bool(width and beats and beats > max(1, -(-len(data) // (width // 8))))
    return {"reason": label, "opcode": opcode, "empty_last": empty_last,
            "headers": f"v{ip}{'-vlan' if vlan else ''}" if ip else ("vlan" if vlan else "l2"),
            "mac_beat": mac_beat, "beats": beats, "group": case.group}
