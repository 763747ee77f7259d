"""The three added baselines over the loopback and in scenarios: RoCEv2 with an adaptive ACK
timeout (MR-GBN-030, MR-GBN-031), RoCEv2 with DCQCN (MR-GBN-040..043) and IRN-style selective
repeat (MR-GBN-050..055); the protocol registry (MR-SCN-003)."""
import random

import pytest

from metaroce.models.baselines import BASELINES, PROTOCOLS, accepted_params, make_endpoint
from metaroce.models.dcqcn import DcqcnRoceEndpoint
from metaroce.models.endpoint import Status, WcOpcode
from metaroce.models.irn import IrnEndpoint
from metaroce.models.loopback import LoopFaults, Loopback
from metaroce.models.rocev2 import RoceEndpoint
from metaroce.models.wire import Op

A, B = "10.0.0.1", "10.0.0.2"
MTU = 1024


def pair(cls, streams=1, **kw):
    kw.setdefault("mtu", MTU)
    kw.setdefault("line_rate_bps", 100e9)
    kw.setdefault("base_rtt", 4e-6)
    a, b = cls(A, **kw), cls(B, **kw)
    ca = a.connect(10, B, 20, streams=streams)
    cb = b.connect(20, A, 10, streams=streams)
    return a, b, ca, cb


def write_run(cls, n, faults=None, seed=0, until=1.0, **kw):
    a, b, ca, cb = pair(cls, **kw)
    src = bytearray(random.Random(seed).randbytes(n))
    dst = bytearray(n)
    ca.post_write(0, a.reg_mr(src), 0, n, 0, b.reg_mr(dst), wr_id=1)
    lb = Loopback(a, b, faults=faults, seed=seed, delay=1.5e-6)
    lb.run(until=until)
    return a, b, src, dst, lb


def drop_once(psns, opcodes=None):
    """A loopback predicate that drops the first data frame of each PSN in ``psns``."""
    seen = set()

    def f(frame, now):
        op = frame.bth.opcode
        if op in (Op.RC_ACK, Op.CNP) or (opcodes and op not in opcodes):
            return False
        if frame.bth.psn in psns and frame.bth.psn not in seen:
            seen.add(frame.bth.psn)
            return True
        return False
    return f


# -- registry ----------------------------------------------------------------------------------

def test_registry_names_and_params():
    """MR-SCN-003: every baseline is a protocol name; its parameters are the class's and its
    bases' keyword arguments; each reports its parameters."""
    assert set(BASELINES) < set(PROTOCOLS) and "metaroce" in PROTOCOLS
    assert {"rto_min", "timeout_exp", "mtu"} <= accepted_params("rocev2-adaptive")
    assert "adaptive_rto" not in accepted_params("rocev2-adaptive")        # fixed by the name
    assert {"g", "rate_ai", "cnp_interval", "window_bdp"} <= accepted_params("rocev2-dcqcn")
    assert {"rto_low", "rto_high", "rx_window", "retry_cnt"} <= accepted_params("irn")
    assert not {"adaptive_rto", "timeout_exp"} & accepted_params("irn")     # IRN has its own timeout
    names = {make_endpoint(p, A).params()["protocol"] for p in BASELINES}
    assert names == {"rocev2-rc-gbn", "rocev2-rc-gbn-adaptive-rto", "rocev2-rc-gbn-dcqcn",
                     "irn-selective-repeat"}
    with pytest.raises(ValueError, match="unknown protocol"):
        make_endpoint("tcp", A)


# -- adaptive timeout --------------------------------------------------------------------------

def test_adaptive_rto_from_measured_rtt():
    """MR-GBN-030: RTT samples from ACKs set the timeout to max(rto_min, srtt + 4 rttvar)."""
    a, b, src, dst, lb = write_run(RoceEndpoint, 200 * MTU, adaptive_rto=True)
    assert dst == src
    qp = a._qps[10]
    assert a.stats["rtt_samples"] >= 5 and qp.srtt is not None
    assert 3e-6 < qp.srtt < 20e-6                       # 2 x 1.5 us + serialisation and ACK coalescing
    assert qp.rto() == pytest.approx(max(a.rto_min, qp.srtt + 4 * qp.rttvar))
    assert qp.rto() < a.ack_timeout / 10


def test_adaptive_rto_recovers_tail_loss_faster():
    """MR-GBN-030, MR-GBN-006: a lost last packet costs the short timeout instead of 1.05 ms."""
    n = 40 * MTU
    ends = {}
    for adaptive in (False, True):
        a, b, src, dst, lb = write_run(RoceEndpoint, n, LoopFaults(drop_if=drop_once({39})),
                                       adaptive_rto=adaptive)
        assert dst == src and a.stats["timeouts"] == 1
        ends[adaptive] = lb.last_completion
    assert ends[True] < 100e-6 < 1e-3 < ends[False]


