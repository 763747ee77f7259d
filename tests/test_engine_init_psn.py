"""The engine's initial send PSNs through its host registers (docs/spec/hw-engine.md section 5o,
MR-ENG-301..310; hw-regs.md MR-REG-070..072): the table 9 rows, the join to the TX half's
``s_psn``, the counter of ignored writes, and the runs across the 24-bit wrap."""
import pytest

from metaroce.models import cosim_engine as ce
from metaroce.models import engine_cases as ec
from metaroce.models.engine import PSN_IGNORED_CTR, EngineModel, engine_layouts, tx_psn_write
from metaroce.models.regs import eng_counter_names, register_map
from metaroce.models.rx import TABLE_TX_PSN, layouts as rx_layouts, unpack

#: MR-ENG-307: every path's initial PSN in the runs across the wrap
WRAP = (1 << 24) - 4


def _lays():
    from metaroce.models.rx import SMALL as RX_SMALL
    return rx_layouts(2, 4, 256, streams=RX_SMALL["streams"]).cfg, engine_layouts().sched.psn


def test_table_9_record_and_counter_index():
    """MR-ENG-302, MR-REG-070/071: a table 9 record is ``{9, conn x paths + path, psn}`` (24 bits
    kept), the engine counter window's index 7 is PSN_IGNORED (``ENG_PSN_IGNORED_LO`` at 0x338),
    and the register table names table 9."""
    cfg_lay, _ = _lays()
    r = unpack(cfg_lay, tx_psn_write(cfg_lay, 4, 1, 3, (1 << 24) + 5))
    assert (r["table"], r["addr"], r["data"]) == (TABLE_TX_PSN, 7, 5) and TABLE_TX_PSN == 9
    assert eng_counter_names()[PSN_IGNORED_CTR] == "PSN_IGNORED" and PSN_IGNORED_CTR == 7
    rmap = register_map(eng=True)
    assert rmap.get("ENG_PSN_IGNORED_LO").offset == 0x338 and rmap.get("CTR_COUNTS").reset >> 24 == 8
    assert "9 initial send PSN" in rmap.get("CFG_TABLE").desc


def test_psn_init_lockstep_amaranth():
    """MR-ENG-309: ``PsnInit`` (RTL, Amaranth simulator) in lockstep with ``PsnInitModel`` on every
    output every cycle for 400 cycles of random taps (tables 1..9), ``psn_ignored`` pulses,
    counter selects and a random ``ready`` (MR-ENG-316: a write held until taken, a record while
    one waits counted): 0 mismatches, table 9 writes sent. Negative controls: a model that takes
    the PSN from the record's bits [24:1], and one that does not hold a write, mismatch."""
    from metaroce.hdl.engine import PsnInit
    from metaroce.models.engine import PsnInitModel
    from metaroce.tb.lockstep import Mismatch, run_amaranth
    cfg_lay, psn_lay = _lays()
    drv = ec.PsnInitLoop(cfg_lay, n=400, seed=3)
    model = ec.PsnInitCycleModel(2, 4, cfg_lay, psn_lay)
    core = run_amaranth(PsnInit(cfg_lay, psn_lay), model, drv)
    assert core.mismatches == 0 and drv.writes > 30 and model.m.ctr > 50

    class Psn23(PsnInitModel):
        """A naive 23-bit PSN: the record's bit 23 dropped."""
        def step(self, tap_take, tap, ignored, reg_addr, ready=1):
            super().step(tap_take, tap & ~(1 << (dict(cfg_lay)["data"].offset + 23)), ignored, reg_addr, ready)

    class NoHold(PsnInitModel):
        """MR-ENG-316's wrong form: ``ready`` not looked at (a write not taken is lost)."""
        def step(self, tap_take, tap, ignored, reg_addr, ready=1):
            super().step(tap_take, tap, ignored, reg_addr, 1)

    for wrong, port in ((Psn23, "m_psn__payload"), (NoHold, "m_psn__valid|reg_data|m_psn__payload")):
        bad = ec.PsnInitCycleModel(2, 4, cfg_lay, psn_lay)
        bad.m = wrong(2, 4, cfg_lay, psn_lay)
        with pytest.raises(Mismatch, match=port):
            run_amaranth(PsnInit(cfg_lay, psn_lay), bad, ec.PsnInitLoop(cfg_lay, n=400, seed=3))


