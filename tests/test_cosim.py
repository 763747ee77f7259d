"""The engine's receive half in a closed loop with a model sender over the model fabric
(MR-ENG-120..124): the RTL's ACK/NAK records become real frames (the endpoint's encoding) that
drive the sender's retransmissions; the host memory must equal the source buffer byte for byte
(sha256) and every WR must complete. The RTL runs on the cached Verilator build of
``engine_rx_256x4`` at 64 bits (the one tests/test_engine_rtl.py uses).
"""
import json

import pytest

from metaroce.cli import main
from metaroce.models import cosim
from metaroce.models.endpoint import Endpoint, ack_frame, nak_frame
from metaroce.models.wire import NakReason, Op


def _closed_loop(r):
    """The loop was closed: frames were lost and resent because of the engine's ACKs."""
    assert r["ok"] and r["sha256_match"] and r["wrs_completed_ok"] and not r["written_outside"]
    assert r["fabric"]["lost"] > 0 and r["sender"]["retransmitted"] + r["sender"]["probes"] > 0
    eng = r["engine"]
    assert eng["ack_records"] == eng["rx_counters"]["acks"] > 0
    assert eng["rx_counters"]["placed_bytes"] >= r["bytes"]
    assert eng["placements"] == eng["rx_counters"]["accepted"]     # every write carries payload
    assert 0 < r["goodput_vs_limit"] <= 1


def test_ack_encoding_is_the_endpoints():
    """MR-ENG-120: one ACK encoding. The endpoint's own ACKs and NAKs come from ack_frame and
    nak_frame (the functions the co-simulation builds frames with from the RTL's records)."""
    f = ack_frame("10.0.0.2", "10.0.0.1", 0x1234, 0x800005, 4711, 2, 100, 0b101, 3, 0, 99)
    assert f.bth.opcode == Op.MR_ACK and f.mrah.cum_psn == 100 and f.mrah.sack == 0b101
    assert f.mrah.ce_count == 3 and f.mrah.path == 2 and f.mrah.trigger_psn == 99 and f.udp.sport == 4711
    n = nak_frame("10.0.0.2", "10.0.0.1", 0x1234, 0x800005, 4711, 1, NakReason.ACCESS, 77)
    assert n.bth.opcode == Op.MR_NAK and n.mrnh.reason == NakReason.ACCESS and n.mrnh.psn == 77
    # an endpoint receiving a write ACKs with the same function: same frame as built by hand
    import inspect
    src = inspect.getsource(Endpoint._send_ack) + inspect.getsource(Endpoint._nak)
    assert "ack_frame(" in src and "nak_frame(" in src and "MRAH(" not in src


def test_cosim_model_loop():
    """MR-ENG-120/121: the loop with the engine's cycle model (no simulator), 24 KiB at 10 %
    loss: frames lost, resent from the model engine's ACKs, memory equals the source."""
    r = cosim.run_model(cosim.Config(nbytes=16 * 1024, loss=0.15, seed=3, mtu_log2=10))
    _closed_loop(r)
    assert r["cycles"] * 1 / cosim.CLOCK_HZ == pytest.approx(r["sim_time_s"], rel=0.2)


def test_cosim_reference():
    """MR-ENG-123: the reference run (the same sender and fabric, a reference Endpoint
    receiving without delayed-ACK timer and rate hints, as the slice): ACK every packet and the
    transport reaches >= 0.9 of the payload limit at 1 % loss; ACK every fourth and the senders
    wait for probes (why the loop's default is 1)."""
    cfg = cosim.Config(nbytes=4 << 20, loss=0.01, seed=1)
    r1 = cosim.run_reference(cfg, timer=False, hints=False)
    r4 = cosim.run_reference(cosim.Config(nbytes=4 << 20, loss=0.01, seed=1, ack_every=4),
                             timer=False, hints=False)
    assert r1["ok"] and r4["ok"] and r1["fabric"]["lost"] > 0
    assert r1["goodput_vs_limit"] >= 0.9 > r4["goodput_vs_limit"]
    assert r4["sender"]["probes"] > 10 * r1["sender"]["probes"]
    # MR-RX-090: with the receiver's delayed-ACK timer (the engine's, RTT / 4) the bursts' last
    # packets are acknowledged without waiting for probes
    r4t = cosim.run_reference(cosim.Config(nbytes=4 << 20, loss=0.01, seed=1, ack_every=4),
                              timer=True, hints=False)
    assert r4t["ok"] and r4t["goodput_vs_limit"] >= 0.9
    assert r4t["sender"]["probes"] * 10 < r4["sender"]["probes"]


