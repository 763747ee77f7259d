"""First-in first-out queues with ``lib.fifo.SyncFIFO``'s ports and cycles: ``HeadRegFIFO``, its
head, room and valid in flip-flops (LUT RAM; hw-tx.md MR-TX-065/073), and ``SyncQueue``, its
storage in a block RAM (docs/spec/hw-parser.md, MR-HW-083..086).

``SyncFIFO`` reads its storage combinationally (``r_data`` is the slot at the read pointer), so
Yosys can only put it in LUT RAM (a DPR16X4 holds 16 x 4 bits for 6 TRELLIS_COMB). ``SyncQueue``
reads its storage through a synchronous read port addressed with the *next* read pointer (the
pointer after this cycle's read), transparent to the write port, so the port's data in a cycle
is the slot at that cycle's read pointer as written up to the last edge: ``SyncFIFO``'s
``r_data`` every cycle, empty or not. A block RAM's read does not see its other port's write of
the same edge: Yosys adds a register of the written word and a 2:1 mux a bit for that (about 1
LUT4 a bit against 1.5 TRELLIS_COMB a bit of 16-deep LUT RAM, 6 a bit of 64-deep).

``HeadRegQueue`` (MR-HW-092/093) and ``HeadRegFIFO(block=True)`` (MR-HW-095) take ``r_data`` from
flip-flops with the storage in block RAM, so a reader whose ``r_en`` depends on ``r_data`` no
longer starts at the block RAM's clock to out; ``HeadRegQueue``'s block RAM is read from
flip-flops only (three heads, about 4 TRELLIS_COMB a bit), ``HeadRegFIFO``'s is addressed with
the next head's slot after the pop (one head, about 1 a bit; MR-HW-096).

``late=True`` is a negative control only (MR-HW-085): the read not transparent, so a word
written into an empty queue shows a cycle late.

``BufferedQueue`` (MR-HW-088): ``lib.fifo.SyncFIFOBuffered``'s ports and cycles (its read is
synchronous already, so no transparency is needed), its storage marked for block RAM: MR-FLOW-026
leaves a memory narrower than 72 bits to Yosys, which takes LUT RAM for it.
"""
from amaranth.hdl import Const, Elaboratable, Module, Mux, Signal
from amaranth.lib import memory, wiring
from amaranth.lib.fifo import FIFOInterface
from amaranth.lib.wiring import In, Out

__all__ = ["BufferedQueue", "HeadRegFIFO", "HeadRegQueue", "SyncQueue", "interval_ready"]


def interval_ready(m, interval, took, name="interval_wait"):
    """MR-ENG-299: an input's gate, taken at most once every ``interval`` cycles: low in the
    ``interval - 1`` cycles after a cycle whose ``took`` is high (``models.records.IntervalGate``
    cycle for cycle). ``took`` is the input's ``valid & ready``, this gate in ``ready``: the
    count is a register, so no loop. ``interval`` 1: a constant 1, no logic."""
    if interval <= 1:
        return Const(1)
    wait = Signal(range(interval), name=name)
    with m.If(took):
        m.d.sync += wait.eq(interval - 1)
    with m.Elif(wait != 0):
        m.d.sync += wait.eq(wait - 1)
    return wait == 0


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


#: MR-HW-088: BufferedQueue's storage attributes: block RAM, and MR-FLOW-028's collision mark (an
#: enabled read never meets a write of its row: see BufferedQueue.elaborate)
BUFFERED_ATTRS = {"ram_style": "block", "metaroce_collision": "x"}


