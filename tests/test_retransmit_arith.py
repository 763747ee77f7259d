"""The retransmit unit's arithmetic helpers (MR-TX-037): the add and subtract with their carries
and the SACK's top-bit encoder, against Python integers on random and edge operands in the
Amaranth simulator."""
import random

from amaranth.hdl import Module, Signal
from amaranth.sim import Simulator

from metaroce.hdl.retransmit import (_add, _behind_short, _carry, _sub, _sum_bit, _sum_is,
                                     _top_index)


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


def test_carry_free_terms_match_integers():
    """MR-TX-038: the carry of a + b + cin as a comparison, bit k of the sum without its
    carry chain, and a + b + cin == k without a carry chain, against Python integers."""
    rng = random.Random(7)
    for width in (6, 9, 15, 24):
        m = Module()
        a, b, k, cin = Signal(width), Signal(width), Signal(width), Signal()
        carry = _carry(a, b, width, cin)
        carry0, carry1 = _carry(a, b, width, 0), _carry(a, b, width, 1)
        msb = _sum_bit(a, b, width - 1, cin)
        is_k = _sum_is(a, b, k, width, cin)
        top = (1 << width) - 1
        cases = [(0, 0, 0), (top, 1, 0), (top, top, top - 1), (1, top, 0), (5, 7, 12)]
        cases += [(rng.getrandbits(width), rng.getrandbits(width), rng.getrandbits(width))
                  for _ in range(200)]
        # k equal to the sum half of the time, so both answers of _sum_is are exercised
        cases += [(x, y, (x + y + (i & 1)) & top) for i, (x, y, _) in enumerate(cases)]

        async def check(ctx, cases=cases, width=width, a=a, b=b, k=k, cin=cin, carry=carry,
                        carry0=carry0, carry1=carry1, msb=msb, is_k=is_k):
            for x, y, z in cases:
                for c in (0, 1):
                    ctx.set(a, x)
                    ctx.set(b, y)
                    ctx.set(k, z)
                    ctx.set(cin, c)
                    s = x + y + c
                    assert ctx.get(carry) == s >> width
                    assert ctx.get(carry0) == (x + y) >> width
                    assert ctx.get(carry1) == (x + y + 1) >> width
                    assert ctx.get(msb) == (s >> (width - 1)) & 1
                    assert ctx.get(is_k) == int(s % (1 << width) == z)
        _run(m, check)


def test_resolving_acks_terms_on_nine_bits():
    """MR-TX-067, MR-TX-037: for an ACK that resolves (0 < n <= next_psn - floor on a row with
    floor <= lost_upto <= next_psn <= floor + 256), "passes lost_upto" as the 9-bit sign of
    lost_upto - (floor + n) and "live records remain" as the 9-bit inequality of next_psn and
    floor + n equal n > lost_upto - floor and n != next_psn - floor, across the 24-bit wrap;
    on 8 bits the sign is wrong for some (the negative control)."""
    rng = random.Random(8)
    m = Module()
    lost, nf = Signal(24), Signal(24)
    moved9, moved8 = _behind_short(lost, nf, 9), _behind_short(lost, nf, 8)
    cases = [(f, lo, nx, n) for f in (0, (1 << 24) - 1, (1 << 24) - 200, 511, 512)
             for lo, nx, n in ((0, 1, 1), (0, 256, 256), (255, 256, 256), (256, 256, 256),
                               (0, 256, 1), (200, 256, 1), (128, 200, 129), (128, 200, 128))]
    for _ in range(600):
        nx = rng.randrange(1, 257)
        cases.append((rng.getrandbits(24), rng.randrange(nx + 1), nx, rng.randrange(1, nx + 1)))
    wrong8 = 0

    async def check(ctx):
        nonlocal wrong8
        for f, lo, nx, n in cases:
            ctx.set(lost, (f + lo) % (1 << 24))
            ctx.set(nf, (f + n) % (1 << 24))
            assert ctx.get(moved9) == int(n > lo), (f, lo, nx, n)
            wrong8 += ctx.get(moved8) != int(n > lo)
            next_lo9, nf_lo9 = (f + nx) % 512, (f + n) % 512
            assert (next_lo9 != nf_lo9) == (n != nx)
    _run(m, check)
    assert wrong8 > 0


