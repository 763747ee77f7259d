"""A queued resend of a message that has completed is stale (docs/spec/hw-tx-sched.md section 36,
MR-TXS-460..464): the directed case of the slow ``test_tx_rtl_late_read_error`` mismatch (a
resend queued, its message failed and completed, its slot taken at once by the stream's next
message), each scheduler's RTL in Amaranth lockstep with its model; the RTL without the rule
against the model mismatches (it resends the new message's chunk never sent)."""

import pytest

from metaroce.hdl.tx_sched import TxSched
from metaroce.hdl.tx_sched_rows import TxSchedRows
from metaroce.models import tx_sched_cases as tc
from metaroce.models.tx_sched import SMALL, TxSchedCycleModel
from metaroce.models.tx_sched_rows import TxSchedRowsModel
from metaroce.models.wire import MrdhFlag
from metaroce.tb.lockstep import Mismatch, run_amaranth, wrong_form

#: MR-TXS-460's mark at the completion, the text each negative control takes out
_RULE = "with m.If(comp_act & (comp_conn == c) & (rq_slot[c][k][:sdb] == comp_e[:sdb])):"
_RULE_ROWS = "m.d.comb += mid.retx[k].stale.eq(1)"

_IDLE = {"s_wr__valid": 0, "s_wr__payload": 0, "s_acked__valid": 0, "s_acked__payload": 0,
         "s_resend__valid": 0, "s_resend__payload": 0, "s_fail__valid": 0, "s_fail__payload": 0,
         "now": 0, "m_frame__ready": 1, "m_sent__ready": 1, "m_cqe__ready": 1,
         "s_probe__valid": 0, "s_probe__payload": 0, "s_cwnd__valid": 0, "s_cwnd__payload": 0}


class _Phases:
    """A directed driver: phases in order, each ``(ready, offers)``: once ``ready()`` holds
    and every offer of the phase before was taken, ``offers()`` (port name -> payload) are
    offered, each valid until its port takes it; then idle until the model is quiet."""

    def __init__(self, phases, tail=80):
        self.phases, self.k, self.tail, self.finished = list(phases), 0, tail, False
        self.pending, self.cycles = {}, 0

    def inputs(self):
        if not self.pending and self.k < len(self.phases) and self.phases[self.k][0]():
            self.pending = dict(self.phases[self.k][1]())
            self.k += 1
        ins = dict(_IDLE)
        for port, pay in self.pending.items():
            ins.update({f"{port}__valid": 1, f"{port}__payload": pay})
        return ins

    def observe(self, inp, out):
        self.cycles += 1
        self.pending = {p: v for p, v in self.pending.items() if not out[f"{p}__ready"]}

    def settle(self, busy):
        if self.k >= len(self.phases) and not self.pending:
            self.tail = self.tail - 1 if not busy() else self.tail
        self.finished = self.tail <= 0 or self.cycles > 2000


def _reused_slot_phases(model):
    """Message A (slot 0) and three more, C1..C3, on connection 0, stream 0 (its ring of 4
    full); when all four are sent, connection 0's path windows closed (0: no resend leaves),
    C1's packet reported lost, then A's (queued behind C1's, which is live and waits for a
    window), and message B offered (it waits for a free entry); once A's lost report acted, A
    fails (a read error, LOC_PROT_ERR, lap 0) and completes (nothing in flight), B takes slot 0
    (lap 1); once B is taken the windows open: C1's chunk is resent, then A's queued resend is
    at the head with B's chunk 0 never sent."""
    lay = model.lay
    paths = model.lay.paths
    sent = []

    def wr(k):
        return lambda: {"s_wr": tc.pack(lay.wr, tc.wr_item(0, 0, 100, wr_id=k))}

    def window(p, cwnd):
        return lambda: {"s_cwnd": tc.pack(lay.cwnd, {"conn": 0, "path": p, "cwnd": cwnd})}

    def all_sent():
        sent[:] = [e for e in model.events if _sent_new(e)]
        return len(sent) >= 4

    def lost(slot, b=False):
        def offers():
            e = next(e for e in sent if _slot(e) == slot)
            rep = {"conn": 0, "path": _path(e), "slot": slot, "chunk": 0, "abort": 0, "lap": 0}
            return dict({"s_resend": tc.pack(lay.report, rep)},
                        **({"s_wr": tc.pack(lay.wr, tc.wr_item(0, 0, 100, wr_id=9))} if b else {}))
        return offers

    def a_lost():
        return any(_lost_slot(e) == 0 for e in model.events)

    def b_taken():
        return any(e[0] == "wr" and _wr_id(e) == 9 for e in model.events)

    def fail():
        return {"s_fail": tc.pack(lay.fail, {"conn": 0, "slot": 0, "status": 4, "lap": 0})}

    def always():
        return True
    return _Phases([*((always, wr(k)) for k in range(4)),
                    (all_sent, window(0, 0)), *((always, window(p, 0)) for p in range(1, paths)),
                    (always, lost(1)), (always, lost(0, b=True)), (a_lost, fail),
                    *((b_taken if p == 0 else always, window(p, SMALL["cwnd"]))
                      for p in range(paths))])


