"""serial47: the control path's cost with one adder (docs/spec/hw-cwnd.md MR-CW-144): hintc46's
probe (``cwnd_control_synth_46.py``: ``metaroce synth``'s report, synth_xilinx xcup, 64 bits)
with the LUT RAM cells (the shadows' memories, MR-CW-141), the per-module counts and the deepest
path's cells; also the block with the band from a port (MR-CW-146, as inside the TX). ``--tx``:
the TX with the control path outside and inside (the band shared, MR-TX-518) too.

    nice -n 10 .venv/bin/python docs/hw/probes/cwnd_control_synth_47.py [--tx]
"""
import importlib.util
import json
import pathlib
import sys

from metaroce.blocks import Block
from metaroce.commands.synth import report

_spec = importlib.util.spec_from_file_location(
    "cwnd_control_synth_46", pathlib.Path(__file__).with_name("cwnd_control_synth_46.py"))
_p46 = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_p46)


BAND_PORT = Block(name="cwnd_control_band_port",
                  component="metaroce.hdl.cwnd:cwnd_control_band_port_small",
                  model="metaroce.models.cwnd_control:cwnd_control_model_small",
                  tb="metaroce.tb.cwnd", help="the control path with the band from a port",
                  widths=(64,))


def main():
    blocks = _p46.BLOCKS + [BAND_PORT] + (_p46.TX if "--tx" in sys.argv else [])
    for b in blocks:
        r = report(b, 64)
        out = {k: r[k] for k in ("block", "luts", "lutram", "ffs", "brams", "dsps", "lut_levels",
                                 "seconds")}
        out["modules"] = {m: c["luts"] for m, c in r["modules"].items() if c["luts"]}
        out["path"] = r["lut_levels_path"]
        print(json.dumps(out), flush=True)


if __name__ == "__main__":
    main()