def test_wide_counter_exact_every_cycle():
    """MR-TX-040, MR-HW-060: the counter in pieces (each piece's carry-in a register) equals a
    plain counter in every cycle, through every piece's wrap, for back-to-back increments,
    sparse ones and gaps (small widths and pieces, so every piece wraps several times)."""
    from metaroce.hdl.counters import wide_counter
    rng = random.Random(12)
    for nbits, chunk, cycles in ((8, 2, 1200), (10, 2, 3000), (12, 3, 9000), (12, 4, 9000)):
        m = Module()
        inc = Signal()
        count = wide_counter(m, "c", nbits, inc, chunk=chunk)

        async def check(ctx, inc=inc, count=count, nbits=nbits, cycles=cycles):
            want, total, density = 0, 0, 1.0
            for t in range(cycles):
                if t % 97 == 0:
                    density = rng.choice((1.0, 1.0, 0.95, 0.5, 0.1))
                bit = int(rng.random() < density)
                ctx.set(inc, bit)
                await ctx.tick()
                want, total = (want + bit) % (1 << nbits), total + bit
                assert ctx.get(count) == want, (nbits, chunk, t)
            assert total > 1 << nbits      # the top piece wrapped
        _run_clocked(m, check)


def _run_clocked(m, check):
    sim = Simulator(m)
    sim.add_clock(1e-6)

    async def bench(ctx):
        await check(ctx)
    sim.add_testbench(bench)
    sim.run()


def test_counter_bank_exact_every_cycle():
    """MR-TX-311, MR-TX-040: the counter bank (low pieces in registers, the upper pieces in one
    LUT RAM served by one shared increment in turn) equals plain counters in every cycle at every
    read address, with every counter counting at once (the pending carries of several counters
    waiting for the shared increment), at the boundary 2**piece == counters (a counter's next wrap
    on the edge that serves its last one) and sparse; the wrong forms (a served flag that drops
    a carry of the same edge; the value read without the pending flag) fail."""
    from metaroce.hdl.retransmit import _counter_bank
    from metaroce.tb.lockstep import wrong_form

    def run(bank, n, nbits, piece, cycles, seed):
        rng = random.Random(seed)
        m = Module()
        incs = [Signal(name=f"inc{i}") for i in range(n)]
        addr = Signal(range(n))
        value = Signal(nbits)
        m.d.comb += value.eq(bank(m, incs, addr, nbits, piece))
        bad = []

        async def check(ctx):
            want, density = [0] * n, 1.0
            for t in range(cycles):
                if t % 101 == 0:
                    density = rng.choice((1.0, 1.0, 0.9, 0.3))
                a = rng.randrange(n)
                ctx.set(addr, a)
                if ctx.get(value) != want[a]:
                    bad.append((t, a))
                    return
                bits = [int(rng.random() < density) for _ in range(n)]
                for i, b in enumerate(bits):
                    ctx.set(incs[i], b)
                await ctx.tick()
                want = [(w + b) % (1 << nbits) for w, b in zip(want, bits)]
            assert max(want) >= 1 << piece       # the low pieces wrapped
        _run_clocked(m, check)
        return bad

    for n, nbits, piece, cycles in ((16, 10, 4, 1500), (4, 9, 2, 1500), (16, 64, 8, 700)):
        assert run(_counter_bank, n, nbits, piece, cycles, 5) == [], (n, nbits, piece)
    wrongs = (("m.d.sync += pend.eq((pend & ~served) | wraps)", "m.d.sync += pend.eq((pend | wraps) & ~served)"),
              ("_piece_inc(rd_out.data, pend.bit_select(addr, 1), piece)", "rd_out.data"))
    for old, new in wrongs:
        bank = wrong_form("retransmit", old, new)._counter_bank
        assert run(bank, 16, 10, 4, 1500, 5), (old, new)


