"""The pacer joined into the TX scheduler, first slice (docs/spec/hw-tx-sched.md section 14,
MR-TXS-159..166; hw-cwnd.md section 7.4): ``PacedTxSched`` is ``TxSched(pacing=True)`` and the
per-frame pacer ``PacerFrame`` (unchanged), the scheduler's ``m_pace`` (a full-MTU packet's
charge) into the pacer's ``s_frame`` and the pacer's ``m_turn`` (the next send time) into the
scheduler's ``s_turn``, the writes the pacer takes into the scheduler's ``s_retime``. Ports:
the scheduler's (MR-TXS-002) and the pacer's ``s_write`` as
``s_pace_write`` (the other owners' writes: the open, a rate), ``mtu_wl`` and ``line_mbps``.

Golden model: :class:`metaroce.models.tx_pace.PacedTxSchedCycleModel`.
"""
from amaranth.hdl import Module
from amaranth.lib import stream, wiring
from amaranth.lib.wiring import In

from ..models import pacer as pacer_model
from ..models.tx_sched import SMALL
from .pacer import PacerFrame
from .tx_sched import TxSched

__all__ = ["PacedTxSched", "tx_sched_paced_small"]


class PacedTxSched(wiring.Component):
    """MR-TXS-164: the scheduler with the pacing condition and the per-frame pacer, joined.
    ``kw``: ``TxSched``'s parameters (``pace_ignored`` for the negative control); ``retime``
    False (negative control only): the pacer's writes do not reach the scheduler (MR-TXS-167)."""

    def __init__(self, width=64, *, retime=True, rows=False, rows_cls=None, **kw):
        self.retime, self.rows = retime, bool(rows)
        if self.rows:
            # MR-TXS-342: the row scheduler in TxSched's place (``rows_cls``: a wrong form's
            # TxSchedRows, negative controls only)
            from .tx_sched_rows import TxSchedRows
            self.sched = (rows_cls or TxSchedRows)(width, pacing=True, **kw)
        else:
            self.sched = TxSched(width, pacing=True, **kw)
        self.pacer = PacerFrame(self.sched.conns, carry_chain=kw.get("carry_chain"))
        ports = {name: member for name, member in self.sched.signature.members.items()
                 if name not in ("m_pace", "s_turn", "s_retime", "line_mbps")}
        ports.update({"s_pace_write": In(stream.Signature(self.pacer.lay["write"])),
                      "mtu_wl": In(pacer_model.WL_BITS), "line_mbps": In(pacer_model.RATE_BITS)})
        super().__init__(ports)

    def elaborate(self, platform):
        m = Module()
        m.submodules.sched = sched = self.sched
        m.submodules.pacer = pacer = self.pacer
        wiring.connect(m, sched.m_pace, pacer.s_frame)
        wiring.connect(m, pacer.m_turn, sched.s_turn)
        # MR-TXS-167: the write the pacer takes in the cycle, to the scheduler too
        pw = self.s_pace_write
        if self.rows:
            # MR-TXS-340: the pacer takes a write only while the rows' s_retime is ready
            rt_ok = sched.s_retime.ready
            m.d.comb += [pacer.s_write.valid.eq(pw.valid & rt_ok),
                         pacer.s_write.payload.eq(pw.payload),
                         pw.ready.eq(pacer.s_write.ready & rt_ok)]
        if self.retime:
            m.d.comb += [sched.s_retime.valid.eq(pw.valid & pacer.s_write.ready
                                                 & (sched.s_retime.ready if self.rows else 1)),
                         sched.s_retime.payload.eq(pw.payload)]
        for name in self.signature.members:
            if name == "s_pace_write":
                if not self.rows:
                    wiring.connect(m, wiring.flipped(self.s_pace_write), pacer.s_write)
            elif name in ("mtu_wl", "line_mbps"):
                m.d.comb += getattr(pacer, name).eq(getattr(self, name))
                if name == "line_mbps":             # MR-TXS-177: the scheduler's `paced` too
                    m.d.comb += sched.line_mbps.eq(self.line_mbps)
            else:
                ours, theirs = getattr(self, name), getattr(sched, name)
                if isinstance(ours, wiring.PureInterface) or hasattr(ours, "signature"):
                    flow = self.signature.members[name].flow
                    if flow == wiring.In:
                        wiring.connect(m, wiring.flipped(ours), theirs)
                    else:
                        wiring.connect(m, theirs, wiring.flipped(ours))
                elif self.signature.members[name].flow == wiring.In:
                    m.d.comb += theirs.eq(ours)
                else:
                    m.d.comb += ours.eq(theirs)
        return m


def tx_sched_paced_small(width=64):
    """MR-TXS-164: the registered instance: the scheduler's small instance, paced."""
    return PacedTxSched(width, **SMALL)
