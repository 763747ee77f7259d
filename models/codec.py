"""Packet codec: encode and decode every header of the wire format (docs/spec/wire.md).

``encode(frame)`` builds the bytes of an Ethernet frame (without FCS) from a :class:`Frame`;
``decode(data)`` parses them back and raises :class:`DecodeError` with a
:class:`~metaroce.models.wire.Reason` for anything malformed. ``decode`` never raises
anything else, whatever the bytes (MR-WIRE-100).
"""
from __future__ import annotations

import ipaddress
import struct
from dataclasses import asdict, dataclass, field, replace

from . import wire
from .icrc import icrc_bytes
from .wire import Op, Reason


class DecodeError(Exception):
    """A frame that is not a well-formed RoCEv2 or MetaRoCE frame (MR-WIRE-100).

    ``reason`` is a :class:`Reason`; ``frame`` holds the fields decoded before the error
    (a :class:`Frame` with the later headers left ``None``).
    """

    def __init__(self, reason, detail="", frame=None):
        super().__init__(f"{Reason(reason).label}: {detail}" if detail else Reason(reason).label)
        self.reason = Reason(reason)
        self.detail = detail
        self.frame = frame


# ---------------------------------------------------------------------------------------------
# Header records. Field names are the JSON names of `metaroce decode --json` (MR-WIRE-110).

@dataclass
class Eth:
    dst: str = "02:00:00:00:00:02"
    src: str = "02:00:00:00:00:01"
    vlan: int | None = None     # 802.1Q VID, or None for an untagged frame (MR-WIRE-011)
    pcp: int = 0
    dei: int = 0
    ethertype: int = wire.ETHERTYPE_IPV4


@dataclass
class IP:
    version: int = 4
    src: str = "10.0.0.1"
    dst: str = "10.0.0.2"
    dscp: int = 26
    ecn: int = 0b10             # ECT(0): MR-WIRE-022
    ttl: int = 64               # IPv4 TTL or IPv6 hop limit
    ident: int = 0              # IPv4 only
    flow_label: int = 0         # IPv6 only
    proto: int = wire.IPPROTO_UDP


@dataclass
class UDP:
    sport: int = wire.ENTROPY_BASE
    dport: int = wire.ROCE_PORT
    checksum: int = 0


@dataclass
class BTH:
    opcode: int = Op.MR_WRITE
    se: int = 0
    mig: int = 0
    pad: int = 0
    tver: int = 0
    pkey: int = 0xFFFF
    fecn: int = 0
    becn: int = 0
    dest_qp: int = 0
    ack_req: int = 0
    psn: int = 0


@dataclass
class RETH:
    va: int = 0
    rkey: int = 0
    dma_len: int = 0


@dataclass
class AETH:
    syndrome: int = 0
    msn: int = 0


@dataclass
class AtomicAck:
    orig: int = 0


@dataclass
class MRDH:
    """MetaRoCE data header (MR-WIRE-071)."""
    version: int = wire.MR_VERSION
    flags: int = 0
    path: int = 0
    stream: int = 0
    msg: int = 0
    offset: int = 0
    msg_len: int = 0


@dataclass
class MRSH:
    """MetaRoCE send header: the receive match (MR-WIRE-072)."""
    recv_seq: int = 0


@dataclass
class MRAH:
    """MetaRoCE ACK header (MR-WIRE-073)."""
    version: int = wire.MR_VERSION
    flags: int = 0
    path: int = 0
    ce_count: int = 0
    cum_psn: int = 0
    rate_mbps: int = 0
    trigger_psn: int = 0
    sack: int = 0               # bit i set: PSN (cum_psn + 1 + i) mod 2^24 received


@dataclass
class MRNH:
    """MetaRoCE NAK header (MR-WIRE-074)."""
    version: int = wire.MR_VERSION
    flags: int = 0
    path: int = 0
    reason: int = 0
    psn: int = 0


