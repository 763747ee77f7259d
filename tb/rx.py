"""cocotb testbench of the RX engine (hdl/rx.py) against its cycle model (models/rx.py), under
Verilator (MR-RX-070).

The RX block's one verification stack: setup, cases, driver and checker are
:mod:`metaroce.models.rx_cases` (shared with the model-only and Amaranth-simulator tests), the
comparison is the lockstep core of :mod:`metaroce.tb.lockstep` (:func:`drive`: every output
compared every cycle).

cocotb tests here:

``rx_bench`` (only with ``RX_BENCH_OUT``)
    ``metaroce bench rx``: packets and payload beats per cycle and ACK latency of same-path
    bursts per payload size, and the lockstep speed.
``rx_lockstep``
    the window, bad-input, SEND, READ-response, READ-request, atomic and burst cases plus ``RX_RANDOM`` random
    packets (seed ``RX_SEED``)
    with random idle cycles and backpressure on every output, then the checker; then a
    same-path burst without idle or backpressure, which must be taken at one record per cycle,
    and :func:`~metaroce.models.rx_cases.own_write_cases` likewise (MR-RX-117, MR-RX-120, MR-RX-121);
    then the delayed-ACK timer on, timed bursts, the ACK stream against the endpoint's.
    Results (cycles, packets per cycle, lockstep speed, outcomes) to ``RX_OUT`` (JSON) if set.

``rx_replay`` (only with ``METAROCE_REPLAY_PCAP``)
    ``metaroce replay rx FILE.pcap`` (MR-RX-072).
``rx_coverage`` (only with ``METAROCE_COVERAGE_OUT``)
    ``metaroce coverage rx`` (MR-RX-073): the coverage suite and the endpoint's traffic (with
    SENDs and READs) per traffic shape, a delayed-ACK timer batch; per-record outcomes for the
    functional bins.
``rx_endpoint_traffic`` (only with ``RX_TRAFFIC_OUT``)
    MR-RX-071: the frames a reference endpoint received from another over the model fabric
    (``RX_TRAFFIC_BYTES``, faults ``RX_TRAFFIC_LOSS``/``_REORDER``/``_DUP``, ``RX_TRAFFIC_HOSTILE``
    forged writes, seed ``RX_SEED``; SENDs, READs and receives posted late by
    ``RX_TRAFFIC_SENDS``/``_READS``/``_IMM``/``_RECV_DELAY``/``_STREAMS``/``_WRITES``),
    through the parser's golden model, with random idle cycles and backpressure; the RTL's
    placements, ACK/NAK requests and completion records against the receiving endpoint's
    memory, ACK frames and completions.
    Results to ``RX_TRAFFIC_OUT`` (JSON).

Instance: ``RX_CONNS``, ``RX_PATHS``, ``RX_KEYS``, ``RX_STREAMS`` (default ``models.rx.SMALL``:
256 x 4, 256 keys, 4 streams).
"""
from __future__ import annotations

import json
import os
import time

import cocotb

from metaroce.models import rx_cases as rc
from metaroce.models.parser import unpack_meta
from metaroce.models.rx import SMALL, RxCode, RxCycleModel, unpack

from .lockstep import Lockstep, drive, model_port_lists


def _instance():
    """The instance from ``RX_CONNS``/``_PATHS``/``_KEYS``/``_STREAMS`` (default ``SMALL``)."""
    return tuple(int(os.environ.get(f"RX_{k.upper()}", SMALL[k])) for k in ("conns", "paths", "keys", "streams"))


def _traffic_mix():
    """The endpoint traffic's mix (MR-RX-105, MR-RX-113, MR-RX-133) from ``RX_TRAFFIC_SENDS``/
    ``_READS``/``_READ_REQS``/``_ATOMICS``/``_ATOMIC_REQS``/``_IMM`` (fractions of the messages, MR-RX-157),
    ``RX_TRAFFIC_RECV_DELAY`` (s before the first
    receives: RNR NAKs) and ``RX_TRAFFIC_STREAMS`` (streams of every connection)."""
    env = os.environ.get
    mix = {k: float(env(f"RX_TRAFFIC_{k.upper()}", "0"))
           for k in ("sends", "reads", "imm", "recv_delay", "read_reqs", "atomics", "atomic_reqs")}
    if env("RX_TRAFFIC_STREAMS"):
        mix["n_streams"] = int(env("RX_TRAFFIC_STREAMS"))
    if env("RX_TRAFFIC_WRITES"):
        mix["n_writes"] = int(env("RX_TRAFFIC_WRITES"))
    return mix


