"""The whole engine (MR-ENG-130..137): the receive half with the peer's ACKs tapped, the TX
half and the ACK paths between them, the ACK frames built by the TX half's frame builder
(MR-ENG-282..287), in one top (hdl/engine.py
``Engine``) and its composed model (models/engine.py ``EngineModel``). The stimulus is the
engine writing to itself over a lossy loopback (models/cosim_engine.py): its data frames are
placed by its own receive half, whose ACK frames come back to its TX half.
"""

import pytest

from metaroce.models import cosim_engine as ce
from metaroce.models.endpoint import ack_frame, nak_frame
from metaroce.models.engine import (EngineModel, ack_desc, engine_layouts,
                                    is_peer_ack, peer_ack_record)
from metaroce.models import codec, parser
from metaroce.models.frame_builder import builder_bytes, desc_of_frame, pack_desc, unpack_desc
from metaroce.models.tx import template_of
from metaroce.models.tx_cases import ack_record
from metaroce.models.wire import NakReason


def _run_model(nbytes, seed, loss):
    from metaroce.models.cosim import run_loop
    drv, s, region, src = ce.loopback_run(64, nbytes, seed=seed, loss=loss)
    m = EngineModel(64)
    return ce.check(run_loop(drv, m, m.active), region, src)


def test_ack_frames_are_the_endpoints():
    """MR-ENG-133: the descriptor of an ACK/NAK request is the endpoint's ack_frame/nak_frame's
    in every field of the opcode's headers, the other header's fields carrying the record too
    (MR-TXF-003: the builder ignores them), and the frame builder's bytes of it are that
    frame's bytes."""
    row = template_of(0, eth_dst="02:00:00:00:00:02", eth_src="02:00:00:00:00:01", ip_src="10.0.0.2",
                      ip_dst="10.0.0.1", sports=[0] * 4, pkey=0x1234, dest_qp=0x800005)

    def fields(d, other):
        return {k: v for k, v in unpack_desc(pack_desc(d)).items() if not k.startswith(other)}

    a = {"nak": 0, "conn": 0, "path": 2, "psn": 99, "reason": 0, "cum": 100, "sack": 0b101,
         "ce_count": 3, "ece": 1, "sport": 4711}
    want = ack_frame("10.0.0.2", "10.0.0.1", 0x1234, 0x800005, 4711, 2, 100, 0b101, 3, 0, 99)
    d = ack_desc(a, row)
    assert fields(d, "mrnh_") == fields(desc_of_frame(want), "mrnh_")
    assert d["mrnh_psn"] == 99 and d["mrnh_path"] == 2          # the NAK header's, ignored
    assert builder_bytes(unpack_desc(pack_desc(d)), b"") == codec.encode(want)
    n = dict(a, nak=1, reason=int(NakReason.ACCESS), psn=77)
    want = nak_frame("10.0.0.2", "10.0.0.1", 0x1234, 0x800005, 4711, 2, NakReason.ACCESS, 77)
    d = ack_desc(n, row)
    assert fields(d, "mrah_") == fields(desc_of_frame(want), "mrah_")
    assert d["mrah_sack"] == 0b101 and d["mrah_cum_psn"] == 100   # the ACK header's, ignored
    assert builder_bytes(unpack_desc(pack_desc(d)), b"") == codec.encode(want)


def test_peer_ack_records_are_ack_record():
    """MR-ENG-131/132: the parser's record of an ACK or NAK frame is tapped and becomes the
    record ``tx_cases.ack_record`` makes of the frame (the TX-direction loop's decoding)."""
    for f in (ack_frame("10.0.0.2", "10.0.0.1", 0x1234, 1, 4711, 3, 100, 0b11 << 40, 0, 0, 98),
              nak_frame("10.0.0.2", "10.0.0.1", 0x1234, 1, 4711, 1, NakReason.PSN_WINDOW, 77)):
        raw = codec.encode(f)
        _, meta, _ = parser.verdict(raw)
        assert is_peer_ack(meta)
        assert peer_ack_record(meta, 2) == ack_record(codec.decode(codec.encode(f)), 1)
        assert peer_ack_record(meta, 1) is None          # DestQP 1 names no connection of 1


def test_engine_model_loopback():
    """MR-ENG-137 on the model: 6 KiB written to itself at 10 % loss; memory = source, every WR
    complete, frames lost both ways and recovered."""
    r = _run_model(6 * 1024, seed=2, loss=0.1)
    assert r["lost"] > 0 and r["frames_out"] > r["frames_in"]


class _FrameKinds:
    """The engine model with its frames on ``m_axis`` sorted by the TX half's kind queue's head
    (MR-TX-282): ACK frames and data frames, and the ACK frames' first bytes' opcodes."""

    def __init__(self, m):
        self.m, self.acks, self.data, self.beats, self.ack_ops = m, 0, 0, 0, set()

    def step(self, inp):
        ack = self.m.tx.data.ack_head()
        out = self.m.step(inp)
        if out["m_axis__tvalid"] and inp.get("m_axis__tready", 0):
            if self.beats == 5 and ack:
                # beat 5 at 64 bits: bytes 40..47, the BTH's opcode at byte 42 (IPv4, no VLAN)
                self.ack_ops.add(out["m_axis__tdata"] >> 16 & 0xFF)
            self.beats = 0 if out["m_axis__tlast"] else self.beats + 1
            if out["m_axis__tlast"]:
                self.acks += ack
                self.data += not ack
        return out


def test_one_builder_frames_and_counters_model():
    """MR-ENG-282..285 on the model: the loopback's ACK frames leave the TX half's one builder
    (the kind queue marks them; their opcode MR_ACK), the WRITEs complete and the memory equals
    the source; the TX half's ``frames`` counter counts the data frames only (MR-TX-283)."""
    from metaroce.models.cosim import run_loop
    from metaroce.models.tx import TX_CTR
    from metaroce.models.wire import Op
    drv, s, region, src = ce.loopback_run(64, 3 * 1024, seed=4, loss=0.0)
    m = EngineModel(64)
    k = _FrameKinds(m)
    ce.check(run_loop(drv, k, m.active), region, src)
    for _ in range(3):          # the last increments land a cycle later (MR-TX-126)
        k.step({})
    assert k.acks > 0 and k.data > 0 and int(Op.MR_ACK) in k.ack_ops
    assert m.tx.counters[TX_CTR["frames"]] == k.data


