"""cocotb testbench of the joined TX engine (hdl/tx.py) against its cycle model (models/tx.py),
under Verilator (MR-TX-150).

The engine's one verification stack: traffic, driver (template writes, work requests, a host
memory on the AXI read port, the lossy receiver's ACKs back on ``s_ack``) and checker are
:mod:`metaroce.models.tx_cases` (shared with the model-only and Amaranth-simulator tests); the
comparison is the lockstep core of :mod:`metaroce.tb.lockstep` (every output every cycle).

``tx_lockstep``: ``TX_WRS`` random work requests (seed ``TX_SEED``, payloads up to ``TX_MAXLEN``
bytes) with bad ones, random idle cycles and backpressure on every output, random AXI read
latency, lost frames and their resends, ``TX_RSPS`` READ responses on ``s_rsp`` (default 10,
MR-TX-171), then the checker. The instance is the small one
(models.tx.SMALL); ``TX_ROWS=1`` for the block ``tx_rows`` (MR-TX-325); ``TX_INTERVAL=8`` for the
block ``tx_interval`` (MR-TX-456). Results to
``TX_OUT`` (JSON) if set.

``TX_INIT_PSN=wrap``: every path's initial PSN a few packets below 2^24 (MR-TX-475).

``tx_coverage`` (only with ``METAROCE_COVERAGE_OUT``): ``metaroce coverage tx`` (MR-TX-416).

``tx_bench``: the same engine without idle cycles or backpressure, one connection's work
requests of ``TX_BENCH_BYTES`` bytes each (one packet each) offered back to back, every packet
ACKed at once by a lossless receiver: packets, beats and ACKs per cycle over the run, the least
latency from a work request taken to its frame's first beat; then a random lockstep run for
its speed. Results to ``TX_BENCH_OUT``.
"""
from __future__ import annotations

import json
import os
import time

import cocotb

from metaroce.models import tx_cases as xc
from metaroce.models.tx import SMALL, TxCycleModel
from metaroce.models.tx_sched import TxSchedModel

from .lockstep import Lockstep, Mismatch, drive, model_port_lists

_SCHED = ("chunk_window", "mtu", "cwnd", "conn_window", "path_pkts", "ack_every", "resend_depth")


def _sem():
    return TxSchedModel(SMALL["conns"], SMALL["streams"], SMALL["paths"], SMALL["depth"],
                        **{k: SMALL[k] for k in _SCHED})


async def _harness(dut, width, *, first=True, stop_on_mismatch=True, **model_kw):
    """A fresh model (``TxCycleModel``'s options ``model_kw``) and the RTL reset (the clock
    started by the first call only)."""
    # MR-TXS-417, MR-TX-456: TX_INTERVAL, the build's frame interval (the block tx_interval: 8)
    model_kw.setdefault("interval", int(os.environ.get("TX_INTERVAL", "1")))
    model = TxCycleModel(width, **SMALL, **model_kw)
    ins, outs = model_port_lists(model)
    h = Lockstep(dut, model, ins, outs, stop_on_mismatch=stop_on_mismatch)
    for name in ins:
        getattr(dut, name).value = 0
    await h.start(monitor=False, start_clock=first)
    return model, h


def _width(dut):
    return len(dut.m_axis__tdata)


