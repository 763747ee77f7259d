"""Row scheduler RTL (docs/spec/hw-tx-sched.md section 16): the row pipeline (MR-TXS-220/221)
generic over the operation and its check block (MR-TXS-237); the scheduler on it,
``TxSchedRows`` (section 16g, MR-TXS-250..255: S2's operations, the descriptor memory, the
arbiter, the boundary registers, the connection queues and the output queues). Models:
models/tx_sched_rows.py ``RowPipe``, ``RowPipeLaneModel``, ``TxSchedRowsModel``."""
from types import SimpleNamespace

from amaranth.hdl import Array, Cat, Const, Elaboratable, Module, Mux, Signal, signed
from amaranth.lib import data, fifo, memory, stream, wiring
from amaranth.lib.wiring import In, Out

from ..models import protocol as P
from ..models import records
from ..models.pacer import RATE_BITS as pacer_rate_bits
from ..models.pacer import frame_layouts as pacer_layouts
from ..models.tx_sched import WIRE_HDR
from ..models.tx_sched import (ATOMIC_LEN, OP_CMP_SWAP, OP_FETCH_ADD, OP_READ, OP_READ_RESP,
                               OP_SEND, OP_SEND_IMM, OP_WRITE_IMM, OUT_DEPTH, PATH_ACTIVE,
                               PATH_PROBING, SMALL, STATUS_LOC_LEN_ERR, STATUS_LOC_QP_OP_ERR,
                               check_params, layouts)
from ..models.tx_sched_rows import (HUSH, LANE_BITS, LANES, OP_KINDS, PACE_KINDS, ask_layout,
                                    lane_init, lane_layouts, late_layout, row_layouts,
                                    rows_restore_layout)
from ..models.wire import MrdhFlag, Op
from .tx_sched import _first_from, _lowest_zero, cqe_ports, sched_ports

__all__ = ["RowPipe", "RowPipeLane", "ConnFifo", "TailSyncFifo", "TxSchedRows"]


class RowPipe(wiring.Component):
    """MR-TXS-220/221: ``rows`` rows of ``row_width`` bits in a block RAM (one synchronous,
    non-transparent read and one write per cycle). An operation taken in cycle t (``take_valid``,
    ``take_conn``, ``take_arg``) has its row read at the edge ending t; S1 (t+1) takes instead
    the row written at the previous edge when the connections are equal (the op two ahead), and
    S2's register takes at the edge into S2 the row S2 writes at that edge when the connections
    are equal (the op just ahead; MR-TXS-507); S2 (t+2) computes ``apply(m, row, arg) -> new
    row`` on its register and writes it back. ``wb_*``: the write at the last edge (registers;
    ``wb_conn``/``wb_row`` kept while ``wb_valid`` is 0). ``forward=False``: the wrong form
    without the two forwards. ``collision_garbage`` (simulation only): a read that met a write
    of its row returns its row inverted (MR-FLOW-028's attribute holds: such a read is never
    used). S1's forward select is a register (its equality term decided a cycle ahead); S2's
    compares two registers, beside S2's op."""

    def __init__(self, rows, row_width, arg_width, apply, *, init=(), forward=True,
                 collision_garbage=False, take_eq_in=False, pre=None, pre_width=0):
        self.rows, self.row_width, self.apply = rows, row_width, apply
        # MR-TXS-471: ``pre(m, row, arg) -> value`` formed in S1 on S1's row (the read, or the
        # write at the last edge when forwarded) and registered into S2 as ``s2_pre``
        self.pre, self.pre_width = pre, pre_width
        self.init, self.forward = list(init), forward
        self.collision_garbage = collision_garbage
        # MR-TXS-458: take_eq_in, the take's connection's equality with S2's formed by the
        # caller (``take_eq_s2``), not compared after the take's select
        self.take_eq_in = bool(take_eq_in)
        cb = max(1, (rows - 1).bit_length())
        # the stages' registers are outputs too: TxSchedRows' arbiter counts the ops in flight,
        # reads the descriptors at S1's connection and gates S2's pushes by its valid
        sig = {"take_valid": In(1), "take_conn": In(cb), "take_arg": In(arg_width),
               "wb_valid": Out(1), "wb_conn": Out(cb), "wb_row": Out(row_width),
               "s1_valid": Out(1), "s1_conn": Out(cb), "s1_arg": Out(arg_width),
               "s2_valid": Out(1), "s2_conn": Out(cb), "s2_arg": Out(arg_width)}
        if self.pre is not None:
            sig["s2_pre"] = Out(pre_width)
            # MR-TXS-504: whether S2's row is the op just ahead's write (S1's pre misses it)
            sig["s2_fwd"] = Out(1)
        if self.take_eq_in:
            sig["take_eq_s2"] = In(1)
        super().__init__(sig)

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
        s1_valid, s1_conn, s1_arg = self.s1_valid, self.s1_conn, self.s1_arg
        m.d.sync += [s1_valid.eq(self.take_valid), s1_conn.eq(self.take_conn),
                     s1_arg.eq(self.take_arg)]
        # S1 -> S2: the write of the op two ahead replaces the read (MR-TXS-221), the write
        # at the edge (the op just ahead's) replaces both (MR-TXS-507)
        s2_valid, s2_conn, s2_arg = self.s2_valid, self.s2_conn, self.s2_arg
        s2_row = Signal(W)
        # the equality terms decided a cycle ahead and registered (MR-TX-035's form): in the
        # take cycle against the op in S2 (it writes at this edge: next cycle's last write),
        # in S1 against the op in S2 (the op just ahead of S1's; MR-TXS-504's s2_fwd)
        fwd_two = Signal()
        fwd_one = Signal()
        if self.forward:
            take_eq = self.take_eq_s2 if self.take_eq_in else s2_conn == self.take_conn
            m.d.sync += [fwd_two.eq(s2_valid & take_eq),
                         fwd_one.eq(s2_valid & (s2_conn == s1_conn))]
        s1_row = Signal(W)
        m.d.comb += s1_row.eq(Mux(fwd_two, self.wb_row, rd_data))
        # MR-TXS-507: the forward of the op just ahead taken at the edge into S2 (S2's write
        # at that edge, new_row, in place of S1's row), so S2 applies its op to its register
        # alone: one select of three before the register, none after it
        fwd_s1 = Signal()
        if self.forward:
            m.d.comb += fwd_s1.eq(s2_valid & (s2_conn == s1_conn))
        new_row = Signal(W)
        m.d.sync += [s2_valid.eq(s1_valid), s2_conn.eq(s1_conn), s2_arg.eq(s1_arg),
                     s2_row.eq(Mux(fwd_s1, new_row, s1_row))]
        if self.pre is not None:
            m.d.sync += self.s2_pre.eq(self.pre(m, s1_row, s1_arg))
            m.d.comb += self.s2_fwd.eq(fwd_one)
        m.d.comb += new_row.eq(self.apply(m, s2_row, s2_arg))
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


# ---------------------------------------------------------------------------- the scheduler

#: MR-TXS-210: the operation kinds' codes, in the arbiter's priority (models' OP_KINDS)
K_VERDICT, K_CWND, K_FAIL, K_ACKED, K_LOST, K_COMPLETE, K_WR, K_PROBE, K_SCHED = range(9)
assert OP_KINDS == ("verdict", "cwnd", "fail", "acked", "lost", "complete", "wr", "probe",
                    "sched")
#: MR-TXS-337/340: with pacing, three more kinds (codes after those; priority MR-TXS-340's)
K_TURN, K_RETIME, K_WAKE = range(9, 12)
assert PACE_KINDS == ("turn", "retime", "wake")


def _time_lt(a, b):
    """MR-ENG-050: ``a`` strictly before ``b`` on the wrapping 32-bit counter (``b - a`` not 0
    and below 2^31)."""
    d = (b - a)[:P.TIME_BITS]
    return (d != 0) & ~d[P.TIME_BITS - 1]


def _first_bit(valid):
    """``(any, index)`` of the lowest set bit of ``valid`` (a list of 1-bit Values)."""
    nb = max(1, (len(valid) - 1).bit_length())
    found, idx = Const(0, 1), Const(0, nb)
    for k in reversed(range(len(valid))):
        idx = Mux(valid[k], k, idx)
        found = found | valid[k]
    return found, idx


def _msg_len(e):
    """MR-TXS-062/097: a message's bytes from a record with ``op`` and ``length`` (a work
    request or an entry): a READ's 0, an atomic's operands, else the length."""
    return Mux(e.op == OP_READ, 0, Mux(e.op == OP_CMP_SWAP, 16,
                                       Mux(e.op == OP_FETCH_ADD, 8, e.length)))


def _sub0(a, b):
    """``max(0, a - b)`` (the model's clamps of MR-TXS-020)."""
    return Mux(a > b, a - b, 0)


class ConnFifo(wiring.Component):
    """MR-TXS-212/215, MR-TXS-251: a FIFO of connection numbers in a memory of ``conns``
    entries (each connection at most once, so it never overflows), its head read a cycle ahead
    through a transparent synchronous read (the next head's address, so a push into an empty
    queue is its head at the next cycle, as the model's deque).

    ``tail=True`` (MR-TXS-456): the push is registered in a tail register and written into the
    memory at the next edge; the queue is the memory's entries and then the tail's, so its head
    is the memory's head, or the tail's when the memory is empty, and a pop of the tail alone
    takes it without a write: the same queue in every cycle, with no path from ``push`` but
    into the tail register."""

    def __init__(self, conns, width=None, *, tail=False):
        self.conns, self.tail = conns, bool(tail)
        # MR-TXS-338/339: the ask and late queues are such FIFOs of wider entries
        cb = width or max(1, (conns - 1).bit_length())
        super().__init__({"push": In(1), "push_conn": In(cb), "pop": In(1),
                          "head": Out(cb), "nonempty": Out(1)})

    def elaborate(self, platform):
        m = Module()
        n, cb = self.conns, len(self.head)
        ab = max(1, (n - 1).bit_length())
        m.submodules.mem = mem = memory.Memory(shape=cb, depth=n, init=[])
        wr = mem.write_port()
        rd = mem.read_port(transparent_for=(wr,))
        rp, wp = Signal(ab), Signal(ab)
        level = Signal(range(n + 1))
        # MR-TXS-452: the pointers' and the level's next values selected by push and pop
        # among the registers' +1/-1 (formed from registers alone), not added after them
        rp1, wp1 = Signal.like(rp), Signal.like(wp)
        lv_up, lv_dn = Signal.like(level), Signal.like(level)
        m.d.comb += [rp1.eq(rp + 1), wp1.eq(wp + 1), lv_up.eq(level + 1), lv_dn.eq(level - 1)]
        push, push_conn, pop = self.push, self.push_conn, self.pop
        head, nonempty = rd.data, level != 0
        if self.tail:
            # MR-TXS-456: the memory's push is last edge's (the tail register's); a pop takes
            # the memory's head while it holds one (mem_ne: level not 0, a register of its
            # own so the head's select and the pop's split read no compare), else the tail
            tail_v, tail_c, mem_ne = Signal(), Signal(cb), Signal()
            m.d.sync += [tail_v.eq(self.push), tail_c.eq(self.push_conn)]
            pop, push, push_conn = Signal(), Signal(), tail_c
            m.d.comb += [pop.eq(self.pop & mem_ne), push.eq(tail_v & ~(self.pop & ~mem_ne))]
            head, nonempty = Mux(mem_ne, rd.data, tail_c), mem_ne | tail_v
            m.d.sync += mem_ne.eq(Mux(push == pop, mem_ne, Mux(push, 1, level != 1)))
        m.d.comb += [wr.addr.eq(wp), wr.data.eq(push_conn), wr.en.eq(push),
                     rd.addr.eq(Mux(pop, rp1, rp)), self.head.eq(head),
                     self.nonempty.eq(nonempty)]
        m.d.sync += [rp.eq(Mux(pop, rp1, rp)), wp.eq(Mux(push, wp1, wp)),
                     level.eq(Mux(push == pop, level, Mux(push, lv_up, lv_dn)))]
        return m


