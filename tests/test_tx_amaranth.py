"""The joined TX engine (hdl/tx.py) against its cycle model (models/tx.py) in the Amaranth
simulator (the whole engine behind ``slow``, its data path in the default run): every output port compared on every cycle by the lockstep core shared with the
Verilator testbench (tb/lockstep.py), driven by the engine's one driver (models/tx_cases.py:
template writes, work requests, idle cycles, backpressure on every output, random AXI read
latency, the loop through a lossy receiver's ACKs); then the checker (MR-TX-150). And the
reference endpoint's frames, byte for byte (MR-TX-152)."""
import pytest
from amaranth.lib import wiring

from metaroce.hdl.tx import TMPL_BLOCK_ROWS, Tx, TxData, TxJoin, tx_small
from metaroce.models import protocol as P
from metaroce.models import tx_cases as xc
from metaroce.models.tx import SMALL, TxCycleModel, TxDataCycleModel
from metaroce.models.tx_sched import TxSchedModel
from metaroce.models.wire import MrdhFlag
from metaroce.tb.lockstep import run_amaranth

_SCHED = ("chunk_window", "mtu", "cwnd", "conn_window", "path_pkts", "ack_every", "resend_depth")


def sched_sem(params):
    return TxSchedModel(params["conns"], params["streams"], params["paths"], params["depth"],
                        **{k: params[k] for k in _SCHED})


def lockstep(width, items, lay, tmpls, *, params=SMALL, seed=0, **kw):
    dut = Tx(width, **params)
    model = TxCycleModel(width, **params)
    drv = xc.Driver(model.lay, width, items, lay, tmpls, seed=seed, **kw)
    core = run_amaranth(dut, model, drv, busy=model.busy)
    assert core.mismatches == 0
    return drv, core


@pytest.mark.slow
def test_lockstep_64():
    """MR-TX-101..104, MR-TX-150: work requests (bad ones included) over both connections and
    streams, lossy delivery with resends, idle inputs, backpressure on every output, AXI read
    latency and gaps: 0 mismatches at 64 bits; every work request completes, every frame
    carries its template, its work request's fields and the host memory's bytes; MR-TX-228:
    with the scheduler's resend skid (MR-TX-226). (Slow: the
    Amaranth simulator compiles the scheduler's combinational decision in minutes and runs it
    at tens of cycles per second; the data path's lockstep is in the default run.)"""
    sem = sched_sem(SMALL)
    items, lay = xc.traffic(sem, 8, seed=1, max_len=1500)
    drv, core = lockstep(64, items, lay, xc.templates(2, 4), seed=1, loss=0.15)
    s = xc.check(sem, items, drv)
    assert s["frames"] >= 8


@pytest.mark.slow
def test_lockstep_512():
    """MR-TX-150 at 512 bits, more traffic, retransmits."""
    sem = sched_sem(SMALL)
    items, lay = xc.traffic(sem, 30, seed=2, max_len=4000)
    drv, core = lockstep(512, items, lay, xc.templates(2, 4), seed=2, loss=0.15)
    s = xc.check(sem, items, drv)
    assert s["retransmits"]


def test_model_lossy_with_timeouts():
    """MR-TX-150 on the model alone (its RTL equality is the lockstep's): losses found by SACK
    gaps and by the retransmit unit's timers, every work request completed. MR-TX-226..228: the
    unit's m_resend.ready is the scheduler's skid's emptiness (the model asserts the scheduler's
    port gives the same); in this traffic the boundary register holds a report in 5 cycles and the
    skid never fills (the scheduler's own lockstep presses it, MR-TXS-158)."""
    sem = sched_sem(SMALL)
    items, lay = xc.traffic(sem, 30, seed=3, max_len=2500)
    drv = xc.run_model(TxCycleModel(64, **SMALL), items, lay, xc.templates(2, 4), seed=3, loss=0.2)
    s = xc.check(sem, items, drv)
    assert s["retransmits"] and drv.res["timeouts"]


#: MR-TX-124/125: the failures' instance: the retry limit's error after two timeouts.
_FAIL = dict(SMALL, retry_limit=1)


def _failure_run(n, seed, *, rtl):
    """Work requests with every third in the host memory's error window (its reads fail) and
    connection 1 dead (every frame lost, so its paths reach the retry limit)."""
    from collections import Counter
    sem = sched_sem(SMALL)
    items, lay = xc.traffic(sem, n, seed=seed, max_len=1200, bad_reads=3)
    if rtl:
        drv, _ = lockstep(64, items, lay, xc.templates(2, 4), params=_FAIL, seed=seed, loss=0.1,
                          dead=(1,), counters=True)
    else:
        drv = xc.run_model(TxCycleModel(64, **_FAIL), items, lay, xc.templates(2, 4), seed=seed,
                           loss=0.1, dead=(1,), counters=True)
    xc.check(sem, items, drv)
    xc.check_counters(drv)
    return drv, Counter(c["status"] for c in drv.res["cqe"])


@pytest.mark.parametrize("seed", [1, 5])
def test_model_failures(seed):
    """MR-TX-124, MR-TX-125, MR-TXS-027 (model; its RTL equality is the slow lockstep's): a
    message whose payload reads fail completes LOC_PROT_ERR, its frames marked bad (``tuser``);
    the retry limit's error of a dead connection completes its posted work requests
    RETRY_EXC_ERR (MR-ENG-040, as the reference endpoint); every other one completes 0. The
    counters (MR-TX-126) read at the end match."""
    drv, st = _failure_run(8, seed, rtl=False)
    assert st[4] and st[12] and st[0] and drv.res["bad_frames"] and drv.res["errors"]


def test_model_new_routes_after_timeouts():
    """MR-TXS-121, MR-TX-197 (MR-PATH-002): the dead connection's timeouts are verdicts from the
    retransmit unit to the scheduler (no other path healthy: reroutes); its frames after them
    leave with a new UDP source port (``protocol.entropy_next`` of the template's, checked by
    ``tx_cases.check`` on every frame: the port of a generation no lower than the path's
    last)."""
    sem = sched_sem(SMALL)
    items, lay = xc.traffic(sem, 8, seed=1, max_len=1200, bad_reads=3)
    drv = xc.run_model(TxCycleModel(64, **SMALL), items, lay, xc.templates(2, 4), seed=1,
                       loss=0.1, dead=(1,))
    s = xc.check(sem, items, drv)
    assert s["new_routes"] >= 2


