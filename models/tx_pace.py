"""The pacer joined into the TX scheduler, first slice (docs/spec/hw-tx-sched.md section 14,
MR-TXS-159..166; hw-cwnd.md section 7.4): :class:`PacedTxSchedCycleModel` is the cycle model
of ``hdl/tx_pace.py`` ``PacedTxSched``: the scheduler with the pacing condition
(``TxSchedCycleModel(pacing=True)``) and the per-frame pacer (``PacerFrameCycleModel``), the
scheduler's ``m_pace`` into the pacer's ``s_frame`` and the pacer's ``m_turn`` into the
scheduler's ``s_turn``; the write the pacer takes also into the scheduler's ``s_retime``
(MR-TXS-167). models/ never imports hdl/.
"""
from __future__ import annotations

from . import pacer as pacer_model
from .tx_sched import SMALL, TxSchedCycleModel

__all__ = ["PacedTxSchedCycleModel", "PACE_INPUTS", "PACE_OUTPUTS", "tx_sched_paced_model_small"]

#: MR-TXS-164: the join's ports beyond the scheduler's (the pacer's write port, renamed, and its
#: static configuration)
PACE_INPUTS = ["s_pace_write__valid", "s_pace_write__payload", "mtu_wl", "line_mbps"]
PACE_OUTPUTS = ["s_pace_write__ready"]
_INNER_IN = {"m_pace__ready", "s_turn__valid", "s_turn__payload", "s_retime__valid",
             "s_retime__payload", "line_mbps"}
_INNER_OUT = {"m_pace__valid", "m_pace__payload", "s_turn__ready", "s_retime__ready"}


class PacedTxSchedCycleModel:
    """MR-TXS-164: the join cycle by cycle. Each cycle: the pacer's ``s_frame.ready`` and
    ``m_turn`` from its registers and ``s_write.valid``; the scheduler's step on them; the
    pacer's step on the scheduler's ``m_pace`` (``m_turn.ready`` is 1: the scheduler's
    ``s_turn`` is always ready). ``kw``: ``TxSchedModel``'s (``pace_ignored`` for the
    negative control); ``retime`` False (negative control only): the pacer's writes do not
    reach the scheduler (MR-TXS-167). ``rows`` (MR-TXS-342): the row scheduler
    (``TxSchedRowsModel(pacing=True)``) in the register scheduler's place; the pacer's writes
    then wait for its ``s_retime.ready`` (MR-TXS-340)."""

    def __init__(self, width=64, conns=SMALL["conns"], streams=SMALL["streams"],
                 paths=SMALL["paths"], depth=SMALL["depth"], retime=True, rows=False, **kw):
        self.retime, self.rows = retime, bool(rows)
        if self.rows:
            from .tx_sched_rows import TxSchedRowsModel
            self.sched = TxSchedRowsModel(width, conns, streams, paths, depth, pacing=True, **kw)
        else:
            self.sched = TxSchedCycleModel(width, conns, streams, paths, depth, pacing=True, **kw)
        self.pacer = pacer_model.PacerFrameCycleModel(width, conns=conns)
        self.sem, self.lay = self.sched.sem, self.sched.lay
        self.pace_lay = self.sched.pace_lay
        self.events = self.sched.events
        self.now = 0
        #: per cycle with a packet: (conn, now, the pacer's pace_until of conn then, nbytes)
        self.packets = []
        #: the charges the pacer took: (conn, now, its pace_until before, after)
        self.charges = []
        #: MR-TXS-175: each packet's wire length (as ``packets``)
        self.packet_wl = []

    def port_names(self):
        names = self.sched.port_names()
        return {"inputs": [n for n in names["inputs"] if n not in _INNER_IN] + PACE_INPUTS,
                "outputs": [n for n in names["outputs"] if n not in _INNER_OUT] + PACE_OUTPUTS}

    def busy(self):
        return self.sched.busy() or self.pacer.busy()

    def step(self, inputs):
        g = inputs.get
        p = self.pacer
        idle = p.pending is None and not p.valid and not p.busy_w
        wv = g("s_pace_write__valid", 0)
        # MR-TXS-340: the rows' s_retime.ready gates the pacer's writes (1 in every cycle the
        # pacer could take one; the register scheduler's is always 1)
        rt_ok = self.sched.retime_ready() if self.rows else 1
        wv = int(bool(wv) and rt_ok)
        si = dict(inputs)
        # MR-TXS-167: the write the pacer takes in this cycle goes to the scheduler too
        si.update({"m_pace__ready": int(idle and not wv), "s_turn__valid": p.valid,
                   "s_turn__payload": p.payload, "s_retime__valid": int(idle and bool(wv) and self.retime),
                   "s_retime__payload": g("s_pace_write__payload", 0)})
        n = len(self.events)
        so = self.sched.step(si)
        now = g("now", 0)
        sem = p.sem
        new = self.events[n:]
        for e in new:
            if e[0] == "packet":
                c = e[1]
                self.packets.append((c, now, sem.pace_until[c], self.sem.pace[c]["t_ask"] == now
                                     and self.sem.pace[c]["pend"]))
                self.packet_wl.append(self.sem.last_wl)
            elif e[0] == "sched" and e[5] is not None:
                # MR-TXS-342: a row schedule op's packet, charged when its ask follows it
                c = e[1]
                self.packets.append((c, now, sem.pace_until[c],
                                     any(x[0] == "ask" and x[1] == c for x in new)))
                self.packet_wl.append(self.sem.last_wl)
        take = idle and not wv and so["m_pace__valid"]
        if take:
            from .rx import unpack
            fr = unpack(self.pace_lay["frame"], so["m_pace__payload"])
            before = sem.pace_until[fr["conn"]]
        po = p.step({"s_write__valid": wv, "s_write__payload": g("s_pace_write__payload", 0),
                     "s_frame__valid": so["m_pace__valid"],
                     "s_frame__payload": so["m_pace__payload"],
                     "m_turn__ready": so["s_turn__ready"],
                     "mtu_wl": g("mtu_wl", 0), "line_mbps": g("line_mbps", 0)})
        if take:
            self.charges.append((fr["conn"], fr["now"], before, sem.pace_until[fr["conn"]]))
        assert po["s_frame__ready"] == si["m_pace__ready"]
        out = {k: v for k, v in so.items() if k not in _INNER_OUT}
        out["s_pace_write__ready"] = int(po["s_write__ready"] and rt_ok)
        return out


def tx_sched_paced_model_small(width=64):
    """MR-TXS-164: the registered instance's model (the scheduler's small instance)."""
    return PacedTxSchedCycleModel(width, **SMALL)