def test_adaptive_rto_backs_off_and_is_capped():
    """MR-GBN-031: each timeout without progress doubles the timeout, never above the IBTA one
    (timeout_exp); progress ends the backoff."""
    a, b, ca, cb = pair(RoceEndpoint, adaptive_rto=True, timeout_exp=5, retry_cnt=7)
    qp = a._qps[10]
    cap = a.ack_timeout
    seen = [qp.rto()]
    qp.una, qp.max_psn = 0, 4                           # four PSNs outstanding, none acknowledged
    for _ in range(6):
        qp.on_timeout(0.0)
        seen.append(qp.rto())
    assert seen[0] == pytest.approx(a.rto_initial)
    assert seen[1] == pytest.approx(2 * a.rto_initial) and seen[2] == pytest.approx(4 * a.rto_initial)
    assert max(seen) == pytest.approx(cap) and all(s <= cap for s in seen)
    qp._rearm(0.0)                                      # progress
    assert qp.rto() == pytest.approx(a.rto_initial)


def test_adaptive_rto_bad_params():
    with pytest.raises(ValueError, match="rto_min"):
        RoceEndpoint(A, adaptive_rto=True, rto_min=50e-6, rto_initial=10e-6)


# -- DCQCN -------------------------------------------------------------------------------------

def test_dcqcn_np_one_cnp_per_interval():
    """MR-GBN-040: CE-marked data makes the receiver send CNPs, at most one per interval per QP."""
    a, b, src, dst, lb = write_run(DcqcnRoceEndpoint, 400 * MTU, LoopFaults(ce=1.0))
    assert dst == src
    t_end = lb.last_completion
    assert b.stats["cnps_sent"] >= 1 and a.stats["cnps_received"] == b.stats["cnps_sent"]
    assert b.stats["cnps_sent"] <= t_end / b.cnp_interval + 1


def test_dcqcn_rp_cut_and_recovery():
    """MR-GBN-041, MR-GBN-042: a CNP cuts the rate by alpha / 2 and raises alpha by g; the
    timer recovers half-way to the target each period (fast recovery), then adds rate_ai."""
    ep = DcqcnRoceEndpoint(A, line_rate_bps=100e9)
    ep.connect(1, B, 1)
    rp = ep._qps[1].rp
    assert not rp.limited and rp.rc == 100e9
    rp.on_cnp(0.0)
    assert rp.limited and rp.rt == 100e9 and rp.rc == pytest.approx(50e9)       # alpha was 1
    assert rp.alpha == pytest.approx(1 - 1 / 256 + 1 / 256)
    rp.advance(ep.rate_timer * 1.0001)
    assert rp.rc == pytest.approx(75e9)                                         # (rt + rc) / 2
    rp.on_cnp(ep.rate_timer * 2)
    cut = rp.rc
    assert cut < 75e9 and rp.rt > cut
    for k in range(1, ep.fast_recovery_steps + 1):
        rp.advance(ep.rate_timer * 2 + k * ep.rate_timer * 1.0001)
    rt0 = rp.rt
    rp.advance(ep.rate_timer * 2 + (ep.fast_recovery_steps + 1) * ep.rate_timer * 1.0001)
    assert rp.rt == pytest.approx(rt0 + ep.rate_ai)                             # additive increase
    alpha = rp.alpha
    rp.advance(rp.t_alpha + 1e-9)
    assert rp.alpha == pytest.approx(alpha * (1 - ep.g))                        # decay without CNPs


def test_dcqcn_rate_limits_sending():
    """MR-GBN-041, MR-GBN-043: with CE on every packet the sender is paced below line rate, and
    the data still arrives intact through go-back-N."""
    n = 2000 * MTU
    a0, b0, src0, dst0, lb0 = write_run(DcqcnRoceEndpoint, n)
    a1, b1, src1, dst1, lb1 = write_run(DcqcnRoceEndpoint, n, LoopFaults(ce=1.0))
    assert dst0 == src0 and dst1 == src1
    assert a0.stats["dcqcn_rate_cuts"] == 0 and a1.stats["dcqcn_rate_cuts"] >= 2
    assert lb1.last_completion > 1.5 * lb0.last_completion
    assert a1.params()["dcqcn"] is True and a1.params()["dcqcn_g"] == 1 / 256