def _lockstep_amaranth(nbytes, seed, loss, **kw):
    from metaroce.hdl.engine import Engine
    from metaroce.tb.lockstep import run_amaranth
    drv, s, region, src = ce.loopback_run(64, nbytes, seed=seed, loss=loss, **kw)
    model = EngineModel(64, max_frame=2048)
    core = run_amaranth(Engine(64, max_frame=2048), model, drv, busy=model.active)
    assert core.mismatches == 0
    return ce.check(drv, region, src), core


def _tx_counter_model():
    from metaroce.models import engine_cases as ec
    from metaroce.models.cosim import run_loop
    cl, s, region, src, bad = ec.tx_counter_run()
    m = EngineModel(64, retry_limit=ec.TX_COUNTER_RETRY_LIMIT, max_frame=2048)
    run_loop(cl, m, m.active)
    return cl, m, region, src, bad


def test_engine_model_every_counter_through_axil():
    """MR-ENG-105, MR-REG-033/034, MR-TX-040/126: the whole engine's model writing to itself
    over a loopback with scripted faults (a gap, a tail lost twice, a stale ACK, a forged bad
    ACK and NAK, a payload read that fails, the retry limit at 1): every TX counter but
    ``sent_bad`` moves, and every RX, parser and TX counter read through ``s_axil`` (LO then
    HI) equals the model's own. Negative controls: a TX or a parser counter read one more
    fails the check."""
    from metaroce.models import engine_cases as ec
    from metaroce.models.regs import tx_counter_names
    cl, m, region, src, bad = _tx_counter_model()
    got = ec.check_counter_loop(cl, m, region, src, bad)
    tx = dict(zip(tx_counter_names(), got["tx"]))
    assert tx["SENT_BAD"] == 0 and tx["ERRORS"] >= 1 and tx["FRAMES_BAD"] >= 1 and tx["ACKS_BAD"] >= 1
    assert got["parser"][0] > 0
    r = cl.readout.res["r"]
    from metaroce.models.rx import N_COUNTERS as RX_COUNTERS
    base = {"parser": 2 * RX_COUNTERS, "tx": 2 * (RX_COUNTERS + 10)}   # MR-REG-034: after the RX's
    for src_name, k, match in (("tx", 7, "TX counters"), ("parser", 0, "parser counters")):
        i = next(i for i, (j, _, _) in enumerate(r) if j == base[src_name] + 2 * k)
        r[i] = (r[i][0], r[i][1], r[i][2] + 1)
        with pytest.raises(AssertionError, match=match):
            ec.check_counter_loop(cl, m, region, src, bad)
        r[i] = (r[i][0], r[i][1], r[i][2] - 1)
    ec.check_counter_loop(cl, m, region, src, bad)


# The Amaranth simulator takes minutes for the whole engine (1,106 cycles: 626 s at load 12 on
# 2 cores, most of it building the simulation): slow; the default run has the model tests.
@pytest.mark.slow
def test_engine_lockstep_amaranth_short():
    """MR-ENG-136/137, MR-ENG-286: the RTL (Amaranth simulator) and EngineModel in lockstep,
    every output every cycle, with backpressure on every output and random AXI latencies (the
    ACK frames from the TX half's one frame builder): one WRITE of
    1,100 bytes to itself (two data frames placed, their ACK frames back into the TX half)."""
    r, core = _lockstep_amaranth(1100, seed=3, loss=0.0, n_writes=1)
    assert r["placements"] >= 2 and r["frames_in"] >= 3 and core.cycle > 500


@pytest.mark.slow
def test_engine_lockstep_amaranth_lossy():
    """MR-ENG-137: as the short one, 6 KiB in 3 WRITEs at 10 % loss (resends from the ACKs)."""
    r, core = _lockstep_amaranth(6 * 1024, seed=2, loss=0.1)
    assert r["lost"] > 0


@pytest.mark.slow
def test_engine_every_counter_lockstep_amaranth():
    """MR-ENG-105, MR-REG-031..034, MR-ENG-137: the RTL (Amaranth simulator) and EngineModel in
    lockstep, every output every cycle, on :func:`engine_cases.tx_counter_run` (backpressure on
    every output, random AXI latencies): every TX counter but ``sent_bad`` moves, and every
    RX, parser and TX counter read back through ``s_axil``, LO then HI, equals the model's."""
    from metaroce.hdl.engine import Engine
    from metaroce.models import engine_cases as ec
    from metaroce.tb.lockstep import run_amaranth
    cl, s, region, src, bad = ec.tx_counter_run()
    model = EngineModel(64, retry_limit=ec.TX_COUNTER_RETRY_LIMIT, max_frame=2048)
    core = run_amaranth(Engine(64, max_frame=2048, retry_limit=ec.TX_COUNTER_RETRY_LIMIT), model, cl,
                        busy=model.active)
    assert core.mismatches == 0 and cl.readout.finished
    ec.check_counter_loop(cl, model, region, src, bad)


@pytest.mark.slow
def test_engine_verilog_port_names():
    """MR-ENG-135: the Verilog ports are exactly the model's plus clk and rst."""
    from metaroce.hdl.engine import Engine
    from metaroce.tb.lockstep import verilog_ports
    ports = verilog_ports(Engine(64, max_frame=2048), "engine")
    names = EngineModel(64).port_names()
    assert ports == set(names["inputs"]) | set(names["outputs"]) | {"clk", "rst"}
    assert engine_layouts().conns == 2


def test_engine_tx_parameters():
    """MR-ENG-130: the whole engine's TX half takes the engine's chunk window, initial RTO and
    fixed windows (not the TX block's), and an argument overrides each."""
    from metaroce.models.engine import (ENGINE_CHUNK_WINDOW, ENGINE_CONN_WINDOW, ENGINE_CWND,
                                        ENGINE_RTO_NS, engine_tx_params)
    kw = engine_tx_params({})
    assert (kw["chunk_window"], kw["rto_ns"], kw["cwnd"], kw["conn_window"]) == (
        ENGINE_CHUNK_WINDOW, ENGINE_RTO_NS, ENGINE_CWND, ENGINE_CONN_WINDOW) == (32, 160_000, 6_250, 25_000)
    sched = EngineModel(64).tx.sched.sem
    assert (sched.chunk_window, sched.cwnd, sched.conn_window) == (32, 6_250, 25_000)
    assert EngineModel(64, cwnd=12_500).tx.sched.sem.cwnd == 12_500


