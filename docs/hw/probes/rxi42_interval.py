"""The RX at the engine's parameters behind the frame interval (MR-RX-319/320, issue 13; a probe,
not part of the design): ``Rx(64, conns=2, paths=4, keys=256, streams=4, chunk_ring=32,
max_rd_atomic=RD_ATOMIC, cfg_sack=False, interval=N)`` (the engine's instance, ``N`` 8 as
``Engine(64)`` passes it; 1 is the standalone default) through the build's flow and nextpnr's
packing (``engine_block_ecp5.packed_row``: TRELLIS_COMB = nextpnr's packed count, FF, DP16KD;
Yosys's cells in OUT/syn/stat.json). About 10-20 minutes at load 4.

    .venv/bin/python docs/hw/probes/rxi42_interval.py OUT N
"""
import json
import sys
from pathlib import Path

from metaroce.hdl.rx import Rx
from metaroce.models import records
from metaroce.models.engine import ENGINE_CFG_SACK, ENGINE_CHUNK_WINDOW
from metaroce.models.rx import SMALL

sys.path.insert(0, str(Path(__file__).parent))
import engine_block_ecp5  # noqa: E402


def main(out: Path, interval: int) -> dict:
    dut = Rx(64, conns=2, paths=4, keys=256, streams=SMALL["streams"], chunk_ring=ENGINE_CHUNK_WINDOW,
             max_rd_atomic=records.RD_ATOMIC, cfg_sack=ENGINE_CFG_SACK, interval=interval)
    return engine_block_ecp5.packed_row(dut, "rx", out)


if __name__ == "__main__":
    print("PACKED", json.dumps(main(Path(sys.argv[1]), int(sys.argv[2]))))
