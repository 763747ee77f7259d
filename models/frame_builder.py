"""Cycle model of the TX frame builder (hdl/frame_builder.py, docs/spec/hw-tx-frame.md).

``FrameBuilderModel(width)``: ``step(inputs)`` once per clock cycle with every input port's
value in this cycle (Verilog names, :meth:`FrameBuilderModel.port_names`); it returns every
output port's value in the same cycle and advances one clock.

The bytes of every frame come from the codec (:func:`metaroce.models.codec.encode` of the frame
the descriptor and its payload describe, MR-TXF-010): this module adds only the hardware's
timing, register by register (MR-TXF-040..046): the descriptor pipeline, the frame register,
the merge stage, the ICRC delay line and the output skid buffer.

The descriptor layout (:data:`DESC_LAYOUT`) is declared here, from the header table
(models/headers.py, MR-WIRE-003), and the RTL imports it (MR-TXF-002).
"""
from __future__ import annotations

import ipaddress
from dataclasses import replace

from amaranth.lib import data

from . import codec, wire
from .fifo import SyncFifoBufferedModel
from .headers import TABLE as _H
from .icrc import icrc_bytes
from .wire import Op

__all__ = ["DESC_LAYOUT", "DESC_FIELDS", "EXT_HEADERS", "MAX_PAYLOAD", "HDR_MAX", "HDR_STAGES",
           "ICRC_STAGES", "DESC_RING", "PAYLOAD_LAYOUT", "payload_layout", "pack_desc", "unpack_desc",
           "desc_of_frame", "frame_of_desc", "check_desc_fields", "expected_bytes", "header_len", "FrameBuilderModel",
           "INPUTS", "OUTPUTS", "ext_seq", "builder_bytes", "REC_DEPTH",
           "frame_beats_max", "out_fifo_depth", "ck_stages"]

#: MR-TXF-003: the extension headers a descriptor carries (those with fields; CNP's is zeros).
EXT_HEADERS = ("reth", "aeth", "imm", "atomicack", "atomiceth", "mrdh", "mrsh", "mrah", "mrnh",
               "mrsec", "mrch")
#: MR-TXF-004: payload_len is 14 bits.
PAYLOAD_BITS = 14
MAX_PAYLOAD = (1 << PAYLOAD_BITS) - 1
#: Fields of the BTH the builder computes rather than takes (MR-TXF-011).
_BTH_COMPUTED = ("pad",)


def _desc_fields():
    f = [("vlan_en", 1), ("ipv6", 1),
         ("eth_dst", 48), ("eth_src", 48),
         ("vlan_pcp", 3), ("vlan_dei", 1), ("vlan_vlan", 12),
         ("ip_dscp", 6), ("ip_ecn", 2), ("ip_ttl", 8), ("ip_ident", 16), ("ip_flow_label", 20),
         ("ip_src", 128), ("ip_dst", 128),
         ("udp_sport", 16), ("udp_dport", 16)]
    f += [(f"bth_{n}", w) for n, w in _H["bth"].layout().items() if n not in _BTH_COMPUTED]
    for h in EXT_HEADERS:
        f += [(f"{h}_{n}", w) for n, w in _H[h].layout().items()]
    f.append(("payload_len", PAYLOAD_BITS))
    return tuple(f)


#: MR-TXF-002: the descriptor's fields, flat, first in the least significant bits.
DESC_FIELDS = _desc_fields()
DESC_LAYOUT = data.StructLayout(dict(DESC_FIELDS))
_OFFS = {}
_o = 0
for _n, _w in DESC_FIELDS:
    _OFFS[_n] = (_o, _w)
    _o += _w
DESC_BITS = _o


def check_desc_fields(names):
    """MR-TXF-072: a builder's ``desc_fields`` as a frozenset of descriptor field names (None:
    every field); ValueError for a name that is not a descriptor field."""
    if names is None:
        return None
    names = frozenset(names)
    bad = sorted(names - set(_OFFS))
    if bad:
        raise ValueError(f"not descriptor fields: {bad}")
    return names


