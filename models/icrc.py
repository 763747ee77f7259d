"""Invariant CRC (MR-WIRE-090..093): the one software definition of the RoCEv2 ICRC.

The RTL ICRC checker and the cycle models are compared against :func:`icrc`.
"""
import zlib

from .wire import BTH_LEN, IPV4_HLEN, IPV6_HLEN, UDP_HLEN

#: MR-WIRE-091: eight bytes of ones stand for the masked InfiniBand LRH.
LRH_ONES = b"\xff" * 8
#: CRC-32 register state after the eight bytes of ones; hardware seeds with it.
SEED_AFTER_LRH = zlib.crc32(LRH_ONES)


def mask_variant_fields(l3):
    """Return ``l3`` (IP header onward) with the variant fields set to ones (MR-WIRE-092).

    IPv4: TOS, TTL, header checksum. IPv6: traffic class, flow label, hop limit.
    Both: UDP checksum and BTH byte 4 (FECN, BECN, reserved).
    """
    b = bytearray(l3)
    version = b[0] >> 4
    if version == 4:
        b[1] = 0xFF
        b[8] = 0xFF
        b[10:12] = b"\xff\xff"
        ip_len = IPV4_HLEN
    elif version == 6:
        b[0] |= 0x0F
        b[1:4] = b"\xff\xff\xff"
        b[7] = 0xFF
        ip_len = IPV6_HLEN
    else:
        raise ValueError(f"IP version {version} is neither 4 nor 6")
    if len(b) < ip_len + UDP_HLEN + BTH_LEN:
        raise ValueError("too short to hold IP, UDP and BTH headers")
    b[ip_len + 6:ip_len + 8] = b"\xff\xff"
    b[ip_len + UDP_HLEN + 4] = 0xFF
    return bytes(b)


def icrc(l3):
    """ICRC over ``l3``: IP header through the last payload/pad byte, without the ICRC.

    Returns the 32-bit value whose little-endian bytes are placed on the wire (MR-WIRE-093).
    """
    if len(l3) < IPV4_HLEN + UDP_HLEN + BTH_LEN:
        raise ValueError("too short to hold IP, UDP and BTH headers")
    return zlib.crc32(mask_variant_fields(l3), SEED_AFTER_LRH) & 0xFFFFFFFF


def icrc_bytes(l3):
    """The four ICRC bytes as they appear on the wire (MR-WIRE-093)."""
    return icrc(l3).to_bytes(4, "little")
