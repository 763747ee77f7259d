"""Counters exact in every cycle: one register in pieces (:func:`wide_counter`, MR-HW-060,
MR-TX-040), and in LUT RAM (hw-parser.md MR-HW-100, MR-HW-103): one bank of 64-bit rows, a row per
counter, for counters of which at most one counts a cycle. Shared by the parser's reason
counters (MR-HW-060), the RX's outcome counters (hw-rx.md MR-RX-300).
"""
from amaranth.hdl import Cat, Const, Mux, Signal
from amaranth.lib import memory

__all__ = ["counter_ram", "wide_counter"]


def counter_ram(m, inc, idx, addr, rows, nbits, piece=16, name="ctr"):
    """MR-HW-100: ``rows`` counters of ``nbits`` in one LUT RAM (``{name}_mem``), counter ``idx``
    adding 1 at each edge where ``inc`` is set (one counter a cycle), by a read-modify-write of
    its row in ``piece``-bit pieces (no carry crosses a piece, as :func:`wide_counter`):
    piece j adds the row's flag "pieces 0..j-1 all ones" (``{name}_carry{j}``), tested on the row
    as read at its previous increment (piece 0 one below all ones, the pieces between all ones),
    registered with that row's index (``{name}_set*``) and written into the flags at the next
    edge; an increment of the same row in that next cycle takes the registered test instead of
    its flag. Returns the value of counter ``addr`` in this cycle (the increments of the edges
    before). A LUT RAM keeps its rows through a reset: the reset sets a flag a row
    (``{name}_zero``) that reads the row as 0 until its first increment, which writes 1 (selected
    after the sums) and sets no carry flag. MR-HW-103: one source for every bank."""
    assert piece >= 2
    mem = memory.Memory(shape=nbits, depth=rows, init=[])
    m.submodules[f"{name}_mem"] = mem
    wr = mem.write_port()
    rd_inc, rd_out = mem.read_port(domain="comb"), mem.read_port(domain="comb")
    zero = Signal(rows, name=f"{name}_zero", init=(1 << rows) - 1)
    zero_row = zero.bit_select(idx, 1)
    pieces = [rd_inc.data[lo:lo + piece] for lo in range(0, nbits, piece)]
    flags = [Signal(rows, name=f"{name}_carry{j}") for j in range(1, len(pieces))]
    # the previous cycle's increment: its row and its tests, written into the flags now
    set_en, set_idx = Signal(name=f"{name}_set_en"), Signal.like(idx, name=f"{name}_set_idx")
    set_val = Signal(len(flags), name=f"{name}_set_val")
    same = set_en & (set_idx == idx)
    carries = [Mux(same, set_val[j - 1], f.bit_select(idx, 1)) for j, f in enumerate(flags, 1)]
    # each piece's sum with its carry as a select after the piece's + 1 (the adds start at the
    # memory's output alone, the carries' forward is not in front of them)
    m.d.comb += [rd_inc.addr.eq(idx), wr.addr.eq(idx), wr.en.eq(inc), rd_out.addr.eq(addr),
                 wr.data.eq(Mux(zero_row, 1, Cat(*(Mux(c, (p + 1)[:len(p)], p)
                                                    for p, c in zip(pieces, [1] + carries)))))]
    # pieces 0..j-1 all ones after this increment: piece 0 one below all ones, 1..j-1 all ones
    # (they change in this increment only if piece 0 wraps, and then piece 0 is 0 after it)
    low_ones_next = pieces[0] == (1 << len(pieces[0])) - 2
    m.d.sync += [set_en.eq(inc), set_idx.eq(idx),
                 set_val.eq(Cat(*(~zero_row & low_ones_next & Cat(1, *(p.all() for p in pieces[1:j])).all()
                                  for j in range(1, len(pieces)))))]
    with m.If(inc):
        m.d.sync += zero.eq(zero & ~(Const(1, rows) << idx))
    with m.If(set_en):
        m.d.sync += [f.bit_select(set_idx, 1).eq(set_val[j]) for j, f in enumerate(flags)]
    return Mux(zero.bit_select(addr, 1), 0, rd_out.data)


def wide_counter(m, name, nbits, inc, chunk=16):
    """An ``nbits`` counter (one register, ``name``) that adds 1 in the cycles ``inc`` is
    true, counted in ``chunk``-bit pieces, exact in every cycle (MR-HW-060, MR-TX-040).

    Piece ``j`` counts when ``inc`` and the register ``{name}_low{j}`` ("pieces 0..j-1 all
    ones") are set: a 2-input enable, no carry or AND chain across pieces. ``low{j}`` is
    loaded at each increment with "piece 0 is all ones but its bit 0, and pieces 1..j-1 are all
    ones"; the latter is ``{name}_mid{j}``, registered every cycle from the pieces. ``mid``
    is a cycle late only after piece 1 moves, which happens as piece 0 wraps to 0; piece 0
    needs ``2**chunk - 2`` more increments before ``mid`` is read, so the late value is never
    used."""
    assert chunk >= 2
    count = Signal(nbits, name=name)
    pieces = [count[lo:lo + chunk] for lo in range(0, nbits, chunk)]
    near_wrap0 = pieces[0] == (1 << len(pieces[0])) - 2
    with m.If(inc):
        m.d.sync += pieces[0].eq(pieces[0] + 1)
    for j in range(1, len(pieces)):
        low = Signal(name=f"{name}_low{j}")
        if j == 1:
            low_next = near_wrap0
        else:
            mid = Signal(name=f"{name}_mid{j}")
            m.d.sync += mid.eq(Cat(*(p.all() for p in pieces[1:j])).all())
            low_next = near_wrap0 & mid
        with m.If(inc):
            m.d.sync += low.eq(low_next)
            with m.If(low):
                m.d.sync += pieces[j].eq(pieces[j] + 1)
    return count
