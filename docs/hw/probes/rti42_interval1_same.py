"""MR-TX-453/454 at interval 1 (rti42, issue 13; not part of the design): this tree's
``Retransmit`` against another tree's (``MAIN_PY``: main's hdl/retransmit.py, e.g. ``git show
0fa5b39:hdl/retransmit.py > /tmp/retransmit_main.py``) at four parameter sets, interval 1: each
RTLIL with the source attributes dropped and the anonymous names (``$signal$N``, ``$N``)
normalised, compared as a multiset of lines. Prints the lines only one side has.

    .venv/bin/python docs/hw/probes/rti42_interval1_same.py MAIN_PY
"""
import collections
import importlib.util
import re
import sys

from amaranth.back import rtlil

from metaroce.hdl import retransmit as new

spec = importlib.util.spec_from_file_location("metaroce.hdl.retransmit_main", sys.argv[1])
old = importlib.util.module_from_spec(spec)
sys.modules[spec.name] = old
spec.loader.exec_module(old)


def lines(mod, **kw):
    t = rtlil.convert(mod.Retransmit(64, **kw), name="rtx")
    t = re.sub(r'attribute \\src "[^"]*"', "", t)
    t = re.sub(r"\\\$signal\$\d+", "SIG", t)
    t = re.sub(r"\$\d+", "$N", t)
    return collections.Counter(ln.strip() for ln in t.splitlines() if ln.strip())


for kw in ({"conns": 256, "paths": 4, "pool": 1024}, {"conns": 2, "paths": 4, "pool": 256, "rto_ns": 160000},
           {"conns": 2, "paths": 4, "pool": 256, "verdict_health": True}, {"conns": 4, "paths": 4, "pool": 256}):
    a, b = lines(old, **kw), lines(new, **kw)
    print(kw, "the same lines" if a == b else "differ:", dict(a - b), dict(b - a))
