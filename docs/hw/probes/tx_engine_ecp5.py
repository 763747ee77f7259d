"""The TX engine at the whole engine's parameters, mapped to the ECP5 alone (issue 13).

Builds ``Tx(64, conns=2, paths=4, **engine_tx_params({}))`` (as ``hdl/engine.py:Engine``
instantiates it), or one of its parts at those parameters, elaborated with the ECP5 platform
(MR-TXS-038's carry form, as ``metaroce build`` elaborates it), and runs
``engine_block_ecp5.py`` on it: the board build's Yosys flow (coarse stage, MR-FLOW-026's memory
policy, the mapping), MR-FLOW-027's carry rewrite and nextpnr's packing. Then counts the mapped
cells by the hierarchy their names carry (``--by-name``: flip-flops and memories keep it, ABC's
LUTs keep it where their output net is a named wire) and the memories' mapping.

    .venv/bin/python docs/hw/probes/tx_engine_ecp5.py [--part tx|sched|rtx|data] [--out DIR]
"""
import argparse
import collections
import importlib.util
import json
import re
import tempfile
from pathlib import Path

from metaroce.hdl.retransmit import Retransmit
from metaroce.hdl.tx import Tx, TxData
from metaroce.hdl.tx_sched import TxSched
from metaroce.models.engine import engine_tx_params
from metaroce.sim import synth
from metaroce.sim.pnr import ECP5
from metaroce.sim.verilator import generate_verilog

_spec = importlib.util.spec_from_file_location("engine_block_ecp5", Path(__file__).with_name("engine_block_ecp5.py"))
engine_block_ecp5 = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(engine_block_ecp5)

CONNS, PATHS = 2, 4          # hdl/engine.py:Engine's defaults


def part(name):
    kw = engine_tx_params({})
    tx = Tx(64, conns=CONNS, paths=PATHS, **kw)
    if name == "tx":
        return tx
    if name == "sched":
        return TxSched(64, conns=CONNS, streams=kw["streams"], paths=PATHS, depth=kw["depth"], **tx.sched_kw)
    if name == "rtx":
        return Retransmit(64, conns=CONNS, paths=PATHS, pool=kw["pool"], rto_ns=kw["rto_ns"])
    return TxData(64, conns=CONNS, streams=kw["streams"], paths=PATHS, depth=kw["depth"],
                  pool=kw["pool"], outstanding=kw["outstanding"])


#: nextpnr's TRELLIS_COMB per cell (a DPR16X4 blocks 6 positions, fpga-build.md; PFUMX and
#: L6MUX21 take none of their own)
COMB = {"LUT4": 1, "CCU2C": 2, "TRELLIS_DPR16X4": 6}


def _net_names(mod):
    names = {}
    for net, d in mod["netnames"].items():
        if not d.get("hide_name"):
            for b in d["bits"]:
                if isinstance(b, int):
                    names.setdefault(b, net)
    return names


def _cell_net(c, cname, names):
    outs = [b for p, bs in c["connections"].items() if c.get("port_directions", {}).get(p) == "output"
            for b in bs]
    return next((names[b] for b in outs if b in names), None) or cname


def by_family(mapped: Path, top: str) -> dict:
    """TRELLIS_COMB (:data:`COMB`) by the signal family in the name of the net a cell drives:
    Yosys's ``autoname`` names an unnamed net after a named neighbour and the cells between
    (``X_LUT4_Z_C``...), so the family is that name up to the first cell suffix, bit indices
    and digits dropped (``left12`` and ``left3`` are ``left#``). A heuristic: a cone between
    named signals is counted under one of them."""
    mod = json.loads(mapped.read_text())["modules"][top]
    names = _net_names(mod)
    count = collections.Counter()
    for cname, c in mod["cells"].items():
        if c["type"] in COMB:
            base = re.split(r"_(?:LUT4|PFUMX|L6MUX21|CCU2C|TRELLIS|DPR|DO|DI|WAD|WRE)", _cell_net(c, cname, names))[0]
            count[re.sub(r"\d+", "#", re.sub(r"\[.*", "", base))] += COMB[c["type"]]
    return dict(count.most_common())


def by_name(mapped: Path, top: str) -> dict:
    """Cells of the mapped netlist by type and by the first two levels of the hierarchy in the
    name of the net they drive (cell names of ABC's LUTs are numbers; their output nets are
    named wires where the RTL named one)."""
    mod = json.loads(mapped.read_text())["modules"][top]
    names = _net_names(mod)
    count = collections.Counter()
    for cname, c in mod["cells"].items():
        net = _cell_net(c, cname, names)
        parts = re.split(r"[.]", net.lstrip("\\$"))
        key = ".".join(parts[:2]) if len(parts) > 2 else (parts[0] if len(parts) > 1 else "(top)")
        count[(c["type"], key)] += 1
    out = collections.defaultdict(dict)
    for (t, k), n in sorted(count.items(), key=lambda kv: -kv[1]):
        out[t][k] = n
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--part", choices=("tx", "sched", "rtx", "data"), default="tx")
    ap.add_argument("--out", type=Path)
    ap.add_argument("--top", type=int, default=25, help="hierarchy entries shown per cell type")
    ap.add_argument("--mapped", type=Path, help="only count an existing mapped.json")
    a = ap.parse_args()
    if a.mapped:
        for k, n in list(by_family(a.mapped, a.part).items())[:3 * a.top]:
            print(f"  {n:>7} {k}")
        return
    out = a.out or Path(tempfile.mkdtemp(prefix=f"tx-ecp5-{a.part}-"))
    out.mkdir(parents=True, exist_ok=True)
    text, _ = synth.drop_zero_memory_init(generate_verilog(part(a.part), a.part, platform=ECP5))
    (out / "src.v").write_text(text)
    engine_block_ecp5.main(out / "src.v", a.part, out)
    named = by_name(out / "mapped.json", a.part)
    (out / "by_name.json").write_text(json.dumps(named, indent=1))
    for t in ("LUT4", "CCU2C", "TRELLIS_DPR16X4", "PFUMX", "L6MUX21", "TRELLIS_FF", "DP16KD"):
        rows = list(named.get(t, {}).items())[:a.top]
        print(f"{t}: {sum(named.get(t, {}).values())}")
        for k, n in rows:
            print(f"  {n:>7} {k}")
    fam = by_family(out / "mapped.json", a.part)
    (out / "by_family.json").write_text(json.dumps(fam, indent=1))
    print(f"TRELLIS_COMB by signal family (LUT4 + 2 CCU2C + 6 DPR16X4 = {sum(fam.values())}):")
    for k, n in list(fam.items())[:3 * a.top]:
        print(f"  {n:>7} {k}")
    print(f"out: {out}")


if __name__ == "__main__":
    main()
