"""The retransmit unit's arithmetic helpers (MR-TX-037): the add and subtract with their carries
and the SACK's top-bit encoder, against Python integers on random and edge operands in the
Amaranth simulator."""
import random

from amaranth.hdl import Module, Signal
from amaranth.sim import Simulator

from metaroce.hdl.retransmit import _add, _sub, _top_index


def _run(m, check):
    sim = Simulator(m)

    async def bench(ctx):
        await check(ctx)
    sim.add_testbench(bench)
    sim.run()


def test_add_and_sub_match_integers():
    """MR-TX-037: (a + b + cin) mod 2^w with its carry, (a - b) mod 2^w with a >= b."""
    rng = random.Random(5)
    for width in (9, 22, 24, 32):
        m = Module()
        a, b, cin = Signal(width), Signal(width), Signal()
        total, cout = _add(m, a, b, width, "t", carry_in=cin)
        diff, ge = _sub(m, a, b, width, "d")
        top = (1 << width) - 1
        cases = [(0, 0), (top, 1), (top, top), (1, top), (1 << (width - 1), 1 << (width - 1))]
        cases += [(rng.getrandbits(width), rng.getrandbits(width)) for _ in range(300)]

        async def check(ctx, cases=cases, width=width, a=a, b=b, cin=cin, total=total,
                        cout=cout, diff=diff, ge=ge):
            for x, y in cases:
                for c in (0, 1):
                    ctx.set(a, x)
                    ctx.set(b, y)
                    ctx.set(cin, c)
                    s = x + y + c
                    assert ctx.get(total) == s % (1 << width)
                    assert ctx.get(cout) == s >> width
                    assert ctx.get(diff) == (x - y) % (1 << width)
                    assert ctx.get(ge) == int(x >= y)
        _run(m, check)


def test_top_index_is_the_bit_length_minus_one():
    """MR-TX-037: the SACK's highest set bit (its bit length - 1) and whether any is set."""
    rng = random.Random(6)
    m = Module()
    sack = Signal(256)
    any_set, idx = _top_index(m, sack, "top")
    cases = [0, 1, 1 << 255, (1 << 256) - 1] + [1 << rng.randrange(256) for _ in range(50)]
    cases += [rng.getrandbits(rng.randrange(1, 257)) for _ in range(200)]

    async def check(ctx):
        for v in cases:
            ctx.set(sack, v)
            assert ctx.get(any_set) == int(v != 0)
            if v:
                assert ctx.get(idx) == v.bit_length() - 1
    _run(m, check)
