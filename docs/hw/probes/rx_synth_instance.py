"""rx-results.md (rnr25, slot26): metaroce synth's report for an RX instance by its factory name in hdl/rx.py
(rx_256x4, rx_256x4_no_slot_nak), 64 bits. Usage: .venv/bin/python docs/hw/probes/rx_synth_instance.py NAME"""
import dataclasses, json, sys
from metaroce import blocks
from metaroce.commands.synth import report
name = sys.argv[1]
blk = blocks.get("rx_256x4")
if name != "rx_256x4":
    blk = dataclasses.replace(blk, name=name, component=f"metaroce.hdl.rx:{name}")
out = report(blk, 64)
out.pop("modules", None)
print(json.dumps(out))
