"""The receiver's own rate hint in the whole engine (docs/spec/hw-engine.md section 5q,
MR-ENG-338..345: the cost and what is left in docs/hw/engine-results.md):
``Engine(hints=True, rx_hint=True)`` / ``EngineModel(...)``: the arrivals
the RX takes counted by ``RxHint``, its hint on the engine's ACKs, its and the hinted windows'
configuration in the register block's hint window (hw-regs.md MR-REG-073..076)."""
import pytest

from metaroce.models import cosim_engine as ce
from metaroce.models import rx_hint_cases as hc
from metaroce.models.cosim import run_loop
from metaroce.models.engine import EngineModel
from metaroce.models.regs import HINT_REG_OF
from metaroce.models.rx import unpack
from metaroce.models.rx_hint import seen_of_meta

#: MR-ENG-341: the receiver's configuration in the loopback: the 10 Gb/s line, 10 us, 1 KiB
RX_CFG = {"line_mbps": 10_000, "share_ns": 10_000, "mtu": 1024}
_CC = tuple(n for n in HINT_REG_OF if n.startswith("cc_"))


def _flat(component):
    names = set()
    for name, member in component.signature.members.items():
        names |= {name} if member.is_port else {f"{name}__{k}" for k in member.signature.members}
    return names


def test_engine_rx_hint_ports_and_options():
    """MR-ENG-340: ``rx_hint`` takes away the engine's ``ack_hint_mbps`` and the windows'
    ``cc_*`` ports (the hint window's registers now), the model's ports the same; it needs
    ``hints``; ``rx_hint_wrong`` needs ``rx_hint``. MR-ENG-341: ``metaroce cosim --rx-hint``
    needs ``--hints`` (exit 2), ``Config.rx_hint`` likewise; the block ``engine_rx_hint``.
    MR-ENG-338: the arrival decode."""
    from metaroce.hdl.board_top import block_ports
    from metaroce.hdl.engine import Engine
    hinted, own = Engine(64, hints=True), Engine(64, hints=True, rx_hint=True)
    for blk in (hinted, own):
        block_ports(blk)            # built for their ports only: no unused-block warnings
    assert _flat(hinted) - _flat(own) == {"ack_hint_mbps", *_CC} and not _flat(own) - _flat(hinted)
    names = EngineModel(64, hints=True, rx_hint=True).port_names()
    assert _flat(own) == set(names["inputs"]) | set(names["outputs"])
    for bad in (dict(rx_hint=True), dict(hints=True, rx_hint_wrong="count"),
                dict(hints=True, rx_hint=True, rx_hint_wrong="half")):
        with pytest.raises(ValueError):
            EngineModel(64, **bad)
        with pytest.raises(ValueError):
            Engine(64, **bad)
    # MR-ENG-341: the co-simulation's option needs --hints; the block is registered
    from metaroce import blocks
    from metaroce.cli import main
    from metaroce.models.cosim import Config
    assert main(["cosim", "--peer", "endpoint", "--rx-hint", "--json"]) == 2
    with pytest.raises(ValueError):
        Config(rx_hint=True).validate()
    blk = blocks.get("engine_rx_hint")
    assert blk.component.endswith(":engine_rx_hint_small") and blk.model.endswith(":engine_model_rx_hint_small")
    from metaroce.models.parser import META_FIELDS
    at = {p: o for p, o, _ in META_FIELDS}
    rec = (1 << at[("has", "mrdh")]) | (192 << at[("bth", "opcode")]) | (1 << at[("bth", "dest_qp")])
    assert seen_of_meta(rec, 2) == (1, 0, 1)
    assert seen_of_meta(rec | 3 << at[("ip", "ecn")] | 1 << at[("mrdh", "flags")], 2) == (1, 1, 0)
    assert seen_of_meta(rec | 1 << at[("drop",)], 2) is None
    assert seen_of_meta(rec ^ (1 << at[("has", "mrdh")]), 2) is None
    assert seen_of_meta(rec | 2 << at[("bth", "dest_qp")], 2) is None            # DestQP 3
    assert seen_of_meta(rec ^ (192 ^ 196) << at[("bth", "opcode")], 2) is None   # MR_ACK


