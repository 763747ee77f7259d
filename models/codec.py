"""Packet codec: encode and decode every header of the wire format (docs/spec/wire.md).

``encode(frame)`` builds the bytes of an Ethernet frame (without FCS) from a :class:`Frame`;
``decode(data)`` parses them back and raises :class:`DecodeError` with a
:class:`~metaroce.models.wire.Reason` for anything malformed. ``decode`` never raises
anything else, whatever the bytes (MR-WIRE-100).

Every header is packed and unpacked by functions compiled at import from the header table
(:mod:`metaroce.models.headers`, MR-WIRE-003), which also gives the field widths that
``encode`` checks; the dataclasses below name the same fields in the same order.
"""
from __future__ import annotations

import dataclasses
import functools
import ipaddress
import struct
from dataclasses import asdict, dataclass, field, replace

from . import wire
from .headers import TABLE as _H
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
    # a factory, not a class attribute: CPython 3.11 does not specialise the load of an
    # attribute whose class holds an instance of a Python class (the enum) under that name,
    # and every hop and endpoint reads frame.bth.opcode
    opcode: int = field(default_factory=lambda: Op.MR_WRITE)
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
class AtomicETH:
    """IBTA atomic extended transport header (MR-WIRE-065)."""
    va: int = 0
    rkey: int = 0
    swap: int = 0
    compare: int = 0


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
class MRSEC:
    """MetaRoCE security header of an authenticated frame (MR-WIRE-082, MR-SEC-110)."""
    version: int = wire.MR_VERSION
    flags: int = 0
    next_op: int = 0
    path: int = 0
    epoch: int = 0
    seq: int = 0


@dataclass
class MRCH:
    """MetaRoCE connection handshake header (MR-WIRE-078, MR-CONN-101)."""
    version: int = wire.MR_VERSION
    flags: int = 0
    reason: int = 0
    paths: int = 1
    attempt: int = 0
    src_qpn: int = 0
    dst_qpn: int = 0
    init_psn: int = 0
    mtu: int = 4096
    nonce: int = 0


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
    atomiceth: AtomicETH | None = None
    mrdh: MRDH | None = None
    mrsh: MRSH | None = None
    mrah: MRAH | None = None
    mrnh: MRNH | None = None
    mrsec: MRSEC | None = None
    mrch: MRCH | None = None
    payload: bytes = b""
    icrc: int | None = None     # as read (little-endian int); None on encode means "compute"
    icrc_ok: bool | None = None

    def headers(self):
        """Names of the extension headers this frame's opcode carries (MR-WIRE-052)."""
        return wire.headers_of(self.bth.opcode)


_HEADER_TYPES = {"reth": RETH, "aeth": AETH, "atomicack": AtomicAck, "atomiceth": AtomicETH, "mrdh": MRDH,
                 "mrsh": MRSH, "mrah": MRAH, "mrnh": MRNH, "mrsec": MRSEC, "mrch": MRCH}
#: The dataclass of each header whose fields are exactly the header table's (MR-WIRE-003).
RECORDS = {"bth": BTH, **_HEADER_TYPES}
for _name, _cls in RECORDS.items():
    if tuple(f.name for f in dataclasses.fields(_cls)) != _H[_name].names:
        raise ImportError(f"codec.{_cls.__name__} fields differ from the header table's {_name}")


def make(opcode, payload=b"", **headers):
    """Build a :class:`Frame` for ``opcode`` with default extension headers filled in.

    Keyword arguments replace whole headers (``reth=RETH(...)``) or the base headers
    (``eth=``, ``ip=``, ``udp=``, ``bth=``); ``bth.opcode`` is set to ``opcode``.
    """
    op = opcode if opcode in wire.OPTIONAL_HEADERS else Op(opcode)     # MR-WIRE-084
    f = Frame(payload=bytes(payload))
    for name in wire.headers_of(op):
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

# Address conversions, cached: a fabric reuses a few addresses for millions of frames.
@functools.lru_cache(maxsize=1024)
def _mac(s):
    b = bytes(int(x, 16) for x in s.split(":"))
    if len(b) != 6:
        raise ValueError(f"bad MAC address {s!r}")
    return b


@functools.lru_cache(maxsize=1024)
def _mac_str(b):
    return ":".join(f"{x:02x}" for x in b)


@functools.lru_cache(maxsize=1024)
def _ip4_packed(s):
    return ipaddress.IPv4Address(s).packed


@functools.lru_cache(maxsize=1024)
def _ip6_packed(s):
    return ipaddress.IPv6Address(s).packed