def test_two_engines_model(capsys):
    """MR-ENG-138: ``metaroce cosim --peer rtl --engine model``: two whole engines (cycle
    models) over the fabric, h0 writing to h1 and h1 back; both memories equal their sources,
    every WR of both complete; the model <-> model endpoints' reference completes too, with the
    same completions as the engines (MR-ENG-290)."""
    import json
    from metaroce.cli import main
    assert main(["cosim", "--peer", "rtl", "--engine", "model", "--json", "--bytes", "8192",
                 "--loss", "0.05", "--seed", "3"]) == 0
    r = json.loads(capsys.readouterr().out)
    assert list(r)[:6] == ["ok", "sha256_match", "bytes", "goodput_vs_limit", "cycles", "mismatches"]
    assert r["ok"] and r["sha256_match"] and r["wrs_completed_ok"] and r["reference"]["ok"]
    assert r["bytes_back"] == 1024 and r["engines"]["h1"]["placements"] >= 8
    # MR-ENG-290: engine <-> engine gives the completions model <-> model endpoints give on the
    # same WRITEs (each host's, per stream in order, MR-ENG-202)
    for h in ("h0", "h1"):
        assert r["engines"][h]["completions_digest"] == r["reference"]["completions_digest"][h], h


def test_completions_digest_bites():
    """MR-ENG-290's check, its negative controls: the digest of a host's completions (MR-ENG-202)
    is blind to how the streams interleave, and changes when a stream's completions come in
    another order, one is missing, or one's status or length is another."""
    comps = [(0, 100, 0, 2, 4096), (1, 101, 0, 2, 2048), (0, 102, 0, 2, 1024), (1, 103, 0, 2, 512)]
    d = ce.completions_digest(comps)
    assert ce.completions_digest([comps[1], comps[0], comps[3], comps[2]]) == d
    assert ce.completions_digest([comps[2], comps[1], comps[0], comps[3]]) != d     # stream 0 swapped
    assert ce.completions_digest(comps[:3]) != d
    assert ce.completions_digest([*comps[:3], (1, 103, 5, 2, 512)]) != d
    assert ce.completions_digest([*comps[:3], (1, 103, 0, 2, 511)]) != d


@pytest.mark.slow
def test_two_engines_rtl_lockstep():
    """MR-ENG-138 on the RTL (the block ``engine`` under Verilator) against the peer engine's
    model, the RTL's own model alongside in lockstep: 0 mismatches; 32 KiB at 2 % loss."""
    from metaroce.commands.cosim import run_rtl
    from metaroce.models import cosim, cosim_tx
    cfg = cosim.Config(**{**cosim_tx.TX_CONFIG, "n_conns": 1, "nbytes": 32 * 1024, "loss": 0.02,
                          "seed": 2})
    r = run_rtl(cfg, lockstep=True, direction="peer")
    assert r["ok"] and r["mismatches"] == 0


def test_ack_path_rtl_builds_the_endpoints_frames():
    """MR-ENG-133, MR-TXF-003: AckOut and the ACK frame builder joined as in ``Engine`` (the
    RTL, Amaranth simulator): an ACK request and then a NAK request whose record also holds a
    SACK and a cumulative PSN (which reach the descriptor's MRAH fields) leave as the
    endpoint's ``ack_frame`` and ``nak_frame``, byte for byte."""
    from amaranth.hdl import Module
    from amaranth.lib import wiring
    from amaranth.sim import Simulator
    from metaroce.hdl.engine import AckOut
    from metaroce.hdl.frame_builder import FrameBuilder
    from metaroce.models.rx import SMALL as RX_SMALL, layouts as rx_layouts, pack

    lay = engine_layouts(2)
    ack_lay = rx_layouts(conns=2, paths=4, keys=256, streams=RX_SMALL["streams"]).ack
    m = Module()
    m.submodules.ack_out = ao = AckOut(2, ack_lay, lay.cfg)
    m.submodules.ack_fb = fb = FrameBuilder(64)
    wiring.connect(m, ao.m_desc, fb.s_desc)
    m.d.comb += fb.s_payload.valid.eq(0)
    row = template_of(1, eth_dst="02:00:00:00:00:02", eth_src="02:00:00:00:00:01", ip_src="10.0.0.2",
                      ip_dst="10.0.0.1", sports=[0] * 4, pkey=0x1234, dest_qp=0x800005)
    ack = {"nak": 0, "conn": 1, "path": 2, "psn": 99, "reason": 0, "cum": 100, "sack": 0b101 << 200,
           "ce_count": 3, "ece": 1, "sport": 4711}
    nak = dict(ack, nak=1, reason=int(NakReason.ACCESS), psn=77)
    want = [codec.encode(ack_frame("10.0.0.2", "10.0.0.1", 0x1234, 0x800005, 4711, 2, 100,
                                   0b101 << 200, 3, 0, 99)),
            codec.encode(nak_frame("10.0.0.2", "10.0.0.1", 0x1234, 0x800005, 4711, 2,
                                   NakReason.ACCESS, 77))]
    frames, cur = [], bytearray()

    async def bench(ctx):
        ctx.set(ao.s_cfg.payload.as_value(), pack(lay.cfg, row))
        ctx.set(ao.s_cfg.valid, 1)
        await ctx.tick()
        ctx.set(ao.s_cfg.valid, 0)
        for rec in (ack, nak):
            ctx.set(ao.s_ack.payload.as_value(), pack(ack_lay, rec))
            ctx.set(ao.s_ack.valid, 1)
            while not ctx.get(ao.s_ack.ready):
                await ctx.tick()
            await ctx.tick()
            ctx.set(ao.s_ack.valid, 0)
        for _ in range(200):
            if len(frames) == 2:
                break
            await ctx.tick()

    async def sink(ctx):
        ctx.set(fb.m_axis.tready, 1)
        async for _, _, v, d, k, last in ctx.tick().sample(fb.m_axis.tvalid, fb.m_axis.tdata,
                                                          fb.m_axis.tkeep, fb.m_axis.tlast):
            if v:
                cur.extend(d.to_bytes(8, "little")[:k.bit_length()])
                if last:
                    frames.append(bytes(cur))
                    cur.clear()

    sim = Simulator(m)
    sim.add_clock(1e-8)
    sim.add_testbench(bench)
    sim.add_process(sink)
    sim.run()
    assert frames == want


# ------------------------------------------------------------------ READs (MR-ENG-140..146)

