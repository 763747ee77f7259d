"""The frame builder's one verification stack (MR-TXF-050): cases, traffic driver, checker.

Shared by the model-only tests, the Amaranth-simulator tests and the cocotb/Verilator
lockstep testbench (tb/frame_builder.py): a :class:`Case` is a descriptor (dict of
:data:`~metaroce.models.frame_builder.DESC_FIELDS`) and its payload; :class:`Driver` drives
``s_desc``, ``s_payload`` and ``m_axis.tready`` cycle by cycle from one seed (random idle
cycles on both inputs, random backpressure) and collects the frames; :func:`check` compares
every frame with :func:`~metaroce.models.frame_builder.builder_bytes` (``codec.encode``) and
decodes it.
"""
from __future__ import annotations

import random
from dataclasses import dataclass, field

from . import codec, wire
from .frame_builder import DESC_FIELDS, MAX_PAYLOAD, builder_bytes, desc_of_frame, pack_desc
from .wire import MrdhFlag, NakReason, Op

__all__ = ["Case", "case_of_frame", "endpoint_ops_cases", "opcode_cases", "length_cases",
           "random_cases", "Driver", "check", "ENDPOINT_OPS"]

#: The opcodes the MetaRoCE endpoint sends (models/endpoint.py), each with payload or not.
ENDPOINT_OPS = (Op.MR_WRITE, Op.MR_WRITE_IMM, Op.MR_SEND, Op.MR_SEND_IMM, Op.MR_READ, Op.MR_READ_RESP,
                Op.MR_CMP_SWAP, Op.MR_FETCH_ADD, Op.MR_ACK, Op.MR_NAK)


@dataclass
class Case:
    desc: dict
    payload: bytes = b""
    name: str = ""
    tags: tuple = field(default_factory=tuple)

    def expected(self):
        return builder_bytes(self.desc, self.payload)


def case_of_frame(f, name=""):
    """A case that must give ``codec.encode(f)`` (IPv6: but for the UDP checksum, MR-TXF-022)."""
    d = desc_of_frame(f)
    return Case(d, bytes(f.payload), name or Op(f.bth.opcode).name)


def _rand_frame(rng, op, plen, ipv6, vlan):
    eth = codec.Eth(dst=":".join(f"{rng.randrange(256):02x}" for _ in range(6)),
                    src=":".join(f"{rng.randrange(256):02x}" for _ in range(6)),
                    vlan=rng.randrange(4096) if vlan else None, pcp=rng.randrange(8) if vlan else 0,
                    dei=rng.randrange(2) if vlan else 0)
    if ipv6:
        import ipaddress
        ip = codec.IP(version=6, src=str(ipaddress.IPv6Address(rng.getrandbits(128))),
                      dst=str(ipaddress.IPv6Address(rng.getrandbits(128))), dscp=rng.randrange(64),
                      ecn=rng.randrange(4), ttl=rng.randrange(256), flow_label=rng.randrange(1 << 20))
    else:
        ip = codec.IP(version=4, src=".".join(str(rng.randrange(256)) for _ in range(4)),
                      dst=".".join(str(rng.randrange(256)) for _ in range(4)), dscp=rng.randrange(64),
                      ecn=rng.randrange(4), ttl=rng.randrange(256), ident=rng.randrange(1 << 16))
    udp = codec.UDP(sport=rng.randrange(1 << 16), dport=rng.choice((wire.ROCE_PORT, rng.randrange(1 << 16))))
    bth = codec.BTH(opcode=op, se=rng.randrange(2), mig=rng.randrange(2), tver=rng.randrange(16),
                    pkey=rng.randrange(1 << 16), fecn=rng.randrange(2), becn=rng.randrange(2),
                    dest_qp=rng.randrange(1 << 24), ack_req=rng.randrange(2), psn=rng.randrange(1 << 24))
    f = codec.make(op, bytes(rng.randrange(256) for _ in range(plen)), eth=eth, ip=ip, udp=udp, bth=bth)
    for h in wire.HEADERS[op]:
        if h in ("cnp",):
            continue
        if h == "imm":
            f.imm = rng.getrandbits(32)
            continue
        cls = codec.RECORDS[h]
        from .headers import TABLE
        setattr(f, h, cls(**{n: rng.getrandbits(w) for n, w in TABLE[h].layout().items()}))
    return f


