"""Cycle-accurate golden model of the RX parser (hdl/parser.py, docs/spec/hw-parser.md).

``ParserModel(width)``: call ``step(inputs)`` once per clock cycle with the values of every
input port in this cycle (Verilog port names, see :meth:`ParserModel.port_names`; ``clk`` is
implied); it returns the values of every output port in this cycle and advances one cycle.
``m_meta__payload`` is the flat integer of :data:`META_LAYOUT` (declared here; the RTL imports it);
:meth:`ParserModel.meta_to_dict` unpacks it.

The verdict and every field come from the codec (:func:`verdict`: :func:`metaroce.models.codec.decode`
on the completed frame, which checks the ICRC with :mod:`metaroce.models.icrc`); the cycle
model judges frames with :func:`fast_verdict`, the same checks on the bytes, tested equal to
:func:`verdict` and falling back to it for every frame it does not accept.  This module only
adds the hardware's timing: the pipeline registers, the frame store and its reader, the meta
register and the counters (MR-HW-050..060), mirrored register by register.
"""
from __future__ import annotations

import collections
import functools
import ipaddress
import socket
import struct
from math import ceil

from amaranth.lib import data

from . import codec, wire
from .headers import TABLE as _H
from .icrc import icrc_bytes
from .wire import Reason


__all__ = ["ParserModel", "pack_meta", "unpack_meta", "frame_meta", "verdict", "fast_verdict",
           "beats_of",
           "META_LAYOUT", "EXT_NAMES", "HB", "ACT_DISCARD", "ACT_BYPASS", "ACT_PAYLOAD", "params",
           "COUNTER_BITS", "META_DEPTH", "N_COUNTERS", "N_REASON_COUNTERS", "OVERFLOW_COUNTER"]


# ------------------------------------------------------------------ RTL/model contract
# The metadata layout and the derived sizes are declared here, on the model side, and the
# RTL (hdl/parser.py) imports them: the truth does not depend on what it judges.

#: Header buffer: bytes of the frame kept for parsing (headers end at byte 126 at most).
HB = 128
EXT_NAMES = ("reth", "aeth", "imm", "atomicack", "mrdh", "mrsh", "mrah", "mrnh")

ACT_DISCARD, ACT_BYPASS, ACT_PAYLOAD = 0, 1, 2

#: MR-HW-060: counter width and count (one per Reason code, then overflow drops, MR-HW-082).
COUNTER_BITS = 64
N_REASON_COUNTERS = len(Reason)          # reg_addr 0..8: one per Reason code
OVERFLOW_COUNTER = N_REASON_COUNTERS     # reg_addr 9: frames dropped on overflow
N_COUNTERS = OVERFLOW_COUNTER + 1
#: MR-HW-013: meta queue slots (frames between the last beat and the meta output).
META_DEPTH = 16
#: MR-HW-050: cycles from a frame's last beat in S1 to its verdict stage S7.
VERDICT_STAGES = 6


def _s(fields):
    return data.StructLayout(fields)


def _hdr(name):
    """A header's sub-layout: its fields in wire order, widths from the header table (MR-WIRE-003)."""
    return _s(_H[name].layout())


def _w(name, fld):
    return _H[name].width(fld)


#: MR-HW-010: the metadata record. First field in the least significant bits. Header fields
#: and widths come from the header table (MR-WIRE-003); ``eth`` and ``ip`` merge the fields
#: of Ethernet/802.1Q and of IPv4/IPv6 (addresses in 128 bits).
META_LAYOUT = _s({
    "drop": 1,
    "reason": 4,                # models.wire.Reason code
    "ipv6": 1,
    "vlan_present": 1,
    "has": _s({h: 1 for h in EXT_NAMES}),
    "frame_len": 16,            # bytes of the frame (no FCS)
    "payload_offset": 16,       # frame byte offset of the first payload byte
    "payload_len": 16,          # payload bytes (without pad and ICRC)
    "eth": _s({"dst": _w("eth", "dst"), "src": _w("eth", "src"), "pcp": _w("vlan", "pcp"),
               "dei": _w("vlan", "dei"), "vlan": _w("vlan", "vlan")}),
    "ip": _s({"dscp": _w("ipv4", "dscp"), "ecn": _w("ipv4", "ecn"), "ttl": _w("ipv4", "ttl"),
              "ident": _w("ipv4", "ident"), "flow_label": _w("ipv6", "flow_label"),
              "src": _w("ipv6", "src"), "dst": _w("ipv6", "dst")}),
    "udp": _s({"sport": _w("udp", "sport")}),
    "bth": _hdr("bth"),
    "reth": _hdr("reth"),
    "aeth": _hdr("aeth"),
    "imm": _w("imm", "imm"),    # a bare value, as in the codec
    "atomicack": _hdr("atomicack"),
    "mrdh": _hdr("mrdh"),
    "mrsh": _hdr("mrsh"),
    "mrah": _hdr("mrah"),
    "mrnh": _hdr("mrnh"),
})


