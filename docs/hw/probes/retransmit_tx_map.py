"""The retransmit unit at the TX's instance mapped to ECP5 (rtt33, issue 12; not part of the
design): ``Retransmit(64, conns=2, paths=4, pool=256, probes=True)`` (the TX's ``rtx``: ages
and tail probes on), its Verilog as ``metaroce pnr`` writes it (``platform=ECP5``, zero memory
initialisers dropped), mapped with ``metaroce pnr``'s Yosys script; writes DIR/mapped.json
(module ``rtx``) for ``docs/hw/probes/ecp5_mapped_depth.py DIR/mapped.json``.

    .venv/bin/python docs/hw/probes/retransmit_tx_map.py DIR
"""
import sys

from metaroce.hdl.retransmit import Retransmit
from metaroce.sim.pnr import map_ecp5

map_ecp5(Retransmit(64, conns=2, paths=4, pool=256, probes=True), "rtx", sys.argv[1])
