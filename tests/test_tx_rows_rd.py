"""The rows' ``m_rd`` in the TX (docs/spec/hw-tx.md section 2.15, MR-TX-333..336):
``Tx(rows=True, rd_rows=True)`` against ``TxCycleModel(rows=True, rd_rows=True)`` on the TX
lockstep's traffic (READs and atomics among the work requests) with ``m_rd.ready`` random, and
the wrong form of the join that takes no notice of ``m_rd.ready``."""
import random

import pytest

from metaroce.models import tx_cases as xc
from metaroce.models.rx import pack, unpack
from metaroce.models.tx import RD_INPUTS, RD_OUTPUTS, SMALL, TxCycleModel
from metaroce.models.tx_sched import TxSchedModel
from metaroce.models.tx_sched_rows import TxSchedRowsModel, replay

_SCHED = ("chunk_window", "mtu", "cwnd", "conn_window", "path_pkts", "ack_every", "resend_depth")
#: the opcodes of a READ's and an atomic's request frames (MR-TXS-063, MR-TXS-099)
RD_OPCODES = (0xC6, 0xC8, 0xC9)


def sched_sem(params=SMALL):
    return TxSchedModel(params["conns"], params["streams"], params["paths"], params["depth"],
                        **{k: params[k] for k in _SCHED})


class RdTxDriver(xc.Driver):
    """The TX driver with ``m_rd.ready`` random (``p_rd``, a generator of its own) and, while
    ``s_wr`` is not valid, another work request's payload on it (the rows' message-number read
    address moves, MR-TXS-326); logs the READs and atomics taken on ``m_rd`` and the cycles one
    offered waited (MR-TX-335)."""

    def __init__(self, *a, p_rd=0.5, **kw):
        super().__init__(*a, **kw)
        self.rd_rng, self.p_rd = random.Random(0x5244), p_rd
        self.taken_rd, self.held = [], 0

    def inputs(self):
        inp = super().inputs()
        inp["m_rd__ready"] = int(self.rd_rng.random() < self.p_rd)
        if not inp["s_wr__valid"] and self.items and not self._phase:
            inp["s_wr__payload"] = pack(self.lay.sched.wr, self.rd_rng.choice(self.items))
        return inp

    def observe(self, inp, out):
        if out.get("m_rd__valid"):
            if inp["m_rd__ready"]:
                self.taken_rd.append(unpack(self.lay.sched.rd, out["m_rd__payload"]))
            else:
                self.held += 1
                assert not out["s_wr__ready"], "MR-TXS-327: a READ offered waits at s_wr"
        super().observe(inp, out)


def rd_tx_run(n, seed, *, rtl=False, hdl=None, rows=True, **kw):
    """``n`` work requests of the TX lockstep's traffic (READs and atomics among them, bad ones,
    20 % loss by default) through ``TxCycleModel(rows=rows, rd_rows=True)``, alone or (``rtl``)
    in lockstep with ``Tx(rows=rows, rd_rows=True)`` (``hdl``: a wrong form's module ``tx``).
    Returns ``(core or None, sem, items, driver, model)``."""
    sem = sched_sem()
    items, lay = xc.traffic(sem, n, seed=seed, max_len=1500)
    model = TxCycleModel(64, **SMALL, rows=rows, rd_rows=True)
    kw.setdefault("loss", 0.2)
    drv = RdTxDriver(model.lay, 64, items, lay, xc.templates(2, 4), seed=seed, **kw)
    if not rtl:
        from metaroce.models.driver import run_alone
        run_alone(model, drv)
        return None, sem, items, drv, model
    from metaroce.hdl import tx as tx_mod
    from metaroce.tb.lockstep import run_amaranth
    dut = (hdl or tx_mod).Tx(64, **SMALL, rows=rows, rd_rows=True)
    return run_amaranth(dut, model, drv, busy=model.busy), sem, items, drv, model