@cocotb.test()
async def tx_lockstep(dut):
    width = _width(dut)
    seed = int(os.environ.get("TX_SEED", "1"))
    # MR-TX-325: TX_ROWS=1 for the block tx_rows (the row scheduler's model)
    model, h = await _harness(dut, width, rows=os.environ.get("TX_ROWS", "0") == "1")
    sem = _sem()
    items, lay = xc.traffic(sem, int(os.environ.get("TX_WRS", "40")), seed=seed,
                            max_len=int(os.environ.get("TX_MAXLEN", "2500")))
    # MR-TX-171: READ responses on s_rsp among the work requests
    rsps = xc.responses(sem, int(os.environ.get("TX_RSPS", "10")), lay, seed=seed,
                        max_len=int(os.environ.get("TX_MAXLEN", "2500")))
    # MR-TX-475: TX_INIT_PSN=wrap, every path's initial PSN a few packets below 2^24 (written
    # on s_psn first), and one write per connection after the first frame (ignored, MR-TX-470)
    wrap = os.environ.get("TX_INIT_PSN", "") == "wrap"
    init = xc.near_wrap(SMALL["conns"], SMALL["paths"], seed) if wrap else None
    drv = xc.Driver(model.lay, width, items, lay, xc.templates(SMALL["conns"], SMALL["paths"]),
                    seed=seed, p_idle=0.2, p_bp=0.3, loss=0.15, rsps=rsps, init_psns=init,
                    late_psn=wrap)
    t0 = time.perf_counter()
    n = await drive(h, drv, busy=model.busy)
    wall = time.perf_counter() - t0
    summary = xc.check(sem, items, drv, rsps)
    assert h.mismatches == 0
    out = os.environ.get("TX_OUT")
    if out:
        with open(out, "w") as f:
            json.dump({"work_requests": len(items), "cycles": n, "frames": summary["frames"],
                       "retransmits": summary["retransmits"], "lost": drv.res["lost"],
                       "acks": drv.res["acks"], "timeouts": drv.res["timeouts"],
                       "completions": len(drv.res["cqe"]), "responses": len(rsps),
                       "rsp_done": len(drv.res["rsp_done"]),
                       # MR-TX-194: the atomics' frames (MR_CMP_SWAP, MR_FETCH_ADD)
                       "atomic_frames": sum(1 for f, _ in drv.res["emitted"]
                                            if f.bth.opcode in (0xC8, 0xC9)),
                       "probes": summary["probes"],                 # MR-TX-179
                       # MR-TX-475: frames past the wrap (PSN below 2^10 after a start near
                       # 2^24), their resends, the ignored writes (MR-TX-470)
                       **(xc.wrap_summary(drv) if wrap else {}),
                       "lockstep_cycles_per_s": round(n / wall) if wall else None,
                       "mismatches": h.mismatches}, f)


@cocotb.test()
async def tx_late_fail(dut):
    """MR-TXS-412, MR-TX-451/452 under Verilator: :func:`tx_cases.late_fail_batch` (400 ns a
    cycle: tail probes and resends of failing reads, a read error after its message completed
    and its slot was taken again): every output compared every cycle, then the checker (the
    next message completes with its own status). ``late`` counts the model's failures of a
    live slot of the other lap (ignored)."""
    width = _width(dut)
    model, h = await _harness(dut, width)
    late = xc.watch_late_fails(model.sched.sem)
    # the batch's seed and cycle time (default the test's; other values for sweeps,
    # docs/hw/probes/stale_sweep45.py)
    seed, ns = int(os.environ.get("TX_LATE_SEED", "6")), int(os.environ.get("TX_LATE_NS", "400"))
    items, rsps, drv = xc.late_fail_batch(_sem(), SMALL, model.lay, width, seed=seed,
                                          ns_per_cycle=ns)
    drv.sem = model.sched.sem
    drv.limit = int(os.environ.get("TX_LATE_LIMIT", drv.limit))
    stuck = None
    try:
        n = await drive(h, drv, busy=model.busy)
    except Mismatch:
        raise
    except AssertionError as e:         # the driver's progress limit (MR-TXS-447's liveness)
        stuck, n = str(e).splitlines()[0][:120], drv.cycle
    summary = xc.check(_sem(), items, drv, rsps) if stuck is None else {"frames": 0, "probes": 0}
    out = os.environ.get("TX_OUT")
    if out:
        with open(out, "w") as f:
            json.dump({"work_requests": len(items), "completions": len(drv.res["cqe"]),
                       "cycles": n, "frames": summary["frames"], "probes": summary["probes"],
                       "late": len(late), "mismatches": h.mismatches, "stuck": stuck}, f)
    assert h.mismatches == 0 and stuck is None, stuck