def test_engine_rx_hint_form_by_connections():
    """MR-ENG-361: the engine's ``RxHint`` and its model take the form by the connections as
    ``RxHint`` does (MR-ENG-346): the flip-flop form at the engine's 2 and at 32, the memory
    form at ``MEM_FROM`` = 64 and at 256 (the hinted engine's most: its register scheduler's);
    ``rx_hint_form`` names it (the memory form at 2); a form not known, or without ``rx_hint``,
    is refused. Negative control: the model's form before (the flip-flop form at 64)."""
    import warnings

    from amaranth.hdl import UnusedElaboratable

    from metaroce.hdl.board_top import _silence_unused
    from metaroce.hdl.engine import Engine
    from metaroce.models.rx_hint import MEM_FROM, RxHintMemModel, RxHintModel
    for conns, kw, form in ((2, {}, "flops"), (32, {}, "flops"), (MEM_FROM, {}, "memory"),
                            (256, {}, "memory"), (2, {"rx_hint_form": "memory"}, "memory"),
                            (MEM_FROM, {"rx_hint_form": "flops"}, "flops")):
        rtl = Engine(64, conns=conns, hints=True, rx_hint=True, **kw)
        _silence_unused(rtl)        # built for its hint block's form only
        model = EngineModel(64, conns=conns, hints=True, rx_hint=True, **kw)
        assert rtl.hint_block.form == model.hint_block.form == form, (conns, kw)
        assert type(model.hint_block) is (RxHintMemModel if form == "memory" else RxHintModel)
    # the model before MR-ENG-361 (RxHintModel whatever the connections) is not the RTL's form
    rtl = Engine(64, conns=MEM_FROM, hints=True, rx_hint=True)
    _silence_unused(rtl)
    assert RxHintModel(MEM_FROM).form != rtl.hint_block.form
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UnusedElaboratable)    # the refused engines
        for bad in (dict(hints=True, rx_hint=True, rx_hint_form="sram"),
                    dict(hints=True, rx_hint_form="memory")):
            with pytest.raises(ValueError):
                EngineModel(64, **bad)
            with pytest.raises(ValueError):
                Engine(64, **bad)


def _loopback(*, rtl=None, nbytes=4096, loss=0.0, p_bp=0.2, cc=None, form=None):
    """MR-ENG-342: the engine writes ``nbytes`` to itself in 2 WRITEs, its receiver computing
    its hint (``RX_CFG``), every configuration written through the hint window; on the model,
    or the RTL ``rtl`` in lockstep with it (the arrivals its ``RxHint`` takes recorded inside).
    Returns the run's check, the driver, the model, the core and the RTL's arrivals."""
    hints = ce.hint_inputs(0, rx_hint=RX_CFG, **(cc or {}))
    drv, _, region, src = ce.loopback_run(64, nbytes, seed=3, loss=loss, n_writes=2, p_bp=p_bp, hints=hints)
    model = EngineModel(64, max_frame=2048, hints=True, rx_hint=True, rx_hint_form=form)
    core, seen = None, []
    if rtl is None:
        run_loop(drv, model, model.active)
    else:
        from metaroce.tb.lockstep import run_amaranth
        s = rtl.hint_block.s_seen

        async def watch(ctx):
            async for _, _, v, p, now in ctx.tick().sample(s.valid, s.payload.as_value(), rtl.hint_block.now):
                if v:
                    seen.append((now, p & 1, p >> 1 & 1, p >> 2 & 1))     # {conn 1, ce, more}
        core = run_amaranth(rtl, model, drv, busy=model.active, background=[watch])
    return ce.check(drv, region, src), drv, model, core, seen