@functools.lru_cache(maxsize=1024)
def _ip4_str(b):
    return str(ipaddress.IPv4Address(b))


@functools.lru_cache(maxsize=1024)
def _ip6_str(b):
    return str(ipaddress.IPv6Address(b))


# Packers and unpackers compiled from the header table (MR-WIRE-003). Addresses travel as bytes.
_eth_pack = _H["eth"].packer(raw=("dst", "src"))
_eth_unpack = _H["eth"].unpacker(raw=("dst", "src"))
_vlan_pack = _H["vlan"].packer()
_vlan_unpack = _H["vlan"].unpacker()
# MR-WIRE-020: IHL 5, DF set, never a fragment; the checksum is filled in afterwards.
_ipv4_pack = _H["ipv4"].packer(("dscp", "ecn", "total_len", "ident", "ttl", "proto", "src", "dst"),
                               const={"version": 4, "ihl": 5, "df": 1, "mf": 0, "frag_offset": 0,
                                      "checksum": 0}, raw=("src", "dst"))
_ipv4_unpack = _H["ipv4"].unpacker(("dscp", "ecn", "total_len", "ident", "mf", "frag_offset", "ttl",
                                    "proto", "src", "dst"), raw=("src", "dst"))
_IPV4_CK = _H["ipv4"].field("checksum").offset // 8
_ipv6_pack = _H["ipv6"].packer(("dscp", "ecn", "flow_label", "payload_len", "next_header", "hop_limit",
                                "src", "dst"), const={"version": 6}, raw=("src", "dst"))
_ipv6_unpack = _H["ipv6"].unpacker(raw=("src", "dst"))
_udp_pack = _H["udp"].packer()
_udp_ports = _H["udp"].unpacker(("sport", "dport"))
_udp_len_ck = _H["udp"].unpacker(("length", "checksum"))
_UDP_CK = _H["udp"].field("checksum").offset // 8
_bth_pack = _H["bth"].packer(from_attrs=True)
_bth_unpack = _H["bth"].unpacker(make=BTH)
_EXT_PACK = {n: _H[n].packer(from_attrs=True) for n in _HEADER_TYPES}
_EXT_PACK["imm"] = _H["imm"].packer()
_CNP_ZEROS = _H["cnp"].packer(())()    # MR-WIRE-064: all reserved, sent as zeros
_EXT_PACK["cnp"] = lambda _none: _CNP_ZEROS
_EXT_UNPACK = {n: _H[n].unpacker(make=cls) for n, cls in _HEADER_TYPES.items()}
_EXT_UNPACK["imm"] = _H["imm"].unpacker()
_VERSION_OF = {n: _H[n].unpacker(("version",)) for n in ("mrdh", "mrah", "mrnh", "mrsec", "mrch")}


def _ipv4_checksum(hdr):
    s = sum(struct.unpack("!10H", hdr))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return (~s) & 0xFFFF


def ipv4_checksum_ok(hdr):
    """True when a 20-byte IPv4 header's checksum is right (MR-WIRE-023)."""
    zeroed = hdr[:_IPV4_CK] + b"\0\0" + hdr[_IPV4_CK + 2:wire.IPV4_HLEN]
    return _ipv4_checksum(zeroed) == int.from_bytes(hdr[_IPV4_CK:_IPV4_CK + 2], "big")


def _udp6_checksum(src, dst, udp):
    pseudo = src + dst + struct.pack("!IxxxB", len(udp), wire.IPPROTO_UDP)
    data = pseudo + udp + (b"\0" if len(udp) % 2 else b"")
    s = sum(struct.unpack(f"!{len(data) // 2}H", data))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    c = (~s) & 0xFFFF
    return c or 0xFFFF


def encode_ext(name, h):
    """Bytes of one extension header (MR-WIRE-060..074), as the header table lays it out
    (MR-WIRE-003). ``h`` is the header's dataclass, an int for ``imm``, None for ``cnp``."""
    pack = _EXT_PACK.get(name)
    if pack is None:
        raise ValueError(name)
    return pack(h)


def _ext_value(frame, name):
    if name == "cnp":
        return None
    v = getattr(frame, name)
    if v is None:
        raise ValueError(f"opcode {frame.bth.opcode:#04x} needs header {name!r}")
    return v


def encode_bth(b):
    """The 12 BTH bytes (MR-WIRE-050)."""
    return _bth_pack(b)


