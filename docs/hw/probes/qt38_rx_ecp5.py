"""qt38 (MR-RX-290/291): the RX engine at the whole engine's parameters (engine_rx_ecp5.py's
``Rx(64, conns=2, paths=4, keys=256, streams=4, chunk_ring=32)``) through the build's flow
(``engine_block_ecp5.packed_row``: synth_ecp5 -noiopad -nowidelut, MR-FLOW-026, nextpnr's
packing), then its deepest mapped paths (``ecp5_mapped_paths.py``) and those that start at a
block RAM's read data (``storage``) of the bundle queues ``cqe_q``/``rsp_q``.

    .venv/bin/python docs/hw/probes/qt38_rx_ecp5.py OUT   # 15-30 minutes
"""
import json
import subprocess
import sys
from pathlib import Path

from metaroce.hdl.rx import Rx
from metaroce.models.engine import ENGINE_CHUNK_WINDOW
from metaroce.models.rx import SMALL

sys.path.insert(0, str(Path(__file__).parent))
import engine_block_ecp5  # noqa: E402

if __name__ == "__main__":
    out = Path(sys.argv[1])
    dut = Rx(64, conns=2, paths=4, keys=256, streams=SMALL["streams"], chunk_ring=ENGINE_CHUNK_WINDOW)
    print("ROW", json.dumps(engine_block_ecp5.packed_row(dut, "rx", out)), flush=True)
    res = subprocess.run([sys.executable, str(Path(__file__).parent / "ecp5_mapped_paths.py"),
                          str(out / "syn" / "mapped.json"), "400"], check=True, capture_output=True, text=True)
    lines = res.stdout.splitlines()
    print("\n".join(lines[:31]))
    print("paths from the bundle queues:")
    for head, path in zip(lines[1::2], lines[2::2]):
        if "cqe_q" in path.rsplit("<-", 1)[-1] or "rsp_q" in path.rsplit("<-", 1)[-1]:
            print(head)
            print(path[:600])
