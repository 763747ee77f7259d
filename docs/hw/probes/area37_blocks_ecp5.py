"""area37 (MR-HW-088..091): a block at the whole engine's parameters mapped to the ECP5 alone with
the build's flow (``engine_block_ecp5.py --nowidelut``, elaborated with the ECP5 platform; as
``rxq36_blocks_ecp5.py``), ``base`` with area37's queues put back to Amaranth's (``BufferedQueue``
-> ``lib.fifo.SyncFIFOBuffered``, a ``SyncQueue`` area37 swapped in -> ``lib.fifo.SyncFIFO``: the
tree before area37), ``now`` as it is. Prints nextpnr's TRELLIS_COMB / TRELLIS_FF / DP16KD.

    .venv/bin/python docs/hw/probes/area37_blocks_ecp5.py dmaw|dmar|fb|data base|now OUT
"""
import json
import sys
from pathlib import Path

from amaranth.lib import fifo

import metaroce.hdl.dma_read as dmar_mod
import metaroce.hdl.dma_write as dmaw_mod
import metaroce.hdl.frame_builder as fb_mod
import metaroce.hdl.tx as tx_mod
from metaroce.models.engine import engine_tx_params

sys.path.insert(0, str(Path(__file__).parent))
import engine_block_ecp5  # noqa: E402

MODS = {"dmaw": [dmaw_mod], "dmar": [dmar_mod], "fb": [fb_mod], "data": [dmar_mod, fb_mod]}


def dut(block):
    kw = engine_tx_params({})
    if block == "dmaw":       # as hdl/engine.py's RX half builds it
        return dmaw_mod.DmaWrite(64, conns=2, outstanding=32)
    if block == "dmar":       # as hdl/tx.py's TxData builds it at the engine's parameters
        return dmar_mod.DmaRead(64, conns=2, outstanding=kw["outstanding"], id_width=4)
    if block == "fb":         # as TxData builds it
        return fb_mod.FrameBuilder(64)
    if block == "data":       # the TX data path as the engine builds it (rxq36_blocks_ecp5.py's)
        return tx_mod.TxData(64, conns=2, streams=kw["streams"], paths=4, depth=kw["depth"], pool=kw["pool"],
                             outstanding=kw["outstanding"])
    raise ValueError(block)


def main(block, form, out):
    for mod in MODS[block] if form == "base" else ():
        if hasattr(mod, "BufferedQueue"):
            mod.BufferedQueue = fifo.SyncFIFOBuffered
        if hasattr(mod, "SyncQueue"):
            mod.SyncQueue = lambda *, width, depth: fifo.SyncFIFO(width=width, depth=depth)
    print("ROW", json.dumps({"block": block, "form": form,
                             **engine_block_ecp5.packed_row(dut(block), block, out)}))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], Path(sys.argv[3]))
