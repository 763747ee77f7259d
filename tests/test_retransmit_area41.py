"""The retransmit unit's area cuts of session 41 (hdl/retransmit.py; docs/spec/hw-tx.md section
1.5o): the queues' stored items (MR-TX-421), the job's terms computed once on the selected row
(MR-TX-423). No cycle changes: the unit's locksteps
(tests/test_retransmit_amaranth.py, the Verilator one in tests/test_retransmit_rtl.py) run
unchanged on them."""
import pytest

from metaroce.hdl import retransmit as R
from metaroce.models import records
from metaroce.models import retransmit_cases as rc
from metaroce.models.retransmit import SMALL, RetransmitCycleModel, layouts
from metaroce.tb.lockstep import Mismatch, run_amaranth, wrong_form


def test_queues_hold_narrow_items():
    """MR-TX-421: the unit at the engine's parameters (2 x 4, a pool of 256), elaborated: the job
    queue holds a job without its conn and path (9 bits fewer than the model's job), the
    reports', errors' and probes' queues a path in its 2 bits (6 fewer), the ACK events' queue an
    srtt in DUR_BITS; the ports keep the model's layouts."""
    lay = layouts(2, 4, 256, health=True)
    u = R.Retransmit(64, conns=2, paths=4, pool=256, verdict_health=True)
    u._MustUse__silence = True          # elaborated here, not simulated
    subs = u.elaborate(None)._named_submodules
    held = {name: len(subs[f"{name}_q"][0].w_data) for name in ("job", "acked", "resend", "error",
                                                               "probe", "ackev")}
    assert held == {"job": lay.job.size - 9, "acked": lay.acked.size - 6, "resend": lay.resend.size - 6,
                    "error": lay.error.size - 6, "probe": lay.probe.size - 6,
                    "ackev": lay.ackev.size - (records.TIME_BITS - records.DUR_BITS)}
    assert u.m_acked.payload.shape() == lay.acked and u.m_ackev.payload.shape() == lay.ackev
    assert u.m_probe.payload.shape() == lay.probe and u.m_error.payload.shape() == lay.error


NARROW_WRONG = {
    # a report's path in one bit: paths 2 and 3 come out as 0 and 1
    "report_path_short": ('report_st = _stored_layout(lay.acked, {"path": pb})',
                          'report_st = _stored_layout(lay.acked, {"path": pb - 1})'),
    # the walker's path from the row's connection bits
    "walk_path_from_conn": ("w_path.eq(qjob.row[:pb])", "w_path.eq(qjob.row[pb:])"),
}


@pytest.mark.slow
@pytest.mark.parametrize("wrong", sorted(NARROW_WRONG))
def test_queues_narrow_wrong_forms_fail(wrong):
    """MR-TX-421: each wrong form of the narrowed items (a report's path cut to one bit, the
    walker's path taken from the row's connection bits) fails the random lockstep on 4 paths."""
    old, new = NARROW_WRONG[wrong]
    assert _lockstep_fails(wrong_form("retransmit", old, new).Retransmit), "the wrong form passed"


TERMS_WRONG = {
    # each term on S1a's registered row, not the row S1b selected (the forward missed)
    "n_unforwarded": ("~row.floor[:dist_bits] + 1)[:dist_bits]", "~mem_row.floor[:dist_bits] + 1)[:dist_bits]"),
    "sent_ok_unforwarded": ("sent_ok = ((s1_sent.psn == row.next_psn)", "sent_ok = ((s1_sent.psn == mem_row.next_psn)"),
    "next_psn_unforwarded": ("nrow.next_psn.eq(row.next_psn + 1)", "nrow.next_psn.eq(mem_row.next_psn + 1)"),
}


def _lockstep_fails(dut_cls, seed=1, n=200):
    model = RetransmitCycleModel(64, *SMALL)
    dut = dut_cls(64, conns=SMALL[0], paths=SMALL[1], pool=SMALL[2])
    drv = rc.Driver(model.lay, rc.traffic(*SMALL, n, seed=seed), seed=seed, p_idle=0.2, p_bp=0.4)
    try:
        core = run_amaranth(dut, model, drv, busy=model.busy)
    except Mismatch:
        return True
    return bool(core.mismatches)


@pytest.mark.slow
@pytest.mark.parametrize("wrong", sorted(TERMS_WRONG))
def test_job_terms_on_the_selected_row_wrong_forms_fail(wrong):
    """MR-TX-423: the job's terms (here the ACK's record count), the row write's next_psn + 1
    and a sent packet's sent_ok are computed on the row S1b selected: each computed on S1a's
    registered row instead (the previous write's forward missed) fails the random lockstep."""
    old, new = TERMS_WRONG[wrong]
    assert _lockstep_fails(wrong_form("retransmit", old, new).Retransmit), "the wrong form passed"
