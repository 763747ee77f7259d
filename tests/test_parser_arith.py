"""The parser's carry-free arithmetic (hdl/parser.py), simulated against Python integers:
the counters in pieces (MR-HW-060) and the carry-free sum compare of the IPv4 checksum
(MR-WIRE-023)."""
import random

from amaranth.hdl import ClockDomain, Module, Signal
from amaranth.sim import Simulator

from metaroce.hdl.counters import counter_ram
from metaroce.hdl.counters import wide_counter
from metaroce.hdl.parser import _sum_is


def test_counter_in_pieces_counts_and_wraps():
    """MR-HW-060: a counter in pieces reads exactly the number of increments, every cycle,
    across piece boundaries and through the wrap (small pieces, so both happen quickly)."""
    m = Module()
    inc = Signal()
    count = wide_counter(m, "count", 10, inc, chunk=3)
    rng = random.Random(1)

    async def bench(ctx):
        total = 0
        for _ in range(3000):
            x = rng.random() < 0.7
            ctx.set(inc, x)
            assert ctx.get(count) == total % 1024
            await ctx.tick()
            total += x
        assert total > 1024                     # it wrapped

    sim = Simulator(m)
    sim.add_clock(1e-8)
    sim.add_testbench(bench)
    sim.run()


def _run_counter_ram(counter_ram, rows, nbits, piece, cycles, seed):
    """Counters of ``counter_ram`` against Python integers every cycle at a random read address:
    one random counter (or none) incremented a cycle, runs of one counter, and resets. Returns the
    first (cycle, address) that differs, or None."""
    rng = random.Random(seed)
    m = Module()
    m.domains.sync = cd = ClockDomain()
    inc, idx, addr = Signal(), Signal(range(rows)), Signal(range(rows))
    value = Signal(nbits)
    m.d.comb += value.eq(counter_ram(m, inc, idx, addr, rows, nbits, piece))
    bad, wraps = [], [0]

    async def bench(ctx):
        want, hot = [0] * rows, 0
        for t in range(cycles):
            a = rng.randrange(rows)
            ctx.set(addr, a)
            if ctx.get(value) != want[a]:
                bad.append((t, a))
                return
            if t % 97 == 0:
                hot = rng.randrange(rows)
            x = rng.random() < 0.8
            i = hot if rng.random() < 0.8 else rng.randrange(rows)
            ctx.set(inc, x)
            ctx.set(idx, i)
            if t % 1009 == 1008:                # a reset clears every counter
                ctx.set(cd.rst, 1)
                await ctx.tick()
                ctx.set(cd.rst, 0)
                want = [0] * rows
                continue
            await ctx.tick()
            if x:
                wraps[0] += want[i] == (1 << nbits) - 1
                want[i] = (want[i] + 1) % (1 << nbits)

    sim = Simulator(m)
    sim.add_clock(1e-8)
    sim.add_testbench(bench)
    sim.run()
    assert bad or wraps[0] or nbits > 16         # the small counters wrapped
    return bad[0] if bad else None


def test_counter_ram_exact_every_cycle():
    """MR-HW-100, MR-HW-103, MR-HW-104: the counters in LUT RAM (hdl/counters.py: a
    read-modify-write of one row a cycle, in pieces whose carries are flags set at the row's
    previous increment; 8-bit pieces as the parser and the RX take them too) equal plain
    counters in every cycle at
    every read address, across piece boundaries, through the wrap and after resets (small pieces,
    so all happen quickly); wrong forms fail: a piece's carry flag from the pieces below all ones
    (one increment late), the zero flag not read after a reset, the carry flags set from the
    row the LUT RAM kept through a reset, the registered tests not forwarded to an increment of
    the same row in the next cycle."""
    from metaroce.tb.lockstep import wrong_form
    for rows, nbits, piece in ((16, 6, 2), (4, 7, 3), (16, 64, 16), (16, 20, 8)):
        assert _run_counter_ram(counter_ram, rows, nbits, piece, 4000, 5) is None, (rows, nbits, piece)
    wrongs = (("low_ones_next = pieces[0] == (1 << len(pieces[0])) - 2", "low_ones_next = pieces[0].all()"),
              ("return Mux(zero.bit_select(addr, 1), 0, rd_out.data)", "return rd_out.data"),
              ("set_val.eq(Cat(*(~zero_row & low_ones_next", "set_val.eq(Cat(*(low_ones_next"),
              ("same = set_en & (set_idx == idx)", "same = 0"))
    for old, new in wrongs:
        bad = wrong_form("counters", old, new).counter_ram
        assert _run_counter_ram(bad, 16, 6, 2, 4000, 5) is not None, (old, new)