@cocotb.test()
async def tx_cc(dut):
    """MR-TX-107 under Verilator: the windows set up, every ACK of one path echoing CE (the
    directed run of tests/test_tx_cwnd.py): 0 mismatches, the marked path's window cut to its
    floor in the scheduler. Results to ``TX_OUT`` (JSON) if set."""
    from metaroce.models import protocol as P
    width = _width(dut)
    model, h = await _harness(dut, width)
    items, lay = xc.cc_work(SMALL)
    drv = xc.Driver(model.lay, width, items, lay, xc.templates(SMALL["conns"], SMALL["paths"]),
                    **xc.cc_driver_kw(SMALL))
    n = await drive(h, drv, busy=model.busy)
    assert h.mismatches == 0
    sched_w = [model.sched.sem.path[p]["cwnd"] for p in range(SMALL["paths"])]
    cw_w = [model.cwnd.sem.path[0][p]["cwnd"] for p in range(SMALL["paths"])]
    assert sched_w == cw_w and cw_w[1] == P.path_window_floor(SMALL["mtu"], SMALL["paths"])
    out = os.environ.get("TX_OUT")
    if out:
        with open(out, "w") as f:
            json.dump({"work_requests": len(items), "cycles": n, "frames": len(drv.res["frames"]),
                       "completions": len(drv.res["cqe"]), "windows": cw_w,
                       "mismatches": h.mismatches}, f)


#: MR-TX-270: the down-path run on the block's own instance (the default ``rto_ns``): connection
#: 0's windows opened with a share, 10 WRITEs of 16 KiB, each ACK 200 cycles after its frame,
#: path 1's route down from cycle 500 to 15,000 (long enough for its timeouts to make it
#: SUSPECT, and for its first probe's ACK after it to restore it)
VERDICTS_DOWN = {"n": 10, "length": 16384, "ack_delay": 200, "down": {(0, 1): (500, 15000)}}


def verdicts_down_driver(lay, width, seed=3):
    """MR-TX-270's work, host memory and driver (idle cycles 0.2, backpressure 0.3 on every
    output, random AXI latency)."""
    v = VERDICTS_DOWN
    items, wlay = xc.cc_work(SMALL, n=v["n"], length=v["length"])
    kw = xc.cc_driver_kw(SMALL, True, seed=seed)
    kw.update(ce_paths=set(), ack_delay=v["ack_delay"], p_idle=0.2, p_bp=0.3, down=v["down"])
    for s in kw["cw_setups"]:
        s["share"] = SMALL["cwnd"]
    return items, xc.Driver(lay, width, items, wlay, xc.templates(SMALL["conns"], SMALL["paths"]),
                            **kw)


def verdicts_random_driver(lay, width, seed=1):
    """MR-TX-262's random run (MR-TX-150's lossy traffic of both connections, 15 % loss, idle
    cycles and backpressure, both connections' windows set up with a share, ``cc_on``)."""
    from metaroce.models import protocol as P
    items, wlay = xc.traffic(_sem(), 30, seed=seed, max_len=4000)
    setups = [dict(x, share=SMALL["cwnd"]) for x in xc.cc_setups(SMALL, 0) + xc.cc_setups(SMALL, 1)]
    return items, xc.Driver(lay, width, items, wlay, xc.templates(SMALL["conns"], SMALL["paths"]),
                            seed=seed, loss=0.15, cw_setups=setups,
                            cc={"cc_on": 1, "cc_beta_q": P.Q_ONE, "cc_cap": xc.CC_CAP})