async def _batch(h, model, batches, setup, cases, **kw):
    """One batch of ``batches`` (:class:`~metaroce.models.rx_cases.Batches`) in lockstep;
    returns its driver, counters of this batch only."""
    drv = batches.driver(setup, cases, **kw)
    await drive(h, drv, busy=model.busy)
    return batches.counted(drv)


async def _timer_batch(h, model, batches, seed, *, conns, paths, keys, streams, n_conns=6):
    """MR-RX-090..094: the delayed-ACK timer on (``ack_every`` 4, 100 cycles), timed bursts
    separated by idle gaps with idle cycles and backpressure, as the next of ``batches``;
    returns whether the ACK stream equals the reference endpoint's with the same delay (the
    timer's ACKs in the gaps included)."""
    cycle, delay = 6.4e-9, 100
    ep, s = rc.endpoint_setup(conns, paths, keys, streams=streams, seed=seed, ack_delay_cycles=delay,
                              ack_delay=delay * cycle, n_conns=n_conns)
    bursts = rc.timed_bursts(s, 3, 8, gap=260, seed=seed)
    drv = await _batch(h, model, batches, s, bursts, seed=seed, p_idle=0.1, p_bp=0.3)
    return rc.requests(s, drv.res["ack"]) == rc.endpoint_reference_timed(ep, s, bursts, cycle)


def _special_run():
    return any(os.environ.get(k) for k in ("RX_BENCH_OUT", "RX_TRAFFIC_OUT", "METAROCE_REPLAY_PCAP",
                                            "METAROCE_COVERAGE_OUT", "RX_MAX_RD_ATOMIC", "RX_INTERVAL_OUT"))


def interval_batches(s, n_random):
    """MR-RX-321: the batches of :func:`rx_interval` on setup ``s`` (one connection): (cases,
    p_idle, p_bp, quiet_cfg) each. The classes with idle cycles and backpressure; then without
    either, back to back on one path (the gate spaces them), MR-RX-117's records at distances 1
    to 3 with a path write among them, S4's own writes, slides and filled gaps (holds), the
    serial hold's boundary runs (MR-RX-330)."""
    c0 = s.conns[0]
    mixed = (rc.stream_bound_cases(s) + rc.window_cases(s)
             # the one connection's instance has no free row (connection 0 is never opened)
             + [c for c in rc.bad_cases(s) if getattr(c, "name", "") != "no-conn-row"]
             + rc.message_cases(s, stream=0) + rc.slot_cases(s, stream=0)
             + rc.send_cases(s, stream=min(1, c0.n_streams - 1)) + rc.read_cases(s, stream=min(2, c0.n_streams - 1))
             + rc.read_request_cases(s) + rc.atomic_request_cases(s, stream=c0.n_streams - 1)
             + rc.atomic_response_cases(s, stream=min(2, c0.n_streams - 1))
             + rc.random_atomics(s, 10, conns=(0,)) + rc.random_read_requests(s, 10)
             + rc.random_traffic(s, n_random))
    mixed = rc.within_slots(s, mixed)
    b2b = rc.burst_same_path(s, 64, plen=9)
    near = (rc.path_forward_cases(s, rounds=2) + rc.own_write_cases(s)
            + rc.burst_slow(s, 12) + rc.burst_slow(s, 12, kind="fill")
            + rc.message_cases(s, stream=0) + rc.read_cases(s, stream=min(2, c0.n_streams - 1)))
    near = rc.within_slots(s, [s.key_write(k) for k in s.keys] + near, before=mixed + b2b)
    # MR-RX-330: runs and bases at the serial hold's piece boundaries (SACKs sent as packets: the
    # engine's path writes carry none), with idle cycles and backpressure
    serial = rc.within_slots(s, rc.serial_hold_cases(s, by_packets=True), before=mixed + b2b + near)
    return [(mixed, 0.2, 0.4, True), (b2b, 0.0, 0.0, True), (near, 0.0, 0.0, False), (serial, 0.1, 0.3, True)]


