"""fb41 (issue 13; not part of the design): the TX data path (``TxData``, ``ack_desc=True``) with
the engine's ``AckOut`` before ``s_ack_desc``, wired as ``hdl.engine.Engine`` wires them (the
same ``s_cfg`` into both template memories), packed with the build's flow
(``engine_block_ecp5.packed_row``): the data path with the engine's constant descriptor fields
(IPv4 without VLAN from both sources), which ``txa38_tx_ecp5.py data`` leaves free as ports.

    .venv/bin/python docs/hw/probes/fb41_txdata_engine_ecp5.py OUT
"""
import importlib.util
import json
import sys
from pathlib import Path

from amaranth.hdl import Module
from amaranth.lib import stream, wiring
from amaranth.lib.wiring import In, flipped
from metaroce.hdl.tx import TxData
from metaroce.hdl.engine import AckOut, engine_small
from metaroce.models.engine import engine_tx_params
spec = importlib.util.spec_from_file_location("ebe", str(Path(__file__).with_name("engine_block_ecp5.py")))
ebe = importlib.util.module_from_spec(spec); spec.loader.exec_module(ebe)
kw = engine_tx_params({})
eng = engine_small(64)
ack_lay, cfg_lay = eng.rx_half.lay.ack, eng.tx.lay.cfg


class EngData(wiring.Component):
    def __init__(self):
        self.dp = TxData(64, conns=2, streams=kw["streams"], paths=4, depth=kw["depth"], pool=kw["pool"],
                         outstanding=kw["outstanding"], ack_desc=True)
        self.ao = AckOut(2, ack_lay, cfg_lay)
        mem = {n: v for n, v in self.dp.signature.members.items() if n != "s_ack_desc"}
        mem["s_ack"] = In(stream.Signature(ack_lay))
        super().__init__(mem)

    def elaborate(self, platform):
        m = Module()
        m.submodules.data, m.submodules.ack_out = dp, ao = self.dp, self.ao
        for n, v in self.signature.members.items():
            if n in ("s_ack",):
                continue
            if v.flow == In:
                wiring.connect(m, flipped(getattr(self, n)), getattr(dp, n))
            else:
                wiring.connect(m, getattr(dp, n), flipped(getattr(self, n)))
        wiring.connect(m, flipped(self.s_ack), ao.s_ack)
        wiring.connect(m, ao.m_desc, dp.s_ack_desc)
        m.d.comb += [ao.s_cfg.valid.eq(self.s_cfg.valid), ao.s_cfg.payload.eq(self.s_cfg.payload)]
        return m


row = ebe.packed_row(EngData(), "engdata", Path(sys.argv[1]))
print("ROW", json.dumps(row))