class TailSyncFifo(Elaboratable):
    """MR-TXS-457: ``amaranth.lib.fifo.SyncFIFO``'s behaviour at its ports (``w_en``/``w_data``,
    ``r_en``/``r_rdy``/``r_data``, its head read without a register, so the payload while empty
    is the ring's slot as the model's ``SyncFifoModel``) and ``level``, with the write
    registered: the write enable and data go into a tail register alone, written into the ring
    at the next edge. The ring's pointers and contents are SyncFIFO's a cycle late at the
    write; the head is the tail's data when the slot read is the one the tail is still to write
    (``consume`` equal to the ring's ``produce`` while the tail is held), else the ring's; the
    level the ring's plus the tail. Never written full (the room terms of MR-TXS-216)."""

    def __init__(self, *, width, depth):
        self.width, self.depth = width, depth
        self.w_en, self.w_data = Signal(), Signal(width)
        self.r_en, self.r_rdy, self.r_data = Signal(), Signal(), Signal(width)
        self.level = Signal(range(depth + 2))

    def elaborate(self, platform):
        m = Module()
        d = self.depth
        m.submodules.storage = mem = memory.Memory(shape=self.width, depth=d, init=[])
        wr, rd = mem.write_port(), mem.read_port(domain="comb")
        tail_v, tail_d = Signal(), Signal(self.width)
        produce, consume = Signal(range(d)), Signal(range(d))
        ring = Signal(range(d + 1))                 # the entries written into the ring
        at_tail = Signal()                          # consume == produce, from registers
        m.d.comb += at_tail.eq(consume == produce)
        do_read = Signal()
        m.d.comb += [self.r_rdy.eq((ring != 0) | tail_v), do_read.eq(self.r_rdy & self.r_en),
                     self.level.eq(ring + tail_v),
                     wr.addr.eq(produce), wr.data.eq(tail_d), wr.en.eq(tail_v),
                     rd.addr.eq(consume),
                     self.r_data.eq(Mux(tail_v & at_tail, tail_d, rd.data))]
        m.d.sync += [tail_v.eq(self.w_en), tail_d.eq(self.w_data)]
        with m.If(tail_v):
            m.d.sync += produce.eq(Mux(produce == d - 1, 0, produce + 1))
        with m.If(do_read):
            m.d.sync += consume.eq(Mux(consume == d - 1, 0, consume + 1))
        m.d.sync += ring.eq(ring + tail_v - do_read)
        return m