async def _harness(dut, conns, paths, keys, streams, *, stop_on_mismatch=True):
    width = (len(dut.s_payload__payload) - 1) * 8 // 9
    model = RxCycleModel(width, conns, paths, keys, streams=streams)
    ins, outs = model_port_lists(model)
    h = Lockstep(dut, model, ins, outs, stop_on_mismatch=stop_on_mismatch)
    for name in ins:
        getattr(dut, name).value = 0
    await h.start(monitor=False)
    return width, model, h


@cocotb.test(skip=not os.environ.get("METAROCE_REPLAY_PCAP"))
async def rx_replay(dut):
    """``metaroce replay rx FILE.pcap`` (MR-RX-072): the capture's frames through the parser's
    golden model into the RTL, configured by ``METAROCE_REPLAY_RX_CONFIG`` (the explicit JSON
    configuration), in lockstep with the model, counting (not raising on) mismatches; the
    collected outputs and counters checked against the model one packet at a time. Results to
    ``METAROCE_REPLAY_OUT`` (JSON)."""
    from metaroce.models import pcap
    conns, paths, keys, streams = _instance()
    width, model, h = await _harness(dut, conns, paths, keys, streams, stop_on_mismatch=False)
    records = pcap.read(os.environ["METAROCE_REPLAY_PCAP"])
    with open(os.environ["METAROCE_REPLAY_RX_CONFIG"]) as f:
        cfg = json.load(f)
    _, items, _ = rc.replay_items([r.data for r in records], model.lay, cfg)
    drv = rc.Driver(width, items, model.lay.cfg, seed=int(os.environ.get("COCOTB_RANDOM_SEED", "1")),
                    p_idle=float(os.environ.get("METAROCE_REPLAY_IDLE", "0")),
                    p_bp=float(os.environ.get("METAROCE_REPLAY_BACKPRESSURE", "0")))
    t0 = time.perf_counter()
    n = await drive(h, drv, busy=model.busy)
    wall = time.perf_counter() - t0
    problems = []
    try:
        rc.check(items, drv.res, conns, paths, keys, streams)
    except AssertionError as e:
        problems.append(str(e).splitlines()[0])
    res = drv.res
    with open(os.environ["METAROCE_REPLAY_OUT"], "w") as f:
        json.dump({"mismatches": h.mismatch_cycles, "mismatch_reports": h.reports[:3],
                   "problems": problems, "cycles": n, "wall_s": wall,
                   "records": len(res["meta_taken"]), "requests": len(res["ack"]),
                   "placements": len(res["place"]), "counters": res["counters"]}, f)


