"""TX frame builder RTL (hdl/frame_builder.py) against its cycle model under Verilator, every
output compared every cycle (MR-TXF-050, tb/frame_builder.py), at 64 bits (512 bits behind ``slow``;
the Amaranth simulator runs 512 bits in the default run): the endpoint
opcode, opcode-table, length and random cases plus the reference endpoint's frames of a real
write, with random idle cycles and backpressure; scapy's ICRC on every frame to port 4791; then
256-byte payloads back to back at one beat per cycle (MR-TXF-046). One cached build per width.

Knobs: TXF_RANDOM (random descriptors, default 100), TXF_SEED.
"""
import json
import os

import pytest

from metaroce import blocks
from metaroce.models import frame_builder_cases as fc
from metaroce.sim import verilator as vl
from metaroce.tb import build as tb_build


@pytest.mark.parametrize("width", [64, pytest.param(512, marks=pytest.mark.slow)])
def test_frame_builder_rtl_lockstep(width, tmp_path):
    """MR-TXF-030, MR-TXF-040..046, MR-TXF-050, MR-TXF-051."""
    b = tb_build.build(blocks.get("frame_builder"), width)
    extra = tmp_path / "endpoint.json"
    extra.write_text(json.dumps([{"desc": c.desc, "payload": c.payload.hex(), "name": c.name}
                                 for c in fc.endpoint_cases(12000)]))
    env = {"TXF_RANDOM": os.environ.get("TXF_RANDOM", "100"), "TXF_SEED": os.environ.get("TXF_SEED", str(width)),
           "TXF_EXTRA": str(extra)}
    row = vl.run_one(b, "metaroce.tb.frame_builder", "frame_builder_lockstep", env, out_var="TXF_OUT")
    assert row["mismatches"] == 0 and row["beats_per_cycle"] == 1.0
    assert row["scapy_checked"] > 100