@dataclass
class Frame:
    """One frame. ``payload`` excludes pad and ICRC; ``bth.pad`` is derived on encode."""
    eth: Eth = field(default_factory=Eth)
    ip: IP = field(default_factory=IP)
    udp: UDP = field(default_factory=UDP)
    bth: BTH = field(default_factory=BTH)
    reth: RETH | None = None
    aeth: AETH | None = None
    imm: int | None = None
    atomicack: AtomicAck | None = None
    mrdh: MRDH | None = None
    mrsh: MRSH | None = None
    mrah: MRAH | None = None
    mrnh: MRNH | None = None
    payload: bytes = b""
    icrc: int | None = None     # as read (little-endian int); None on encode means "compute"
    icrc_ok: bool | None = None

    def headers(self):
        """Names of the extension headers this frame's opcode carries (MR-WIRE-052)."""
        return wire.HEADERS[Op(self.bth.opcode)]


_HEADER_TYPES = {"reth": RETH, "aeth": AETH, "atomicack": AtomicAck, "mrdh": MRDH,
                 "mrsh": MRSH, "mrah": MRAH, "mrnh": MRNH}


def make(opcode, payload=b"", **headers):
    """Build a :class:`Frame` for ``opcode`` with default extension headers filled in.

    Keyword arguments replace whole headers (``reth=RETH(...)``) or the base headers
    (``eth=``, ``ip=``, ``udp=``, ``bth=``); ``bth.opcode`` is set to ``opcode``.
    """
    op = Op(opcode)
    f = Frame(payload=bytes(payload))
    for name in wire.HEADERS[op]:
        if name == "imm":
            f.imm = 0
        elif name != "cnp":
            setattr(f, name, _HEADER_TYPES[name]())
    for k, v in headers.items():
        if not hasattr(f, k):
            raise TypeError(f"unknown header {k!r}")
        setattr(f, k, v)
    f.bth = replace(f.bth, opcode=op)
    return f


# ---------------------------------------------------------------------------------------------
# Encode

def _mac(s):
    b = bytes(int(x, 16) for x in s.split(":"))
    if len(b) != 6:
        raise ValueError(f"bad MAC address {s!r}")
    return b


def _mac_str(b):
    return ":".join(f"{x:02x}" for x in b)


def _ipv4_checksum(hdr):
    s = sum(struct.unpack("!10H", hdr))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return (~s) & 0xFFFF


def ipv4_checksum_ok(hdr):
    """True when a 20-byte IPv4 header's checksum is right (MR-WIRE-023)."""
    return _ipv4_checksum(hdr[:10] + b"\0\0" + hdr[12:20]) == struct.unpack("!H", hdr[10:12])[0]


def _udp6_checksum(src, dst, udp):
    pseudo = src + dst + struct.pack("!IxxxB", len(udp), wire.IPPROTO_UDP)
    data = pseudo + udp + (b"\0" if len(udp) % 2 else b"")
    s = sum(struct.unpack(f"!{len(data) // 2}H", data))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    c = (~s) & 0xFFFF
    return c or 0xFFFF


def encode_ext(name, h):
    """Bytes of one extension header (MR-WIRE-060..074)."""
    if name == "reth":
        return struct.pack("!QII", h.va, h.rkey, h.dma_len)
    if name == "aeth":
        return struct.pack("!I", (h.syndrome << 24) | h.msn)
    if name == "imm":
        return struct.pack("!I", h)
    if name == "atomicack":
        return struct.pack("!Q", h.orig)
    if name == "cnp":
        return bytes(wire.CNP_PAD_LEN)
    if name == "mrdh":
        return struct.pack("!BBHIII", (h.version << 4) | h.flags, h.path, h.stream,
                           h.msg, h.offset, h.msg_len)
    if name == "mrsh":
        return struct.pack("!I", h.recv_seq)
    if name == "mrah":
        return struct.pack("!BBHIII", (h.version << 4) | h.flags, h.path, h.ce_count,
                           h.cum_psn, h.rate_mbps, h.trigger_psn) + h.sack.to_bytes(32, "big")
    if name == "mrnh":
        return struct.pack("!BBBxI", (h.version << 4) | h.flags, h.path, h.reason, h.psn)
    raise ValueError(name)


