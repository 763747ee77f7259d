"""scapy layers for the MetaRoCE headers and the RoCEv2 headers scapy lacks (docs/tools.md).

``scapy.contrib.roce`` defines BTH (with the ICRC), AETH and the CNP padding. This module adds
RETH, ImmDt and AtomicAckETH (MR-WIRE-060, MR-WIRE-062, MR-WIRE-063) and the MetaRoCE headers
MRDH, MRSH, MRAH and MRNH (MR-WIRE-071, MR-WIRE-072, MR-WIRE-073, MR-WIRE-074), and binds them
after the BTH by opcode, in the order that :data:`metaroce.models.wire.HEADERS` gives
(MR-WIRE-052), so that::

    pkt = (Ether() / IP() / UDP(sport=0xC001, dport=4791) / BTH(opcode=0xC0, dqpn=7, psn=3)
           / MRDH(path=1) / RETH(va=0x1000, rkey=5, dma_len=4) / Raw(b"data"))

builds a frame whose ICRC scapy's BTH computes, and ``Ether(raw_bytes)`` dissects one. scapy's BTH
does not derive PadCnt: set ``BTH(padcount=n)`` and append n zero bytes to the payload
(see :func:`pad_payload`).

Field names, offsets and widths come from the header table (:mod:`metaroce.models.headers`,
MR-WIRE-003); the names are those of :mod:`metaroce.models.codec` and of ``metaroce decode --json``.
"""
from scapy.contrib.roce import AETH, BTH, CNPPadding
from scapy.fields import (BitField, ByteEnumField, ByteField, FlagsField, IntField, LongField,
                          ShortField, XBitField, XByteField, XIntField, XLongField, XShortField)
from scapy.packet import Packet, Raw, bind_layers

from . import wire
from .wire import Op

_PLAIN = {8: ByteField, 16: ShortField, 32: IntField, 64: LongField}
_HEX = {8: XByteField, 16: XShortField, 32: XIntField, 64: XLongField}


def _fields(name, *, hex=(), kinds=None):
    """scapy ``fields_desc`` of header ``name``: one field per field of the header table,
    reserved ones included, with its name and width (MR-WIRE-003). ``hex`` names fields shown
    in hex; ``kinds`` gives a maker ``(name, default, width) -> field`` for flags and enums.
    The MetaRoCE version field defaults to this wire format's version (MR-WIRE-001)."""
    out = []
    for f in wire.HEADER_TABLE[name].fields:
        default = wire.MR_VERSION if f.name == "version" else 0
        make = (kinds or {}).get(f.name)
        if make is not None:
            out.append(make(f.name, default, f.width))
        elif f.byte_aligned and f.width in _PLAIN:
            out.append((_HEX if f.name in hex else _PLAIN)[f.width](f.name, default))
        else:
            out.append((XBitField if f.name in hex else BitField)(f.name, default, f.width))
    return out


class _ByOpcode(Packet):
    """Picks the next header from the BTH opcode (MR-WIRE-052), since the headers themselves
    carry no type field."""

    def guess_payload_class(self, payload):
        bth = self.underlayer
        while bth is not None and not isinstance(bth, BTH):
            bth = bth.underlayer
        if bth is None:
            return Raw
        try:
            names = wire.HEADERS[Op(bth.opcode)]
        except ValueError:
            return Raw
        mine = _NAME_OF.get(type(self))
        if mine in names:
            i = names.index(mine)
            if i + 1 < len(names):
                return _LAYER_OF[names[i + 1]]
        return Raw


class RETH(_ByOpcode):
    """RDMA extended transport header, 16 bytes (MR-WIRE-060)."""
    name = "RETH"
    fields_desc = _fields("reth", hex={"va", "rkey"})


class ImmDt(_ByOpcode):
    """Immediate data, 4 bytes (MR-WIRE-062)."""
    name = "ImmDt"
    fields_desc = _fields("imm", hex={"imm"})


class AtomicAckETH(_ByOpcode):
    """Atomic acknowledge extended transport header, 8 bytes (MR-WIRE-063).

    Build it after scapy's AETH; on dissection scapy's AETH leaves it as Raw.
    """
    name = "AtomicAckETH"
    fields_desc = _fields("atomicack", hex={"orig"})