#: Field widths in bits, from the header table (MR-WIRE-003); encode refuses values that do not
#: fit rather than corrupting a neighbouring field on the wire. ``IP`` holds IPv4 and IPv6 fields.
_WIDTHS = {
    Eth: {k: _H["vlan"].width(k) for k in ("vlan", "pcp", "dei")},
    IP: {**{k: _H["ipv4"].width(k) for k in ("dscp", "ecn", "ttl", "ident")},
         "flow_label": _H["ipv6"].width("flow_label"), "proto": _H["ipv4"].width("proto")},
    UDP: {k: _H["udp"].width(k) for k in ("sport", "dport", "checksum")},
    **{cls: _H[name].layout() for name, cls in RECORDS.items()},
}
_IMM_LIMIT = 1 << _H["imm"].width("imm")


def _width_error(h, name):
    for k, bits in _WIDTHS[type(h)].items():
        v = getattr(h, k)
        if v is not None and not 0 <= v < 1 << bits:
            raise ValueError(f"{name}.{k} = {v!r} does not fit in {bits} bits")


def _compile_check(cls, widths):
    # One generated test per dataclass: the common case (everything fits) costs one call.
    nullable = {f.name for f in dataclasses.fields(cls) if "None" in str(f.type)}
    conds = [f"(h.{k} is None or 0 <= h.{k} < {1 << w})" if k in nullable else f"0 <= h.{k} < {1 << w}"
             for k, w in widths.items()]
    ns = {"_fail": _width_error}
    exec(f"def check(h, name):\n    if not ({' and '.join(conds)}):\n        _fail(h, name)\n", ns)
    return ns["check"]


_CHECK = {cls: _compile_check(cls, w) for cls, w in _WIDTHS.items()}


def _check_widths(h, name):
    if isinstance(h, int):  # ImmDt is a bare 32-bit value
        if not 0 <= h < _IMM_LIMIT:
            raise ValueError(f"{name} = {h!r} does not fit in {_IMM_LIMIT.bit_length() - 1} bits")
        return
    check = _CHECK.get(type(h))
    if check is not None:
        check(h, name)


def encode(frame, *, icrc_override=None):
    """Bytes of ``frame`` (Ethernet header to ICRC, no FCS). Pad and lengths are derived.

    ``bth.pad`` is set to the pad that brings the payload to a multiple of 4 (MR-WIRE-080);
    the IPv4 header checksum, the UDP length and (IPv6) checksum and the ICRC are computed
    unless ``frame.icrc`` or ``icrc_override`` gives an ICRC to place instead.
    """
    op = frame.bth.opcode
    names = wire.headers_of(op)     # MR-WIRE-084: optional opcodes included
    pad = (-len(frame.payload)) % 4
    frame.bth = replace(frame.bth, pad=pad)
    for n in ("eth", "ip", "udp", "bth") + names:
        if n != "cnp":
            _check_widths(getattr(frame, n), n)
    ext = b"".join([_EXT_PACK[n](_ext_value(frame, n)) for n in names])
    l4_payload = b"".join((_bth_pack(frame.bth), ext, frame.payload, bytes(pad)))
    udp_len = wire.UDP_HLEN + len(l4_payload) + wire.ICRC_LEN
    ip = frame.ip
    if ip.version == 4:
        hdr = bytearray(_ipv4_pack(ip.dscp, ip.ecn, wire.IPV4_HLEN + udp_len, ip.ident, ip.ttl, ip.proto,
                                   _ip4_packed(ip.src), _ip4_packed(ip.dst)))
        hdr[_IPV4_CK:_IPV4_CK + 2] = _ipv4_checksum(hdr).to_bytes(2, "big")
        ethertype = wire.ETHERTYPE_IPV4
        udp_ck = frame.udp.checksum
    elif ip.version == 6:
        src, dst = _ip6_packed(ip.src), _ip6_packed(ip.dst)
        hdr = _ipv6_pack(ip.dscp, ip.ecn, ip.flow_label, udp_len, ip.proto, ip.ttl, src, dst)
        ethertype = wire.ETHERTYPE_IPV6
        udp_ck = 0      # MR-WIRE-042: the real checksum (over the ICRC too) is computed last
    else:
        raise ValueError(f"IP version {ip.version}")
    l3 = b"".join((hdr, _udp_pack(frame.udp.sport, frame.udp.dport, udp_len, udp_ck), l4_payload))
    if icrc_override is not None:
        crc = int(icrc_override).to_bytes(4, "little")
    elif frame.icrc is not None:
        crc = int(frame.icrc).to_bytes(4, "little")
    else:
        crc = icrc_bytes(l3)
    l3 += crc
    if ip.version == 6:
        ck_at = wire.IPV6_HLEN + _UDP_CK
        ck = _udp6_checksum(src, dst, l3[wire.IPV6_HLEN:])
        l3 = b"".join((l3[:ck_at], ck.to_bytes(2, "big"), l3[ck_at + 2:]))
    eth = frame.eth
    if eth.vlan is None:
        return _eth_pack(_mac(eth.dst), _mac(eth.src), ethertype) + l3
    tag = _vlan_pack(eth.pcp, eth.dei, eth.vlan, ethertype)
    return _eth_pack(_mac(eth.dst), _mac(eth.src), wire.VLAN_TPID) + tag + l3


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
    """Parse one extension header from bytes ``b`` of the right length (MR-WIRE-060..074),
    as the header table lays it out (MR-WIRE-003)."""
    unpack = _EXT_UNPACK.get(name)
    if unpack is None:
        raise ValueError(name)
    if len(b) != wire.HEADER_LEN[name]:
        raise ValueError(f"{name} is {wire.HEADER_LEN[name]} bytes, not {len(b)}")
    return unpack(b)


