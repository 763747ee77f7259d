"""Where a whole-engine run's time goes against the reference endpoints on the same writes
(docs/hw/engine-results.md, branch eng13): every frame each host sends and receives, both runs
(the engine as ``EngineModel``, MR-ENG-138/139; the reference ``run_reference_pair``), summed up
for ``h0``'s bytes (the measured direction): when its first and last new data frame left, its
link's busy share in between, its frames resent, ACKs in each direction and their spacing, idle
gaps of ``h0``'s link, and bytes sent per tenth of the run.

    .venv/bin/python docs/hw/probes/engine_trace.py writes endpoint --direction rx
    .venv/bin/python docs/hw/probes/engine_trace.py writes peer --dump /tmp/peer

``--dump DIR`` writes each run's frames as JSON lines (``engine.jsonl``, ``reference.jsonl``).
``--tx-kw``, ``--tx-outstanding``, ``--tx-frames-ahead`` change the engine's TX half for the run
(its parameters; the join's read commands; the join's id queue). A resend is a data frame of
the same (stream, message, offset) as an earlier one (the runs have one connection).
"""
import json
import os

from metaroce.models import cosim, cosim_engine, cosim_tx
from metaroce.models.wire import Op
from metaroce.sim.fabric import FRAME_OVERHEAD, frame_len

_DATA = {int(Op.MR_WRITE), int(Op.MR_WRITE_IMM)}
_ACK = {int(Op.MR_ACK): "ack", int(Op.MR_NAK): "nak"}


def tap(fab, log):
    """Hooks on both hosts of ``fab``: every frame sent and delivered into ``log``."""
    for h, host in enumerate(fab.hosts):
        def on(kind, h=h):
            def hook(f, now):
                op = f.bth.opcode
                rec = {"t": now, "h": h, "dir": kind, "wl": frame_len(f)}
                if op in _DATA:
                    m = f.mrdh
                    rec.update(k="data", s=m.stream, m=m.msg, o=m.offset, n=len(f.payload), p=m.path,
                               psn=f.bth.psn, ar=f.bth.ack_req)
                else:
                    rec["k"] = _ACK.get(op, str(op))
                    if f.mrah is not None:
                        rec.update(p=f.mrah.path, cum=f.mrah.cum_psn, trig=f.mrah.trigger_psn)
                log.append(rec)
            return hook
        host.tx_hook, host.rx_hook = on("tx"), on("rx")


def summary(log, t_done, rate_bps):
    byte_s = 8.0 / rate_bps
    tx0 = [r for r in log if r["h"] == 0 and r["dir"] == "tx"]
    data = [r for r in tx0 if r["k"] == "data"]
    acks_in = [r for r in log if r["h"] == 0 and r["dir"] == "rx" and r["k"] in ("ack", "nak")]
    seen, new, resent, lags = {}, [], 0, []
    for r in data:
        key = (r["s"], r["m"], r["o"])
        if key in seen:
            resent += 1
            o = seen[key]
            # the first ACK of the lost frame's path beyond its PSN: what revealed the loss
            a = next((x for x in acks_in if x["t"] > o["t"] and x.get("p") == o["p"]
                      and 0 < (x.get("trig", 0) - o["psn"]) % (1 << 24) < (1 << 23)), None)
            if a is not None and a["t"] < r["t"]:
                lags.append(r["t"] - a["t"])
        else:
            seen[key] = r
            new.append(r)
    t0, t1 = data[0]["t"], new[-1]["t"]
    busy = sum((r["wl"] + FRAME_OVERHEAD) * byte_s for r in tx0 if t0 <= r["t"] <= t1)
    # idle gaps of h0's link (send times are frame starts)
    gaps, end = [], None
    for r in tx0:
        if end is not None and r["t"] - end > 1e-7 and r["t"] <= t1:
            gaps.append(r["t"] - end)
        end = max(end or 0.0, r["t"]) + (r["wl"] + FRAME_OVERHEAD) * byte_s
    acks_h1 = [r for r in log if r["h"] == 1 and r["dir"] == "tx" and r["k"] in ("ack", "nak")]
    acks_h0 = [r for r in tx0 if r["k"] in ("ack", "nak")]
    data_h1 = [r for r in log if r["h"] == 1 and r["dir"] == "tx" and r["k"] == "data"]
    tenth = t_done / 10
    per_tenth = [0] * 10
    for r in new:
        per_tenth[min(9, int(r["t"] / tenth))] += r["n"]
    us = lambda x: round(x * 1e6, 2)       # noqa: E731
    return {"t_done_us": us(t_done), "h0_first_data_us": us(t0), "h0_last_new_data_us": us(t1),
            "tail_us": us(t_done - t1), "h0_data_frames": len(data), "h0_resent": resent,
            "ack_to_resend_us": sorted(round(x * 1e6, 1) for x in lags),
            "h0_busy_share": round(busy / (t1 - t0), 4), "h0_idle_us": us(sum(gaps)),
            "h0_gaps_over_1us": sum(1 for g in gaps if g > 1e-6),
            "h0_acks_out": len(acks_h0), "h1_acks_out": len(acks_h1), "h1_data_frames": len(data_h1),
            "h1_last_data_us": us(data_h1[-1]["t"]) if data_h1 else None,
            "h0_new_data_with_ackreq": sum(r.get("ar", 0) for r in new),
            "new_kib_per_tenth": [round(b / 1024) for b in per_tenth]}