@pytest.mark.slow
def test_lockstep_failures_64():
    """MR-TX-124..126, MR-TX-150: the failures on the RTL in lockstep, 0 mismatches, the
    checker's statuses and the counters."""
    drv, st = _failure_run(6, 1, rtl=True)
    assert st[4] and st[12] and drv.res["bad_frames"]


def _endpoint_run(width, seed, *, rtl, initial_psn=None, **kw):
    """The engine on the endpoint's writes without ACKs, the clock stopped (no timer expires):
    its frames until 300 quiet cycles after the endpoint's count. ``initial_psn`` (MR-TX-475):
    the endpoint's every path's first PSN, written on the engine's ``s_psn`` for each path."""
    if initial_psn is not None:
        kw["initial_psn"] = initial_psn
    want, items, lay, image, tmpls, params = xc.endpoint_frames(seed, **kw)
    params = dict(params, pool=256, outstanding=16)
    model = TxCycleModel(width, **params)
    conn = kw.get("conn", 1)
    init = ({(conn, p): initial_psn for p in range(params["paths"])}
            if initial_psn is not None else None)
    drv = xc.Driver(model.lay, width, items, lay, tmpls, seed=seed, image=image, acks=False,
                    ns_per_cycle=0, expect_frames=len(want), init_psns=init)
    drv.quiet_cycles = 300
    if rtl:
        core = run_amaranth(Tx(width, **params), model, drv, busy=lambda: False)
        assert core.mismatches == 0
    else:
        while not drv.finished:
            inp = drv.inputs()
            drv.observe(inp, model.step(inp))
            drv.settle(False)
    return want, drv.res["raw"]


@pytest.mark.parametrize("seed,kw", [(0, dict(streams=4, depth=2, init_window_bdp=0.2)),
                                     (1, dict(streams=2, depth=4, init_window_bdp=2.0))])
def test_endpoint_bytes_until_blocked(seed, kw):
    """MR-TX-152 (a), MR-TXS-051 (a), MR-TX-155: on the endpoint's writes and sends, without
    ACKs, the engine (model; its RTL is the lockstep's) emits the endpoint's frames byte for
    byte, ICRC included, until both block."""
    want, got = _endpoint_run(64, seed, rtl=False, **kw)
    assert len(want) >= 3
    assert got == want


def test_endpoint_bytes_psn_wrap():
    """MR-TX-475, MR-TX-469, MR-CONN-107: the endpoint built with every path's initial PSN 2
    below 2^24 (both directions) and the engine given the same initial PSNs on ``s_psn``: on
    writes, sends and READs the engine's frames (model; its RTL is the lockstep's) are the
    endpoint's byte for byte, ICRC included, their PSNs running across the wrap (the rows':
    tests/test_tx_rows.py ``test_endpoint_chunks_with_rows``, MR-TX-501)."""
    from metaroce.models import codec
    want, got = _endpoint_run(64, 2, rtl=False, initial_psn=P.PSN_MOD - 2, streams=2, depth=4,
                              init_window_bdp=2.0, msgs=_READS)
    psns = [codec.decode(f).bth.psn for f in want]
    assert P.PSN_MOD - 2 in psns and 0 in psns and 1 in psns         # across the wrap
    assert got == want


@pytest.mark.parametrize("rows,seed", [(False, 1), pytest.param(True, 2, marks=pytest.mark.slow)])
def test_model_psn_wrap(rows, seed):
    """MR-TX-475, MR-TX-476, MR-TX-470, MR-TX-473, MR-TXS-465, MR-TXS-466 (model; the RTL's equality is the Verilator
    lockstep's, MR-TX-475): every path's initial PSN 1..5 below 2^24 written on ``s_psn``, random
    traffic with 15 % loss: every work request completes, each path's PSNs run from its
    initial PSN across the wrap (the checker), frames and resends past the wrap on every path;
    the write per connection after the first frame is ignored (``psn_ignored`` once each);
    the register scheduler's ``s_psn`` never not ready (MR-TX-469, MR-TX-500). MR-TX-501: with
    the row scheduler too (``rows``; seed 2: at seed 1 its paths take another order and one
    does not reach the wrap)."""
    sem = sched_sem(SMALL)
    items, lay = xc.traffic(sem, 40, seed=seed, max_len=2500)
    rsps = xc.responses(sem, 10, lay, seed=seed, max_len=2500)
    init = xc.near_wrap(SMALL["conns"], SMALL["paths"], seed)
    drv = xc.run_model(TxCycleModel(64, **SMALL, rows=rows), items, lay, xc.templates(2, 4),
                       seed=seed, p_idle=0.2, p_bp=0.3, loss=0.15, rsps=rsps, init_psns=init,
                       late_psn=True)
    s = xc.check(sem, items, drv, rsps)
    w = xc.wrap_summary(drv)
    assert s["retransmits"] and w["wrap_resends"] and w["wrap_paths"] == 2 * 4
    assert w["psn_ignored"] == SMALL["conns"]
    assert drv.res.get("psn_waits", 0) == 0 or rows


#: MR-TX-155: sends between writes on one stream, so a send's receive sequence is not its
#: message number, and sends on two streams (each counts on its own): (stream, length, imm, send)
_SENDS = [(0, 1500, None, False), (0, 2100, None, True), (0, 0, 5, False), (0, 1024, 9, True),
          (1, 700, 3, True), (1, 1025, None, True), (1, 3000, 11, False), (1, 1, None, True)]


def test_endpoint_bytes_sends_between_writes():
    """MR-TX-155, MR-TXS-057..059, MR-TX-152 (a): sends and writes interleaved on each stream:
    the engine's frames are the endpoint's byte for byte (MR_SEND and MR_SEND_IMM with MRSH,
    receive sequences 0, 1 on stream 0 at messages 1 and 3, 0..2 on stream 1)."""
    from metaroce.models import codec
    want, got = _endpoint_run(64, 2, rtl=False, streams=2, depth=4, init_window_bdp=2.0,
                              msgs=_SENDS)
    seqs = {(f.mrdh.stream, f.mrdh.msg, f.mrsh.recv_seq) for f in map(codec.decode, want) if f.mrsh}
    assert seqs == {(0, 1, 0), (0, 3, 1), (1, 0, 0), (1, 1, 1), (1, 3, 2)}
    assert got == want


#: MR-TX-161: READs between writes and sends on each stream (a READ of 0 bytes among them), so
#: a READ takes a message number and no receive sequence: (stream, length, imm, kind)
_READS = [(0, 1500, None, False), (0, 5000, None, "read"), (0, 2100, None, True),
          (0, 0, None, "read"), (1, 700, 3, True), (1, 1025, None, "read"), (1, 3000, 11, False),
          (1, 1, None, True)]