def payload_layout(width):
    """MR-TXF-005: a payload beat {data, keep, last}, payload byte 0 in lane 0 of its first beat."""
    return data.StructLayout({"data": width, "keep": width // 8, "last": 1})


PAYLOAD_LAYOUT = payload_layout


def pack_desc(values):
    """The flat integer of a descriptor dict (missing fields are 0); ValueError if a value
    does not fit."""
    word = 0
    for n, v in values.items():
        off, w = _OFFS[n]
        if not 0 <= v < 1 << w:
            raise ValueError(f"descriptor field {n} = {v!r} does not fit in {w} bits")
        word |= v << off
    return word


def unpack_desc(word):
    return {n: (word >> off) & ((1 << w) - 1) for n, (off, w) in _OFFS.items()}


def _mac_int(s):
    return int.from_bytes(bytes(int(x, 16) for x in s.split(":")), "big")


def _mac_str(v):
    return ":".join(f"{b:02x}" for b in v.to_bytes(6, "big"))


def desc_of_frame(f):
    """The descriptor dict of a :class:`~metaroce.models.codec.Frame` (its payload goes on
    ``s_payload``; ``payload_len`` is its length)."""
    v6 = f.ip.version == 6
    d = {"vlan_en": int(f.eth.vlan is not None), "ipv6": int(v6),
         "eth_dst": _mac_int(f.eth.dst), "eth_src": _mac_int(f.eth.src),
         "vlan_pcp": f.eth.pcp, "vlan_dei": f.eth.dei, "vlan_vlan": f.eth.vlan or 0,
         "ip_dscp": f.ip.dscp, "ip_ecn": f.ip.ecn, "ip_ttl": f.ip.ttl,
         "ip_ident": 0 if v6 else f.ip.ident, "ip_flow_label": f.ip.flow_label if v6 else 0,
         "ip_src": int(ipaddress.ip_address(f.ip.src)), "ip_dst": int(ipaddress.ip_address(f.ip.dst)),
         "udp_sport": f.udp.sport, "udp_dport": f.udp.dport,
         "payload_len": len(f.payload)}
    for n in _H["bth"].layout():
        if n not in _BTH_COMPUTED:
            d[f"bth_{n}"] = int(getattr(f.bth, n))
    for h in EXT_HEADERS:
        v = getattr(f, h)
        if v is None:
            continue
        if h == "imm":
            d["imm_imm"] = v
        else:
            for n in _H[h].layout():
                d[f"{h}_{n}"] = getattr(v, n)
    return d


def ext_seq(opcode):
    """MR-TXF-012: the extension headers the builder emits for ``opcode``: wire.HEADERS, and
    none for an opcode not in that table."""
    try:
        return wire.HEADERS[Op(opcode)]
    except ValueError:
        return ()


def header_len(d):
    """Bytes from the Ethernet header to the last extension header."""
    return (wire.ETH_HLEN + wire.VLAN_HLEN * d["vlan_en"] + (wire.IPV6_HLEN if d["ipv6"] else wire.IPV4_HLEN)
            + wire.UDP_HLEN + wire.BTH_LEN + sum(wire.HEADER_LEN[h] for h in ext_seq(d["bth_opcode"])))


def frame_of_desc(d, payload=b""):
    """The codec Frame a descriptor dict describes (MR-TXF-010). An opcode outside the header
    table is built as RC_SEND_MIDDLE (no extension headers) and its opcode patched by
    :func:`expected_bytes`."""
    v6 = bool(d["ipv6"])
    ipf = ipaddress.IPv6Address if v6 else ipaddress.IPv4Address
    mask = (1 << 128) - 1 if v6 else (1 << 32) - 1
    eth = codec.Eth(dst=_mac_str(d["eth_dst"]), src=_mac_str(d["eth_src"]),
                    vlan=d["vlan_vlan"] if d["vlan_en"] else None,
                    pcp=d["vlan_pcp"] if d["vlan_en"] else 0, dei=d["vlan_dei"] if d["vlan_en"] else 0)
    ip = codec.IP(version=6 if v6 else 4, src=str(ipf(d["ip_src"] & mask)), dst=str(ipf(d["ip_dst"] & mask)),
                  dscp=d["ip_dscp"], ecn=d["ip_ecn"], ttl=d["ip_ttl"],
                  ident=0 if v6 else d["ip_ident"], flow_label=d["ip_flow_label"] if v6 else 0)
    udp = codec.UDP(sport=d["udp_sport"], dport=d["udp_dport"], checksum=0)
    op = d["bth_opcode"]
    known = op in wire.HEADERS.keys() or any(int(o) == op for o in wire.HEADERS)
    bth = codec.BTH(**{n: d[f"bth_{n}"] for n in _H["bth"].layout() if n not in _BTH_COMPUTED})
    if not known:
        bth = replace(bth, opcode=Op.RC_SEND_MIDDLE)
    f = codec.make(bth.opcode, payload, eth=eth, ip=ip, udp=udp, bth=bth)
    for h in ext_seq(bth.opcode):
        if h == "cnp":
            continue
        if h == "imm":
            f.imm = d["imm_imm"]
        else:
            cls = codec.RECORDS[h]
            setattr(f, h, cls(**{n: d[f"{h}_{n}"] for n in _H[h].layout()}))
    return f


def expected_bytes(d, payload):
    """The frame the builder must emit for descriptor ``d`` and ``payload`` (MR-TXF-010):
    ``codec.encode``; for an opcode outside the header table, the opcode byte patched and the
    ICRC recomputed (MR-TXF-012)."""
    f = frame_of_desc(d, payload)
    out = bytearray(codec.encode(f))
    if f.bth.opcode != d["bth_opcode"]:
        l3 = wire.ETH_HLEN + wire.VLAN_HLEN * d["vlan_en"]
        l4 = l3 + (wire.IPV6_HLEN if d["ipv6"] else wire.IPV4_HLEN)
        out[l4 + wire.UDP_HLEN] = d["bth_opcode"]
        out[-4:] = icrc_bytes(bytes(out[l3:-4]))
        if d["ipv6"]:       # MR-WIRE-042 over the patched datagram
            udp = bytearray(out[l4:])
            udp[6:8] = b"\0\0"
            src, dst = bytes(out[l3 + 8:l3 + 24]), bytes(out[l3 + 24:l3 + 40])
            ck = codec._udp6_checksum(src, dst, bytes(udp))
            out[l4 + 6:l4 + 8] = ck.to_bytes(2, "big")
    return bytes(out)


def builder_bytes(d, payload):
    """The frame the builder emits (MR-TXF-010, MR-TXF-022): :func:`expected_bytes`, the
    codec's bytes, IPv6 UDP checksum included (MR-WIRE-042; it covers the ICRC, so IPv6
    frames wait in the output FIFO until it is known, MR-TXF-060..064)."""
    return expected_bytes(d, payload)


#: Largest header: Ethernet + VLAN + IPv6 + UDP + BTH + the longest extension sequence.
HDR_MAX = (wire.ETH_HLEN + wire.VLAN_HLEN + wire.IPV6_HLEN + wire.UDP_HLEN + wire.BTH_LEN
           + max(sum(wire.HEADER_LEN[h] for h in hs) for hs in wire.HEADERS.values()))
#: MR-TXF-041: descriptor pipeline stages (A, then the arithmetic, then G).
HDR_STAGES = 6
#: MR-TXF-070: slots of the descriptor ring (the whole descriptor from A's load to G's): at least
#: the HDR_STAGES - 1 descriptors stages A..E hold, so a slot is written again at the earliest as
#: G reads it.
DESC_RING = HDR_STAGES
#: MR-TXF-043: stages from the merge register M to the ICRC insertion (D1..D4).
ICRC_STAGES = 4

#: MR-TXF-060: checksum records (IPv6 frames in the output FIFO or in the checksum pipeline).
REC_DEPTH = 16


def frame_beats_max(width):
    """Beats of the longest frame (largest header and payload, pad, ICRC)."""
    return -(-(HDR_MAX + MAX_PAYLOAD + 3 + wire.ICRC_LEN) // (width // 8))


def out_fifo_depth(width):
    """MR-TXF-060: output FIFO slots: about two of the longest frames (one fills while one
    leaves), rounded down to a power of two (block RAM depth), at least one longest frame."""
    two = 2 * frame_beats_max(width)
    return 1 << (two.bit_length() - 1)


def ck_stages(width):
    """MR-TXF-062: cycles from a frame's last beat written into the output FIFO to its
    checksum record readable: the byte-column adder tree (log2(width/16) stages), the
    accumulator, five folding stages and the record queue."""
    return (width // 16).bit_length() - 1 + 1 + 5 + 1


INPUTS = ("s_desc__valid", "s_desc__payload", "s_payload__valid", "s_payload__payload",
          "m_axis__tready")
OUTPUTS = ("s_desc__ready", "s_payload__ready", "m_axis__tvalid", "m_axis__tdata",
           "m_axis__tkeep", "m_axis__tlast", "m_axis__tuser")


class _Job:
    """One frame in flight."""
    __slots__ = ("d", "H", "P", "L", "nbeats", "hb", "npb", "payload", "bytes", "hdr")

    def __init__(self, d, nb):
        self.d = d
        self.H = header_len(d)
        self.P = d["payload_len"]
        self.L = self.H + self.P + (-self.P) % 4 + wire.ICRC_LEN
        self.nbeats = -(-self.L // nb)
        self.hb = self.H // nb
        self.npb = -(-self.P // nb)
        self.payload = bytearray()
        self.bytes = None
        # The header bytes (IPv4: final; IPv6: everything but the UDP checksum, which the
        # payload decides and which leaves in the header only once the frame is complete).
        self.hdr = builder_bytes(d, bytes(self.P))[:self.H]
        if self.P == 0:
            self.bytes = builder_bytes(d, b"")

    def add(self, chunk):
        self.payload += chunk
        if len(self.payload) >= self.P:
            del self.payload[self.P:]
            self.bytes = builder_bytes(self.d, bytes(self.payload))

    def beat(self, k, nb):
        src = self.bytes if self.bytes is not None else self.hdr + bytes(self.payload)
        chunk = src[k * nb:(k + 1) * nb]
        assert len(chunk) == min(nb, self.L - k * nb), \
            f"beat {k} emitted before its bytes are known ({self.H}+{len(self.payload)} of {self.L})"
        return int.from_bytes(chunk, "little"), (1 << len(chunk)) - 1, int(k == self.nbeats - 1)


class FrameBuilderModel:
    """Cycle model of :class:`metaroce.hdl.frame_builder.FrameBuilder` (MR-TXF-040..046)."""

    def __init__(self, width=512, *, ipv4_only=False, prerotated=False, desc_fields=None):
        if width not in (64, 128, 256, 512):
            raise ValueError(f"width must be 64, 128, 256 or 512, not {width!r}")
        self.width = width
        self.nb = width // 8
        # MR-TX-466: every descriptor taken as IPv4 without VLAN (its vlan_en and ipv6 as 0)
        self.ipv4_only = bool(ipv4_only)
        # MR-TXF-072: the fields the user drives; every other one taken as 0
        self.desc_fields = check_desc_fields(desc_fields)
        # MR-TX-482: each payload beat comes rotated up by its frame's header length mod nb
        self.prerotated = bool(prerotated)
        self.hp = [None] * HDR_STAGES          # descriptor pipeline: A ... G (None = empty)
        self.f = None                          # frame register: [job, k]
        self.m = None                          # merge register: (job, k) or None (bubble)
        self.dl = [None] * ICRC_STAGES         # D1..D4
        self.skid = []                         # output skid buffer, head first: (data, keep, last)
        self.out = (0, 0, 0)                   # e0 as registers (held while empty)
        self.frames_out = 0
        # MR-TXF-060..064: output FIFO of (job, beat index), checksum records
        self.fifo = SyncFifoBufferedModel(out_fifo_depth(width))
        self.head = None                       # the FIFO's head beat, registered
        self.room = True                       # en: a FIFO slot and a record free
        self.rec_used = 0                      # records reserved (IPv6 frames written, not read)
        self.rec_ready = 0                     # records readable
        self.ck_line = [False] * (ck_stages(width) - 1)

    @staticmethod
    def port_names():
        return {"inputs": list(INPUTS), "outputs": list(OUTPUTS)}

    def busy(self):
        return bool(any(self.hp) or self.f or self.m or any(self.dl) or self.skid
                    or self.fifo.inner or self.fifo.out is not None or self.head is not None
                    or any(self.ck_line))

    def outputs(self, en=None):
        """Every output port's value this cycle: a function of the state alone (MR-TXF-041,
        MR-TXF-042, MR-TXF-045), so a joined model (models/tx.py) reads it before stepping its
        neighbours."""
        en = self.room if en is None else en
        f = self.f
        need = bool(f) and f[1] >= f[0].hb and f[1] - f[0].hb < f[0].npb
        data_, keep, last = self.out
        return {"s_desc__ready": int(any(s is None for s in self.hp)),
                "s_payload__ready": int(en and need),
                "m_axis__tvalid": int(len(self.skid) > 0), "m_axis__tdata": data_,
                "m_axis__tkeep": keep, "m_axis__tlast": last, "m_axis__tuser": 0}

    def step(self, inputs):
        g = inputs.get
        nb = self.nb
        count = len(self.skid)
        fifo = self.fifo
        en = self.room
        self.room = (len(fifo.inner) + (fifo.out is not None) < fifo.cap + 1 - 2
                     and self.rec_used < REC_DEPTH - 1)
        outs = self.outputs(en)
        f = self.f
        need = bool(f) and f[1] >= f[0].hb and f[1] - f[0].hb < f[0].npb

        # ---- output FIFO -> skid buffer (MR-TXF-045, MR-TXF-063): an IPv6 frame's beats
        # leave once its checksum record is there
        pop = count > 0 and g("m_axis__tready", 0)
        push = None
        head = self.head
        release = count < 2 and head is not None and (not head[0].d["ipv6"] or self.rec_ready)
        fill = fifo.out is not None and (head is None or release)
        if fill:
            self.head = fifo.out
        elif release:
            self.head = None
        if release:
            job, k = head
            push = job.beat(k, nb)
            if k == job.nbeats - 1:
                self.frames_out += 1
                if job.d["ipv6"]:
                    self.rec_ready -= 1
                    self.rec_used -= 1
        if pop:
            self.skid.pop(0)
        if push is not None:
            self.skid.append(push)
        if self.skid:
            self.out = self.skid[0]
        # D4 -> output FIFO; an IPv6 frame's last beat starts its checksum record (MR-TXF-062)
        written = self.dl[-1] if en else None
        ck_new = False
        if written is not None:
            job, k = written
            if job.d["ipv6"] and k == job.nbeats - 1:
                ck_new = True
                self.rec_used += 1
        if self.ck_line and self.ck_line[-1]:
            self.rec_ready += 1
        self.ck_line = [ck_new] + self.ck_line[:-1]
        fifo.update(fill, written is not None, written)

        # ---- merge (MR-TXF-042) and the delay line (MR-TXF-043)
        go_g = False
        if en:
            self.dl = [self.m] + self.dl[:-1]
            self.m = None
            if f is None:
                go_g = self.hp[-1] is not None
            else:
                job, k = f
                took = need and g("s_payload__valid", 0)
                if not need or took:
                    if took:
                        beat = g("s_payload__payload", 0) & ((1 << self.width) - 1)
                        if self.prerotated:
                            # MR-TX-482: the beat rotated down again by H mod nb
                            sh = 8 * (job.H % nb)
                            beat = ((beat >> sh) | (beat << (self.width - sh))) \
                                & ((1 << self.width) - 1)
                        job.add(beat.to_bytes(nb, "little"))
                    self.m = (job, k)
                    if k == job.nbeats - 1:
                        go_g = self.hp[-1] is not None
                        self.f = None
                    else:
                        f[1] = k + 1
            if go_g:
                self.f = [self.hp[-1], 0]

        # ---- descriptor pipeline (MR-TXF-041): stage i loads from i-1 when some stage
        # from i to G is empty; G empties when the frame register takes it.
        hp = self.hp
        take = [False] * HDR_STAGES
        free = False
        for i in reversed(range(HDR_STAGES)):
            free = free or hp[i] is None
            take[i] = free
        new = list(hp)
        if go_g and not take[-1]:
            new[-1] = None
        for i in reversed(range(1, HDR_STAGES)):
            if take[i]:
                new[i] = hp[i - 1]
        if take[0]:
            new[0] = None
            if g("s_desc__valid", 0):
                d = unpack_desc(g("s_desc__payload", 0))
                if self.desc_fields is not None:
                    d = {n: v if n in self.desc_fields else 0 for n, v in d.items()}
                if self.ipv4_only:
                    d.update(vlan_en=0, ipv6=0)
                new[0] = _Job(d, nb)
        self.hp = new
        return outs