def _read_loopback_model(nbytes, seed, loss, **kw):
    """The engine READing its own memory over the lossy loopback (model), then its own counters
    read through ``s_axil`` (MR-ENG-143), run until the TX half is idle (its responses
    acknowledged, so that every item has its ``m_rsp_done`` record)."""
    from metaroce.models import engine_cases as ec
    from metaroce.models.cosim import run_loop
    drv, s, region, src = ce.loopback_run(64, nbytes, seed=seed, loss=loss, verb="read", **kw)
    cl = ec.CounterLoop(drv, sources=("eng",), seed=seed)
    m = EngineModel(64)
    run_loop(cl, m, m.busy)
    return drv, cl, m, region, src


def test_engine_model_loopback_reads():
    """MR-ENG-140..145, MR-TX-186 on the model: 6,000 bytes READ by the engine from itself in 3 READs at
    10 % loss: its receive half executes each request, the item goes through RspJoin to its TX
    half, whose response frames leave ``m_axis`` with the payload memory's bytes (checked frame
    by frame) and come back to be placed; the destination equals the source, every READ
    completes once on ``m_cqe`` (and its request on ``m_tx_cqe``), and the engine's counters
    read through AXI4-Lite say 3 items, 3 responses done, 0 failed (the model's own)."""
    drv, cl, m, region, src = _read_loopback_model(6000, seed=2, loss=0.1)
    r = ce.check(drv, region, src)
    assert r["lost"] > 0 and r["reads"] == 3 and r["rsp_frames"] >= 6
    # MR-ENG-226: the executor's counters after them, at 0 (no atomics)
    # MR-ENG-305: then the ignored initial-PSN writes, 0 (no table 9 row)
    assert cl.counters["eng"] == list(m.rsp.ctr) + m.rx.atom.ctr + [m.psn.ctr] == [3, 3, 0, 0, 0, 0, 0, 0]


def test_engine_model_read_response_check_fails_on_a_wrong_read():
    """MR-ENG-145, negative controls: the response frames checked against a READ of another
    length (the served table altered) fail the run's check, and so do responses to a READ the
    peer never posted (its entry removed)."""
    from metaroce.models.cosim import run_loop
    for alter, why in (("length", "message length"), ("remove", "a response to no READ")):
        drv, s, region, src = ce.loopback_run(64, 1500, seed=4, loss=0.0, verb="read", n_writes=2)
        k = next(iter(drv.served))
        if alter == "length":
            drv.served[k] = (drv.served[k][0], drv.served[k][1] + 1)
        else:
            del drv.served[k]
        m = EngineModel(64)
        run_loop(drv, m, m.active)
        with pytest.raises(AssertionError, match="READ responses"):
            ce.check(drv, region, src)
        assert any(why in e for e in drv.res["rsp_errors"])


def test_read_plan_writes_no_row():
    """MR-ENG-148, MR-ENG-146/147: a run's READs are work requests only: the host writes no
    outstanding-read row (table 6), so a stream takes any number of READs (here 3 on one
    stream, more than its 2 rows)."""
    from metaroce.models.rx import TABLE_READ
    from metaroce.models.rx_cases import Setup
    s = Setup(2, 4, 256, streams=4, seed=1, n_conns=1, mtu_log2=10, n_streams=2, first_psn=0)
    dst = s.keys[1]
    n0 = len(s.writes)
    pieces = [(0, 0, 10), (1, 10, 20), (0, 30, 5), (1, 35, 1), (0, 36, 4)]
    items = ce.read_plan(s, 1, pieces, dst, 0x1234)
    assert len(s.writes) == n0 and not any(w.table == TABLE_READ for w in s.writes)
    assert [w["op"] for w in items] == [4] * 5 and [w["wr_id"] for w in items] == list(range(100, 105))
    assert [w["laddr"] - dst.base for w in items] == [0, 10, 30, 35, 36]
    assert ce.served_reads(pieces, dst)[(0, 2)] == (dst.base + 36, 4)


def _many_reads_model(rd_rows_cls=None, max_cycles=None):
    from metaroce.models.cosim import run_loop
    drv, s, region, src = ce.loopback_run(64, 20000, seed=2, loss=0.05, verb="read", n_writes=16)
    m = EngineModel(64)
    if rd_rows_cls is not None:
        m.rd.__class__ = rd_rows_cls
    run_loop(drv, m, m.active, max_cycles=max_cycles)
    return drv, m, region, src


def test_engine_model_loopback_many_reads():
    """MR-ENG-148..152, MR-TXS-106..108 on the model: 16 READs on 2 streams (8 a stream, 4 times its 2
    outstanding-read rows) of 20,000 bytes of the engine's own memory at 5 % loss, with
    backpressure: the engine writes each READ's row as the scheduler takes it (16 rows written,
    none by the host), holds the READs whose row is busy (cycles waited), frees each row by its
    READ's completion (the join's, MR-ENG-203); every READ completes once, the destination
    equals the source, and the host gets one completion a READ (MR-ENG-196..202, MR-ENG-202,
    MR-ENG-205: the run ends, MR-ENG-213, MR-ENG-215: on
    ``m_tx_cqe``, op READ, the READ's length, each stream's in posting order; no RDMA_READ
    record on ``m_cqe``), each made of the RX's record."""
    drv, m, region, src = _many_reads_model()
    r = ce.check(drv, region, src)
    assert r["reads"] == 16 and m.rd.writes == 16 and m.rd.waits > 0 and m.rd.busy == {}
    # MR-ENG-152: a row write waits for the RX a few cycles at most, far below a round trip
    assert m.rd.pend_max <= 8
    assert len(drv.res["tx_cqe"]) == 16 and drv.posting_order_ok() and drv.res["requester_on_cqe"] == 0
    assert not drv.res["rx_cqe"] and m.cq.joined == 16 and m.cq.unmatched == 0
    want = ce.completions_by_stream([(w["stream"], w["wr_id"], 0, 2, w["length"]) for w in drv.items])
    assert ce.completions_by_stream(drv.completions()) == want
    # MR-ENG-246: the responder resources on (max_rd_atomic 8): the engine's 4 READs in flight
    # take them without an RNR, and every response's record frees its resource (MR-ENG-240)
    from metaroce.models.rx import RxCode
    from test_engine_resources import drain_frees
    drain_frees(drv, m)
    rx = m.rx.rx.rx
    assert rx.max_rd_atomic == 8 and rx.counters[RxCode.RNR] == 0 and not any(rx.rsp_used.values())
    assert m.rsp.ctr[0] == m.rsp.ctr[1] == m.rsp.frees == 16 and m.rsp.free_max >= 1


