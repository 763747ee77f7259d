"""The cycle model's fast verdict against the reference verdict (MR-HW-010, MR-HW-020).

:func:`metaroce.models.parser.fast_verdict` judges frames straight from their bytes (the
lockstep runs judge every frame); :func:`metaroce.models.parser.verdict` is the reference
(codec decode, Frame, packing).  They must agree on the reason and on every bit of the meta
record for any bytes: here on random frames of every opcode and layout, on single and double
header mutations with the IPv4 checksum and the ICRC made right again (so that each later
check is reached), on truncations, extensions and MAC errors.
"""
import random

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from metaroce.models import parser as mp
from metaroce.models import parser_cases as pc
from metaroce.models import wire
from metaroce.models.wire import Op, Reason


def _mutants(data, rng):
    """``data`` with 1-2 header bytes changed, checksums fixed so that deeper checks run."""
    d = bytearray(data)
    hdr_end = min(len(d), pc._bth_offset(data) + 12 + 48)
    for _ in range(rng.randint(1, 2)):
        i = rng.randrange(hdr_end)
        d[i] = rng.choice([rng.getrandbits(8), d[i] ^ (1 << rng.randrange(8))])
    off = pc._l3_offset(d)
    if len(d) >= off + 20 and d[off] == 0x45:
        pc._fix_ipv4_checksum(d, off)
    if rng.random() < 0.8:
        try:
            pc._fix_icrc(d)
        except Exception:
            pass            # the mutation made the ICRC's place unfindable: judge it as it is
    return bytes(d)


def _same(data, mac_error=False, oversize=False):
    want = mp.verdict(data, mac_error, oversize)[:2]
    got = mp.fast_verdict(data, mac_error, oversize)
    assert got == want, (data.hex(), Reason(want[0]).label, Reason(got[0]).label,
                         mp.ParserModel.meta_to_dict(got[1]), mp.ParserModel.meta_to_dict(want[1]))
    return want[0]


@pytest.fixture
def fallbacks(monkeypatch):
    """Counts the frames fast_verdict hands to the reference."""
    calls = []
    real = mp._reference

    def counting(data, mac_error, oversize):
        calls.append(data)
        return real(data, mac_error, oversize)
    monkeypatch.setattr(mp, "_reference", counting)
    return calls


def test_every_layout_judged_fast(fallbacks):
    """MR-HW-010, MR-HW-020: every opcode, IPv4/IPv6, with and without VLAN, random fields
    and payload sizes: the same reason and meta record as the reference, and every accepted
    frame judged without it (the fast path is the one the lockstep model runs)."""
    rng = random.Random(7)
    for op in Op:
        for ipv6 in (False, True):
            for vlan in (False, True):
                plen = rng.choice([0, 1, 3, 4, 61, 300]) if op in wire.PAYLOAD_OPS else 0
                data = pc.random_valid(rng, op, ipv6=ipv6, vlan=vlan, plen=plen)
                assert _same(data) == Reason.NONE
                assert _same(pc.pad_eth(data) + bytes(rng.randrange(5))) == Reason.NONE
    assert not fallbacks


def test_random_and_mutated_frames_agree(fallbacks):
    """MR-HW-020: the parser suite's random and mutated frames (truncated, extended, bit
    flips, bad ICRC, MAC errors) and header mutations with fixed checksums: fast verdict ==
    reference, for accepted frames and every drop reason."""
    rng = random.Random(11)
    reasons = set()
    for case in pc.suite(300, 300, seed=3):
        reasons.add(_same(case.data, case.mac_error))
        reasons.add(_same(case.data, False, True))
    for _ in range(3000):
        reasons.add(_same(_mutants(pc.random_frame(rng), rng)))
    assert reasons == set(Reason), sorted(set(Reason) - reasons)
    assert fallbacks        # drops went to the reference; the accepted ones (above) did not


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(0, 2**32 - 1), st.integers(0, 3), st.binary(max_size=8))
def test_fast_verdict_hypothesis(seed, how, tail):
    """MR-HW-010, MR-HW-020: random frames, mutated (header bytes with checksums fixed,
    truncated, or extended by ``tail``): the fast verdict is the reference's, bit for bit."""
    rng = random.Random(seed)
    data = pc.random_frame(rng)
    if how == 1:
        data = _mutants(data, rng)
    elif how == 2:
        data = data[:rng.randrange(len(data) + 1)]
    elif how == 3:
        data = data + tail
    _same(data)
    _same(data, mac_error=True)