class TxSchedRows(wiring.Component):
    """The row scheduler (docs/spec/hw-tx-sched.md section 16, MR-TXS-250): the ports of
    :class:`~metaroce.hdl.tx_sched.TxSched` (MR-TXS-002; tail probes, MR-TXS-270..279;
    ``restores``: ``m_restore``, MR-TXS-284..289; ``rd_rows``: ``m_rd``, MR-TXS-325..330;
    ``s_psn``/``psn_ignored``, MR-TXS-481..484; ``pacing``, MR-TXS-337..346), its state in a
    row memory (:class:`RowPipe`) and a descriptor memory,
    the arbiter and the boundary registers (MR-TXS-210/211/217), the active and completion
    queues (:class:`ConnFifo`, MR-TXS-212..215), the output queues (MR-TXS-216) and S2's
    operations on a row (MR-TXS-207/208, :meth:`_s2`: the semantics of
    :class:`~metaroce.models.tx_sched.TxSchedModel` on one connection's fields, as
    models/tx_sched_rows.py ``TxSchedRowsModel._apply``). ``forward=False``: the wrong form
    without MR-TXS-221's forwards of the rows, negative controls only."""

    def __init__(self, width=64, *, conns=SMALL["conns"], streams=SMALL["streams"],
                 paths=SMALL["paths"], depth=SMALL["depth"], forward=True, init_rows=True,
                 restores=False, kept_out=True, rd_rows=False, pacing=False, pace_ignored=False,
                 pace_full_only=False, retime_hold=True, sched_hold=True, **kw):
        prm = dict(SMALL, conns=conns, streams=streams, paths=paths, depth=depth)
        prm.update(kw)
        self._MustUse__silence = True       # a refused instance is no unused design
        if not (isinstance(conns, int) and 2 <= conns <= 4096 and not conns & (conns - 1)):
            raise ValueError(f"conns must be a power of two in [2, 4096], not {conns!r}")
        check_params(**dict(prm, conns=2))
        self._MustUse__silence = False
        self.width, self.prm, self.forward = width, prm, forward
        self.init_rows = init_rows
        self.conns, self.streams, self.paths, self.depth = conns, streams, paths, depth
        # MR-TXS-337..346: pacing in the rows (pace_ignored, pace_full_only: the wrong forms of
        # MR-TXS-343, negative controls only)
        self.pacing = bool(pacing)
        self.pace_ignored, self.pace_full_only = bool(pace_ignored), bool(pace_full_only)
        # MR-TXS-372: S2's schedule op held while a write with a time of its connection is in
        # flight (retime_hold=False, negative control only: MR-TXS-371's early packets)
        self.retime_hold = bool(retime_hold)
        # MR-TXS-470: no schedule op taken right behind an op of its connection (sched_hold=
        # False, negative control only: S1's decision, MR-TXS-471, then misses that op's write)
        self.sched_hold = bool(sched_hold)
        self.rl = row_layouts(conns, streams, paths, depth, prm["chunk_window"],
                              prm["resend_depth"], self.pacing, prm.get("late_cap"))
        self.lay = lay = layouts(conns, streams, paths, depth)
        # MR-TXS-284: with restores, the acknowledged reports' restores of probing paths on
        # m_restore {conn, path} (the TX top's windows, hw-tx.md MR-TX-256), TxSched's port
        self.restores = bool(restores)
        # MR-TXS-316: kept_out=False (negative control only): no kept record
        self.kept_out = bool(kept_out)
        ports = sched_ports(lay)
        # MR-TXS-481: the register scheduler's initial-PSN port (MR-TXS-465)
        ports.update({"s_psn": In(stream.Signature(lay.psn)), "psn_ignored": Out(1)})
        if self.restores:
            # MR-TXS-316: with ``kept`` (a verdict taken as a reroute)
            ports["m_restore"] = Out(stream.Signature(rows_restore_layout(conns, paths)))
        # MR-TXS-325: with rd_rows, TxSched's m_rd (the engine writes the READs' rows)
        self.rd_rows = bool(rd_rows)
        if self.rd_rows:
            ports["m_rd"] = Out(stream.Signature(lay.rd))
        if self.pacing:
            # MR-TXS-337: TxSched(pacing=True)'s pacing ports (MR-TXS-159/167/177)
            self.pace_lay = pacer_layouts(conns)
            ports.update({"m_pace": Out(stream.Signature(self.pace_lay["frame"])),
                          "s_turn": In(stream.Signature(self.pace_lay["turn"])),
                          "s_retime": In(stream.Signature(self.pace_lay["write"])),
                          "line_mbps": In(pacer_rate_bits)})
        super().__init__(ports)

    def _reset_rows(self):
        """MR-TXS-206: the rows at reset, the model's (``TxSchedRowsModel``)."""
        from ..models.tx_sched_rows import TxSchedRowsModel
        prm = self.prm
        model = TxSchedRowsModel(self.width, **prm, pacing=self.pacing)
        return list(model.mem)

    def elaborate(self, platform):
        m = Module()
        prm, lay, rl = self.prm, self.lay, self.rl
        C, S, D = self.conns, self.streams, self.depth
        mtu = prm["mtu"]
        mtu_log2 = mtu.bit_length() - 1
        cb = max(1, (C - 1).bit_length())
        sb = max(1, (S - 1).bit_length())
        SD = S * D
        desc_w = rl.desc.size

        # -- the boundary registers (MR-TXS-211); the work request's in one record with a READ
        # response's fields (MR-TXS-209: rsp_item)
        wrb_lay = data.StructLayout({**{k: f.shape for k, f in lay.wr}, "rsp": 1, "msg": 32,
                                     "err": 1})
        b_wr, b_wr_v = Signal(wrb_lay), Signal()
        b_ack, b_ack_v = Signal(lay.acked), Signal()
        b_lost, b_lost_v = Signal(lay.report), Signal()
        b_cwnd, b_cwnd_v = Signal(lay.cwnd), Signal()
        b_ver, b_ver_v = Signal(lay.probe), Signal()
        fail_lay = data.StructLayout({"fl_v": 1, "fl": lay.fail, "er_v": 1, "er": lay.error})
        b_fail, b_fail_v = Signal(fail_lay), Signal()
        b_psn, b_psn_v = Signal(lay.psn), Signal()        # MR-TXS-481
        wr_busy, wr_blocked = Signal(), Signal()          # MR-TXS-217: in flight, refused
        lost_busy = Signal()        # a lost report is never refused (MR-TXS-257): no blocked bit

        # -- the operation's argument through the pipeline (what S2 cannot read from a held
        # boundary register: the work request and the lost report stay in theirs until applied)
        # (MR-TXS-275: a tail probe's PSN; the kind 4 bits, nine kinds)
        # MR-TXS-340: with pacing, a turn's or a write's time, a write's set_time and paced bit
        pace_arg = ({"time": P.TIME_BITS, "set_time": 1, "paced": 1} if self.pacing else {})
        arg_lay = data.StructLayout({"kind": 4, "cq": 1, "path": 8, "slot": 3, "chunk": 20,
                                     "lap": records.LAP_BITS, "cwnd": records.BYTES_BITS,
                                     "verdict": 2,
                                     "fail": fail_lay, "psn": 24, **pace_arg,
                                     # MR-TXS-482: the window write's kind carrying a PSN
                                     "pw": 1,
                                     "late": 1,                 # MR-TXS-445: s_acked's flag
                                     "hush": 1})                # MR-TXS-497
        if self.pacing:
            # MR-TXS-340: the turn's and the write's boundary registers (the write's `paced`,
            # MR-TXS-177's compare, made as it is taken)
            b_turn, b_turn_v = Signal(self.pace_lay["turn"]), Signal()
            rt_lay = data.StructLayout({"conn": cb, "paced": 1, "set_time": 1,
                                        "time": P.TIME_BITS})
            b_rt, b_rt_v = Signal(rt_lay), Signal()
            # MR-TXS-338/339: the ask queue (m_pace its head) and the late queue
            ask_lay, late_lay = ask_layout(C), late_layout(C)
            m.submodules.ask_q = ask_q = ConnFifo(C, ask_lay.size)
            m.submodules.late_q = late_q = ConnFifo(C, late_lay.size)
            now_r = Signal(P.TIME_BITS)
            m.d.sync += now_r.eq(self.now)

        # -- the work request's status (MR-TXS-011)
        def wr_status(w, rsp=None):
            big = w.length > (1 << (mtu_log2 + records.CHUNK_BITS))       # > 2^20 chunks
            is_atom = (w.op == OP_CMP_SWAP) | (w.op == OP_FETCH_ADD)
            qp = (w.op == OP_READ_RESP) | ((w.stream >> sb) != 0 if S > 1 else w.stream != 0)
            st = Mux(qp, STATUS_LOC_QP_OP_ERR,
                     Mux(is_atom, Mux(w.length != ATOMIC_LEN, STATUS_LOC_LEN_ERR, 0),
                         Mux(big, STATUS_LOC_LEN_ERR, 0)))
            return st if rsp is None else Mux(rsp, 0, st)
        # MR-TXS-450: the status formed as the boundary register is loaded (a READ response's
        # 0), kept beside it; the chunk count (MR-TXS-010) registered from it every cycle (the
        # op's S2 is at least two cycles after the load, and the register is held until then)
        w_status = Signal(5)
        wr_ml = _msg_len(b_wr)
        wr_n_ = Mux(wr_ml == 0, 1, ((wr_ml - 1) >> mtu_log2) + 1)
        w_n = Signal(len(wr_n_), name="w_nchunks")
        m.d.sync += w_n.eq(wr_n_)

        # -- the output queues (MR-TXS-031/216)
        # MR-TXS-457: the frame and sent queues with S2's writes registered
        m.submodules.frame_q = frame_q = TailSyncFifo(width=lay.frame.size, depth=OUT_DEPTH)
        m.submodules.sent_q = sent_q = TailSyncFifo(width=lay.sent.size, depth=OUT_DEPTH)
        m.submodules.cqe_q = cqe_q = fifo.SyncFIFO(width=lay.cqe.size + 1, depth=OUT_DEPTH)
        m.d.comb += [self.m_frame.valid.eq(frame_q.r_rdy), frame_q.r_en.eq(self.m_frame.ready),
                     self.m_frame.payload.eq(frame_q.r_data),
                     self.m_sent.valid.eq(sent_q.r_rdy), sent_q.r_en.eq(self.m_sent.ready),
                     self.m_sent.payload.eq(sent_q.r_data)]
        cqe_ports(m, self, cqe_q, lay)

        # -- the queues of connections (MR-TXS-212/215)
        # MR-TXS-456: each with S2's push registered in a tail register
        m.submodules.active = active = ConnFifo(C, tail=True)
        m.submodules.done_q = done_q = ConnFifo(C, tail=True)

        # -- the descriptor memory (MR-TXS-205, MR-TXS-252): a connection's S x D records in
        # one word, read at S1's connection (so its read at the edge into S2 misses only the
        # write of the op just ahead: MR-TXS-472, never a record S2 uses), written one record
        # at a time
        m.submodules.desc = desc_mem = memory.Memory(shape=SD * desc_w, depth=C, init=[],
                                                     attrs={"metaroce_collision": "x"})
        d_rd = desc_mem.read_port()
        d_wr = desc_mem.write_port(granularity=desc_w)

        # S2's results (driven by _s2 inside the pipeline's module, elaborated after this one)
        s2 = {"refused": Signal(), "push_active": Signal(), "push_done": Signal(),
              "msg_next": Signal(32),
              "pkt": Signal(), "probe": Signal(), "restore": Signal(), "kept": Signal(), "frame": Signal(lay.frame), "sent": Signal(lay.sent),
              "cqe": Signal(lay.cqe), "cqe_rsp": Signal(), "cqe_v": Signal(),
              "desc": Signal(rl.desc), "desc_we": Signal(), "desc_slot": Signal(3),
              "psn_ign": Signal()}

        if self.pacing:
            s2.update({"ask": Signal(), "ask_wl": Signal(ask_layout(C)["wl"].shape),
                       "push_late": Signal(), "late_seen": Signal(P.TIME_BITS),
                       "rt_hold": Signal(name="pace_rt_hold")})

        def apply(mm, row_in, arg_bits):
            new = self._s2(mm, s2, row_in, arg_bits, arg_lay, b_wr, w_status, w_n, b_lost, d_rd,
                           pipe)
            return new

        m.submodules.pipe = pipe = RowPipe(C, rl.row.size, arg_lay.size, apply,
                                           init=self._reset_rows() if self.init_rows else (),
                                           forward=self.forward, take_eq_in=True,
                                           pre=lambda mm, row, arg: self._sched_terms(
                                               mm, row, data.View(arg_lay, arg)),
                                           pre_width=self._sched_layout().size)
        s1a = data.View(arg_lay, pipe.s1_arg)
        s2a = data.View(arg_lay, pipe.s2_arg)
        if self.pacing:
            # MR-TXS-372: a write with a time of S2's connection in s_retime's register (the
            # arbiter's pick included) or in S1: S2's schedule op is held
            m.d.comb += s2["rt_hold"].eq(
                (b_rt_v & b_rt.set_time & (b_rt.conn == pipe.s2_conn))
                | (pipe.s1_valid & (s1a.kind == K_RETIME) & s1a.set_time
                   & (pipe.s1_conn == pipe.s2_conn)))
        m.d.comb += d_rd.addr.eq(pipe.s1_conn)

        # -- the arbiter (MR-TXS-210/216), on registers
        n_sched = (pipe.s1_valid & (s1a.kind == K_SCHED)) + (pipe.s2_valid & (s2a.kind == K_SCHED))
        # MR-TXS-272: the frames in flight: schedule ops and tail probes (no sent event)
        n_probe = (pipe.s1_valid & (s1a.kind == K_PROBE)) + (pipe.s2_valid & (s2a.kind == K_PROBE))
        n_frame = n_sched + n_probe
        n_cq = (pipe.s1_valid & s1a.cq) + (pipe.s2_valid & s2a.cq)
        cq_room = cqe_q.level + n_cq < OUT_DEPTH
        frame_room = frame_q.level + n_frame < OUT_DEPTH
        out_room = frame_room & (sent_q.level + n_sched < OUT_DEPTH)
        # MR-TXS-284..287: the restore queue; an acknowledged report taken with room in it for
        # the reports in flight, and not in the cycle after s_probe was refused
        ack_ok = Const(1, 1)
        if self.restores:
            m.submodules.rst_q = rst_q = fifo.SyncFIFO(width=rows_restore_layout(C, self.paths).size,
                                                       depth=OUT_DEPTH)
            n_ack = (pipe.s1_valid & (s1a.kind == K_ACKED)) + (pipe.s2_valid & (s2a.kind == K_ACKED))
            pwait = Signal()
            m.d.sync += pwait.eq(self.s_probe.valid & ~self.s_probe.ready)
            ack_ok = (rst_q.level + n_ack < OUT_DEPTH) & ~pwait
        # MR-TXS-470: the active queue's head waits while S1 holds an op of its connection
        # (so no op of it is between S1 and S2 when its schedule op's decision is formed in S1)
        sched_wait = Const(0, 1)
        if self.sched_hold:
            sched_wait = pipe.s1_valid & (pipe.s1_conn == active.head)
        # s_probe's one register holds a verdict (to) or a tail probe (MR-TXS-272)
        # MR-TXS-482: an initial PSN takes the window write's place, before it
        can = [b_ver_v & b_ver.to, b_cwnd_v | b_psn_v, b_fail_v, b_ack_v & ack_ok,
               b_lost_v & ~lost_busy,
               done_q.nonempty & cq_room,
               b_wr_v & ~wr_busy & ~wr_blocked & ((w_status == 0) | cq_room),
               b_ver_v & ~b_ver.to & frame_room,
               active.nonempty & out_room & ~sched_wait]
        if not self.pacing:
            take_any, take_kind = _first_bit(can)
        else:
            # MR-TXS-340: a turn and a write first, the late queue's wake after the completion
            # (its head's seen not after last cycle's now); the kinds' codes mapped from the
            # priority order
            late_head = data.View(late_lay, late_q.head)
            wake_ok = late_q.nonempty & ~_time_lt(now_r, late_head.seen)
            order = [K_TURN, K_RETIME] + list(range(K_WR)) + [K_WAKE, K_WR, K_PROBE, K_SCHED]
            conds = [b_turn_v, b_rt_v] + can[:K_WR] + [wake_ok] + can[K_WR:]
            take_any, idx = _first_bit(conds)
            take_kind = Signal(4)
            for i, k in enumerate(order):
                with m.If(idx == i):
                    m.d.comb += take_kind.eq(k)
        taken = [Signal(name=f"take_{k}") for k in OP_KINDS + (PACE_KINDS if self.pacing else ())]
        for k, t in enumerate(taken):
            m.d.comb += t.eq(take_any & (take_kind == k))
        fail_conn = Mux(b_fail.fl_v, b_fail.fl.conn, b_fail.er.conn)
        take_conn = Signal(cb)

        def by_take(f):
            # the take's connection's select, over f of each source's connection
            v = Mux(
                taken[K_VERDICT] | taken[K_PROBE], f(b_ver.conn), Mux(taken[K_CWND], Mux(b_psn_v, f(b_psn.conn), f(b_cwnd.conn)), Mux(
                    taken[K_FAIL], f(fail_conn), Mux(taken[K_ACKED], f(b_ack.conn), Mux(
                        taken[K_LOST], f(b_lost.conn), Mux(taken[K_COMPLETE], f(done_q.head), Mux(
                            taken[K_WR], f(b_wr.conn), f(active.head))))))))
            if self.pacing:
                v = Mux(taken[K_TURN], f(b_turn.conn), Mux(taken[K_RETIME], f(b_rt.conn),
                                                        Mux(taken[K_WAKE], f(late_head.conn), v)))
            return v
        m.d.comb += take_conn.eq(by_take(lambda c: c))
        # MR-TXS-458: the forward's equality with S2's connection per source, selected as the
        # connection is (not compared after the select)
        m.d.comb += pipe.take_eq_s2.eq(by_take(lambda c: c == pipe.s2_conn))
        ta = Signal(arg_lay)
        # MR-TXS-497: a lost report taken while an acknowledged one waits (MR-TXS-285/287's
        # hold) may overtake it and HUSH - 1 behind it in the unit's queue: so many acknowledged
        # reports taken next zero no quiet count
        hush = Signal(range(HUSH + 1), name="hush")
        with m.If(taken[K_LOST] & b_ack_v):
            m.d.sync += hush.eq(HUSH)
        with m.Elif(taken[K_ACKED] & (hush != 0)):
            m.d.sync += hush.eq(hush - 1)
        rep = data.View(lay.report, Mux(taken[K_ACKED], b_ack.as_value()[:lay.report.size],
                                        b_lost.as_value()))
        m.d.comb += [ta.kind.eq(take_kind),
                     ta.cq.eq(taken[K_COMPLETE] | (taken[K_WR] & (w_status != 0))),
                     ta.path.eq(Mux(taken[K_VERDICT] | taken[K_PROBE], b_ver.path,
                                    Mux(taken[K_CWND], Mux(b_psn_v, b_psn.path, b_cwnd.path),
                                        rep.path))),
                     ta.slot.eq(rep.slot), ta.chunk.eq(rep.chunk), ta.lap.eq(rep.lap),
                     ta.late.eq(taken[K_ACKED] & b_ack.late),
                     ta.hush.eq(taken[K_ACKED] & (hush != 0)),
                     ta.cwnd.eq(Mux(b_psn_v, b_psn.psn, b_cwnd.cwnd)), ta.pw.eq(b_psn_v),
                     ta.verdict.eq(b_ver.verdict), ta.fail.eq(b_fail),
                     ta.psn.eq(b_ver.psn)]
        if self.pacing:
            m.d.comb += [ta.time.eq(Mux(taken[K_TURN], b_turn.pace_until, b_rt.time)),
                         ta.set_time.eq(b_rt.set_time), ta.paced.eq(b_rt.paced),
                         late_q.pop.eq(taken[K_WAKE])]
        m.d.comb += [pipe.take_valid.eq(take_any), pipe.take_conn.eq(take_conn),
                     pipe.take_arg.eq(ta), active.pop.eq(taken[K_SCHED]),
                     done_q.pop.eq(taken[K_COMPLETE])]

        # -- S2's results: the queues' pushes, the outputs, the held registers (MR-TXS-217)
        s2_ok = pipe.s2_valid
        refused = s2["refused"]
        m.d.comb += [active.push.eq(s2_ok & s2["push_active"]), active.push_conn.eq(pipe.s2_conn),
                     done_q.push.eq(s2_ok & s2["push_done"]), done_q.push_conn.eq(pipe.s2_conn),
                     frame_q.w_en.eq(s2_ok & (s2["pkt"] | s2["probe"])),
                     frame_q.w_data.eq(s2["frame"]),
                     sent_q.w_en.eq(s2_ok & s2["pkt"]), sent_q.w_data.eq(s2["sent"]),
                     cqe_q.w_en.eq(s2_ok & s2["cqe_v"]),
                     cqe_q.w_data.eq(Cat(s2["cqe"], s2["cqe_rsp"]))]
        if self.pacing:
            # MR-TXS-338/339: the charge into the ask queue (m_pace its head, force 1), a
            # connection left late into the late queue, at S2's edge
            ask_d, late_d = Signal(ask_lay), Signal(late_lay)
            m.d.comb += [ask_d.conn.eq(pipe.s2_conn), ask_d.now.eq(self.now),
                         ask_d.wl.eq(s2["ask_wl"]),
                         ask_q.push.eq(s2_ok & s2["ask"]), ask_q.push_conn.eq(ask_d),
                         late_d.conn.eq(pipe.s2_conn), late_d.seen.eq(s2["late_seen"]),
                         late_q.push.eq(s2_ok & s2["push_late"]), late_q.push_conn.eq(late_d)]
            ah = data.View(ask_lay, ask_q.head)
            mp = self.m_pace
            m.d.comb += [mp.valid.eq(ask_q.nonempty), mp.payload.conn.eq(ah.conn),
                         mp.payload.now.eq(ah.now), mp.payload.wl.eq(ah.wl),
                         mp.payload.force.eq(1), ask_q.pop.eq(mp.valid & mp.ready)]
            # MR-TXS-340: the registers' intake (free or taken in the cycle)
            m.d.comb += [self.s_turn.ready.eq(~b_turn_v | taken[K_TURN]),
                         self.s_retime.ready.eq(~b_rt_v | taken[K_RETIME])]
            with m.If(self.s_turn.valid & self.s_turn.ready):
                m.d.sync += [b_turn_v.eq(1), b_turn.eq(self.s_turn.payload)]
            with m.Elif(taken[K_TURN]):
                m.d.sync += b_turn_v.eq(0)
            rt = self.s_retime.payload
            with m.If(self.s_retime.valid & self.s_retime.ready):
                # MR-TXS-177: its clamped rate below the line rate (0 is the line rate)
                m.d.sync += [b_rt_v.eq(1), b_rt.conn.eq(rt.conn), b_rt.set_time.eq(rt.set_time),
                             b_rt.time.eq(rt.time),
                             b_rt.paced.eq((rt.rate != 0) & (self.line_mbps > rt.rate))]
            with m.Elif(taken[K_RETIME]):
                m.d.sync += b_rt_v.eq(0)
        # the descriptor's write (no forward register: MR-TXS-472)
        m.d.comb += [d_wr.addr.eq(pipe.s2_conn), d_wr.data.eq(Cat(*([s2["desc"]] * SD))),
                     d_wr.en.eq(Mux(s2_ok & s2["desc_we"], 1 << s2["desc_slot"], 0))]

        s2_kind = s2a.kind
        applied = s2_ok & ~refused
        # MR-TXS-286: s_probe holds while a restore is queued or an acknowledged report is in
        # the pipeline or taken (a verdict never passes a restore made before it)
        p_hold = Const(1, 1)
        if self.restores:
            p_hold = ~rst_q.r_rdy & (n_ack == 0) & ~taken[K_ACKED]
            rdat = Signal(rows_restore_layout(C, self.paths))
            # MR-TXS-316: a verdict taken as a reroute pushes {conn, path, kept 1}
            kept = s2["kept"] if self.kept_out else Const(0, 1)
            m.d.comb += [rdat.conn.eq(pipe.s2_conn), rdat.path.eq(s2a.path), rdat.kept.eq(kept),
                         rst_q.w_en.eq(s2_ok & (s2["restore"] | kept)), rst_q.w_data.eq(rdat),
                         self.m_restore.valid.eq(rst_q.r_rdy),
                         self.m_restore.payload.eq(rst_q.r_data),
                         rst_q.r_en.eq(self.m_restore.ready)]
        # -- MR-TXS-325..327: m_rd, the good READ or atomic on s_wr with the message number it
        # takes, read a cycle ahead from a memory of each (connection, stream)'s msg_next (the
        # row's, written with it by an applied work request); it waits at the port
        rsp_v = self.s_rsp.valid
        rd_ok = Const(1, 1)
        if self.rd_rows:
            sbits = (S - 1).bit_length()
            wp = self.s_wr.payload
            m.submodules.rd_msg = rd_mem = memory.Memory(shape=32, depth=C * S, init=[])
            rd_w = rd_mem.write_port()
            rd_r = rd_mem.read_port(transparent_for=(rd_w,))
            rd_at = Cat(wp.stream[:sbits], wp.conn)
            rd_last = Signal.like(rd_at)
            rd_fresh = Signal()
            m.d.sync += rd_last.eq(rd_at)
            m.d.comb += [rd_r.addr.eq(rd_at), rd_fresh.eq(rd_last == rd_at),
                         rd_w.addr.eq(Cat(b_wr.stream[:sbits], pipe.s2_conn)),
                         rd_w.data.eq(s2["msg_next"]),
                         rd_w.en.eq(s2_ok & (s2_kind == K_WR) & ~refused & (w_status == 0)
                                    & ~b_wr.rsp)]
            p_wr = Signal(wrb_lay)
            m.d.comb += [getattr(p_wr, k).eq(getattr(wp, k)) for k, _ in lay.wr]
            p_rd = Signal()
            m.d.comb += p_rd.eq(((wp.op == OP_READ) | (wp.op == OP_CMP_SWAP)
                                 | (wp.op == OP_FETCH_ADD)) & (wr_status(p_wr, p_wr.rsp) == 0))
            rd = self.m_rd
            m.d.comb += [rd.valid.eq(self.s_wr.valid & ~b_wr_v & ~rsp_v & p_rd & rd_fresh),
                         rd.payload.conn.eq(wp.conn), rd.payload.stream.eq(wp.stream),
                         rd.payload.msg.eq(rd_r.data), rd.payload.laddr.eq(wp.laddr),
                         rd.payload.length.eq(wp.length), rd.payload.wr_id.eq(wp.wr_id)]
            rd_ok = ~p_rd | (rd_fresh & rd.ready)
        # -- the boundary registers' next values (the ports' intake after the edge's frees)
        def free(k, v):
            return ~v | taken[k]
        m.d.comb += [self.s_wr.ready.eq(~b_wr_v & ~rsp_v & rd_ok), self.s_rsp.ready.eq(~b_wr_v),
                     self.s_acked.ready.eq(free(K_ACKED, b_ack_v)),
                     self.s_resend.ready.eq(~b_lost_v),
                     self.s_fail.ready.eq(free(K_FAIL, b_fail_v)),
                     self.s_error.ready.eq(free(K_FAIL, b_fail_v)),
                     # MR-TXS-481/482: the window write's register waits behind a PSN's
                     self.s_cwnd.ready.eq(~b_cwnd_v | (taken[K_CWND] & ~b_psn_v)),
                     self.s_psn.ready.eq(free(K_CWND, b_psn_v)),
                     self.s_probe.ready.eq((free(K_VERDICT, b_ver_v) | taken[K_PROBE]) & p_hold)]
        # the work request: applied (or refused) in S2; taken; loaded
        with m.If(s2_ok & (s2_kind == K_WR)):
            m.d.sync += wr_busy.eq(0)
            with m.If(refused):
                m.d.sync += wr_blocked.eq(1)
            with m.Else():
                m.d.sync += b_wr_v.eq(0)
        with m.Elif(applied & (s2_kind == K_COMPLETE) & b_wr_v & (b_wr.conn == pipe.s2_conn)):
            m.d.sync += wr_blocked.eq(0)
        with m.If(taken[K_WR]):
            m.d.sync += wr_busy.eq(1)
        r = self.s_rsp.payload
        with m.If(~b_wr_v & rsp_v):
            m.d.sync += [b_wr_v.eq(1), wr_blocked.eq(0), b_wr.op.eq(OP_READ_RESP),
                         b_wr.conn.eq(r.conn), b_wr.stream.eq(S - 1), b_wr.wr_id.eq(r.stream),
                         b_wr.laddr.eq(r.laddr), b_wr.va.eq(0), b_wr.rkey.eq(0),
                         b_wr.length.eq(Mux(r.err, 0, r.length)), b_wr.imm.eq(0),
                         b_wr.swap.eq(0), b_wr.compare.eq(0), b_wr.rsp.eq(1), b_wr.msg.eq(r.msg),
                         b_wr.err.eq(r.err), w_status.eq(0)]
        with m.Elif(self.s_wr.ready & self.s_wr.valid):
            w = self.s_wr.payload
            m.d.sync += [b_wr_v.eq(1), wr_blocked.eq(0), b_wr.rsp.eq(0), b_wr.msg.eq(0),
                         b_wr.err.eq(0), w_status.eq(wr_status(w))]
            # MR-TXS-513: the fields a frame of its op does not carry loaded as 0 (so the
            # descriptor holds them 0 and the frame takes its fields unmasked)
            send = (w.op == OP_SEND) | (w.op == OP_SEND_IMM)
            keep = {"va": ~send, "rkey": ~send,
                    "imm": (w.op == OP_WRITE_IMM) | (w.op == OP_SEND_IMM),
                    "swap": (w.op == OP_CMP_SWAP) | (w.op == OP_FETCH_ADD),
                    "compare": w.op == OP_CMP_SWAP}
            m.d.sync += [getattr(b_wr, k).eq(Mux(keep[k], getattr(w, k), 0) if k in keep
                                             else getattr(w, k)) for k, _ in lay.wr]
        # the lost report
        with m.If(s2_ok & (s2_kind == K_LOST)):
            m.d.sync += [lost_busy.eq(0), b_lost_v.eq(0)]
        with m.If(taken[K_LOST]):
            m.d.sync += lost_busy.eq(1)
        with m.If(~b_lost_v & self.s_resend.valid):
            m.d.sync += [b_lost_v.eq(1), b_lost.eq(self.s_resend.payload)]
        # the registers freed when taken
        for k, reg, v, port in ((K_ACKED, b_ack, b_ack_v, self.s_acked),
                                (K_CWND, b_cwnd, b_cwnd_v, self.s_cwnd),
                                (K_VERDICT, b_ver, b_ver_v, self.s_probe),
                                (K_CWND, b_psn, b_psn_v, self.s_psn)):
            with m.If(port.ready & port.valid):
                m.d.sync += [v.eq(1), reg.eq(port.payload)]
            with m.Elif(taken[k] & (~b_psn_v if reg is b_cwnd else 1)
                        | (taken[K_PROBE] if k == K_VERDICT else 0)):
                m.d.sync += v.eq(0)
        # MR-TXS-484: an initial PSN ignored (its row had started), said the cycle after S2
        psn_ign = Signal(name="psn_ign")
        m.d.sync += psn_ign.eq(s2_ok & s2["psn_ign"])
        m.d.comb += self.psn_ignored.eq(psn_ign)
        with m.If(self.s_fail.ready & (self.s_fail.valid | self.s_error.valid)):
            m.d.sync += [b_fail_v.eq(1), b_fail.fl_v.eq(self.s_fail.valid),
                         b_fail.fl.eq(self.s_fail.payload), b_fail.er_v.eq(self.s_error.valid),
                         b_fail.er.eq(self.s_error.payload)]
        with m.Elif(taken[K_FAIL]):
            m.d.sync += b_fail_v.eq(0)
        return m

    # ------------------------------------------------------------------ S2 (MR-TXS-207/208/253)
    def _s2(self, m, out, row_in, arg_bits, arg_lay, b_wr, w_status, w_n, b_lost, d_rd, pipe):
        """One operation on the row ``row_in`` (the semantics of TxSchedModel's events on one
        connection, MR-TXS-207; the row model's ``_apply``). Returns the row written back; its
        other results in ``out``."""
        prm, lay, rl = self.prm, self.lay, self.rl
        S, Pn, D = self.streams, self.paths, self.depth
        R, W, mtu = prm["resend_depth"], prm["chunk_window"], prm["mtu"]
        mtu_log2 = mtu.bit_length() - 1
        db, pb = (D - 1).bit_length(), (Pn - 1).bit_length()
        sb = (S - 1).bit_length()
        rb = (R - 1).bit_length()
        wb_ = (W - 1).bit_length()
        SD = S * D
        cwnd_max = (1 << records.BYTES_BITS) - 1 - mtu
        r = data.View(rl.row, row_in)
        a = data.View(arg_lay, arg_bits)
        conn = pipe.s2_conn
        kind = a.kind
        is_k = [Signal(name=f"s2_is_{k}")
                for k in OP_KINDS + (PACE_KINDS if self.pacing else ())]
        for k, s_ in enumerate(is_k):
            m.d.comb += s_.eq(kind == k)

        F = self._row_fns(m, r)
        count, live_k, msg_len, chunk_place = F.count, F.live_k, F.msg_len, F.chunk_place
        entry_at, path_at = F.entry_at, F.path_at

        def completes(rv, s):
            st = rv.streams[s]
            e = rv.entries.as_value().word_select(Cat(st.done[:db], Const(s, sb) if sb else Cat()),
                                                  rl.entry.size)
            e = data.View(rl.entry, e)
            # MR-TXS-492: with success too only once none of its packets is in flight
            return (count(st) != 0) & (e.out == 0) & ((e.status != 0)
                                                      | (e.ack_base >= e.nchunks))

        def desc_at(slot):
            """MR-TXS-205: the slot's record, the memory's (MR-TXS-472: the write of the op
            just ahead, which the read misses, is never of a record S2 uses)."""
            return data.View(rl.desc, d_rd.data.word_select(slot[:db + sb], rl.desc.size))
        mid = Signal(rl.row)
        m.d.comb += mid.eq(r)
        frame, sent = Signal(lay.frame), Signal(lay.sent)
        cqe, cqe_rsp, cqe_v = Signal(lay.cqe), Signal(), Signal()
        pkt, refused, popped = Signal(), Signal(), Signal()
        act = Signal()                      # a schedule op that acts (packet or drop)
        desc_rec, desc_we, desc_slot = Signal(rl.desc), Signal(), Signal(3)

        # ---- a work request (MR-TXS-010/011, MR-TXS-209)
        w = b_wr
        ws = Signal(sb)
        m.d.comb += ws.eq(Mux(w.rsp, S - 1, w.stream[:sb]))
        st_w = data.View(rl.stream, r.streams.as_value().word_select(ws, rl.stream.size)
                         if S > 1 else r.streams[0].as_value())
        w_idx = st_w.tail[:db]
        w_slot = Cat(w_idx, ws)[:3] if sb else w_idx
        is_send = ((w.op == OP_SEND) | (w.op == OP_SEND_IMM)) & ~w.rsp
        with m.If(is_k[K_WR]):
            # MR-TXS-482 (`started`); MR-TXS-501: a refused request leaves the row as read,
            # by its branch (no mux of the whole row after the op)
            with m.If(w_status != 0):
                m.d.comb += [mid.conn.started.eq(1), cqe_v.eq(1)]
            with m.Elif(count(st_w) >= D):
                m.d.comb += refused.eq(1)                         # MR-TXS-217
            with m.Else():
                m.d.comb += mid.conn.started.eq(1)
                for s in range(S):
                    with m.If(ws == s):
                        nst = mid.streams[s]
                        m.d.comb += [nst.tail.eq(st_w.tail + 1),
                                     nst.msg_next.eq(st_w.msg_next + ~w.rsp),
                                     nst.send_seq.eq(st_w.send_seq + is_send)]
                        for i in range(D):
                            with m.If(w_idx == i):
                                ne = mid.entries[s * D + i]
                                m.d.comb += [ne.op.eq(w.op), ne.length.eq(w.length),
                                             ne.nchunks.eq(w_n), ne.next_chunk.eq(0),
                                             ne.ack_base.eq(0), ne.ack_bits.eq(0),
                                             ne.status.eq(0), ne.out.eq(0),
                                             ne.lap.eq(st_w.tail[db:]), ne.rsp.eq(w.rsp),
                                             ne.err.eq(w.err), ne.lnq.eq(0)]   # MR-TXS-257
                m.d.comb += [mid.conn.unsent.eq(r.conn.unsent + w_n), desc_we.eq(1)]
                # MR-TXS-271: a path's newest packet no longer names the slot filled (the
                # model's tail is cleared by the first op that finds its entry free)
                for p in range(Pn):
                    with m.If(r.paths[p].tail_slot == w_slot):
                        m.d.comb += mid.paths[p].tail_ok.eq(0)

        # MR-TXS-508: the descriptor's record and slot whatever the op (the write enable alone
        # says whether it is written)
        m.d.comb += [desc_slot.eq(w_slot),
                     desc_rec.laddr.eq(w.laddr), desc_rec.va.eq(w.va),
                     desc_rec.rkey.eq(w.rkey), desc_rec.imm.eq(w.imm),
                     desc_rec.swap.eq(w.swap), desc_rec.compare.eq(w.compare),
                     desc_rec.wr_id.eq(w.wr_id),
                     desc_rec.msg.eq(Mux(w.rsp, w.msg, st_w.msg_next)),
                     desc_rec.recv_seq.eq(Mux(is_send, st_w.send_seq, 0))]

        # ---- a report (MR-TXS-020/021, MR-TXS-208: the acknowledged chunk counted here)
        rp_path, rp_slot, rp_chunk = a.path, a.slot, a.chunk
        p_ok = (rp_path >> pb) == 0
        re = entry_at(rp_slot)
        s_ok = (rp_slot >> (db + sb)) == 0 if db + sb < 3 else Const(1, 1)
        r_live = live_k.bit_select(rp_slot[:db + sb], 1) & s_ok
        r_hit = Signal()
        r_rel = Signal()
        # MR-TXS-491: a late report of the slot's present message (its lap the entry's,
        # MR-TXS-490) acknowledges its chunk (r_hit) and releases no flight (r_rel)
        rps = path_at(rp_path)
        # MR-TXS-499: not a late one while its path's quiet count is at the cap (MR-TXS-495)
        QCAP = self.rl.late_cap
        m.d.comb += [r_hit.eq(p_ok & r_live & (re.lap == a.lap) & (rp_chunk < re.next_chunk)
                              & ~(a.late & (rps.quiet == QCAP))),
                     r_rel.eq(r_hit & ~a.late)]
        # MR-TXS-284: an acknowledged report of a path of the instance not active restores it
        restore = Signal()
        m.d.comb += restore.eq(is_k[K_ACKED] & p_ok & (rps.state != PATH_ACTIVE))
        kept = Signal()             # MR-TXS-316: the verdict taken as a reroute
        # MR-TXS-453: the flight less the chunk's bytes (MR-TXS-437), for an MTU and the last
        # bytes in parallel with the chunk's place, selected by it
        r_before, r_at, r_last = chunk_place(re, rp_chunk)

        def less_nb(x):
            return Mux(r_before, _sub0(x, mtu), Mux(r_at, _sub0(x, r_last), x))
        is_rep = is_k[K_ACKED] | is_k[K_LOST]
        # a lost report's chunk queued in the resend FIFO (MR-TXS-021/257; 0 unless so)
        lost_queued = Signal(name="lost_queued")
        # the acknowledged chunk's bit and whether it is new (protocol.chunk_ack)
        d = (rp_chunk - re.ack_base)[:wb_ + 1]
        new_ack_t = is_k[K_ACKED] & (rp_chunk >= re.ack_base) & (rp_chunk - re.ack_base < W) \
            & ~re.ack_bits.bit_select(d[:wb_], 1)
        bits = Signal(W)
        m.d.comb += bits.eq(re.ack_bits | (Const(1, W) << d[:wb_]))
        # MR-TXS-504: this op's new acknowledgement of (slot, chunk), for the op behind it
        sp = data.View(self._sched_layout(), pipe.s2_pre)
        ah_ack, ah_slot, ah_chunk = Signal(), Signal(3), Signal(len(rp_chunk))
        m.d.sync += [ah_ack.eq(r_hit & new_ack_t), ah_slot.eq(rp_slot), ah_chunk.eq(rp_chunk)]
        # (S2's row the write of that op, and this op's slot and chunk its); kept as
        # ``rep_ahead_ack`` for the tests, which show their runs make it
        ah_hit = Signal(name="rep_ahead_ack")
        m.d.comb += ah_hit.eq(pipe.s2_fwd & ah_ack & (ah_slot == rp_slot) & (ah_chunk == rp_chunk))
        self.rep_ahead_ack = ah_hit
        # MR-TXS-257: a lost report is never refused (its chunk kept when the FIFO is full)
        with m.If(is_rep):
            for p in range(Pn):
                with m.If(rp_path == p):
                    np_ = mid.paths[p]
                    with m.If(is_k[K_ACKED]):
                        m.d.comb += [np_.state.eq(PATH_ACTIVE), np_.col.eq(0)]   # MR-TXS-116
                    with m.If(r_rel):
                        m.d.comb += [np_.inflight.eq(less_nb(rps.inflight)),
                                     np_.pkts.eq(_sub0(rps.pkts, 1))]
                        with m.If(is_k[K_ACKED] & ~a.hush):
                            m.d.comb += np_.quiet.eq(0)                     # MR-TXS-499
            with m.If(r_hit):
                with m.If(~a.late):
                    m.d.comb += mid.conn.inflight.eq(less_nb(r.conn.inflight))
                # protocol.chunk_ack: the chunk's bit, then the base over the trailing ones
                new_ack = new_ack_t
                z_any, z_idx = _lowest_zero(bits)
                ones = Signal(range(W + 1))
                m.d.comb += ones.eq(Mux(z_any, z_idx, W))
                # MR-TXS-501: the base over the ones as a short add of its low bits, its high
                # part or their successor (formed beside the ones' search) chosen by the carry
                lb_ = len(ones)
                ab_w = len(re.ack_base)
                lo_sum = Signal(lb_ + 1, name="ack_lo_sum")
                hi1 = Signal(ab_w - lb_, name="ack_hi1")
                base_new = Signal(ab_w, name="ack_base_new")
                m.d.comb += [lo_sum.eq(re.ack_base[:lb_] + ones),
                             hi1.eq(re.ack_base[lb_:] + 1),
                             base_new.eq(Cat(lo_sum[:lb_], Mux(lo_sum[lb_], hi1,
                                                               re.ack_base[lb_:])))]
                # MR-TXS-503/504: the chunk's acknowledgement formed in S1 (on S1's row) and,
                # when S2's row is the op just ahead's write, that op's new acknowledgement of
                # this chunk (the only change of the test an op makes on a row where the
                # report hits), registered at its S2: no entry select and subtraction here
                rep_acked = sp.rep_acked | ah_hit
                lost_q = is_k[K_LOST] & ~rep_acked & (re.status == 0)
                r_full = r.conn.rcount >= R
                r_bit = Signal(W)
                m.d.comb += r_bit.eq(Const(1, W) << (rp_chunk[:wb_] if wb_ else 0))
                for k in range(SD):
                    with m.If(rp_slot == k):
                        ne = mid.entries[k]
                        with m.If(~a.late):
                            m.d.comb += ne.out.eq(_sub0(re.out, 1))
                        with m.If(new_ack):
                            m.d.comb += [ne.ack_base.eq(base_new),
                                         ne.ack_bits.eq(bits >> ones)]
                m.d.comb += lost_queued.eq(lost_q & ~r_full)

        # ---- a completion (MR-TXS-022/027)
        c_ok = [Signal(name=f"c_ok{s}") for s in range(S)]
        for s in range(S):
            m.d.comb += c_ok[s].eq(completes(r, s))
        c_any, c_s = _first_bit(c_ok)
        c_st = data.View(rl.stream, r.streams.as_value().word_select(c_s, rl.stream.size)
                         if S > 1 else r.streams[0].as_value())
        c_slot = Cat(c_st.done[:db], c_s)[:3] if sb else c_st.done[:db]
        ce = entry_at(c_slot)
        cd = desc_at(c_slot)
        # MR-TXS-451: `unsent` less each stream's head's unsent chunks (MR-TXS-027), formed per
        # stream from the row and selected by the completed stream, not after its choice
        cpl_u = []
        for s in range(S):
            st = r.streams[s]
            e = entry_at(Cat(st.done[:db], Const(s, sb)) if sb else st.done[:db])
            u = Signal.like(r.conn.unsent, name=f"cpl_unsent{s}")
            m.d.comb += u.eq(r.conn.unsent - (e.nchunks - e.next_chunk))
            # MR-TXS-501: whether it is not 0 as one add and a compare (next_chunk is at most
            # nchunks), not the two subtractions' carries then a test
            u_nz = Signal(name=f"cpl_unsent_nz{s}")
            m.d.comb += u_nz.eq((r.conn.unsent + e.next_chunk)[:len(u)] != e.nchunks)
            cpl_u.append((u, u_nz))
        with m.If(is_k[K_COMPLETE] & c_any):
            # MR-TXS-499: every path of the connection counts the completion (saturating)
            for p in range(Pn):
                q_ = r.paths[p].quiet
                m.d.comb += mid.paths[p].quiet.eq(Mux(q_ == QCAP, q_, q_ + 1))
            for s in range(S):
                with m.If(c_s == s):
                    nst = mid.streams[s]
                    m.d.comb += nst.done.eq(c_st.done + 1)
                    with m.If(c_st.send == c_st.done):
                        m.d.comb += nst.send.eq(c_st.send + 1)
            for s in range(S):
                st = r.streams[s]
                with m.If((c_s == s) & (st.send == st.done)):
                    m.d.comb += mid.conn.unsent.eq(cpl_u[s][0])
            # MR-TXS-460: the FIFO's entries of the completed message stale (its queued
            # resends are never sent, whatever takes the slot next); the live entries only, as
            # the model stores them
            # (MR-TXS-501: each entry's slot against each stream's head, selected by the
            # stream completed, not compared after the choice of its slot)
            c_first = [c_ok[s_] & ~Cat(*c_ok[:s_], Const(0, 1)).any() for s_ in range(S)]
            for k in range(R):
                at_head = Cat(*(c_first[s_] & (r.retx[k].slot == (
                    Cat(r.streams[s_].done[:db], Const(s_, sb))[:3] if sb
                    else r.streams[s_].done[:db])) for s_ in range(S))).any()
                with m.If((((k - r.conn.rhead)[:rb] if rb else 0) < r.conn.rcount) & at_head):
                    m.d.comb += mid.retx[k].stale.eq(1)
            m.d.comb += cqe_v.eq(1)
        # MR-TXS-509: the completion record whatever the op, a work request's (its status) or
        # the completion's by the kind (cqe_v alone says whether it is pushed)
        is_wr = is_k[K_WR]
        m.d.comb += [cqe_rsp.eq(~is_wr & ce.rsp), cqe.conn.eq(conn),
                     cqe.stream.eq(Mux(is_wr, w.stream, Mux(ce.rsp, cd.wr_id, c_s))),
                     cqe.wr_id.eq(Mux(is_wr, w.wr_id, cd.wr_id)),
                     cqe.status.eq(Mux(is_wr, w_status, ce.status)),
                     cqe.op.eq(Mux(is_wr, w.op, ce.op)),
                     cqe.length.eq(Mux(is_wr, w.length, Mux(ce.rsp, cd.msg, ce.length)))]

        # ---- a window write (MR-TXS-028) and a verdict (MR-TXS-114/115/121)
        for p in range(Pn):
            with m.If(is_k[K_CWND] & (a.path == p)):
                with m.If(~a.pw):
                    m.d.comb += mid.paths[p].cwnd.eq(Mux(a.cwnd > cwnd_max, cwnd_max, a.cwnd))
                with m.Elif(~r.conn.started):
                    # MR-TXS-482/483: an initial PSN lands on a row that has started nothing
                    m.d.comb += mid.paths[p].next_psn.eq(a.cwnd)
            with m.If(is_k[K_VERDICT] & (a.path == p)):
                ps, np_ = r.paths[p], mid.paths[p]
                v = a.verdict
                # MR-TXS-266/290: on the connection's last active path (the row's, every op
                # before applied) a suspicion or retirement acts as a reroute
                others = Signal(name=f"others_active{p}")
                m.d.comb += others.eq(Cat(r.paths[q].state == PATH_ACTIVE
                                          for q in range(Pn) if q != p).any())
                sus = (v == P.PATH_SUSPECT) | (v == P.PATH_RETIRE)
                m.d.comb += kept.eq(sus & ~others)          # MR-TXS-316
                with m.If(sus & others):
                    m.d.comb += np_.state.eq(PATH_PROBING)
                with m.If((v == P.PATH_REROUTE) | (sus & ~others)):
                    m.d.comb += np_.col.eq(1)
                with m.If(v != P.PATH_KEEP):
                    m.d.comb += np_.gen.eq(ps.gen + 1)

        # ---- a failure (MR-TXS-027): the message's status first, then the connection's
        f = a.fail
        for k in range(SD):
            e = r.entries[k]
            # MR-TXS-412: and the entry's lap is the failure's (else its previous message's)
            fl_hit = f.fl_v & (f.fl.slot == k) & (f.fl.status != 0) & (e.lap == f.fl.lap)
            with m.If(is_k[K_FAIL] & live_k[k] & (e.status == 0)):
                with m.If(fl_hit):
                    m.d.comb += mid.entries[k].status.eq(f.fl.status)
                with m.Elif(f.er_v):
                    m.d.comb += mid.entries[k].status.eq(f.er.status)

        # ---- a schedule op (MR-TXS-023..026): the connection's action, carried out; its
        # decision's terms (_sched_terms) formed in S1 on S1's row and registered (MR-TXS-471:
        # S1's row is S2's for a schedule op, MR-TXS-470); read only when the op is one
        cr = r.conn
        resend, drop = sp.resend, sp.drop
        n_s = sp.n_s if sb else Const(0, 1)
        n_st = data.View(rl.stream, r.streams.as_value().word_select(n_s, rl.stream.size)
                         if S > 1 else r.streams[0].as_value())
        g_slot = Signal(3)
        # MR-TXS-275: a tail probe's packet is its path's newest (tail_slot, tail_chunk): the
        # schedule op's slot, entry, descriptor and frame assembly serve it
        is_probe = is_k[K_PROBE]
        tps = path_at(a.path)
        m.d.comb += g_slot.eq(Mux(is_probe, tps.tail_slot, sp.g_slot))
        ge = entry_at(g_slot)
        g_chunk = Mux(is_probe, tps.tail_chunk, sp.g_chunk)[:records.CHUNK_BITS]
        # MR-TXS-270/271: the probe's drops (MR-TXS-082): the path beyond the instance, not its
        # newest PSN, nothing in flight, no newest packet of a live message, the message failed
        t_live = live_k.bit_select(tps.tail_slot[:db + sb], 1) & (
            (tps.tail_slot >> (db + sb)) == 0 if db + sb < 3 else Const(1, 1))
        probe_hit = Signal()
        m.d.comb += probe_hit.eq(is_probe & ((a.path >> pb) == 0) & tps.tail_ok & t_live
                                 & (ge.lap == tps.tail_lap) & (ge.status == 0)
                                 & ((a.psn + 1)[:24] == tps.next_psn) & (tps.pkts != 0))
        g_ml = msg_len(ge)
        # MR-TXS-310: the probe's bytes; MR-TXS-439: a schedule op's for its window tests and
        # path updates, the frame's a probe's too
        p_before, p_at, p_last = chunk_place(entry_at(tps.tail_slot),
                                             tps.tail_chunk[:records.CHUNK_BITS])
        nb_probe = Mux(p_before, mtu, Mux(p_at, p_last, 0))
        nb_sched = sp.nb

        def plus_nb(x):
            """MR-TXS-453: ``x`` plus the schedule op's bytes, formed for an MTU and its last
            bytes in parallel with the chunk's place and selected by it"""
            return Mux(sp.before, x + mtu, Mux(sp.at, x + sp.last_bytes, x))
        g_nb = Signal(mtu_log2 + 1)
        m.d.comb += g_nb.eq(Mux(is_probe, nb_probe, nb_sched))
        g_p = sp.g_p[:pb]
        if not self.pacing:
            m.d.comb += [pkt.eq(is_k[K_SCHED] & ~drop & sp.go),
                         act.eq(is_k[K_SCHED] & (drop | sp.go))]
        else:
            go = sp.go
            # MR-TXS-339/160: a packet only when the connection is due at S2's now (not waiting
            # for a turn, not late: `armed` while now is before `seen`); a drop is not held
            lt_seen = Signal(name="pace_lt_seen")
            m.d.comb += lt_seen.eq(_time_lt(self.now, cr.seen))
            due = ~cr.pend & ~(cr.armed & lt_seen)
            if not self.pace_ignored:
                go = go & due
            # MR-TXS-372: held, the op acts as one that found nothing (no drop either)
            sched_go = is_k[K_SCHED] & (~out["rt_hold"] if self.retime_hold else 1)
            m.d.comb += [pkt.eq(sched_go & ~drop & go),
                         act.eq(sched_go & (drop | go))]
        gps = path_at(g_p)
        psn = gps.next_psn
        unsent_new = sp.unsent_new
        # MR-TXS-512: the ACK request (MR-TXS-312's terms) of the chosen path alone, formed in
        # S2 on its fields selected by the registered path choice and on the registered bytes
        # (S2's row is S1's for a schedule op, MR-TXS-470), not for every path in S1
        rcount_new = Signal.like(cr.rcount, name="req_rcount_new")
        room = Signal(signed(records.BYTES_BITS + 3), name="req_room")
        m.d.comb += [rcount_new.eq(cr.rcount - resend),
                     room.eq(Mux(gps.col, mtu, gps.cwnd) - mtu - gps.inflight)]
        nb_w = mtu_log2 + 1
        req = Signal(name="sched_req")
        m.d.comb += req.eq((gps.since_req + 1 >= prm["ack_every"])
                           | (room < 0) | (((room >> nb_w) == 0) & (nb_sched > room[:nb_w]))
                           | (unsent_new + rcount_new < Pn) | (gps.state == PATH_PROBING))
        with m.If((sched_go if self.pacing else is_k[K_SCHED]) & drop):
            m.d.comb += popped.eq(1)
        # MR-TXS-510: the chosen path's PSN, bytes and packets after the packet formed once on
        # its fields selected by the path choice (a register, MR-TXS-471), not for every path
        g_psn1, g_infl, g_pkts1 = (Signal.like(gps.next_psn, name="pkt_psn1"),
                                   Signal.like(gps.inflight, name="pkt_inflight"),
                                   Signal.like(gps.pkts, name="pkt_pkts1"))
        g_sreq = Signal.like(gps.since_req, name="pkt_since_req")
        m.d.comb += [g_psn1.eq(psn + 1), g_infl.eq(plus_nb(gps.inflight)),
                     g_pkts1.eq(gps.pkts + 1), g_sreq.eq(Mux(req, 0, gps.since_req + 1))]
        with m.If(pkt):
            for p in range(Pn):
                with m.If(g_p == p):
                    np_ = mid.paths[p]
                    m.d.comb += [np_.next_psn.eq(g_psn1), np_.inflight.eq(g_infl),
                                 np_.pkts.eq(g_pkts1), np_.since_req.eq(g_sreq),
                                 np_.tail_ok.eq(1), np_.tail_slot.eq(g_slot),
                                 np_.tail_chunk.eq(g_chunk), np_.tail_lap.eq(ge.lap)]
            m.d.comb += [mid.conn.inflight.eq(plus_nb(cr.inflight)),
                         mid.conn.rr.eq(g_p + 1)]
            for k in range(SD):
                with m.If(g_slot == k):
                    ne = mid.entries[k]
                    m.d.comb += ne.out.eq(ge.out + 1)
                    with m.If(~resend):
                        m.d.comb += ne.next_chunk.eq(ge.next_chunk + 1)
            with m.If(resend):
                m.d.comb += popped.eq(1)
            with m.Else():
                m.d.comb += [mid.conn.unsent.eq(unsent_new), mid.conn.srr.eq(n_s + 1)]
                with m.If(sp.last):
                    for s in range(S):
                        with m.If(n_s == s):
                            m.d.comb += mid.streams[s].send.eq(n_st.send + 1)
        # MR-TXS-258: the refill: a schedule op that pops its FIFO's head moves one kept chunk
        # to the tail (the pick: the lowest live entry not failed with a bit, its lowest bit).
        # The pick reads the row before the op: a schedule op changes no entry's bits, status,
        # base or liveness, so it is the pick on the row after it (the model's)
        f_any, f_slot, f_bit, f_chunk = sp.f_any, sp.f_slot, sp.f_bit, sp.f_chunk
        fe = data.View(rl.entry, r.entries.as_value().word_select(f_slot, rl.entry.size))
        fill = Signal()
        m.d.comb += fill.eq(popped & f_any)
        # the entry's bits less the refilled one (its one-hot by compares, not a shift that
        # opt_share would merge with the report's, putting the fill's select before a decoder)
        fill_lnq = Signal(W, name="fill_lnq")
        m.d.comb += fill_lnq.eq(fe.lnq & ~Cat(*((f_bit[:wb_] if wb_ else 0) == j
                                              for j in range(W))))
        with m.If(popped):
            m.d.comb += [mid.conn.rhead.eq(cr.rhead + 1), mid.conn.rcount.eq(cr.rcount - 1)]
        with m.If(fill):
            m.d.comb += mid.conn.rcount.eq(cr.rcount)
            ftail = (cr.rhead + cr.rcount)[:rb]
            for k in range(R):
                with m.If(ftail == k):
                    m.d.comb += [mid.retx[k].slot.eq(f_slot), mid.retx[k].chunk.eq(f_chunk),
                                 mid.retx[k].stale.eq(0)]
            for k in range(SD):
                with m.If(f_slot == k):
                    m.d.comb += mid.entries[k].lnq.eq(fill_lnq)
        # ---- a report's lost chunk (MR-TXS-257): kept in the entry's set when the FIFO is
        # full, else queued at its tail; an acknowledged chunk at or above the base leaves the
        # set (below it, the bit is another chunk's). MR-TXS-501: written after the other
        # kinds' writes of these fields (no other kind writes them in a report's row), so
        # their deep terms (r_hit, lost_q) select the last mux
        rep_hit = Signal(name="rep_hit")
        m.d.comb += rep_hit.eq(is_rep & r_hit)
        lnq_set = Mux(is_k[K_LOST] & lost_q & r_full, r_bit, 0)
        lnq_clr = Mux(is_k[K_ACKED] & (rp_chunk >= re.ack_base), r_bit, 0)
        with m.If(rep_hit):
            for k in range(SD):
                with m.If(rp_slot == k):
                    m.d.comb += mid.entries[k].lnq.eq((re.lnq | lnq_set) & ~lnq_clr)
            with m.If(lost_q & ~r_full):
                tail = (r.conn.rhead + r.conn.rcount)[:rb]
                for k in range(R):
                    with m.If(tail == k):
                        m.d.comb += [mid.retx[k].slot.eq(rp_slot),
                                     mid.retx[k].chunk.eq(rp_chunk),
                                     mid.retx[k].stale.eq(0)]
                m.d.comb += mid.conn.rcount.eq(r.conn.rcount + 1)
        # the frame request (MR-TXS-040) and the sent event
        gd = desc_at(g_slot)
        atom = (ge.op == OP_CMP_SWAP) | (ge.op == OP_FETCH_ADD)
        off = Signal(32)
        m.d.comb += off.eq(g_chunk << mtu_log2)
        flags = (Mux(off == 0, int(MrdhFlag.FIRST), 0)
                 | Mux(~Mux(is_probe, p_before, sp.before), int(MrdhFlag.LAST), 0)
                 | Mux(resend | is_probe, int(MrdhFlag.RETX), 0)
                 | Mux(ge.err, int(MrdhFlag.ERROR), 0))
        o = ge.op
        wire_op = Mux(o == OP_READ_RESP, int(Op.MR_READ_RESP), Mux(
            atom, int(Op.MR_CMP_SWAP) | o[1],
            int(Op.MR_WRITE) | Cat(o[0], o[1] | o[2], o[2])))
        m.d.comb += [
            frame.conn.eq(conn), frame.laddr.eq(gd.laddr), frame.bth_opcode.eq(wire_op),
            frame.bth_ack_req.eq(req | is_probe), frame.bth_psn.eq(Mux(is_probe, a.psn, psn)),
            frame.mrdh_flags.eq(flags), frame.mrdh_path.eq(Mux(is_probe, a.path, g_p)), frame.mrdh_stream.eq(Mux(ge.rsp, gd.wr_id, g_slot >> db)),
            frame.mrdh_msg.eq(gd.msg), frame.mrdh_offset.eq(off), frame.mrdh_msg_len.eq(g_ml),
            # MR-TXS-513: the descriptor's fields 0 where the op's frame carries none (the
            # request's register loaded so; recv_seq written so)
            frame.reth_va.eq(gd.va), frame.reth_rkey.eq(gd.rkey),
            frame.reth_dma_len.eq(ge.length),
            frame.mrsh_recv_seq.eq(gd.recv_seq),
            frame.imm_imm.eq(gd.imm), frame.payload_len.eq(g_nb),
            frame.slot.eq(g_slot), frame.lap.eq(ge.lap),                   # MR-TXS-411
            frame.swap.eq(gd.swap),
            frame.compare.eq(gd.compare), frame.gen.eq(Mux(is_probe, tps.gen, gps.gen)),
            sent.conn.eq(conn), sent.path.eq(g_p), sent.psn.eq(psn), sent.slot.eq(g_slot),
            sent.chunk.eq(g_chunk), sent.nbytes.eq(g_nb), sent.req.eq(req), sent.abort.eq(0),
            sent.t_sent.eq(self.now), sent.lap.eq(ge.lap)]

        # ---- the queues' bits (MR-TXS-213..215), on the row after the op
        new = Signal(rl.row)
        m.d.comb += new.eq(mid)
        work = self._work_after(m, r, is_k, c_ok, cpl_u, resend, f_any, w_status, w_n,
                                lost_queued)
        push_active, push_done = Signal(), Signal()
        pace_res = {}
        if self.pacing:
            sched_in, other_in = act & work, ~refused & ~is_probe & ~r.conn.inq & work
            pace_res = self._s2_pace(m, r, a, new, is_k, pkt, g_nb, ge, lt_seen, refused)
            sched_in = sched_in & pace_res.pop("due_new")
            other_in = other_in & pace_res["due_new_"]
            pace_res.pop("due_new_")
        # MR-TXS-501: the bit and the push as two muxes by the kind (its terms, the work term
        # last, not behind a chain of the op's cases)
        sched_push = sched_in if self.pacing else act & work
        other_push = (other_in if self.pacing         # MR-TXS-273: not a probe
                      else ~refused & ~is_probe & ~r.conn.inq & work)
        m.d.comb += [push_active.eq(Mux(is_k[K_SCHED], sched_push, other_push)),
                     new.conn.inq.eq(Mux(is_k[K_SCHED], sched_push & r.conn.inq,
                                         r.conn.inq | other_push))]
        incq = Mux(is_k[K_COMPLETE], 0, r.conn.incq)
        any_c = self._completes_after(m, r, a, is_k, c_ok, count, live_k, re, r_hit, new_ack_t,
                                      bits)
        m.d.comb += new.conn.incq.eq(incq)
        with m.If(~refused & ~is_probe & ~incq & any_c):
            m.d.comb += [new.conn.incq.eq(1), push_done.eq(1)]
        # MR-TXS-501: every write of a refused request's row is in a branch it does not take
        # (the request's own, the queues' bits and pacing's `armed` gated by it)
        final = Signal(rl.row)
        m.d.comb += final.eq(new.as_value())
        res = dict(refused=refused, push_active=push_active, push_done=push_done, pkt=pkt,
                   psn_ign=is_k[K_CWND] & a.pw & r.conn.started,
                   msg_next=st_w.msg_next + 1,
                   probe=probe_hit, restore=restore, kept=kept,
                   frame=frame, sent=sent, cqe=cqe, cqe_rsp=cqe_rsp, cqe_v=cqe_v,
                   desc=desc_rec, desc_we=desc_we, desc_slot=desc_slot, **pace_res)
        m.d.comb += [out[k].eq(v) for k, v in res.items()]
        return final

    def _dims(self):
        """The sizes S2's field functions index with: streams, paths, depth, the chunk window,
        the MTU and its log2, and the bit widths of an entry index, a path, a stream and a
        chunk-window offset."""
        S, Pn, D = self.streams, self.paths, self.depth
        W, mtu = self.prm["chunk_window"], self.prm["mtu"]
        return (S, Pn, D, W, mtu, mtu.bit_length() - 1, (D - 1).bit_length(), (Pn - 1).bit_length(),
                (S - 1).bit_length(), (W - 1).bit_length())

    def _row_fns(self, m, r):
        """A row's field functions (MR-TXS-207) for S2's operation on the row ``r`` and for the
        schedule op's terms (:meth:`_sched_terms`): a stream's count, each entry's liveness
        (``live_k``), a message's length, a chunk's bytes (MR-TXS-437), a chunk's
        acknowledgement, the entry and the path at an index."""
        rl = self.rl
        S, Pn, D, W, mtu, mtu_log2, db, pb, sb, wb_ = self._dims()

        def count(st):
            return (st.tail - st.done)[:db + 1]

        def live(s, i):
            st = r.streams[s]
            return ((i - st.done)[:db]) < count(st)

        live_k = Signal(S * D)
        for s in range(S):
            for i in range(D):
                m.d.comb += live_k[s * D + i].eq(live(s, i))

        msg_len = _msg_len

        def last_bytes(e):
            """An entry's last chunk's bytes (its message's rest: its length's low bits, an
            MTU when they are 0; 0 for a message of 0 bytes; MR-TXS-500's form)."""
            # (the op's cases and the length's tests side by side, not after msg_len's mux)
            low = e.length[:mtu_log2]
            last = Signal(mtu_log2 + 1, name="cb_last")
            m.d.comb += last.eq(Mux(e.op == OP_READ, 0, Mux(e.op == OP_CMP_SWAP, 16, Mux(
                e.op == OP_FETCH_ADD, 8, Mux(e.length == 0, 0, Mux(low == 0, mtu, low))))))
            return last

        def chunk_place(e, chunk, last=None):
            """MR-TXS-437/453: ``(before, at, last)``: whether ``chunk`` of entry ``e``'s
            message is before its last chunk, at it (from one difference, the chunk count less
            the chunk: above 1, 1), and the last chunk's bytes (:func:`last_bytes`; ``last``:
            the entry's, formed before its select)."""
            if last is None:
                last = last_bytes(e)
            left = Signal(signed(len(e.nchunks) + 2), name="cb_left")
            m.d.comb += left.eq(Cat(e.nchunks, Const(0, 1)).as_signed()
                                - Cat(chunk, Const(0, 1)).as_signed())
            # (the sign and the bits above bit 0, not a comparator's subtraction)
            pos = ~left[-1]
            return pos & (left[1:-1] != 0), pos & (left[1:-1] == 0) & left[0], last

        def chunk_bytes(e, chunk, last=None):
            """MR-TXS-437: the bytes of ``chunk`` of entry ``e``'s message by the chunk's place
            against the entry's chunk count: an MTU before the last chunk, the message's rest
            at the last, 0 after; not ``length - chunk x mtu`` clamped."""
            before, at, last = chunk_place(e, chunk, last)
            return Mux(before, mtu, Mux(at, last, 0))

        def acked_bit(e, chunk):
            """protocol.chunk_acked: below the base, or its bit set."""
            d = (chunk - e.ack_base)[:wb_ + 1]
            return (chunk < e.ack_base) | (
                (chunk - e.ack_base < W) & e.ack_bits.bit_select(d[:wb_] if wb_ else 0, 1))

        def entry_at(slot):
            return data.View(rl.entry, r.entries.as_value().word_select(slot[:db + sb],
                                                                         rl.entry.size))

        def path_at(p):
            return data.View(rl.path, r.paths.as_value().word_select(p[:pb], rl.path.size))

        return SimpleNamespace(count=count, live_k=live_k, msg_len=msg_len, last_bytes=last_bytes,
                               chunk_place=chunk_place, chunk_bytes=chunk_bytes, acked_bit=acked_bit, entry_at=entry_at,
                               path_at=path_at)

    def _sched_layout(self):
        """The schedule op's terms (:meth:`_sched_terms`) as one record."""
        prm, rl = self.prm, self.rl
        S, Pn, D = self.streams, self.paths, self.depth
        mtu_log2 = prm["mtu"].bit_length() - 1
        W = prm["chunk_window"]
        return data.StructLayout({
            "resend": 1, "drop": 1, "go": 1, "before": 1, "at": 1,
            "last_bytes": mtu_log2 + 1, "n_s": max(1, (S - 1).bit_length()),
            "g_slot": 3, "g_chunk": records.CHUNK_BITS, "nb": mtu_log2 + 1, "last": 1,
            "g_p": max(1, (Pn - 1).bit_length()),
            "unsent_new": rl.conn["unsent"].shape, "f_any": 1,
            "f_slot": max(1, (S * D - 1).bit_length()), "f_bit": max(1, (W - 1).bit_length()),
            "f_chunk": records.CHUNK_BITS,
            "rep_acked": 1})

    def _sched_terms(self, m, row_bits, arg=None):
        """A schedule op's decision on the row ``row_bits`` (MR-TXS-023..026; S1's row,
        MR-TXS-471, registered into S2 as ``pipe.s2_pre``): whether it resends and whether the
        resend head is dropped, the stream it picks, its slot, chunk and bytes, whether it may
        send (a candidate, the connection window, a path), the path (its ACK request formed in
        S2, MR-TXS-512), whether its chunk is its message's last, ``unsent`` after a new chunk, the refill's pick
        (MR-TXS-258); as one record (:meth:`_sched_layout`), a function of the row alone (terms
        that read S2's time, with pacing, are formed in S2). MR-TXS-503: also, for a report
        (``arg``, the op's argument; 0 without it), whether its chunk is acknowledged on this
        row (S2 corrects it for the op just ahead, MR-TXS-504)."""
        prm, rl = self.prm, self.rl
        S, Pn, D, W, mtu, mtu_log2, db, pb, sb, wb_ = self._dims()
        SD = S * D
        r = data.View(rl.row, row_bits)
        F = self._row_fns(m, r)
        live_k, chunk_bytes, acked_bit = F.live_k, F.chunk_bytes, F.acked_bit
        entry_at = F.entry_at
        pv = Signal(self._sched_layout(), name="sched_terms")
        cr = r.conn
        rh = data.View(rl.retx, r.retx.as_value().word_select(cr.rhead, rl.retx.size))
        he = entry_at(rh.slot)
        resend = Signal(name="sched_resend")
        drop = Signal(name="sched_drop")
        # MR-TXS-461: dropped when stale (its message completed since it was queued), its
        # message failed or its chunk acknowledged; the slot's present entry is its message's
        # while not stale (live, the chunk sent)
        m.d.comb += [resend.eq(cr.rcount != 0),
                     drop.eq(resend & (rh.stale | acked_bit(he, rh.chunk) | (he.status != 0)))]
        # the first stream from srr with a new chunk in its chunk window (MR-ENG-012)
        s_can = []
        for s in range(S):
            st = r.streams[s]
            e = data.View(rl.entry, r.entries.as_value().word_select(
                Cat(st.send[:db], Const(s, sb)) if sb else st.send[:db], rl.entry.size))
            s_can.append((st.send != st.tail) & (e.status == 0)
                         & (e.next_chunk < e.ack_base + W))
        n_any, n_s = _first_from(s_can, cr.srr, S)
        n_st = data.View(rl.stream, r.streams.as_value().word_select(n_s, rl.stream.size)
                         if S > 1 else r.streams[0].as_value())
        n_slot = Cat(n_st.send[:db], n_s)[:3] if sb else n_st.send[:db]
        g_slot = Signal(3, name="sched_slot")
        m.d.comb += g_slot.eq(Mux(resend, rh.slot, n_slot))
        # MR-TXS-500: the new chunk and whether it is its message's last (read for a new chunk
        # only) formed per stream from its next entry and selected by the stream's pick, not
        # after the slot's choice
        s_next, s_last = [], []
        for s in range(S):
            st = r.streams[s]
            se = entry_at(Cat(st.send[:db], Const(s, sb)) if sb else st.send[:db])
            s_next.append(se.next_chunk[:records.CHUNK_BITS])
            s_last.append(se.next_chunk + 1 == se.nchunks)
        n_last = Signal(name="sched_last")
        g_chunk = Signal(records.CHUNK_BITS, name="sched_chunk")
        m.d.comb += [n_last.eq(Cat(*s_last).bit_select(n_s, 1) if S > 1 else s_last[0]),
                     g_chunk.eq(Mux(resend, rh.chunk[:records.CHUNK_BITS],
                                    Cat(*s_next).word_select(n_s, records.CHUNK_BITS)
                                    if S > 1 else s_next[0]))]
        # MR-TXS-310: the chunk's bytes formed per candidate (the resend's, each stream's next
        # chunk) in parallel with the choice and selected after it (rdep33)
        # MR-TXS-500: the resend head's last bytes formed per entry and selected by its slot
        # (not formed after the FIFO's and the entry's selects)
        e_last = Cat(*(F.last_bytes(r.entries[k]) for k in range(SD)))
        rh_last = Signal(mtu_log2 + 1, name="sched_rh_last")
        m.d.comb += rh_last.eq(e_last.word_select(rh.slot[:db + sb], mtu_log2 + 1))
        nb_resend = chunk_bytes(entry_at(rh.slot), rh.chunk[:records.CHUNK_BITS], rh_last)
        nb_stream = Signal(S * (mtu_log2 + 1))
        for s in range(S):
            st = r.streams[s]
            se = entry_at(Cat(st.send[:db], Const(s, sb)) if sb else st.send[:db])
            m.d.comb += nb_stream[s * (mtu_log2 + 1):(s + 1) * (mtu_log2 + 1)].eq(
                chunk_bytes(se, se.next_chunk[:records.CHUNK_BITS]))
        # MR-TXS-439: a schedule op's bytes (never the probe's arm)
        nb_sched = Signal(mtu_log2 + 1, name="sched_nb")
        m.d.comb += nb_sched.eq(Mux(resend, nb_resend, nb_stream.word_select(n_s, mtu_log2 + 1)
                                    if S > 1 else nb_stream))
        # MR-TXS-453: the chosen chunk's place and last bytes (selected as the bytes are), so a
        # test "bytes > x" is formed for an MTU, the last bytes and 0 in parallel with the
        # place and selected by it
        pl = [F.chunk_place(entry_at(rh.slot), rh.chunk[:records.CHUNK_BITS], rh_last)]
        for s in range(S):
            st = r.streams[s]
            se = entry_at(Cat(st.send[:db], Const(s, sb)) if sb else st.send[:db])
            pl.append(F.chunk_place(se, se.next_chunk[:records.CHUNK_BITS]))
        sel_s = [Mux(resend, pl[0][i], Cat(*(x[i] for x in pl[1:])).bit_select(n_s, 1)
                     if S > 1 else pl[1][i]) for i in (0, 1)]
        last_sel = Signal(mtu_log2 + 1, name="sched_last_bytes")
        m.d.comb += last_sel.eq(Mux(resend, pl[0][2], Cat(*(x[2] for x in pl[1:])).word_select(
            n_s, mtu_log2 + 1) if S > 1 else pl[1][2]))
        before_sel, at_sel = Signal(name="sched_before"), Signal(name="sched_at")
        m.d.comb += [before_sel.eq(sel_s[0]), at_sel.eq(sel_s[1])]

        def nb_gt(x):
            """the chosen bytes > ``x`` (signed): ``x`` below 0, or below 2^w (w: the bytes'
            width) and the bytes above its low w bits, that compare formed for each candidate
            (the resend head's chunk, each stream's next) by its chunk's place and selected as
            the bytes are"""
            w = mtu_log2 + 1
            lo = x[:w]
            g = [Mux(b_, mtu > lo, Mux(a_, l_ > lo, 0)) for b_, a_, l_ in pl]
            sel = Mux(resend, g[0], Cat(*g[1:]).bit_select(n_s, 1) if S > 1 else g[1])
            return (x < 0) | (((x >> w) == 0) & sel)
        # MR-TXS-311: inflight + bytes > window as bytes > window - inflight
        conn_room = Signal(signed(records.BYTES_BITS + 2))
        m.d.comb += conn_room.eq(prm["conn_window"] - cr.inflight)
        conn_block = (cr.inflight != 0) & nb_gt(conn_room)
        p_can = []
        for p in range(Pn):
            ps = r.paths[p]
            win = Mux(ps.col, mtu, ps.cwnd)
            p_can.append(Mux(ps.state == PATH_PROBING, (ps.pkts == 0) & ~resend,
                             (ps.state == PATH_ACTIVE) & (ps.inflight < win)
                             & (ps.pkts < prm["path_pkts"])))
        p_any, g_p = _first_from(p_can, cr.rr, Pn)
        unsent_new = Signal.like(cr.unsent)
        m.d.comb += unsent_new.eq(cr.unsent - ~resend)
        # (MR-TXS-512: the ACK request formed in S2, for the chosen path alone)
        # MR-TXS-258: the refill's pick (the lowest live entry not failed with a bit, its
        # lowest bit)
        f_ok = [Signal(name=f"fill_ok{k}") for k in range(SD)]
        for k in range(SD):
            e = r.entries[k]
            m.d.comb += f_ok[k].eq(live_k[k] & (e.status == 0) & (e.lnq != 0))
        f_any, f_slot = _first_bit(f_ok)
        fe = data.View(rl.entry, r.entries.as_value().word_select(f_slot, rl.entry.size))
        fz_any, f_bit = _lowest_zero(~fe.lnq)
        f_bit = f_bit if wb_ else Const(0, 1)
        # the chunk: ack_base + ((bit - ack_base) mod W): the bit over the base's high part, one
        # window more when the bit is below the base's low bits
        # (MR-TXS-500: the base's high part and its successor formed per entry, before the
        # pick's select, and chosen by the compare: no adder after the lowest bit)
        f_chunk = Signal(records.CHUNK_BITS)
        hb = records.CHUNK_BITS - wb_
        e_hi1 = Cat(*((r.entries[k].ack_base[wb_:records.CHUNK_BITS] + 1)[:hb] for k in range(SD)))
        f_hi1 = Signal(hb, name="fill_hi1")
        m.d.comb += [f_hi1.eq(e_hi1.word_select(f_slot, hb)),
                     f_chunk.eq(Cat(f_bit[:wb_], Mux(f_bit[:wb_] < fe.ack_base[:wb_], f_hi1,
                                                     fe.ack_base[wb_:records.CHUNK_BITS])))]
        m.d.comb += [pv.resend.eq(resend), pv.drop.eq(drop),
                     pv.go.eq((resend | n_any) & ~conn_block & p_any), pv.n_s.eq(n_s),
                     pv.g_slot.eq(g_slot),
                     pv.g_chunk.eq(g_chunk), pv.nb.eq(nb_sched), pv.last.eq(n_last),
                     pv.before.eq(before_sel), pv.at.eq(at_sel), pv.last_bytes.eq(last_sel),
                     pv.g_p.eq(g_p[:max(1, pb)]),
                     pv.unsent_new.eq(unsent_new), pv.f_any.eq(f_any), pv.f_slot.eq(f_slot),
                     pv.f_bit.eq(f_bit), pv.f_chunk.eq(f_chunk)]
        if arg is not None:
            # MR-TXS-503: a report's chunk acknowledged, on S1's row (the lost report's test)
            m.d.comb += pv.rep_acked.eq(acked_bit(entry_at(arg.slot), arg.chunk))
        return pv.as_value()

    def _work_after(self, m, r, is_k, c_ok, cpl_u, resend, f_any, w_status, w_n, lost_queued):
        """MR-TXS-436: whether the row the op leaves has work (MR-TXS-213's term: `unsent` or
        `rcount` not 0), formed from S2's row and the op's argument by the op's kind, not on the
        new row's counts (after the op's mux of them): the same value. A schedule op's is its
        value when the op acts (a packet or a drop; the only case the term is read)."""
        S = self.streams
        cr = r.conn
        unsent_nz, rcount_nz = cr.unsent != 0, cr.rcount != 0
        base = unsent_nz | rcount_nz
        # a work request: its chunks added (a status not 0: the row unchanged; refused: no push)
        wr_unsent = Signal.like(cr.unsent, name="work_wr_unsent")
        m.d.comb += wr_unsent.eq(cr.unsent + w_n)
        after_wr = Mux(w_status != 0, base, (wr_unsent != 0) | rcount_nz)
        # a completion of a stream with nothing left unsent of its head (send == done): the
        # head's unsent chunks taken off (MR-TXS-027), per stream, the completed one's selected
        after_cpl = base
        for s in reversed(range(S)):
            st = r.streams[s]
            u_nz = cpl_u[s][1]
            first = c_ok[s] & ~Cat(*c_ok[:s], Const(0, 1)).any()
            after_cpl = Mux(first & (st.send == st.done), u_nz | rcount_nz, after_cpl)
        # a report: a lost chunk queued (MR-TXS-021/257)
        after_rep = base | lost_queued
        # a schedule op that acts: a resend (sent or dropped) pops the FIFO's head unless the
        # refill moves a kept chunk in (MR-TXS-258); a new chunk takes one off `unsent`
        after_sched = Mux(resend, unsent_nz | f_any | (cr.rcount != 1), cr.unsent != 1)
        work = Signal(name="work_after")
        # (MR-TXS-501: the report's term, the deepest, in the last mux)
        m.d.comb += work.eq(Mux(is_k[K_ACKED] | is_k[K_LOST], after_rep, Mux(
            is_k[K_WR], after_wr, Mux(is_k[K_COMPLETE], after_cpl,
                                      Mux(is_k[K_SCHED], after_sched, base)))))
        return work

    def _completes_after(self, m, r, a, is_k, c_ok, count, live_k, re, r_hit, new_ack, bits):
        """MR-TXS-431..434: whether some stream's oldest message completes on the row the op
        leaves (MR-TXS-215's term), formed from S2's row ``r`` and the op's argument by the
        op's kind, not on the new row (its head entries selected after the op's changes):
        the same value. ``c_ok``: each stream's completion on ``r`` (MR-TXS-022/027);
        ``re``, ``r_hit``, ``new_ack``, ``bits``: a report's entry, hit, new acknowledgement
        and its window with the chunk's bit."""
        S, D = self.streams, self.depth
        W = self.prm["chunk_window"]
        db = (D - 1).bit_length()
        sb = (S - 1).bit_length()

        def head(s, ahead=0):
            st = r.streams[s]
            at = Cat((st.done + ahead)[:db], Const(s, sb)) if sb else (st.done + ahead)[:db]
            return at, data.View(self.rl.entry,
                                 r.entries.as_value().word_select(at, self.rl.entry.size))

        def cond(status_nz, e):
            """MR-TXS-022/027 on an entry: failed, or all acknowledged; with nothing in flight
            (MR-TXS-492)."""
            return (e.out == 0) & (status_nz | (e.ack_base >= e.nchunks))

        # MR-TXS-432: a completion op: the streams after the one it completes as on r, that
        # one's next message (its count one less, its head one on)
        first = [Signal(name=f"cpl_first{s}") for s in range(S)]
        nxt = Signal(S, name="cpl_next")
        for s in range(S):
            m.d.comb += first[s].eq(c_ok[s] & ~Cat(*c_ok[:s], Const(0, 1)).any())
            _, ne = head(s, 1)
            m.d.comb += nxt[s].eq((count(r.streams[s]) != 1) & cond(ne.status != 0, ne))
        after_cpl = Cat(*(first[s] & (nxt[s] | Cat(*c_ok[s + 1:], Const(0, 1)).any())
                          for s in range(S))).any()
        # MR-TXS-433: a failure: each stream's head with its new status (the head is live)
        f = a.fail
        after_fail = Const(0, 1)
        # MR-TXS-434: a report: the head it hits with its new `out` and base; the rest as on r
        rep_slot = a.slot
        rem = Signal(signed(re.nchunks.shape().width + 2), name="cpl_ack_rem")
        m.d.comb += rem.eq(re.nchunks - re.ack_base)
        # the base moved over the trailing ones reaches nchunks: rem <= 0, or the window's
        # first rem bits all set (rem <= W)
        # (rem <= j as its sign, or its bits above log2(W) + 1 clear and the low ones at most j)
        lb = (2 * W - 1).bit_length()
        r_neg, r_small = rem[-1], rem[lb:-1] == 0

        def rem_le(j):
            return r_neg | (r_small & (rem[:lb] <= j))
        covered = Cat(bits[j] | rem_le(j) for j in range(W)).all()
        ack_fill = rem_le(0) | (rem_le(W) & covered)
        rep_done = Signal(name="cpl_rep_done")
        # MR-TXS-492: its `out` after the report 0 (a late report, MR-TXS-491, leaves it)
        out_done = Mux(a.late, re.out == 0, re.out <= 1)
        m.d.comb += rep_done.eq(out_done & ((re.status != 0)
                                            | Mux(new_ack, ack_fill, re.ack_base >= re.nchunks)))
        after_rep = Const(0, 1)
        for s in range(S):
            at, e = head(s)
            fl_hit = f.fl_v & (f.fl.slot == at) & (f.fl.status != 0) & (e.lap == f.fl.lap)
            failed = (e.status != 0) | fl_hit | (f.er_v & (f.er.status != 0))
            after_fail = after_fail | ((count(r.streams[s]) != 0) & cond(failed, e))
            after_rep = after_rep | Mux(r_hit & (rep_slot == at), rep_done, c_ok[s])
        any_c = Signal(name="cpl_any")
        # (MR-TXS-501: the report's term, the deepest, in the last mux)
        m.d.comb += any_c.eq(Mux(is_k[K_ACKED] | is_k[K_LOST], after_rep, Mux(
            is_k[K_COMPLETE], after_cpl, Mux(is_k[K_FAIL], after_fail, Cat(*c_ok).any()))))
        return any_c

    def _s2_pace(self, m, r, a, new, is_k, pkt, g_nb, ge, lt_seen, refused):
        """MR-TXS-337..339 in S2: the charge (MR-TXS-161/175/176: a full MTU, or shorter of a
        `paced` connection, with its wire length), a turn (MR-TXS-162), a write (MR-TXS-167/177),
        `armed` left as the `late` at S2's now, the late queue's push (a connection left late
        not in it; the wake takes it out first). Writes ``new``'s pacing fields; returns the
        ask and late pushes and whether the row left is due (``due_new``, ``due_new_``: the
        active queue's entry, MR-TXS-339)."""
        mtu_log2 = self.prm["mtu"].bit_length() - 1
        cr = r.conn
        is_turn, is_rt, is_wake = is_k[K_TURN], is_k[K_RETIME], is_k[K_WAKE]
        full = g_nb[mtu_log2]                                 # one MTU: the top bit
        charge = Signal(name="pace_charge")
        m.d.comb += charge.eq(pkt & (full if self.pace_full_only else full | cr.paced)
                              & (~cr.pend if self.pace_ignored else 1))
        # MR-TXS-175: the packet's wire length: its op's headers and its bytes padded to 4
        WB = len(Signal(ask_layout(self.conns)["wl"].shape))
        hdr = Array(Const(WIRE_HDR[op], WB) for op in range(8))
        words = g_nb[2:] + g_nb[:2].any()
        wl = Signal(WB, name="pace_wl")
        m.d.comb += wl.eq(hdr[ge.op] + Cat(Const(0, 2), words))
        # a turn's time, or a write's with set_time and no turn asked for
        from_arg = Signal(name="pace_from_arg")
        m.d.comb += from_arg.eq(is_turn | (is_rt & a.set_time & ~cr.pend))
        pend = Mux(charge, 1, Mux(is_turn, 0, cr.pend))
        seen = Mux(from_arg, a.time, cr.seen)
        armed_pre = Mux(is_turn, a.time != cr.seen, Mux(from_arg, 1, cr.armed))
        armed = Signal(name="pace_armed")
        m.d.comb += armed.eq(armed_pre & Mux(from_arg, _time_lt(self.now, a.time), lt_seen))
        inlq_pre = Mux(is_wake, 0, cr.inlq)
        push_late = Signal(name="pace_push_late")
        m.d.comb += push_late.eq(~refused & armed & ~inlq_pre)
        nc = new.conn
        m.d.comb += [nc.pend.eq(pend), nc.seen.eq(seen),
                     nc.armed.eq(Mux(refused, cr.armed, armed)),      # MR-TXS-501: as read
                     nc.paced.eq(Mux(is_rt, a.paced, cr.paced)), nc.inlq.eq(inlq_pre | push_late)]
        due_new = Const(1, 1) if self.pace_ignored else ~pend & ~armed
        return {"ask": charge, "ask_wl": wl, "push_late": push_late, "late_seen": seen,
                "due_new": due_new, "due_new_": due_new}