def test_cs_sum_forms_agree():
    """MR-TX-359, MR-TX-361: ``_cs_sum``'s two forms, the carry-select pieces (MR-TX-038 (3))
    and the plain add of the carry-chain form, give the same value in every cycle: the sum of the
    previous cycle's operands (and carry in) modulo 2^w, on edge and random operands at the
    unit's widths (the deadline's 32, the estimator's 24, 25 and 27 bits). The wrong forms (the
    carry-chain sum without its register; without its carry in) fail."""
    from metaroce.hdl.retransmit import _cs_sum
    from metaroce.tb.lockstep import wrong_form

    def run(cs_sum, width, carry_in, seed):
        rng = random.Random(seed)
        m = Module()
        a, b = Signal(width), Signal(width)
        outs = {form: cs_sum(m, a, b, width, f"s{form:d}", carry_in, carry_chain=form)
                for form in (False, True)}
        top = (1 << width) - 1
        cases = [(0, 0), (top, 1), (top, top), (1, top), (0, top), (1 << (width - 1), 1 << (width - 1))]
        cases += [(rng.getrandbits(width), rng.getrandbits(width)) for _ in range(60)]
        cases += [(x, top - x) for x in (rng.getrandbits(width) for _ in range(20))]   # carries
        bad = []

        async def check(ctx):
            prev = None
            for x, y in cases:
                ctx.set(a, x)
                ctx.set(b, y)
                await ctx.tick()
                ctx.set(a, x ^ top)       # the next operands: the value read is the last edge's
                ctx.set(b, y ^ 1)
                want = (x + y + carry_in) & top
                got = {form: ctx.get(v) for form, v in outs.items()}
                if got[False] != want or got[True] != want:
                    bad.append((x, y, got, want, prev))
                prev = (x, y)
        _run_clocked(m, check)
        return bad

    for width in (24, 25, 27, 32):
        for carry_in in (0, 1):
            assert run(_cs_sum, width, carry_in, width) == [], (width, carry_in)
    wrongs = (("m.d.sync += total.eq((a - ~b)[:width] if carry_in else (a + b)[:width])",
               "m.d.comb += total.eq((a - ~b)[:width] if carry_in else (a + b)[:width])"),
              ("m.d.sync += total.eq((a - ~b)[:width] if carry_in else (a + b)[:width])",
               "m.d.sync += total.eq((a + b)[:width])"))
    for (old, new), carry_in in zip(wrongs, (0, 1)):
        cs_sum = wrong_form("retransmit", old, new)._cs_sum
        assert run(cs_sum, 32, carry_in, 3), (new, carry_in)


def test_recent_forms_match_integers():
    """MR-TX-360, MR-TX-361: ``_recent`` (an age recent while now - t - 4 srtt < 0 modulo 2^32,
    MR-TX-203/204) in both forms, the carry-save step and one sign, and the carry-chain form
    (d = now - t; d's top bit xor d[:31] < 4 srtt), equals Python's integers on edge operands
    (d just below and at 4 srtt, 2^31 and 2^31 + 4 srtt; d's bits 26..30 set) and random ones.
    The wrong forms (the top bit's xor dropped; the compare without the zero test of d's bits
    26..30) fail."""
    from metaroce.hdl.retransmit import _recent
    from metaroce.tb.lockstep import wrong_form

    def run(recent, seed):
        rng = random.Random(seed)
        m = Module()
        now, t, srtt = Signal(32), Signal(32), Signal(24)
        outs = {form: Signal(name=f"r{form:d}") for form in (False, True)}
        for form, o in outs.items():
            m.d.comb += o.eq(recent(now, t, srtt, form))
        cases = []
        for _ in range(160):
            s = rng.choice((0, 1, (1 << 24) - 1, rng.getrandbits(24), rng.getrandbits(10)))
            d = rng.choice((4 * s - 1, 4 * s, 4 * s + 1, 1 << 31, (1 << 31) + 4 * s - 1,
                            (1 << 31) + 4 * s, (1 << 27) + rng.getrandbits(4), rng.getrandbits(32),
                            (rng.getrandbits(5) << 26) | rng.getrandbits(26), 0, (1 << 32) - 1))
            t_ = rng.getrandbits(32)
            cases.append(((t_ + d) % (1 << 32), t_, s))
        bad = []

        async def check(ctx):
            for x, y, s in cases:
                ctx.set(now, x)
                ctx.set(t, y)
                ctx.set(srtt, s)
                want = int((x - y - 4 * s) % (1 << 32) >= 1 << 31)
                got = {form: ctx.get(o) for form, o in outs.items()}
                if got[False] != want or got[True] != want:
                    bad.append((x, y, s, got, want))
        _run(m, check)
        return bad

    assert run(_recent, 7) == []
    wrongs = (("return d[tw - 1] ^ ((d[n + 2:tw - 1] == 0) & (d[2:n + 2] < srtt))",
               "return (d[n + 2:tw - 1] == 0) & (d[2:n + 2] < srtt)"),
              ("return d[tw - 1] ^ ((d[n + 2:tw - 1] == 0) & (d[2:n + 2] < srtt))",
               "return d[tw - 1] ^ (d[2:n + 2] < srtt)"))
    for old, new in wrongs:
        assert run(wrong_form("retransmit", old, new)._recent, 7), new
