"""hintc46: the cost of the hinted windows' control path in RTL (docs/spec/hw-cwnd.md MR-CW-134,
hw-tx.md MR-TX-515): ``metaroce synth``'s report (LUT, FF, 6-LUT levels; synth_xilinx xcup,
64 bits) of ``CwndControl`` alone (2 x 4) and, with ``--tx``, of the TX with the rate hints
with the control path outside (``tx_hints_small``) and inside (``tx_control_small``).

    nice -n 10 .venv/bin/python docs/hw/probes/cwnd_control_synth_46.py [--tx]
"""
import json
import sys

from metaroce.blocks import Block
from metaroce.commands.synth import report

BLOCKS = [Block(name="cwnd_control", component="metaroce.hdl.cwnd:cwnd_control_small",
                model="metaroce.models.cwnd_control:cwnd_control_model_small",
                tb="metaroce.tb.cwnd", help="the hinted windows' control path", widths=(64,)),
          Block(name="cwnd_band", component="metaroce.hdl.cwnd:cwnd_band",
                model="metaroce.models.cwnd:band_model_cycles", tb="metaroce.tb.cwnd",
                help="the band unit (inside the control path too)", widths=(64,))]
TX = [Block(name="tx_hints", component="metaroce.hdl.tx:tx_hints_small",
            model="metaroce.models.tx:tx_model_hints_small", tb="metaroce.tb.tx",
            help="TX with hints, control path outside", widths=(64,)),
      Block(name="tx_control", component="metaroce.hdl.tx:tx_control_small",
            model="metaroce.models.tx:tx_model_control_small", tb="metaroce.tb.tx",
            help="TX with hints, control path inside", widths=(64,))]


def main():
    blocks = BLOCKS + (TX if "--tx" in sys.argv else [])
    for b in blocks:
        r = report(b, 64)
        print(json.dumps({k: r[k] for k in ("block", "luts", "ffs", "brams", "dsps", "lut_levels",
                                            "seconds")}), flush=True)


if __name__ == "__main__":
    main()