@cocotb.test(skip=not os.environ.get("METAROCE_COVERAGE_OUT"))
async def rx_coverage(dut):
    """``metaroce coverage rx`` (MR-RX-073): per traffic shape (``METAROCE_COVERAGE_SHAPES``,
    rx_cases.SHAPES), one batch of :func:`~metaroce.models.rx_cases.coverage_suite` and one of
    the reference endpoint's traffic (WRITEs, WRITE_IMMs, SENDs with receives posted late,
    READ responses), each on its own setup (the previous one torn down through ``s_cfg``),
    every output compared every cycle; then a delayed-ACK timer batch (MR-RX-090..094); per-record outcome and opcode class
    into ``METAROCE_COVERAGE_OUT`` (JSON) for the functional bins; then, per output, a
    same-path burst with that output stalled 97 % of the cycles, so that its queue fills. Line and toggle
    coverage come from Verilator's ``coverage.dat`` (a ``--coverage`` build)."""
    conns, paths, keys, streams = _instance()
    width, model, h = await _harness(dut, conns, paths, keys, streams, stop_on_mismatch=False)
    seed = int(os.environ.get("COCOTB_RANDOM_SEED", "1"))
    n_random = int(os.environ.get("RX_RANDOM", "150"))
    shapes = os.environ.get("METAROCE_COVERAGE_SHAPES", "none,idle,bp,both").split(",")
    out = {"width": width, "shapes": {}, "problems": [], "counts": [0] * len(RxCode)}
    batches = rc.Batches(width)
    for k, shape in enumerate(shapes):
        p_idle, p_bp = rc.SHAPES[shape]
        s = rc.Setup(conns, paths, keys, streams=streams, seed=seed * 100 + k)
        s2, tr = rc.endpoint_traffic(conns, paths, keys, streams=streams, nbytes=8192, loss=0.05, reorder=0.2, dup=0.05,
                                     seed=seed * 100 + k, hostile=10, imm=0.5, sends=0.4, reads=0.3,
                                     recv_delay=3e-5)
        points = []
        for setup, cases in ((s, rc.coverage_suite(s, n_random)), (s2, tr.items)):
            drv = await _batch(h, model, batches, setup, cases, seed=seed * 1000 + k, p_idle=p_idle, p_bp=p_bp)
            items = drv.items
            try:
                exp = rc.check(items, drv.res, conns, paths, keys, streams, place_base=drv.place_base)
            except AssertionError as e:
                out["problems"].append(f"{shape}: {str(e).splitlines()[0]}")
                exp = rc.expected(items, conns, paths, keys, streams, place_base=drv.place_base)
            recs = [c for c in items if isinstance(c, rc.Case)]
            points += [{"code": o.code.name.lower(), "class": rc.opcode_class(c)}
                       for c, o in zip(recs, exp["outcomes"])]
        out["shapes"][shape] = points
    # the delayed-ACK timer (its queue, the generations; no per-record outcomes: not binned)
    equal = await _timer_batch(h, model, batches, seed * 100 + 80,
                               conns=conns, paths=paths, keys=keys, streams=streams)
    if not equal:
        out["problems"].append("timer: the ACK stream differs from the endpoint's")
    # one output stalled for long stretches, the others ready: each output queue fills (MR-RX-041)
    outs = ("m_ack__ready", "m_place__ready", "m_data__ready")
    for j, stalled in enumerate(outs):
        s = rc.Setup(conns, paths, keys, streams=streams, seed=seed * 100 + 90 + j, ack_every=1)
        p_bp = dict.fromkeys(outs, 0.0)
        p_bp[stalled] = 0.97
        drv = await _batch(h, model, batches, s, rc.burst_same_path(s, 48, plen=9),
                           seed=seed * 1000 + 90 + j, p_idle=0.0, p_bp=p_bp)
        try:
            rc.check(drv.items, drv.res, conns, paths, keys, streams, place_base=drv.place_base)
        except AssertionError as e:
            out["problems"].append(f"stall {stalled}: {str(e).splitlines()[0]}")
    out["counts"] = batches.before
    out["placed_bound"] = batches.placed_bound      # MR-RX-222: the placed-bytes exclusion
    out["read_placed_bound"] = batches.read_placed_bound    # MR-RX-226, MR-RX-229
    out["mismatches"] = h.mismatch_cycles
    out["mismatch_reports"] = h.reports[:3]
    out["cycles"] = h.cycle
    with open(os.environ["METAROCE_COVERAGE_OUT"], "w") as f:
        json.dump(out, f)