def test_endpoint_bytes_reads_between_writes_and_sends():
    """MR-TX-161, MR-TXS-061..063, MR-TX-152 (a): READs interleaved with writes and sends on
    each stream: the engine's frames are the endpoint's byte for byte (MR_READ with MRDH and
    RETH, message length 0, the READ's DMA length, no payload; the sends' receive sequences
    skip the READs)."""
    from metaroce.models import codec
    want, got = _endpoint_run(64, 2, rtl=False, streams=2, depth=4, init_window_bdp=2.0,
                              msgs=_READS)
    fs = list(map(codec.decode, want))
    reads = {(f.mrdh.stream, f.mrdh.msg, f.reth.dma_len, f.mrdh.msg_len, len(f.payload))
             for f in fs if f.bth.opcode == 0xC6}
    assert reads == {(0, 1, 5000, 0, 0), (0, 3, 0, 0, 0), (1, 1, 1025, 0, 0)}
    seqs = {(f.mrdh.stream, f.mrdh.msg, f.mrsh.recv_seq) for f in fs if f.mrsh}
    assert seqs == {(0, 2, 0), (1, 0, 0), (1, 3, 1)}
    assert got == want


#: MR-TX-193: compare-and-swap and fetch-and-add between writes, sends and READs on each
#: stream, so an atomic takes a message number and no receive sequence: (stream, length, imm, kind)
_ATOMICS = [(0, 1500, None, False), (0, 8, None, "cas"), (0, 2100, None, True),
            (0, 8, None, "fadd"), (1, 700, 3, True), (1, 8, None, "fadd"), (1, 1025, None, "read"),
            (1, 8, None, "cas")]


def test_endpoint_bytes_atomics_between_writes_sends_reads():
    """MR-TX-193, MR-TXS-096..100, MR-TX-152 (a): atomics interleaved with writes, sends and a
    READ on each stream: the engine's frames are the endpoint's byte for byte (MR_CMP_SWAP and
    MR_FETCH_ADD with MRDH and RETH, DMA length 8, the operands as payload, 16 or 8 bytes; the
    sends' receive sequences skip the atomics)."""
    from metaroce.models import codec
    want, got = _endpoint_run(64, 2, rtl=False, streams=2, depth=4, init_window_bdp=2.0,
                              msgs=_ATOMICS)
    fs = list(map(codec.decode, want))
    at = sorted((f.mrdh.stream, f.mrdh.msg, f.bth.opcode, f.reth.dma_len, f.mrdh.msg_len,
                 len(f.payload)) for f in fs if f.bth.opcode in (0xC8, 0xC9))
    assert at == [(0, 1, 0xC8, 8, 16, 16), (0, 3, 0xC9, 8, 8, 8), (1, 1, 0xC9, 8, 8, 8),
                  (1, 3, 0xC8, 8, 16, 16)]
    seqs = {(f.mrdh.stream, f.mrdh.msg, f.mrsh.recv_seq) for f in fs if f.mrsh}
    assert seqs == {(0, 2, 0), (1, 0, 0)}
    assert got == want


@pytest.mark.slow
@pytest.mark.parametrize("width", [64, 512])
def test_endpoint_bytes_atomics_rtl(width):
    """MR-TX-193 on the RTL, in lockstep with the model (`_ATOMICS`)."""
    want, got = _endpoint_run(width, 2, rtl=True, streams=2, depth=4, init_window_bdp=2.0,
                              msgs=_ATOMICS)
    assert got == want


@pytest.mark.slow
@pytest.mark.parametrize("width", [64, 512])
def test_endpoint_bytes_until_blocked_rtl(width):
    """MR-TX-152 (a), MR-TX-155, MR-TX-161 on the RTL, in lockstep with the model: writes,
    sends and READs interleaved (`_READS`)."""
    want, got = _endpoint_run(width, 2, rtl=True, streams=2, depth=4, init_window_bdp=2.0,
                              msgs=_READS)
    assert got == want


def test_joined_with_wiring_connect():
    """MR-TX-101, MR-TX-105, MR-TX-106, MR-TX-469: the blocks' own ports joined (the scheduler's frame requests are the data
    path's ``s_frame``; the DMA's payload is the frame builder's ``s_payload``)."""
    t = tx_small()
    for blk in (t, t.sched, t.rtx, t.data, t.cwnd):
        blk._MustUse__silence = True        # inspected, not elaborated
    assert isinstance(t.data, TxData)
    sig = t.signature.members
    assert set(sig) == {"s_wr", "s_ack", "s_cfg", "m_axi", "m_axis", "m_cqe", "m_error", "now",
                        "reg_addr", "reg_data", "s_cw_setup", "cc_on", "cc_beta_q", "cc_cap",
                        "s_rsp", "m_rsp_done", "s_psn", "psn_ignored"}
    # MR-TX-469: the initial PSNs' port is the scheduler's
    assert sig["s_psn"].signature == t.sched.signature.members["s_psn"].signature
    # MR-TX-171: the READ responses' ports are the scheduler's
    for name in ("s_rsp", "m_rsp_done"):
        assert sig[name].signature == t.sched.signature.members[name].signature
    # MR-TX-070, MR-TX-106: the unit's ACK event is the Cwnd block's s_ack, flipped; the
    # scheduler's window write is m_update's conn, path and cwnd
    assert t.rtx.signature.members["m_ackev"].signature.flip() == \
        t.cwnd.signature.members["s_ack"].signature
    upd = t.cwnd.signature.members["m_update"].signature.members["payload"].shape
    cw = t.sched.signature.members["s_cwnd"].signature.members["payload"].shape
    assert {n: f.width for n, f in cw} == {n: upd[n].width for n, _ in cw}
    assert set(n for n, _ in upd) - set(n for n, _ in cw) == {"wsum", "debt"}
    assert t.lay.rtx.ack == t.rtx.signature.members["s_ack"].signature.members["payload"].shape
    assert t.data.signature.members["s_frame"].signature.flip() == \
        t.sched.signature.members["m_frame"].signature
    assert wiring.connect is not None
    assert TxDataCycleModel.port_names()["outputs"]


# ------------------------------------------------------------------ the data path alone

_DATA = {k: SMALL[k] for k in ("conns", "streams", "paths", "depth", "pool", "outstanding")}