class BufferedQueue(Elaboratable, FIFOInterface):
    """MR-HW-088: ``SyncFIFOBuffered(width=, depth=)``'s ports and the same value on every output
    every cycle (Amaranth 0.5's form: an inner ring of ``depth - 1`` entries read through a
    synchronous port into the output), the ring's ``Memory`` carrying :data:`BUFFERED_ATTRS`."""

    def __init__(self, *, width, depth):
        if depth < 2:
            raise ValueError(f"depth must be at least 2, not {depth!r}")
        super().__init__(width=width, depth=depth)
        self.level = Signal(range(depth + 1))
        # MR-HW-088: an enabled read of the row written this cycle (for the tests: never set; no
        # load, so synthesis drops it)
        self.collision = Signal()

    def elaborate(self, platform):
        m = Module()
        inner_depth = self.depth - 1
        inner_level = Signal(range(inner_depth + 1))
        inner_r_rdy = Signal()
        do_write = self.w_rdy & self.w_en
        m.d.comb += [self.w_level.eq(self.level), self.r_level.eq(self.level),
                     self.w_rdy.eq(inner_level != inner_depth), inner_r_rdy.eq(inner_level != 0)]
        do_inner_read = inner_r_rdy & (~self.r_rdy | self.r_en)
        # MR-FLOW-028: the read is enabled only while the ring holds an entry and the write only
        # while it has room, so an enabled read's row (consume) is never the written one (produce)
        m.submodules.storage = storage = memory.Memory(shape=self.width, depth=inner_depth, init=[],
                                                        attrs=BUFFERED_ATTRS)
        w_port, r_port = storage.write_port(), storage.read_port(domain="sync")
        produce, consume = Signal(range(inner_depth)), Signal(range(inner_depth))
        m.d.comb += [w_port.addr.eq(produce), w_port.data.eq(self.w_data), w_port.en.eq(do_write),
                     r_port.addr.eq(consume), r_port.en.eq(do_inner_read), self.r_data.eq(r_port.data),
                     self.collision.eq(r_port.en & w_port.en & (r_port.addr == w_port.addr))]
        with m.If(do_write):
            m.d.sync += produce.eq(_incr(produce, inner_depth))
        with m.If(do_inner_read):
            m.d.sync += consume.eq(_incr(consume, inner_depth))
        with m.If(do_write & ~do_inner_read):
            m.d.sync += inner_level.eq(inner_level + 1)
        with m.If(do_inner_read & ~do_write):
            m.d.sync += inner_level.eq(inner_level - 1)
        with m.If(do_inner_read):
            m.d.sync += self.r_rdy.eq(1)
        with m.Elif(self.r_en):
            m.d.sync += self.r_rdy.eq(0)
        m.d.comb += self.level.eq(inner_level + self.r_rdy)
        return m


class HeadRegFIFO(wiring.Component):
    """MR-TX-065: ``amaranth.lib.fifo.SyncFIFO``'s ports and visible behaviour, every cycle
    (``r_data`` is the head slot's content, also while empty: ``models.fifo.SyncFifoModel``),
    with the head kept in a register. The ring (LUT RAM) is read at the slot after the head,
    a cycle ahead; the head register takes that read at a pop, or the written entry when the
    write lands on the next head's slot. ``r_data`` and ``r_rdy`` are flip-flops, and so is
    ``w_rdy`` (MR-TX-073: ``level != depth`` after the edge, so a writer's decision starts at
    a flip-flop, not at a comparison of ``level``).

    ``block=True`` (MR-HW-095): the ring a block RAM (``ram_style="block"``) read through a
    synchronous port transparent to the write, addressed with the next head's slot after this
    cycle's pop, so its data in a cycle is the slot after the head as written up to the last edge
    (the LUT-RAM form's combinational read). The reader's ``r_en`` still reaches the block RAM's
    address, but from ``r_data``'s flip-flops, not from the block RAM's output."""

    def __init__(self, *, width, depth, block=False):
        assert depth >= 2
        self.width, self.depth, self.block = width, depth, bool(block)
        super().__init__({
            "w_data": In(width), "w_en": In(1), "w_rdy": Out(1),
            "r_data": Out(width), "r_en": In(1), "r_rdy": Out(1),
            "level": Out(range(depth + 1)),
        })

    def elaborate(self, platform):
        m = Module()
        depth = self.depth
        m.submodules.storage = ring = memory.Memory(
            shape=self.width, depth=depth, init=[], attrs={"ram_style": "block"} if self.block else None)
        if self.block:
            wr = ring.write_port()
            rd = ring.read_port(transparent_for=(wr,))
        else:
            wr, rd = ring.write_port(), ring.read_port(domain="comb")
        w_ptr = Signal(range(depth))
        r_next = Signal(range(depth), init=1)      # the slot after the head's
        head, nonempty = Signal(self.width), Signal()
        level = self.level
        do_w = self.w_en & self.w_rdy
        do_r = self.r_en & nonempty

        def step(p):
            return Mux(p == depth - 1, 0, p + 1)

        # MR-TX-073: room after the edge: a write alone fills the last slot when one was
        # left, a pop alone leaves room, else as it is
        w_rdy = Signal(init=1)
        m.d.sync += w_rdy.eq(Mux(do_w & ~do_r, level != depth - 1, do_r | w_rdy))
        m.d.comb += [self.w_rdy.eq(w_rdy), self.r_rdy.eq(nonempty),
                     self.r_data.eq(head),
                     wr.en.eq(do_w), wr.addr.eq(w_ptr), wr.data.eq(self.w_data),
                     rd.addr.eq(Mux(do_r, step(r_next), r_next) if self.block else r_next)]
        with m.If(do_w):
            m.d.sync += w_ptr.eq(step(w_ptr))
        with m.If(do_r):
            m.d.sync += r_next.eq(step(r_next))
        m.d.sync += level.eq(level + do_w - do_r)
        # the write lands on the head's slot after this edge when the ring holds nothing
        # else then: empty without a pop, or one entry popped
        w_is_head = do_w & Mux(do_r, level == 1, ~nonempty)
        with m.If(w_is_head):
            m.d.sync += head.eq(self.w_data)
        with m.Elif(do_r):
            m.d.sync += head.eq(rd.data)
        m.d.sync += nonempty.eq(Mux(do_r, (level != 1) | do_w, nonempty | do_w))
        return m