@cocotb.test(skip=not os.environ.get("RX_TRAFFIC_OUT"))
async def rx_endpoint_traffic(dut):
    """MR-RX-071: the reference endpoint's real traffic, RTL in lockstep with the model, then
    the RTL's memory image and ACK/NAK stream against the receiving endpoint's."""
    conns, paths, keys, streams = _instance()
    seed = int(os.environ.get("RX_SEED", "1"))
    width, model, h = await _harness(dut, conns, paths, keys, streams)
    s, tr = rc.endpoint_traffic(conns, paths, keys, streams=streams, nbytes=int(os.environ.get("RX_TRAFFIC_BYTES", "32768")),
                                loss=float(os.environ.get("RX_TRAFFIC_LOSS", "0.05")),
                                reorder=float(os.environ.get("RX_TRAFFIC_REORDER", "0.2")),
                                dup=float(os.environ.get("RX_TRAFFIC_DUP", "0.05")), seed=seed,
                                hostile=int(os.environ.get("RX_TRAFFIC_HOSTILE", "0")),
                                **_traffic_mix())
    items = s.writes + tr.items
    drv = rc.Driver(width, items, s.lay.cfg, seed=seed, p_idle=0.2, p_bp=0.4)
    t0 = time.perf_counter()
    n = await drive(h, drv, busy=model.busy)
    wall = time.perf_counter() - t0
    exp = rc.check(items, drv.res, conns, paths, keys, streams)
    acks_equal = rc.requests(s, drv.res["ack"]) == tr.acks
    # MR-RX-157: the placements, then the atomics executed in the RTL's item order with its operands
    memory, origs = rc.apply_atomics(s, rc.memory_image(s, drv.res["place"], drv.res["data"]), drv.res["atom"])
    memory_equal = memory == tr.memory
    atoms_equal = (rc.atomics(s, drv.res["atom"]) == [a[:6] for a in tr.atoms]
                   and origs == [a[7] for a in tr.atoms])
    cqes_equal = rc.same_completions(rc.completions(s, drv.res["cqe"]), tr.cqes)
    # MR-RX-133: the READ requests executed, against the ones the receiving endpoint executed
    rsps_equal = rc.responses(s, drv.res["rsp"]) == tr.rsps
    with open(os.environ["RX_TRAFFIC_OUT"], "w") as f:
        json.dump({"width": width, "frames": len(tr.cases), "cycles": n,
                   "lockstep_cycles_per_s": round(n / wall) if wall else None,
                   "mismatches": h.mismatches, "acks_equal": acks_equal, "memory_equal": memory_equal,
                   "completions_equal": cqes_equal, "completions": len(drv.res["cqe"]),
                   "responses_equal": rsps_equal, "responses": len(drv.res["rsp"]),
                   "atomics_equal": atoms_equal, "atomics": len(drv.res["atom"]),
                   "endpoint_acks": len(tr.acks), "rtl_requests": len(drv.res["ack"]),
                   "outcomes": {c.name: sum(1 for o in exp["outcomes"] if o.code == c) for c in RxCode},
                   "traffic": tr.stats}, f)
    assert h.mismatches == 0 and acks_equal and memory_equal and cqes_equal and rsps_equal and atoms_equal


