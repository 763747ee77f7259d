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

Field names are those of :mod:`metaroce.models.codec` and of ``metaroce decode --json``.
"""
from scapy.contrib.roce import AETH, BTH, CNPPadding
from scapy.fields import (BitField, ByteEnumField, ByteField, FlagsField, IntField,
                          ShortField, XByteField, XIntField, XLongField)
from scapy.packet import Packet, Raw, bind_layers

from . import wire
from .wire import Op


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
    fields_desc = [XLongField("va", 0), XIntField("rkey", 0), IntField("dma_len", 0)]


class ImmDt(_ByOpcode):
    """Immediate data, 4 bytes (MR-WIRE-062)."""
    name = "ImmDt"
    fields_desc = [XIntField("imm", 0)]


class AtomicAckETH(_ByOpcode):
    """Atomic acknowledge extended transport header, 8 bytes (MR-WIRE-063).

    Build it after scapy's AETH; on dissection scapy's AETH leaves it as Raw.
    """
    name = "AtomicAckETH"
    fields_desc = [XLongField("orig", 0)]


_MRDH_FLAGS = ["LAST", "RETX", "FIRST", "RSVD3"]
_MRAH_FLAGS = ["ECE", "NAK_PRESENT", "RSVD2", "RSVD3"]
_NAK_REASONS = {r.value: r.name for r in wire.NakReason}


class MRDH(_ByOpcode):
    """MetaRoCE data header, 16 bytes (MR-WIRE-071)."""
    name = "MRDH"
    fields_desc = [
        BitField("version", wire.MR_VERSION, 4),
        FlagsField("flags", 0, 4, _MRDH_FLAGS),
        ByteField("path", 0),
        ShortField("stream", 0),
        IntField("msg", 0),
        IntField("offset", 0),
        IntField("msg_len", 0),
    ]


class MRSH(_ByOpcode):
    """MetaRoCE send header: the receive match, 4 bytes (MR-WIRE-072)."""
    name = "MRSH"
    fields_desc = [IntField("recv_seq", 0)]


class MRAH(_ByOpcode):
    """MetaRoCE ACK header with the 256-bit SACK bitvector, 48 bytes (MR-WIRE-073)."""
    name = "MRAH"
    fields_desc = [
        BitField("version", wire.MR_VERSION, 4),
        FlagsField("flags", 0, 4, _MRAH_FLAGS),
        ByteField("path", 0),
        ShortField("ce_count", 0),
        IntField("cum_psn", 0),
        IntField("rate_mbps", 0),
        IntField("trigger_psn", 0),
        # bit i set: PSN (cum_psn + 1 + i) mod 2^24 has arrived; big-endian on the wire.
        BitField("sack", 0, wire.SACK_BITS),
    ]


class MRNH(_ByOpcode):
    """MetaRoCE NAK header, 8 bytes (MR-WIRE-074)."""
    name = "MRNH"
    fields_desc = [
        BitField("version", wire.MR_VERSION, 4),
        BitField("flags", 0, 4),
        ByteField("path", 0),
        ByteEnumField("reason", 0, _NAK_REASONS),
        XByteField("reserved", 0),
        IntField("psn", 0),
    ]


_LAYER_OF = {"reth": RETH, "aeth": AETH, "imm": ImmDt, "atomicack": AtomicAckETH,
             "cnp": CNPPadding, "mrdh": MRDH, "mrsh": MRSH, "mrah": MRAH, "mrnh": MRNH}
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

__all__ = ["RETH", "ImmDt", "AtomicAckETH", "MRDH", "MRSH", "MRAH", "MRNH", "pad_payload",
           "BTH", "AETH", "CNPPadding"]
