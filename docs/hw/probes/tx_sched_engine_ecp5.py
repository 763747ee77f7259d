"""The register scheduler at the engine's parameters mapped to ECP5 (dmem35, issue 13; not part
of the design): ``TxSched`` as ``Engine``'s ``tx.sched`` builds it (``conns=2, paths=4``,
``engine_tx_params``' streams, depth, chunk window, windows; ``rd_rows=True``), its Verilog as
``metaroce pnr`` writes it (``platform=ECP5``), mapped with the build's Yosys flow
(``synth_ecp5_script``); prints the cell counts and the COMB estimate (LUT4 + 2 CCU2C + 6
DPR16X4, fpga-build.md "Lead, session 34") and the DPR16X4 per memory.

    .venv/bin/python docs/hw/probes/tx_sched_engine_ecp5.py DIR [INTERVAL [mem_head]]

``INTERVAL`` (sci42, MR-TXS-413): the scheduler's frame interval, default 1; the engine's at 64
bits is 8 (MR-ENG-299). ``mem_head``: MR-TXS-419's output queues (off in the engine).
"""
import collections
import json
import re
import sys
from pathlib import Path

from metaroce.hdl.tx_sched import TxSched
from metaroce.models.engine import engine_tx_params
from metaroce.hdl.tx import _SCHED_KW
from metaroce.sim.pnr import ecp5_counts, map_ecp5

out = Path(sys.argv[1])
out.mkdir(parents=True, exist_ok=True)
kw = engine_tx_params({})
interval = int(sys.argv[2]) if len(sys.argv) > 2 else 1
sched = TxSched(64, conns=2, paths=4, streams=kw["streams"], depth=kw["depth"], rd_rows=True,
                **{k: kw[k] for k in _SCHED_KW}, interval=interval,
                mem_head=len(sys.argv) > 3 and sys.argv[3] == "mem_head")
mod = map_ecp5(sched, "tx_sched", out)
by_mem = collections.Counter()
for name, c in mod["cells"].items():
    if c["type"] == "TRELLIS_DPR16X4":
        by_mem[re.sub(r"[.$\\].*", "", name.lstrip("\\$"))] += 1
print(json.dumps(ecp5_counts(mod)))
print("DPR16X4 by name:", dict(by_mem.most_common()))