@cocotb.test(skip=_special_run())
async def rx_lockstep(dut):
    conns, paths, keys, streams = _instance()
    width = (len(dut.s_payload__payload) - 1) * 8 // 9
    seed = int(os.environ.get("RX_SEED", "1"))
    model = RxCycleModel(width, conns, paths, keys, streams=streams)
    ins, outs = model_port_lists(model)
    h = Lockstep(dut, model, ins, outs)
    for name in ins:
        getattr(dut, name).value = 0
    await h.start(monitor=False)

    s = rc.Setup(conns, paths, keys, streams=streams, seed=seed)
    # SENDs and READ responses (MR-RX-100..105, MR-RX-110..113: RNR, RECV_BOUNDS, NO_READ, LENGTH,
    # stale and duplicate chunks) on two connections, before the random mix that shares their streams
    # READ requests (MR-RX-126..133): the cases on one connection, random ones on every one
    cases = (rc.stream_bound_cases(s) + rc.window_cases(s) + rc.bad_cases(s) + rc.send_cases(s, conn=1) + rc.read_cases(s, conn=1)
             + rc.send_cases(s, conn=2) + rc.read_cases(s, conn=3) + rc.burst_same_path(s, 16, plen=9)
             + rc.read_request_cases(s, conn=4) + rc.random_read_requests(s, 30)
             # atomics (MR-RX-151..161): requests on a stream of their own, responses beside READs'
             + rc.atomic_request_cases(s, conn=4, stream=s.conns[4].n_streams - 1)
             + rc.atomic_response_cases(s, conn=2, stream=s.conns[2].n_streams - 1)
             + rc.random_atomics(s, 20, conns=(4, 5))
             + rc.random_traffic(s, int(os.environ.get("RX_RANDOM", "400"))))
    cases = rc.within_slots(s, cases)       # MR-RX-183: a sender within the message slots
    drv = rc.make_driver(width, s, cases, seed=seed, p_idle=0.2, p_bp=0.4)
    t0 = time.perf_counter()
    n1 = await drive(h, drv, busy=model.busy)
    wall = time.perf_counter() - t0
    exp = rc.check(s.writes + cases, drv.res, conns, paths, keys, streams)

    # MR-RX-043: back-to-back records of one path, no idle cycles, outputs always ready
    # (the random traffic may have revoked the burst's key: the slow path writes it again)
    burst = rc.burst_same_path(s, 200)
    # MR-RX-183: the stream reopened first if the random traffic left it beyond its slots
    burst_items = rc.within_slots(s, [s.key_write(k) for k in s.keys] + burst, before=cases)
    drv2 = rc.Driver(width, burst_items, s.lay.cfg, seed=seed + 1, p_idle=0.0, p_bp=0.0)
    n2 = await drive(h, drv2, busy=model.busy)
    taken = drv2.res["meta_taken"]
    assert len(taken) == 200 and taken[-1] - taken[0] == 199, "not one record per cycle"
    before = drv.res["counters"][RxCode.ACCEPTED]
    assert drv2.res["counters"][RxCode.ACCEPTED] == before + 200
    # MR-RX-117, MR-RX-120, MR-RX-121: records of one path back to back that need S4's own write of the
    # cycle before (duplicates at distance 1, high and cum moved, the count test, slow updates)
    own = rc.own_write_cases(s)
    own_items = rc.within_slots(s, [s.key_write(k) for k in s.keys] + own, before=cases + burst_items)
    drv3 = rc.Driver(width, own_items, s.lay.cfg, seed=seed + 3, p_idle=0.0, p_bp=0.0)
    await drive(h, drv3, busy=model.busy)
    n_dup = sum(1 for c in own if c.expect == RxCode.DUPLICATE)
    assert drv3.res["counters"][RxCode.DUPLICATE] == drv2.res["counters"][RxCode.DUPLICATE] + n_dup
    assert drv3.res["counters"][RxCode.ACCEPTED] == drv2.res["counters"][RxCode.ACCEPTED] + len(own) - n_dup
    # MR-RX-093/094: the delayed-ACK timer's events in the pipeline
    timer_acks_equal = await _timer_batch(h, model, rc.Batches(width, prev=s.teardown()), seed + 2,
                                          conns=conns, paths=paths, keys=keys, streams=streams)
    assert h.mismatches == 0 and timer_acks_equal
    out = os.environ.get("RX_OUT")
    if out:
        with open(out, "w") as f:
            json.dump({"width": width, "connections": conns, "paths": paths,
                       "random_cycles": n1, "burst_cycles": n2, "packets": len(cases) + len(burst) + len(own),
                       "same_path_burst": 200,
                       "packets_per_cycle": round(len(taken) / (taken[-1] - taken[0] + 1), 3),
                       "lockstep_cycles_per_s": round(n1 / wall) if wall else None,
                       "outcomes": {c.name: sum(1 for o in exp["outcomes"] if o.code == c) for c in RxCode},
                       "completions": len(drv.res["cqe"]), "responses": len(drv.res["rsp"]),
                       "atomics": len(drv.res["atom"]),
                       "timer_acks_equal": timer_acks_equal,
                       "mismatches": h.mismatches}, f)


