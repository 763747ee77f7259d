"""area37 (MR-HW-088): one queue alone on the ECP5 with the build's flow (``rxq36_queue_ecp5.py``'s
run: synth_ecp5 -noiopad -nowidelut, MR-FLOW-026's memory policy, nextpnr's packing), in the forms
``fifo`` (``lib.fifo.SyncFIFO``), ``bypass`` (``hdl/queue.py``'s SyncQueue), ``buffered``
(``lib.fifo.SyncFIFOBuffered``), ``block`` (BufferedQueue without MR-FLOW-028's collision mark),
``blockx`` (BufferedQueue as it is). Prints one JSON row a form.

    .venv/bin/python docs/hw/probes/area37_queue_ecp5.py WIDTH DEPTH [FORM ...]
"""
import json
import sys
import tempfile
from pathlib import Path

from amaranth.back import verilog
from amaranth.hdl import Elaboratable, Module
from amaranth.lib import fifo

from metaroce.hdl import queue

sys.path.insert(0, str(Path(__file__).parent))
import engine_block_ecp5  # noqa: E402

FORMS = {"fifo": fifo.SyncFIFO, "bypass": queue.SyncQueue, "buffered": fifo.SyncFIFOBuffered,
         "block": queue.BufferedQueue, "blockx": queue.BufferedQueue}


class Wrap(Elaboratable):
    """The queue with its ports as the top's (so none is constant)."""

    def __init__(self, width, depth, form):
        self.q = FORMS[form](width=width, depth=depth)
        self.ports = [self.q.w_data, self.q.w_en, self.q.w_rdy, self.q.r_data, self.q.r_en,
                      self.q.r_rdy, self.q.level]

    def elaborate(self, platform):
        m = Module()
        m.submodules.q = self.q
        return m


def run(width, depth, form):
    attrs = dict(queue.BUFFERED_ATTRS)
    if form == "block":
        queue.BUFFERED_ATTRS.pop("metaroce_collision")
    try:
        w = Wrap(width, depth, form)
        out = Path(tempfile.mkdtemp(prefix=f"area37_{form}_{width}x{depth}_"))
        src = out / "q.v"
        src.write_text(verilog.convert(w, name="top", ports=w.ports))
    finally:
        queue.BUFFERED_ATTRS.update(attrs)
    res = engine_block_ecp5.main(src, "top", out / "syn", nowidelut=True)
    return {"form": form, "width": width, "depth": depth,
            "COMB": res["nextpnr_packed"].get("TRELLIS_COMB"), "DP16KD": res["nextpnr_packed"].get("DP16KD"),
            "FF": res["nextpnr_packed"].get("TRELLIS_FF"), "yosys": res["yosys"]}


if __name__ == "__main__":
    width, depth = int(sys.argv[1]), int(sys.argv[2])
    for form in sys.argv[3:] or ["buffered", "block", "blockx"]:
        print("ROW", json.dumps(run(width, depth, form)), flush=True)
