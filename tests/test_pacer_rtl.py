"""Pacing's per-frame part (hdl/pacer.py ``PacerFrame``, block ``pacer_frame``) under Verilator
against its cycle model (MR-CW-098): tb/pacer.py ``pacer_lockstep``."""

import pytest


@pytest.mark.slow
def test_pacer_frame_rtl_lockstep():
    """MR-CW-098, MR-CW-097, MR-CW-105: 1,000 random records (MR-CW-102: short frames among
    them) through the registered instance with idle cycles and backpressure: 0 mismatches,
    every turn ``PacerFrameModel``'s, short frames of paced connections among them."""
    from metaroce.blocks import BLOCKS
    from metaroce.sim import verilator as vl
    from metaroce.tb import build as tb_build
    b = tb_build.build(BLOCKS["pacer_frame"], 64)
    row = vl.run_one(b, "metaroce.tb.pacer", "pacer_lockstep", {"PF_SEED": "7", "PF_N": "1000"},
                     out_var="PF_OUT")
    assert row["mismatches"] == 0 and row["ok"] > 500 and row["refused"] > 10
    assert row["short"] > 50