@cocotb.test(skip=not os.environ.get("RX_INTERVAL_OUT"))
async def rx_interval(dut):
    """MR-RX-321: the RX as the engine builds it (block ``rx_engine``: 2 x 4, chunk window 32,
    the responder bound, the frame interval ``RX_INTERVAL``, 8 at 64 bits) in lockstep with
    its model at that interval on :func:`interval_batches` (seed ``RX_SEED``, ``RX_RANDOM``
    random packets; the generators share the one connection, so the outcomes are the model's,
    not the ones the cases were built for); the back-to-back burst taken one record every
    ``interval`` cycles exactly; then the delayed-ACK timer's batch. Figures to
    ``RX_INTERVAL_OUT`` (JSON)."""
    from metaroce.models.engine import rx_model_of_engine
    interval = int(os.environ.get("RX_INTERVAL", "8"))
    width = (len(dut.s_payload__payload) - 1) * 8 // 9
    seed = int(os.environ.get("RX_SEED", "1"))
    model = rx_model_of_engine(width, interval)
    lay = model.lay
    ins, outs = model_port_lists(model)
    h = Lockstep(dut, model, ins, outs)
    for name in ins:
        getattr(dut, name).value = 0
    await h.start(monitor=False)
    s = rc.Setup(lay.conns, lay.paths, lay.keys, streams=lay.streams, seed=seed, n_conns=1)
    cycles, spacing, counters = 0, None, None
    for i, (items, p_idle, p_bp, quiet) in enumerate(interval_batches(s, int(os.environ.get("RX_RANDOM", "300")))):
        drv = rc.Driver(width, (s.writes if i == 0 else []) + items, lay.cfg, seed=seed + i, p_idle=p_idle,
                        p_bp=p_bp, quiet_cfg=quiet)
        cycles += await drive(h, drv, busy=model.busy)
        counters = drv.res["counters"]
        if i == 1:
            taken = drv.res["meta_taken"]
            spacing = sorted({b - a for a, b in zip(taken, taken[1:])})
    timer_acks_equal = await _timer_batch(h, model, rc.Batches(width, prev=s.teardown()), seed + 7,
                                          conns=lay.conns, paths=lay.paths, keys=lay.keys, streams=lay.streams,
                                          n_conns=1)
    with open(os.environ["RX_INTERVAL_OUT"], "w") as f:
        json.dump({"width": width, "interval": interval, "cycles": cycles, "burst_spacing": spacing,
                   "outcomes": {c.name: n for c, n in zip(RxCode, counters) if n},
                   "timer_acks_equal": timer_acks_equal, "mismatches": h.mismatches}, f)
    assert h.mismatches == 0 and spacing == [interval] and timer_acks_equal


@cocotb.test(skip=not os.environ.get("RX_MAX_RD_ATOMIC"))
async def rx_resources(dut):
    """MR-RX-192: an instance built with ``max_rd_atomic`` (``RX_MAX_RD_ATOMIC``, the block
    ``rx_256x4_rsc``) in lockstep with the cycle model with that bound, idle cycles 0.2 and
    backpressure 0.4, then back to back: the resource cases (RNR NAKs, frees through table
    7, the resends accepted) and random READ and atomic requests with frees among them; the
    outputs and counters checked against the packet model. Figures to ``RX_OUT`` (JSON)."""
    conns, paths, keys, streams = _instance()
    bound = int(os.environ["RX_MAX_RD_ATOMIC"])
    width = (len(dut.s_payload__payload) - 1) * 8 // 9
    seed = int(os.environ.get("RX_SEED", "1"))
    model = RxCycleModel(width, conns, paths, keys, streams=streams, max_rd_atomic=bound)
    ins, outs = model_port_lists(model)
    h = Lockstep(dut, model, ins, outs)
    for name in ins:
        getattr(dut, name).value = 0
    await h.start(monitor=False)
    s = rc.Setup(conns, paths, keys, streams=streams, seed=seed, n_streams=1)
    cases = [c for r in range(3) for c in rc.resource_cases(s, conn=r % 2)]
    cases += rc.random_resource_traffic(s, int(os.environ.get("RX_RANDOM", "60")), p_free=0.1)
    rnr = 0
    batches = rc.Batches(width)
    # the second batch (the same cases after the setup's teardown) first frees whatever the
    # first left taken: the count table is not the slow path's to reset (MR-RX-189)
    drain = [rc.rsp_free(c, 0, 0) for c in s.conns for _ in range(bound)]
    for items, p_idle, p_bp in ((cases, 0.2, 0.4), (drain + cases, 0.0, 0.0)):
        drv = await _batch(h, model, batches, s, items, seed=seed, p_idle=p_idle, p_bp=p_bp)
        exp = rc.check(s.writes + items, drv.res, conns, paths, keys, streams, max_rd_atomic=bound,
                       place_base=drv.place_base)
        rnr += exp["counters"][RxCode.RNR]
    out = os.environ.get("RX_OUT")
    if out:
        with open(out, "w") as f:
            json.dump({"width": width, "max_rd_atomic": bound, "records": 2 * sum(isinstance(c, rc.Case) for c in cases),
                       "rnr": rnr, "mismatches": h.mismatches}, f)
    assert h.mismatches == 0 and rnr > 0


