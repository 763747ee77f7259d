"""The receiver's rate hint block (docs/spec/hw-engine.md section 5q, MR-ENG-328..337):
``hdl.rx_hint.RxHint`` in lockstep with ``models.rx_hint.RxHintModel``, and the model (and the
RTL in lockstep) against the reference endpoint's ``_rate_hint`` on the same arrivals."""
import random

import pytest

from metaroce.models import protocol as P
from metaroce.models import rx_hint_cases as hc
from metaroce.models.rx_hint import RxHintCycleModel

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


def _rtl(conns, wrong=None):
    from metaroce.hdl.rx_hint import RxHint
    return RxHint(conns, wrong=wrong)


def test_rx_hint_lockstep_amaranth():
    """MR-ENG-334, MR-ENG-336: ``RxHint(4)`` against ``RxHintModel(4)`` on every output every
    cycle, 3,000 cycles of random arrivals (valid 2 in 5, CE, more due), ``now`` jumping by
    whole intervals now and then: 0 mismatches, hints computed for 2..4 senders. Negative
    controls: the RTL counting the current interval only, and without the drain term, against
    the right model mismatch on ``hint`` or ``senders``. MR-ENG-339: with ``line_mbps`` 0 the
    hint stays 0 (600 cycles, in lockstep)."""
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
    RTL on the same trace: ``test_rx_hint_two_senders_rtl`` (slow)."""
    tr = hc.two_senders()
    ref = hc.endpoint_hints(tr, 2, **CFG)
    assert not any(pred or lim for _, pred, lim in ref)
    want = [h for h, _, _ in ref]
    assert hc.model_hints(tr, 2, **CFG) == want
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