@cocotb.test()
async def tx_verdicts(dut):
    """MR-TX-269..271: the block ``tx_verdicts`` (``Tx(verdicts=True)``) against
    ``TxCycleModel(verdicts=True)`` under Verilator, every output every cycle: ``TX_VERDICTS_RUN``
    "down" (MR-TX-270's run) or "random" (MR-TX-262's). ``TX_RESTORES=0`` (MR-TX-271, the
    negative control): the model without the restores (the RTL keeps them); the run then stops
    at the first mismatch, which is reported rather than raised. Results to ``TX_OUT``."""
    width = _width(dut)
    run = os.environ.get("TX_VERDICTS_RUN", "down")
    restores = os.environ.get("TX_RESTORES", "1") == "1"
    model, h = await _harness(dut, width, verdicts=True, restores=restores)
    make = verdicts_down_driver if run == "down" else verdicts_random_driver
    items, drv = make(model.lay, width)
    row = {"run": run, "model_restores": restores, "work_requests": len(items)}
    t0 = time.perf_counter()
    try:
        n = await drive(h, drv, busy=model.busy)
    except Mismatch as e:
        if restores:
            raise
        row.update(mismatches=max(h.mismatches, 1), first_mismatch=e.cycle, signal=e.signal)
        n = None
    wall = time.perf_counter() - t0
    if n is not None:
        assert h.mismatches == 0
        if run == "random":
            xc.check(_sem(), items, drv)
        recs = [r for k, r in model.cw_log if k == "path"]
        cw, sched = model.cwnd.sem, model.sched.sem
        row.update(mismatches=h.mismatches, cycles=n, completions=len(drv.res["cqe"]),
                   frames=len(drv.res["frames"]), timeouts=drv.res["timeouts"],
                   verdicts=[[r["conn"], r["path"], r["verdict"]] for r in recs if not r["restore"]],
                   restores=[[r["conn"], r["path"]] for r in recs if r["restore"]],
                   # MR-TX-304: each verdict's health bits (the share-out's paths)
                   healthy=[r["healthy"] for r in recs if not r["restore"]],
                   active=[[p["active"] for p in cw.path[c]] for c in range(SMALL["conns"])],
                   windows=[[p["cwnd"] for p in cw.path[c]] for c in range(SMALL["conns"])],
                   wsum=[cw.conn[c]["wsum"] for c in range(SMALL["conns"])],
                   sched_windows=[p["cwnd"] for p in sched.path],
                   lockstep_cycles_per_s=round(n / wall) if wall else None)
    out = os.environ.get("TX_OUT")
    if out:
        with open(out, "w") as f:
            json.dump(row, f)


@cocotb.test(skip=os.environ.get("TX_HINTS") != "1")
async def tx_hints(dut):
    """MR-TX-497 under Verilator: ``Tx(hints=True)`` against ``TxCycleModel(hints=True)`` on
    MR-TX-496's run (``tx_hint_cases``: ``CwndControl`` in the loop through the control path's
    ports; ``TX_HINTS_RUN=random``: its random run), every output every cycle; then
    MR-TX-496's checks (and MR-TX-150's checker on the random run). Only with ``TX_HINTS=1`` (the
    build of a hinted instance). ``TX_HINT_DROPPED=1`` (the negative control): the model with
    the unit's hint dropped (the RTL keeps it); the first mismatch is reported rather than
    raised. Results to ``TX_OUT``. ``TX_CONTROL=1`` (MR-TX-513): the build and the model with the
    control path inside (``Tx(hints=True, control=True)``), whose loop is the model's own."""
    from metaroce.models import tx_hint_cases as hc
    width = _width(dut)
    dropped = os.environ.get("TX_HINT_DROPPED", "0") == "1"
    inside = os.environ.get("TX_CONTROL", "0") == "1"
    model, h = await _harness(dut, width, hints=True, hint_dropped=dropped, control=inside)
    # TX_HINTS_RUN "random": MR-TX-496's random run (seed TX_SEED), else the directed one
    rnd = os.environ.get("TX_HINTS_RUN", "directed") == "random"
    if rnd:
        drv, items, sem = hc.random_driver(model, int(os.environ.get("TX_SEED", "1")))
    else:
        drv, items = hc.make_driver(model)
    t0 = time.perf_counter()
    try:
        n = await drive(h, drv, busy=model.busy)
    except Mismatch as e:
        if not dropped:
            raise
        row = {"mismatches": max(h.mismatches, 1), "first_mismatch": e.cycle, "signal": e.signal}
        with open(os.environ["TX_OUT"], "w") as f:
            json.dump(row, f)
        return
    wall = time.perf_counter() - t0
    assert h.mismatches == 0
    if rnd:
        xc.check(sem, items, drv)
    cw, sched = model.cwnd.sem, model.sched.sem
    loop = model.ctl.loop if inside else drv.loop
    moves = ({k: v for k, v in model.ctl.moves.items() if k != "cycles"} if inside
             else drv.control.moves)
    row = {"run": "random" if rnd else "directed", "mismatches": h.mismatches, "cycles": n,
           "work_requests": len(items),
           "completions": len(drv.res["cqe"]), "equal": hc.check_hint_run(drv, loop=loop),
           "equal_unit": hc.check_hint_run(drv, unit_events=model.unit_events, loop=loop),
           "events": sum(1 for k, _ in loop.items if k == "ack"), **moves,
           # MR-TX-513: each answer's cycles, the update seen to the release
           "answer_cycles": model.ctl.moves["cycles"] if inside else None,
           "windows": [p["cwnd"] for p in cw.path[0]],
           "sched_windows": [sched.path[p]["cwnd"] for p in range(SMALL["paths"])],
           "lockstep_cycles_per_s": round(n / wall) if wall else None}
    out = os.environ.get("TX_OUT")
    if out:
        with open(out, "w") as f:
            json.dump(row, f)


