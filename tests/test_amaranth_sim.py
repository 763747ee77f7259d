"""MR-FLOW-036: a lockstep run on a reused Amaranth simulation (``tb.lockstep.AmaranthSim``,
``shared_sim``) is the run on a new one; a design made under a monkeypatch is not shared.
The congestion-window block (small, cheap to elaborate) stands in for the RX, whose tests share
their simulations this way."""
import gc
import inspect

import pytest

from metaroce.hdl.cwnd import Cwnd
from metaroce.models import cwnd_cases as cc
from metaroce.models import protocol as P
from metaroce.models.cwnd import SMALL, CwndCycleModel, CwndModel
from metaroce.tb import lockstep

CONFIG = {"mtu": 1024, "beta_q": P.Q_ONE // 2 + 1, "cap": 60_000}


def _run(asim, seed, *, on_cycle=None):
    """One lockstep run on ``asim``: its driver's results and the cycles compared."""
    model = CwndCycleModel(64, **SMALL)
    items = cc.traffic(CwndModel(**SMALL), 30, seed=seed)
    drv = cc.Driver(model.lay, items, CONFIG, seed=seed, p_idle=0.3, p_bp=0.5)
    core = asim.run(model, drv, busy=model.busy, on_cycle=on_cycle)
    assert core.mismatches == 0
    return repr(drv.res), core.cycle


def test_reused_simulation_runs_as_a_new_one(monkeypatch):
    """MR-FLOW-036: runs on one simulation (another seed between, and a run stopped by an
    exception) equal the same runs on new simulations, cycle for cycle and result for result.
    Negative control: without ``Simulator.reset`` between runs the second run is not the first."""
    fresh = {seed: _run(lockstep.AmaranthSim(Cwnd(64, **SMALL)), seed) for seed in (1, 2)}
    assert fresh[1] != fresh[2] and fresh[1][1] > 100
    asim = lockstep.AmaranthSim(Cwnd(64, **SMALL))
    assert _run(asim, 1) == fresh[1]
    assert _run(asim, 2) == fresh[2]

    def stop(cycle, ins, outs):
        if cycle == 50:
            raise RuntimeError("stopped")
    with pytest.raises(RuntimeError, match="stopped"):
        _run(asim, 2, on_cycle=stop)
    assert _run(asim, 1) == fresh[1]
    assert asim.runs == 4

    monkeypatch.setattr(type(asim.sim), "reset", lambda self: None)
    assert _run(asim, 1) != fresh[1]


@pytest.mark.filterwarnings("ignore:coroutine .* was never awaited:RuntimeWarning")
def test_shared_simulation_by_key_and_globals(monkeypatch):
    """MR-FLOW-036: ``shared_sim`` gives the simulation made for the same key before, another
    for another key, and another while a global of a design module is monkeypatched (a wrong
    form must not be run as the right one, nor the right one as a wrong form)."""
    import metaroce.hdl.cwnd as hdl_cwnd
    monkeypatch.setattr(lockstep, "_shared_sims", type(lockstep._shared_sims)())
    made = []

    def make(**kw):
        made.append(Cwnd(64, **SMALL, **kw))
        return made[-1]
    first = lockstep.shared_sim(("cwnd", 2), lambda: make(div_bits=2))
    assert lockstep.shared_sim(("cwnd", 2), lambda: make(div_bits=2)) is first
    other = lockstep.shared_sim(("cwnd", 1), lambda: make(div_bits=1))
    assert other is not first and len(made) == 2
    name, fn = next((n, v) for n, v in vars(hdl_cwnd).items()
                    if inspect.isfunction(v) and v.__module__ == hdl_cwnd.__name__)
    with monkeypatch.context() as m:
        m.setattr(hdl_cwnd, name, lambda *a, **kw: fn(*a, **kw))
        patched = lockstep.shared_sim(("cwnd", 2), lambda: make(div_bits=2))
        assert patched is not first and len(made) == 3
    assert lockstep.shared_sim(("cwnd", 2), lambda: make(div_bits=2)) is first
    assert first.dut is made[0] and len(made) == 3
    # these simulations never ran: their testbench coroutines go now, under this test's filter
    lockstep._shared_sims.clear()
    del first, other, patched
    gc.collect()


def test_source_closure_names_the_design_and_its_imports():
    """MR-FLOW-040: the import closure of the congestion-window RTL holds its module, the RTL
    helpers and the models it imports (transitively), each with its source's hash; a wrong form
    (edited source) hashes differently from the right module."""
    import hashlib
    import metaroce.hdl.cwnd as hdl_cwnd
    closure = lockstep.source_closure(["metaroce.hdl.cwnd"])
    assert {"metaroce.hdl.cwnd", "metaroce.hdl.arith", "metaroce.models.cwnd", "metaroce.models.protocol"} <= set(closure)
    with open(hdl_cwnd.__file__, "rb") as f:
        assert closure["metaroce.hdl.cwnd"] == hashlib.sha256(f.read()).hexdigest()
    wrong = lockstep.wrong_form("cwnd", "from .arith import", "from .arith import _Arith,")
    assert lockstep.source_closure([wrong])[wrong.__name__] != closure["metaroce.hdl.cwnd"]


@pytest.mark.filterwarnings("ignore:coroutine .* was never awaited:RuntimeWarning")
def test_shared_simulation_keyed_on_source(monkeypatch):
    """MR-FLOW-040: under one key, a design of a wrong form (a module made from edited source,
    in no ``sys.modules`` entry, so the globals' identities do not tell it apart) gets its own
    simulation when its module is named in ``modules``; the right design's is shared again, also
    while a module outside the design's import closure is patched, not while one inside is."""
    monkeypatch.setattr(lockstep, "_shared_sims", type(lockstep._shared_sims)())
    wrong = lockstep.wrong_form("cwnd", "from .arith import", "from .arith import _Arith,")
    right = lockstep.shared_sim(("cwnd",), lambda: Cwnd(64, **SMALL), modules=["metaroce.hdl.cwnd"])
    other = lockstep.shared_sim(("cwnd",), lambda: wrong.Cwnd(64, **SMALL), modules=[wrong])
    assert other is not right and type(other.dut) is wrong.Cwnd
    assert lockstep.shared_sim(("cwnd",), lambda: Cwnd(64, **SMALL), modules=["metaroce.hdl.cwnd"]) is right
    # only the closure's globals count: a patch outside it (a module the design never imports)
    # keeps the shared simulation, one inside it does not
    import metaroce.hdl.cwnd as hdl_cwnd
    import metaroce.models.endpoint as endpoint
    assert "metaroce.models.endpoint" not in lockstep.source_closure(["metaroce.hdl.cwnd"])
    with monkeypatch.context() as m:
        m.setattr(endpoint, "Endpoint", type("Endpoint", (), {}))
        assert lockstep.shared_sim(("cwnd",), lambda: Cwnd(64, **SMALL), modules=["metaroce.hdl.cwnd"]) is right
        real = hdl_cwnd._named
        m.setattr(hdl_cwnd, "_named", lambda *a, **kw: real(*a, **kw))
        patched = lockstep.shared_sim(("cwnd",), lambda: Cwnd(64, **SMALL), modules=["metaroce.hdl.cwnd"])
        assert patched is not right
    lockstep._shared_sims.clear()
    del right, other, patched
    gc.collect()
