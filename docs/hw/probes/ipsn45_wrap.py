"""ipsn45 (MR-TX-474..477): the figures of docs/hw/tx-results.md's ipsn45 section.

``unit``: the retransmit unit alone in the Amaranth simulator on ``retransmit_cases.traffic(
*SMALL, 150, seed=3, psn0=...)`` from 8 below 2^24 and from 0, with the modular compare and with
the plain one (MR-TX-477's control): mismatches, cycles, reports, counters.
``tx WIDTH SEED...``: the joined TX under Verilator (tb/tx.py ``tx_lockstep`` with
``TX_INIT_PSN=wrap``), one JSON row a seed.

    .venv/bin/python docs/hw/probes/ipsn45_wrap.py unit
    .venv/bin/python docs/hw/probes/ipsn45_wrap.py tx 64 1 2 3 4
"""
import sys


def unit():
    from metaroce.hdl.retransmit import Retransmit
    from metaroce.models import protocol as P
    from metaroce.models import retransmit_cases as rc
    from metaroce.models.retransmit import CTR, SMALL, RetransmitCycleModel
    from metaroce.tb.lockstep import Mismatch, run_amaranth
    for psn0, plain in ((P.PSN_MOD - 8, False), (P.PSN_MOD - 8, True), (0, True), (0, False)):
        items = rc.traffic(*SMALL, 150, seed=3, psn0=psn0)
        sent = [f["psn"] for k, f in items if k == "sent"]
        dut = Retransmit(64, conns=SMALL[0], paths=SMALL[1], pool=SMALL[2], psn_plain=plain)
        model = RetransmitCycleModel(64, *SMALL)
        drv = rc.Driver(model.lay, items, seed=3, p_idle=0.2, p_bp=0.4)
        try:
            core = run_amaranth(dut, model, drv, busy=model.busy)
            c = model.counters
            r = (f"mismatches {core.mismatches}, cycles {core.cycle}, acked {len(drv.res['acked'])}, "
                 f"resend {len(drv.res['resend'])}, acks {c[CTR['acks']]}, stale {c[CTR['acks_stale']]}, "
                 f"sent_bad {c[CTR['sent_bad']]}")
        except Mismatch as e:
            r = "MISMATCH " + str(e).splitlines()[0][:150]
        past = sum(p < 1000 for p in sent) if psn0 else 0
        print(f"psn0={psn0:#x} plain={plain}: {len(sent)} sent, {past} past the wrap; {r}")


def tx(width, *seeds):
    from metaroce import blocks
    from metaroce.sim import verilator as vl
    from metaroce.tb import build as tb_build
    b = tb_build.build(blocks.get("tx"), int(width))
    for seed in seeds:
        env = {"TX_WRS": "40", "TX_RSPS": "10", "TX_SEED": seed, "TX_MAXLEN": "2500",
               "TX_INIT_PSN": "wrap"}
        print(width, seed, vl.run_one(b, "metaroce.tb.tx", "tx_lockstep", env, out_var="TX_OUT"),
              flush=True)


if __name__ == "__main__":
    a = sys.argv[1:] or ["unit"]
    unit() if a[0] == "unit" else tx(*a[1:])
