"""Shared frame cases for the RX parser tests, testbenches and benchmarks (MR-HW-*).

Every case is a :class:`Case` ``(name, data, mac_error_beat, expect)``: the frame bytes (no
FCS), the beat index whose ``tuser`` is set (``None``: no MAC error; the index is clipped
to the frame's last beat) and the expected :class:`~metaroce.models.wire.Reason` (the
tests check it against :func:`metaroce.models.parser.verdict`, i.e. against the codec).
"""
from __future__ import annotations

import random
import struct
from dataclasses import dataclass, replace

from . import codec, wire
from .codec import AETH, BTH, IP, MRAH, MRDH, MRNH, MRSH, RETH, AtomicAck, Eth
from .wire import Op, Reason

__all__ = ["Case", "pad_eth", "valid_cases", "drop_cases", "bypass_cases", "all_cases",
           "mutate", "random_valid", "reip4"]

MIN_FRAME = 60                  # Ethernet minimum without FCS (MR-WIRE-012)


@dataclass(frozen=True)
class Case:
    name: str
    data: bytes
    mac_error_beat: int | None = None
    expect: Reason = Reason.NONE


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


# ---------------------------------------------------------------------------------------------
# Traffic driver and stream checks, shared by the model tests, the RTL tests and the benches.

class Driver:
    """AXI4-Stream source of ``cases`` with random idle cycles, random output backpressure and
    collectors of the three output streams (MR-HW-002).

    Per cycle: ``inp = drv.inputs()``, apply ``inp`` to the DUT/model, read its outputs
    ``out``, then ``drv.observe(inp, out)``. ``drv.res`` collects ``meta`` (flat values),
    ``payload`` and ``bypass`` (bytes per packet) and ``accepted_beats``.
    """

    def __init__(self, width, cases, *, seed=0, p_idle=0.2, p_bp=0.3, p_meta_bp=None,
                 p_garble_keep=0.0):
        from .parser import beats_of
        self.width = width
        self.rng = random.Random(seed)
        self.p_idle, self.p_bp = p_idle, p_bp
        self.p_meta_bp = p_bp if p_meta_bp is None else p_meta_bp
        self.p_garble_keep = p_garble_keep   # random tkeep (MR-HW-003 robustness; no stream check)
        self.beats = []
        for ci, c in enumerate(cases):
            bl = beats_of(c.data, width)
            if c.mac_error_beat is not None:
                j = min(c.mac_error_beat, len(bl) - 1)
                bl[j] = bl[j][:3] + (1,)
            self.beats += [(ci,) + b for b in bl]
        self.i = 0
        self.presenting = False
        self.cycle = 0
        self.history = []
        self._cur = {"payload": bytearray(), "bypass": bytearray()}
        self.res = {"meta": [], "payload": [], "bypass": [], "accepted_beats": 0}

    @property
    def sent_all(self):
        return self.i >= len(self.beats)

    def inputs(self):
        rng, w = self.rng, self.width
        if not self.presenting and self.i < len(self.beats) and (self.p_idle == 0 or rng.random() >= self.p_idle):
            self.presenting = True
            if self.p_garble_keep and rng.random() < self.p_garble_keep:
                b = self.beats[self.i]
                self.beats[self.i] = b[:2] + (rng.getrandbits(w // 8),) + b[3:]
        if self.presenting:
            _, d, k, last, user = self.beats[self.i]
        else:
            d, k, last, user = (rng.getrandbits(w), rng.getrandbits(w // 8), rng.getrandbits(1),
                                rng.getrandbits(1)) if self.p_idle else (0, 0, 0, 0)

        def ready(p):
            return int(p == 0 or rng.random() >= p)
        return {
            "s_axis__tvalid": int(self.presenting), "s_axis__tdata": d, "s_axis__tkeep": k,
            "s_axis__tlast": last, "s_axis__tuser": user,
            "m_meta__ready": ready(self.p_meta_bp), "m_payload__tready": ready(self.p_bp),
            "m_bypass__tready": ready(self.p_bp), "reg_addr": rng.randrange(16) if self.p_idle else 0,
        }

    def observe(self, inp, out):
        if self.presenting and out["s_axis__tready"]:
            self.history.append((self.cycle,) + self.beats[self.i])
            del self.history[:-8]
            self.res["accepted_beats"] += 1
            self.i += 1
            self.presenting = False
        if out["m_meta__valid"] and inp["m_meta__ready"]:
            self.res["meta"].append(out["m_meta__data"])
        nb = self.width // 8
        for name in ("payload", "bypass"):
            if out[f"m_{name}__tvalid"] and inp[f"m_{name}__tready"]:
                d = out[f"m_{name}__tdata"].to_bytes(nb, "little")
                keep = out[f"m_{name}__tkeep"]
                cur = self._cur[name]
                cur += bytes(d[j] for j in range(nb) if keep >> j & 1)
                if out[f"m_{name}__tlast"]:
                    self.res[name].append(bytes(cur))
                    cur.clear()
        self.cycle += 1

    def last_beats(self):
        return "; ".join(f"cycle {h[0]} case {h[1]} tdata={h[2]:#x} tkeep={h[3]:#x} tlast={h[4]} tuser={h[5]}"
                         for h in self.history[-4:])


def run_model(width, cases, *, seed=0, p_idle=0.2, p_bp=0.3, max_frame=9216, check=True, **kw):
    """Run ``cases`` through :class:`ParserModel` alone; return the driver's results."""
    from .parser import ParserModel
    model = ParserModel(width, max_frame=max_frame)
    drv = Driver(width, cases, seed=seed, p_idle=p_idle, p_bp=p_bp, **kw)
    limit = 200 + 20 * len(drv.beats) * (1 + int(10 * p_bp))
    quiet = 0
    tready_low = 0
    while quiet <= 3:
        inp = drv.inputs()
        out = model.step(inp)
        if inp["s_axis__tvalid"] and not out["s_axis__tready"]:
            tready_low += 1
        drv.observe(inp, out)
        quiet = 0 if (not drv.sent_all or model.busy()) else quiet + 1
        if drv.cycle > limit:
            raise AssertionError(f"no progress after {drv.cycle} cycles")
    res = dict(drv.res, cycles=drv.cycle, counters=list(model.cnt), log=list(model.log),
               tready_low=tready_low)
    if check:
        check_streams(cases, res, max_frame=max_frame, width=width)
    return res


def check_streams(cases, res, *, max_frame=9216, width=None):
    """The collected streams agree with the codec frame by frame (MR-HW-012, MR-HW-020,
    MR-HW-030, MR-HW-032, MR-HW-033, MR-HW-060)."""
    from .parser import ParserModel, verdict
    metas, pays, byps = list(res["meta"]), list(res["payload"]), list(res["bypass"])
    counts = [0] * 9
    for c in cases:
        oversize = False
        if width is not None:
            from .parser import params
            oversize = -(-max(len(c.data), 1) // (width // 8)) > params(width, max_frame)["max_beats"]
        reason, meta, vals = verdict(c.data, c.mac_error_beat is not None, oversize)
        assert reason == c.expect, f"{c.name}: verdict {reason!r}, case says {c.expect!r}"
        counts[reason] += 1
        if reason == Reason.NOT_ROCE:
            assert byps, f"{c.name}: no bypass frame"
            assert byps.pop(0) == c.data, f"{c.name}: bypass frame differs"
            continue
        assert metas, f"{c.name}: no meta record"
        got = metas.pop(0)
        assert got == meta, f"{c.name}: meta {ParserModel.meta_to_dict(got)} != {vals}"
        if reason == Reason.NONE:
            f = codec.decode(c.data)
            if f.payload:
                assert pays, f"{c.name}: no payload"
                assert pays.pop(0) == f.payload, f"{c.name}: payload differs"
    assert not metas and not pays and not byps, "extra output records"
    assert res["counters"] == counts, (res["counters"], counts)