def run_data(width, reqs, mem_layout, tmpls, *, rtl, seed=0, image=None, **kw):
    model = TxDataCycleModel(width, **_DATA)
    drv = xc.DataDriver(model.lay, width, reqs, mem_layout, tmpls, seed=seed, image=image, **kw)
    if rtl:
        core = run_amaranth(TxData(width, **_DATA), model, drv, busy=model.busy)
        assert core.mismatches == 0
    else:
        while not drv.finished:
            inp = drv.inputs()
            drv.observe(inp, model.step(inp))
            drv.settle(model.busy)
    return drv


def test_data_path_lockstep_64():
    """MR-TX-102, MR-TX-120..124, MR-TX-151, MR-TX-467 (the builder ``ipv4_only``), MR-TX-483
    (the payload rotated once, in the DMA, MR-TX-479..482), MR-TX-347 (the join's queues in block RAM,
    MR-TX-346), MR-TX-401 (``srcq``'s head in a register, MR-TX-400): the join stage, the DMA and the frame builder on
    random frame requests (every connection and path, payloads of any length and alignment),
    idle inputs, backpressure on ``m_axis``, random AXI latency and gaps: 0 mismatches at 64
    bits; each frame is the frame builder's bytes of the join stage's descriptor with the host
    memory's payload."""
    from metaroce.models.dma_read_cases import Layout
    model_lay = TxDataCycleModel(64, **_DATA).lay
    mem = Layout(8192)
    reqs = xc.data_requests(model_lay, 10, mem, seed=4, max_len=500)
    tmpls = xc.templates(2, 4)
    drv = run_data(64, reqs, mem, tmpls, rtl=True, seed=4)
    assert drv.res["raw"] == xc.expected_data_frames(reqs, tmpls, drv.mem, 4)


@pytest.mark.parametrize("width", [64, pytest.param(512, marks=pytest.mark.slow)])
def test_data_path_atomics(width):
    """MR-TX-191, MR-TX-192, MR-TX-194, MR-TX-483 (the operand beats rotated to the builder's
    lane): atomic frame requests (MR_CMP_SWAP, MR_FETCH_ADD) among
    writes and sends (some of no payload), idle inputs, backpressure and random AXI latency:
    0 mismatches; an atomic's frame carries its operands as payload (no read of the host
    memory: its read command has length 0) between the DMA's payloads, in order."""
    from metaroce.models.dma_read_cases import Layout
    model_lay = TxDataCycleModel(width, **_DATA).lay
    mem = Layout(8192)
    reqs = xc.data_requests(model_lay, 16, mem, seed=6, max_len=300, atomics=0.4)
    assert {0xC8, 0xC9} <= {q["bth_opcode"] for q in reqs}
    tmpls = xc.templates(2, 4)
    drv = run_data(width, reqs, mem, tmpls, rtl=True, seed=6)
    assert drv.res["raw"] == xc.expected_data_frames(reqs, tmpls, drv.mem, 4)


def test_data_path_dma_entries_operands_unread():
    """MR-TX-367, MR-TX-368: the join stage queues a payload source's operands as the frame
    request has them (no mask by the atomic test): non-atomic requests given random operands
    among atomics give the same frames, 0 mismatches with the model (whose ``src_of`` keeps
    them too): a DMA entry's operands are never read."""
    import random
    from metaroce.models.dma_read_cases import Layout
    model_lay = TxDataCycleModel(64, **_DATA).lay
    mem = Layout(8192)
    reqs = xc.data_requests(model_lay, 16, mem, seed=6, max_len=300, atomics=0.4)
    rng = random.Random(5)
    plain = [q for q in reqs if q["bth_opcode"] not in (0xC8, 0xC9)]
    assert plain and len(plain) < len(reqs)
    for q in plain:
        q.update(swap=rng.getrandbits(64) | 1, compare=rng.getrandbits(64) | 1)
    tmpls = xc.templates(2, 4)
    drv = run_data(64, reqs, mem, tmpls, rtl=True, seed=6)
    assert drv.res["raw"] == xc.expected_data_frames(reqs, tmpls, drv.mem, 4)


def _skid_run(tx_mod=None, seed=7):
    """The data path under heavy backpressure (``m_axis`` ready in 40 % of the cycles, no idle
    requests), so the join stage's S1 is held while the next request is offered: the skid's
    traffic (MR-TX-229..231). ``tx_mod``: a module in place of ``hdl.tx`` (a wrong form)."""
    from metaroce.models.dma_read_cases import Layout
    from metaroce.tb.lockstep import run_amaranth as run
    model = TxDataCycleModel(64, **_DATA)
    mem = Layout(8192)
    reqs = xc.data_requests(model.lay, 12, mem, seed=seed, max_len=200, atomics=0.3)
    tmpls = xc.templates(2, 4)
    drv = xc.DataDriver(model.lay, 64, reqs, mem, tmpls, seed=seed, p_idle=0.0, p_bp=0.6)
    state = {"skid": 0, "held": 0}

    def on_cycle(cycle, ins, outs):
        state["skid"] += model.join.sk is not None
        state["held"] += bool(ins["s_frame__valid"] and not outs["s_frame__ready"])
    data = (tx_mod.TxData if tx_mod else TxData)(64, **_DATA)
    core = run(data, model, drv, busy=model.busy, on_cycle=on_cycle)
    return core, drv, reqs, tmpls, state


def test_data_path_frame_skid():
    """MR-TX-229..231: the skid before the join stage's S1 under backpressure: 0 mismatches
    (``s_frame.ready`` the skid's emptiness), the skid filled and the port held not ready in
    some cycles, every frame the frame builder's bytes of its request, in order."""
    core, drv, reqs, tmpls, state = _skid_run()
    assert core.mismatches == 0
    assert state["skid"] >= 10 and state["held"] >= 5, state
    assert drv.res["raw"] == xc.expected_data_frames(reqs, tmpls, drv.mem, 4)


#: MR-TX-231's wrong forms: the old ready (S1 empty or moving on: the skid never fills, so
#: the port's ready differs from the model's), S1 loaded from the port past a held skid request
FRAME_SKID_WRONG = {
    "ready_from_take": ("m.d.comb += self.s_frame.ready.eq(~sk_valid)",
                        "m.d.comb += self.s_frame.ready.eq(s1_free & ~sk_valid)"),
    "port_past_skid": ("Mux(sk_valid, sk.as_value(), self.s_frame.payload.as_value())",
                       "self.s_frame.payload.as_value()"),
}


@pytest.mark.slow          # dp44: slow, to pay for test_data_path_template_rewrites's time
@pytest.mark.parametrize("wrong", sorted(FRAME_SKID_WRONG))
def test_data_path_frame_skid_wrong_forms_fail(wrong):
    """MR-TX-231: each wrong form of the skid, in place of the RTL, fails the lockstep of
    ``test_data_path_frame_skid``."""
    from metaroce.tb.lockstep import Mismatch, wrong_form
    mod = wrong_form("tx", *FRAME_SKID_WRONG[wrong])
    with pytest.raises(Mismatch):
        _skid_run(mod)


