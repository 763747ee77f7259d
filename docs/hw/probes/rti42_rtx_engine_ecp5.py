"""The retransmit unit as the engine builds it, mapped to ECP5 (rti42, issue 13; not part of the
design): ``Engine(64).tx.rtx``'s parameters (2 connections x 4 paths, a pool of 256, the
engine's RTO, tail probes, ages) with the frame interval N (MR-TX-453; by default the engine's
8, MR-ENG-299: the engine does not hand it to the TX yet, MR-TX-455; ``--interval 1`` is the
unit before MR-TX-453/454, main's RTLIL up to one wire's name), its Verilog as ``metaroce pnr`` writes it (``platform=ECP5``), mapped with the build's
Yosys flow (``synth_ecp5_script``); prints the cell counts and the COMB estimate (LUT4 + 2
CCU2C + 6 DPR16X4, as tx_sched_engine_ecp5.py) and writes DIR/mapped.json (module ``rtx``) for
``docs/hw/probes/ecp5_mapped_depth.py DIR/mapped.json`` (the levels). ``--packed``: also
nextpnr's packing of the unit alone (``engine_block_ecp5.packed_row``, as rtx41's table:
TRELLIS_COMB, FF, DPR16X4) in DIR/packed.

    .venv/bin/python docs/hw/probes/rti42_rtx_engine_ecp5.py DIR [--interval N] [--packed] [--main-py F]

``--main-py F``: the unit from another tree's hdl/retransmit.py (e.g. ``git show
0fa5b39:hdl/retransmit.py > F``: main's before MR-TX-453), with the same parameters (no
``interval``: that tree has none): the baseline.
"""
import argparse
import json
import sys
from pathlib import Path

from metaroce.hdl.engine import Engine
from metaroce.hdl.retransmit import Retransmit
from metaroce.sim.pnr import ecp5_counts, map_ecp5

ap = argparse.ArgumentParser()
ap.add_argument("dir")
ap.add_argument("--interval", type=int, default=None)
ap.add_argument("--packed", action="store_true")
ap.add_argument("--main-py", default=None)
a = ap.parse_args()
out = Path(a.dir)
out.mkdir(parents=True, exist_ok=True)


def unit():
    u = Engine(64).tx.rtx
    lay = u.lay
    kw = dict(conns=lay.conns, paths=lay.paths, pool=lay.pool, rto_ns=u.rto_ns, retry_limit=u.retry_limit,
              slot_log2=u.slot_log2, probes=u.probes, ages=u.ages, verdict_health=u.verdict_health)
    if not a.main_py:
        # MR-TX-455: the engine does not hand its interval to the TX yet: its unit's parameters
        # with the interval given (by default the engine's, MR-ENG-299)
        return Retransmit(64, interval=Engine(64).interval if a.interval is None else a.interval, **kw)
    import importlib.util
    spec = importlib.util.spec_from_file_location("metaroce.hdl.retransmit_main", a.main_py)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod
    spec.loader.exec_module(mod)
    return mod.Retransmit(64, **kw)


rtx = unit()
fig = ecp5_counts(map_ecp5(rtx, "rtx", out))
fig["interval"] = getattr(rtx, "interval", "main")
print(json.dumps(fig))
if a.packed:
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from engine_block_ecp5 import packed_row
    print("packed:", json.dumps(packed_row(unit(), "rtx", out / "packed")))