def _ext_value(frame, name):
    if name == "cnp":
        return None
    v = getattr(frame, name)
    if v is None:
        raise ValueError(f"opcode {frame.bth.opcode:#04x} needs header {name!r}")
    return v


def encode_bth(b):
    """The 12 BTH bytes (MR-WIRE-050)."""
    return struct.pack(
        "!BBHBBBBBBBB",
        b.opcode, (b.se << 7) | (b.mig << 6) | (b.pad << 4) | b.tver, b.pkey,
        (b.fecn << 7) | (b.becn << 6), (b.dest_qp >> 16) & 0xFF, (b.dest_qp >> 8) & 0xFF,
        b.dest_qp & 0xFF, b.ack_req << 7, (b.psn >> 16) & 0xFF, (b.psn >> 8) & 0xFF, b.psn & 0xFF)


#: Field widths in bits; encode refuses values that do not fit rather than corrupting a
#: neighbouring field on the wire.
_WIDTHS = {
    Eth: {"vlan": 12, "pcp": 3, "dei": 1},
    IP: {"dscp": 6, "ecn": 2, "ttl": 8, "ident": 16, "flow_label": 20, "proto": 8},
    UDP: {"sport": 16, "dport": 16, "checksum": 16},
    BTH: {"opcode": 8, "se": 1, "mig": 1, "pad": 2, "tver": 4, "pkey": 16, "fecn": 1, "becn": 1,
          "dest_qp": 24, "ack_req": 1, "psn": 24},
    RETH: {"va": 64, "rkey": 32, "dma_len": 32},
    AETH: {"syndrome": 8, "msn": 24},
    AtomicAck: {"orig": 64},
    MRDH: {"version": 4, "flags": 4, "path": 8, "stream": 16, "msg": 32, "offset": 32, "msg_len": 32},
    MRSH: {"recv_seq": 32},
    MRAH: {"version": 4, "flags": 4, "path": 8, "ce_count": 16, "cum_psn": 32, "rate_mbps": 32,
           "trigger_psn": 32, "sack": wire.SACK_BITS},
    MRNH: {"version": 4, "flags": 4, "path": 8, "reason": 8, "psn": 32},
}


def _check_widths(h, name):
    if isinstance(h, int):  # ImmDt is a bare 32-bit value
        if not 0 <= h < 1 << 32:
            raise ValueError(f"{name} = {h!r} does not fit in 32 bits")
        return
    for k, bits in _WIDTHS.get(type(h), {}).items():
        v = getattr(h, k)
        if v is not None and not 0 <= v < 1 << bits:
            raise ValueError(f"{name}.{k} = {v!r} does not fit in {bits} bits")


