"""The receiver's rate hints end to end in the whole engine (docs/spec/hw-engine.md section 5p,
MR-ENG-311..327): ``Engine(hints=True)`` / ``EngineModel(hints=True)``: the peer's MRAH hint
decoded by ``AckIn`` into the TX half's hinted windows (``Tx(hints=True, control=True)``), the
host's hint (``ack_hint_mbps``) on the engine's ACKs; driven by the engine's loopback and the
whole-engine co-simulations (models/cosim_engine.py, ``Config.hints``)."""
import pytest

from metaroce.models import cosim_engine as ce
from metaroce.models import engine_cases as ec
from metaroce.models.cosim import run_loop
from metaroce.models.engine import HINT_MAX, EngineModel, engine_layouts, hint_of_rate
from metaroce.models.rx import unpack

#: MR-ENG-321: the loopback's hint (a quarter of the 10 Gb/s line)
HINT = 2_500


def _flat(component):
    names = set()
    for name, member in component.signature.members.items():
        names |= {name} if member.is_port else {f"{name}__{k}" for k in member.signature.members}
    return names


def test_engine_hints_ports_and_options():
    """MR-ENG-311, MR-ENG-312, MR-ENG-315, MR-ENG-317: the hinted engine's TX half is
    ``Tx(hints=True, control=True)`` at interval 1, its ports the engine's plus the windows'
    ``cc_line_mbps``/``cc_base_rtt_ns`` and ``ack_hint_mbps``, the model's the same; the
    default builds none of it; not with pacing or rows; ``hint_wrong`` only with hints."""
    from metaroce.hdl.engine import Engine
    plain, hinted = Engine(64), Engine(64, hints=True)
    for blk in (plain, hinted):
        blk._MustUse__silence = True            # not elaborated here
    assert not plain.tx.hints and hinted.tx.hints and hinted.tx.control
    assert plain.tx.interval == 8 and hinted.tx.interval == 1
    assert _flat(hinted) - _flat(plain) == {"ack_hint_mbps", "cc_line_mbps", "cc_base_rtt_ns"}
    names = EngineModel(64, hints=True).port_names()
    assert _flat(hinted) == set(names["inputs"]) | set(names["outputs"])
    assert set(EngineModel(64).port_names()["inputs"]) == set(names["inputs"]) - {
        "ack_hint_mbps", "cc_line_mbps", "cc_base_rtt_ns"}
    for bad in (dict(hints=True, pacing=True), dict(hints=True, rows=True), dict(hint_wrong="drop"),
                dict(hints=True, hint_wrong="half")):
        with pytest.raises(ValueError):
            EngineModel(64, **bad)
        with pytest.raises(ValueError):
            Engine(64, **bad)
    assert [hint_of_rate(r) for r in (0, 7, HINT_MAX, HINT_MAX + 1, 1 << 31)] == [0, 7, HINT_MAX, HINT_MAX, HINT_MAX]


def test_cosim_hints_option():
    """MR-ENG-319: ``metaroce cosim --hints`` is a whole engine's option (``--peer rtl`` or
    ``endpoint``), 0..524,287 Mb/s (MR-CLI-001's exit 2 otherwise); ``Config.hints`` checked
    the same; the block ``engine_hints`` is registered with its model."""
    from metaroce import blocks
    from metaroce.cli import main
    from metaroce.models.cosim import Config
    assert main(["cosim", "--hints", "5", "--json"]) == 2
    assert main(["cosim", "--peer", "rtl", "--hints", str(1 << 19), "--json"]) == 2
    with pytest.raises(ValueError):
        Config(hints=-1).validate()
    blk = blocks.get("engine_hints")
    assert blk.component.endswith(":engine_hints_small") and blk.model.endswith(":engine_model_hints_small")


def test_ack_in_hint_lockstep_amaranth():
    """MR-ENG-313, MR-ENG-320, MR-ENG-322: ``AckIn(hints=True)`` (RTL, Amaranth simulator) in
    lockstep with ``AckInModel(hints=True)`` on every output every cycle for 400 cycles of random
    ACK/NAK records (hints 0, below and above 2^19) and a random ``ready``: 0 mismatches, hints
    and saturated hints taken. Negative controls: the RTL with the hint dropped, and with the
    hint's low 19 bits kept (not saturated), mismatch on ``m_ack__payload``."""
    from metaroce.hdl.engine import AckIn
    from metaroce.hdl.parser import Parser
    from metaroce.tb.lockstep import Mismatch, run_amaranth
    ack_lay = engine_layouts(hints=True).rtx.ack
    meta_sig = Parser(64).signature.members["m_meta"].signature

    def run(**wrong):
        drv = ec.AckInLoop(2, n=400, seed=3)
        core = run_amaranth(AckIn(2, meta_sig, ack_lay, hints=True, **wrong),
                            ec.AckInCycleModel(2, ack_lay, hints=True), drv)
        return core, drv
    core, drv = run()
    assert core.mismatches == 0 and drv.taken > 100 and drv.hinted > 40 and drv.saturated > 15
    for wrong in ("drop", "trunc"):
        with pytest.raises(Mismatch, match="m_ack__payload"):
            run(hint_wrong=wrong)


