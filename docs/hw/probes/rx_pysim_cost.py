"""Simulation cost probe of the RX engine in Amaranth's Python simulator (not part of the design).

pysim compiles each fragment's comb and sync statements into one Python function per domain,
expanding every expression tree in full (no sharing of subexpressions), and reruns a fragment's
comb function whenever one of its inputs changes. This probe runs test_rx_amaranth's
``same_path_burst_one_per_cycle`` case (width 64) and reports, deterministically, the bytecode
size of those functions and the bytecode they executed (size x runs), plus CPU time (load-bound):

    .venv/bin/python docs/hw/probes/rx_pysim_cost.py [--form be4bd52|bac2ea0]

``--form`` swaps in an earlier MR-RX-046 form, the prefix adders' leaves slices of the
carry-save pair's expression (base select included) instead of signals: ``be4bd52`` the
carry select as first written, ``bac2ea0`` one sum per limb and S2's increment (the limb
registers stay 34 bits, their upper half constant).
"""
import sys
import time
from collections import Counter
from pathlib import Path

from amaranth.sim import pysim
from amaranth.sim._pyrtl import PyRTLProcess

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "tests"))
from test_rx_amaranth import SMALL, run_lockstep  # noqa: E402
from amaranth.hdl import Cat, Const, Mux  # noqa: E402
from metaroce.hdl import rx as R  # noqa: E402
from metaroce.models import rx_cases as rc  # noqa: E402


def _limbs_expr_leaves(m, base, va, offset, *, carry_select=True):
    off = offset.as_unsigned()
    x = base ^ va ^ off
    y = Cat(Const(0, 1), ((base & va) | (base & off) | (va & off))[:63])
    sums = [[R._add_prefix(x[k:k + R.LIMB], y[k:k + R.LIMB])] for k in range(0, 64, R.LIMB)]
    if carry_select:
        for k, s in zip(range(0, 64, R.LIMB), sums):
            s.append(R._add_prefix(x[k:k + R.LIMB], y[k:k + R.LIMB], carry_in=1))
    return [Cat(*s) for s in sums]


def _resolve_increment(limbs):
    out, carry = [], Const(0, 1)
    for s in limbs:
        low = s[:R.LIMB]
        out.append(Mux(carry, (low + 1)[:R.LIMB], low))
        carry = s[R.LIMB] | (low.all() & carry)
    return Cat(*out)


form = sys.argv[sys.argv.index("--form") + 1] if "--form" in sys.argv else None
if form == "be4bd52":
    R._address_limbs = _limbs_expr_leaves
elif form == "bac2ea0":
    R._address_limbs = lambda m, b, v, o: _limbs_expr_leaves(m, b, v, o, carry_select=False)
    R._address_resolve = _resolve_increment


runs, sizes = Counter(), {}
_init = pysim.PySimEngine.__init__


def _counting_init(self, design):
    _init(self, design)
    for n, p in enumerate(p for p in self._processes if isinstance(p, PyRTLProcess)):
        key = (n, "comb" if p.is_comb else "sync")
        sizes[key] = len(p.run.__code__.co_code)
        inner = p.run

        def run(inner=inner, key=key):
            runs[key] += 1
            inner()
        p.run = run


pysim.PySimEngine.__init__ = _counting_init
s = rc.Setup(*SMALL, seed=2)
t0 = time.process_time()
res = run_lockstep(64, s, rc.burst_same_path(s, 96), seed=1, p_idle=0.0, p_bp=0.0)
cpu = time.process_time() - t0
for kind in ("comb", "sync"):
    ks = [k for k in sizes if k[1] == kind]
    print(f"{kind}: {len(ks)} functions, {sum(sizes[k] for k in ks)} bytecode bytes, "
          f"{sum(sizes[k] * runs[k] for k in ks)} bytes executed, {sum(runs[k] for k in ks)} runs")
top = sorted(sizes, key=lambda k: -sizes[k] * runs[k])[:3]
print("largest:", ", ".join(f"{k[1]} {sizes[k]} B x {runs[k]}" for k in top))
print(f"cycles {res['compared']}, cpu {cpu:.1f} s")