def test_engine_model_two_records_without_the_join():
    """MR-ENG-196, MR-ENG-154: ``EngineModel(cq_join=False)``: the earlier behaviour, a READ's
    request record on ``m_tx_cqe`` and its RDMA_READ record on ``m_cqe`` (the host joins them);
    the same run completes, every READ twice."""
    from metaroce.models.cosim import run_loop
    drv, s, region, src = ce.loopback_run(64, 6000, seed=2, loss=0.05, verb="read", n_writes=6)
    drv.cq_join = False
    m = EngineModel(64, cq_join=False)
    run_loop(drv, m, m.active)
    r = ce.check(drv, region, src)
    assert r["reads"] == 6 and len(drv.res["tx_cqe"]) == 6 and len(drv.res["rx_cqe"]) == 6
    assert m.cq is None


def test_engine_model_reads_fail_with_a_reordering_join():
    """MR-ENG-212, negative control at the engine: the join's stream queues serving their newest
    record first (the model's ``CqJoinModel.q`` replaced): the 16-READ loopback's completions
    leave a stream out of posting order, and the run's check fails."""
    from metaroce.models.cosim import run_loop
    from metaroce.models.fifo import SyncFifoModel

    class Lifo(SyncFifoModel):
        @property
        def head(self):
            return self.mem[(self.produce - 1) % self.depth]

        def update(self, pop, push, value=0):
            pop, push = bool(pop) and self.level > 0, bool(push) and self.level < self.depth
            if pop:
                self.produce = (self.produce - 1) % self.depth
            if push:
                self.mem[self.produce] = value
                self.produce = (self.produce + 1) % self.depth
            self.level += int(push) - int(pop)

    drv, s, region, src = ce.loopback_run(64, 20000, seed=2, loss=0.05, verb="read", n_writes=16)
    m = EngineModel(64)
    m.cq.q = [Lifo(q.depth) for q in m.cq.q]
    run_loop(drv, m, m.active)
    assert not drv.posting_order_ok()
    with pytest.raises(AssertionError, match="MR-RX-112"):
        ce.check(drv, region, src)


@pytest.mark.slow
def test_engine_model_reads_fail_without_the_row_write():
    """MR-ENG-148/149, negative control: the engine's row write dropped (RdRows' register emptied
    without the RX taking it on ``s_cfg_eng``): the responses find no row (no_read), and the run
    does not finish in ten times the cycles the good run takes."""
    from metaroce.models.engine import RdRowsModel

    class NoWrite(RdRowsModel):
        def out(self):
            return 0, 0

    drv, *_ = _many_reads_model()
    with pytest.raises(AssertionError, match="not finished"):
        bad, *_ = _many_reads_model(NoWrite, max_cycles=10 * drv.cycle)


class _RspJoinPorts:
    """``RspJoinModel`` with the RTL block's ports (``hdl.engine.RspJoin``) for the lockstep."""

    def __init__(self, lay):
        from metaroce.models.engine import RspJoinModel
        self.j, self.lay = RspJoinModel(lay.rsp_done), lay

    def port_names(self):
        return {"inputs": ["s_rsp__payload", "s_rsp__valid", "m_rsp__ready", "s_done__payload",
                           "s_done__valid", "reg_addr"],
                "outputs": ["s_rsp__ready", "m_rsp__payload", "m_rsp__valid", "s_done__ready",
                            "reg_data"]}

    def busy(self):
        return self.j.busy()

    def step(self, i):
        v, head = self.j.out()
        out = {"s_rsp__ready": self.j.in_ready(), "m_rsp__payload": head, "m_rsp__valid": v,
               "s_done__ready": 1, "reg_data": self.j.reg_data}
        self.j.step(i["s_rsp__valid"], i["s_rsp__payload"], i["m_rsp__ready"], i["s_done__valid"],
                    i["s_done__payload"], i["reg_addr"])
        return out


class _RspJoinDriver:
    """Random items, readies, done records (a third failed) and counter selects."""

    def __init__(self, lay, seed, cycles=400):
        import random
        from metaroce.models.rx import pack
        self.rng, self.lay, self.pack, self.left = random.Random(seed), lay, pack, cycles
        self.items = self.taken = self.done = 0

    @property
    def finished(self):
        return self.left <= 0

    def inputs(self):
        r, lay = self.rng, self.lay
        return {"s_rsp__valid": int(r.random() < 0.6),
                "s_rsp__payload": self.pack(lay.rsp, {"conn": r.randrange(2), "stream": r.randrange(2),
                                                      "msg": r.getrandbits(32), "laddr": r.getrandbits(64),
                                                      "length": r.getrandbits(20), "err": r.randrange(2)}),
                "m_rsp__ready": int(r.random() < 0.5), "s_done__valid": int(r.random() < 0.3),
                "s_done__payload": self.pack(lay.rsp_done, {"conn": 1, "stream": 1, "msg": 7,
                                                            "status": r.choice([0, 0, 12])}),
                "reg_addr": r.randrange(5)}

    def observe(self, inp, out):
        self.items += inp["s_rsp__valid"] and out["s_rsp__ready"]
        self.taken += out["m_rsp__valid"] and inp["m_rsp__ready"]
        self.done += inp["s_done__valid"]
        self.left -= 1

    def settle(self, busy):
        pass


def test_rsp_join_lockstep_amaranth():
    """MR-ENG-141..143: RspJoin (RTL, Amaranth simulator) and RspJoinModel in lockstep, every
    output every cycle, on random items with random readies, done records (some failed) and
    counter selects (beyond the three counters too): 0 mismatches (so the items leave as the
    model's FIFO passes them, the counters read as the model's), every item taken and counted,
    every done record taken and counted, failed ones apart."""
    from metaroce.hdl.engine import RspJoin
    from metaroce.tb.lockstep import run_amaranth
    lay = engine_layouts().sched
    model = _RspJoinPorts(lay)
    drv = _RspJoinDriver(lay, seed=5)
    core = run_amaranth(RspJoin(lay.rsp, lay.rsp_done), model, drv)
    assert core.mismatches == 0
    ctr = model.j.ctr
    assert drv.items == ctr[0] > 50 and drv.taken >= drv.items - 1 and ctr[1] + ctr[2] == drv.done
    assert ctr[1] > 0 and ctr[2] > 0