def params(width, max_frame=9216):
    """Derived sizes shared by the RTL and the model (MR-HW-031)."""
    if width not in (64, 128, 256, 512):
        raise ValueError(f"width must be 64, 128, 256 or 512, not {width!r}")
    if not isinstance(max_frame, int) or not HB <= max_frame <= 16000:
        raise ValueError(f"max_frame must be an int in [{HB}, 16000], not {max_frame!r}")
    nb = width // 8
    max_beats = ceil(max_frame / nb)
    depth = 1
    while depth < max_beats + 16:
        depth *= 2
    return {"bytes": nb, "max_beats": max_beats, "depth": depth,
            "abits": depth.bit_length() - 1, "kbits": max_beats.bit_length(),
            "meta_depth": META_DEPTH}


INPUTS = ("rst", "s_axis__tdata", "s_axis__tkeep", "s_axis__tvalid", "s_axis__tlast",
          "s_axis__tuser", "m_meta__ready", "m_payload__tready", "m_bypass__tready", "reg_addr")
OUTPUTS = ("s_axis__tready", "m_meta__payload", "m_meta__valid",
           "m_payload__tdata", "m_payload__tkeep", "m_payload__tvalid", "m_payload__tlast",
           "m_bypass__tdata", "m_bypass__tkeep", "m_bypass__tvalid", "m_bypass__tlast",
           "reg_data")


def _flatten(layout, base=0, path=()):
    out = []
    for name, fld in layout:
        if isinstance(fld.shape, data.StructLayout):
            out += _flatten(fld.shape, base + fld.offset, path + (name,))
        else:
            out.append((path + (name,), base + fld.offset, fld.width))
    return out


#: (path, bit offset, width) of every leaf field of META_LAYOUT (introspected once: fast packing).
META_FIELDS = _flatten(META_LAYOUT)
_FIELD_AT = {path: (off, (1 << width) - 1) for path, off, width in META_FIELDS}
(_PLEN_AT, _PLEN_MASK), (_POFF_AT, _POFF_MASK) = _FIELD_AT[("payload_len",)], _FIELD_AT[("payload_offset",)]


def _pack_loop(values):
    # the reference: what the compiled _pack below does, field by field
    out = 0
    for path, off, width in META_FIELDS:
        v = values
        for name in path:
            v = v.get(name) if isinstance(v, dict) else None
            if v is None:
                break
        if v is None:
            continue
        v = int(v)
        if v < 0 or v >> width:
            raise ValueError(f"{'.'.join(path)}={v} does not fit {width} bits")
        out |= v << off
    return out


def _runs():
    """META_FIELDS in order, cut into runs of fields with the same struct prefix (a top-level
    field after a struct starts a new run: the order of the checks, and so which error a
    bad record raises first, is the reference's)."""
    runs: list = []
    for path, off, width in META_FIELDS:
        if not runs or runs[-1][0] != path[:-1]:
            runs.append((path[:-1], []))
        runs[-1][1].append((path, off, width))
    return runs


def _too_wide(path, v, width):
    raise ValueError(f"{path}={v} does not fit {width} bits")


def _compile_pack():
    """:func:`_pack_loop` as straight-line code (one lookup per struct, one test per field):
    the meta record of every frame is packed in the lockstep loop."""
    lines = ["def _pack(values):", "    out = 0", "    if not isinstance(values, dict):",
             "        return 0"]
    for prefix, fields in _runs():
        ind = "    "
        src = "values"
        for i, name in enumerate(prefix):       # one level deep in META_LAYOUT
            lines.append(f"{ind}s{i} = {src}.get({name!r})")
            lines.append(f"{ind}if isinstance(s{i}, dict):")
            src, ind = f"s{i}", ind + "    "
        for path, off, width in fields:
            # v >> width is -1 for a negative v: one test for both bounds
            lines += [f"{ind}v = {src}.get({path[-1]!r})", f"{ind}if v is not None:",
                      f"{ind}    v = int(v)", f"{ind}    if v >> {width}:",
                      f"{ind}        _too_wide({'.'.join(path)!r}, v, {width})",
                      f"{ind}    out |= v << {off}"]
        if prefix:
            lines.append(f"{ind}pass")
    lines.append("    return out")
    ns = {"_too_wide": _too_wide}
    exec("\n".join(lines), ns)
    return ns["_pack"]


_pack_general = _compile_pack()