@cocotb.test(skip=not os.environ.get("METAROCE_COVERAGE_OUT"))
async def tx_coverage(dut):
    """``metaroce coverage tx`` (MR-TX-416, MR-TX-417): one batch (``TX_COVERAGE_BATCH``) of
    :func:`~metaroce.models.tx_cases.coverage_batches` of one traffic shape
    (``METAROCE_COVERAGE_SHAPES``, tx_cases.SHAPES): ``TX_COVERAGE_WRS`` random work requests
    with one of every opcode and refusal, READ responses, losses, payload read errors, the
    extra ACK kinds; a dead connection's retry limit; the windows' waits. The command runs a
    simulation for each (the RTL's payload registers are not reset, so a second engine in one
    simulation would differ from a fresh model at once). Every output compared every cycle
    (mismatches counted, not raised); the
    checker and the counters after each; per shape the events of the functional bins
    (MR-TX-418, ``tx_cases.coverage_counts``) into ``METAROCE_COVERAGE_OUT`` (JSON). Line and
    toggle coverage come from Verilator's ``coverage.dat`` (a ``--coverage`` build)."""
    from collections import defaultdict
    width = _width(dut)
    seed = int(os.environ.get("COCOTB_RANDOM_SEED", "1"))
    n = int(os.environ.get("TX_COVERAGE_WRS", "20"))
    shapes = os.environ.get("METAROCE_COVERAGE_SHAPES", ",".join(xc.SHAPES)).split(",")
    # one batch a simulation: the RTL's payload registers keep their values through a reset
    # (the model's are 0), so a second engine in the same simulation differs at its cycle 0
    only = os.environ.get("TX_COVERAGE_BATCH")
    out = {"width": width, "shapes": {}, "problems": [], "mismatches": 0, "mismatch_reports": [],
           "cycles": 0, "batches": [], "counter_max": {}}
    lay = TxCycleModel(width, **SMALL).lay
    first = True
    for shape in shapes:
        counts = defaultdict(int)
        # MR-TX-457: TX_COVERAGE_WIDE=0 runs cov40's batches (the figures before cov43's)
        wide = os.environ.get("TX_COVERAGE_WIDE", "1") != "0"
        # MR-TX-478: TX_COVERAGE_PSN=0 starts every path at PSN 0 (the figures before ipsn45's)
        psn_wrap = wide and os.environ.get("TX_COVERAGE_PSN", "1") != "0"
        for name, items, rsps, drv in xc.coverage_batches(_sem(), SMALL, lay, width, shape, n,
                                                          seed=seed * 100 + xc.shape_index(shape),
                                                          wide=wide, psn_wrap=psn_wrap):
            if only and name != only:
                continue
            assert first, "one batch a simulation (TX_COVERAGE_BATCH, METAROCE_COVERAGE_SHAPES)"
            model, h = await _harness(dut, width, first=first, stop_on_mismatch=False)
            first = False
            drv.sem = model.sched.sem           # the window waits (MR-TX-418)
            where = f"{shape}/{name}"
            cycles = None
            try:
                cycles = await drive(h, drv, busy=model.busy)
            except Exception as e:          # no progress (after a mismatch, most likely)
                out["problems"].append(f"{where}: {str(e).splitlines()[0]}")
            out["mismatches"] += h.mismatch_cycles
            out["mismatch_reports"] += [f"{where}: {r}" for r in h.reports[:2]]
            out["cycles"] += cycles if cycles is not None else drv.cycle
            summary = {}
            if cycles is not None:
                try:
                    summary = xc.check(_sem(), items, drv, rsps)
                    xc.check_counters(drv, summary["probes"])
                except AssertionError as e:
                    out["problems"].append(f"{where}: {str(e).splitlines()[0]}")
            for key, v in xc.coverage_counts(model, drv, summary).items():
                counts[key] += v
            # MR-TX-419: the counters' largest values in a batch (the RTL is reset between
            # batches): the bits they can reach
            for unit, vals in (("rtx", model.rtx.counters), ("tx", model.counters)):
                top = out["counter_max"].setdefault(unit, [0] * len(vals))
                out["counter_max"][unit] = [max(a, b) for a, b in zip(top, vals)]
            out["batches"].append({"shape": shape, "batch": name, "work_requests": len(items),
                                   "responses": len(rsps), "cycles": cycles,
                                   "frames": len(drv.res["emitted"]), "mismatches": h.mismatch_cycles})
        out["shapes"][shape] = dict(counts)
    with open(os.environ["METAROCE_COVERAGE_OUT"], "w") as f:
        json.dump(out, f)