def test_engine_rx_hint_loopback_model():
    """MR-ENG-342: the loopback (4 KiB) with the receiver's own hint: the run completes byte for
    byte; the hint window's writes and the 4 windows' setup writes taken; every data frame
    received counted once (one sender, connection 1, more due on all but each message's last),
    so every ACK frame carries 0 (one sender: no limit), which is the reference endpoint's
    ``_rate_hint`` on the same arrivals; the windows hold CC_LINE_MBPS (written, not a port).
    The negative control is ``test_engine_rx_hint_window_reaches_the_windows``."""
    res, drv, model, _, _ = _loopback()
    assert res["frames_in"] == res["frames_out"] and drv.res["cw_setups"] == 4
    arrivals = model.seen_log
    data_in = res["frames_in"] - sum(drv.res["hints_in"].values())
    assert len(arrivals) == data_in >= 4 and {a[1] for a in arrivals} == {1}
    assert [a[3] for a in arrivals].count(0) == 2          # the 2 WRITEs' last packets
    assert set(drv.res["hints_out"]) == {0} == set(drv.res["hints_in"])
    ref = hc.endpoint_hints(arrivals, 2, **RX_CFG)
    assert [h for h, _, _ in ref] == [0] * len(arrivals) and model.hint_block.hint == 0
    lay = model.tx.lay.cw.update
    assert {unpack(lay, u)["rate"] for u in model.tx.cw_updates} == {10_000}


@pytest.mark.slow
def test_engine_rx_hint_loopback_model_memory():
    """MR-ENG-361: MR-ENG-342's loopback with the engine model's ``RxHint`` in the memory form
    (``rx_hint_form="memory"``): the run completes byte for byte, the same arrivals counted as
    with the flip-flop form, every ACK frame carrying 0."""
    res, drv, model, _, _ = _loopback(form="memory")
    ref_res, _, ref, _, _ = _loopback()
    assert model.hint_block.form == "memory" and ref.hint_block.form == "flops"
    assert res["frames_in"] == res["frames_out"] and model.seen_log == ref.seen_log
    assert len(model.seen_log) >= 4 and set(drv.res["hints_out"]) == {0} and model.hint_block.hint == 0


@pytest.mark.slow
def test_engine_rx_hint_window_reaches_the_windows():
    """MR-ENG-342, negative control: the same loopback with 8,000 written in ``CC_LINE_MBPS``:
    every window update's rate is 8,000, not 10,000 (the register, not a constant, reaches the
    windows)."""
    _, _, model8, _, _ = _loopback(cc={"cc_line_mbps": 8_000})
    lay = model8.tx.lay.cw.update
    assert {unpack(lay, u)["rate"] for u in model8.tx.cw_updates} == {8_000}


@pytest.mark.slow
def test_engine_rx_hint_lockstep_amaranth():
    """MR-ENG-343: ``Engine(64, max_frame=2048, hints=True, rx_hint=True)`` against its model on
    MR-ENG-342's loopback at 5 % loss, random backpressure and AXI latencies: 0 mismatches on
    every output every cycle, the run's check, and the arrivals the RTL's ``RxHint`` took
    (recorded inside, with ``now``) equal to the model's."""
    from metaroce.hdl.engine import Engine
    res, drv, model, core, seen = _loopback(rtl=Engine(64, max_frame=2048, hints=True, rx_hint=True),
                                            loss=0.05)
    assert core.mismatches == 0 and seen == model.seen_log and len(seen) >= 4


@pytest.mark.slow
def test_engine_rx_hint_rtl_endpoint():
    """MR-ENG-341, MR-ENG-343: the RTL engine with its own hint (the pair build of
    ``engine_rx_hint``) under Verilator receiving 32 KiB from the endpoint (``writes``, 1 %
    loss), ``EnginePairModel(hints=True, rx_hint=True)`` in lockstep: ok, sha256 match, 0
    mismatches; one sender, so every ACK the engine sends carries 0 (the endpoint's
    ``_rate_hint`` for one sender)."""
    from metaroce.commands.cosim import run_rtl
    from metaroce.models import cosim, cosim_tx
    over, _ = cosim.SCENARIOS["writes"]
    cfg = cosim.Config(**{**over, **cosim_tx.TX_CONFIG, "n_conns": 1, "nbytes": 32 * 1024, "hints": 0,
                          "rx_hint": True})
    r = run_rtl(cfg, lockstep=True, direction="endpoint", endpoint_direction="rx")
    assert r["ok"] and r["sha256_match"] and r["mismatches"] == 0
    assert set(r["engine"]["hints_out"]) == {"0"}