def decode_bth(b):
    """Parse the 12 BTH bytes (MR-WIRE-050)."""
    if len(b) != wire.BTH_LEN:
        raise ValueError(f"the BTH is {wire.BTH_LEN} bytes, not {len(b)}")
    return _bth_unpack(b)


def decode(data, *, verify_icrc=True, optional=True):
    """Decode an Ethernet frame (no FCS) into a :class:`Frame` (MR-WIRE-100..105).

    Checks run in wire order and the first failure decides the reason: ``truncated`` when
    the bytes end before a field needed to decide; ``not_roce`` for frames that are not
    UDP/4791 over IPv4 (IHL 5, unfragmented) or IPv6; ``bad_ip`` for a wrong IPv4 header
    checksum; ``length`` when IP, UDP and header lengths disagree; ``bad_opcode``;
    ``bad_version``; ``icrc``. Raises :class:`DecodeError` and nothing else. ``optional``
    False: the optional opcodes of MR-WIRE-084 are ``bad_opcode``, as for a receiver (the RTL
    parser of this version) that does not implement them.
    """
    try:
        return _decode(bytes(data), verify_icrc, optional)
    except DecodeError:
        raise
    except Exception as e:  # pragma: no cover - a bug, but never let it escape as a crash
        raise DecodeError(Reason.LENGTH, f"internal: {type(e).__name__}: {e}") from e