class HeadRegQueue(Elaboratable, FIFOInterface):
    """MR-HW-092: ``SyncFIFO(width=, depth=)``'s ports and cycles (``w_rdy``, ``r_rdy``, ``level``,
    ``w_level``, ``r_level`` every cycle; ``r_data`` whenever ``r_rdy``), its storage a block RAM
    (``ram_style="block"``, MR-FLOW-028's collision mark) whose read address and enable are
    flip-flops: the head and the next two entries sit in registers ``h0..h2`` (``r_data`` is
    ``h0``), refilled from the block RAM by reads issued a cycle ahead, so no path runs from the
    block RAM's data through the reader's ``r_en`` back to its address (MR-HW-093). A word
    written while the block RAM holds nothing unread and no read is in flight goes straight
    into the registers (readable in the next cycle, as in ``SyncFIFO``) when they have room."""

    #: registers ahead of the block RAM: a pop's refill is issued the next cycle and lands two
    #: cycles later, so three cover a pop every cycle (MR-HW-092)
    HEADS = 3

    def __init__(self, *, width, depth):
        if depth < 1:
            raise ValueError(f"depth must be at least 1, not {depth!r}")
        super().__init__(width=width, depth=depth)
        self.level = Signal(range(depth + 1))
        # MR-HW-092: an enabled read of the row written this cycle (for the tests: never set;
        # no load, so synthesis drops it)
        self.collision = Signal()

    def elaborate(self, platform):
        m = Module()
        depth, n_h = self.depth, self.HEADS
        heads = [Signal(self.width, name=f"h{i}") for i in range(n_h)]
        occ = Signal(range(n_h + 1))                 # entries in h0..h2
        w_rdy = Signal(init=1)
        r_rdy = Signal()
        m.d.comb += [self.w_rdy.eq(w_rdy), self.r_rdy.eq(r_rdy), self.r_data.eq(heads[0]),
                     self.w_level.eq(self.level), self.r_level.eq(self.level)]
        do_read, do_write = r_rdy & self.r_en, w_rdy & self.w_en
        # the block RAM: every taken word is written at `produce`, which moves on only when the
        # word is kept there (not taken into the registers)
        ring = max(2, depth)
        m.submodules.storage = storage = memory.Memory(shape=self.width, depth=ring, init=[],
                                                        attrs=BUFFERED_ATTRS)
        w_port, r_port = storage.write_port(), storage.read_port(domain="sync")
        produce, consume = Signal(range(ring)), Signal(range(ring))
        unread = Signal(range(ring + 1))             # words kept in the block RAM, not yet read
        issue, landing = Signal(), Signal()          # a read this cycle; its word on the port
        m.d.comb += [w_port.addr.eq(produce), w_port.data.eq(self.w_data), w_port.en.eq(do_write),
                     r_port.addr.eq(consume), r_port.en.eq(issue),
                     self.collision.eq(r_port.en & w_port.en & (r_port.addr == w_port.addr))]
        # straight into the registers (behind a word landing from the block RAM): nothing older
        # kept in the block RAM (a word read this cycle is still counted in `unread`), and room
        direct = do_write & (unread == 0) & (occ + landing < n_h)
        keep = do_write & ~direct
        arrive = landing + direct
        slot = occ - do_read                         # where a landing word goes; a direct one after it
        for i, h in enumerate(heads):
            with m.If(landing & (slot == i)):
                m.d.sync += h.eq(r_port.data)
            with m.Elif(direct & (slot + landing == i)):
                m.d.sync += h.eq(self.w_data)
            if i + 1 < n_h:
                with m.Elif(do_read):
                    m.d.sync += h.eq(heads[i + 1])
        occ_n = Signal.like(occ)
        unread_n = Signal.like(unread)
        level_n = Signal.like(self.level)
        m.d.comb += [occ_n.eq(occ - do_read + arrive), unread_n.eq(unread + keep - issue),
                     level_n.eq(self.level + do_write - do_read)]
        with m.If(keep):
            m.d.sync += produce.eq(_incr(produce, ring))
        with m.If(issue):
            m.d.sync += consume.eq(_incr(consume, ring))
        # MR-HW-093: the next cycle's read, from this cycle's state: a word is kept and the
        # registers have room for it after the read in flight lands
        m.d.sync += [occ.eq(occ_n), unread.eq(unread_n), self.level.eq(level_n),
                     landing.eq(issue),
                     issue.eq((unread_n != 0) & (occ_n + issue < n_h)),
                     r_rdy.eq(level_n != 0), w_rdy.eq(level_n != depth)]
        return m