def _loopback(hint, *, model_kw=None, rtl=None, nbytes=4096, loss=0.0, p_bp=0.2):
    """MR-ENG-321: the hinted engine writes ``nbytes`` to itself in 2 WRITEs, its ACKs carrying
    ``hint``, its connection's windows opened (``hint_inputs``); on the model, or the RTL ``rtl``
    in lockstep with it (the updates its windows give the scheduler recorded inside, packed, in
    order: MR-ENG-323). Returns the run's check, the driver, the model, the core and the
    updates seen."""
    drv, _, region, src = ce.loopback_run(64, nbytes, seed=3, loss=loss, n_writes=2, p_bp=p_bp,
                                          hints=ce.hint_inputs(hint))
    model = EngineModel(64, max_frame=2048, hints=True, **(model_kw or {}))
    core, seen = None, []
    if rtl is None:
        run_loop(drv, model, model.active)
    else:
        from metaroce.tb.lockstep import run_amaranth
        upd = rtl.tx.cwnd.m_update

        async def watch(ctx):
            async for _, _, v, r, p in ctx.tick().sample(upd.valid, upd.ready, upd.payload.as_value()):
                if v and r:
                    seen.append(p)
        core = run_amaranth(rtl, model, drv, busy=model.active, background=[watch])
    return ce.check(drv, region, src), drv, model, core, seen


def _rates(model):
    """The windows' updates' ``rate`` (the connection's hint the windows hold), in order."""
    lay = model.tx.lay.cw.update
    return [unpack(lay, u)["rate"] for u in model.tx.cw_updates]


def test_engine_hints_loopback_model():
    """MR-ENG-321: the loopback (4 KiB) with hint 2,500 Mb/s: every ACK frame out and in carries it,
    the run completes byte for byte, the windows (opened by 4 setup writes) take the hint from
    the engine's own ACKs: the setup writes' updates hold the line rate (no hint yet), every
    update after them rate 2,500. Negative control (MR-ENG-322): the model with the decoded
    hint dropped: the same ACK frames, every update at the line rate."""
    _, drv, model, _, _ = _loopback(HINT)
    assert drv.res["cw_setups"] == 4
    assert set(drv.res["hints_out"]) == {HINT} and drv.res["hints_in"] == drv.res["hints_out"]
    rates = _rates(model)
    line = ce.HINT_CC["cc_line_mbps"]
    assert len(rates) > 8 and rates[:4] == [line] * 4 and set(rates[4:]) == {HINT}
    _, drv, model, _, _ = _loopback(HINT, model_kw={"hint_wrong": "drop"})
    assert set(drv.res["hints_in"]) == {HINT} and set(_rates(model)) == {line}


@pytest.mark.slow
def test_engine_hints_lockstep_amaranth():
    """MR-ENG-323: the hinted engine (RTL, Amaranth simulator) in lockstep with its model on the
    loopback of MR-ENG-321 at 5 % loss with random backpressure and AXI latencies: 0
    mismatches on every output every cycle, the run's check, every update the RTL's windows
    gave its scheduler the model's, their rates the hint after the setup writes'."""
    from metaroce.hdl.engine import Engine
    _, drv, model, core, seen = _loopback(HINT, rtl=Engine(64, max_frame=2048, hints=True),
                                          nbytes=4096, loss=0.05)
    assert core.mismatches == 0 and seen == model.tx.cw_updates and len(seen) > 8
    assert set(_rates(model)[4:]) == {HINT}


@pytest.mark.slow
def test_engine_hint_dropped_lockstep_fails():
    """MR-ENG-322, negative control: the RTL whose AckIn drops the hint against the model: the
    windows' updates inside differ from the model's (their rates the line's, not the hint), or
    a port mismatches."""
    from metaroce.hdl.engine import Engine
    from metaroce.tb.lockstep import Mismatch
    try:
        _, _, model, core, seen = _loopback(HINT, rtl=Engine(64, max_frame=2048, hints=True, hint_wrong="drop"),
                                            nbytes=4096, loss=0.05)
    except Mismatch:
        return
    assert seen[:4] == model.tx.cw_updates[:4] and seen != model.tx.cw_updates