def main():
    from engine_goodput import run_arguments        # this script's directory is on sys.path
    p = run_arguments()
    p.add_argument("--dump", default=None)
    p.add_argument("--tx-outstanding", type=int, default=None,
                   help="the engine TX half's read commands outstanding (models.tx.SMALL's 16)")
    p.add_argument("--tx-frames-ahead", type=int, default=None,
                   help="the TX half's frame ids between the join and the frame builder (its "
                        "id FIFO, tx.id_depth: outstanding + 13): the frames committed ahead of the MAC")
    p.add_argument("--tx-kw", type=json.loads, default={},
                   help='the engine TX half\'s parameters over engine_tx_params\', JSON, e.g. \'{"conn_window": 25000}\'')
    p.add_argument("--no-reference", action="store_true")
    a = p.parse_args()
    if a.tx_kw:
        kw_of = cosim_engine.engine_kw
        cosim_engine.engine_kw = lambda c: {**kw_of(c), **a.tx_kw}
    if a.tx_frames_ahead is not None:
        from metaroce.models import tx
        tx.id_depth = lambda outstanding: a.tx_frames_ahead
    if a.tx_outstanding is not None:
        from metaroce.models import tx
        tx.SMALL["outstanding"] = a.tx_outstanding
    cfg = cosim.Config(**{**cosim.SCENARIOS[a.scenario][0], **cosim_tx.TX_CONFIG, "n_conns": 1,
                          "back": a.back, "nbytes": a.bytes, "loss": a.loss, "seed": a.seed})
    logs = {"engine": [], "reference": []}
    build = cosim_engine.build_fabric

    def tapped(which):
        def b(cfg_):
            fab = build(cfg_)
            tap(fab, logs[which])
            return fab
        return b
    from metaroce.models.engine import EngineModel, EnginePairModel
    cosim_engine.build_fabric = tapped("engine")
    if a.kind == "peer":
        drv = cosim_engine.PeerCosim(cfg, pair=True)
        m = EnginePairModel(cfg.width, **cosim_engine.engine_kw(cfg))
    else:
        drv = cosim_engine.EndpointCosim(cfg, a.direction)
        m = EngineModel(cfg.width, **cosim_engine.engine_kw(cfg))
    r = cosim.run_loop(drv, m, m.active).result()
    engs = getattr(m, "engines", None) or (m,)
    from metaroce.models.retransmit import CTR
    rtx = [{n: e.tx.rtx.counters[i] for n, i in CTR.items() if e.tx.rtx.counters[i]} for e in engs]
    cosim_engine.build_fabric = tapped("reference")
    writes, back = cosim_engine.reference_writes(cfg, a.kind, a.direction)
    out = {"scenario": a.scenario, "kind": a.kind, "direction": a.direction, "seed": a.seed,
           "tx_outstanding": a.tx_outstanding, "tx_frames_ahead": a.tx_frames_ahead,
           "tx_kw": a.tx_kw,
           "engine": {"goodput_vs_limit": r["goodput_vs_limit"], "rtx": rtx,
                      **summary(logs["engine"], r["sim_time_s"], cfg.link_bps)}}
    if not a.no_reference:
        ref = cosim_engine.run_reference_pair(cfg, writes, back)
        out["reference"] = {"goodput_vs_limit": ref["goodput_vs_limit"],
                            **summary(logs["reference"], ref["sim_time_s"], cfg.link_bps)}
    print(json.dumps(out, indent=1))
    if a.dump:
        os.makedirs(a.dump, exist_ok=True)
        for k, log in logs.items():
            with open(os.path.join(a.dump, k + ".jsonl"), "w") as f:
                for rec in log:
                    f.write(json.dumps(rec) + "\n")


if __name__ == "__main__":
    main()