def _compile_pack_fast():
    """The common case of :func:`_pack_general` (what :func:`verdict` packs): every member of
    a struct that is present is there and an int; one shift-or and one range test per field,
    no lookups that may miss.  Anything else raises (KeyError, TypeError, AttributeError) or
    sets ``bad`` and :func:`_pack` takes the general path, so the result and the errors are
    the reference's."""
    lines = ["def _pack_fast(values):", "    out = bad = 0", "    get = values.get"]
    for prefix, fields in _runs():
        ind, src = "    ", "values"
        if prefix:                              # one level deep in META_LAYOUT
            lines += [f"    s = get({prefix[0]!r})", "    if s is not None:"]
            ind, src = "        ", "s"
        for path, off, width in fields:
            if not prefix:
                lines += [f"{ind}v = get({path[-1]!r})", f"{ind}if v is not None:",
                          f"{ind}    out |= v << {off}", f"{ind}    bad |= v >> {width}"]
            else:
                lines += [f"{ind}v = {src}[{path[-1]!r}]", f"{ind}out |= v << {off}",
                          f"{ind}bad |= v >> {width}"]
    lines.append("    return out, bad")
    ns: dict = {}
    exec("\n".join(lines), ns)
    return ns["_pack_fast"]


_pack_fast = _compile_pack_fast()


def _pack(values):
    try:
        out, bad = _pack_fast(values)
    except (KeyError, TypeError, AttributeError):
        return _pack_general(values)
    return _pack_general(values) if bad else out


def _unpack(value):
    out = {}
    for path, off, width in META_FIELDS:
        d = out
        for name in path[:-1]:
            d = d.setdefault(name, {})
        d[path[-1]] = (value >> off) & ((1 << width) - 1)
    return out


def pack_meta(values):
    """Pack a nested dict (names of META_LAYOUT) into the flat ``m_meta__payload`` integer."""
    return _pack(values)


def unpack_meta(value):
    """The nested dict of every META_LAYOUT field of a flat ``m_meta__payload`` integer."""
    return _unpack(int(value))


def _mac(s):
    return int(s.replace(":", ""), 16)


def _ip_int(s, ipv6):
    """The address string as an integer (socket.inet_pton: about 20x faster than ipaddress,
    which still parses, and rejects, what inet_pton does not take, e.g. a scope)."""
    try:
        return int.from_bytes(socket.inet_pton(socket.AF_INET6 if ipv6 else socket.AF_INET, s), "big")
    except (OSError, TypeError, ValueError):
        return int((ipaddress.IPv6Address if ipv6 else ipaddress.IPv4Address)(s))


def frame_meta(f, frame_len):
    """META_LAYOUT values (without drop/reason) of a decoded :class:`codec.Frame` (MR-HW-010)."""
    op = wire.Op(f.bth.opcode)
    ipv6 = f.ip.version == 6
    vlan = f.eth.vlan is not None
    off = (wire.ETH_HLEN + (wire.VLAN_HLEN if vlan else 0)
           + (wire.IPV6_HLEN if ipv6 else wire.IPV4_HLEN) + wire.UDP_HLEN + wire.BTH_LEN
           + wire.ext_len(op))
    vals = {
        "ipv6": int(ipv6), "vlan_present": int(vlan),
        "has": {h: int(getattr(f, h) is not None) for h in EXT_NAMES},
        "frame_len": frame_len, "payload_offset": off, "payload_len": len(f.payload),
        "eth": {"dst": _mac(f.eth.dst), "src": _mac(f.eth.src), "pcp": f.eth.pcp if vlan else 0,
                "dei": f.eth.dei if vlan else 0, "vlan": f.eth.vlan if vlan else 0},
        "ip": {"dscp": f.ip.dscp, "ecn": f.ip.ecn, "ttl": f.ip.ttl,
               "ident": 0 if ipv6 else f.ip.ident, "flow_label": f.ip.flow_label if ipv6 else 0,
               "src": _ip_int(f.ip.src, ipv6), "dst": _ip_int(f.ip.dst, ipv6)},
        "udp": {"sport": f.udp.sport},
        "bth": {k: int(v) for k, v in vars(f.bth).items()},
        "imm": f.imm,
    }
    for h in ("reth", "aeth", "atomicack", "mrdh", "mrsh", "mrah", "mrnh"):
        hv = getattr(f, h)
        if hv is not None:
            vals[h] = dict(vars(hv))
    return vals


def verdict(frame_bytes, mac_error=False, oversize=False):
    """(reason, meta value) of a completed frame, as the RTL decides it (MR-HW-020).

    MAC error first, then oversize (``length``), then :func:`codec.decode`'s first failing
    check. Fields are kept for accepted frames and ICRC drops; other drops carry only
    ``drop`` and ``reason``.
    """
    frame = None
    if mac_error:
        reason = Reason.MAC_ERROR
    elif oversize:
        reason = Reason.LENGTH
    else:
        try:
            frame = codec.decode(frame_bytes)
            reason = Reason.NONE
        except codec.DecodeError as e:
            reason = e.reason
            frame = e.frame if reason == Reason.ICRC else None
    vals = frame_meta(frame, len(frame_bytes)) if frame is not None else {}
    vals["drop"] = int(reason != Reason.NONE)
    vals["reason"] = int(reason)
    return reason, pack_meta(vals), vals