def encode(frame, *, icrc_override=None):
    """Bytes of ``frame`` (Ethernet header to ICRC, no FCS). Pad and lengths are derived.

    ``bth.pad`` is set to the pad that brings the payload to a multiple of 4 (MR-WIRE-080);
    the IPv4 header checksum, the UDP length and (IPv6) checksum and the ICRC are computed
    unless ``frame.icrc`` or ``icrc_override`` gives an ICRC to place instead.
    """
    op = Op(frame.bth.opcode)
    pad = (-len(frame.payload)) % 4
    frame.bth = replace(frame.bth, pad=pad)
    for n in ("eth", "ip", "udp", "bth") + wire.HEADERS[op]:
        if n != "cnp":
            _check_widths(getattr(frame, n), n)
    ext = b"".join(encode_ext(n, _ext_value(frame, n)) for n in wire.HEADERS[op])
    l4_payload = encode_bth(frame.bth) + ext + frame.payload + bytes(pad)
    udp_len = wire.UDP_HLEN + len(l4_payload) + wire.ICRC_LEN
    ip = frame.ip
    if ip.version == 4:
        hdr = bytearray(struct.pack(
            "!BBHHHBBH4s4s", 0x45, (ip.dscp << 2) | ip.ecn, wire.IPV4_HLEN + udp_len, ip.ident,
            0x4000, ip.ttl, ip.proto, 0, ipaddress.IPv4Address(ip.src).packed,
            ipaddress.IPv4Address(ip.dst).packed))
        hdr[10:12] = struct.pack("!H", _ipv4_checksum(bytes(hdr)))
        ethertype = wire.ETHERTYPE_IPV4
        udp_ck = frame.udp.checksum
    elif ip.version == 6:
        tc = (ip.dscp << 2) | ip.ecn
        src = ipaddress.IPv6Address(ip.src).packed
        dst = ipaddress.IPv6Address(ip.dst).packed
        hdr = bytearray(struct.pack("!IHBB16s16s", (6 << 28) | (tc << 20) | ip.flow_label,
                                    udp_len, ip.proto, ip.ttl, src, dst))
        ethertype = wire.ETHERTYPE_IPV6
        udp_ck = None
    else:
        raise ValueError(f"IP version {ip.version}")
    udp_hdr = struct.pack("!HHHH", frame.udp.sport, frame.udp.dport, udp_len, 0)
    if udp_ck is None:
        # MR-WIRE-042: IPv6 carries a real UDP checksum (over the ICRC too), computed last.
        udp_ck_final = None
    else:
        udp_hdr = udp_hdr[:6] + struct.pack("!H", udp_ck)
    l3 = bytes(hdr) + udp_hdr + l4_payload
    if icrc_override is not None:
        crc = int(icrc_override).to_bytes(4, "little")
    elif frame.icrc is not None:
        crc = int(frame.icrc).to_bytes(4, "little")
    else:
        crc = icrc_bytes(l3)
    l3 += crc
    if udp_ck is None:
        udp = l3[wire.IPV6_HLEN:]
        udp_ck_final = _udp6_checksum(bytes(hdr[8:24]), bytes(hdr[24:40]), udp)
        l3 = l3[:wire.IPV6_HLEN + 6] + struct.pack("!H", udp_ck_final) + l3[wire.IPV6_HLEN + 8:]
    eth = frame.eth
    l2 = _mac(eth.dst) + _mac(eth.src)
    if eth.vlan is not None:
        l2 += struct.pack("!HH", wire.VLAN_TPID, (eth.pcp << 13) | (eth.dei << 12) | eth.vlan)
    l2 += struct.pack("!H", ethertype)
    return l2 + l3


def wire_len(frame):
    """Bytes ``encode(frame)`` produces (Ethernet header to ICRC, no FCS), without encoding."""
    n = wire.ETH_HLEN + (wire.VLAN_HLEN if frame.eth.vlan is not None else 0)
    n += wire.IPV4_HLEN if frame.ip.version == 4 else wire.IPV6_HLEN
    plen = len(frame.payload)
    return n + wire.UDP_HLEN + wire.BTH_LEN + wire.ext_len(frame.bth.opcode) + plen + (-plen) % 4 + wire.ICRC_LEN


# ---------------------------------------------------------------------------------------------
# Decode

def _need(data, n, frame, what):
    if len(data) < n:
        raise DecodeError(Reason.TRUNCATED, f"{len(data)} bytes, {what} needs {n}", frame)


def decode_ext(name, b):
    """Parse one extension header from bytes ``b`` of the right length (MR-WIRE-060..074)."""
    if name == "reth":
        va, rkey, dma_len = struct.unpack("!QII", b)
        return RETH(va, rkey, dma_len)
    if name == "aeth":
        (w,) = struct.unpack("!I", b)
        return AETH(w >> 24, w & 0xFFFFFF)
    if name == "imm":
        return struct.unpack("!I", b)[0]
    if name == "atomicack":
        return AtomicAck(struct.unpack("!Q", b)[0])
    if name == "mrdh":
        vf, path, stream, msg, offset, msg_len = struct.unpack("!BBHIII", b)
        return MRDH(vf >> 4, vf & 0xF, path, stream, msg, offset, msg_len)
    if name == "mrsh":
        return MRSH(struct.unpack("!I", b)[0])
    if name == "mrah":
        vf, path, ce, cum, rate, trig = struct.unpack("!BBHIII", b[:16])
        return MRAH(vf >> 4, vf & 0xF, path, ce, cum, rate, trig, int.from_bytes(b[16:48], "big"))
    if name == "mrnh":
        vf, path, reason, psn = struct.unpack("!BBBxI", b)
        return MRNH(vf >> 4, vf & 0xF, path, reason, psn)
    raise ValueError(name)