@cocotb.test()
async def tx_bench(dut):
    """MR-TX-153: ``metaroce bench tx --sim verilator``'s rows."""
    width = _width(dut)
    n = int(os.environ.get("TX_BENCH_PACKETS", "32"))
    rows = []
    for nbytes in [int(x) for x in os.environ.get("TX_BENCH_BYTES", "256").split(",")]:
        got = {}
        for kind, cls in (("run", xc.BenchDriver), ("acks", xc.AckBurstDriver)):
            model, h = await _harness(dut, width, first=not rows and kind == "run")
            drv = cls(model.lay, width, n, nbytes, paths=SMALL["paths"])
            t0 = time.perf_counter()
            cycles = await drive(h, drv, busy=model.busy)
            got[kind] = (drv.row(width, nbytes), cycles, time.perf_counter() - t0, h.mismatches)
        (r, cycles, wall, m1), (a, _, _, m2) = got["run"], got["acks"]
        rows.append({"width": width, "connections": SMALL["conns"], "paths": SMALL["paths"],
                     "pkt_bytes": nbytes, "same_path_burst": 1, "packets": r["packets"],
                     "packets_per_cycle": r["packets_per_cycle"],
                     "beats_per_cycle": r["beats_per_cycle"], "latency_cycles": r["latency_cycles"],
                     "acks_per_cycle": a["acks_per_cycle"],
                     "lockstep_cycles_per_s": round(cycles / wall) if wall else None,
                     "mismatches": m1 + m2, "sim": "verilator"})
    out = os.environ.get("TX_BENCH_OUT")
    if out:
        with open(out, "w") as f:
            json.dump({"rows": rows}, f)


@cocotb.test()
async def tx_replay(dut):
    """MR-TX-154: ``metaroce replay tx``: the work requests of ``METAROCE_REPLAY_PCAP`` (a JSON
    file, models.tx_cases.replay_inputs) and the ACK frames of ``METAROCE_REPLAY_TX_ACKS`` (a
    pcap, optional); results to ``METAROCE_REPLAY_OUT``."""
    from metaroce.models import pcap
    width = _width(dut)
    model = TxCycleModel(width, **SMALL)
    ins, outs = model_port_lists(model)
    h = Lockstep(dut, model, ins, outs, stop_on_mismatch=False)
    for name in ins:
        getattr(dut, name).value = 0
    await h.start(monitor=False)
    with open(os.environ["METAROCE_REPLAY_PCAP"]) as f:
        spec = json.load(f)
    ack_path = os.environ.get("METAROCE_REPLAY_TX_ACKS")
    frames = [r.data for r in pcap.read(ack_path)] if ack_path else []
    items, mem, image, tm, acks = xc.replay_inputs(spec, frames, model.lay, paths=SMALL["paths"])
    drv = xc.ReplayDriver(model.lay, width, items, mem, tm, acks, image=image,
                          seed=int(os.environ.get("METAROCE_REPLAY_SEED", "1")),
                          idle=float(os.environ.get("METAROCE_REPLAY_IDLE", "0")),
                          bp=float(os.environ.get("METAROCE_REPLAY_BACKPRESSURE", "0")))
    await drive(h, drv, busy=model.active)
    with open(os.environ["METAROCE_REPLAY_OUT"], "w") as f:
        json.dump(xc.replay_result(drv, h.mismatches, h.core.reports), f)