def _lengths(rng, width, n=None):
    nb = width // 8
    base = [0, 1, 2, 3, 4, 5, 7, 8, nb - 1, nb, nb + 1, 2 * nb - 3, 255, 256, 257, 1024, 4093, 4096]
    return sorted(set(x for x in base if 0 <= x <= MAX_PAYLOAD))


def endpoint_ops_cases(width, seed=1):
    """MR-TXF-051: every opcode the endpoint sends, and an abort, over IPv4/IPv6 x VLAN
    on/off, with the payload lengths its messages use."""
    rng = random.Random(seed)
    out = []
    for ipv6 in (0, 1):
        for vlan in (0, 1):
            for op in ENDPOINT_OPS:
                plen = {Op.MR_CMP_SWAP: 16, Op.MR_FETCH_ADD: 8}.get(op, 0)
                if op in wire.PAYLOAD_OPS and not plen:
                    plen = rng.choice((1, 37, 256, 1000))
                f = _rand_frame(rng, op, plen, ipv6, vlan)
                out.append(case_of_frame(f, f"{op.name} v{4 + 2 * ipv6} vlan{vlan}"))
            # MR-WIRE-083: an abort (MRDH ERROR|FIRST|LAST, no payload)
            f = _rand_frame(rng, Op.MR_WRITE, 0, ipv6, vlan)
            f.mrdh.flags = MrdhFlag.ERROR | MrdhFlag.FIRST | MrdhFlag.LAST
            f.bth.ack_req = 1
            out.append(case_of_frame(f, f"abort v{4 + 2 * ipv6} vlan{vlan}"))
            f = _rand_frame(rng, Op.MR_NAK, 0, ipv6, vlan)
            f.mrnh.reason = NakReason.ABORTED
            out.append(case_of_frame(f, f"NAK aborted v{4 + 2 * ipv6} vlan{vlan}"))
    return out


def opcode_cases(width, seed=2):
    """MR-TXF-012: every opcode of the header table, and two outside it, random classes."""
    rng = random.Random(seed)
    out = []
    for op in wire.HEADERS:
        plen = rng.choice((0, 3, 21, 64)) if op in wire.PAYLOAD_OPS else 0
        f = _rand_frame(rng, op, plen, rng.randrange(2), rng.randrange(2))
        out.append(case_of_frame(f, Op(op).name))
    for op in (0x15, 0xFF):
        f = _rand_frame(rng, Op.RC_SEND_MIDDLE, 5, rng.randrange(2), rng.randrange(2))
        c = case_of_frame(f, f"unknown {op:#04x}")
        c.desc["bth_opcode"] = op
        out.append(c)
    return out


def length_cases(width, seed=3, ops=(Op.MR_WRITE, Op.MR_SEND_IMM, Op.RC_SEND_MIDDLE, Op.MR_READ_RESP)):
    """MR-TXF-013: payload lengths around 4 and the beat width, and up to the MTU, for headers
    of several lengths (so every shift of the payload)."""
    rng = random.Random(seed)
    out = []
    for plen in _lengths(rng, width):
        for op in ops:
            f = _rand_frame(rng, op, plen, rng.randrange(2), rng.randrange(2))
            out.append(case_of_frame(f, f"{Op(op).name} len {plen}"))
    return out


def random_cases(n, seed=4, max_payload=600):
    """Random opcodes, classes and field values; every descriptor field random, including the
    ones the opcode does not use (ignored, MR-TXF-003)."""
    rng = random.Random(seed)
    ops = list(wire.HEADERS)
    out = []
    for i in range(n):
        op = rng.choice(ops)
        plen = rng.randrange(max_payload + 1) if rng.random() < 0.8 else rng.randrange(8)
        if op not in wire.PAYLOAD_OPS and rng.random() < 0.7:
            plen = 0
        f = _rand_frame(rng, op, plen, rng.randrange(2), rng.randrange(2))
        c = case_of_frame(f, f"random {i}")
        for name, w in DESC_FIELDS:         # unused fields: garbage the builder must ignore
            if name.split("_")[0] in ("reth", "aeth", "imm", "atomicack", "atomiceth", "mrdh", "mrsh",
                                      "mrah", "mrnh", "mrsec", "mrch"):
                hdr = name.split("_")[0]
                if hdr not in wire.HEADERS[op]:
                    c.desc[name] = rng.getrandbits(w)
        out.append(c)
    return out


