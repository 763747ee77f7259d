"""hintc46: the moves the control path makes and the cycles each answer takes (the update seen to
the release; docs/spec/hw-cwnd.md MR-CW-129, hw-tx.md MR-TX-515), in the cycle models (which the
RTL matches cycle for cycle): the block alone on ``test_cwnd_control``'s runs, and the TX with
the control path inside on MR-TX-496's directed run and its random runs.

    .venv/bin/python docs/hw/probes/cwnd_control_moves_46.py
"""
import statistics

from metaroce.models import cwnd_cases as cc
from metaroce.models import protocol as P
from metaroce.models import tx_hint_cases as hc
from metaroce.models.cwnd import SMALL, CwndModel
from metaroce.models.cwnd_control import CwndControlCycleModel, WindowsEnv
from metaroce.models.driver import run_alone
from metaroce.models.tx import SMALL as TX_SMALL, TxCycleModel

CFG = {"mtu": 1024, "beta_q": P.Q_ONE // 2, "cap": 60_000, "line_mbps": 100_000,
       "base_rtt_ns": 10_000}


def summary(name, cycles, moves, events, total):
    row = {"run": name, "events": events, "cycles": total,
           **{k: v for k, v in moves.items() if k != "cycles"}}
    for kind in ("move", "refill"):
        c = [n for k, n in cycles if k == kind]
        if c:
            row[f"{kind}_cycles"] = f"{min(c)}..{max(c)} (mean {statistics.mean(c):.0f})"
    print(row)


def block(params, seed, n):
    items = cc.traffic(CwndModel(**params, **CFG), n, seed=seed, hints=True)
    m = CwndControlCycleModel(64, **params, mtu=CFG["mtu"], line_mbps=CFG["line_mbps"],
                              base_rtt_ns=CFG["base_rtt_ns"])
    env = WindowsEnv(m.lay, items, CFG, seed=seed)
    run_alone(m, env)
    summary(f"block {params['conns']}x{params['paths']} seed {seed} n {n}", m.moves["cycles"],
            m.moves, sum(1 for k, _ in items if k == "ack"), env.cycle)


def tx(seed=None):
    model = TxCycleModel(64, **TX_SMALL, hints=True, control=True)
    if seed is None:
        drv, items = hc.make_driver(model)
    else:
        drv, items, _ = hc.random_driver(model, seed)
    run_alone(model, drv)
    loop = model.ctl.loop
    summary("tx directed" if seed is None else f"tx random seed {seed}", model.ctl.moves["cycles"],
            model.ctl.moves, sum(1 for k, _ in loop.items if k == "ack"), drv.cycle)


if __name__ == "__main__":
    block(SMALL, 6, 100)
    block(SMALL, 4, 300)
    block(dict(conns=8, paths=4), 5, 600)
    block(dict(conns=2, paths=8), 7, 600)
    tx()
    for s in (1, 2, 3, 5):
        tx(s)