def decode_bth(b):
    """Parse the 12 BTH bytes (MR-WIRE-050)."""
    op, f1, pkey, f4, q2, q1, q0, a, p2, p1, p0 = struct.unpack("!BBHBBBBBBBB", b)
    return BTH(op, f1 >> 7, (f1 >> 6) & 1, (f1 >> 4) & 3, f1 & 0xF, pkey, f4 >> 7,
               (f4 >> 6) & 1, (q2 << 16) | (q1 << 8) | q0, a >> 7, (p2 << 16) | (p1 << 8) | p0)


def decode(data, *, verify_icrc=True):
    """Decode an Ethernet frame (no FCS) into a :class:`Frame` (MR-WIRE-100..105).

    Checks run in wire order and the first failure decides the reason: ``truncated`` when
    the bytes end before a field needed to decide; ``not_roce`` for frames that are not
    UDP/4791 over IPv4 (IHL 5, unfragmented) or IPv6; ``bad_ip`` for a wrong IPv4 header
    checksum; ``length`` when IP, UDP and header lengths disagree; ``bad_opcode``;
    ``bad_version``; ``icrc``. Raises :class:`DecodeError` and nothing else.
    """
    try:
        return _decode(bytes(data), verify_icrc)
    except DecodeError:
        raise
    except Exception as e:  # pragma: no cover - a bug, but never let it escape as a crash
        raise DecodeError(Reason.LENGTH, f"internal: {type(e).__name__}: {e}") from e


