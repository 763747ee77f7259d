"""Session 50 (the default run's time; not part of the design): the size of each assignment's
right-hand side in a block's elaborated fragment, counted as the Amaranth simulator and the
netlist builder walk it (every node of an expression, repeated where a subexpression is read
again: a slice of an expression re-reads all of it). Big trees are what made the RX's and the
frame builder's Amaranth simulations slow (verification.md, "Default run time" sessions 49 and
50); a signal in the middle of a tree cuts it.

    .venv/bin/python docs/hw/probes/expr_nodes_50.py BLOCK [--width W] [--top N]

Prints the total and the ``--top`` largest assignments (the target signal, by submodule path
and domain).
"""
import argparse
import collections

from amaranth.hdl import Fragment
from amaranth.hdl._ast import (Assign, Concat, Const, Operator, Part, Signal, Slice,
                               SwitchValue)

from metaroce import blocks


def tree_size(value, memo):
    """The nodes of ``value`` counted with repetition (``memo`` by node identity: the count of a
    node is the same wherever it is read)."""
    key = id(value)
    if key in memo:
        return memo[key]
    if isinstance(value, (Const, Signal)):
        n = 1
    elif isinstance(value, Operator):
        n = 1 + sum(tree_size(o, memo) for o in value.operands)
    elif isinstance(value, Slice):
        n = 1 + tree_size(value.value, memo)
    elif isinstance(value, Part):
        n = 1 + tree_size(value.value, memo) + tree_size(value.offset, memo)
    elif isinstance(value, Concat):
        n = 1 + sum(tree_size(p, memo) for p in value.parts)
    elif isinstance(value, SwitchValue):
        n = 1 + tree_size(value.test, memo) + sum(tree_size(v, memo) for _, v in value.cases)
    else:
        n = 1
    memo[key] = n
    return n


def assignment_sizes(component):
    """``Counter`` of ``"path[domain]target"`` -> nodes of the right-hand sides assigned to it."""
    totals, memo = collections.Counter(), {}

    def walk(stmts, where):
        for stmt in stmts:
            if isinstance(stmt, Assign):
                totals[where + repr(stmt.lhs)[:60]] += tree_size(stmt.rhs, memo)
            elif hasattr(stmt, "cases"):
                for case in stmt.cases:
                    walk(case[1] if isinstance(case, tuple) else case.stmts, where)

    def visit(fragment, path):
        for domain, stmts in getattr(fragment, "statements", {}).items():
            walk(stmts, f"{path}[{domain}]")
        for sub, name, *_ in getattr(fragment, "subfragments", []):
            visit(sub, f"{path}{name}.")

    visit(Fragment.get(component, None), "")
    return totals


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("block")
    ap.add_argument("--width", type=int, default=64)
    ap.add_argument("--top", type=int, default=10)
    args = ap.parse_args(argv)
    totals = assignment_sizes(blocks.get(args.block).make_component(args.width))
    print("total", sum(totals.values()))
    for name, n in totals.most_common(args.top):
        print(n, name)


if __name__ == "__main__":
    main()
