"""The RX coverage exclusions' soundness on a run's kept data: every toggle point with a
nonzero count that a rule of ``tb/coverage.rx_exclusions`` (MR-RX-073/222..230/256..258)
excludes, by rule, but for the META bits nothing reads (they toggle; excluded as unread) and
the single start-up rise of a bit that is 1 throughout (counted apart). A rule that excludes
a point the run toggled is wrong. Expected output: "covered points excluded: 0".

    .venv/bin/metaroce coverage rx_256x4 --width 64 --frames 150 --json --keep DIR
    .venv/bin/python docs/hw/probes/rx_coverage_sound.py DIR
"""
import json
import re
import sys
from collections import Counter, defaultdict
from pathlib import Path

from metaroce import blocks
from metaroce.tb import coverage as cov


def main(d):
    d = Path(d)
    blk = blocks.get("rx_256x4")
    res = json.loads(next(d.glob("coverage_*.json")).read_text())
    lay = blk.make_model(res.get("width", 64)).lay
    points = cov.read_coverage_dat(next(d.glob("coverage_*.dat")))
    rules = cov.rx_exclusions(lay, res.get("width", 64), points, res["counts"], placed_bound=res.get("placed_bound"),
                              read_placed_bound=res.get("read_placed_bound"))
    exact, searched = defaultdict(list), []
    for rule in rules:
        literal = cov._exact_name(rule[0])
        (exact[literal].append(rule) if literal is not None else searched.append((re.compile(rule[0]), rule)))
    bad, startup, candidates = Counter(), Counter(), {}
    counts = {(p.hier, p.text): p.count for p in points if p.page == "v_toggle"}
    for p in points:
        if p.page != "v_toggle" or p.count == 0:
            continue
        name, bit, direction = cov._split(p.text)
        if name not in candidates:
            candidates[name] = exact.get(name, []) + [r for rx, r in searched if rx.search(name)]
        for rule in candidates[name]:
            if rule[2](name, bit) if isinstance(rule, cov._NamedRule) else rule[2](bit):
                if rule[1].startswith("META_LAYOUT"):
                    break       # bits nothing reads: they toggle, excluded as unread
                fall = counts.get((p.hier, p.text.replace("0->1", "1->0")), 0)
                if direction == "0->1" and p.count == 1 and fall == 0:
                    startup[rule[1][:80]] += 1      # a constant 1's start-up rise (MR-RX-228)
                    break
                bad[rule[1][:80]] += 1
                print(p.hier, p.text, p.count, rule[1][:80])
                break
    print("start-up rises of constant-1 bits excluded:", sum(startup.values()), dict(startup))
    print("covered points excluded:", sum(bad.values()), dict(bad))


if __name__ == "__main__":
    main(sys.argv[1])