def _decode(data, verify_icrc):
    f = Frame(ip=None, udp=None, bth=None)
    _need(data, wire.ETH_HLEN, f, "Ethernet header")
    eth = Eth(_mac_str(data[0:6]), _mac_str(data[6:12]))
    f.eth = eth
    (etype,) = struct.unpack("!H", data[12:14])
    off = wire.ETH_HLEN
    if etype == wire.VLAN_TPID:
        _need(data, off + wire.VLAN_HLEN, f, "802.1Q tag")
        tci, etype = struct.unpack("!HH", data[off:off + 4])
        eth.pcp, eth.dei, eth.vlan = tci >> 13, (tci >> 12) & 1, tci & 0xFFF
        off += wire.VLAN_HLEN
    eth.ethertype = etype
    if etype == wire.ETHERTYPE_IPV4:
        _need(data, off + 1, f, "IPv4 version")
        vihl = data[off]
        if vihl != 0x45:
            raise DecodeError(Reason.NOT_ROCE, f"IPv4 version/IHL byte {vihl:#04x}", f)
        _need(data, off + wire.IPV4_HLEN, f, "IPv4 header")
        hdr = data[off:off + wire.IPV4_HLEN]
        _, tos, tot_len, ident, frag, ttl, proto, _ck = struct.unpack("!BBHHHBBH", hdr[:12])
        f.ip = IP(4, str(ipaddress.IPv4Address(hdr[12:16])), str(ipaddress.IPv4Address(hdr[16:20])),
                  tos >> 2, tos & 3, ttl, ident, 0, proto)
        if frag & 0x3FFF:
            raise DecodeError(Reason.NOT_ROCE, "IPv4 fragment", f)
        if proto != wire.IPPROTO_UDP:
            raise DecodeError(Reason.NOT_ROCE, f"IP protocol {proto}", f)
        ip_payload_len = tot_len - wire.IPV4_HLEN
        l3_start = off
        off += wire.IPV4_HLEN
    elif etype == wire.ETHERTYPE_IPV6:
        _need(data, off + wire.IPV6_HLEN, f, "IPv6 header")
        hdr = data[off:off + wire.IPV6_HLEN]
        w0, plen, nxt, hlim = struct.unpack("!IHBB", hdr[:8])
        if w0 >> 28 != 6:
            raise DecodeError(Reason.NOT_ROCE, f"IP version {w0 >> 28} in an IPv6 ethertype", f)
        tc = (w0 >> 20) & 0xFF
        f.ip = IP(6, str(ipaddress.IPv6Address(hdr[8:24])), str(ipaddress.IPv6Address(hdr[24:40])),
                  tc >> 2, tc & 3, hlim, 0, w0 & 0xFFFFF, nxt)
        if nxt != wire.IPPROTO_UDP:
            raise DecodeError(Reason.NOT_ROCE, f"IPv6 next header {nxt}", f)
        ip_payload_len = plen
        l3_start = off
        off += wire.IPV6_HLEN
    else:
        raise DecodeError(Reason.NOT_ROCE, f"ethertype {etype:#06x}", f)
    _need(data, off + 4, f, "UDP ports")
    sport, dport = struct.unpack("!HH", data[off:off + 4])
    f.udp = UDP(sport, dport, 0)
    if dport != wire.ROCE_PORT:
        raise DecodeError(Reason.NOT_ROCE, f"UDP destination port {dport}", f)
    _need(data, off + wire.UDP_HLEN, f, "UDP header")
    udp_len, f.udp.checksum = struct.unpack("!HH", data[off + 4:off + 8])
    if f.ip.version == 4 and not ipv4_checksum_ok(data[l3_start:l3_start + wire.IPV4_HLEN]):
        raise DecodeError(Reason.BAD_IP, "IPv4 header checksum", f)
    l4_end = off + ip_payload_len
    if len(data) < l4_end:
        raise DecodeError(Reason.TRUNCATED, f"IP length says {l4_end} bytes, frame has {len(data)}", f)
    if udp_len != ip_payload_len:
        raise DecodeError(Reason.LENGTH, f"UDP length {udp_len} != IP payload length {ip_payload_len}", f)
    # Bytes past the IP length are Ethernet padding (MR-WIRE-012) and are ignored.
    off += wire.UDP_HLEN
    if l4_end - off < wire.BTH_LEN + wire.ICRC_LEN:
        raise DecodeError(Reason.LENGTH, f"UDP payload {l4_end - off} bytes cannot hold BTH and ICRC", f)
    f.bth = bth = decode_bth(data[off:off + wire.BTH_LEN])
    try:
        op = Op(bth.opcode)
    except ValueError:
        raise DecodeError(Reason.BAD_OPCODE, f"opcode {bth.opcode:#04x}", f) from None
    bth.opcode = op
    if bth.tver != 0:
        raise DecodeError(Reason.BAD_VERSION, f"BTH TVer {bth.tver}", f)
    off += wire.BTH_LEN
    names = wire.HEADERS[op]
    hlen = wire.ext_len(op)
    if op in wire.MR_OPS:
        # The MetaRoCE header's version nibble is checked before its length (MR-WIRE-075).
        if off < l4_end - wire.ICRC_LEN and data[off] >> 4 != wire.MR_VERSION:
            raise DecodeError(Reason.BAD_VERSION, f"MetaRoCE header version {data[off] >> 4}", f)
    if l4_end - wire.ICRC_LEN - off < hlen:
        raise DecodeError(Reason.LENGTH, f"opcode {op.name} needs {hlen} header bytes", f)
    for name in names:
        n = wire.HEADER_LEN[name]
        if name != "cnp":
            setattr(f, name, decode_ext(name, data[off:off + n]))
        off += n
    body = data[off:l4_end - wire.ICRC_LEN]
    if bth.pad > len(body):
        raise DecodeError(Reason.LENGTH, f"pad {bth.pad} exceeds the {len(body)} payload bytes", f)
    if op not in wire.PAYLOAD_OPS and len(body):
        raise DecodeError(Reason.LENGTH, f"opcode {op.name} carries {len(body)} unexpected bytes", f)
    f.payload = body[:len(body) - bth.pad]
    f.icrc = int.from_bytes(data[l4_end - wire.ICRC_LEN:l4_end], "little")
    if verify_icrc:
        f.icrc_ok = icrc_bytes(data[l3_start:l4_end - wire.ICRC_LEN]) == data[l4_end - wire.ICRC_LEN:l4_end]
        if not f.icrc_ok:
            raise DecodeError(Reason.ICRC, "ICRC mismatch", f)
    return f


