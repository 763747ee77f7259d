"""MR-ENG-139: interop of the whole engine with the reference endpoint, both directions: the
engine (its cycle model here; the RTL, one instance of the pair build, in the slow tests) and a
model ``Endpoint`` over the lossy fabric, data both ways at once; both memories must equal their
sources byte for byte and every WR of both sides must complete. Also MR-ENG-138's ``--back``
and the ``pod`` scenario of MR-ENG-123.
"""
import json

import pytest

from metaroce.cli import main
from metaroce.models import cosim, cosim_engine, cosim_tx


def _cfg(nbytes, loss, seed, **kw):
    return cosim.Config(**{**cosim_tx.TX_CONFIG, "n_conns": 1, "nbytes": nbytes, "loss": loss,
                           "seed": seed, **kw})


def _interop(r, direction):
    assert r["ok"] and r["sha256_match"] and r["wrs_completed_ok"]
    assert r["sha256"] == r["sha256_source"]
    assert r["wrs"]["engine"] >= 1 and r["wrs"]["endpoint"] >= 1      # data both ways
    assert r["engine"]["host"] == ("h1" if direction == "rx" else "h0")
    assert r["engine"]["errors"] == 0 and r["engine"]["bypass"] == 0
    assert 0 < r["goodput_vs_limit"] <= 1


@pytest.mark.parametrize("direction", ["rx", "tx"])
def test_engine_endpoint_interop_model(direction):
    """MR-ENG-139: the engine's model and the endpoint, 24 KiB the one way at 5 % loss and 3 KiB
    back: frames lost on the link into h1 and recovered from the other side's ACKs."""
    r = cosim_engine.run_endpoint_model(_cfg(24 * 1024, 0.05, 3), direction)
    _interop(r, direction)
    assert r["fabric"]["lost"] > 0 and r["bytes_back"] == 3 * 1024
    if direction == "rx":       # the endpoint resent what the engine's ACKs and NAKs named
        assert r["endpoint"]["retransmitted"] > 0


def test_endpoint_pair_driver_is_the_single():
    """MR-ENG-139: the pair build's driver (the engine one instance of ``EnginePairModel``, the
    other idle) is the single engine's: the same memories, completions and cycles."""
    cfg = _cfg(4096, 0.05, 4, back=1024)
    one = cosim_engine.run_endpoint_model(cfg, "tx")
    pair = cosim_engine.run_endpoint_model(cfg, "tx", pair=True)
    assert pair["ok"]
    for k in ("sha256", "goodput_vs_limit", "cycles", "wrs", "engine", "fabric"):
        assert pair[k] == one[k], k


def test_cosim_peer_endpoint_cli(capsys):
    """MR-ENG-124/139: ``metaroce cosim --peer endpoint --engine model --direction tx --json``."""
    assert main(["cosim", "--peer", "endpoint", "--engine", "model", "--direction", "tx", "--json",
                 "--bytes", "8192", "--back", "2048", "--seed", "2"]) == 0
    r = json.loads(capsys.readouterr().out)
    assert list(r)[:6] == ["ok", "sha256_match", "bytes", "goodput_vs_limit", "cycles", "mismatches"]
    assert r["peer"] == "endpoint" and r["direction"] == "tx" and r["bytes_back"] == 2048
    _interop(r, "tx")


def test_cosim_back_argument(capsys):
    """MR-ENG-138: ``--back`` is h1's writes back, only with two hosts that both send: one line
    and exit 2 otherwise; ``--back 0``: h1 sends nothing (no WR) and the run is still whole."""
    assert main(["cosim", "--back", "0"]) == 2
    assert main(["cosim", "--peer", "rtl", "--back", "-1"]) == 2
    assert len(capsys.readouterr().err.strip().splitlines()) == 2
    r = cosim_engine.run_peer_model(_cfg(8192, 0.05, 3, back=0), pair=True)
    assert r["ok"] and r["bytes_back"] == 0 and r["wrs"] == [6, 0]


def test_pod_scenario_reference():
    """MR-ENG-123: the ``pod`` scenario (base RTT 5 us): the reference endpoints reach >= 0.9 of
    the payload limit at 1 % loss where ``writes`` (10 us) does not, with the engine's MTU 1,024
    and chunk window 16 (MR-ENG-122's target is reachable there)."""
    over = cosim.SCENARIOS["pod"][0]
    pod = cosim.run_reference(_cfg(4 << 20, 0.01, 1, **over), timer=True, hints=False)
    writes = cosim.run_reference(_cfg(4 << 20, 0.01, 1), timer=True, hints=False)
    assert pod["ok"] and writes["ok"]
    assert pod["goodput_vs_limit"] >= 0.9 > writes["goodput_vs_limit"]


@pytest.mark.slow
@pytest.mark.parametrize("direction", ["rx", "tx"])
def test_cosim_engine_endpoint_rtl(capsys, direction):
    """MR-ENG-139 on the RTL (one engine of the pair build under Verilator): 64 KiB at 2 % loss
    each direction, 8 KiB back."""
    assert main(["cosim", "--peer", "endpoint", "--direction", direction, "--json", "--bytes",
                 str(64 * 1024), "--loss", "0.02", "--seed", "2"]) == 0
    r = json.loads(capsys.readouterr().out)
    _interop(r, direction)
    assert r["engine_sim"] == "rtl" and r["fabric"]["lost"] > 0


@pytest.mark.slow
def test_cosim_engine_endpoint_rtl_lockstep():
    """MR-ENG-139 with MR-ENG-137's check: the RTL against ``EnginePairModel``, every output of
    both instances every cycle: 0 mismatches (16 KiB at 5 %, the engine sending)."""
    from metaroce.commands.cosim import run_rtl
    r = run_rtl(_cfg(16 * 1024, 0.05, 3), lockstep=True, direction="endpoint", endpoint_direction="tx")
    assert r["ok"] and r["lockstep"] and r["mismatches"] == 0
