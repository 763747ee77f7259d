"""The atomic executor at the engine (docs/spec/hw-engine.md section 5d, MR-ENG-158..): the RX
engine's execution items (``m_atom``, hw-rx.md MR-RX-155/164) read-modified-written in host
memory, their original values kept in a result area of host memory and answered as ordinary
8-byte READ responses whose payload address is the request's result row (MR-RX-156,
MR-VERB-010..012).

:class:`AtomicExecModel` is the cycle model of ``hdl.atomic.AtomicExec``, ``step(inputs) ->
outputs`` with the Verilog port names. One item at a time, in ``m_atom`` order (MR-ENG-160):

==========  ===================================================================================
state       what happens
==========  ===================================================================================
IDLE        ``s_atom.ready``; an item taken: FENCE, or RSP for an ``err`` item or a host address
            not 8-byte aligned (no memory access, MR-ENG-159)
FENCE       the DMA takes placements up to the item's placement mark ``pmark`` (MR-RX-175) and
            no further (``hold_place``); wait until its done records reach ``pmark`` (or nothing
            waits at its intake and every taken placement is done): every placement before the
            item is written (MR-ENG-216); the intake stays held
AR, R       read the 8 bytes at ``laddr`` (one full-width beat, its 64-bit lane ``laddr mod W/8``),
            the lane registered (MR-ENG-224)
CALC        ``protocol.atomic_apply``'s new value from the registered read (MR-ENG-224)
AWT, BT     write the new value back; its B response ends the hold
AWR, BR     write the original value to the request's result row (a register, MR-ENG-224)
RSP         ``m_rsp``: ``{conn, stream, msg, laddr: the result row, length 8, err}``
==========  ===================================================================================

An AXI4 error response (``rresp`` or ``bresp`` not OKAY) makes the response an ERROR response
(``err``), the rest of the sequence skipped after a read error (MR-ENG-164).

models/ never imports hdl/.
"""
from __future__ import annotations

from . import protocol as P
from . import records
from .dma_write import INCR, RESP_OKAY
from .rx import PLACE_MARK_BITS, pack, unpack

__all__ = ["AtomicExecModel", "RESULT_SLOTS", "CNT_BITS", "result_row", "result_area_bytes",
           "STATES", "AXI_IN", "AXI_OUT", "atomic_exec_model", "ATOM_CTR", "ATOM_CTR_BASE"]

#: MR-ENG-161: result rows per (connection, stream): a request's row is ``msg mod RESULT_SLOTS``.
RESULT_SLOTS = 16
#: MR-ENG-216: the placement counters' width, the RX's placement mark's (MR-RX-175).
CNT_BITS = PLACE_MARK_BITS

STATES = ("IDLE", "FENCE", "AR", "R", "CALC", "AWT", "BT", "AWR", "BR", "RSP")
IDLE, FENCE, AR, R, CALC, AWT, BT, AWR, BR, RSP = range(len(STATES))

#: MR-ENG-226: the executor's counters (64 bits, ``reg_addr`` - ``ATOM_CTR_BASE`` numbers them in
#: the engine's counter window): items executed (read and written), ERROR responses (every
#: cause), AXI4 error responses (``rresp``/``bresp`` not OKAY), cycles an item waited at its fence.
ATOM_CTR = {"atom_executed": 0, "atom_errors": 1, "atom_axi_errors": 2, "atom_fence_cycles": 3}
#: MR-ENG-226: the first of them in the engine's counter window (after ``models.engine.ENG_CTR``)
ATOM_CTR_BASE = 3

AXI_IN = ("arready", "rid", "rdata", "rresp", "rlast", "rvalid",
          "awready", "wready", "bid", "bresp", "bvalid")
AXI_OUT = ("arid", "araddr", "arlen", "arsize", "arburst", "arvalid", "rready",
           "awid", "awaddr", "awlen", "awsize", "awburst", "awvalid", "wdata", "wstrb", "wlast",
           "wvalid", "bready")

_M64 = (1 << 64) - 1


def result_row(base, conn, stream, msg, slots=RESULT_SLOTS):
    """MR-ENG-161: the host address of the result row of request ``(conn, stream, msg)``:
    ``base + 8 x ((conn x 8 + stream mod 8) x slots + msg mod slots)``, modulo 2^64."""
    idx = (((conn << records.STREAM_BITS) | (stream & (records.STREAMS - 1))) * slots) + (msg % slots)
    return (base + 8 * idx) & _M64