def test_two_engines_model_reads(capsys):
    """MR-ENG-146, MR-ENG-124's ``--writes``: ``metaroce cosim --peer rtl --engine model --verb
    read --writes 12``: h1 READs 8 KiB of h0's memory and h0 1 KiB of h1's at 5 % loss, 12 READs
    each (6 a stream, 3 times its rows: the engines write the rows, MR-ENG-148); each engine
    answers the other's READs (every response frame checked); both destinations equal their
    sources, every READ completes once; the reference endpoints' READs complete too.
    ``--writes`` without a whole engine is MR-CLI-001's exit 2."""
    import json
    from metaroce.cli import main
    assert main(["cosim", "--peer", "rtl", "--engine", "model", "--json", "--bytes", "8192",
                 "--loss", "0.05", "--seed", "3", "--verb", "read", "--writes", "12"]) == 0
    r = json.loads(capsys.readouterr().out)
    assert list(r)[:6] == ["ok", "sha256_match", "bytes", "goodput_vs_limit", "cycles", "mismatches"]
    assert r["ok"] and r["sha256_match"] and r["wrs_completed_ok"] and r["reference"]["ok"]
    assert r["config"]["verb"] == "read"
    for h in ("h0", "h1"):
        e = r["engines"][h]
        assert e["reads_completed"] >= 1 and e["response_frames"] >= 1 and not e["response_errors"]
    assert main(["cosim", "--verb", "read", "--engine", "model"]) == 2      # READs need whole engines
    assert main(["cosim", "--writes", "3", "--engine", "model"]) == 2
    for h in ("h0", "h1"):
        assert r["engines"][h]["reads_completed"] == 12
        # MR-ENG-213: one completion a READ, each stream's in posting order, as the reference's
        assert r["engines"][h]["completions_digest"] == r["reference"]["completions_digest"][h]


@pytest.mark.parametrize("direction", ["rx", pytest.param("tx", marks=pytest.mark.slow)])
def test_engine_endpoint_model_reads(direction):
    """MR-ENG-146 with the reference endpoint (model): ``rx``, the engine READs 8 KiB of the
    endpoint's memory and answers its READs of 1 KiB; ``tx``, the other way round. The endpoint
    takes the engine's responses (its own READs complete, its buffer equals the engine's
    source) and answers the engine's READs."""
    from metaroce.models import cosim, cosim_tx
    cfg = cosim.Config(**{**cosim_tx.TX_CONFIG, "n_conns": 1, "nbytes": 8192, "loss": 0.05, "seed": 3,
                          "verb": "read"})
    r = ce.run_endpoint_model(cfg, direction)
    assert r["ok"] and r["sha256_match"] and r["engine"]["reads_completed"] >= 1
    assert r["engine"]["response_frames"] >= 1 and not r["engine"]["response_errors"]
    # MR-ENG-213: the engine's completions (one a READ, each stream's in posting order) are the
    # reference endpoint's on the same READs
    ref = ce.run_reference_pair(cfg, *ce.reference_writes(cfg, "endpoint", direction))
    host = int(r["engine"]["host"][1])
    assert ref["ok"] and r["engine"]["completions_digest"] == ref["completions_digest"][host]


def test_engine_answers_many_endpoint_reads():
    """MR-ENG-157: the endpoint posts 24 READs of 512 bytes of the engine's memory (more than the
    engine RX's message slots per stream at once, had the endpoint its default bound of 8): with
    its message bound the RX's, every READ is answered and completes, no chunk is refused by the
    RX's message table (counter 20), and the endpoint's buffer equals the engine's source."""
    from metaroce.models import cosim, cosim_tx
    from metaroce.models.rx import CTR_MSG_REFUSED
    cfg = cosim.Config(**{**cosim_tx.TX_CONFIG, "n_conns": 1, "nbytes": 12288, "loss": 0.0, "seed": 1,
                          "verb": "read", "back": 4, "n_writes": 24})
    sim = ce.EndpointCosim(cfg, "tx")
    from metaroce.models.engine import EngineModel
    m = EngineModel(cfg.width, **ce.engine_kw(cfg))
    r = ce.run_loop(sim, m, m.active).result()
    assert r["ok"] and r["sha256_match"] and r["engine"]["response_frames"] >= 24
    assert m.rx.rx.rx.counters[CTR_MSG_REFUSED] == 0
    assert m.rsp.ctr[0] == 24


@pytest.mark.slow
def test_engine_lockstep_amaranth_read():
    """MR-ENG-140..145 on the RTL (Amaranth simulator): the engine READing 1,100 bytes of its
    own memory in one READ over the loopback, in lockstep with EngineModel, every output every
    cycle, with backpressure on every output and random AXI latencies: the request goes out of
    ``m_axis`` and comes back to the receive half, which executes it; the TX half's two
    response frames leave ``m_axis`` (checked) and are placed; 0 mismatches."""
    from metaroce.hdl.engine import Engine
    from metaroce.tb.lockstep import run_amaranth
    drv, s, region, src = ce.loopback_run(64, 1100, seed=3, loss=0.0, n_writes=1, verb="read")
    model = EngineModel(64, max_frame=2048)
    core = run_amaranth(Engine(64, max_frame=2048), model, drv, busy=model.active)
    assert core.mismatches == 0
    r = ce.check(drv, region, src)
    assert r["reads"] == 1 and r["rsp_frames"] >= 2 and model.rsp.ctr[0] == 1


@pytest.mark.slow
def test_two_engines_many_reads_rtl_lockstep():
    """MR-ENG-148..153, MR-ENG-155, MR-TXS-106..108 on the RTL (Verilator, the pair build): h1 READs 64 KiB
    of h0 in 32 READs (16 a stream, 8 times its 2 outstanding-read rows) and h0 8 KiB of h1 in
    32 more, at 2 % loss, every output of both engines and both host memories back-pressured at
    20 % (so the completion records that free the rows wait too): the engines write every row
    and hold the READs for them; ``EnginePairModel`` in lockstep, 0 mismatches; both
    destinations equal their sources, every READ completes once (MR-ENG-196..214: one record a
    READ on ``m_tx_cqe``, each stream's in posting order, as the reference endpoints'
    completions). The drivers check that every output is a function of the engines' state
    (MR-ENG-155's FIFO keeps ``s_wr.ready`` so; MR-ENG-199's hold too)."""
    from metaroce.commands.cosim import run_rtl
    from metaroce.models import cosim, cosim_tx
    cfg = cosim.Config(**{**cosim_tx.TX_CONFIG, "n_conns": 1, "nbytes": 64 * 1024, "loss": 0.02,
                          "seed": 2, "verb": "read", "n_writes": 32})
    r = run_rtl(cfg, lockstep=True, direction="pair", p_bp=0.2)
    assert r["ok"] and r["sha256_match"] and r["mismatches"] == 0
    assert all(e["reads_completed"] == 32 for e in r["engines"].values())
    _assert_reference_completions(cfg, r, "peer")