# ------------------------------------------------------------------ the fast verdict
# verdict() above is the reference: codec decode, a Frame, a dict, then the packing.  The
# lockstep model judges every frame, so ParserModel uses fast_verdict(): the same checks
# straight on the bytes, and the meta record packed from header fields at offsets fixed by
# the layout (VLAN or not, IPv4 or IPv6, opcode), all taken from the header table.  A frame
# it cannot accept by those checks (every drop, every bypass) goes to verdict(); tests check
# the two equal on random and mutated frames (tests/test_parser_verdict.py).

def _meta_sources(vlan, ipv6, op):
    """``{META path: (header, frame byte offset, field)}`` of an accepted frame of this
    layout (MR-HW-010); fields not named here are constants (see :func:`_compile_meta`)."""
    l3 = wire.ETH_HLEN + (wire.VLAN_HLEN if vlan else 0)
    udp = l3 + (wire.IPV6_HLEN if ipv6 else wire.IPV4_HLEN)
    bth = udp + wire.UDP_HLEN
    ip = "ipv6" if ipv6 else "ipv4"
    src = {("eth", "dst"): ("eth", 0, "dst"), ("eth", "src"): ("eth", 0, "src"),
           ("ip", "dscp"): (ip, l3, "dscp"), ("ip", "ecn"): (ip, l3, "ecn"),
           ("ip", "ttl"): (ip, l3, "hop_limit" if ipv6 else "ttl"),
           ("ip", "src"): (ip, l3, "src"), ("ip", "dst"): (ip, l3, "dst"),
           ("udp", "sport"): ("udp", udp, "sport")}
    if vlan:
        src.update({("eth", f): ("vlan", wire.ETH_HLEN, f) for f in ("pcp", "dei", "vlan")})
    src[("ip", "flow_label") if ipv6 else ("ip", "ident")] = \
        (ip, l3, "flow_label" if ipv6 else "ident")
    src.update({("bth", f): ("bth", bth, f) for f in _H["bth"].names})
    off = bth + wire.BTH_LEN
    for h in wire.HEADERS[op]:
        if h in EXT_NAMES:
            src.update({(h,) if h == "imm" else (h, f): (h, off, f) for f in _H[h].names})
        off += wire.HEADER_LEN[h]
    return src, off


@functools.cache
def _unpacker(hdr, names):
    # offset-independent: one per header and field set, shared by the layouts
    return _H[hdr].unpacker(names)


def _compile_meta(vlan, ipv6, op):
    """``(pack, payload_offset)``: ``pack(data, frame_len, payload_len)`` is the meta record
    of an accepted frame of this layout (what :func:`verdict` packs from the codec's Frame),
    as straight-line code: one struct unpack per header, one shift-or per field within its
    META_LAYOUT struct and one per struct."""
    src, payload_offset = _meta_sources(vlan, ipv6, op)
    present = {h for h in wire.HEADERS[op] if h in EXT_NAMES}
    const = {("ipv6",): int(ipv6), ("vlan_present",): int(vlan),
             ("payload_offset",): payload_offset}
    const.update({("has", h): int(h in present) for h in EXT_NAMES})
    args = {("frame_len",): "frame_len", ("payload_len",): "payload_len"}
    # one unpacker per (header, offset), reading the fields the record takes, in wire order
    reads: dict = {}
    for path, (hdr, at, fld) in src.items():
        reads.setdefault((hdr, at), set()).add(fld)
    ns: dict = {}
    var: dict = {}
    lines = ["def pack(data, frame_len, payload_len):"]
    for i, ((hdr, at), flds) in enumerate(sorted(reads.items(), key=lambda kv: kv[0][1])):
        names = tuple(f for f in _H[hdr].names if f in flds)
        ns[f"_u{i}"] = _unpacker(hdr, names)
        vs = [f"v{i}_{k}" for k in range(len(names))]
        lines.append(f"    {', '.join(vs)} = _u{i}(data, {at})")     # one field: the value
        var.update({(hdr, at, f): v for f, v in zip(names, vs)})
    base = 0
    terms: dict = {}                    # top-level META member -> (its offset, [terms])
    for path, off, _width in META_FIELDS:
        top = path[0]
        start = terms.setdefault(top, (off, []))[0]
        if path in const:
            base |= const[path] << off
            continue
        rel = off - start
        if path in args:
            e = args[path]
        elif path in src:
            e = var[src[path]]
        else:
            continue                    # 0: drop, reason, absent header fields
        terms[top][1].append(f"{e} << {rel}" if rel else e)
    parts = [str(base)]
    for top, (start, ts) in terms.items():
        if ts:
            inner = " | ".join(ts)
            parts.append(f"({inner}) << {start}" if start else f"({inner})")
    lines.append("    return " + " | ".join(parts))
    exec(compile("\n".join(lines), f"<meta {int(vlan)}{int(ipv6)}{int(op):02x}>", "exec"), ns)
    return ns["pack"], payload_offset