class _RewriteDriver(xc.DataDriver):
    """MR-TX-465: the data path's driver that, once the first templates are written, rewrites
    a random connection's row (one of two contents each) in ``p_write`` of the cycles, so
    writes land in the cycle before S1 loads a request of their row, while S1 holds one, and
    in the cycle S2 takes it (``s_cfg.ready`` is 1)."""

    def __init__(self, *a, rows, p_write=0.5, **kw):
        super().__init__(*a, **kw)
        self.rows, self.p_write, self.writes = rows, p_write, 0

    def inputs(self):
        inp = super().inputs()
        if (self.ci >= len(self.tmpls) and not self._phase and not inp["s_cfg__valid"]
                and self.rng.random() < self.p_write):
            inp["s_cfg__valid"] = 1
            inp["s_cfg__payload"] = xc.pack(self.lay.cfg, self.rng.choice(self.rows))
            self.writes += 1
        return inp


def _rewrite_run(tx_mod=None, seed=None, conns=8):
    """The data path in lockstep (backpressure on ``m_axis``, no idle requests) with the
    template rewritten under traffic (:class:`_RewriteDriver`); ``tx_mod`` a wrong form;
    ``conns`` 8 (the template's read not transparent, MR-TX-533) or 2 (transparent)."""
    from metaroce.models.dma_read_cases import Layout
    prm = dict(_DATA, conns=conns)
    seed = {2: 3, 8: 5}[conns] if seed is None else seed      # 8: 2 holds (seeds 4..8: 0..2)
    model = TxDataCycleModel(64, **prm)
    mem = Layout(8192)
    reqs = xc.data_requests(model.lay, 14, mem, seed=seed, max_len=120, atomics=0.2)
    tmpls = xc.templates(conns, 4)
    other = [dict(t, conn=t["conn"] - conns) for t in xc.templates(2 * conns, 4)[conns:]]
    drv = _RewriteDriver(model.lay, 64, reqs, mem, tmpls, seed=seed, p_idle=0.0, p_bp=0.5,
                         rows=tmpls + other)
    data = (tx_mod.TxData if tx_mod else TxData)(64, **prm)
    core = run_amaranth(data, model, drv, busy=model.busy)
    return core, drv, reqs


# lut46: 2 connections (the transparent form, MR-TX-533) slow; 8 (not transparent) by default
@pytest.mark.parametrize("conns", [pytest.param(2, marks=pytest.mark.slow), 8])
def test_data_path_template_rewrites(conns):
    """MR-TX-463, MR-TX-465 (MR-TX-121: a write seen from the next cycle on), MR-TX-530..533:
    the join stage's template read synchronously, at the row S1 holds next, not transparent
    (8 rows; 2: transparent), S2 held a cycle after a write to its row, under template writes
    in half the cycles of the traffic and backpressure: 0 mismatches with the model (which
    reads the row when S2 takes), every request framed, and the hold met."""
    from metaroce.models.tx import TxJoinModel
    held = [0]
    move = TxJoinModel._move

    def counted(self, cmd_ready, desc_ready):
        free = (self.s1 is not None and (not self.cmd[0] or bool(cmd_ready))
                and (not self.desc[0] or bool(desc_ready)))
        held[0] += bool(free and self.wrote == self.s1["conn"])
        return move(self, cmd_ready, desc_ready)
    TxJoinModel._move = counted
    try:
        core, drv, reqs = _rewrite_run(conns=conns)
    finally:
        TxJoinModel._move = move
    assert core.mismatches == 0
    assert drv.writes >= 50 and len(drv.res["raw"]) == len(reqs)
    assert held[0] >= 2, held


def test_join_template_read_synchronous():
    """MR-TX-463, MR-TX-464: the join stage's template memory has one read port, synchronous
    (what Yosys maps to block RAM), with no enable (its ``en`` undriven, 1) and, MR-TX-530 and
    MR-TX-533, transparent for its one write port below 8 rows (the small instance's 2) and not
    from 8 rows on; MR-TX-467: the data path's frame builder is built
    ``ipv4_only``."""
    from metaroce.models.tx import layouts
    lay = layouts(*(_DATA[k] for k in ("conns", "streams", "paths", "depth", "pool")))
    tmpl = TxJoin(lay, _DATA["outstanding"]).elaborate(None)._named_submodules["tmpl"][0]
    (rd,), (wr,) = tmpl.read_ports, tmpl.write_ports
    assert rd.domain == "sync" and rd.transparent_for == (wr,) and rd.en.init == 1   # MR-TX-533
    lay8 = layouts(8, *(_DATA[k] for k in ("streams", "paths", "depth", "pool")))
    tmpl8 = TxJoin(lay8, _DATA["outstanding"]).elaborate(None)._named_submodules["tmpl"][0]
    assert TMPL_BLOCK_ROWS == 8 and tmpl8.read_ports[0].transparent_for == ()
    fb = TxData(64, **_DATA).elaborate(None)._named_submodules["fb"][0]
    assert fb.ipv4_only


#: MR-TX-465's wrong forms: the row read at S1's own request (a cycle late); MR-TX-532's: no
#: hold after a write to S1's row (a write seen from the second cycle on), the hold's compare
#: against S1's own row (the row read a cycle late, not the one read this cycle)
TEMPLATE_READ_WRONG = {
    "read_late": ("m.d.comb += rd.addr.eq(Mux(in_valid & s1_free, inp.conn, fr.conn))",
                  "m.d.comb += rd.addr.eq(fr.conn)"),
    "no_hold": ("take = s1_valid & ~tmpl_stale & cmd_free", "take = s1_valid & cmd_free"),
    "hold_on_s1_row": ("tmpl_stale.eq(wr.en & (wr.addr == rd.addr))",
                       "tmpl_stale.eq(wr.en & (wr.addr == fr.conn))"),
}


@pytest.mark.slow
@pytest.mark.parametrize("wrong", sorted(TEMPLATE_READ_WRONG))
def test_data_path_template_read_wrong_forms_fail(wrong):
    """MR-TX-465, MR-TX-532: each wrong form of the template's synchronous read and of the hold
    after a write, in place of the RTL, fails the lockstep of
    ``test_data_path_template_rewrites``."""
    from metaroce.tb.lockstep import Mismatch, wrong_form
    mod = wrong_form("tx", *TEMPLATE_READ_WRONG[wrong])
    with pytest.raises(Mismatch):
        _rewrite_run(mod, seed=3)         # 8 connections; seed 3 meets each wrong form