def _assert_reference_completions(cfg, r, kind, direction="rx"):
    """MR-ENG-213/214: every engine's completions (one a work request, each stream's in posting
    order, ``ok`` checks it) equal the reference endpoints' on the same work requests."""
    ref = ce.run_reference_pair(cfg, *ce.reference_writes(cfg, kind, direction))
    assert ref["ok"]
    engines = r["engines"] if "engines" in r else {r["engine"]["host"]: r["engine"]}
    for h, e in engines.items():
        assert e["completions_digest"] == ref["completions_digest"][int(h[1])], h


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["peer", "pair"])
def test_two_engines_reads_rtl_lockstep(kind):
    """MR-ENG-146 on the RTL (Verilator): READs between two engines, ``peer`` the block
    ``engine`` on h1 against its model on h0, ``pair`` both RTL (the pair build); the RTL's
    model alongside in lockstep, every output every cycle: 0 mismatches; 32 KiB at 2 % loss;
    MR-ENG-214: one completion a READ, as the reference endpoints' (MR-ENG-213)."""
    from metaroce.commands.cosim import run_rtl
    from metaroce.models import cosim, cosim_tx
    cfg = cosim.Config(**{**cosim_tx.TX_CONFIG, "n_conns": 1, "nbytes": 32 * 1024, "loss": 0.02,
                          "seed": 2, "verb": "read"})
    r = run_rtl(cfg, lockstep=True, direction=kind)
    assert r["ok"] and r["mismatches"] == 0
    assert all(e["reads_completed"] >= 1 and e["response_frames"] >= 1 for e in r["engines"].values())
    _assert_reference_completions(cfg, r, "peer")


@pytest.mark.slow
@pytest.mark.parametrize("direction", ["rx", "tx"])
def test_engine_endpoint_reads_rtl_lockstep(direction):
    """MR-ENG-146, MR-ENG-214 on the RTL (Verilator, one engine of the pair build against the
    reference endpoint, ``EnginePairModel`` in lockstep): the READ runs of
    ``test_engine_endpoint_model_reads`` (8 KiB at 5 % loss): ok, 0 mismatches, and the engine's
    completions (one a READ, each stream's in posting order) are the reference endpoints' on the
    same READs (MR-ENG-213)."""
    from metaroce.commands.cosim import run_rtl
    from metaroce.models import cosim, cosim_tx
    cfg = cosim.Config(**{**cosim_tx.TX_CONFIG, "n_conns": 1, "nbytes": 8192, "loss": 0.05, "seed": 3,
                          "verb": "read"})
    r = run_rtl(cfg, lockstep=True, direction="endpoint", endpoint_direction=direction)
    assert r["ok"] and r["mismatches"] == 0 and r["engine"]["reads_completed"] >= 1
    _assert_reference_completions(cfg, r, "endpoint", direction)


# ------------------------------------------------------------------ atomics (MR-ENG-158..169)

def _atomic_loopback_model(n, seed, loss, model_cls=None, counters=False):
    from metaroce.models import engine_cases as ec
    from metaroce.models.cosim import run_loop
    drv, s, plan, _ = ce.loopback_run(64, 64, seed=seed, loss=loss, verb="atomic", n_writes=n)
    m = EngineModel(64)
    if model_cls is not None:
        m.rx.atom = model_cls(64, m.rx.lay.atom, m.rx.lay.rsp)
    # MR-ENG-226: then the engine's own counters read through s_axil
    loop = ec.CounterLoop(drv, sources=("eng",), seed=seed) if counters else drv
    run_loop(loop, m, m.busy)
    return (drv, plan, m, loop) if counters else (drv, plan, m)


def test_engine_model_loopback_atomics():
    """MR-ENG-158..169, MR-TXS-141, MR-RX-159 on the model: the engine posts 16 atomics
    (CMP_SWAP and FETCH_ADD, 4 streams, each stream's on one target) to itself over the
    loopback at 15 % loss: its receive half delivers each request once, the executor reads,
    modifies and writes the target and keeps the original value in its result row, the TX half
    answers from the row (resending until acknowledged), the requester's RX places the 8 bytes
    against the row the engine wrote at intake (op CMP_SWAP / FETCH_ADD) and completes them:
    every original value and final target value is the sequential oracle's, one execution per
    atomic whatever the losses. MR-ENG-226, MR-ENG-227, MR-REG-061: the executor's counters read
    through ``s_axil`` say 16 executed, no ERROR response, no AXI error, and the cycles its items
    waited at their fences (the model's own). MR-TX-209/210, MR-TXS-142: at this seed (with the
    health ages, MR-TX-203) a timed-out response packet's late ACK names its slot after the
    stream's next response took it; its lap tells it apart (before: 15 of 16 completions, a
    stall)."""
    drv, plan, m, cl = _atomic_loopback_model(16, 2, 0.15, counters=True)
    r = ce.check_atomics(drv, plan)
    assert r["atomics"] == r["executions"] == m.rx.atom.executed == 16 and r["lost"] > 0
    got = cl.counters["eng"]
    assert got == list(m.rsp.ctr) + m.rx.atom.ctr + [m.psn.ctr] and got[3:6] == [16, 0, 0] and got[6] >= 16, got
    # MR-ENG-246: each atomic took a responder resource, freed by its response's record
    from test_engine_resources import drain_frees
    drain_frees(cl, m)
    assert m.rsp.frees == 16 and not any(m.rx.rx.rx.rsp_used.values())


