"""The ICRC lane fill of the 256/512-bit checker (MR-HW-040, MR-HW-042, MR-HW-044)."""
import random

import pytest

from metaroce.hdl import icrc as icrc_hw
from metaroce.models import icrc as icrc_model
from metaroce.models import parser_cases as pc
from test_parser_model import scapy_cases


@pytest.mark.parametrize("width", [256, 512])
def test_lane_fill_reproduces_icrc_feed(width):
    """MR-HW-044: feeding every good frame with its class's forced positions loaded with
    lane_fill, and the tail bytes of the last fed beat with tail_fill, ends at
    residue_table(B, tail_fill(B)); a corrupted frame does not. Independent of the forcing
    derivation: the standard feed comes from models/icrc.py."""
    B = width // 8
    fill = icrc_hw.lane_fill(B)
    assert icrc_hw.tail_fill(B) == fill
    table = icrc_hw.residue_table(B, icrc_hw.tail_fill(B))
    rng = random.Random(3)
    for c in pc.valid_cases() + scapy_cases(10):
        b = c.data
        vlan = int(b[12:14] == b"\x81\x00")
        l3 = 14 + 4 * vlan
        ipv6 = int(b[l3] >> 4 == 6)
        ipl = (int.from_bytes(b[l3 + 4:l3 + 6], "big") if ipv6
               else int.from_bytes(b[l3 + 2:l3 + 4], "big") - 20)
        l4_end = l3 + (40 if ipv6 else 20) + ipl
        std = (bytes(l3 - 4) + b"\xff" * 4 + icrc_model.mask_variant_fields(b[l3:l4_end - 4])
               + b[l4_end - 4:l4_end])
        forced = icrc_hw.forced_positions(vlan, ipv6)
        hw = bytearray(fill[p % B] if p in forced else b[p] for p in range(l4_end))
        n = -l4_end % B
        tail = bytes(fill[B - n:])
        assert icrc_hw.raw_crc(bytes(hw) + tail) == table[n], c.name
        assert icrc_hw.raw_crc(std + bytes(n)) == icrc_hw.residue_table(B)[n], c.name
        # A flipped bit anywhere outside the forced positions is caught.
        free = [p for p in range(l4_end) if p not in forced]
        p = rng.choice(free)
        hw[p] ^= 1 << rng.randrange(8)
        assert icrc_hw.raw_crc(bytes(hw) + tail) != table[n], c.name