def _old_join(model):
    """MR-TX-230's reference: ``model``'s join stage without the skid (``s_frame.ready`` = S1
    empty or moving on, a request taken only into S1), the form before MR-TX-229."""
    j, dm, fbm = model.data.join, model.data.dma, model.data.fb
    j.frame_ready = lambda: int(j.s1 is None or j._move(dm.outputs()["s_cmd__ready"],
                                                          fbm.outputs()["s_desc__ready"]))
    step = j.step

    def old_step(fv, fp, cv, cp, cmd_ready, desc_ready, *rest):
        free = j.s1 is None or j._move(cmd_ready, desc_ready)
        return step(int(fv and free), fp, cv, cp, cmd_ready, desc_ready, *rest)
    j.step = old_step


def _axis_trace(old, seed, n, loss, max_len):
    sem = sched_sem(SMALL)
    items, lay = xc.traffic(sem, n, seed=seed, max_len=max_len)
    model = TxCycleModel(64, **SMALL)
    if old:
        _old_join(model)
    trace, skid = [], [0]
    step = model.step

    def traced(inp):
        out = step(inp)
        skid[0] += model.data.join.sk is not None
        trace.append(tuple(out[k] for k in sorted(out) if k.startswith("m_axis")))
        return out
    model.step = traced
    drv = xc.run_model(model, items, lay, xc.templates(2, 4), seed=seed, loss=loss)
    xc.check(sem, items, drv)
    return trace, skid[0]


def test_model_frame_skid_same_frames():
    """MR-TX-230: the TX model with the join stage's skid against the same model without it
    (``_old_join``), 30 work requests at 30 % loss: the skid holds a request in many cycles, and
    every ``m_axis`` beat leaves in the same cycle (the scheduler's frame queue does not fill in
    this traffic); the reference's own check: its skid never holds a request (the comparison's
    control: :func:`test_model_frame_skid_comparison_sees_change`, slow)."""
    new, skid = _axis_trace(False, 5, 30, 0.3, 2500)
    old, old_skid = _axis_trace(True, 5, 30, 0.3, 2500)
    assert skid >= 500 and old_skid == 0
    assert new == old


@pytest.mark.slow
def test_model_frame_skid_comparison_sees_change():
    """MR-TX-230, the control of :func:`test_model_frame_skid_same_frames` (slow since ipsn45
    paid the default run's time of MR-TX-474/475's tests with it): where the scheduler's frame
    queue fills (40 work requests up to 4,000 bytes, seed 7) the frames leave at other cycles,
    every work request still completing (``tx_cases.check``): the comparison sees a change."""
    assert _axis_trace(False, 7, 40, 0.15, 4000)[0] != _axis_trace(True, 7, 40, 0.15, 4000)[0]


def _data_frames_match(drv, reqs, tmpls, paths=4):
    want = xc.expected_data_frames(reqs, tmpls, drv.mem, paths)
    assert len(drv.res["raw"]) == len(want)
    for k, (got, w) in enumerate(zip(drv.res["raw"], want)):
        assert w is None or got == w, f"frame {k}"
    tuser, fails = xc.expected_data_errors(reqs, drv.mem.lay, SMALL["streams"], SMALL["depth"])
    assert drv.res["tuser"] == tuser and drv.res["fail"] == fails


def test_data_path_read_errors_64():
    """MR-TX-124: payload reads that come back with an error (every third request in the host
    memory's error window, zero-length ones among them, which read nothing): each such frame
    ends with ``tuser`` 1 and its message {conn, slot} is reported on ``m_fail`` with status
    LOC_PROT_ERR, in order, with backpressure on ``m_fail``; every other frame is unchanged.
    RTL in lockstep with the model, 0 mismatches."""
    from metaroce.models.dma_read_cases import Layout
    model_lay = TxDataCycleModel(64, **_DATA).lay
    mem = Layout(8192)
    reqs = xc.data_requests(model_lay, 14, mem, seed=5, max_len=300, bad_every=3)
    assert any(r["payload_len"] == 0 for r in reqs[2::3]) and any(r["payload_len"] for r in reqs[2::3])
    tmpls = xc.templates(2, 4)
    drv = run_data(64, reqs, mem, tmpls, rtl=True, seed=5)
    _data_frames_match(drv, reqs, tmpls)
    assert sum(drv.res["tuser"]) >= 2


class _FailHeldDriver(xc.DataDriver):
    """The data path's driver with ``m_fail`` taken in 10 % of the cycles and ``m_axis`` always
    ready: a failed read's record waits in the DMA's done queue while its frame ends, so frames
    end before their records and the debt (MR-TX-124) rises and is paid."""

    def inputs(self):
        inp = super().inputs()
        inp["m_axis__tready"] = 1
        inp["m_fail__ready"] = int(self.rng.random() < 0.1)
        return inp


def _fail_held_run(tx_mod=None, seed=2):
    """8 frame requests, every second in the error window, under ``_FailHeldDriver``; the RTL
    (``tx_mod``: a module in place of ``hdl.tx``, a wrong form) in lockstep with the model,
    counting the cycles the model's debt is not 0 and the debts paid down to 0."""
    from metaroce.models.dma_read_cases import Layout
    model = TxDataCycleModel(64, **_DATA)
    mem = Layout(8192)
    reqs = xc.data_requests(model.lay, 8, mem, seed=seed, max_len=300, bad_every=2)
    drv = _FailHeldDriver(model.lay, 64, reqs, mem, xc.templates(2, 4), seed=seed)
    seen = {"debt": 0, "paid": 0, "prev": 0}

    def on_cycle(cycle, ins, outs):
        seen["debt"] += model.debt != 0
        seen["paid"] += seen["prev"] != 0 and model.debt == 0
        seen["prev"] = model.debt
    core = run_amaranth((tx_mod.TxData if tx_mod else TxData)(64, **_DATA), model, drv,
                        busy=model.busy, on_cycle=on_cycle)
    return core, seen


def test_data_path_fail_held_debt():
    """MR-TX-369, MR-TX-370: the data path with ``m_fail`` held (the debt reached: frames end
    before their records, and the debt is paid), RTL in lockstep with the model, 0 mismatches:
    the registered ``debt_nz`` and the queues' registered heads show what the model does."""
    core, seen = _fail_held_run()
    assert core.mismatches == 0
    assert seen["debt"] >= 5 and seen["paid"] >= 1, seen