#: (vlan, ipv6, opcode) -> (pack, payload_offset, MetaRoCE header?, payload allowed?).
_PLANS: dict = {}
#: (vlan, ipv6, headers after the BTH) -> (pack, payload_offset): opcodes with the same
#: headers share one compiled packer (the opcode is a field like any other).
_PACKERS: dict = {}


def _plan(vlan, ipv6, opcode):
    key = (vlan, ipv6, opcode)
    plan = _PLANS.get(key)
    if plan is None:
        op = wire.Op(opcode)
        hk = (vlan, ipv6, wire.HEADERS[op])
        if hk not in _PACKERS:
            _PACKERS[hk] = _compile_meta(vlan, ipv6, op)
        plan = _PLANS[key] = (*_PACKERS[hk], op in wire.MR_OPS, op in wire.PAYLOAD_OPS)
    return plan


def compile_verdicts():
    """Compile :func:`fast_verdict`'s packer of every layout now (about 50 ms) instead of at
    each layout's first frame: for speed measurements of the lockstep loop."""
    for vlan in (False, True):
        for ipv6 in (False, True):
            for op in wire.Op:
                _plan(vlan, ipv6, int(op))


_OPCODES = frozenset(int(op) for op in wire.Op)
#: Bytes of the shortest frame the codec can accept (no VLAN, IPv4, BTH, ICRC).
_MIN_ACCEPTED = wire.ETH_HLEN + wire.IPV4_HLEN + wire.UDP_HLEN + wire.BTH_LEN + wire.ICRC_LEN


def fast_verdict(frame_bytes, mac_error=False, oversize=False):
    """``(reason, meta value)``: what :func:`verdict` returns first and second, for the cycle
    model (MR-HW-020, MR-HW-010).  A frame that passes every check of
    :func:`codec.decode <metaroce.models.codec.decode>` (in the codec's order: Ethernet,
    802.1Q, IPv4 version/IHL, fragment, protocol, IPv6 version and next header, UDP port,
    IPv4 header checksum, IP/UDP lengths, BTH room, opcode, TVer, MetaRoCE version, header
    room, pad, payload on a payload-less opcode, ICRC) is judged here from its bytes; any
    other frame, and a MAC error or an oversize frame, by :func:`verdict` itself."""
    data = frame_bytes
    n = len(data)
    if mac_error or oversize or n < _MIN_ACCEPTED or n >> 16:
        return _reference(data, mac_error, oversize)
    etype = data[12] << 8 | data[13]
    l3 = wire.ETH_HLEN
    vlan = etype == wire.VLAN_TPID
    if vlan:
        etype = data[16] << 8 | data[17]
        l3 += wire.VLAN_HLEN
    if etype == wire.ETHERTYPE_IPV4:
        ipv6 = False
        udp = l3 + wire.IPV4_HLEN
        if (n < udp + wire.UDP_HLEN or data[l3] != 0x45 or data[l3 + 6] & 0x3F or data[l3 + 7]
                or data[l3 + 9] != wire.IPPROTO_UDP):
            return _reference(data, mac_error, oversize)
        ip_payload_len = (data[l3 + 2] << 8 | data[l3 + 3]) - wire.IPV4_HLEN
    elif etype == wire.ETHERTYPE_IPV6:
        ipv6 = True
        udp = l3 + wire.IPV6_HLEN
        if n < udp + wire.UDP_HLEN or data[l3] >> 4 != 6 or data[l3 + 6] != wire.IPPROTO_UDP:
            return _reference(data, mac_error, oversize)
        ip_payload_len = data[l3 + 4] << 8 | data[l3 + 5]
    else:
        return _reference(data, mac_error, oversize)
    l4_end = udp + ip_payload_len
    bth = udp + wire.UDP_HLEN
    hdr = bth + wire.BTH_LEN
    if ((data[udp + 2] << 8 | data[udp + 3]) != wire.ROCE_PORT
            or (not ipv6 and not _ipv4_checksum_ok(data, l3))
            or n < l4_end or (data[udp + 4] << 8 | data[udp + 5]) != ip_payload_len
            or l4_end - wire.ICRC_LEN < hdr or data[bth] not in _OPCODES or data[bth + 1] & 0x0F):
        return _reference(data, mac_error, oversize)
    pack, payload_offset, mr_op, payload_op = _plan(vlan, ipv6, data[bth])
    body = l4_end - wire.ICRC_LEN - payload_offset
    pad = data[bth + 1] >> 4 & 3
    if (body < 0 or (mr_op and data[hdr] >> 4 != wire.MR_VERSION) or pad > body
            or (body and not payload_op)
            or icrc_bytes(data[l3:l4_end - wire.ICRC_LEN]) != data[l4_end - wire.ICRC_LEN:l4_end]):
        return _reference(data, mac_error, oversize)
    return Reason.NONE, pack(data, n, body - pad)


