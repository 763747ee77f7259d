"""ACK loss costs no more than the information the lost ACK carried (MR-REL-009, MR-REL-010)."""
import pytest

from metaroce.models.endpoint import Endpoint, Status
from metaroce.models.loopback import LoopFaults, Loopback

A, B = "10.0.0.1", "10.0.0.2"


def _run(ctrl_loss, seed, nbytes=8 << 20, paths=8, rate=100e9, delay=4e-6):
    kw = dict(mtu=4096, line_rate_bps=rate, base_rtt=2 * delay)
    a, b = Endpoint(A, **kw), Endpoint(B, **kw)
    src = bytearray(bytes(range(256)) * (nbytes // 256))
    dst = bytearray(nbytes)
    ka, kb = a.reg_mr(src), b.reg_mr(dst)
    ca = a.connect(1, B, 1, paths=paths)
    b.connect(1, A, 1, paths=paths)
    ca.post_write(0, ka, 0, nbytes, 0, kb, wr_id=1)
    lb = Loopback(a, b, delay=delay, seed=seed, faults_ab=LoopFaults(),
                  faults_ba=LoopFaults(ctrl_loss=ctrl_loss))
    lb.run(until=1.0)
    assert [(c.wr_id, c.status) for c in lb.completions[0]] == [(1, Status.SUCCESS)]
    assert dst == src
    return a, b, lb


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_one_percent_ack_loss_costs_nothing(seed):
    """MR-REL-009, MR-REL-010: with 1 % of ACKs lost (data intact) the next ACK repairs each
    lost one: spurious resends stay below 0.1 % of the data packets and no path is suspected."""
    a, b, lb = _run(0.01, seed)
    lost_acks = b.stats["acks_sent"] - a.stats["acks_received"]
    assert lost_acks >= 5                                   # the fault did happen
    assert a.stats["spurious_retransmits"] < 0.001 * a.stats["data_packets_sent"]
    assert a.stats["paths_suspected"] == 0 and a.stats["paths_retired"] == 0


def test_tail_ack_lost_probe_repairs():
    """MR-REL-010: when the only ACK of a path's last packets is lost, the timer's first expiry
    re-sends the path's newest PSN as is; the receiver's duplicate ACK resolves the path:
    nothing is resent, no path is suspected."""
    kw = dict(mtu=4096, line_rate_bps=100e9, base_rtt=8e-6)
    # a first window of two packets (MR-CC-008): both chunks in flight at once, one per path
    a, b = Endpoint(A, first_window=2, **kw), Endpoint(B, **kw)
    src = bytearray(b"\x5a" * 2 * 4096)      # one chunk per path
    ka, kb = a.reg_mr(src), b.reg_mr(bytearray(len(src)))
    ca = a.connect(1, B, 1, paths=2)
    b.connect(1, A, 1, paths=2)
    ca.post_write(0, ka, 0, len(src), 0, kb, wr_id=1)
    acks = []

    def drop_first_path0_ack(frame, now):
        if frame.mrah is not None and frame.mrah.path == 0 and not acks:
            acks.append(now)
            return True
        return False
    lb = Loopback(a, b, delay=4e-6, faults_ba=LoopFaults(drop_if=drop_first_path0_ack),
                  faults_ab=LoopFaults())
    lb.run(until=0.01)
    assert acks and [(c.wr_id, c.status) for c in lb.completions[0]] == [(1, Status.SUCCESS)]
    assert a.stats["tail_probes"] == 1 and b.stats["duplicates"] >= 1
    assert a.stats["retransmitted"] == 0 and a.stats["spurious_retransmits"] == 0
    assert a.stats["paths_suspected"] == 0 and a.stats["timeouts"] == 0


def test_overdue_groups_from_ack_loss():
    """MR-REL-011: k = 2 while lost ACKs are rare, more as they become common, never above 6;
    each k keeps the chance of k lost ACKs in a row at most 2^-13."""
    from metaroce.models import protocol as P
    ks = [P.overdue_groups(int(f * 65536)) for f in (0, 0.01, 0.02, 0.05, 0.1, 0.2, 0.9)]
    assert ks == [2, 2, 3, 4, 4, 6, 6]
    assert all(a <= b for a, b in zip(ks, ks[1:]))
    for q in range(0, 1 << 16, 997):
        k = P.overdue_groups(q)
        assert k == P.OVERDUE_GROUPS_MAX or (q / 65536) ** k <= 2 ** -13 * 1.01


def test_ack_loss_estimate_follows_the_fraction():
    """MR-REL-011: the Q16 EWMA settles near the fraction of expected ACKs that were lost, and a
    run of seen ACKs brings it back down."""
    import random
    from metaroce.models import protocol as P
    rng = random.Random(5)
    q = 0
    seen = []
    for _ in range(3000):
        lost = rng.random() < 0.1
        q = P.ack_loss_update(q, 0 if lost else 1, 1 if lost else 0)
        seen.append(q)
    mean = sum(seen[500:]) / len(seen[500:]) / 65536
    assert 0.08 < mean < 0.12
    for _ in range(200):
        q = P.ack_loss_update(q, 1, 0)
    assert q < 0.001 * 65536
    assert P.ack_loss_update(0, 0, 3) > P.ack_loss_update(0, 0, 1) > 0


@pytest.mark.parametrize("seed", [1, 2])
def test_ten_percent_ack_loss_costs_little(seed):
    """MR-REL-009..011: with 10 % of ACKs lost (data intact) the silent-path bound waits for as
    many overdue ACK groups as the measured ACK loss needs, and a tail probe's ACK gets its RTO:
    spurious resends stay below 0.5 % of the data packets, no timeout, no path suspected."""
    a, b, lb = _run(0.10, seed)
    lost_acks = b.stats["acks_sent"] - a.stats["acks_received"]
    assert lost_acks >= 0.05 * b.stats["acks_sent"]         # the fault did happen
    assert a.stats["spurious_retransmits"] < 0.005 * a.stats["data_packets_sent"]
    assert a.stats["timeouts"] == 0
    assert a.stats["paths_suspected"] == 0 and a.stats["paths_retired"] == 0