@pytest.mark.slow
def test_data_path_debt_register_wrong_form_fails():
    """MR-TX-370: negative control: ``debt_nz`` loaded at the debt's decrement from the debt
    before the edge (``debt != 0``: a cycle late, so it stays 1 when the debt is paid to 0)
    mismatches the model on ``test_data_path_fail_held_debt``'s run."""
    from metaroce.tb.lockstep import Mismatch, wrong_form
    mod = wrong_form("tx", "debt_nz.eq(debt != 1)", "debt_nz.eq(debt != 0)")
    with pytest.raises(Mismatch):
        _fail_held_run(mod)


@pytest.mark.slow
def test_data_path_lane_wrong_form_fails():
    """MR-TX-479, MR-TX-484 (negative control): the join stage's read command with its lane one
    lane off (``lane + 1``: the DMA's beats a lane from the builder's) mismatches the model on
    ``test_data_path_lockstep_64``'s traffic."""
    from metaroce.models.dma_read_cases import Layout
    from metaroce.tb.lockstep import Mismatch, wrong_form
    mod = wrong_form("tx", "self.m_cmd.payload.lane.eq(lane)", "self.m_cmd.payload.lane.eq(lane + 1)")
    model = TxDataCycleModel(64, **_DATA)
    mem = Layout(8192)
    reqs = xc.data_requests(model.lay, 10, mem, seed=4, max_len=500)
    drv = xc.DataDriver(model.lay, 64, reqs, mem, xc.templates(2, 4), seed=4)
    with pytest.raises(Mismatch):
        run_amaranth(mod.TxData(64, **_DATA), model, drv, busy=model.busy)


@pytest.mark.slow
def test_data_path_lockstep_512():
    from metaroce.models.dma_read_cases import Layout
    model_lay = TxDataCycleModel(512, **_DATA).lay
    mem = Layout(1 << 16)
    reqs = xc.data_requests(model_lay, 60, mem, seed=5, max_len=4000)
    tmpls = xc.templates(2, 4)
    drv = run_data(512, reqs, mem, tmpls, rtl=True, seed=5)
    assert drv.res["raw"] == xc.expected_data_frames(reqs, tmpls, drv.mem, 4)


def _lossy(width, seed, rtl, atomics=0.0):
    reqs, want, tmpls, mem, image = xc.endpoint_lossy(seed, atomics=atomics)
    drv = run_data(width, reqs, mem, tmpls, rtl=rtl, seed=seed, image=image, p_idle=0.0,
                   p_bp=0.1)
    return want, drv.res["raw"], reqs


def test_endpoint_bytes_lossy_loopback():
    """MR-TX-152 (b), MR-TXS-051 (b), MR-TX-155: over the lossy loopback, writes and sends
    mixed, the scheduler's frame requests are the endpoint's, resends included (asserted by endpoint_compare); through the data path
    (model; its RTL is the lockstep's) they become the endpoint's frames byte for byte, ICRC
    included."""
    want, got, reqs = _lossy(512, 24, rtl=False)
    assert sum(1 for q in reqs if q["mrdh_flags"] & MrdhFlag.RETX) >= 10     # resends
    assert got == want


@pytest.mark.parametrize("width,rtl", [(64, False), pytest.param(64, True, marks=pytest.mark.slow),
                                       pytest.param(512, True, marks=pytest.mark.slow)])
def test_endpoint_bytes_lossy_loopback_atomics(width, rtl):
    """MR-TX-193, MR-TX-152 (b): over the lossy loopback, atomics among writes, sends and READs
    (a third of the messages; seed 9: an atomic resent; the seeds whose losses need a tail
    probe, MR-REL-010, are outside the slice): the scheduler's frame requests are the
    endpoint's, resends included (the operands too, asserted by endpoint_compare); through
    the data path (model; its RTL in lockstep with the model in the slow runs) they become the
    endpoint's frames byte for byte."""
    want, got, reqs = _lossy(width, 9, rtl=rtl, atomics=0.35)
    at = [q for q in reqs if q["bth_opcode"] in (0xC8, 0xC9)]
    assert len(at) >= 4 and any(q["mrdh_flags"] & MrdhFlag.RETX for q in at)   # one resent
    assert sum(1 for q in reqs if q["mrdh_flags"] & MrdhFlag.RETX) >= 5
    assert got == want


@pytest.mark.parametrize("seed,paths", [(1, 2), (0, 4)])
def test_endpoint_bytes_tail_probes(seed, paths):
    """MR-TX-180, MR-TXS-093: over a loopback that loses data frames and ACKs, the endpoint's
    tail probes among its frames: the scheduler, given the retransmit unit's probe at each of
    the endpoint's expiries that probes, sends the endpoint's frame requests (asserted by
    endpoint_probes), and through the data path (model; its RTL is the lockstep's) every frame,
    each probe (its path's newest packet again, AckReq and RETX set) included, is the
    endpoint's byte for byte, ICRC included. (Runs without an endpoint timeout: a timeout gives
    the path a new entropy, MR-PATH-002, which the template, written once, does not follow.)"""
    from metaroce.models import codec
    reqs, want, tmpls, mem, image = xc.endpoint_probes(seed, paths=paths)
    drv = run_data(64, reqs, mem, tmpls, rtl=False, seed=seed, image=image, p_idle=0.0, p_bp=0.1)
    psns = [(f.mrdh.path, f.bth.psn) for f in map(codec.decode, want)]
    assert len(psns) - len(set(psns)) >= 3                  # the probes: PSNs sent again
    assert drv.res["raw"] == want


@pytest.mark.slow
def test_endpoint_bytes_tail_probes_rtl():
    """MR-TX-180 on the data path's RTL, in lockstep with its model (seed 0, 4 paths)."""
    reqs, want, tmpls, mem, image = xc.endpoint_probes(0, paths=4)
    drv = run_data(512, reqs, mem, tmpls, rtl=True, seed=0, image=image, p_idle=0.0, p_bp=0.1)
    assert drv.res["raw"] == want


#: MR-TX-172: the responder's cases: READs of 0, around the MTU and of tens of kB on both
#: streams, one refused (ERROR), without losses; and over the lossy loopback (seed 5: resends)
_RSP_READS = [(0, 1500), (0, 0), (1, 1025), (1, 3000)]


