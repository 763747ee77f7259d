"""s1_45 (issue 12; not part of the design): what MR-TXS-470's hold (a schedule op not taken
while S1 holds an operation of its connection) costs in throughput, on the cycle models (the
RTL follows them cycle for cycle: the locksteps). Each figure twice, the row model with the
hold (``sched_hold`` True, the design) and without it (the timing before s1_45):

* the TX with the rows (``TxCycleModel(rows=True)``, the small instance) on ``metaroce bench
  tx``'s two drivers (MR-TX-153, models/tx_cases.py): ``BenchDriver`` (one-packet WRITEs
  posted back to back over every connection and stream, each frame ACKed as soon as it is out:
  ACKs of a connection between its schedule ops, where the hold acts) and ``AckBurstDriver``
  (the frames without ACKs, then an ACK per frame back to back); packets and beats per cycle,
  the least latency, ACKs per cycle, and the schedule ops the hold kept back (``sched_waits``);
* the row scheduler alone (tests/test_tx_sched_rows.py ``frame_cycles``: 16-chunk writes on
  1 and 3 connections): the cycles per frame, without reports and with each sent packet
  acknowledged on ``s_acked`` in the cycle after its sent event (an ACK per packet, each an
  operation of the sending connection between its schedule ops).

Run from the repository root (the model alone, about a minute):

    .venv/bin/python docs/hw/probes/s1_45_rows_rate.py [--widths 64,512] [--sizes 256,1024] [--packets 32]
"""
import argparse
import json


def tx_row(width, nbytes, packets, hold):
    from metaroce.benches._common import model_or_amaranth
    from metaroce.models import tx_cases as xc
    from metaroce.models.tx import SMALL, TxCycleModel
    out = {}
    for kind, cls in (("run", xc.BenchDriver), ("acks", xc.AckBurstDriver)):
        model = TxCycleModel(width, **SMALL, rows=True)
        model.sched.sched_hold = hold
        drv = cls(model.lay, width, packets, nbytes, paths=SMALL["paths"])
        model_or_amaranth(model, drv, "model", None, model.busy)
        r = drv.row(width, nbytes)
        out[kind] = dict(r, cycles=drv.cycle, sched_waits=model.sched.sched_waits)
    r, a = out["run"], out["acks"]
    return {"width": width, "pkt_bytes": nbytes, "hold": hold, "packets": r["packets"],
            "packets_per_cycle": r["packets_per_cycle"], "beats_per_cycle": r["beats_per_cycle"],
            "latency_cycles": r["latency_cycles"], "run_cycles": r["cycles"],
            "sched_waits": r["sched_waits"], "acks_per_cycle": a["acks_per_cycle"],
            "ack_run_sched_waits": a["sched_waits"]}


def sched_row(conns_used, hold, acks):
    """tests/test_tx_sched_rows.py ``frame_cycles``' run with the hold set as asked; with
    ``acks`` each sent event acknowledged on ``s_acked`` from the next cycle."""
    from collections import deque

    from metaroce.models import tx_sched_cases as tc
    from metaroce.models.rx import pack, unpack
    from metaroce.models.tx_sched import SMALL
    from metaroce.models.tx_sched_rows import TxSchedRowsModel
    big = (1 << 24) - 1 - 1024
    m = TxSchedRowsModel(64, **dict(SMALL, conns=4, cwnd=big, conn_window=big, path_pkts=255),
                         sched_hold=hold)
    items = [tc.wr_item(c, 0, 16 * 1024, wr_id=c) for c in range(conns_used)]
    rdy = {"m_frame__ready": 1, "m_sent__ready": 1, "m_cqe__ready": 1}
    k, frames, pend = 0, [], deque()
    for cyc in range(600):
        inp = dict(rdy)
        if k < len(items):
            inp.update(s_wr__valid=1, s_wr__payload=pack(m.lay.wr, items[k]))
        if pend:
            inp.update(s_acked__valid=1, s_acked__payload=pack(m.lay.acked, pend[0]))
        out = m.step(inp)
        k += bool(k < len(items) and out["s_wr__ready"])
        if pend and out["s_acked__ready"]:
            pend.popleft()
        if out["m_frame__valid"]:
            frames.append(cyc)
        if acks and out["m_sent__valid"]:
            e = unpack(m.lay.sent, out["m_sent__payload"])
            pend.append({"conn": e["conn"], "path": e["path"], "slot": e["slot"],
                         "chunk": e["chunk"], "abort": 0, "lap": e["lap"], "late": 0})
    gaps = [b - a for a, b in zip(frames[10:], frames[11:])]
    return {"conns": conns_used, "acks": acks, "hold": hold, "frames": len(frames),
            "last_frame_cycle": frames[-1], "cycles_per_frame_after_10": round(sum(gaps) / len(gaps), 4),
            "sched_waits": m.sched_waits}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--widths", default="64,512")
    ap.add_argument("--sizes", default="256,1024")
    ap.add_argument("--packets", type=int, default=32)
    args = ap.parse_args()
    for w in map(int, args.widths.split(",")):
        for b in map(int, args.sizes.split(",")):
            for hold in (False, True):
                print(json.dumps(tx_row(w, b, args.packets, hold)), flush=True)
    for acks in (False, True):
        for c in (1, 3):
            for hold in (False, True):
                print(json.dumps(sched_row(c, hold, acks)), flush=True)


if __name__ == "__main__":
    main()