class Driver:
    """Drives ``s_desc`` and ``s_payload`` (valid held until taken, ``p_idle`` idle cycles)
    and ``m_axis.tready`` (low with probability ``p_bp``); collects ``m_axis`` frames.
    ``res``: ``frames`` (list of (bytes, [tkeep per beat], tuser seen)), ``beat_cycles``
    (cycle of every output beat), ``desc_cycles``, ``cycles``. ``lane_of`` (MR-TX-482): a
    function of a case's descriptor giving the lanes its payload beats are rotated up by (data
    and keep), for ``prerotated``."""

    def __init__(self, width, cases, *, seed=0, p_idle=0.2, p_bp=0.3, quiet_cycles=4,
                 lane_of=None):
        self.width = width
        self.nb = width // 8
        self.rng = random.Random(seed)
        self.p_idle, self.p_bp = p_idle, p_bp
        self.cases = list(cases)
        self.descs = [pack_desc(c.desc) for c in self.cases]
        self.beats = []
        nb = self.nb
        for c in self.cases:
            p = c.payload
            n = -(-len(p) // nb)
            s = lane_of(c.desc) % nb if lane_of else 0
            for j in range(n):
                chunk = p[j * nb:(j + 1) * nb]
                d, k = int.from_bytes(chunk, "little"), (1 << len(chunk)) - 1
                if s:
                    d = ((d << 8 * s) | (d >> (width - 8 * s))) & ((1 << width) - 1)
                    k = ((k << s) | (k >> (nb - s))) & ((1 << nb) - 1)
                self.beats.append(d | (k << width) | (int(j == n - 1) << (width + nb)))
        self.i = 0
        self.j = 0
        self.desc_on = False
        self.pay_on = False
        self.cycle = 0
        self.quiet = 0
        self.quiet_cycles = quiet_cycles
        self.finished = False
        self.cur = bytearray()
        self.cur_keep = []
        self.cur_user = 0
        self.limit = 5000 + 40 * sum(-(-(len(c.payload) + 130) // nb) for c in self.cases) * (1 + int(10 * p_bp))
        self.res = {"frames": [], "beat_cycles": [], "desc_cycles": [], "cycles": 0}

    @property
    def sent_all(self):
        return self.i >= len(self.descs) and self.j >= len(self.beats)

    def inputs(self):
        rng = self.rng
        if not self.desc_on and self.i < len(self.descs):
            self.desc_on = self.p_idle == 0 or rng.random() >= self.p_idle
        if not self.pay_on and self.j < len(self.beats):
            self.pay_on = self.p_idle == 0 or rng.random() >= self.p_idle
        return {"s_desc__valid": int(self.desc_on), "s_desc__payload": self.descs[self.i] if self.desc_on else 0,
                "s_payload__valid": int(self.pay_on),
                "s_payload__payload": self.beats[self.j] if self.pay_on else 0,
                "m_axis__tready": int(self.p_bp == 0 or rng.random() >= self.p_bp)}

    def observe(self, ins, outs):
        if ins["s_desc__valid"] and outs["s_desc__ready"]:
            self.i += 1
            self.desc_on = False
            self.res["desc_cycles"].append(self.cycle)
        if ins["s_payload__valid"] and outs["s_payload__ready"]:
            self.j += 1
            self.pay_on = False
        if outs["m_axis__tvalid"] and ins["m_axis__tready"]:
            keep = outs["m_axis__tkeep"]
            n = bin(keep).count("1")
            self.cur += outs["m_axis__tdata"].to_bytes(self.nb, "little")[:n]
            self.cur_keep.append(keep)
            self.cur_user |= outs["m_axis__tuser"]
            self.res["beat_cycles"].append(self.cycle)
            if outs["m_axis__tlast"]:
                self.res["frames"].append((bytes(self.cur), self.cur_keep, self.cur_user))
                self.cur, self.cur_keep, self.cur_user = bytearray(), [], 0
        self.cycle += 1

    def settle(self, busy):
        if self.finished:
            return
        done = self.sent_all and len(self.res["frames"]) >= len(self.cases)
        if done and not (busy() if callable(busy) else busy):
            self.quiet += 1
        else:
            self.quiet = 0
        if self.quiet > self.quiet_cycles:
            self.res["cycles"] = self.cycle
            self.finished = True
        elif self.cycle > self.limit:
            raise AssertionError(f"no progress after {self.cycle} cycles: {self.i}/{len(self.descs)} "
                                 f"descriptors, {self.j}/{len(self.beats)} payload beats, "
                                 f"{len(self.res['frames'])}/{len(self.cases)} frames")


def check(cases, res, width):
    """MR-TXF-010, MR-TXF-044: one frame per case, in order, byte for byte the codec's
    (:func:`builder_bytes`); tkeep all ones but on the last beat, packed from lane 0; tuser 0;
    every frame decodes with a good ICRC, and over IPv4 equals ``codec.encode`` exactly."""
    frames = res["frames"]
    assert len(frames) == len(cases), f"{len(frames)} frames for {len(cases)} cases"
    full = (1 << (width // 8)) - 1
    for c, (got, keeps, user) in zip(cases, frames):
        want = c.expected()
        assert got == want, f"{c.name}: frame differs from codec.encode at byte " \
            f"{next((i for i, (x, y) in enumerate(zip(got, want)) if x != y), min(len(got), len(want)))}"
        assert all(k == full for k in keeps[:-1]), f"{c.name}: tkeep not full before the last beat"
        last = keeps[-1]
        assert last and last & (last + 1) == 0, f"{c.name}: last tkeep {last:#x} not packed"
        assert user == 0
        if c.desc["udp_dport"] == wire.ROCE_PORT and c.desc["bth_tver"] == 0:
            try:
                codec.decode(got)
            except codec.DecodeError as e:
                # only header-content errors, never the ICRC or a length (MR-TXF-030)
                # (and a payload on an opcode without one, which the builder sends as told)
                ok = [wire.Reason.BAD_OPCODE, wire.Reason.BAD_VERSION]
                if c.payload and c.desc["bth_opcode"] not in [int(o) for o in wire.PAYLOAD_OPS]:
                    ok.append(wire.Reason.LENGTH)
                assert e.reason in ok, f"{c.name}: {e}"


def scapy_icrc(frame):
    """The ICRC scapy.contrib.roce computes for ``frame`` (wire order): the independent oracle
    of MR-TXF-030 (frames to UDP port 4791 only)."""
    from scapy.contrib.roce import BTH as SBTH
    from scapy.layers.inet import IP as SIP
    from scapy.layers.l2 import Dot1Q, Ether
    p = Ether(frame)
    p[SBTH].icrc = None
    b = bytes(p)
    if SIP in p:
        end = (18 if Dot1Q in p else 14) + p[SIP].len
        return b[end - 4:end]
    return b[-4:]


def endpoint_cases(nbytes=20000, *, mtu=1024, paths=4, seed=7, limit=None):
    """MR-TXF-051: the frames the reference endpoint (models/endpoint.py) sends over the loopback
    for one write of ``nbytes`` and a send, both directions (data, ACKs), as cases: each must
    come out of the builder as ``codec.encode`` of the captured frame."""
    from .endpoint import Endpoint
    from .loopback import Loopback
    rng = random.Random(seed)
    a = Endpoint("10.0.0.1", mtu=mtu, line_rate_bps=100e9, base_rtt=4e-6, announce=False)   # as the engine: MR-CC-021
    b = Endpoint("10.0.0.2", mtu=mtu, line_rate_bps=100e9, base_rtt=4e-6, announce=False)
    ca = a.connect(10, "10.0.0.2", 20, paths=paths, streams=1)
    b.connect(20, "10.0.0.1", 10, paths=paths, streams=1)
    src = bytearray(rng.randbytes(nbytes))
    dst = bytearray(nbytes)
    ca.post_write(0, a.reg_mr(src), 0, nbytes, 0, b.reg_mr(dst), wr_id=1)
    lb = Loopback(a, b, seed=seed)
    frames = []
    transmit = lb._transmit

    def capture(f, i, t):
        frames.append(codec.decode(codec.encode(f)))      # the frame as it is on the wire
        transmit(f, i, t)
    lb._transmit = capture
    lb.run()
    assert dst == src, "the reference write did not land"
    frames = frames[:limit] if limit else frames
    return [case_of_frame(f, f"endpoint {i} {Op(f.bth.opcode).name}") for i, f in enumerate(frames)]
