"""The TX scheduler at the TX's instance mapped to ECP5 (tsc34, issue 12; not part of the
design): ``TxSched(64, **SMALL)`` (``Tx``'s ``sched`` in the block ``tx``), its Verilog as
``metaroce pnr`` writes it (``platform=ECP5``, zero memory initialisers dropped), mapped with
``metaroce pnr``'s Yosys script; writes DIR/mapped.json (module ``tx_sched``) for
``docs/hw/probes/ecp5_mapped_depth.py DIR/mapped.json`` and ``tx_sched_ecp5_paths.py``.

    .venv/bin/python docs/hw/probes/tx_sched_ecp5_map.py DIR
"""
import sys

from metaroce.hdl.tx_sched import tx_sched_small
from metaroce.sim.pnr import map_ecp5

map_ecp5(tx_sched_small(64), "tx_sched", sys.argv[1])
