"""hinteng47 (issues 12, 13; not part of the design): the rate hints acting in the whole engine
(hw-engine.md MR-ENG-325), on the models: two engines in MR-ENG-138's ``pod`` scenario without
loss, ``BYTES`` h0 -> h1, nothing back, ``Config.hints`` off, 0 and each ``HINT`` (h1's ACKs
carry it): goodput, and h0's windows (its TX half's updates, ``TxCycleModel.cw_updates``): the
rates they hold, the connection's window sum (``wsum``) mean and max over the updates, the
cycle of the last completion.

    nice -n 10 .venv/bin/python docs/hw/probes/engine_hints_act_47.py [BYTES [HINT ...]]
"""
import json
import sys

from metaroce.models import cosim, cosim_engine as ce, cosim_tx
from metaroce.models.cosim import run_loop
from metaroce.models.engine import EngineModel
from metaroce.models.rx import unpack

nbytes = int(sys.argv[1]) if len(sys.argv) > 1 else 65536
hints = [None, 0] + [int(h) for h in sys.argv[2:]] if len(sys.argv) > 2 else [None, 0, 5000, 2500]
over, _ = cosim.SCENARIOS["pod"]
for h in hints:
    cfg = cosim.Config(**{**over, **cosim_tx.TX_CONFIG, "n_conns": 1, "nbytes": nbytes, "loss": 0.0,
                          "seed": 1, "back": 0, "hints": h})
    d = ce.PeerCosim(cfg)
    m = EngineModel(cfg.width, **ce.engine_kw(cfg))
    r = run_loop(d, m, m.active).result()
    row = {"hints": h, "ok": r["ok"], "goodput_vs_limit": r["goodput_vs_limit"],
           "goodput_gbps": r["goodput_gbps"], "cycles": r["cycles"]}
    tx = d.peer_model.tx            # h0, the sender
    if h is not None:
        ups = [unpack(tx.lay.cw.update, u) for u in tx.cw_updates]
        ws = [u["wsum"] for u in ups]
        row.update(updates=len(ups), rates=sorted({u["rate"] for u in ups}),
                   wsum_mean=round(sum(ws) / len(ws)), wsum_max=max(ws),
                   hints_in=r["engines"]["h0"]["hints_in"])
    print(json.dumps(row), flush=True)