def result_area_bytes(conns, slots=RESULT_SLOTS):
    """MR-ENG-161: the result area's size in bytes."""
    return 8 * conns * records.STREAMS * slots


class AtomicExecModel:
    """MR-ENG-158..165, MR-ENG-216..: the atomic executor, cycle by cycle on every port of
    ``hdl.atomic.AtomicExec(width, atom_layout, rsp_layout, slots)``."""

    def __init__(self, width, atom_layout, rsp_layout, slots=RESULT_SLOTS):
        self.width, self.nb = width, width // 8
        self.size = (self.nb - 1).bit_length()
        self.atom_lay, self.rsp_lay, self.slots = atom_layout, rsp_layout, slots
        self.state = IDLE
        self.item = unpack(atom_layout, 0)
        self.fail = 0
        self.rdat = 0                    # MR-ENG-224: the read beat's lane, registered
        self.orig = self.new = 0
        self.row = 0                     # MR-ENG-224: the result row's address, registered
        self.aw_done = self.w_done = 0
        self.taken = self.done = 0       # placements taken by the DMA, their done records taken
        self.hold = 0
        self.executed = 0                # items that read and wrote memory (for the runs' figures)
        self.mask = (1 << CNT_BITS) - 1
        self.ctr = [0] * len(ATOM_CTR)   # MR-ENG-226
        self.reg_data = 0

    def busy(self):
        return self.state != IDLE

    def port_names(self):
        return {"inputs": ["s_atom__payload", "s_atom__valid", "m_rsp__ready", "result_base",
                           "place_busy", "place_taken", "place_done", "reg_addr"]
                + ["m_axi__" + n for n in AXI_IN],
                "outputs": ["s_atom__ready", "m_rsp__payload", "m_rsp__valid", "hold_place", "reg_data"]
                + ["m_axi__" + n for n in AXI_OUT]}

    def _lane(self):
        """The target's 64-bit lane (``laddr`` is 8-byte aligned when it is read or written)."""
        return (self.item["laddr"] % self.nb) & ~7 if self.nb > 8 else 0

    def outputs(self):
        """The outputs of this cycle (functions of the state)."""
        st, it = self.state, self.item
        lane = self._lane()
        # the written value's lane: the target's, or the result row's (MR-ENG-161)
        wlane = lane if st == AWT else (self.row % self.nb if self.nb > 8 else 0)
        aw_t = st == AWT and not self.aw_done
        aw_r = st == AWR and not self.aw_done
        w_on = st in (AWT, AWR) and not self.w_done
        value = self.new if st == AWT else self.orig
        out = {"s_atom__ready": int(st == IDLE), "hold_place": self.hold,
               "m_rsp__valid": int(st == RSP),
               "m_rsp__payload": pack(self.rsp_lay, {
                   "conn": it["conn"], "stream": it["stream"], "msg": it["msg"],
                   "laddr": 0 if self.fail else self.row, "length": 8, "err": self.fail}),
               "m_axi__arid": 0, "m_axi__araddr": it["laddr"], "m_axi__arlen": 0,
               "m_axi__arsize": self.size, "m_axi__arburst": INCR, "m_axi__arvalid": int(st == AR),
               "m_axi__rready": int(st == R),
               "m_axi__awid": 0, "m_axi__awaddr": it["laddr"] if st == AWT else self.row,
               "m_axi__awlen": 0, "m_axi__awsize": self.size, "m_axi__awburst": INCR,
               "m_axi__awvalid": int(aw_t or aw_r),
               "m_axi__wdata": value << (8 * wlane), "m_axi__wstrb": 0xFF << wlane,
               "m_axi__wlast": 1, "m_axi__wvalid": int(w_on),
               "m_axi__bready": int(st in (BT, BR)), "reg_data": self.reg_data}
        return out

    def _reached(self, count, mark):
        """``count`` at or past ``mark`` in the half space of CNT_BITS (MR-ENG-216)."""
        return ((count - mark) & self.mask) < (1 << (CNT_BITS - 1))

    def _hold_at(self, take, mark):
        """MR-ENG-217: the intake held from the next cycle: ``taken - mark`` (one subtract) at or
        past 0, or one short with a take in this cycle (the RTL's form of taken + take >= mark)."""
        d = (self.taken - mark) & self.mask
        return int(d < (1 << (CNT_BITS - 1)) or (bool(take) and d == self.mask))

    def step(self, inputs):
        g = inputs.get
        base = g("result_base", 0)
        out = self.outputs()
        st, it = self.state, self.item
        taken_next = (self.taken + (1 if g("place_taken", 0) else 0)) & self.mask
        # MR-ENG-226: the counters; reg_data is the previous cycle's select (a register)
        addr = g("reg_addr", 0) - ATOM_CTR_BASE
        self.reg_data = self.ctr[addr] if 0 <= addr < len(self.ctr) else 0
        count = [0] * len(ATOM_CTR)
        # MR-ENG-224: the result row's address, a register of the item and the base
        row_next = self._row_of(base)
        if st == IDLE:
            if g("s_atom__valid", 0):
                self.item = unpack(self.atom_lay, g("s_atom__payload", 0))
                # MR-ENG-159: a host address not 8-byte aligned is answered ERROR, untouched
                self.fail = int(bool(self.item["err"] or self.item["laddr"] & 7))
                self.state = RSP if self.fail else FENCE
                # MR-ENG-217: the DMA takes placements up to the item's mark and no further
                self.hold = int(not self.fail and self._hold_at(g("place_taken", 0), self.item["pmark"]))
        elif st == FENCE:
            count[ATOM_CTR["atom_fence_cycles"]] = 1
            # MR-ENG-216: every placement up to the mark done, or (a mark older than half the
            # counter's space) nothing waiting and every taken placement done
            reached = self._reached(self.done, it["pmark"])
            drained = not g("place_busy", 0) and self.taken == self.done
            if reached or drained:
                self.hold, self.state = 1, AR
            else:
                self.hold = self._hold_at(g("place_taken", 0), it["pmark"])
        elif st == AR:
            if g("m_axi__arready", 0):
                self.state = R
        elif st == R:
            if g("m_axi__rvalid", 0):
                self.rdat = (g("m_axi__rdata", 0) >> (8 * self._lane())) & _M64
                if g("m_axi__rresp", 0) != RESP_OKAY:
                    self.fail, self.hold, self.state = 1, 0, RSP
                    count[ATOM_CTR["atom_axi_errors"]] = 1
                else:
                    self.state = CALC
        elif st == CALC:
            # MR-VERB-010 on the registered read (MR-ENG-224)
            self.orig = self.rdat
            self.new = P.atomic_apply(it["cas"], self.rdat, it["operand"], it["compare"])
            self.state = AWT
        elif st in (AWT, AWR):
            aw = self.aw_done or (out["m_axi__awvalid"] and g("m_axi__awready", 0))
            w = self.w_done or (out["m_axi__wvalid"] and g("m_axi__wready", 0))
            if aw and w:
                self.aw_done = self.w_done = 0
                self.state = BT if st == AWT else BR
            else:
                self.aw_done, self.w_done = int(bool(aw)), int(bool(w))
        elif st in (BT, BR):
            if g("m_axi__bvalid", 0):
                if g("m_axi__bresp", 0) != RESP_OKAY:
                    self.fail = 1
                    count[ATOM_CTR["atom_axi_errors"]] = 1
                if st == BT:
                    self.hold = 0
                    self.executed += 1
                    count[ATOM_CTR["atom_executed"]] = 1
                    self.state = AWR
                else:
                    self.state = RSP
        elif st == RSP:
            if g("m_rsp__ready", 0):
                self.state = IDLE
                count[ATOM_CTR["atom_errors"]] = self.fail
        for i, c in enumerate(count):
            self.ctr[i] = (self.ctr[i] + c) & _M64
        self.row = row_next
        # MR-ENG-216: the placement counters, every cycle (registers: the state above read them)
        self.taken = taken_next
        if g("place_done", 0):
            self.done = (self.done + 1) & self.mask
        return out

    def _row_of(self, base):
        it = self.item
        return result_row(base, it["conn"], it["stream"], it["msg"], self.slots)


def atomic_exec_model(width=64):
    """The model of the block ``atomic`` (``hdl.atomic.atomic_exec``)."""
    from .rx import layouts
    lay = layouts()
    return AtomicExecModel(width, lay.atom, lay.rsp)