def _pod(hints, nbytes=65536, **kw):
    """MR-ENG-325: MR-ENG-138's ``pod`` scenario without loss, ``nbytes`` h0 -> h1, nothing back,
    with ``Config.hints`` ``hints``."""
    from metaroce.models import cosim, cosim_tx
    over, _ = cosim.SCENARIOS["pod"]
    return cosim.Config(**{**over, **cosim_tx.TX_CONFIG, "n_conns": 1, "nbytes": nbytes, "loss": 0.0,
                           "seed": 1, "back": 0, "hints": hints, **kw})


def _peer_model(cfg, sender_kw=None):
    """Two model engines (MR-ENG-138); ``sender_kw``: h0's (the sender's) model options."""
    d = ce.PeerCosim(cfg)
    if sender_kw:
        d.peer_model = EngineModel(cfg.width, **ce.engine_kw(cfg), **sender_kw)
    m = EngineModel(cfg.width, **ce.engine_kw(cfg))
    return run_loop(d, m, m.active).result()


@pytest.mark.slow
def test_engine_hints_act_model():
    """MR-ENG-325 (model): two engines in ``pod`` without loss: hints 0 is the run without hints
    within 1 %; h1's hint 2,500 reaches h0 and cuts its goodput below 0.6 of the hint-0 run's.
    Negative control (MR-ENG-322): h0 with its decoded hint dropped gets the same hinted ACKs
    and keeps the hint-0 goodput."""
    off, zero, low = (_peer_model(_pod(h)) for h in (None, 0, HINT))
    assert off["ok"] and zero["ok"] and low["ok"]
    assert abs(zero["goodput_vs_limit"] - off["goodput_vs_limit"]) <= 0.01 * off["goodput_vs_limit"]
    assert low["engines"]["h0"]["hints_in"] == {str(HINT): low["engines"]["h0"]["frames_in"]}
    assert low["goodput_vs_limit"] < 0.6 * zero["goodput_vs_limit"]
    dropped = _peer_model(_pod(HINT), {"hint_wrong": "drop"})
    assert dropped["ok"] and dropped["goodput_vs_limit"] >= 0.95 * zero["goodput_vs_limit"]


@pytest.mark.slow
def test_engine_hints_into_endpoint_model():
    """MR-ENG-325 (model): the engine's hint into the endpoint (``--peer endpoint``, direction
    rx): the endpoint paces at it; the endpoint's hints into the engine (direction tx): its
    fair-share hint with one sender is 0, "none" (MR-CC-005), on every ACK the engine takes."""
    rx0, rx = (ce.run_endpoint_model(_pod(h), "rx") for h in (0, HINT))
    assert rx0["ok"] and rx["ok"] and rx["engine"]["hints_out"] == {str(HINT): rx["engine"]["frames_out"]}
    assert rx["goodput_vs_limit"] < 0.6 * rx0["goodput_vs_limit"]
    tx = ce.run_endpoint_model(_pod(0), "tx")
    assert tx["ok"] and set(tx["engine"]["hints_in"]) == {"0"}


@pytest.mark.slow
def test_engine_hints_rtl_pair_lockstep():
    """MR-ENG-324: two RTL engines with hints (the pair build of ``engine_hints``) under
    Verilator in ``pod`` at 2 % loss, h1's ACKs at 2,500 Mb/s, ``EnginePairModel(hints=True)`` in
    lockstep: ok, sha256 match, 0 mismatches, h0 took the hint."""
    from metaroce.commands.cosim import run_rtl
    r = run_rtl(_pod(HINT, nbytes=32 * 1024, loss=0.02), lockstep=True, direction="pair")
    assert r["ok"] and r["sha256_match"] and r["mismatches"] == 0
    assert set(r["engines"]["h0"]["hints_in"]) == {str(HINT)}


@pytest.mark.slow
@pytest.mark.parametrize("direction", ["rx", "tx"])
def test_engine_hints_rtl_endpoint(direction):
    """MR-ENG-324: the RTL engine with hints against the endpoint with its hint pushes on, both
    directions, ``EnginePairModel(hints=True)`` in lockstep: ok, sha256 match, 0 mismatches; the
    engine's ACKs carry its hint (rx), it takes the endpoint's, 0 with one sender (tx)."""
    from metaroce.commands.cosim import run_rtl
    r = run_rtl(_pod(HINT, nbytes=32 * 1024, loss=0.02), lockstep=True, direction="endpoint",
                endpoint_direction=direction)
    assert r["ok"] and r["sha256_match"] and r["mismatches"] == 0
    eng = r["engine"]
    if direction == "rx":
        assert set(eng["hints_out"]) == {str(HINT)}
    else:
        assert set(eng["hints_in"]) == {"0"}
