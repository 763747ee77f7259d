"""qt38 (MR-HW-096): one queue alone on the ECP5 with the build's flow (area37_queue_ecp5.py's
run: synth_ecp5 -noiopad -nowidelut, MR-FLOW-026's memory policy, nextpnr's packing), in the forms
``fifo`` (``lib.fifo.SyncFIFO``), ``bypass`` (``SyncQueue``), ``headreg`` (``HeadRegQueue``),
``headblock`` (``HeadRegFIFO(block=True)``), with a reader whose ``r_en`` depends on ``r_data``
(``r_en = en & r_data[0]``, a port ``en``: the consumers of srcq and cqe_q close this loop) and the
deepest mapped paths (``ecp5_mapped_paths.py``: a block RAM's output starts at its 4,260 ps
clock-to-out). Prints one JSON row a form, then the paths; the runs are kept in OUT/FORM.

    .venv/bin/python docs/hw/probes/qt38_queue_ecp5.py WIDTH DEPTH OUT [FORM ...]
"""
import json
import subprocess
import sys
from pathlib import Path

from amaranth.back import verilog
from amaranth.hdl import Elaboratable, Module, Signal

from metaroce.hdl import queue

sys.path.insert(0, str(Path(__file__).parent))
import area37_queue_ecp5  # noqa: E402
import engine_block_ecp5  # noqa: E402

FORMS = {**area37_queue_ecp5.FORMS, "headreg": queue.HeadRegQueue,
         "headblock": lambda width, depth: queue.HeadRegFIFO(width=width, depth=depth, block=True)}


class Loop(Elaboratable):
    """The queue read by a consumer whose ``r_en`` depends on ``r_data`` (the loop qt38 cuts)."""

    def __init__(self, width, depth, form):
        self.q = FORMS[form](width=width, depth=depth)
        self.en = Signal()
        self.ports = [self.q.w_data, self.q.w_en, self.q.w_rdy, self.q.r_data, self.en,
                      self.q.r_rdy, self.q.level]

    def elaborate(self, platform):
        m = Module()
        m.submodules.q = self.q
        m.d.comb += self.q.r_en.eq(self.en & self.q.r_data[0])
        return m


def run(width, depth, form, out):
    w = Loop(width, depth, form)
    out.mkdir(parents=True, exist_ok=True)
    (out / "q.v").write_text(verilog.convert(w, name="top", ports=w.ports))
    res = engine_block_ecp5.main(out / "q.v", "top", out / "syn", nowidelut=True)
    p = res["nextpnr_packed"]
    return {"form": form, "width": width, "depth": depth, "COMB": p.get("TRELLIS_COMB"),
            "DP16KD": p.get("DP16KD"), "FF": p.get("TRELLIS_FF"), "yosys": res["yosys"]}


if __name__ == "__main__":
    width, depth, top = int(sys.argv[1]), int(sys.argv[2]), Path(sys.argv[3])
    forms = sys.argv[4:] or ["bypass", "headreg"]
    for form in forms:
        print("ROW", json.dumps(run(width, depth, form, top / form)), flush=True)
    for form in forms:
        print("PATHS", form, flush=True)
        subprocess.run([sys.executable, str(Path(__file__).parent / "ecp5_mapped_paths.py"),
                        str(top / form / "syn" / "mapped.json"), "6"], check=True)