def _late_rows_run(model, *, init_psn=WRAP, seed=5, nbytes=5000, loss=0.2):
    """MR-ENG-308: the engine writes ``nbytes`` to itself in 2 WRITEs over the lossy loopback with
    every path's initial PSN ``init_psn`` (its table 9 rows and the RX's path rows at the setup);
    then the host writes table 9 rows again, the 4 of the started connection (PSN 5) and path 2
    of the other (PSN 123, never started), then reads the engine's counters through ``s_axil``.
    ``model``: the engine under test's model (the loop runs on it or alongside the RTL)."""
    drv, s, region, src = ce.loopback_run(64, nbytes, seed=seed, loss=loss, n_writes=2, init_psn=init_psn)
    qp = s.conns[0].qp
    late = ce.tx_psn_rows(qp, 5) + ce.tx_psn_rows(1 - qp, 123)[2:3]
    cl = ec.CounterLoop(ec.HostWrites(drv, late, register_map(s.lay), seed=seed + 1), sources=("eng",),
                        seed=seed + 2)
    return drv, s, region, src, cl


def _check_late_rows(drv, s, region, src, cl, model):
    """MR-ENG-308: the run's check; every path's first data PSN the table 9 row's (the PSNs as
    sent, by UDP source port); the 4 late rows of the started connection ignored and counted
    (the counter read through ``s_axil`` equal to the model's), the other connection's landed."""
    r = ce.check(drv, region, src)
    qp = s.conns[0].qp
    assert r["lost"] > 0 and len(drv.psns) == 4 and all(WRAP in ps for ps in drv.psns.values())
    eng = cl.counters["eng"]
    assert eng[PSN_IGNORED_CTR] == model.psn.ctr == 4 and model.psn.writes == 4 + 5
    sem = model.tx.sched.sem
    assert sem.path[(1 - qp) * sem.paths + 2]["next_psn"] == 123
    assert all(sem.path[qp * sem.paths + p]["next_psn"] != 5 for p in range(sem.paths))
    return r


def test_engine_model_init_psn_rows():
    """MR-ENG-303, MR-ENG-304, MR-ENG-308 on the model: the table 9 rows written at the setup set
    every path's first PSN (4 below the wrap), the late rows of the started connection are
    ignored and counted (4, read through ``s_axil``), the other connection's lands."""
    from metaroce.models.cosim import run_loop
    model = EngineModel(64)
    drv, s, region, src, cl = _late_rows_run(model)
    run_loop(cl, model, model.busy)
    _check_late_rows(drv, s, region, src, cl, model)


@pytest.mark.slow       # the whole engine in the Amaranth simulator: minutes
def test_engine_lockstep_amaranth_init_psn_rows():
    """MR-ENG-308 on the RTL: ``Engine`` (Amaranth simulator) in lockstep with EngineModel, every
    output every cycle, backpressure on every output and random AXI latencies, on
    :func:`test_engine_model_init_psn_rows`'s run: 0 mismatches and its checks."""
    from metaroce.hdl.engine import Engine
    from metaroce.tb.lockstep import run_amaranth
    model = EngineModel(64, max_frame=2048)
    drv, s, region, src, cl = _late_rows_run(model)
    core = run_amaranth(Engine(64, max_frame=2048), model, cl, busy=model.busy)
    assert core.mismatches == 0
    _check_late_rows(drv, s, region, src, cl, model)
    print("engine lockstep, init PSN rows:", {"cycles": core.cycle})


#: MR-ENG-307: the wrap run's scenario (64 KiB each way at 5 % loss, every path from 2^24 - 8)
def _wrap_config():
    from metaroce.models import cosim, cosim_tx
    return cosim.Config(**{**cosim_tx.TX_CONFIG, "n_conns": 1, "nbytes": 65536, "back": 65536, "loss": 0.05,
                           "seed": 3, "init_psn": (1 << 24) - 8})


def _check_wrap(r, cfg):
    """MR-ENG-307: ok, every path of both engines across the wrap, each host's completions the
    reference endpoints' on the same scenario (model <-> model)."""
    assert r["ok"] and r["sha256_match"] and r["fabric"]["lost"] > 0
    for e in r["engines"].values():
        assert e["psn_wrap"]["paths"] == e["psn_wrap"]["wrapped"] == 4, e["psn_wrap"]
    ref = ce.run_reference_pair(cfg, *ce.reference_writes(cfg, "peer"))
    assert ref["ok"] and [r["engines"][h]["completions_digest"] for h in ("h0", "h1")] == ref["completions_digest"]