def test_dcqcn_scenario_pfc_no_drops():
    """MR-GBN-043, MR-SCN-007: on the shipped deployed fabric (PFC, RED marking) DCQCN senders
    get CNPs, switches drop nothing, and every byte arrives."""
    from metaroce.sim.scenario import run_scenario, shipped_scenarios
    from tests.test_scenario import _small, load_scenario
    (p,) = [p for p in shipped_scenarios() if p.stem == "pfc_dcqcn_incast"]
    hold = {}
    res = run_scenario(_small(load_scenario(p), 512 * 1024), setup=lambda fab, info: hold.update(fab=fab))
    assert res["delivered_ok"] and res["switch_drops"] == 0 and res["marks"] > 0
    eps = [h.ep for h in hold["fab"].hosts]
    assert eps[0].stats["cnps_sent"] > 0 and sum(e.stats["dcqcn_rate_cuts"] for e in eps[1:]) > 0


# -- IRN ---------------------------------------------------------------------------------------

def test_irn_selective_repeat_resends_only_lost():
    """MR-GBN-050, MR-GBN-051, MR-GBN-052: out-of-order packets are placed and NACKed with a
    SACK; the requester resends exactly the lost packets (go-back-N would resend the window)."""
    lost = {5, 17, 60}
    a, b, src, dst, lb = write_run(IrnEndpoint, 200 * MTU, LoopFaults(drop_if=drop_once(lost)))
    assert dst == src
    assert [(c.wr_id, c.status) for c in lb.completions[0]] == [(1, Status.SUCCESS)]
    assert a.stats["retransmitted"] == len(lost) and a.stats["timeouts"] == 0
    assert b.stats["naks_sent"] > 0 and a.stats["irn_recoveries"] >= 1
    g, _, _, gdst, _ = write_run(RoceEndpoint, 200 * MTU, LoopFaults(drop_if=drop_once(lost)))
    assert gdst == src and g.stats["retransmitted"] > 10 * len(lost)


@pytest.mark.parametrize("loss", [0.01, 0.1])
def test_irn_correct_under_loss_and_ack_loss(loss):
    """MR-GBN-050..054: random loss of data and ACKs/NACKs: intact data, one completion."""
    a, b, src, dst, lb = write_run(IrnEndpoint, 600 * MTU, LoopFaults(loss=loss, ctrl_loss=loss), seed=4)
    assert dst == src
    assert [(c.wr_id, c.status) for c in lb.completions[0]] == [(1, Status.SUCCESS)]
    assert a.stats["retransmitted"] >= lb.stats["lost"] // 2


def test_irn_bdp_window():
    """MR-GBN-053: BDP-FC: never more than window_bdp BDPs of PSNs outstanding."""
    a, b, ca, cb = pair(IrnEndpoint)
    qp = a._qps[10]
    src = bytearray(500 * MTU)
    ca.post_write(0, a.reg_mr(src), 0, len(src), 0, b.reg_mr(bytearray(len(src))), wr_id=1)
    sent = 0
    while a.next_packet(0.0) is not None:
        sent += 1
    assert sent == a.window_pkts == qp.max_psn
    bdp = 100e9 / 8 * 4e-6 / MTU
    assert bdp <= a.window_pkts <= bdp + 1


def test_irn_rto_low_high():
    """MR-GBN-054: RTO_low with at most rto_low_pkts outstanding, else RTO_high; a lost last
    packet is resent after RTO_low, the rest after the timeout too."""
    a, b, ca, cb = pair(IrnEndpoint)
    qp = a._qps[10]
    qp.una, qp.max_psn = 0, 3
    assert qp.rto() == a.rto_low == 100e-6
    qp.max_psn = 4
    assert qp.rto() == a.rto_high == 320e-6
    a, b, src, dst, lb = write_run(IrnEndpoint, 40 * MTU, LoopFaults(drop_if=drop_once({39})))
    assert dst == src and a.stats["timeouts"] == 1 and a.stats["retransmitted"] == 1
    assert 100e-6 < lb.last_completion < 320e-6


def test_irn_sends_out_of_order_complete_in_order():
    """MR-GBN-055: sends are placed out of order into their posted receives and complete in
    order, with their lengths; a lost first packet of the second send changes nothing."""
    a, b, ca, cb = pair(IrnEndpoint)
    sizes = [5 * MTU + 7, 3 * MTU, 9 * MTU + 1]
    src = bytearray(random.Random(2).randbytes(sum(sizes)))
    dst = bytearray(len(src))
    lk, rk = a.reg_mr(src), b.reg_mr(dst)
    off = 0
    for i, n in enumerate(sizes):
        cb.post_recv(0, rk, off, n, wr_id=100 + i)
        ca.post_send(0, lk, off, n, wr_id=i)
        off += n
    lb = Loopback(a, b, faults=LoopFaults(drop_if=drop_once({6})), delay=1.5e-6)
    lb.run(until=1.0)
    assert dst == src
    recv = [(c.wr_id, c.opcode, c.byte_len) for c in lb.completions[1]]
    assert recv == [(100 + i, WcOpcode.RECV, n) for i, n in enumerate(sizes)]
    assert [c.wr_id for c in lb.completions[0]] == [0, 1, 2]
    assert a.stats["retransmitted"] == 1


