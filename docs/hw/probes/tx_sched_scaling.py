"""Where the scheduler's LUTs go as the instance grows (issue 12: the 20k-LUT budget at 4,096
connections x 8 paths, which ``tx`` cannot build: MR-TXS-001 keeps the scheduler's state in
registers and bounds ``conns`` to 256). Not part of the design: ``metaroce synth``'s flow
(``sim.synth.synthesize``, cached by the Verilog text) on ``TxSched`` of the small instance with
``conns`` and ``paths`` changed, each instance's LUTs, FFs and LUT RAM and its largest
submodules; then the LUTs per connection and per path (differences of the instances) and the
linear extrapolation to 4,096 x 8. Run from the repository root:

    .venv/bin/python docs/hw/probes/tx_sched_scaling.py [CONNSxPATHS ...]

(default ``2x4 4x4 8x4 2x8``). Prints one JSON object."""
import json
import sys

from metaroce.hdl.tx_sched import TxSched
from metaroce.models.tx_sched import SMALL
from metaroce.sim import synth
from metaroce.sim.verilator import generate_verilog


def instance(conns, paths):
    kw = dict(SMALL, conns=conns, paths=paths)
    text, _ = synth.drop_zero_memory_init(generate_verilog(TxSched(64, **kw), "tx_sched"))
    rep = synth.synthesize(text, "tx_sched")
    local = sorted(((c.luts, name) for name, c in rep.local.items()), reverse=True)[:6]
    return {"conns": conns, "paths": paths, "luts": rep.luts, "ffs": rep.ffs,
            "lutram": rep.total.lutram, "seconds": rep.seconds, "cached": rep.cached,
            "largest_local": [{"module": n, "luts": v} for v, n in local]}


def main(argv):
    shapes = [tuple(int(x) for x in a.split("x")) for a in (argv[1:] or ["2x4", "4x4", "8x4", "2x8"])]
    rows = [instance(c, p) for c, p in shapes]
    by = {(r["conns"], r["paths"]): r for r in rows}
    out = {"instances": rows}
    c4 = sorted(c for c, p in by if p == 4)
    if len(c4) >= 2:
        lo, hi = by[(c4[0], 4)], by[(c4[-1], 4)]
        per_conn = (hi["luts"] - lo["luts"]) / (c4[-1] - c4[0])
        out["luts_per_conn_at_4_paths"] = round(per_conn, 1)
        if (c4[0], 8) in by:
            per_path = (by[(c4[0], 8)]["luts"] - lo["luts"]) / 4
            out["luts_per_path_at_%d_conns" % c4[0]] = round(per_path, 1)
            per_conn_path = per_path / c4[0]
            # linear in conns with a per-(conn, path) share, from the smallest instance
            base = lo["luts"] - per_conn * c4[0]
            out["extrapolated_4096x8_luts"] = round(base + per_conn * 4096
                                                    + per_conn_path * 4096 * 4)
    print(json.dumps(out))


if __name__ == "__main__":
    main(sys.argv)