@pytest.mark.slow       # two engines' models: 83 s at load 20
def test_two_engines_model_psn_wrap():
    """MR-ENG-306/307 on the models (model <-> model engines): the wrap run's checks."""
    cfg = _wrap_config()
    _check_wrap(ce.run_peer_model(cfg, pair=True), cfg)


@pytest.mark.slow       # the pair build of the block engine under Verilator (minutes), lockstep
def test_two_engines_rtl_psn_wrap():
    """MR-ENG-307: two RTL engines (the pair build, Verilator) in lockstep with EnginePairModel,
    every path's initial PSN 2^24 - 8 both ways through their table 9 rows: 0 mismatches and
    the wrap run's checks."""
    from metaroce.commands.cosim import run_rtl
    cfg = _wrap_config()
    r = run_rtl(cfg, lockstep=True, direction="pair")
    assert r["mismatches"] == 0
    _check_wrap(r, cfg)
    print("two engines across the wrap:", {k: r[k] for k in ("mismatches", "cycles", "goodput_vs_limit",
                                                            "goodput_gbps", "wall_s", "cycles_per_s")},
          r["fabric"]["lost"], {h: (e["psn_wrap"], e["completions_digest"]) for h, e in r["engines"].items()})


def test_cosim_init_psn_cli_errors(capsys):
    """MR-ENG-306: ``metaroce cosim --init-psn`` is a whole engine's option (with ``--peer rtl`` or
    ``endpoint``) and a 24-bit PSN; ``Config.validate`` refuses a PSN beyond 24 bits too."""
    from metaroce.cli import main
    from metaroce.models import cosim
    assert main(["cosim", "--init-psn", "5", "--json"]) == 2
    assert main(["cosim", "--peer", "rtl", "--init-psn", str(1 << 24), "--json"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 2 and "--peer rtl" in err[0] and "0..16777215" in err[1]
    with pytest.raises(ValueError, match="init_psn"):
        cosim.Config(init_psn=-1).validate()


@pytest.mark.slow       # a model loopback with the row scheduler
def test_engine_rows_init_psn_rows():
    """MR-ENG-304, MR-ENG-316 with the row scheduler (``rows``, MR-ENG-291; its ``s_psn`` since
    MR-TXS-481, not always ready): :func:`test_engine_model_init_psn_rows`'s run, every path's
    first data PSN the table 9 row's (4 below the wrap), the 4 late rows of the started
    connection ignored and counted, the other connection's landed (not counted)."""
    from metaroce.models.cosim import run_loop
    model = EngineModel(64, rows=True)
    drv, s, region, src, cl = _late_rows_run(model)
    run_loop(cl, model, model.busy)
    r = ce.check(drv, region, src)
    assert r["lost"] > 0 and len(drv.psns) == 4 and all(WRAP in ps for ps in drv.psns.values())
    assert cl.counters["eng"][PSN_IGNORED_CTR] == model.psn.ctr == 4 and model.psn.writes == 4 + 5


@pytest.mark.slow       # runs to its cycle bound
def test_engine_with_wrong_psn_rows_fails(monkeypatch):
    """MR-ENG-306, negative control: the loopback of ``test_engine_model_init_psn_rows`` with its
    RX expecting 2^24 - 4 but its table 9 rows 2^23 away (the TX half's PSNs not the ones the
    RX's path rows expect; without rows the TX's 0 is only 4 ahead, inside the RX's window,
    and the run completes): the RX takes the frames for duplicates (2^23 behind in the half
    space, counted), accepts and places nothing, and the run does not finish."""
    from metaroce.models.cosim import run_loop
    from metaroce.models.regs import counter_names
    rows = ce.tx_psn_rows
    monkeypatch.setattr(ce, "tx_psn_rows", lambda qp, psn: rows(qp, (psn + (1 << 23)) % (1 << 24)))
    model = EngineModel(64)
    drv, s, region, src = ce.loopback_run(64, 5000, seed=5, loss=0.0, n_writes=2, init_psn=WRAP)
    with pytest.raises(AssertionError, match="not finished"):
        run_loop(drv, model, model.busy, max_cycles=20_000)
    rx = dict(zip(counter_names(), model.rx.rx.rx.counters))
    # 2^23 behind the expected PSN in the half space: duplicates, never accepted
    assert rx["DUPLICATE"] > 0 and rx["ACCEPTED"] == 0 and rx["PLACED_BYTES"] == 0
    assert all(min(ps) == WRAP - (1 << 23) for ps in drv.psns.values())
