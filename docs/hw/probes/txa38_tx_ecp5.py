"""txa38 (issue 13; not part of the design): the register scheduler as the engine builds it
(``Tx``'s ``TxSched``, ``rd_rows``) or the data path (``TxData``, ``ack_desc``) at the engine's
parameters with the build's flow (``engine_block_ecp5.packed_row``: ECP5 platform, ``synth_ecp5
-noiopad -nowidelut``, the carry rewrite, ``nextpnr --pack-only``), optionally on snapshots of
hdl/tx_sched.py / hdl/tx.py injected in place of the tree's (``cur``: the tree's), e.g. a
base commit's (``git show REV:hdl/tx_sched.py > F``).

    .venv/bin/python docs/hw/probes/txa38_tx_ecp5.py sched|data cur|F cur|F OUT
"""
import importlib.util
import json
import sys
import types
from pathlib import Path

import metaroce.hdl

part, sched_snap, tx_snap, out = sys.argv[1:5]


def inject(name, snap):
    if snap == "cur":
        return
    mod = types.ModuleType(f"metaroce.hdl.{name}"); mod.__package__ = "metaroce.hdl"
    mod.__file__ = str(Path(__file__).resolve().parents[3] / "hdl" / f"{name}.py")
    sys.modules[mod.__name__] = mod
    exec(compile(open(snap).read(), mod.__file__, "exec", dont_inherit=True), mod.__dict__)
    setattr(metaroce.hdl, name, mod)


inject("tx_sched", sched_snap)
inject("tx", tx_snap)
from metaroce.hdl.tx_sched import TxSched               # noqa: E402 (after the injection)
from metaroce.hdl.tx import TxData, _SCHED_KW           # noqa: E402
from metaroce.models.engine import engine_tx_params     # noqa: E402
spec = importlib.util.spec_from_file_location("ebe", str(Path(__file__).with_name("engine_block_ecp5.py")))
ebe = importlib.util.module_from_spec(spec); spec.loader.exec_module(ebe)
kw = engine_tx_params({})
if part == "sched":
    dut = TxSched(64, conns=2, paths=4, streams=kw["streams"], depth=kw["depth"], rd_rows=True,
                  **{k: kw[k] for k in _SCHED_KW})
else:
    dut = TxData(64, conns=2, streams=kw["streams"], paths=4, depth=kw["depth"], pool=kw["pool"],
                 outstanding=kw["outstanding"], ack_desc=True)
row = ebe.packed_row(dut, part, Path(out))
print("ROW", json.dumps(row))