def test_sum_compare_without_carry():
    """MR-WIRE-023: ``_sum_is(a, b, c, n)`` is ``(a + b) % 2**n == c``, for the checksum's
    operands (256 sum_hi, sum_lo) and its candidates (multiples of 0xFFFF), and at random."""
    m = Module()
    a, b = Signal(20), Signal(12)
    consts = [n * 0xFFFF for n in range(1, 10)]
    flags = [Signal(name=f"is{i}") for i in range(len(consts))]
    m.d.comb += [f.eq(_sum_is(a, b, c, 20))
                 for f, c in zip(flags, consts)]
    rng = random.Random(2)
    pairs = [(c - lo, lo) for c in consts for lo in (0, 1, 0xFF, 0x7FF, 0xFFF) if c >= lo]
    pairs += [(rng.getrandbits(20), rng.getrandbits(12)) for _ in range(400)]

    async def bench(ctx):
        for va, vb in pairs:
            ctx.set(a, va)
            ctx.set(b, vb)
            for f, c in zip(flags, consts):
                assert ctx.get(f) == ((va + vb) % (1 << 20) == c), (va, vb, c)

    sim = Simulator(m)
    sim.add_testbench(bench)
    sim.run()


def test_parser_structure():
    """MR-HW-004: the parser is wiring.Components joined by streams; AXI4-Stream only at the
    boundary; the ICRC units are components."""
    from amaranth.lib import stream, wiring

    from metaroce.hdl import icrc as icrc_hw
    from metaroce.hdl import parser as hp

    p = hp.params(64)
    blocks = {"front": hp.Front(64, p), "verdicts": hp.VerdictPipeline(64, p),
              "meta": hp.MetaOutput(), "reader": hp.Reader(64, p)}
    axis = {"tdata", "tkeep", "tvalid", "tready", "tlast"}
    for name, blk in blocks.items():
        assert isinstance(blk, wiring.Component), name
        for port, member in blk.signature.members.items():
            if not member.is_signature:
                continue
            names = set(member.signature.members.keys())
            if names >= axis:             # AXI4-Stream: only the parser's own ports
                assert (name, port) in {("front", "s_axis"), ("reader", "payload"),
                                        ("reader", "bypass")}, (name, port)
    internal = [("front", "facts", "verdicts", "i"), ("front", "fields", "meta", "fields"),
                ("verdicts", "verdict", "meta", "verdict"),
                ("verdicts", "record", "reader", "record")]
    for src, out, dst, inp in internal:
        sig = blocks[src].signature.members[out].signature
        assert isinstance(sig, stream.Signature), (src, out)
        assert blocks[dst].signature.members[inp].signature == sig.flip(), (dst, inp)
    assert isinstance(icrc_hw.IcrcChecker(64), wiring.Component)
    assert isinstance(icrc_hw.IcrcProcessor(64), wiring.Component)
    assert isinstance(icrc_hw.IcrcChecker(64).signature.members["i"].signature, stream.Signature)


def test_parser_meta_joins_the_rx_engine():
    """MR-HW-004, MR-RX-001: the parser's ``m_meta`` is a ``lib.stream`` of META_LAYOUT records, the
    signature the RX engine's ``s_meta`` flips: the two blocks join with ``wiring.connect``."""
    from amaranth.hdl import Module
    from amaranth.lib import stream, wiring

    from metaroce.hdl.parser import Parser
    from metaroce.hdl.rx import Rx
    from metaroce.models.parser import META_LAYOUT
    parser, rx = Parser(64), Rx(64, conns=256, paths=4, keys=64)
    assert parser.signature.members["m_meta"].signature == stream.Signature(META_LAYOUT)
    m = Module()
    m.submodules.parser, m.submodules.rx = parser, rx
    wiring.connect(m, parser.m_meta, rx.s_meta)
