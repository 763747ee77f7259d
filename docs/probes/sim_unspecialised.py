"""Which bytecodes of a ``bench simspeed`` run CPython 3.11 leaves unspecialised, and how often
they run (docs/benchmarks.md, "simspeed", fifth pass).

A run first warms up untraced (the interpreter specialises its instructions as they run), then
a second run counts every instruction executed (``sys.settrace`` opcode events; tracing does not
change the specialised code); the counts are joined with the instructions as they stand
(``dis.get_instructions(adaptive=True)``). An instruction still ``*_ADAPTIVE`` after the warm-up
failed to specialise or keeps falling back: for an attribute or method load that is the generic
lookup (type cache, descriptor check, dict lookup: a few hundred machine instructions instead of
a few dozen). Causes found this way: more than 30 attributes per instance (a per-instance dict;
method lookups do not specialise across instances: ``__slots__``), a class attribute of the same
name holding an instance of a Python class (a dataclass default that is an enum member), an
object whose ``__dict__`` was read (it keeps a dict of its own). ``CALL_ADAPTIVE`` after a
specialised ``PRECALL`` (calls of builtins) and ``BINARY_OP``/``COMPARE_OP`` forms that 3.11
does not specialise are listed too but are normal.

    .venv/bin/python docs/probes/sim_unspecialised.py [MODE] [PACKETS]    # default metaroce 300

Prints, per simulated packet, how often each such instruction ran (file, function, line,
instruction, argument), the most frequent first.
"""
import collections
import dis
import sys

import metaroce.sim.fabric as fabric
from metaroce.benches import simspeed

_WATCH = ("LOAD_ATTR", "STORE_ATTR", "LOAD_METHOD", "LOAD_GLOBAL", "BINARY_SUBSCR", "STORE_SUBSCR",
          "COMPARE_OP", "BINARY_OP", "UNPACK_SEQUENCE", "CALL", "PRECALL", "FOR_ITER")


def main():
    mode = sys.argv[1] if len(sys.argv) > 1 else "metaroce"
    packets = int(sys.argv[2]) if len(sys.argv) > 2 else 300
    simspeed.one_run({"mode": mode, "hosts": 8, "packets": 5 * packets})     # warm-up: specialise
    counts = collections.Counter()

    def local(frame, event, arg):
        if event == "opcode":
            counts[(frame.f_code, frame.f_lasti)] += 1
        return local

    def call(frame, event, arg):
        frame.f_trace_opcodes = True
        frame.f_trace_lines = False
        return local

    run = fabric.Sim.run

    def traced(self, *a, **k):
        sys.settrace(call)
        try:
            return run(self, *a, **k)
        finally:
            sys.settrace(None)
    fabric.Sim.run = traced
    try:
        row = simspeed.one_run({"mode": mode, "hosts": 8, "packets": packets})
    finally:
        fabric.Sim.run = run
    ins = {}
    for code in {c for c, _ in counts}:
        for i in dis.get_instructions(code, adaptive=True):
            ins[(code, i.offset)] = (i.opname, i.argval, i.positions.lineno if i.positions else None)
    rows = collections.Counter()
    for (code, off), n in counts.items():
        op, arg, line = ins.get((code, off), ("?", None, None))
        if op.endswith("_ADAPTIVE") or op in _WATCH:
            rows[(code.co_filename.rsplit("/", 1)[-1], code.co_name, line, op, str(arg))] += n
    pk = row["packets"]
    print(f"{mode}: {pk} packets; unspecialised instructions run per packet: "
          f"{sum(rows.values()) / pk:.1f}")
    for (fname, func, line, op, arg), n in rows.most_common(40):
        print(f"  {n / pk:6.2f}  {fname}:{line} {func}  {op} {arg}")


if __name__ == "__main__":
    main()