_IPV4_WORDS = struct.Struct("!10H")
_IPV4_CK_WORD = 5           # the header checksum is the sixth 16-bit word (MR-WIRE-023)


def _ipv4_checksum_ok(data, l3):
    """:func:`codec.ipv4_checksum_ok` on the 20 bytes at ``l3``, without copying them: the
    one's complement sum of the header with its checksum word taken as 0, complemented,
    equals the checksum word."""
    words = _IPV4_WORDS.unpack_from(data, l3)
    total = sum(words) - words[_IPV4_CK_WORD]
    while total >> 16:
        total = (total & 0xFFFF) + (total >> 16)
    return (~total & 0xFFFF) == words[_IPV4_CK_WORD]


def _reference(data, mac_error, oversize):
    reason, meta, _ = verdict(data, mac_error, oversize)
    return reason, meta


def beats_of(frame_bytes, width, *, tuser_beat=None):
    """AXI beats ``(tdata, tkeep, tlast, tuser)`` of a frame (packed, byte 0 in tdata[7:0])."""
    nb = width // 8
    out = []
    n = max(1, -(-len(frame_bytes) // nb))
    for i in range(n):
        chunk = frame_bytes[i * nb:(i + 1) * nb]
        out.append((int.from_bytes(chunk, "little"), (1 << len(chunk)) - 1, int(i == n - 1),
                    int(tuser_beat == i)))
    return out


class ParserModel:
    """Register-level mirror of :class:`metaroce.hdl.parser.Parser` (MR-HW-050..063)."""

    def __init__(self, width=512, *, max_frame=9216, rdport_reset=False, drop_on_full=False):
        p = params(width, max_frame)
        self.width = width
        self.drop_on_full = drop_on_full
        self.rdport_reset = rdport_reset
        self.B = p["bytes"]
        self.LB = self.B.bit_length() - 1
        self.MAXB = p["max_beats"]
        self.D = p["depth"]
        self.KB = p["kbits"]
        self.MQ = p["meta_depth"]
        self.full_keep = (1 << self.B) - 1
        self.cnt_mask = (1 << COUNTER_BITS) - 1
        self.data_mem = [(0, 0)] * self.D
        self.drp = (0, 0)                       # frame store read port: (tdata, tkeep)
        self.rrp = (0, 0, 0, 0)                 # record read port: (action, last, pstart, pend_incl)
        self._power_on()
        self.reset()
        # The last verdicts, for tests and tools: (reason, meta value) in verdict order.
        self.log = collections.deque(maxlen=4096)

    @staticmethod
    def port_names():
        """{"inputs": [...], "outputs": [...]} (Verilog names; clk implied)."""
        return {"inputs": list(INPUTS), "outputs": list(OUTPUTS)}

    @staticmethod
    def meta_to_dict(value):
        """Unpack ``m_meta__payload`` for humans: present headers only, names as in the codec."""
        d = unpack_meta(value)
        out = {k: d[k] for k in ("drop", "reason", "ipv6", "vlan_present", "frame_len",
                                 "payload_offset", "payload_len", "eth", "ip", "udp", "bth")}
        out["reason"] = Reason(d["reason"]).label if d["reason"] <= max(Reason) else d["reason"]
        for h in EXT_NAMES:
            if d["has"][h]:
                out[h] = d[h]
        return out

    def _power_on(self):
        # Data registers without reset in the RTL start at 0 and keep their value on rst.
        self.d1 = (0, 0, 0, 0, 0, 0, 0, 0, 0, 0)  # valid, data, keep, nb, last, k, user, store, rewind, drop
        self.fstart_reg = 0
        self.meta_out = 0
        self.cur = (0, 0, 0, 0)
        self.s_kind = self.s_keep = self.s_last = 0
        self.o_data = self.o_keep_p = self.o_keep_b = self.o_last = 0
        self.buf = bytearray()

    def reset(self):
        """Registers with a reset to their reset values (MR-HW-054); data registers and
        memories keep their contents, as in the RTL."""
        self.tready = 1
        self.k = 0
        self.d1 = (0,) + tuple(self.d1[1:])
        self.wr_ptr = self.rd_ptr = 0
        self.err_acc = 0
        self.ovf = 0
        self.fr_cnt = 0
        # S2..S7: one entry per cycle, None or (reason, meta, record); index 0 is S2.
        self.vpipe = [None] * VERDICT_STAGES
        self.cnt = [0] * N_REASON_COUNTERS   # per Reason code (MR-HW-060)
        self.cnt_overflow = 0                # MR-HW-082
        self.reg_data = 0
        self.vq = collections.deque()           # verdicts waiting for the meta output
        self.hd = None                          # the head verdict (reason, meta)
        self.meta_valid = 0
        self.rec_q = collections.deque()        # records pushed, not yet read
        self.a_valid = self.cur_valid = 0
        self.ri = 0
        self.s_valid = 0
        self.o_pvalid = self.o_bvalid = 0
        self.space = 0
        self.slots = 0

    # ------------------------------------------------------------------ one clock cycle
    def outputs(self):
        """This cycle's outputs, from registers only (MR-HW-055), so known before the inputs
        (a top joining the parser to other blocks' models reads them first)."""
        return {
            "s_axis__tready": self.tready,
            "m_meta__payload": self.meta_out, "m_meta__valid": self.meta_valid,
            "m_payload__tdata": self.o_data, "m_payload__tkeep": self.o_keep_p,
            "m_payload__tvalid": self.o_pvalid, "m_payload__tlast": self.o_last,
            "m_bypass__tdata": self.o_data, "m_bypass__tkeep": self.o_keep_b,
            "m_bypass__tvalid": self.o_bvalid, "m_bypass__tlast": self.o_last,
            "reg_data": self.reg_data,
        }

    def step(self, inputs):
        g = inputs.get
        B = self.B
        meta_ready = g("m_meta__ready", 0)
        pay_ready = g("m_payload__tready", 0)
        byp_ready = g("m_bypass__tready", 0)
        tready = self.tready
        accept = tready and g("s_axis__tvalid", 0)
        o_pvalid, o_bvalid = self.o_pvalid, self.o_bvalid
        out = self.outputs()

        # ---- reader: record -> issue (store read) -> s -> output registers (MR-HW-030)
        o_free = (not (o_pvalid or o_bvalid)) or (o_pvalid and pay_ready) or (o_bvalid and byp_ready)
        s_valid = self.s_valid
        s_move = s_valid and (o_free or self.s_kind == ACT_DISCARD)
        cur_valid = self.cur_valid
        issue = cur_valid and (not s_valid or s_move)
        action, last, pstart, pend_incl = self.cur
        ri = self.ri
        is_last = ri == last
        take_rec = self.a_valid and (not cur_valid or (issue and is_last))
        rec_rd = bool(self.rec_q) and (not self.a_valid or take_rec)
        if s_move and self.s_kind != ACT_DISCARD:
            self.o_data, self.o_keep_b = self.drp
            self.o_keep_p, self.o_last = self.s_keep, self.s_last
            self.o_pvalid = int(self.s_kind == ACT_PAYLOAD)
            self.o_bvalid = int(self.s_kind == ACT_BYPASS)
        elif o_free:
            self.o_pvalid = self.o_bvalid = 0
        if issue:
            lb = self.LB
            ps_beat, pe_beat = pstart >> lb, pend_incl >> lb
            if action == ACT_BYPASS:
                self.s_kind, self.s_last = ACT_BYPASS, int(is_last)
            else:
                pay = action == ACT_PAYLOAD and ps_beat <= ri <= pe_beat
                self.s_kind = ACT_PAYLOAD if pay else ACT_DISCARD
                self.s_last = int(ri == pe_beat)
            keep = self.full_keep
            if ri == ps_beat:
                keep &= keep ^ ((1 << (pstart & (B - 1))) - 1)
            if ri == pe_beat:
                keep &= (1 << ((pend_incl & (B - 1)) + 1)) - 1
            self.s_keep = keep
            self.s_valid = 1
            self.ri = 0 if is_last else ri + 1
            self.drp = self.data_mem[self.rd_ptr]
            self.rd_ptr = (self.rd_ptr + 1) % self.D
        elif s_move:
            self.s_valid = 0
        if take_rec:
            self.cur = self.rrp
            self.cur_valid = 1
        elif issue and is_last:
            self.cur_valid = 0
        if rec_rd:
            self.rrp = self.rec_q.popleft()
            self.a_valid = 1
        elif take_rec:
            self.a_valid = 0

        # ---- meta output (MR-HW-013): the head verdict in registers; bypass verdicts skipped
        hd = self.hd
        meta_valid = self.meta_valid
        slot_out = False
        if hd is not None:
            if hd[0] == Reason.NOT_ROCE:
                slot_out = True
            elif not meta_valid or meta_ready:
                slot_out = True
                self.meta_out = hd[1]
                meta_valid = 2                  # taken: valid next cycle
        if self.vq and (hd is None or slot_out):
            self.hd = self.vq.popleft()
        elif slot_out:
            self.hd = None
        self.meta_valid = 1 if meta_valid == 2 else int(meta_valid and not meta_ready)

        # ---- counters register read (old counter values), then S7: verdict out
        addr = g("reg_addr", 0)
        self.reg_data = (self.cnt[addr] if addr < N_REASON_COUNTERS else
                         self.cnt_overflow if addr == OVERFLOW_COUNTER else 0)
        vpipe = self.vpipe
        v7 = vpipe[-1]
        if v7 is not None:
            reason, meta, record = v7
            self.cnt[reason] = (self.cnt[reason] + 1) & self.cnt_mask
            self.vq.append((reason, meta))
            self.rec_q.append(record)

        # ---- S1: store, snapshot; the verdict enters S2
        d1_valid, d1_data, d1_keep, d1_nb, d1_last, d1_k, d1_user, d1_store, d1_rewind, d1_drop = self.d1
        new_v2 = None
        if d1_valid:
            if d1_k == 0:
                self.buf = bytearray()
                fstart = self.fstart_reg = self.wr_ptr
            else:
                fstart = self.fstart_reg
            if d1_store:
                self.data_mem[self.wr_ptr] = (d1_data, d1_keep)
                self.buf += d1_data.to_bytes(B, "little")[:d1_nb]
                self.wr_ptr = (self.wr_ptr + 1) % self.D
            elif d1_rewind:
                self.wr_ptr = fstart
            mac_err = self.err_acc or d1_user
            self.err_acc = 0 if d1_last else mac_err
            if d1_last:
                if d1_drop:
                    self.cnt_overflow = (self.cnt_overflow + 1) & self.cnt_mask
                    self.log.append(("overflow", None))
                else:
                    new_v2 = self._verdict(bytes(self.buf), mac_err, d1_k >= self.MAXB,
                                           min(d1_k, self.MAXB - 1))
        vpipe.pop()
        vpipe.insert(0, new_v2)

        # ---- S0: accept
        k = self.k
        store_in = slot_in = rel = 0
        if accept:
            tlast = g("s_axis__tlast", 0)
            nb = B
            if tlast:
                keep = g("s_axis__tkeep", 0)
                # lanes in the run of ones from lane 0 (trailing ones), at most B
                nb = min(((keep ^ (keep + 1)) >> 1).bit_length(), B)
            need = k < self.MAXB
            fits = True
            if self.drop_on_full:
                # MR-HW-081: drop the whole frame when a beat or its meta slot does not fit.
                fits = (not self.ovf and (not need or self.space < self.D)
                        and (not tlast or self.slots < self.MQ))
                rewind = not fits and not self.ovf
                if rewind:
                    rel = self.fr_cnt
                self.ovf = int(not fits and not tlast)
                self.fr_cnt = 0 if tlast else self.fr_cnt + int(need and fits)
            else:
                rewind = False
            store_in = int(need and fits)
            slot_in = int(bool(tlast) and fits)
            self.d1 = (1, g("s_axis__tdata", 0), (1 << nb) - 1, nb, tlast, k, g("s_axis__tuser", 0),
                       store_in, int(rewind), int(not fits))
            self.k = 0 if tlast else min(k + 1, self.MAXB)
        elif d1_valid:
            self.d1 = (0,) + self.d1[1:]

        # ---- reservations: tready for the next cycle (MR-HW-051)
        self.space += store_in - (1 if issue else 0) - rel
        self.slots += slot_in - (1 if slot_out else 0)
        self.tready = int(self.drop_on_full or (self.space < self.D and self.slots < self.MQ))

        if g("rst", 0):
            # Synchronous reset: registers with a reset take their reset value; data
            # registers and memories took this cycle's update like any other cycle.
            self.reset()
            if self.rdport_reset:
                # The Amaranth simulator resets a memory read port's data register when the
                # port is not enabled; the generated Verilog (and Verilator) does not.
                if not issue:
                    self.drp = (0, 0)
                if not rec_rd:
                    self.rrp = (0, 0, 0, 0)
        return out

    def _verdict(self, frame, mac_err, oversize, last):
        reason, meta = fast_verdict(frame, bool(mac_err), oversize)
        plen = (meta >> _PLEN_AT) & _PLEN_MASK
        if reason == Reason.NOT_ROCE:
            record = (ACT_BYPASS, last, 0, 0)
        elif reason == Reason.NONE and plen:
            ps = (meta >> _POFF_AT) & _POFF_MASK
            record = (ACT_PAYLOAD, last, ps, ps + plen - 1)
        else:
            record = (ACT_DISCARD, last, 0, 0)
        self.log.append((reason, meta))
        return reason, meta, record

    def busy(self):
        """True while a frame is anywhere in the pipeline, the store or the outputs."""
        return bool(self.d1[0] or any(v is not None for v in self.vpipe) or self.vq
                    or self.hd is not None
                    or self.meta_valid or self.rec_q or self.a_valid or self.cur_valid
                    or self.s_valid or self.o_pvalid or self.o_bvalid)