def test_cosim_peer_rtl_only_both_ways(capsys):
    """MR-ENG-124/138: ``--peer rtl`` is two whole engines: with ``--direction tx`` it is one
    line and a non-zero exit."""
    assert main(["cosim", "--peer", "rtl", "--direction", "tx", "--json"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--peer rtl" in err[0]


def test_cosim_help(capsys):
    with pytest.raises(SystemExit) as e:
        main(["cosim", "--help"])
    assert e.value.code == 0 and "--peer" in capsys.readouterr().out


def test_cosim_bad_arguments(capsys):
    assert main(["cosim", "--loss", "1.5"]) == 2
    assert main(["cosim", "--bytes", "0"]) == 2
    assert len(capsys.readouterr().err.strip().splitlines()) == 2


def test_cosim_rtl_default(capsys):
    """MR-ENG-120..123: ``metaroce cosim --json`` on the RTL, 256 KiB at 2 % loss over four
    spines, 64 bits (10 Gb/s at 156.25 MHz): the JSON fields, sha256 match, every WR complete,
    retransmissions driven by the RTL's ACKs."""
    assert main(["cosim", "--json", "--bytes", str(256 * 1024), "--loss", "0.02", "--seed", "4"]) == 0
    out = capsys.readouterr().out.strip().splitlines()
    assert len(out) == 1
    r = json.loads(out[0])
    assert list(r)[:6] == ["ok", "sha256_match", "bytes", "goodput_vs_limit", "cycles", "mismatches"]
    assert r["mismatches"] is None and r["bytes"] == 256 * 1024 and r["reference"]["ok"]
    _closed_loop(r)
    assert r["link_gbps"] == 10.0 and r["clock_mhz"] == 156.25
    assert r["cycles"] >= r["bytes"] // 8


@pytest.mark.slow
def test_cosim_rtl_lockstep():
    """MR-ENG-122: the same loop with the cycle model alongside: 0 mismatches, every output
    compared every cycle (32 KiB at 10 % loss, reordering)."""
    from metaroce.commands.cosim import run_rtl
    r = run_rtl(cosim.Config(nbytes=32 * 1024, loss=0.1, reorder=0.1, seed=5, mtu_log2=10), lockstep=True)
    assert r["lockstep"] and r["mismatches"] == 0
    _closed_loop(r)


@pytest.mark.slow
@pytest.mark.parametrize("scenario,nbytes,loss", [("writes", 4 << 20, 0.01), ("reorder", 1 << 20, 0.02),
                                                  ("ecn", 1 << 20, 0.01), ("single-path", 1 << 20, 0.02)])
def test_cosim_rtl_scenarios(capsys, scenario, nbytes, loss):
    """MR-ENG-123: the scenarios on the RTL, bigger transfers."""
    assert main(["cosim", scenario, "--json", "--bytes", str(nbytes), "--loss", str(loss)]) == 0
    r = json.loads(capsys.readouterr().out)
    _closed_loop(r)
    if scenario == "ecn":
        assert r["fabric"]["ce_marked"] > 0 and r["engine"]["rx_counters"]["ce"] > 0
    if scenario == "writes":        # the transport's own figure on this fabric, within 10 %
        assert r["goodput_vs_limit"] >= 0.9 * r["reference"]["goodput_vs_limit"]


def test_pair_driver_is_the_peer_driver():
    """MR-ENG-138: the driver of the RTL pair (both engines' ports, ``h0__``/``h1__``), stepped
    with two engine models as one (``EnginePairModel``), is the two-engine loop: the same
    memories, completions, frames and cycles as the peer engine stepped inside the driver."""
    from metaroce.models import cosim_engine, cosim_tx
    cfg = cosim.Config(**{**cosim_tx.TX_CONFIG, "n_conns": 1, "nbytes": 8192, "loss": 0.05, "seed": 3})
    one = cosim_engine.run_peer_model(cfg)
    pair = cosim_engine.run_peer_model(cfg, pair=True)
    assert pair["ok"] and pair["wrs_completed_ok"] and pair["engines"]["h1"]["placements"] > 6
    for k in ("sha256", "goodput_vs_limit", "cycles", "wrs", "engines", "fabric"):
        assert pair[k] == one[k], k


@pytest.mark.slow
def test_cosim_two_rtl_engines(capsys):
    """MR-ENG-138: ``metaroce cosim --peer rtl``: two whole engines, both the RTL (the pair build
    of the block ``engine`` under Verilator), 64 KiB at 2 % loss: both memories equal their
    sources, every WR of both engines completes; MR-ENG-290: each engine's completions (per
    stream, in order) are the reference endpoints' (model <-> model) on the same WRITEs."""
    assert main(["cosim", "--peer", "rtl", "--json", "--bytes", str(64 * 1024), "--loss", "0.02",
                 "--seed", "2"]) == 0
    r = json.loads(capsys.readouterr().out)
    assert r["ok"] and r["sha256_match"] and r["wrs_completed_ok"] and r["fabric"]["lost"] > 0
    assert r["engine_sim"] == "rtl" and r["mismatches"] is None
    assert r["engines"]["h1"]["placements"] >= r["wrs"][0] and r["cycles_per_s"] > 0
    # MR-ENG-290: RTL <-> RTL gives model <-> model's completions on the same WRITEs
    for h in ("h0", "h1"):
        assert r["engines"][h]["completions_digest"] == r["reference"]["completions_digest"][h], h


@pytest.mark.slow
def test_cosim_two_rtl_engines_lockstep():
    """MR-ENG-138 with MR-ENG-137's check: the pair build against ``EnginePairModel``, every
    output of both engines compared every cycle: 0 mismatches (16 KiB at 5 % loss)."""
    from metaroce.commands.cosim import run_rtl
    from metaroce.models import cosim_tx
    cfg = cosim.Config(**{**cosim_tx.TX_CONFIG, "n_conns": 1, "nbytes": 16 * 1024, "loss": 0.05,
                          "seed": 3})
    r = run_rtl(cfg, lockstep=True, direction="pair")
    assert r["ok"] and r["lockstep"] and r["mismatches"] == 0
