"""``metaroce coverage tx`` (MR-TX-416..420): the TX engine's coverage run's generators, its
functional bins and toggle exclusions on small synthetic inputs (fast), and the command end to
end on the Verilator coverage build (slow)."""
import json
import subprocess
import sys
from types import SimpleNamespace

import pytest

from metaroce.models import tx_cases as xc
from metaroce.models.retransmit import CTR, N_COUNTERS
from metaroce.models.tx import SMALL
from metaroce.models.tx_sched import (OP_CMP_SWAP, OP_FETCH_ADD, OP_READ, OP_SEND, OP_SEND_IMM, OP_WRITE,
                                      OP_WRITE_IMM, STATUS_LOC_LEN_ERR, STATUS_LOC_PROT_ERR,
                                      STATUS_LOC_QP_OP_ERR, STATUS_OK, TxSchedModel, wire_op)
from metaroce.models.wire import MrdhFlag, Op
from metaroce.tb import coverage as cov


def _sem():
    keys = ("chunk_window", "mtu", "cwnd", "conn_window", "path_pkts", "ack_every", "resend_depth")
    return TxSchedModel(SMALL["conns"], SMALL["streams"], SMALL["paths"], SMALL["depth"],
                        **{k: SMALL[k] for k in keys})


@pytest.mark.parametrize("wide", [False, True])
def test_coverage_traffic_offers_every_opcode_and_status(wide):
    """MR-TX-417: whatever the seed, the coverage traffic holds a good request of every opcode
    the TX sends and a refusal of each kind (LOC_QP_OP_ERR twice, LOC_LEN_ERR twice), and its
    every fifth request's payload lies in the host memory's error window (LOC_PROT_ERR);
    wr_ids run 0..n-1 (cov40's traffic) or, wide (MR-TX-457, MR-TX-458), are distinct and
    random, with one directed READ and MR-TX-462's atomics more."""
    sem = _sem()
    for seed in (1, 2, 3):
        items, mem = xc.coverage_traffic(sem, 5, seed=seed, wide=wide)
        ids = [w["wr_id"] for w in items]
        if wide:
            assert len(set(ids)) == len(items) == 5 + 12 + 2 * xc.WIDE_ATOMICS and max(ids) >= 1 << 12
        else:
            assert ids == list(range(len(items))) and len(items) == 5 + 11
        good = {w["op"] for w in items if sem.wr_status(w) == STATUS_OK}
        assert good >= {OP_WRITE, OP_WRITE_IMM, OP_SEND, OP_SEND_IMM, OP_READ, OP_CMP_SWAP, OP_FETCH_ADD}
        refused = [sem.wr_status(w) for w in items]
        assert refused.count(STATUS_LOC_QP_OP_ERR) >= 2 and refused.count(STATUS_LOC_LEN_ERR) >= 2
        st = [xc.wr_status(sem, w, mem) for w in items]
        assert STATUS_LOC_PROT_ERR in st


def _frame(op, flags=0, mrdh=True):
    return SimpleNamespace(bth=SimpleNamespace(opcode=op),
                           mrdh=SimpleNamespace(flags=flags) if mrdh else None)


def test_coverage_counts_and_bins():
    """MR-TX-418: one batch's events (frames by opcode, RETX and bad frames, a refused
    response, completions by status, the retransmit unit's counters, the ACK kinds the engine
    took) land in their bins; a shape without an event names the bin missed; an opcode with no
    bin is reported unexpected, not binned (the negative control: a bin with no events is not
    hit)."""
    res = {"emitted": [(_frame(wire_op(OP_WRITE)), 0), (_frame(wire_op(OP_SEND), MrdhFlag.RETX), 1),
                       (_frame(Op.MR_READ_RESP, MrdhFlag.ERROR), 0), (_frame(0x05, mrdh=False), 0)],
           "cqe": [{"status": 0}, {"status": 12}, {"status": 4}]}
    counters = [0] * N_COUNTERS
    counters[CTR["gap_losses"]], counters[CTR["naks"]], counters[CTR["acks"]] = 3, 1, 7
    model = SimpleNamespace(rtx=SimpleNamespace(counters=counters))
    drv = SimpleNamespace(res=res, ack_kinds={"ack": 9, "duplicate": 2})
    c = xc.coverage_counts(model, drv, {"probes": 1})
    assert (c["op:write"], c["op:send"], c["op:read_resp"], c["op:other"]) == (1, 1, 1, 1)
    assert (c["resend:frame"], c["frame:read_error"], c["rsp:refused"], c["probe:frame"]) == (1, 1, 1, 1)
    assert (c["status:ok"], c["status:retry_exc_err"], c["status:loc_prot_err"]) == (1, 1, 1)
    assert (c["resend:sack_gap"], c["ack:nak"], c["ack:new"], c["ack:bad"]) == (3, 1, 7, 0)
    assert c["ack_offered:duplicate"] == 2 and "ack_offered:ack" not in c
    every = {b: 1 for b in cov.TX_BINS}
    f = cov.functional_tx(64, {"none": every, "bp": dict(c)})
    assert f["bins_total"] == 2 * len(cov.TX_BINS)
    missed = {m for m in f["missing"]}
    assert "ack:bad/bp" in missed and "op:write/bp" not in missed and not any(m.endswith("/none") for m in missed)
    assert f["bins_hit"] == f["bins_total"] - len(missed) and f["every_bin_some_shape"]
    assert f["unexpected"] == {"op:other/bp": 1}
    f = cov.functional_tx(64, {"bp": dict(c)})
    assert not f["every_bin_some_shape"]


