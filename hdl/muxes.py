"""Mux helpers shared by the engine's blocks."""

from amaranth.hdl import Mux

__all__ = ["pick", "or_tree"]


def pick(values, sel):
    """``values[sel]`` as a tree of 2:1 muxes, one level per bit of ``sel``: a dynamic index
    of an Amaranth ``word_select`` or View array becomes Yosys's ``$shiftx`` by ``sel`` times
    the element's width, a barrel shifter several times larger after mapping (issue 13). An
    index past the list's end picks one of the last elements (the callers' indices are always
    in range)."""
    vals = list(values)
    for k in range(len(sel)):
        if len(vals) == 1:
            break
        vals = [Mux(sel[k], vals[i + 1], vals[i]) if i + 1 < len(vals) else vals[i]
                for i in range(0, len(vals), 2)]
    return vals[0]


def or_tree(values):
    """The OR of ``values`` as a balanced tree of 2-input ORs (an AND-OR read multiplexer's
    second half: each value already gated by its one-hot select)."""
    vals = list(values)
    while len(vals) > 1:
        vals = [vals[i] | vals[i + 1] if i + 1 < len(vals) else vals[i]
                for i in range(0, len(vals), 2)]
    return vals[0]
