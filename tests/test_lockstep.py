"""Self-test of the generic lockstep harness (tb/lockstep.py) on a stand-in block
(tb/standin.py: AXI4-Stream register slice + per-frame record), under Verilator.

The same harness checks the RX parser (MR-HW IDs in tests/test_parser_rtl.py); here it must
(1) pass a correct design in every traffic shape with data and records right, and
(2) catch a planted RTL bug, naming the cycle, the signal, expected/actual and the beats.
"""
import pytest

from metaroce.sim import verilator as vl
from metaroce.tb.standin import FrameStats, FrameStatsModel


@pytest.mark.parametrize("width", [64])
def test_lockstep_passes_correct_design(width):
    b = vl.build("standin", FrameStats, parameters={"width": width})
    vl.run(b, "metaroce.tb.standin", seed=1234,
           extra_env={"STANDIN_FRAMES": "80", "COCOTB_TEST_FILTER": "lockstep_frames"})


def test_lockstep_catches_planted_bug():
    """The mismatch names cycle, signal, expected/actual and the last beats, and the
    waveform written for the run (VCD here; FST where liblz4-dev is installed)."""
    b = vl.build("standin_bug", FrameStats, parameters={"width": 32, "bug": "count"}, waves=True)
    results = vl.run(b, "metaroce.tb.standin", testcase=["lockstep_catches_bug", "lockstep_counts_mismatches"],
                     seed=99, waves=True,
                     extra_env={"STANDIN_EXPECT_MISMATCH": "frames", "WAVES": "1"})
    trace = results.parent / b.waves_file
    assert trace.is_file() and trace.stat().st_size > 1000


@pytest.mark.parametrize("mode", ["pass", "mismatch", "combinational", "triggers"])
def test_drive_registered_outputs(mode):
    """The fast loop with one simulator callback per cycle (tb/lockstep.drive with
    registered_outputs, used by the parser's testbench): a correct design passes and a second
    run stays in step; a planted bug is reported at the cycle and on the signal the model
    alone predicts; an output that follows an input within the cycle is refused (and passes
    the two-trigger loop, registered_outputs=False)."""
    if mode == "mismatch":
        b = vl.build("standin_bug", FrameStats, parameters={"width": 32, "bug": "count"}, waves=True)
    else:
        b = vl.build("standin", FrameStats, parameters={"width": 64})
    vl.run(b, "metaroce.tb.standin", seed=5,
           extra_env={"STANDIN_DRIVE": mode, "COCOTB_TEST_FILTER": "drive_registered$"})


def test_model_alone_register_slice():
    """The stand-in model itself: a beat offered while the output is stalled goes to the
    skid register and comes out later, in order (sanity of the reference)."""
    m = FrameStatsModel(32)
    base = {"s_axis__tdata": 0, "s_axis__tkeep": 0xF, "s_axis__tvalid": 0, "s_axis__tlast": 0,
            "s_axis__tuser": 0, "m_axis__tready": 0, "m_meta__ready": 1}
    out = m.step({**base, "s_axis__tvalid": 1, "s_axis__tdata": 1})
    assert out["s_axis__tready"] == 1 and out["m_axis__tvalid"] == 0
    out = m.step({**base, "s_axis__tvalid": 1, "s_axis__tdata": 2})
    assert out["m_axis__tvalid"] == 1 and out["m_axis__tdata"] == 1 and out["s_axis__tready"] == 1
    out = m.step({**base, "s_axis__tvalid": 1, "s_axis__tdata": 3})
    assert out["s_axis__tready"] == 0  # skid full
    out = m.step({**base, "m_axis__tready": 1})
    assert out["m_axis__tdata"] == 1
    out = m.step({**base, "m_axis__tready": 1})
    assert out["m_axis__tdata"] == 2 and out["m_axis__tvalid"] == 1