@cocotb.test()
async def rx_bench(dut):
    """``metaroce bench rx``: back-to-back records of one path, no idle cycles, outputs always
    ready, per payload size (``RX_BENCH_SIZES``); then the random mix with backpressure for
    the lockstep speed. Rows to ``RX_BENCH_OUT`` (JSON)."""
    out = os.environ.get("RX_BENCH_OUT")
    if not out:
        return
    conns, paths, keys, streams = _instance()
    width = (len(dut.s_payload__payload) - 1) * 8 // 9
    model = RxCycleModel(width, conns, paths, keys, streams=streams)
    ins, outs = model_port_lists(model)
    h = Lockstep(dut, model, ins, outs)
    for name in ins:
        getattr(dut, name).value = 0
    await h.start(monitor=False)
    s = rc.Setup(conns, paths, keys, streams=streams, seed=1)
    n = int(os.environ.get("RX_BENCH_PACKETS", "256"))
    rows = []
    first = True
    runs = [("in_order", int(x)) for x in os.environ.get("RX_BENCH_SIZES", "0,64,256").split(",")]
    runs += [("slide", 0), ("fill", 0)]        # slow updates (MR-RX-048)
    for pattern, size in runs:
        if pattern == "in_order":
            burst = rc.burst_same_path(s, n, plen=size)
        else:
            burst = rc.burst_slow(s, n, kind=pattern, plen=size)
        items = (s.writes if first else []) + burst
        first = False
        drv = rc.Driver(width, items, s.lay.cfg, seed=2, p_idle=0.0, p_bp=0.0, poll_regs=False)
        await drive(h, drv, busy=model.busy)
        res = drv.res
        taken, pay = res["meta_taken"], res["payload_taken"]
        by_psn = {}
        for c, t in zip(burst, taken[-len(burst):]):
            by_psn[unpack_meta(c.meta)["bth"]["psn"]] = t
        lat = [cyc - by_psn[unpack(s.lay.ack, a)["psn"]] for a, cyc in zip(res["ack"], res["ack_cycles"])]
        rows.append({"width": width, "connections": conns, "paths": paths, "pattern": pattern,
                     "pkt_bytes": size,
                     "same_path_burst": n,
                     "packets_per_cycle": round(n / (taken[-1] - taken[-n] + 1), 4),
                     "beats_per_cycle": round(len(pay) / (pay[-1] - pay[0] + 1), 4) if pay else None,
                     "latency_cycles": min(lat), "mismatches": h.mismatches})
    cases = rc.within_slots(s, rc.random_traffic(s, int(os.environ.get("RX_RANDOM", "400"))))    # MR-RX-183
    drv = rc.Driver(width, cases, s.lay.cfg, seed=3, p_idle=0.2, p_bp=0.4)
    t0 = time.perf_counter()
    cycles = await drive(h, drv, busy=model.busy)
    speed = round(cycles / (time.perf_counter() - t0))
    for r in rows:
        r["lockstep_cycles_per_s"] = speed
        r["mismatches"] = h.mismatches
    with open(out, "w") as f:
        json.dump({"rows": rows}, f)
