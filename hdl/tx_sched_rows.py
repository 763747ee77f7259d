"""Row scheduler RTL (docs/spec/hw-tx-sched.md section 16), first piece: the row pipeline
(MR-TXS-220/221) generic over the operation, and its check block (MR-TXS-237). The scheduler's
operations (S2's logic, MR-TXS-207), the arbiter and the queues are not in it yet (section
16f's plan). Model: models/tx_sched_rows.py ``RowPipe``, ``RowPipeLaneModel``."""
from amaranth.hdl import Module, Mux, Signal
from amaranth.lib import memory, stream, wiring
from amaranth.lib.wiring import In, Out

from ..models.tx_sched_rows import LANE_BITS, LANES, lane_init, lane_layouts

__all__ = ["RowPipe", "RowPipeLane"]


class RowPipe(wiring.Component):
    """MR-TXS-220/221: ``rows`` rows of ``row_width`` bits in a block RAM (one synchronous,
    non-transparent read and one write per cycle). An operation taken in cycle t (``take_valid``,
    ``take_conn``, ``take_arg``) has its row read at the edge ending t; S1 (t+1) registers it,
    taking instead the row written at the previous edge when the connections are equal (the op
    two ahead); S2 (t+2) takes the row written at the previous edge when the connections are
    equal (the op just ahead), computes ``apply(m, row, arg) -> new row`` and writes it back.
    ``wb_*``: the write at the last edge (registers; ``wb_conn``/``wb_row`` kept while
    ``wb_valid`` is 0). ``forward=False``: the wrong form without the two forwards.
    ``collision_garbage`` (simulation only): a read that met a write of its row returns its row
    inverted (MR-FLOW-028's attribute holds: such a read is never used). The
    forwards' selects are registers (their equality terms decided a cycle ahead), so neither
    starts at a comparator."""

    def __init__(self, rows, row_width, arg_width, apply, *, init=(), forward=True,
                 collision_garbage=False):
        self.rows, self.row_width, self.apply = rows, row_width, apply
        self.init, self.forward = list(init), forward
        self.collision_garbage = collision_garbage
        cb = max(1, (rows - 1).bit_length())
        super().__init__({"take_valid": In(1), "take_conn": In(cb), "take_arg": In(arg_width),
                          "wb_valid": Out(1), "wb_conn": Out(cb), "wb_row": Out(row_width)})

    def elaborate(self, platform):
        m = Module()
        W = self.row_width
        # MR-FLOW-028: a read that meets S2's write of its row is replaced by that write at the
        # edge into S2 (fwd_two), so the memory may read anything then: no collision logic
        m.submodules.rows = mem = memory.Memory(shape=W, depth=self.rows, init=self.init,
                                                attrs={"metaroce_collision": "x"})
        rd = mem.read_port()                     # synchronous, not transparent: misses the edge's write
        wr = mem.write_port()
        m.d.comb += rd.addr.eq(self.take_conn)
        rd_data = rd.data
        if self.collision_garbage:
            # simulation only: the read data of a cycle whose read met a write of its row
            # inverted, to show it is never used
            hit = Signal()
            m.d.sync += hit.eq(wr.en & (wr.addr == rd.addr))
            rd_data = Mux(hit, ~rd.data, rd.data)
        s1_valid = Signal()
        s1_conn = Signal.like(self.take_conn)
        s1_arg = Signal.like(self.take_arg)
        m.d.sync += [s1_valid.eq(self.take_valid), s1_conn.eq(self.take_conn),
                     s1_arg.eq(self.take_arg)]
        # S1 -> S2: the write of the op two ahead replaces the read (MR-TXS-221)
        s2_valid = Signal()
        s2_conn = Signal.like(s1_conn)
        s2_arg = Signal.like(s1_arg)
        s2_row = Signal(W)
        # the equality terms decided a cycle ahead and registered (MR-TX-035's form): in the
        # take cycle against the op in S2 (it writes at this edge: next cycle's last write),
        # in S1 against the op in S2 (the op just ahead of S1's)
        fwd_two = Signal()
        fwd_one = Signal()
        if self.forward:
            m.d.sync += [fwd_two.eq(s2_valid & (s2_conn == self.take_conn)),
                         fwd_one.eq(s2_valid & (s2_conn == s1_conn))]
        m.d.sync += [s2_valid.eq(s1_valid), s2_conn.eq(s1_conn), s2_arg.eq(s1_arg),
                     s2_row.eq(Mux(fwd_two, self.wb_row, rd_data))]
        # S2: the write of the op just ahead replaces the registered row
        row_in = Signal(W)
        m.d.comb += row_in.eq(Mux(fwd_one, self.wb_row, s2_row))
        new_row = Signal(W)
        m.d.comb += new_row.eq(self.apply(m, row_in, s2_arg))
        m.d.comb += [wr.addr.eq(s2_conn), wr.data.eq(new_row), wr.en.eq(s2_valid)]
        m.d.sync += self.wb_valid.eq(s2_valid)
        with m.If(s2_valid):
            m.d.sync += [self.wb_conn.eq(s2_conn), self.wb_row.eq(new_row)]
        return m


class RowPipeLane(wiring.Component):
    """MR-TXS-237: :class:`RowPipe` with the lane-add operation (models/tx_sched_rows.py
    ``lane_add``): ports ``s_op`` ``{conn, lane, add}`` and ``m_wb`` ``{conn, row}``, the
    ports of ``RowPipeLaneModel``."""

    def __init__(self, rows=4, *, forward=True, collision_garbage=False):
        self.rows, self.forward, self.collision_garbage = rows, forward, collision_garbage
        self.op_lay, self.wb_lay = lane_layouts(rows)
        super().__init__({"s_op": In(stream.Signature(self.op_lay, always_ready=True)),
                          "m_wb": Out(stream.Signature(self.wb_lay, always_ready=True))})

    def elaborate(self, platform):
        m = Module()

        def apply(m, row, arg):
            lane, add = arg[:LANES.bit_length() - 1], arg[LANES.bit_length() - 1:]
            out = Signal(LANES * LANE_BITS)
            for k in range(LANES):
                v = row[k * LANE_BITS:(k + 1) * LANE_BITS]
                m.d.comb += out[k * LANE_BITS:(k + 1) * LANE_BITS].eq(
                    v + Mux(lane == k, add, 0))
            return out

        m.submodules.pipe = pipe = RowPipe(self.rows, LANES * LANE_BITS,
                                           self.op_lay.size - self.op_lay["conn"].width, apply,
                                           init=lane_init(self.rows), forward=self.forward,
                                           collision_garbage=self.collision_garbage)
        m.d.comb += [pipe.take_valid.eq(self.s_op.valid), pipe.take_conn.eq(self.s_op.p.conn),
                     pipe.take_arg.eq(self.s_op.payload.as_value()[self.op_lay["conn"].width:]),
                     self.m_wb.valid.eq(pipe.wb_valid), self.m_wb.p.conn.eq(pipe.wb_conn),
                     self.m_wb.p.row.eq(pipe.wb_row)]
        return m