def _cli(*args):
    return subprocess.run([sys.executable, "-m", "metaroce", *args], capture_output=True, text=True,
                          timeout=3600)


@pytest.mark.slow
def test_coverage_tx_end_to_end(tmp_path):
    """MR-TX-416, MR-TX-420: ``metaroce coverage tx --shapes both`` (20 random work requests, its
    three batches of the wide traffic, MR-TX-457..462: about 30,000 cycles, 10-15 minutes on a loaded machine): RTL and model agree
    on every cycle of every batch, the checker and the counters (MR-TX-420) pass, every
    functional bin is hit, line and toggle points were counted and the toggle exclusions name
    their reasons (MR-TX-419)."""
    r = _cli("coverage", "tx", "--width", "64", "--shapes", "both", "--json", "--keep", str(tmp_path))
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert out["block"] == "tx" and out["mismatches"] == 0 and out["problems"] == 0
    assert [b["batch"] for b in out["batches"]] == ["traffic", "dead", "windows"]
    func = out["functional"]
    assert func["bins_hit"] == func["bins_total"] == len(cov.TX_BINS), func["missing"]
    excluded = out["toggle"]["excluded"]
    assert any(why.startswith("descriptor fields the TX's join leaves 0") for why in excluded)
    assert any(why.startswith("the engine's counters") for why in excluded)
    for kind in ("line", "toggle"):
        assert out[kind]["total"] > 1000 and 0 < out[kind]["covered"] <= out[kind]["total"]
    assert (tmp_path / "coverage_tx_w64.dat").stat().st_size > 1000


def test_conn_window_wait_unreachable():
    """MR-TX-418: the connection-window wait is no bin of the small instance: its streams'
    chunk windows hold fewer bytes than the connection's window (tb.coverage.TX_UNREACHABLE)."""
    assert SMALL["streams"] * SMALL["chunk_window"] * SMALL["mtu"] < SMALL["conn_window"]
    assert "wait:conn_window" in cov.TX_UNREACHABLE and "wait:conn_window" not in cov.TX_BINS


def _toggle(text, count=0, hier="tx"):
    return cov.Point("v_toggle", "tx.v", 1, text, hier, count)


def test_tx_counter_exclusions():
    """MR-TX-419: a counter's bit (the engine's ctr_X, the unit's ctrN_low), a piece flag and a
    read-out bit are excluded exactly when the largest count a batch reached cannot set them;
    the others stay (covered or not); without the counts nothing is excluded (the negative
    control)."""
    from metaroce.models.tx import TX_CTR
    own = [0] * len(TX_CTR)
    own[TX_CTR["frames"]], own[TX_CTR["completions_err"]] = 300, 10
    unit = [0] * 16
    unit[5] = 3
    cmax = {"rtx": unit, "tx": own}
    pts = [_toggle("ctr_frames[8]:0->1", 1), _toggle("ctr_frames[9]:0->1"),              # 256 <= 300 < 512
           _toggle("ctr_frames_low1:0->1", 1), _toggle("ctr_frames_mid2:0->1"),         # 254 <= 300 < 65,280
           _toggle("ctr_completions_err[3]:0->1", 1), _toggle("ctr_completions_err[4]:0->1"),
           _toggle("ctr_completions_err_low1:0->1"),
           _toggle("ctr5_low[1]:0->1", 1), _toggle("ctr5_low[2]:1->0"),
           _toggle("reg_data[8]:0->1"), _toggle("reg_data[9]:0->1"),                    # 300: 9 bits
           _toggle("other[0]:0->1")]
    s = cov.summarise(pts, None, cov.tx_exclusions(pts, cmax))
    assert s["toggle"]["total"] == 6 and s["toggle"]["covered"] == 4
    assert set(s["toggle"]["uncovered"]) == {"reg_data[8]:0->1", "other[0]:0->1"}
    assert sum(s["toggle"]["excluded"].values()) == 6
    s = cov.summarise(pts, None, cov.tx_exclusions(pts, None))
    assert s["toggle"]["total"] == len(pts) and not s["toggle"]["excluded"]


