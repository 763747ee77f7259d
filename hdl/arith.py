"""Adds, subtractions and compares in the form of the target (MR-TXS-038), shared by the
scheduler (``hdl/tx_sched.py``) and the congestion windows (``hdl/cwnd.py``, MR-CW-032)."""

from __future__ import annotations

from amaranth.hdl import Cat, Const, Signal, Value


def _ext(v, n):
    return Cat(v, Const(0, n - len(v))) if len(v) < n else v[:n]


def _named(m, value, name):
    """``value`` as a signal of its shape: the Verilog then holds the expression once, however
    often it is read (an expression, an ``Array`` read or a ``View`` of one is written out anew
    at every use, and every slice of an ``Array`` read is an ``Array`` read of its own)."""
    value = Value.cast(value)
    s = Signal(value.shape(), name=name)
    m.d.comb += s.eq(value)
    return s


def _prefix_sum(m, a, b, carry_in=0, name="sum"):
    """``a + b + carry_in`` (``len(a) + 1`` bits) by ``hdl.rx._add_prefix``'s Kogge-Stone tree
    (MR-TXS-032: no ripple chain), each prefix step one vector operation into a signal: as an
    expression of bits the tree repeats every shared term in the Verilog."""
    n = len(a)
    a = _named(m, a, f"{name}_a")
    b = _named(m, _ext(Value.cast(b).as_unsigned(), n), f"{name}_b")
    if carry_in:
        g = _named(m, Cat(a[0] | b[0], (a & b)[1:]), f"{name}_g")
        p = _named(m, Cat(~(a[0] ^ b[0]), (a ^ b)[1:]), f"{name}_p")
    else:
        g, p = _named(m, a & b, f"{name}_g"), _named(m, a ^ b, f"{name}_p")
    G, Pp = g, p
    d = 1
    while d < n:
        # bit i takes bit i - d's group (bits below d keep theirs)
        G, Pp = (_named(m, G | (Pp & (G << d)[:n]), f"{name}_g{d}"),
                 _named(m, Pp & ((Pp << d)[:n] | ((1 << d) - 1)), f"{name}_p{d}"))
        d *= 2
    return _named(m, Cat(p ^ (G << 1)[:n], G[n - 1]), name)


class _Arith:
    """MR-TXS-038: the scheduler's adds, subtractions and compares in the form of the target.
    With ``carry_chain`` (an FPGA with a carry chain: ECP5's CCU2C) a plain ``+``, which the
    vendor flow maps to the chain; without it (MR-FLOW-010's generic 6-LUT flow, no carry
    cells) the prefix tree of :func:`_prefix_sum` (a plain ``+`` there is a deeper ripple).
    The same function modulo 2^n either way."""

    def __init__(self, m, carry_chain):
        self.m, self.carry_chain = m, carry_chain

    def add(self, a, b, carry_in=0, name="add"):
        """``a + b (+ 1)`` modulo 2^len(a)."""
        n = len(a)
        if self.carry_chain:
            # one add or subtract each (a + b + 1 as a - ~b): one chain, not two in series
            b = _ext(Value.cast(b).as_unsigned(), n)
            s = a.as_unsigned() - ~b if carry_in else a.as_unsigned() + b
            return _named(self.m, s[:n], name)
        return _prefix_sum(self.m, a.as_unsigned(), b, carry_in, name)[:n]

    def add_c(self, a, b, cin, name="add_c"):
        """``a + b + cin`` modulo 2^len(a) for a 1-bit Value ``cin``: one add of a bit more,
        ``{a, 1} + {b, cin}`` (the carry out of the low bit is ``cin``), one chain."""
        n = len(a)
        s = self.add(Cat(Const(1, 1), a.as_unsigned()), Cat(cin, _ext(Value.cast(b).as_unsigned(), n)),
                     name=name)
        return _named(self.m, s[1:n + 1], f"{name}_s")

    def sub(self, a, b, name="sub"):
        """``a - b`` modulo 2^len(a) (in the prefix form an add of the complement)."""
        n = len(a)
        b = _ext(Value.cast(b).as_unsigned(), n)
        if self.carry_chain:
            return _named(self.m, (a.as_unsigned() - b)[:n], name)
        return _prefix_sum(self.m, a.as_unsigned(), ~b, 1, name)[:n]

    def gt(self, a, b, name="gt"):
        """``a > b`` (unsigned): the carry out of ``a + ~b``."""
        n = max(len(a), len(b))
        if self.carry_chain:
            return _named(self.m, _ext(a, n) > _ext(b, n), name)
        return _prefix_sum(self.m, _ext(a, n), ~_ext(b, n), 0, name)[n]

    def gt_small(self, big, nb, name="gt_small"):
        """``big > nb`` for a wide unsigned ``big`` and a small unsigned ``nb`` (MR-TXS-039): a
        bit of ``big`` above ``nb``'s set, or the low bits' compare."""
        n = len(nb)
        return (big[n:] != 0) | self.gt(big[:n], nb, name)

    def add3_c(self, a, b, c, cin, name="add3_c"):
        """``a + b + c + cin`` modulo 2^len(a): a 3:2 compression (one LUT level), then one
        add with a carry in (MR-TXS-052: the window's change beside a report's or a packet's
        bytes, one chain)."""
        n = len(a)
        a, b, c = (_ext(Value.cast(v).as_unsigned(), n) for v in (a, b, c))
        sm = _named(self.m, a ^ b ^ c, f"{name}_s")
        cy = _named(self.m, Cat(Const(0, 1), ((a & b) | (a & c) | (b & c))[:n - 1]), f"{name}_c")
        return self.add_c(sm, cy, cin, name)

    def gt_room(self, nb, room, name="gt_room"):
        """``nb > room`` for a small unsigned ``nb`` and a wide signed ``room``: a negative
        room, or no room bit above ``nb``'s set and the low bits' compare (an ordinary ``>``
        of the room's width is a ripple chain in the generic flow)."""
        n = len(nb)
        return room[-1] | ((room[n:-1] == 0) & self.gt(nb, room[:n], name))
