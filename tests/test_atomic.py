"""The atomic executor alone (docs/spec/hw-engine.md section 5d): its model against the oracle,
the RTL in lockstep with the model (Amaranth), negative controls (MR-ENG-166)."""
import pytest

from metaroce.hdl.atomic import AtomicExec
from metaroce.models import atomic_cases as ac
from metaroce.models.atomic import AtomicExecModel
from metaroce.models.rx import layouts
from metaroce.tb.lockstep import run_amaranth


@pytest.mark.parametrize("seed", [0, 1])
def test_atomic_model_against_oracle(seed):
    """MR-ENG-158..164, MR-ENG-166: items executed one by one after the earlier placements'
    done records (MR-ENG-162), the intake held over the read-modify-write (MR-ENG-163): the
    memory, the result rows (MR-ENG-161) and the response items equal the oracle's; ERROR items
    touch no memory (MR-ENG-164)."""
    drv, exp, model = ac.run_model(seed=seed, p_bp=0.3, p_place=0.4)
    n = ac.check(drv, exp)
    assert n >= 30 and model.executed == n and any(r[5] for r in drv.rsps)


def test_atomic_fence_at_the_mark_never_waits_for_later_placements():
    """MR-ENG-216..218 (the hazard of MR-ENG-162): placements after an item that sit behind an
    operand capture waiting for the executor (MR-RX-166: their done records come only once the
    executor has taken the items before the capture) do not hold the item: it waits for the
    placements up to its mark (MR-RX-175) only. Its memory, rows and responses are the
    oracle's, every read after the earlier placements' done records; the counters (MR-ENG-226)
    count its executions, ERROR responses and fence cycles. Negative control: session 25's fence
    (an empty intake, then every placement taken) waits for a stuck placement for ever."""
    drv, exp, model = ac.run_model(seed=2, p_place=0.5, p_stuck=0.5)
    n = ac.check(drv, exp)
    assert n >= 30 and drv.stuck > 100
    errors = sum(1 for r in drv.rsps if r[5])
    assert model.ctr[:3] == [n, errors, 0] and model.ctr[3] > n, model.ctr
    with pytest.raises(AssertionError, match="no progress"):
        ac.run_model(seed=2, p_place=0.5, p_stuck=0.5, model_cls=ac.OldFence, max_cycles=20_000)
    drv, exp, _ = ac.run_model(seed=2, p_place=0.5, model_cls=ac.OldFence)
    assert ac.check(drv, exp) >= 30        # without stuck placements the old fence completes


def test_atomic_negative_controls():
    """MR-ENG-166: an executor that answers a value read after its write (as one re-executing on
    a resend would, MR-VERB-012) fails the rows check; one that reads without waiting for the
    earlier placements fails the ordering check."""
    drv, exp, _ = ac.run_model(seed=1, model_cls=ac.Reexecute)
    with pytest.raises(AssertionError, match="result row"):
        ac.check(drv, exp)
    drv, exp, _ = ac.run_model(seed=1, model_cls=ac.NoFence, p_place=0.5)
    with pytest.raises(AssertionError, match="read before|during the read"):
        ac.check(drv, exp)


@pytest.mark.parametrize("width,chain", [(64, None), (128, None), (64, True)])
def test_atomic_lockstep_amaranth(width, chain):
    """MR-ENG-166, MR-ENG-219, MR-ENG-224, MR-ENG-226: ``AtomicExec`` in lockstep with
    ``AtomicExecModel`` on every port (the counters' ``reg_data`` at random selects among them),
    random backpressure, idle items, memory latency and stuck placements after the items' marks:
    0 mismatches, the oracle's results. hw-rx.md MR-RX-317 (``chain``): the adds as the ECP5
    build elaborates them (its platform's carry chain: plain ``+``), the same cycles."""
    conns = 4
    lay = layouts(conns=conns)
    import random
    from metaroce.models.dma_write_cases import BASE, Layout
    from metaroce.models.atomic import result_area_bytes
    rng = random.Random(3)
    wl = Layout(max(4096, result_area_bytes(conns) + 2048))
    init = bytes(random.Random(8).getrandbits(8) for _ in range(wl.size))
    items = ac.random_items(rng, 30, conns, wl, image=init)
    rbase = BASE + 2048
    model = AtomicExecModel(width, lay.atom, lay.rsp)
    drv = ac.Driver(width, conns, items, wl, rbase, seed=4, image=init, p_place=0.4, p_stuck=0.3)
    drv.hold_now = lambda: model.hold
    core = run_amaranth(AtomicExec(width, lay.atom, lay.rsp, carry_chain=chain), model, drv)
    assert core.mismatches == 0
    assert ac.check(drv, ac.oracle(items, init, BASE, rbase)) >= 20 and drv.stuck > 0
