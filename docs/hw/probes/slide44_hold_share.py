"""The slow update's hold in a mapped ECP5 netlist of the RX (issue 13; a probe, not part of the
design): the flip-flops of the hold's registers (``h1_*`` .. ``h4_*``, ``sl_*``, ``sr_*``,
``hold``/``holding``/``slow_write``; ``sl_row``, the row copy, apart) and the logic cells
(LUT4, PFUMX, L6MUX21, CCU2C) whose every sink is one of them (``ecp5_cells_by_sink.py``'s
attribution: a cell feeding other registers too is not counted). Run on the ``syn/mapped.json``
that ``rxi42_interval.py OUT 8`` leaves, before and after:

    .venv/bin/python docs/hw/probes/slide44_hold_share.py BEFORE/syn/mapped.json AFTER/syn/mapped.json
"""
import json
import re
import sys
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from ecp5_cells_by_sink import cells_by_sink  # noqa: E402

HOLD = re.compile(r"^(h[1-4]_|sr_|sl_(?!row)|hold$|holding$|slow_write$)")


def share(path, top="rx"):
    mod = json.load(open(path))["modules"][top]
    ffs = Counter()
    names = {}
    for n, nn in mod["netnames"].items():
        for b in nn["bits"]:
            if isinstance(b, int) and (b not in names or not nn.get("hide_name", 0)):
                names[b] = n
    for c in mod["cells"].values():
        if c["type"] == "TRELLIS_FF":
            n = names.get(c["connections"]["Q"][0], "")
            fam = re.sub(r"\[\d+\]$", "", n)
            ffs["hold" if HOLD.match(fam) else ("sl_row" if fam.startswith("sl_row") else "other")] += 1
    logic = Counter()
    for key, kinds in cells_by_sink(path, top).items():
        regs = [r.split(".")[0] for r in key.split(" ")] if "sinks:" not in key else ["?"]
        logic["hold" if all(HOLD.match(r) for r in regs) else "other"] += sum(kinds.values())
    return {"ff_hold": ffs["hold"], "ff_sl_row": ffs["sl_row"], "ff_all": sum(ffs.values()),
            "logic_hold": logic["hold"], "logic_all": sum(logic.values())}


if __name__ == "__main__":
    for p in sys.argv[1:]:
        print(p, json.dumps(share(p)))