# ---------------------------------------------------------------------------------------------
# JSON view (MR-WIRE-110)

def _obj(h):
    return None if h is None else asdict(h)


def to_json(frame_no, frame, error=None):
    """The ``metaroce decode --json`` object for one frame (MR-WIRE-110).

    ``frame`` may be partial (from ``DecodeError.frame``); absent headers are omitted,
    except the base objects, which are ``null`` when not reached.
    """
    out = {"frame": frame_no, "ok": error is None, "error": None if error is None else Reason(error).label}
    f = frame or Frame(ip=None, udp=None, bth=None)
    out["eth"] = None if f.eth is None else {"src": f.eth.src, "dst": f.eth.dst, "vlan": f.eth.vlan}
    out["ip"] = None if f.ip is None else {"version": f.ip.version, "src": f.ip.src, "dst": f.ip.dst,
                                           "dscp": f.ip.dscp, "ecn": f.ip.ecn}
    out["udp"] = None if f.udp is None else {"sport": f.udp.sport, "dport": f.udp.dport}
    if f.bth is not None:
        b = asdict(f.bth)
        b["opcode"] = int(b["opcode"])
        out["bth"] = b
    else:
        out["bth"] = None
    for name in ("reth", "aeth", "atomicack", "mrdh", "mrsh", "mrah", "mrnh"):
        h = getattr(f, name)
        if h is not None:
            out[name] = _obj(h)
    if f.imm is not None:
        out["imm"] = f.imm
    reached_payload = f.bth is not None and (error is None or error == Reason.ICRC)
    out["payload_len"] = len(f.payload) if reached_payload else None
    out["icrc_ok"] = bool(f.icrc_ok) if f.icrc_ok is not None else (False if error is not None else None)
    return out


def decode_json(frame_no, data):
    """Decode ``data`` and return its JSON object; never raises (MR-WIRE-100, MR-WIRE-110)."""
    try:
        return to_json(frame_no, decode(data))
    except DecodeError as e:
        return to_json(frame_no, e.frame, e.reason)


def summary(frame_no, obj):
    """One human-readable line for a ``decode_json`` object."""
    parts = [f"#{frame_no}"]
    if obj["ip"]:
        ip = obj["ip"]
        parts.append(f"IPv{ip['version']} {ip['src']} > {ip['dst']}")
        if ip["ecn"] == 3:
            parts.append("CE")
    if obj["udp"]:
        parts.append(f"udp {obj['udp']['sport']}>{obj['udp']['dport']}")
    if obj["bth"]:
        b = obj["bth"]
        try:
            name = Op(b["opcode"]).name
        except ValueError:
            name = f"op={b['opcode']:#04x}"
        parts.append(f"{name} qp={b['dest_qp']} psn={b['psn']}")
    for name in ("mrdh", "mrsh", "mrah", "mrnh", "reth", "aeth"):
        if name in obj:
            h = dict(obj[name])
            if name == "mrah":
                h["sack"] = f"{h['sack']:#x}"
            parts.append(name.upper() + "(" + " ".join(f"{k}={v}" for k, v in h.items()) + ")")
    if obj.get("payload_len") is not None:
        parts.append(f"len={obj['payload_len']}")
    parts.append("OK" if obj["ok"] else f"ERROR {obj['error']}")
    return " ".join(parts)


__all__ = ["DecodeError", "Eth", "IP", "UDP", "BTH", "RETH", "AETH", "AtomicAck", "MRDH", "MRSH",
           "MRAH", "MRNH", "Frame", "make", "encode", "decode", "decode_json", "to_json", "summary",
           "wire_len", "encode_bth", "decode_bth", "encode_ext", "decode_ext", "ipv4_checksum_ok"]
