"""The receiver's rate hint block (docs/spec/hw-engine.md sections 5q and 5r, MR-ENG-328..337,
MR-ENG-346..356): ``hdl.rx_hint.RxHint`` in its two forms in lockstep with
``models.rx_hint.RxHintModel`` / ``RxHintMemModel``, the memory form's model against the
flip-flop form's, and the models (and the RTL in lockstep) against the reference endpoint's
``_rate_hint`` on the same arrivals."""
import gc
import random
import warnings

import pytest
from amaranth.hdl import UnusedElaboratable

from metaroce.models import protocol as P
from metaroce.models import rx_hint_cases as hc
from metaroce.models.rx_hint import EPOCH_BITS, MEM_FROM, RxHintCycleModel, hint_form

#: MR-ENG-335: the directed runs' receiver: 10 Gb/s, a 2 us share interval, 1 KiB MTU
CFG = dict(line_mbps=10_000, share_ns=2_000, mtu=1024)


def test_fair_share_fx():
    """MR-ENG-329, MR-ENG-330, MR-ENG-331: the integer share equals the endpoint's float
    ``fair_share_mbps`` on a sweep of line rates, counts and CE fractions (0 differences), and
    the interval its ``_share_iv_of``."""
    from metaroce.models.endpoint import Endpoint
    r = random.Random(5)
    n_cmp = 0
    for line in (10_000, 25_000, 100_000, 400_000, 12_345, (1 << 19) - 1):
        for n in (0, 1, 2, 3, 7, 8, 63, 64):
            for pkts in [0, 1, 2, 3, 25, 100] + [r.randrange(1, 1 << 16) for _ in range(20)]:
                for ce in {0, pkts, pkts // 2, pkts // 3, r.randint(0, pkts)}:
                    f = ce / pkts if pkts else 0.0
                    assert P.fair_share_fx(line, n, ce, pkts) == P.fair_share_mbps(line * 1e6, n, f)
                    n_cmp += 1
    assert n_cmp > 3000
    assert P.fair_share_fx(10_000, 2, 1, 1) == 4600 and P.fair_share_fx(10_000, 1) == 0
    for line, mtu, share in ((10_000, 1024, 2_000), (25_000, 4096, 10_000), (100_000, 2048, 500)):
        ep = Endpoint(mtu=mtu, line_rate_bps=line * 1e6, base_rtt=share * 1e-9)
        assert [P.share_interval_fx(share, k, mtu, line) for k in range(70)] == [
            ep._share_iv_of(k) for k in range(70)]


def _rtl(conns, wrong=None, form=None):
    from metaroce.hdl.rx_hint import RxHint
    return RxHint(conns, wrong=wrong, form=form)


def test_rx_hint_lockstep_amaranth():
    """MR-ENG-334, MR-ENG-336: ``RxHint(4)`` against ``RxHintModel(4)`` on every output every
    cycle, 3,000 cycles of random arrivals (valid 2 in 5, CE, more due), ``now`` jumping by
    whole intervals now and then: 0 mismatches, hints computed for 2..4 senders. Negative
    controls: the RTL counting the current interval only, and without the drain term, against
    the right model mismatch on ``hint`` or ``senders``. MR-ENG-339: with ``line_mbps`` 0 the
    hint stays 0 (600 cycles, in lockstep). MR-ENG-364: the counts' and the hint operands'
    shorter paths change no cycle (this run and the memory form's, unchanged, pass)."""
    from metaroce.tb.lockstep import Mismatch, run_amaranth
    drv = hc.RandomLoop(4, n=3000, seed=7)
    model = RxHintCycleModel(4)
    core = run_amaranth(_rtl(4), model, drv)
    assert core.mismatches == 0 and drv.taken > 1000
    assert model.m.rollovers > 50 and model.m.stale > 3 and model.m.carried > 20
    assert drv.max_senders == 4 and len(drv.hints) >= 6 and 0 in drv.hints
    # MR-ENG-339: no capacity configured, no hint
    off = hc.RandomLoop(4, n=600, seed=8, line_mbps=0)
    assert run_amaranth(_rtl(4), RxHintCycleModel(4), off).mismatches == 0
    assert off.hints == {0} and off.max_senders >= 2
    for wrong in ("count", "drain"):
        with pytest.raises(Mismatch, match="hint|senders"):
            run_amaranth(_rtl(4, wrong), RxHintCycleModel(4), hc.RandomLoop(4, n=3000, seed=7))


def test_rx_hint_two_senders_endpoint():
    """MR-ENG-335, MR-ENG-336: two senders into one receiver (``two_senders``: A alone, then A
    and B with CE marks on A's packets, then B alone): the hint the model gives after every
    arrival equals the reference endpoint's ``_rate_hint`` on the same arrivals (0 differences;
    the endpoint's MR-CC-010 prediction and MR-CC-012 limited senders do not act), and it takes
    0, the half share 5,000 and the drained shares. Negative controls: the model with the
    current interval's count only, or without the drain term, differs from the endpoint. The
    RTL on the same trace: ``test_rx_hint_two_senders_rtl`` (slow). MR-ENG-350: the memory
    form's model gives the same hints."""
    tr = hc.two_senders()
    ref = hc.endpoint_hints(tr, 2, **CFG)
    assert not any(pred or lim for _, pred, lim in ref)
    want = [h for h, _, _ in ref]
    assert hc.model_hints(tr, 2, **CFG) == want
    assert hc.model_hints(tr, 2, form="memory", **CFG) == want        # MR-ENG-350
    assert {0, 5_000, 4_900, 4_800} <= set(want)
    for wrong in ("count", "drain"):
        assert hc.model_hints(tr, 2, wrong=wrong, **CFG) != want


@pytest.mark.slow
def test_rx_hint_two_senders_rtl():
    """MR-ENG-335: ``RxHint(2)`` in lockstep with its model on the two senders' trace (8 ns a
    cycle: 82 cycles a hint, arrivals at least 100 cycles apart): 0 mismatches, and the hint at
    its port before each arrival (and at the end) is the endpoint's after the one before."""
    from metaroce.tb.lockstep import run_amaranth
    tr = hc.two_senders()
    want = [h for h, _, _ in hc.endpoint_hints(tr, 2, **CFG)]
    drv = hc.TraceLoop(2, tr, ns_per_cycle=8, **CFG)
    core = run_amaranth(_rtl(2), RxHintCycleModel(2), drv)
    assert core.mismatches == 0 and drv.before[1:] + [drv.final] == want


def test_rx_hint_not_built_prediction():
    """MR-ENG-337, MR-ENG-345: eight senders from eight hosts starting together: the endpoint's hint counts
    the senders still arriving (MR-CC-010: below the block's at the incast's start), the
    block's counts those seen (the equal share of the senders counted, down to 1,250)."""
    cfg = dict(CFG, share_ns=10_000)
    tr = hc.incast_start(8)
    ref = hc.endpoint_hints(tr, 8, **cfg)
    got = hc.model_hints(tr, 8, **cfg)
    assert any(pred for _, pred, _ in ref)
    assert got[:8] == [P.fair_share_fx(10_000, k) for k in range(1, 9)]
    assert all(h >= e for (e, _, _), h in zip(ref, got)) and any(h > e for (e, _, _), h in zip(ref, got))


def test_rx_hint_forms():
    """MR-ENG-346: the form by size (flip-flops below ``MEM_FROM``), given or checked; the
    memory form's negative controls are its own. MR-ENG-356: the block ``rx_hint_4096`` (the
    one measured) is the memory form, ``rx_hint`` the flip-flop form."""
    from metaroce.hdl.board_top import _silence_unused
    from metaroce.hdl.rx_hint import RxHint, rx_hint_4096, rx_hint_small
    assert hint_form(MEM_FROM - 1) == "flops" and hint_form(MEM_FROM) == "memory"
    built = [rx_hint_4096(), rx_hint_small(), RxHint(4, form="memory"), RxHint(MEM_FROM, form="flops")]
    for blk in built:
        _silence_unused(blk)        # only their forms are read
    assert [b.form for b in built] == ["memory", "flops", "memory", "flops"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UnusedElaboratable)    # the refused blocks
        for bad in (dict(form="sram"), dict(wrong="forward"), dict(form="flops", wrong="epoch")):
            with pytest.raises(ValueError):
                RxHint(4, **bad)
            with pytest.raises(ValueError):
                RxHintCycleModel(4, **bad)
        gc.collect()
    assert type(RxHintCycleModel(MEM_FROM).m).__name__ == "RxHintMemModel"


def test_rx_hint_forms_agree():
    """MR-ENG-347..350, MR-ENG-352, MR-ENG-355: the memory form's model (its rows, interval
    numbers and counts) against the flip-flop form's on the same arrivals (``BurstLoop``: bursts of an arrival every cycle, the same
    connection back to back, connections idle for many intervals and back, intervals ended
    under load, stale ones; 3, 16 and 64 connections): its ``hint`` and ``senders`` in cycle
    t + 1 are the flip-flop form's in cycle t, every cycle (0 differences). Negative controls:
    without the forward, and with 2-bit interval numbers, they differ."""
    runs = []
    for conns, seed in ((3, 1), (16, 2), (64, 3)):
        drv = hc.BurstLoop(conns, n=4000, seed=seed)
        diff, ff, mem = hc.forms_compare(drv, conns)
        assert diff == [] and mem.rows and mem.ebits == EPOCH_BITS
        runs.append((drv, ff))
    assert all(drv.back_to_back > 300 and ff.rollovers > 15 and ff.stale and ff.carried > 50
               for drv, ff in runs)
    # MR-ENG-363: 58 senders and 21 hints at 64 connections with jobs of 40 cycles
    assert [drv.max_senders for drv, _ in runs] == [3, 8, 57] and len(runs[2][0].hints) > 15
    for wrong in ("forward", "epoch"):
        diff, _, _ = hc.forms_compare(hc.BurstLoop(16, n=4000, seed=2), 16, wrong)
        assert len(diff) > 10


def test_rx_hint_memory_lockstep_amaranth():
    """MR-ENG-350..353: ``RxHint(16, form="memory")`` against
    ``RxHintMemModel(16)`` on every output every cycle, 2,000 cycles of ``BurstLoop`` (arrivals
    every cycle in bursts, back to back on one connection, intervals ended under load): 0
    mismatches. Negative controls: the RTL without the forward, and with 2-bit interval numbers,
    against the right model mismatch on ``senders`` or ``hint``."""
    from metaroce.tb.lockstep import Mismatch, run_amaranth
    drv = hc.BurstLoop(16, n=2000, seed=3)
    model = RxHintCycleModel(16, form="memory")
    core = run_amaranth(_rtl(16, form="memory"), model, drv)
    assert core.mismatches == 0 and drv.taken > 600 and drv.back_to_back > 150
    assert model.m.rollovers > 30 and model.m.stale >= 2 and model.m.carried > 40
    assert drv.max_senders >= 12 and len(drv.hints) >= 9       # MR-ENG-363: 11 with jobs of 40 cycles
    for wrong in ("forward", "epoch"):
        with pytest.raises(Mismatch, match="hint|senders"):
            run_amaranth(_rtl(16, wrong, "memory"), RxHintCycleModel(16, form="memory"),
                         hc.BurstLoop(16, n=3000, seed=3))


@pytest.mark.slow
@pytest.mark.parametrize("form", ["flops", "memory"])
def test_rx_hint_burst_lockstep_small(form):
    """MR-ENG-353: ``RxHint(4)`` in either form against its model on ``BurstLoop`` (3,000
    cycles): 0 mismatches (the flip-flop form's model before MR-ENG-353 mismatched at cycle
    2,547 of this run: an interval's length written by the divider in the cycle of an arrival)."""
    from metaroce.tb.lockstep import run_amaranth
    drv = hc.BurstLoop(4, n=3000, seed=3)
    core = run_amaranth(_rtl(4, form=form), RxHintCycleModel(4, form=form), drv)
    assert core.mismatches == 0 and drv.back_to_back > 200


@pytest.mark.slow
def test_rx_hint_4096_lockstep_amaranth():
    """MR-ENG-350: the block ``rx_hint_4096`` (the memory form at 4,096 connections) against
    its model, 3,000 cycles of ``BurstLoop`` over 4,096 connections: 0 mismatches."""
    from metaroce.hdl.rx_hint import rx_hint_4096
    from metaroce.models.rx_hint import rx_hint_model_4096
    from metaroce.tb.lockstep import run_amaranth
    drv = hc.BurstLoop(4096, n=3000, seed=4, phase=600)
    core = run_amaranth(rx_hint_4096(), rx_hint_model_4096(), drv)
    assert core.mismatches == 0 and drv.back_to_back > 200 and drv.max_senders > 100


def _reset_run(wrong=None, conns=16, n=1500, at=(600, 1100), first=False):
    """MR-ENG-354: ``RxHint(conns, form="memory")`` on ``BurstLoop``, the domain's reset held
    one cycle at each cycle of ``at`` (the record of that cycle and the one counted in it
    lost), ``now`` starting again from 0 (the engine's clock reset with it); the model a new
    ``RxHintMemModel`` from the cycle after each; ``first``: the run stops at the first
    difference. Returns the cycles
    whose ``hint`` or ``senders`` differ from the model's and the models' senders at the resets."""
    from amaranth.hdl import ClockDomain, Module
    from amaranth.sim import Simulator

    from metaroce.models.rx import unpack
    from metaroce.models.rx_hint import RxHintMemModel
    dut = _rtl(conns, wrong, "memory")
    top = Module()
    top.domains.sync = cd = ClockDomain()
    top.submodules.dut = dut
    drv = hc.BurstLoop(conns, n=n, seed=5)
    diff, senders = [], []

    async def bench(ctx):
        model = RxHintMemModel(conns)
        while not drv.finished:
            inp = drv.inputs()
            r = unpack(drv.lay, inp["s_seen__payload"])
            ctx.set(dut.s_seen.valid, inp["s_seen__valid"])
            ctx.set(dut.s_seen.payload.as_value(), inp["s_seen__payload"])
            for k in ("now", "line_mbps", "share_ns", "mtu"):
                ctx.set(getattr(dut, k), inp[k])
            ctx.set(cd.rst, drv.cycle in at)
            out = (model.hint, model.senders())
            if (ctx.get(dut.hint), ctx.get(dut.senders)) != out:
                diff.append(drv.cycle)
                if first:
                    return
            if drv.cycle in at:
                senders.append(out[1])
                model = RxHintMemModel(conns)
                drv.now = 0         # the engine's clock is reset with it
            else:
                model.step(inp["s_seen__valid"], r["conn"], r["ce"], r["more"], inp["now"],
                           inp["line_mbps"], inp["share_ns"], inp["mtu"])
            drv.observe(inp, {"hint": out[0], "senders": out[1]})
            await ctx.tick()

    sim = Simulator(top)
    sim.add_clock(1e-8)
    sim.add_testbench(bench)
    sim.run()
    return diff, senders


def test_rx_hint_memory_reset():
    """MR-ENG-354: the memory form reset twice after traffic (senders counted at each reset)
    is a new block from the cycle after: 0 differences from a new model on every output every
    cycle. Negative control: the interval number kept through the reset as the rows are (the
    senders of the interval before the reset read as seen, not counted) differs."""
    diff, senders = _reset_run()
    assert diff == [] and min(senders) >= 2
    bad, _ = _reset_run("reset", first=True)
    assert bad and bad[0] > 600


def test_rx_hint_job_cycles():
    """MR-ENG-363: two senders' first arrivals in cycles 0 and 1: the hint job for the first
    starts in cycle 1 (N = 1), the one for both when it ends; the half share is at the port
    3 + 2 x JOB_CYCLES = 87 cycles after the first (the memory form one later, MR-ENG-349);
    with MR-ENG-333's 40-cycle jobs it was 83."""
    from metaroce.models.rx_hint import JOB_CYCLES, RxHintMemModel, RxHintModel
    assert JOB_CYCLES == 42
    for cls, late in ((RxHintModel, 0), (RxHintMemModel, 1)):
        m, t = cls(2), 0
        while m.hint == 0 and t < 500:
            m.step(int(t < 2), t, 0, 1, 10 + t, 10_000, 300, 64)
            t += 1
        assert (t, m.hint) == (3 + 2 * JOB_CYCLES + late, 5_000)
