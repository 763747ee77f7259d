"""cap29 (hw-engine.md MR-ENG-280): do two engines at the default stay within each other's
message slots? Two EngineModels over the fabric (MR-ENG-138, WRITEs both ways) and the RX's
msg_slots counter (chunks beyond a stream's slots, NAKed before their PSN is accepted) of
each; prints the figures. Run: .venv/bin/python docs/hw/probes/cap29_tx_msgs.py [bytes] [loss]"""
import sys

from metaroce.models import cosim, cosim_tx
from metaroce.models import cosim_engine as ce
from metaroce.models.engine import EngineModel
from metaroce.models.rx import RxCode

nbytes = int(sys.argv[1]) if len(sys.argv) > 1 else 32 * 1024
loss = float(sys.argv[2]) if len(sys.argv) > 2 else 0.05
cfg = cosim.Config(**{**cosim_tx.TX_CONFIG, "n_conns": 1, "nbytes": nbytes, "loss": loss, "seed": 3,
                      "n_writes": 24})
sim = ce.PeerCosim(cfg)
m = EngineModel(cfg.width, **ce.engine_kw(cfg))
ce.run_loop(sim, m, m.active)
r = sim.result()
for name, eng in (("h1 (under test)", m), ("h0 (peer)", sim.peer_model)):
    c = eng.rx.rx.rx.counters
    print(name, {"msg_slots": c[RxCode.MSG_SLOTS], "accepted": c[RxCode.NONE] if hasattr(RxCode, "NONE") else None})
print({"ok": r["ok"], "cycles": r["cycles"], "bytes": nbytes, "loss": loss})