def test_engine_model_split_interval_seed2(monkeypatch):
    """MR-TXS-440, MR-TXS-441 (issue 13, stl43): the stall probe's scenario
    (docs/hw/probes/stall42_split_interval.py ``RXI=1 ... 8 16 0.15 2``): the engine model's
    atomics loopback with its TX half at interval 8 and its RX at 1 (a configuration the engine
    does not build; the RX's interval replaced in this test only), 16 atomics at 15 % loss, seed
    2. A timed-out response packet's late ACK named its slot and lap after two more responses
    had taken the slot; before MR-TXS-440 the unit reported it acknowledged, a later response
    completed on it unsent and its own report leaked its path's flight: 13 of 16, nothing ever
    resent. Now all 16 complete, and every path's flight is 0 at the end. MR-TXS-444: with the
    scheduler's memory heads (MR-TXS-419), as the engine sets them above interval 1."""
    import metaroce.models.engine as engine_models
    from metaroce.models.cosim import run_loop
    rx_model = engine_models.EngineRxModel
    monkeypatch.setattr(engine_models, "EngineRxModel",
                        lambda *a, **kw: rx_model(*a, **{**kw, "interval": 1}))
    drv, _, plan, _ = ce.loopback_run(64, 64, seed=2, loss=0.15, verb="atomic", n_writes=16)
    m = EngineModel(64, interval=8)
    assert m.rx.interval == 1 and m.tx.sched.interval == 8 and m.tx.sched.mem_head
    run_loop(drv, m, m.busy)
    r = ce.check_atomics(drv, plan)
    assert r["atomics"] == r["executions"] == 16 and r["lost"] > 0
    sem = m.tx.sched.sem
    assert all((ps["inflight"], ps["pkts"]) == (0, 0) for ps in sem.path)


def test_engine_model_loopback_atomics_negative_control():
    """MR-ENG-169: an executor that executes an item twice (as one re-executing a resent
    request) fails the run's check."""
    drv, plan, m = _atomic_loopback_model(6, 2, 0.0, model_cls=__import__(
        "metaroce.models.atomic_cases", fromlist=["Twice"]).Twice)
    with pytest.raises(AssertionError):
        ce.check_atomics(drv, plan)


@pytest.mark.slow
def test_engine_lockstep_amaranth_atomics():
    """MR-ENG-158..169 on the RTL (Amaranth simulator): the engine's atomics to itself over the
    loopback (6 atomics, 10 % loss) in lockstep with EngineModel, every output every cycle,
    backpressure on every output and random AXI latencies (the executor's master among them):
    0 mismatches, and the run's check (original values, final targets, one execution each).
    MR-ENG-224, MR-ENG-227: with the executor's CALC state and registered row, and its counters
    read through ``s_axil`` after the run (the engine window's), equal to the model's."""
    from metaroce.hdl.engine import Engine
    from metaroce.models import engine_cases as ec
    from metaroce.tb.lockstep import run_amaranth
    drv, s, plan, _ = ce.loopback_run(64, 64, seed=3, loss=0.1, verb="atomic", n_writes=6)
    cl = ec.CounterLoop(drv, sources=("eng",), seed=3)
    model = EngineModel(64)
    core = run_amaranth(Engine(64), model, cl, busy=model.active)
    assert core.mismatches == 0 and cl.readout.finished
    r = ce.check_atomics(drv, plan)
    assert r["executions"] == 6
    assert cl.counters["eng"][3:6] == model.rx.atom.ctr[:3] == [6, 0, 0]


@pytest.mark.slow
def test_engine_endpoint_atomics_model():
    """MR-ENG-170 (interop): the reference endpoint posts 12 atomics (CMP_SWAP and FETCH_ADD,
    each stream's on one target of the engine's memory) among its WRITEs to the engine
    (``EngineModel``) over the fabric at 30 % loss and 10 % duplication: every atomic completes at the endpoint with
    the original value the sequential oracle gives, the engine's targets end at the oracle's
    final values, and the engine executed each atomic once although the endpoint resent
    frames (MR-VERB-012); the WRITEs land as before."""
    from metaroce.models import cosim, cosim_tx
    cfg = cosim.Config(**{**cosim_tx.TX_CONFIG, "n_conns": 1, "nbytes": 4096, "loss": 0.3, "dup": 0.1,
                          "seed": 3})
    r, a = ce.run_endpoint_atomics_model(cfg, 12)
    assert r["ok"] and r["sha256_match"] and r["endpoint"]["retransmitted"] > 0
    assert r["fabric"]["duplicated"] > 0
    assert a["ok"] and a["executions"] == a["atomics"] == 12


def test_engine_endpoint_atomics_negative_control():
    """MR-ENG-170: the same run with an executor that executes an item twice (as one
    re-executing a resent request) does not pass: wrong originals or targets, 2 executions each."""
    from metaroce.models import cosim, cosim_tx
    from metaroce.models.atomic_cases import Twice
    cfg = cosim.Config(**{**cosim_tx.TX_CONFIG, "n_conns": 1, "nbytes": 1024, "loss": 0.0, "seed": 3})
    r, a = ce.run_endpoint_atomics_model(cfg, 4, model_cls=Twice)
    assert not a["ok"] and a["executions"] == 8


@pytest.mark.slow       # about 4 minutes of the engine model on the loaded machine
def test_engine_fatal_nak_beyond_the_slots(monkeypatch):
    """MR-ENG-236, MR-ENG-237 (the negative side of MR-ENG-157), MR-ENG-250 (the responder
    resources on, the default, relax nothing): the endpoint posting 24 READs
    of the engine's memory with its default message bound (8): the RX NAKs the READ beyond its
    stream's slots INVALID_REQUEST before its PSN is accepted (counter msg_slots), the NAK is
    fatal at the endpoint (MR-ERR-003) and the transfer does not complete: the cosim's
    endpoint must send within the RX's slots."""
    from metaroce.models import cosim, cosim_tx
    from metaroce.models.engine import EngineModel
    from metaroce.models.rx import RxCode
    monkeypatch.setattr(ce, "RX_MSG_SLOTS", 8)
    cfg = cosim.Config(**{**cosim_tx.TX_CONFIG, "n_conns": 1, "nbytes": 12288, "loss": 0.0, "seed": 1,
                          "verb": "read", "back": 4, "n_writes": 24})
    sim = ce.EndpointCosim(cfg, "tx")
    m = EngineModel(cfg.width, **ce.engine_kw(cfg))
    r = ce.run_loop(sim, m, m.active).result()
    assert not r["ok"] and m.rx.rx.rx.counters[RxCode.MSG_SLOTS] >= 1
    assert sim.ep.stats["nak_invalid_request"] >= 1