def check_rd_tx(sem, items, drv, model):
    """MR-TX-335: the checker (MR-TX-150: every work request completes, its frames and status),
    each good READ and atomic taken on ``m_rd`` once with the message number its request frame
    carries, READs held at the port by ``m_rd.ready``; with the rows, their operations replay on
    the register scheduler's semantics with MR-TXS-328's check of every READ taken."""
    xc.check(sem, items, drv)
    good = [w for w in items if w["op"] in (4, 5, 6) and not sem.wr_status(w)]
    sent = {(f.bth.dest_qp - 0x100, f.mrdh.stream, f.mrdh.msg) for f in drv.res["frames"]
            if f.bth.opcode in RD_OPCODES}
    assert len(drv.taken_rd) == len(good) >= 3
    assert {(r["conn"], r["stream"], r["msg"]) for r in drv.taken_rd} == sent
    assert {r["wr_id"] for r in drv.taken_rd} == {w["wr_id"] for w in good}
    assert drv.held
    if model.rows:
        replay(model.sched)
        assert sum(1 for e in model.sched.events if e[0] == "rd") == len(good)
        assert model.sched.rd_stale, "MR-TXS-326: no READ waited for its message number's read"


def test_options_and_ports():
    """MR-TX-333, MR-TX-334: ``rows`` with ``rd_rows`` builds the rows with ``m_rd`` (in the model
    and the RTL), the TX's ports those of ``Tx(rd_rows=True)``, the model's port lists with
    ``m_rd`` (with either scheduler); ``rows`` with pacing still refused (MR-TX-317)."""
    from metaroce.hdl.tx import Tx
    from metaroce.hdl.tx_sched_rows import TxSchedRows
    m = TxCycleModel(64, **SMALL, rows=True, rd_rows=True)
    assert isinstance(m.sched, TxSchedRowsModel) and m.sched.rd_rows
    names = TxCycleModel.port_names()
    for mm in (m, TxCycleModel(64, **SMALL, rd_rows=True)):
        assert mm.port_names() == {"inputs": names["inputs"] + RD_INPUTS,
                                   "outputs": names["outputs"] + RD_OUTPUTS}
    t, r = Tx(64, **SMALL, rd_rows=True), Tx(64, **SMALL, rows=True, rd_rows=True)
    for blk in (t, r, t.sched, r.sched, t.rtx, r.rtx, t.data, r.data, t.cwnd, r.cwnd):
        blk._MustUse__silence = True            # inspected, not elaborated
    assert isinstance(r.sched, TxSchedRows) and r.sched.rd_rows
    assert t.signature == r.signature and "m_rd" in r.signature.members
    for bad in (TxCycleModel, Tx):
        with pytest.raises(ValueError):
            bad(64, **SMALL, rows=True, rd_rows=True, pacing=True)


@pytest.mark.parametrize("rows", [True, pytest.param(False, marks=pytest.mark.slow)])
def test_model_rd_rows(rows):
    """MR-TX-335 (model): the TX model with ``rd_rows`` on 10 work requests (seed 1: 3 READs and
    atomics among them), ``m_rd.ready`` half the cycles, 20 % loss: :func:`check_rd_tx`, with the
    rows and with the register scheduler (the same checks hold of both)."""
    _, sem, items, drv, model = rd_tx_run(10, 1, rows=rows)
    check_rd_tx(sem, items, drv, model)


@pytest.mark.slow
def test_lockstep_rows_rd_rows():
    """MR-TX-335: ``Tx(rows=True, rd_rows=True)`` against ``TxCycleModel(rows=True,
    rd_rows=True)``, every output every cycle (``m_rd``'s payload and valid too), 10 work
    requests of the TX lockstep's traffic (seed 1; both connections and streams, READs and
    atomics, bad requests, idle inputs and other payloads on an idle ``s_wr``, backpressure on
    every output, AXI latency, 20 % loss, timers and tail probes), ``m_rd.ready`` random: 0
    mismatches and :func:`check_rd_tx`."""
    core, sem, items, drv, model = rd_tx_run(10, 1, rtl=True)
    assert core.mismatches == 0
    check_rd_tx(sem, items, drv, model)


@pytest.mark.slow
def test_lockstep_rows_rd_rows_join_wrong_form_fails():
    """MR-TX-336 (negative control): the TX whose join takes the rows' ``m_rd`` as always ready
    (the port's valid and payload out, the scheduler's ``m_rd.ready`` tied to 1) mismatches the
    model on the same run."""
    from metaroce.tb.lockstep import Mismatch, wrong_form
    hdl = wrong_form("tx", "            wiring.connect(m, sched.m_rd, flipped(self.m_rd))",
                     "            m.d.comb += [self.m_rd.valid.eq(sched.m_rd.valid),\n"
                     "                         self.m_rd.payload.eq(sched.m_rd.payload),\n"
                     "                         sched.m_rd.ready.eq(1)]")
    with pytest.raises(Mismatch):
        rd_tx_run(10, 1, rtl=True, hdl=hdl)
