"""rxq36 (MR-HW-083..086): one queue alone on the ECP5 with the build's flow (synth_ecp5 -noiopad
-nowidelut, MR-FLOW-026's memory policy, nextpnr's packing): ``lib.fifo.SyncFIFO`` against
``hdl/queue.py``'s ``SyncQueue`` forms, at the engine's queue sizes. Prints one JSON row a run.

    .venv/bin/python docs/hw/probes/rxq36_queue_ecp5.py WIDTH DEPTH [FORM ...]

FORM: ``fifo`` (SyncFIFO) or ``bypass`` (SyncQueue); the run is area37_queue_ecp5.py's, which
has the buffered forms too.
"""
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
import area37_queue_ecp5  # noqa: E402

if __name__ == "__main__":
    width, depth = int(sys.argv[1]), int(sys.argv[2])
    for form in sys.argv[3:] or ["fifo", "bypass"]:
        print("ROW", json.dumps(area37_queue_ecp5.run(width, depth, form)), flush=True)