def _responses(width, rtl, lossy):
    import random
    if lossy:
        rng = random.Random(5)
        kw = dict(reads=[(s, rng.randrange(20_000, 50_000)) for s in range(2) for _ in range(2)],
                  bad=(2,), loss=0.05, drop_until=40e-6, init_window_bdp=100.0,
                  max_window_bdp=100.0)
        seed = 5
    else:
        kw, seed = dict(reads=_RSP_READS, bad=(3,)), 1
    reqs, want, tmpls, mem, image, r = xc.endpoint_responses(seed, **kw)
    drv = run_data(width, reqs, mem, tmpls, rtl=rtl, seed=seed, image=image, p_idle=0.0,
                   p_bp=0.1)
    return want, drv.res["raw"], reqs


@pytest.mark.parametrize("lossy", [False, True])
def test_endpoint_bytes_read_responses(lossy):
    """MR-TX-172, MR-TXS-071: the endpoint serving a peer's READs over the loopback: the
    scheduler, given each response on s_rsp where the endpoint executes the READ, sends the
    endpoint's frame requests (asserted field by field, resends included over the lossy
    loopback), and through the data path (model; its RTL is the lockstep's) they become the
    endpoint's MR_READ_RESP frames byte for byte, ICRC included: MRDH only, the requester's
    stream and message, the region's bytes, one ERROR frame of no payload for the refused READ."""
    from metaroce.models import codec
    want, got, reqs = _responses(64, False, lossy)
    fs = list(map(codec.decode, want))
    assert all(f.bth.opcode == 0xC7 and f.reth is None and f.mrsh is None for f in fs)
    errs = [f for f in fs if f.mrdh.flags & MrdhFlag.ERROR]
    assert len(errs) == 1 and errs[0].payload == b"" and errs[0].mrdh.msg_len == 0
    assert not lossy or sum(1 for q in reqs if q["mrdh_flags"] & MrdhFlag.RETX) >= 3
    assert len(want) >= (100 if lossy else 6)
    assert got == want


@pytest.mark.slow
@pytest.mark.parametrize("width", [64, 512])
def test_endpoint_bytes_read_responses_rtl(width):
    """MR-TX-172 on the data path's RTL, in lockstep with its model (the lossy case)."""
    want, got, _ = _responses(width, True, True)
    assert got == want


@pytest.mark.slow
def test_endpoint_bytes_lossy_loopback_rtl():
    """MR-TX-152 (b) on the data path's RTL, in lockstep with its model."""
    want, got, _ = _lossy(512, 24, rtl=True)
    assert got == want


@pytest.mark.slow
def test_verilog_port_names():
    """MR-TX-103: the Verilog ports are exactly the model's plus clk and rst. (Slow: the
    scheduler's conversion takes tens of minutes on a loaded machine.)"""
    from metaroce.tb.lockstep import verilog_ports
    ports = verilog_ports(tx_small(), "tx")
    names = TxCycleModel.port_names()
    assert ports == set(names["inputs"]) | set(names["outputs"]) | {"clk", "rst"}


def test_join_address_carries():
    """MR-TX-122: the read command's address is ``laddr + mrdh_offset`` modulo 2^64 for
    addresses whose add carries across every piece and both halves (the data path's lockstep
    uses a small host memory, whose adds carry only in the low bits)."""
    import random
    from amaranth.sim import Simulator
    from metaroce.hdl.tx import TxJoin
    from metaroce.models.tx import layouts
    lay = layouts(SMALL["conns"], SMALL["streams"], SMALL["paths"], SMALL["depth"], SMALL["pool"])
    dut = TxJoin(lay, SMALL["outstanding"])
    rng = random.Random(3)
    m64 = (1 << 64) - 1
    pairs = [(m64, 1), (m64 - 5, 5), ((1 << 32) - 1, 1), (0xFFFF_FFFF_0000_0000, 0xFFFF_FFFF),
             (0x0000_0000_FFFF_FFF0, 0x10), (0x1234_FFFF_FFFF_FFFF, 0xFFFF_FFFF)]
    pairs += [(rng.getrandbits(64) | rng.choice((0, 0xFFFF_FFF0, m64 >> 4)), rng.getrandbits(32))
              for _ in range(40)]
    got = []

    async def bench(ctx):
        ctx.set(dut.m_cmd.ready, 1)
        ctx.set(dut.m_desc.ready, 1)
        ctx.set(dut.m_id.ready, 1)
        for laddr, off in pairs + [(None, None)] * 4:
            if laddr is not None:
                ctx.set(dut.s_frame.payload.laddr, laddr)
                ctx.set(dut.s_frame.payload.mrdh_offset, off)
            ctx.set(dut.s_frame.valid, laddr is not None)
            await ctx.tick()
            if ctx.get(dut.m_cmd.valid):
                got.append(ctx.get(dut.m_cmd.payload.addr))

    sim = Simulator(dut)
    sim.add_clock(1e-8)
    sim.add_testbench(bench)
    sim.run()
    assert got == [(a + o) & m64 for a, o in pairs]


@pytest.mark.slow
def test_lockstep_failure_before_last_chunk_64():
    """MR-TXS-027, MR-TXS-035: messages up to 20 chunks with every third one's reads failing, so
    a message fails before its last chunk is sent: its completion takes its unsent chunks out
    of the connection's count, from the completion's registered ``left``, and the AckReq term
    of MR-TXS-026 reads that count for the connection's later packets; 0 mismatches (with the
    count left unchanged at such a completion, the model's frames differ for this seed and the
    RTL's lockstep fails)."""
    sem = sched_sem(SMALL)
    items, lay = xc.traffic(sem, 8, seed=2, max_len=20_000, bad_reads=3)
    drv, _ = lockstep(64, items, lay, xc.templates(2, 4), params=_FAIL, seed=2, loss=0.1,
                      counters=True)
    xc.check(sem, items, drv)


def test_engine_counters_count_together(monkeypatch):
    """MR-TX-371: the engine's counters (MR-TX-126) are not a bank of one-a-cycle counters
    (hw-parser.md MR-HW-103): on the failures' traffic (model) a bad frame's last beat counts
    ``frames`` and ``frames_bad`` in one cycle, an error completion ``completions`` and
    ``completions_err``, and a resend's request ``resends`` beside a completion, so they stay
    registers."""
    from itertools import combinations
    from metaroce.models.tx import TX_CTR
    names = {i: n for n, i in TX_CTR.items()}
    pairs, step = set(), TxCycleModel.step

    def counted_step(self, *a, **k):
        out = step(self, *a, **k)
        pairs.update(combinations(sorted(names[i] for i in set(self.counts_late)), 2))
        return out
    monkeypatch.setattr(TxCycleModel, "step", counted_step)
    _failure_run(8, 1, rtl=False)
    assert {("frames", "frames_bad"), ("completions", "completions_err"),
            ("completions", "resends")} <= pairs, pairs
