"""rxq36 (MR-HW-083..086): one queue alone on the ECP5 with the build's flow (synth_ecp5 -noiopad
-nowidelut, MR-FLOW-026's memory policy, nextpnr's packing): ``lib.fifo.SyncFIFO`` against
``hdl/queue.py``'s ``SyncQueue`` forms, at the engine's queue sizes. Prints one JSON row a run.

    .venv/bin/python docs/hw/probes/rxq36_queue_ecp5.py WIDTH DEPTH [FORM ...]

FORM: ``fifo`` (SyncFIFO) or ``bypass`` (SyncQueue).
"""
import json
import sys
import tempfile
from pathlib import Path

from amaranth.back import verilog
from amaranth.hdl import Elaboratable, Module
from amaranth.lib import fifo

from metaroce.hdl.queue import SyncQueue

sys.path.insert(0, str(Path(__file__).parent))
import engine_block_ecp5  # noqa: E402


class Wrap(Elaboratable):
    """The queue with its ports as the top's (so none is constant)."""

    def __init__(self, width, depth, form):
        self.q = (fifo.SyncFIFO(width=width, depth=depth) if form == "fifo"
                  else SyncQueue(width=width, depth=depth))
        self.ports = [self.q.w_data, self.q.w_en, self.q.w_rdy, self.q.r_data, self.q.r_en,
                      self.q.r_rdy, self.q.level]

    def elaborate(self, platform):
        m = Module()
        m.submodules.q = self.q
        return m


def run(width, depth, form):
    w = Wrap(width, depth, form)
    out = Path(tempfile.mkdtemp(prefix=f"rxq36_{form}_{width}x{depth}_"))
    src = out / "q.v"
    src.write_text(verilog.convert(w, name="top", ports=w.ports))
    res = engine_block_ecp5.main(src, "top", out / "syn", nowidelut=True)
    return {"form": form, "width": width, "depth": depth,
            "COMB": res["nextpnr_packed"].get("TRELLIS_COMB"), "DP16KD": res["nextpnr_packed"].get("DP16KD"),
            "FF": res["nextpnr_packed"].get("TRELLIS_FF"), "yosys": res["yosys"]}


if __name__ == "__main__":
    width, depth = int(sys.argv[1]), int(sys.argv[2])
    for form in sys.argv[3:] or ["fifo", "bypass"]:
        print("ROW", json.dumps(run(width, depth, form)), flush=True)
