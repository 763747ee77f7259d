"""rxq36 (MR-RX-288, MR-TX-346): the RX engine or the TX data path at the whole engine's
parameters, mapped to the ECP5 alone with the build's flow (``engine_block_ecp5.py --nowidelut``:
synth_ecp5 -noiopad -nowidelut, MR-FLOW-026's memory policy, MR-FLOW-027's carry rewrite,
nextpnr's packing), elaborated with the ECP5 platform; ``fifo`` builds it with its block-RAM
queues (``hdl/queue.py``'s SyncQueue) put back to ``lib.fifo.SyncFIFO`` (the tree before
rxq36), ``queue`` as it is. Prints nextpnr's TRELLIS_COMB / TRELLIS_FF / DP16KD.

    .venv/bin/python docs/hw/probes/rxq36_blocks_ecp5.py rx|data fifo|queue OUT   # RX: 20-60 min
"""
import json
import sys
from pathlib import Path

from amaranth.lib import fifo

import metaroce.hdl.rx as rx_mod
import metaroce.hdl.tx as tx_mod
from metaroce.hdl.engine import ENGINE_CFG_SACK
from metaroce.models import records
from metaroce.models.engine import ENGINE_CHUNK_WINDOW, engine_tx_params
from metaroce.models.rx import SMALL

sys.path.insert(0, str(Path(__file__).parent))
import engine_block_ecp5  # noqa: E402


def dut(block):
    if block == "rx":
        # as hdl/engine.py:Engine builds it (rxa35's configuration)
        return rx_mod.Rx(64, conns=2, paths=4, keys=256, streams=SMALL["streams"], chunk_ring=ENGINE_CHUNK_WINDOW,
                         max_rd_atomic=records.RD_ATOMIC, cfg_sack=ENGINE_CFG_SACK)
    kw = engine_tx_params({})
    return tx_mod.TxData(64, conns=2, streams=kw["streams"], paths=4, depth=kw["depth"], pool=kw["pool"],
                         outstanding=kw["outstanding"])


def main(block, form, out):
    if form == "fifo":
        for mod in (rx_mod, tx_mod):
            mod.SyncQueue = lambda *, width, depth: fifo.SyncFIFO(width=width, depth=depth)
    print("ROW", json.dumps({"block": block, "form": form,
                             **engine_block_ecp5.packed_row(dut(block), block, out)}))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], Path(sys.argv[3]))