def _lost_slot(e):
    """The slot of a lost report acted on in either model's events, else None."""
    if e[0] == "resend" or (e[0] == "lost" and isinstance(e[2], dict)):
        return (e[1] if e[0] == "resend" else e[2])["slot"]
    return None


def _slot(e):
    return e[4] if e[0] == "packet" else e[5]["slot"]


def _wr_id(e):
    """A work request's id in either model's events."""
    return (e[1] if isinstance(e[1], dict) else e[2])["wr_id"]


def _sent_new(e):
    """A new packet in either model's events (the register one's action, the rows' op)."""
    if e[0] == "packet":
        return e[2] == "new"
    return e[0] == "sched" and e[5] is not None and not e[4]["mrdh_flags"] & MrdhFlag.RETX


def _path(e):
    return e[6] if e[0] == "packet" else e[5]["path"]


def _run(dut, model):
    core = run_amaranth(dut, model, _reused_slot_phases(model), busy=model.busy)
    return core, model


def _norm(e):
    """Either model's event as ("lost", slot), ("fail",), ("complete",), ("wr", id),
    ("drop",), ("packet", kind, slot), else None."""
    k = e[0]
    if k == "sched":
        res = e[3]
        if not isinstance(res, tuple):
            return None
        e = res
        k = e[0]
    if k == "packet":
        return ("packet", e[2], e[3] % SMALL["streams"] * SMALL["depth"] + e[4])
    if k in ("resend", "lost"):
        return ("lost", _lost_slot(e))
    if k == "wr":
        return ("wr", _wr_id(e))
    if k in ("fail", "complete", "drop"):
        return (k,)
    return None


def _assert_case(model):
    """The case happened in this order and the stale resend was dropped, never sent: A's
    resend queued, A failed and completed, B took slot 0, C1's resend sent, A's dropped,
    then B's chunk 0 sent once, as a new chunk."""
    ev = [n for n in map(_norm, model.events) if n is not None]
    order = [("lost", 1), ("lost", 0), ("fail",), ("complete",), ("wr", 9),
             ("packet", "resend", 1), ("drop",), ("packet", "new", 0)]
    k = 0
    for x in order:                     # each after the one before
        assert x in ev[k:], (x, ev)
        k = ev.index(x, k) + 1
    assert ev.count(("drop",)) == 1 and ev.count(("packet", "new", 0)) == 2      # A's, B's
    assert [x for x in ev if x[:2] == ("packet", "resend")] == [("packet", "resend", 1)]


def test_stale_resend_of_a_completed_message_dropped():
    """MR-TXS-460, MR-TXS-461, MR-TXS-463: a resend queued for message A (slot 0, chunk 0)
    behind a live one, A failed and completed, its slot taken by message B at once: when it
    reaches the head it is dropped and B's chunk 0 goes once as a new chunk, never as a
    resend; the register scheduler's RTL in lockstep with its model, 0 mismatches."""
    core, model = _run(TxSched(64, **SMALL), TxSchedCycleModel(64, **SMALL))
    assert core.mismatches == 0
    _assert_case(model)


def test_rows_stale_resend_of_a_completed_message_dropped():
    """MR-TXS-460..463: the same case in the row scheduler: the FIFO entry's stale bit set by
    the completion op, the drop on it; RTL in lockstep with its model, 0 mismatches."""
    core, model = _run(TxSchedRows(64, **SMALL), TxSchedRowsModel(64, **SMALL))
    assert core.mismatches == 0
    _assert_case(model)


@pytest.mark.slow
@pytest.mark.parametrize("rows", [False, True])
def test_stale_resend_without_the_rule_mismatches(rows):
    """MR-TXS-463 (negative controls): each scheduler's RTL without MR-TXS-460's mark at the
    completion (the register one: the rule before, a queued resend dropped only while its
    slot's entry is failed or its chunk acknowledged; the rows: the stale bit never set) resends
    B's chunk 0, never sent, against its model."""
    if rows:
        bad = wrong_form("tx_sched_rows", _RULE_ROWS, "pass")
        dut, model = bad.TxSchedRows(64, **SMALL), TxSchedRowsModel(64, **SMALL)
    else:
        bad = wrong_form("tx_sched", _RULE, "with m.If(0):")
        dut, model = bad.TxSched(64, **SMALL), TxSchedCycleModel(64, **SMALL)
    with pytest.raises(Mismatch, match="m_frame"):
        _run(dut, model)
