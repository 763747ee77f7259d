"""Workload probe, not part of the design (rot45, MR-TX-485): the TX's model alone on
``tb/tx.py``'s ``tx_lockstep`` workload (``xc.traffic`` with the seed, 40 work requests, 10
READ responses, loss 0.15, as ``test_tx_rtl_lockstep`` drives it), with the retransmit unit's
health ages on (the default, MR-TX-207) or off: the tail probes the checker counts and the
unit's expiries (probe or timeout, at which ns). Shows why seed 1 has no probe at 512 bits: no
path is healthy at any expiry once the ages are on. Run from the repository root:

    nice -n 5 .venv/bin/python docs/hw/probes/rot45_probe_ages.py 512 1,15 [noages]"""
import sys

from metaroce.models import retransmit as rt
from metaroce.models import tx_cases as xc
from metaroce.models.tx import SMALL, TxCycleModel
from metaroce.models.tx_sched import TxSchedModel
from metaroce.tb.tx import _SCHED


def run(width, seed, ages=True):
    init = rt.RetransmitCycleModel.__init__

    def with_ages(self, *a, **k):
        init(self, *a, **dict(k, ages=ages))
    rt.RetransmitCycleModel.__init__ = with_ages
    try:
        sem = TxSchedModel(SMALL["conns"], SMALL["streams"], SMALL["paths"], SMALL["depth"],
                           **{k: SMALL[k] for k in _SCHED})
        items, lay = xc.traffic(sem, 40, seed=seed, max_len=2500)
        rsps = xc.responses(sem, 10, lay, seed=seed, max_len=2500)
        model = TxCycleModel(width, **SMALL)
        drv = xc.run_model(model, items, lay, xc.templates(SMALL["conns"], SMALL["paths"]),
                           seed=seed, p_idle=0.2, p_bp=0.3, loss=0.15, rsps=rsps)
        summ = xc.check(sem, items, drv, rsps)
    finally:
        rt.RetransmitCycleModel.__init__ = init
    exp = [(e[0], e[1], e[2], e[3]) for e in model.rtx.events if e[0] in ("probe", "timeout")]
    return {"width": width, "seed": seed, "ages": ages, "probes": summ["probes"],
            "resends": summ["retransmits"], "lost": drv.res["lost"],
            "expiries (kind, conn, path, ns)": exp}


if __name__ == "__main__":
    for s in map(int, sys.argv[2].split(",")):
        print(run(int(sys.argv[1]), s, ages="noages" not in sys.argv[3:]))
