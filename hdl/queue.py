"""A first-in first-out queue with ``lib.fifo.SyncFIFO``'s ports and cycles whose storage a block
RAM can hold (docs/spec/hw-parser.md, MR-HW-083..086).

``SyncFIFO`` reads its storage combinationally (``r_data`` is the slot at the read pointer), so
Yosys can only put it in LUT RAM (a DPR16X4 holds 16 x 4 bits for 6 TRELLIS_COMB). ``SyncQueue``
reads its storage through a synchronous read port addressed with the *next* read pointer (the
pointer after this cycle's read), transparent to the write port, so the port's data in a cycle
is the slot at that cycle's read pointer as written up to the last edge: ``SyncFIFO``'s
``r_data`` every cycle, empty or not. A block RAM's read does not see its other port's write of
the same edge: Yosys adds a register of the written word and a 2:1 mux a bit for that (about 1
LUT4 a bit against 1.5 TRELLIS_COMB a bit of 16-deep LUT RAM, 6 a bit of 64-deep).

``late=True`` is a negative control only (MR-HW-085): the read not transparent, so a word
written into an empty queue shows a cycle late.
"""
from amaranth.hdl import Elaboratable, Module, Mux, Signal
from amaranth.lib import memory
from amaranth.lib.fifo import FIFOInterface

__all__ = ["SyncQueue"]


def _incr(ptr, depth):
    return ptr + 1 if depth == 1 << len(ptr) else Mux(ptr == depth - 1, 0, ptr + 1)


class SyncQueue(Elaboratable, FIFOInterface):
    """MR-HW-083: ``SyncFIFO(width=, depth=)``'s ports (``w_data``/``w_en``/``w_rdy``/``w_level``,
    ``r_data``/``r_en``/``r_rdy``/``r_level``, ``level``, ``w_stream``/``r_stream``) with the same
    value on every output every cycle, for every input sequence. MR-HW-084: its storage a
    ``lib.memory.Memory`` (``ram_style="block"``) read by a synchronous port only."""

    def __init__(self, *, width, depth, late=False):
        if depth < 1:
            raise ValueError(f"depth must be at least 1, not {depth!r}")
        super().__init__(width=width, depth=depth)
        self.late = bool(late)
        self.level = Signal(range(depth + 1))

    def elaborate(self, platform):
        m = Module()
        depth = self.depth
        m.d.comb += [self.w_rdy.eq(self.level != depth), self.r_rdy.eq(self.level != 0),
                     self.w_level.eq(self.level), self.r_level.eq(self.level)]
        do_read, do_write = self.r_rdy & self.r_en, self.w_rdy & self.w_en
        produce, consume = Signal(range(depth)), Signal(range(depth))
        # the read pointer after this cycle's read: the synchronous port's address
        consume_n = Signal(range(depth))
        m.d.comb += consume_n.eq(Mux(do_read, _incr(consume, depth), consume))
        m.submodules.storage = storage = memory.Memory(shape=self.width, depth=depth, init=[],
                                                        attrs={"ram_style": "block"})
        w_port = storage.write_port()
        r_port = storage.read_port(transparent_for=() if self.late else (w_port,))
        m.d.comb += [w_port.addr.eq(produce), w_port.data.eq(self.w_data), w_port.en.eq(do_write),
                     r_port.addr.eq(consume_n), r_port.en.eq(1), self.r_data.eq(r_port.data)]
        with m.If(do_write):
            m.d.sync += produce.eq(_incr(produce, depth))
        m.d.sync += [consume.eq(consume_n), self.level.eq(self.level + do_write - do_read)]
        return m