def test_tx_descriptor_exclusions():
    """MR-TX-419: the descriptor bits no TX data frame sets are excluded in every copy of the
    descriptor (a field the join leaves 0, the IPv4 addresses' upper 96 bits, a constant's 0
    bits); the bits a frame sets stay (the negative control: a field the join writes, a 1 bit
    of udp_dport, bit 31 of an address)."""
    pts = [_toggle("h0_desc__02emrah_sack[3]:0->1"), _toggle("m_desc___05Fpayload__02eatomiceth_swap[9]:1->0"),
           _toggle("s_desc___05Fpayload__02eip_src[32]:0->1"), _toggle("h3_desc__02eudp_dport[3]:0->1"),
           _toggle("h3_desc__02ebth_opcode[5]:0->1"),
           _toggle("s_desc___05Fpayload__02eip_src[31]:0->1"), _toggle("h3_desc__02eudp_dport[0]:0->1"),
           _toggle("h1_desc__02ereth_va[40]:0->1"), _toggle("h1_desc__02ebth_opcode[7]:1->0")]
    s = cov.summarise(pts, None, cov.tx_exclusions(pts))
    assert sum(s["toggle"]["excluded"].values()) == 5
    assert set(s["toggle"]["uncovered"]) == {p.text for p in pts[5:]}


def test_sparse_host_memory_and_placement():
    """MR-TX-457: the sparse host memory's bytes are a fixed function of their address (two
    overlapping reads agree, near the top of the space too) and vary; the wide traffic's
    payloads lie across the 64-bit space (some above 2^32, some below), each failing read's
    payload in an error range and no good one in any (so its status is LOC_PROT_ERR exactly
    when it is one of every fifth); the error range's bursts are answered with an error. The
    negative control: cov40's traffic keeps its payloads in the flat memory's two windows."""
    import random as _random
    lay = xc.SparseLayout()
    mem = xc.SparseHostMemory(lay, 64, _random.Random(1), p_bp=0, p_gap=0, latency=(1, 1))
    for a in (0, 12345, (1 << 64) - 64):
        assert mem.read(a, 40)[3:] == mem.read(a + 3, 37) and len(set(mem.read(a, 40))) > 8
    sem = _sem()
    items, lay = xc.coverage_traffic(sem, 20, seed=4)
    addrs = [w["laddr"] for w in items]
    assert max(addrs) >= 1 << 63 and min(addrs) < 1 << 32 and max(a for a in addrs if a < 1 << 32) >= 1 << 24
    for i, w in enumerate(items):
        assert lay.in_bad(w["laddr"]) == (i % 5 == 4)
        ln = w["length"] if w["length"] <= 1 << 31 else 0
        assert w["laddr"] + ln + xc.SPARSE_MARGIN <= 1 << 64
    bad = next(w for i, w in enumerate(items) if i % 5 == 4)
    m = xc.SparseHostMemory(lay, 64, _random.Random(2), p_bp=0, p_gap=0, latency=(1, 1))
    m._burst((bad["laddr"], 0, 3, 1, 0), 0)
    m._burst((items[0]["laddr"], 0, 3, 1, 0), 0)
    assert m.beats[0][2] != 0 and m.beats[1][2] == 0
    flat, flay = xc.coverage_traffic(sem, 20, seed=4, wide=False)
    assert all(flay.base <= w["laddr"] < flay.bad_base + flay.size for w in flat)