class AtomicETH(_ByOpcode):
    """IBTA atomic extended transport header, 28 bytes (MR-WIRE-065)."""
    name = "AtomicETH"
    fields_desc = _fields("atomiceth", hex={"va", "rkey", "swap", "compare"})


_MRDH_FLAGS = ["LAST", "RETX", "FIRST", "ERROR"]
_MRAH_FLAGS = ["ECE", "NAK_PRESENT", "RSVD2", "RSVD3"]
_NAK_REASONS = {r.value: r.name for r in wire.NakReason}


class MRDH(_ByOpcode):
    """MetaRoCE data header, 16 bytes (MR-WIRE-071)."""
    name = "MRDH"
    fields_desc = _fields("mrdh", kinds={"flags": lambda n, d, w: FlagsField(n, d, w, _MRDH_FLAGS)})


class MRSH(_ByOpcode):
    """MetaRoCE send header: the receive match, 4 bytes (MR-WIRE-072)."""
    name = "MRSH"
    fields_desc = _fields("mrsh")


class MRAH(_ByOpcode):
    """MetaRoCE ACK header with the 256-bit SACK bitvector, 48 bytes (MR-WIRE-073)."""
    name = "MRAH"
    # sack: bit i set means PSN (cum_psn + 1 + i) mod 2^24 has arrived; big-endian on the wire.
    fields_desc = _fields("mrah", kinds={"flags": lambda n, d, w: FlagsField(n, d, w, _MRAH_FLAGS)})


class MRNH(_ByOpcode):
    """MetaRoCE NAK header, 8 bytes (MR-WIRE-074)."""
    name = "MRNH"
    fields_desc = _fields("mrnh", hex={"reserved"},
                          kinds={"reason": lambda n, d, w: ByteEnumField(n, d, _NAK_REASONS)})


class MRSEC(_ByOpcode):
    """MetaRoCE security header of an authenticated frame, 16 bytes (MR-WIRE-082).
    The protected headers, the payload and the 16-byte tag (MR-WIRE-077) follow as Raw."""
    name = "MRSEC"
    fields_desc = _fields("mrsec", hex={"reserved", "next_op"})


_REJECT_REASONS = {r.value: r.name for r in wire.RejectReason}


class MRCH(_ByOpcode):
    """MetaRoCE connection handshake header, 36 bytes (MR-WIRE-078); the key-exchange block
    (MR-WIRE-079) follows as Raw."""
    name = "MRCH"
    fields_desc = _fields("mrch", hex={"reserved1", "reserved2", "reserved3", "reserved4", "nonce"},
                          kinds={"reason": lambda n, d, w: ByteEnumField(n, d, _REJECT_REASONS)})


_LAYER_OF = {"reth": RETH, "aeth": AETH, "imm": ImmDt, "atomicack": AtomicAckETH, "atomiceth": AtomicETH,
             "cnp": CNPPadding, "mrdh": MRDH, "mrsh": MRSH, "mrah": MRAH, "mrnh": MRNH,
             "mrsec": MRSEC, "mrch": MRCH}
_NAME_OF = {v: k for k, v in _LAYER_OF.items()}


def pad_payload(data):
    """``(padcount, data + pad)``: the BTH PadCnt and the padded payload (MR-WIRE-080)."""
    n = (-len(data)) % 4
    return n, bytes(data) + bytes(n)


def _bind():
    # The first header after the BTH for every opcode (MR-WIRE-052); scapy itself binds only
    # AETH after the ACK opcodes and the CNP padding.
    for op, names in wire.HEADERS.items():
        if names:
            bind_layers(BTH, _LAYER_OF[names[0]], opcode=int(op))
    # Name the manufacturer-range opcodes in BTH's enum, so show() prints MR_WRITE etc.
    enum = BTH.fields_desc[0]
    for op in wire.MR_OPS:
        enum.i2s[int(op)] = op.name
        enum.s2i[op.name] = int(op)


_bind()

__all__ = ["RETH", "ImmDt", "AtomicAckETH", "AtomicETH", "MRDH", "MRSH", "MRAH", "MRNH", "MRSEC", "MRCH",
           "pad_payload",
           "BTH", "AETH", "CNPPadding"]
