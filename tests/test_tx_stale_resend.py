"""A queued resend of a message that has completed is stale (docs/spec/hw-tx-sched.md section 36,
MR-TXS-460..464): the directed case of the slow ``test_tx_rtl_late_read_error`` mismatch (a
resend queued, its message failed and completed, its slot taken at once by the stream's next
message), the register scheduler's model and RTL in Amaranth lockstep; the RTL without the rule
against the model mismatches (it resent the new message's chunk never sent)."""

import pytest

from metaroce.hdl.tx_sched import TxSched
from metaroce.models import tx_sched_cases as tc
from metaroce.models.tx_sched import SMALL, TxSchedCycleModel
from metaroce.tb.lockstep import Mismatch, run_amaranth, wrong_form

from test_tx_sched_amaranth import _Script

class _Steps(_Script):
    """``_Script`` with the failure ports driven too (0 unless a step sets them)."""

    def inputs(self):
        return dict({"s_fail__valid": 0, "s_fail__payload": 0}, **super().inputs())


#: MR-TXS-460's mark of the completion, the one text the negative control takes out
_RULE = "with m.If(comp_act & (comp_conn == c) & (rq_slot[c][k][:sdb] == comp_e[:sdb])):"


def _reused_slot_script(model):
    """Message A (slot 0) and three more on connection 0, stream 0 (the ring of 4 full); A's
    packet reported lost (queued for resend) with message B offered (waiting for a free entry);
    in the cycle after the lost report acts, A fails (a read error: LOC_PROT_ERR); A completes
    (nothing in flight), and B takes slot 0 (lap 1) in the next cycle, before the resend head
    is decided on."""
    lay = model.lay
    sent = []

    def wr(k):
        def step(seen):
            # offered once, when the port takes it (the register empty)
            if model.wq is not None or k in posted:
                return {}
            posted.add(k)
            return {"s_wr__valid": 1,
                    "s_wr__payload": tc.pack(lay.wr, tc.wr_item(0, 0, 100, wr_id=k))}
        return step
    posted = set()

    def wait_sent(n):
        def step(seen):
            for o in seen[len(sent_seen):]:
                sent_seen.append(o)
                if o["m_sent__valid"]:
                    sent.append(tc.unpack(lay.sent, o["m_sent__payload"]))
            return {}
        return [step] * n
    sent_seen = []

    def lost_and_b(seen):
        a = next(f for f in sent if f["slot"] == 0)
        rep = {"conn": 0, "path": a["path"], "slot": 0, "chunk": 0, "abort": 0, "lap": a["lap"]}
        return {"s_resend__valid": 1, "s_resend__payload": tc.pack(lay.report, rep),
                "s_wr__valid": 1, "s_wr__payload": tc.pack(lay.wr, tc.wr_item(0, 0, 100,
                                                                              wr_id=9))}

    def fail_after_lost(seen):
        if not fail_state and model.events and model.events[-1][0] == "resend":
            fail_state.append(1)
            f = {"conn": 0, "slot": 0, "status": 4, "lap": 0}
            return {"s_fail__valid": 1, "s_fail__payload": tc.pack(lay.fail, f)}
        return {}
    fail_state = []
    steps = ([wr(k) for k in range(4) for _ in range(3)] + wait_sent(40) + [lost_and_b]
             + [fail_after_lost] * 10)
    return _Steps(steps, tail=80)


def _run(dut):
    model = TxSchedCycleModel(64, **SMALL)
    core = run_amaranth(dut, model, _reused_slot_script(model), busy=model.busy)
    return core, model


def test_stale_resend_of_a_completed_message_dropped():
    """MR-TXS-460, MR-TXS-461, MR-TXS-463: a resend queued for message A (slot 0, chunk 0),
    A failed and completed, its slot taken by message B at once: the resend is dropped, B's
    chunk 0 is sent once as a new chunk (never as a resend); the register scheduler's RTL in
    lockstep with its model, 0 mismatches."""
    core, model = _run(TxSched(64, **SMALL))
    assert core.mismatches == 0
    ev = model.events
    kinds = [e[0] for e in ev]
    i_lost = kinds.index("resend")
    i_fail = kinds.index("fail")
    i_comp = next(i for i, e in enumerate(ev) if e[0] == "complete" and e[1] == 0)
    i_b = next(i for i, e in enumerate(ev) if e[0] == "wr" and e[1]["wr_id"] == 9)
    i_drop = kinds.index("drop")
    # the case: queued, failed, completed, slot reused, then the stale head dropped
    assert i_lost < i_fail < i_comp < i_b < i_drop
    assert ev[i_fail][1] == [(0, 4)]
    pkts = [e for e in ev if e[0] == "packet"]
    assert not any(e[2] == "resend" for e in pkts)
    # B (slot 0, its ring's lap 1) sends its chunk 0 once, after the drop
    b = [k for k, e in enumerate(ev) if e[0] == "packet" and e[4] == 0 and k > i_b]
    assert len(b) == 1 and b[0] > i_drop
    assert not any(model.sem.conn[c]["retx"] for c in range(SMALL["conns"]))


@pytest.mark.slow
def test_stale_resend_without_the_rule_mismatches():
    """MR-TXS-463 (negative control): the register scheduler's RTL without MR-TXS-460's mark at
    the completion (the rule before: a queued resend dropped only while its slot's entry is
    failed or its chunk acknowledged) resends B's chunk 0, never sent, against the model."""
    bad = wrong_form("tx_sched", _RULE, "with m.If(0):")
    with pytest.raises(Mismatch):
        _run(bad.TxSched(64, **SMALL))
