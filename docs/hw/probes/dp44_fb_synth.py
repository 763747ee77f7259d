"""Area probe, not part of the design (dp44): the frame builder alone at a width, as the block
``frame_builder`` (``all``) or as ``TxData`` builds it (``v4``: ``FrameBuilder(W,
ipv4_only=True)``, MR-TX-466/467), with ``metaroce synth``'s flow (Amaranth's RTLIL,
``synth_xilinx -family xcup`` resources; with ``levels`` also the generic 6-LUT levels run,
MR-FLOW-010). Prints one JSON object. Run from the repository root:

    nice -n 5 .venv/bin/python docs/hw/probes/dp44_fb_synth.py 512|64 all|v4 [levels] 2>/dev/null"""
import json
import sys

from metaroce.hdl.frame_builder import FrameBuilder
from metaroce.sim import synth
from metaroce.sim.verilator import generate_rtlil


def run(width, ipv4_only, levels=False):
    text = generate_rtlil(FrameBuilder(width, ipv4_only=ipv4_only), "frame_builder",
                          drop_zero_init=True)
    rep = synth.synthesize(text, "frame_builder", lang="rtlil")
    out = {"width": width, "ipv4_only": ipv4_only, "luts": rep.luts, "ffs": rep.ffs,
           "lutram": rep.total.lutram, "brams": rep.brams, "seconds": rep.seconds,
           "icrc_luts": rep.modules["frame_builder.icrc"].luts}
    if levels:
        lv = synth.lut_levels(text, "frame_builder", lang="rtlil")
        out.update(lut_levels=lv.lut_levels, levels_path=lv.path)
    return out


if __name__ == "__main__":
    print(json.dumps(run(int(sys.argv[1]), sys.argv[2] == "v4", len(sys.argv) > 3)))