def test_wide_lengths():
    """MR-TX-458: the wide traffic holds a good READ of the longest length a READ may name
    (one byte more is refused: the negative control), and the dead batch's work a WRITE and a
    SEND_IMM on the dead connection 1 of at least half that length, taken (not refused)."""
    from metaroce.models.tx_sched_cases import wr_item
    sem = _sem()
    big = xc.largest_read(sem)
    assert big == (1 << 20) * SMALL["mtu"]
    items, _ = xc.coverage_traffic(sem, 5, seed=7)
    assert any(w["op"] == OP_READ and w["length"] == big and sem.wr_status(w) == STATUS_OK for w in items)
    assert sem.wr_status(wr_item(0, 0, big + 1, wr_id=0, op=OP_READ)) == STATUS_LOC_LEN_ERR
    d_items, _ = xc.dead_traffic(sem, seed=8)
    long_ = [w for w in d_items if w["length"] >= big // 2 and sem.wr_status(w) == STATUS_OK]
    assert sorted(w["op"] for w in long_) == [OP_WRITE, OP_SEND_IMM] and {w["conn"] for w in long_} == {1}


def test_bad_ack_cum_resolves_none():
    """MR-TX-459: a cumulative PSN of at least 2^16 with no SACK bits resolves none of a path
    whose PSNs run below 2^16 with at most 256 unresolved (bad or stale:
    ``protocol.sack_resolve``'s n <= 0); the negative control: a cum inside the unresolved
    span resolves some."""
    import random as _random
    from metaroce.models import protocol as P
    r = _random.Random(3)
    for _ in range(2000):
        floor = r.randrange(1 << 16)
        nxt = min(floor + r.randrange(257), (1 << 16) - 1)
        cum = r.randrange(1 << 16, P.PSN_MOD)
        assert P.sack_resolve(floor, nxt, cum, 0)[0] <= 0
        if nxt > floor:
            assert P.sack_resolve(floor, nxt, r.randrange(floor + 1, nxt + 1), 0)[0] > 0


def test_wide_batch_on_the_model():
    """MR-TX-457..460 on the cycle model alone: the wide ``traffic`` batch of the shape ``none``
    (3 random requests) runs to its end with the checker and the counters passing, its clock
    starting short of the 32-bit wrap (``clock_start``, within its span) and crossing it,
    its payloads read from addresses above 2^32."""
    from metaroce.models import protocol as P
    from metaroce.models.driver import run_alone
    from metaroce.models.tx import TxCycleModel
    lay = TxCycleModel(64, **SMALL).lay
    name, items, rsps, drv = xc.coverage_batches(_sem(), SMALL, lay, 64, "none", 3, seed=5)[0]
    assert name == "traffic"
    start = drv.now
    assert 0 < P.TIME_MASK + 1 - start < xc.CLOCK_SPANS[0] * drv.ns_per_cycle
    model = TxCycleModel(64, **SMALL)
    drv.sem = model.sched.sem
    run_alone(model, drv)
    summary = xc.check(_sem(), items, drv, rsps)
    xc.check_counters(drv, summary["probes"])
    assert drv.now < start and summary["frames"] > 10
    assert any(addr >= 1 << 32 for addr, _ in drv.mem.bursts)


def test_wide_windows_within_bounds():
    """MR-TX-461: the wide traffic's windows configuration stays within MR-CW-004/005's bounds
    (cap below 2^24, beta at most 1, each path's window between its floor and the cap) and
    varies with the seed; without idle cycles (the shape ``none``) no window is set up."""
    from metaroce.models import protocol as P
    caps = set()
    for seed in range(20):
        w = xc.wide_windows(SMALL, seed)
        cap, beta = w["cc"]["cc_cap"], w["cc"]["cc_beta_q"]
        caps.add(cap)
        assert xc.CC_CAP <= cap < 1 << 24 and 0 < beta <= P.Q_ONE
        assert len(w["cw_setups"]) == 2 * SMALL["paths"]
        assert all(x["floor"] <= x["cwnd"] <= cap for x in w["cw_setups"])
    assert len(caps) == 20
    from metaroce.models.tx import TxCycleModel
    lay = TxCycleModel(64, **SMALL).lay
    drv = xc.coverage_batches(_sem(), SMALL, lay, 64, "none", 1, seed=1)[0][3]
    assert not drv.cw_setups and not drv.cc


def test_coverage_batches_start_near_the_psn_wrap():
    """MR-TX-478: with ``psn_wrap`` every batch's driver writes every path's initial PSN 1..5
    below 2^24 on ``s_psn`` before anything else, its receiver's paths start there, and the
    bad ACK's far cum counts from the path's initial PSN; without it no write is offered."""
    from metaroce.models import protocol as P
    from metaroce.models.rx import unpack
    from metaroce.models.tx import TxCycleModel
    lay = TxCycleModel(64, **SMALL).lay
    for wrap in (False, True):
        for name, items, rsps, drv in xc.coverage_batches(_sem(), SMALL, lay, 64, "none", 1, seed=1,
                                                          psn_wrap=wrap):
            inp = drv.inputs()
            if not wrap:
                assert not inp["s_psn__valid"] and not drv.init_psns
                continue
            assert len(drv.init_psns) == SMALL["conns"] * SMALL["paths"]
            assert all(P.PSN_MOD - 6 < v < P.PSN_MOD for v in drv.init_psns.values())
            w = unpack(lay.sched.psn, inp["s_psn__payload"])
            assert inp["s_psn__valid"] and drv.init_psns[(w["conn"], w["path"])] == w["psn"]
            assert drv.rx[(1, 3)][0] == drv.init_psns[(1, 3)]
