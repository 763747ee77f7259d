"""The RX's ring rotator in multipliers (MR-RX-298, MR-RX-299): each form of hdl/rx.py's
rotator (``ROT_DSP`` 0, 1, 2) turns the 256-bit ring (MR-RX-310, MR-RX-313) right by every amount 0..255, checked bit
for bit against Python's rotate in the Amaranth simulator; a wrong join of the multipliers'
halves must fail the same check (negative control). The RX's locksteps (test_rx_amaranth.py,
test_rx_rtl.py) run the default form inside the RX."""

import random

import pytest
from amaranth.hdl import Cat, Const, Module, Signal
from amaranth.sim import Simulator

import metaroce.hdl.rx as hdl_rx
from metaroce.models.rx import RING_BITS


def _rotator_mismatches(form):
    """The amounts (0..RING_BITS - 1) at which ``hdl_rx``'s rotator in form ``form`` differs from
    a right rotate, a random ring for each."""
    m = Module()
    ring, amount, out = Signal(RING_BITS), Signal(hdl_rx.RING_LOG2), Signal(RING_BITS)
    if form:
        m.d.comb += out.eq(hdl_rx._rotate_right_dsp(m, ring, amount, name="t"))
    else:
        m.d.comb += out.eq(hdl_rx._rotate(m, ring, amount, left=False, name="t"))
    bad = []
    mask = (1 << RING_BITS) - 1

    async def bench(ctx):
        rnd = random.Random(form)
        for s in range(RING_BITS):
            x = rnd.getrandbits(RING_BITS)
            ctx.set(amount, s)
            ctx.set(ring, x)
            if ctx.get(out) != ((x >> s) | (x << (RING_BITS - s))) & mask:
                bad.append(s)

    sim = Simulator(m)
    sim.add_testbench(bench)
    sim.run()
    return bad


@pytest.mark.parametrize("form", [0, 1, 2])
def test_ring_rotator_forms(form, monkeypatch):
    """MR-RX-298, MR-RX-299, MR-RX-313: the rotator with no, four and eight of its stages in multipliers is
    the same right rotate for every amount."""
    monkeypatch.setattr(hdl_rx, "ROT_DSP", form)
    assert _rotator_mismatches(form) == []


def _join_without_carry_in(m, value, amount, name):
    """A wrong form of ``_rotr_chunks_mul``: each chunk's product's high half alone, the bits
    the next chunk brings in dropped."""
    c = hdl_rx.ROT_DSP_CHUNK
    scale = Signal(c + 1, name=f"{name}_scale")
    m.d.comb += scale.eq(Const(1 << c, c + 1) >> amount)
    return Cat(*[(value[c * i:c * i + c] * scale)[c:2 * c] for i in range(len(value) // c)])


@pytest.mark.parametrize("form", [1, 2])
def test_ring_rotator_catches_wrong_join(form, monkeypatch):
    """MR-RX-299 (negative control): with the next chunk's low half left out of the join, the
    check above fails (at amount 1, among others: a turn by one needs the next chunk's bit 0)."""
    monkeypatch.setattr(hdl_rx, "ROT_DSP", form)
    monkeypatch.setattr(hdl_rx, "_rotr_chunks_mul", _join_without_carry_in)
    bad = _rotator_mismatches(form)
    assert 1 in bad
