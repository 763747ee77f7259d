"""ord28: figures of the runs whose endpoint bounds now come from the connection-open agreement
(MR-VERB-015, MR-ENG-254), to compare a tree before the agreement with one after: the same
figures mean the agreed values equal the ones set by hand before (MR-ENG-257).

    .venv/bin/python docs/hw/probes/ord28_unchanged.py

Prints one JSON line per run: the reference endpoint's traffic to the RX (rx_cases, with READs
and atomics both ways), the endpoint READing the engine (MR-ENG-157's 24 READs) and
MR-ENG-245's 12 READs against ``max_rd_atomic`` 2: cycles, frames and a digest of the
frames, ACKs and completions."""
import hashlib
import json

from metaroce.models import cosim, cosim_tx
from metaroce.models import cosim_engine as ce
from metaroce.models import rx_cases as rc
from metaroce.models.engine import EngineModel


def digest(x):
    return hashlib.sha256(repr(x).encode()).hexdigest()[:16]


def traffic(kw):
    s, tr = rc.endpoint_traffic(nbytes=16384, loss=0.05, reorder=0.2, dup=0.05, seed=3, **kw)
    return {"run": f"endpoint_traffic {sorted(kw)}", "cases": len(tr.cases),
            "digest": digest((tr.items, tr.acks, tr.cqes, tr.stats))}


def engine_reads(n, max_rd_atomic, msg_slots):
    cfg = cosim.Config(**{**cosim_tx.TX_CONFIG, "n_conns": 1, "nbytes": 512 * n, "loss": 0.0, "seed": 1,
                          "verb": "read", "back": 4, "n_writes": n})
    old = ce.RX_MSG_SLOTS
    ce.RX_MSG_SLOTS = msg_slots
    try:
        if hasattr(ce, "engine_offer"):       # after the agreement: the engine's offer
            sim = ce.EndpointCosim(cfg, "tx", offer=ce.engine_offer(max_rd_atomic, msg_slots))
        else:
            sim = ce.EndpointCosim(cfg, "tx")
    finally:
        ce.RX_MSG_SLOTS = old
    m = EngineModel(cfg.width, max_rd_atomic=max_rd_atomic, **ce.engine_kw(cfg))
    r = ce.run_loop(sim, m, m.busy).result()
    return {"run": f"engine {n} READs max_rd_atomic {max_rd_atomic} msg_slots {msg_slots}", "ok": r["ok"],
            "cycles": r["cycles"], "frames_out": r["engine"]["frames_out"], "frames_in": r["engine"]["frames_in"],
            "nak_rnr": sim.ep.stats["nak_rnr"], "ep_packets": sim.ep.stats["packets_sent"]}


if __name__ == "__main__":
    for kw in (dict(sends=0.5, reads=0.2, imm=0.3), dict(read_reqs=0.3, atomic_reqs=0.2, atomics=0.2, n_streams=2)):
        print(json.dumps(traffic(kw)))
    print(json.dumps(engine_reads(24, 8, 2)))
    print(json.dumps(engine_reads(12, 2, 3)))
