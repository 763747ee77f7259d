"""The message table's configuration write (docs/spec/hw-rx.md MR-RX-284, MR-RX-303..305): a
table-4 write writes `next` and clears the slots' `valid` bits; the slots' other fields are S5's
write data's (the row S5's registers compute, whatever record or bubble they hold). These tests
make S5's write data hold a valid slot when a stream is reopened, and a later record of that
stream read that slot, so a form that does not empty the slots is caught (rxa35 had a positive
lockstep only: its stimulus met write data whose slots were all empty).

How: a quiet pipeline (MR-RX-061: a configuration write waits for `CFG_QUIET` cycles without a
record) holds the driver's idle record in S5, all zeros: connection 0, stream 0, message 0,
length 0. Its message stage runs on row 0 ({connection 0, stream 0}) and marks slot 0 taken
(MR-RX-081: `valid` = hit or old), and done (placed 0 = length 0); with row 0's `next` at 0 the
delivery run then empties the slot again, so S5's write data has no valid slot (why rxa35's
reopen stimulus saw none). Row 0 opened at message 1 (one table-4 write, before the traffic)
leaves the idle record outside the window, no delivery run: S5's write data then has slot 0
valid with length 0 and kind 0. The message cases' reopen at message 1,000 (slot 0) and its
first chunk (another length) then read slot 0.
"""
import pytest

from metaroce.models import rx_cases as rc
from metaroce.models.rx import TABLE_MSG
from metaroce.tb.lockstep import Mismatch

from test_rx_amaranth import SMALL, run_lockstep


def _cases():
    """MR-RX-303: row 0 opened at message 1, then ``rc.message_cases`` (a stream reopened at
    message 1,000 and its two chunks, message 1,000 of another length than S5's idle record)."""
    s = rc.Setup(*SMALL, seed=3, mtu_log2=6)
    return s, [rc.CfgWrite(TABLE_MSG, 0, 1, "stream0.0-at-1")] + rc.message_cases(s)


def _run(**kw):
    s, cases = _cases()
    return run_lockstep(64, s, cases, seed=6, p_idle=0.1, p_bp=0.4, **kw)


@pytest.mark.slow
def test_msg_cfg_write_meets_valid_slot():
    """MR-RX-284, MR-RX-303, MR-RX-304: with S5's write data holding slot 0 valid at the reopen,
    the message cases in lockstep with the model: 0 mismatches, every completion the model's
    (8), the reopened stream's two chunks accepted."""
    res = _run()
    assert len(res["cqe"]) == 8


@pytest.mark.slow
def test_msg_cfg_all_zero_row_passes(monkeypatch):
    """MR-RX-304: main's form before MR-RX-284 (MR-RX-080's row of zeros,
    ``MSG_CFG_VALID_ONLY = False``) passes the same lockstep."""
    import metaroce.hdl.rx as hdl_rx
    monkeypatch.setattr(hdl_rx, "MSG_CFG_VALID_ONLY", False)
    assert len(_run(share=False)["cqe"]) == 8


@pytest.mark.slow
def test_msg_cfg_kept_valid_fails(monkeypatch):
    """MR-RX-305 (negative control): a configuration write that keeps S5's `valid` bits
    (``hdl.rx._msg_cfg_valid`` returning S5's bit: the slots not emptied) fails the lockstep of
    test_msg_cfg_write_meets_valid_slot."""
    import metaroce.hdl.rx as hdl_rx
    monkeypatch.setattr(hdl_rx, "_msg_cfg_valid", lambda s5_msg_rec, valid: valid)
    with pytest.raises(Mismatch):
        _run(share=False)


@pytest.mark.slow
def test_msg_cfg_kept_valid_needs_row0(monkeypatch):
    """MR-RX-305: the same wrong form passes without row 0 opened at message 1 (S5's idle record
    then empties its slot in its delivery run): what made rxa35's negative control miss."""
    import metaroce.hdl.rx as hdl_rx
    monkeypatch.setattr(hdl_rx, "_msg_cfg_valid", lambda s5_msg_rec, valid: valid)
    s = rc.Setup(*SMALL, seed=3, mtu_log2=6)
    res = run_lockstep(64, s, rc.message_cases(s), seed=6, p_idle=0.1, p_bp=0.4, share=False)
    assert len(res["cqe"]) == 8