def _decode(data, verify_icrc, optional=True):
    f = Frame(ip=None, udp=None, bth=None)
    _need(data, wire.ETH_HLEN, f, "Ethernet header")
    dst, src, etype = _eth_unpack(data)
    f.eth = eth = Eth(_mac_str(dst), _mac_str(src))
    off = wire.ETH_HLEN
    if etype == wire.VLAN_TPID:
        _need(data, off + wire.VLAN_HLEN, f, "802.1Q tag")
        eth.pcp, eth.dei, eth.vlan, etype = _vlan_unpack(data, off)
        off += wire.VLAN_HLEN
    eth.ethertype = etype
    if etype == wire.ETHERTYPE_IPV4:
        _need(data, off + 1, f, "IPv4 version")
        vihl = data[off]
        if vihl != 0x45:
            raise DecodeError(Reason.NOT_ROCE, f"IPv4 version/IHL byte {vihl:#04x}", f)
        _need(data, off + wire.IPV4_HLEN, f, "IPv4 header")
        dscp, ecn, tot_len, ident, mf, frag_offset, ttl, proto, src, dst = _ipv4_unpack(data, off)
        f.ip = IP(4, _ip4_str(src), _ip4_str(dst), dscp, ecn, ttl, ident, 0, proto)
        if mf or frag_offset:
            raise DecodeError(Reason.NOT_ROCE, "IPv4 fragment", f)
        if proto != wire.IPPROTO_UDP:
            raise DecodeError(Reason.NOT_ROCE, f"IP protocol {proto}", f)
        ip_payload_len = tot_len - wire.IPV4_HLEN
        l3_start = off
        off += wire.IPV4_HLEN
    elif etype == wire.ETHERTYPE_IPV6:
        _need(data, off + wire.IPV6_HLEN, f, "IPv6 header")
        version, dscp, ecn, flow_label, plen, nxt, hlim, src, dst = _ipv6_unpack(data, off)
        if version != 6:
            raise DecodeError(Reason.NOT_ROCE, f"IP version {version} in an IPv6 ethertype", f)
        f.ip = IP(6, _ip6_str(src), _ip6_str(dst), dscp, ecn, hlim, 0, flow_label, nxt)
        if nxt != wire.IPPROTO_UDP:
            raise DecodeError(Reason.NOT_ROCE, f"IPv6 next header {nxt}", f)
        ip_payload_len = plen
        l3_start = off
        off += wire.IPV6_HLEN
    else:
        raise DecodeError(Reason.NOT_ROCE, f"ethertype {etype:#06x}", f)
    _need(data, off + 4, f, "UDP ports")
    sport, dport = _udp_ports(data, off)
    f.udp = UDP(sport, dport, 0)
    if dport != wire.ROCE_PORT:
        raise DecodeError(Reason.NOT_ROCE, f"UDP destination port {dport}", f)
    _need(data, off + wire.UDP_HLEN, f, "UDP header")
    udp_len, f.udp.checksum = _udp_len_ck(data, off)
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
    f.bth = bth = _bth_unpack(data, off)
    try:
        op = Op(bth.opcode)
    except ValueError:
        if not (optional and bth.opcode in wire.OPTIONAL_HEADERS):      # MR-WIRE-084
            raise DecodeError(Reason.BAD_OPCODE, f"opcode {bth.opcode:#04x}", f) from None
        op = bth.opcode
    bth.opcode = op
    if bth.tver != 0:
        raise DecodeError(Reason.BAD_VERSION, f"BTH TVer {bth.tver}", f)
    off += wire.BTH_LEN
    names = wire.headers_of(op)
    hlen = wire.ext_len(op)
    if op in wire.MR_OPS:
        # The MetaRoCE header's version nibble is checked before its length (MR-WIRE-075).
        if off < l4_end - wire.ICRC_LEN:
            version = _VERSION_OF[names[0]](data, off)
            if version != wire.MR_VERSION:
                raise DecodeError(Reason.BAD_VERSION, f"MetaRoCE header version {version}", f)
    if l4_end - wire.ICRC_LEN - off < hlen:
        name = getattr(op, "name", hex(op))
        raise DecodeError(Reason.LENGTH, f"opcode {name} needs {hlen} header bytes", f)
    for name in names:
        n = wire.HEADER_LEN[name]
        if name != "cnp":
            setattr(f, name, _EXT_UNPACK[name](data, off))
        off += n
    body = data[off:l4_end - wire.ICRC_LEN]
    if bth.pad > len(body):
        raise DecodeError(Reason.LENGTH, f"pad {bth.pad} exceeds the {len(body)} payload bytes", f)
    if op not in wire.PAYLOAD_OPS and len(body):
        name = getattr(op, "name", hex(op))
        raise DecodeError(Reason.LENGTH, f"opcode {name} carries {len(body)} unexpected bytes", f)
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
    for name in ("reth", "aeth", "atomicack", "atomiceth", "mrdh", "mrsh", "mrah", "mrnh", "mrsec", "mrch"):
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
            name = "MR_ANNOUNCE" if b["opcode"] == wire.MR_ANNOUNCE else f"op={b['opcode']:#04x}"
        parts.append(f"{name} qp={b['dest_qp']} psn={b['psn']}")
    for name in ("mrsec", "mrch", "mrdh", "mrsh", "mrah", "mrnh", "reth", "aeth"):
        if name in obj:
            h = dict(obj[name])
            if name == "mrah":
                h["sack"] = f"{h['sack']:#x}"
            if name == "mrch":
                h["nonce"] = f"{h['nonce']:#x}"
            parts.append(name.upper() + "(" + " ".join(f"{k}={v}" for k, v in h.items()) + ")")
    if obj.get("payload_len") is not None:
        parts.append(f"len={obj['payload_len']}")
    parts.append("OK" if obj["ok"] else f"ERROR {obj['error']}")
    return " ".join(parts)


__all__ = ["DecodeError", "Eth", "IP", "UDP", "BTH", "RETH", "AETH", "AtomicAck", "AtomicETH", "MRDH", "MRSH",
           "MRAH", "MRNH", "MRSEC", "MRCH", "Frame", "make", "encode", "decode", "decode_json", "to_json", "summary",
           "wire_len", "encode_bth", "decode_bth", "encode_ext", "decode_ext", "ipv4_checksum_ok"]