@pytest.mark.parametrize("loss", [0.0, 0.02, 0.1])
def test_irn_read_write_atomics_under_loss(loss):
    """MR-GBN-055: READs, WRITEs and atomics mixed on one IRN QP under loss of data and ACKs:
    every READ returns the remote bytes, every WRITE lands, each atomic runs exactly once."""
    a, b, ca, cb = pair(IrnEndpoint)
    rng = random.Random(7)
    remote = bytearray(rng.randbytes(80 * MTU))     # READs from [0, 64), WRITEs to [64, 80)
    counter = bytearray(8)
    rk, ck = b.reg_mr(remote), b.reg_mr(counter)
    local = bytearray(64 * MTU)
    src = bytearray(rng.randbytes(16 * MTU))
    res = bytearray(8 * 6)
    lk, sk, resk = a.reg_mr(local), a.reg_mr(src), a.reg_mr(res)
    for i in range(4):
        ca.post_read(0, lk, i * 16 * MTU, 16 * MTU - 3 * i, i * 16 * MTU, rk, wr_id=10 + i)
        ca.post_write(0, sk, i * 4 * MTU, 4 * MTU, 64 * MTU + i * 4 * MTU, rk, wr_id=20 + i)
    for i in range(6):
        ca.post_atomic(0, "fetch_add", resk, 8 * i, 0, ck, wr_id=30 + i, add=1)
    before = bytes(remote)
    lb = Loopback(a, b, faults=LoopFaults(loss=loss, ctrl_loss=loss), seed=5, delay=1.5e-6)
    lb.run(until=1.0)
    comps = {c.wr_id: c for c in lb.completions[0]}
    assert set(comps) == {10, 11, 12, 13, 20, 21, 22, 23, 30, 31, 32, 33, 34, 35}
    assert all(c.status == Status.SUCCESS for c in comps.values())
    for i in range(4):
        n = 16 * MTU - 3 * i
        assert bytes(local[i * 16 * MTU:i * 16 * MTU + n]) == before[i * 16 * MTU:i * 16 * MTU + n]
        assert not any(local[i * 16 * MTU + n:(i + 1) * 16 * MTU])     # nothing past the READ
    assert bytes(remote[64 * MTU:80 * MTU]) == bytes(src)
    assert int.from_bytes(counter, "little") == 6 and b.stats["atomics_executed"] == 6
    assert sorted(int.from_bytes(res[8 * i:8 * i + 8], "little") for i in range(6)) == list(range(6))
    if loss:
        assert a.stats["retransmitted"] > 0


@pytest.mark.parametrize("proto", BASELINES)
def test_every_baseline_runs_a_loss_scenario(proto):
    """MR-SCN-003: each baseline, selected by name in a scenario, completes a write under loss
    on both directions, with its data intact."""
    from metaroce.benches.loss import build
    from metaroce.sim.scenario import run_scenario
    job = {"topology": "single", "seed": 2, "until_us": 50000, "protocol": proto, "nbytes": 512 * 1024,
           "loss": 0.02, "direction": "both", "pattern": "iid"}
    res = run_scenario(build(job))
    assert res["delivered_ok"] and res["protocol"]["name"] == proto
    assert res["flows"][0]["retransmits"] > 0 and res["protocol"]["params"]["mtu"] == 4096


@pytest.mark.parametrize("cls", [RoceEndpoint, IrnEndpoint])
def test_acks_leave_after_queued_read_responses(cls):
    """MR-GBN-025: READs and WRITEs interleaved without loss: the responder's ACKs never overtake
    its READ responses, so nothing is re-issued or resent."""
    a, b, ca, cb = pair(cls, ack_req_every=1)         # an ACK for every WRITE packet
    remote = bytearray(random.Random(3).randbytes(32 * MTU))
    rk = b.reg_mr(remote)
    local, src = bytearray(32 * MTU), bytearray(random.Random(4).randbytes(32 * MTU))
    lk, sk = a.reg_mr(local), a.reg_mr(src)
    dst = bytearray(32 * MTU)
    dk = b.reg_mr(dst)
    for i in range(4):
        ca.post_read(0, lk, i * 8 * MTU, 8 * MTU, i * 8 * MTU, rk, wr_id=i)
        ca.post_write(0, sk, i * 8 * MTU, 8 * MTU, i * 8 * MTU, dk, wr_id=10 + i)
    lb = Loopback(a, b, delay=1.5e-6)
    lb.run(until=1.0)
    assert local == remote and dst == src and len(lb.completions[0]) == 8
    assert a.stats["retransmitted"] == 0 and a.stats["read_reissued"] == 0
    assert a.stats["drop_duplicate_read_response"] == 0
