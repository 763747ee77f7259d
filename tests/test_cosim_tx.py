"""The engine's TX half as the sender of the closed loop (MR-ENG-125..127): the TX engine
writes over the model fabric (loss, duplication, multipath) to a reference receiver Endpoint,
whose ACK and NAK frames come back into the engine's ``s_ack``; the receiver's memory must
equal the source byte for byte (sha256) and every WR must complete with success. The model
runs are in the default run; the RTL (Verilator build of the block ``tx`` at 64 bits, the one
tests/test_tx_rtl.py uses) runs are ``slow``.
"""
import json

import pytest

from metaroce.cli import main
from metaroce.models import codec, cosim, cosim_tx
from metaroce.models.endpoint import ack_frame, nak_frame
from metaroce.models.tx_cases import ack_record
from metaroce.models.wire import NakReason


def _cfg(**kw):
    return cosim.Config(**{**cosim_tx.TX_CONFIG, **kw})


def _closed_loop(r):
    """The loop was closed: frames were lost and the engine resent them from the receiver's
    ACKs; the receiver's memory is the source; every WR completed with success."""
    assert r["ok"] and r["sha256_match"] and r["wrs_completed_ok"], {k: r[k] for k in ("ok", "engine")}
    eng, ctr = r["engine"], r["engine"]["retransmit_counters"]
    assert r["fabric"]["lost"] > 0 and eng["retransmits"] > 0
    assert ctr["gap_losses"] + ctr["timeout_losses"] > 0
    assert eng["acks_taken"] == ctr["acks"] and eng["naks_taken"] == ctr["naks"]
    assert ctr["sent"] == eng["frames"] and ctr["sent_bad"] == ctr["acks_bad"] == 0
    assert r["receiver"]["data_packets"] >= eng["frames"] - r["fabric"]["lost"]
    assert eng["retry_errors"] == 0
    assert 0 < r["goodput_vs_limit"] <= 1


def test_ack_record_of_the_receivers_frames():
    """MR-TX-003, MR-ENG-125: an ACK frame's MRAH and a NAK frame's MRNH become the ``s_ack``
    record (the RX engine's ``m_ack`` layout) field for field, through the bytes."""
    f = codec.decode(codec.encode(ack_frame("10.0.0.2", "10.0.0.1", 0x1234, 0x800100, 4711, 2, 100,
                                            0b101, 3, 0, 99)))
    assert ack_record(f, 1) == {"nak": 0, "conn": 1, "path": 2, "psn": 99, "reason": 0, "cum": 100,
                                "sack": 0b101, "ce_count": 3, "ece": 1, "sport": 4711}
    n = codec.decode(codec.encode(nak_frame("10.0.0.2", "10.0.0.1", 0x1234, 0x800100, 4711, 1,
                                            NakReason.ACCESS, 77)))
    r = ack_record(n, 0)
    assert (r["nak"], r["path"], r["psn"], r["reason"]) == (1, 1, 77, int(NakReason.ACCESS))


def test_cosim_tx_model_loop():
    """MR-ENG-125/126: the TX engine's cycle model sends 48 KiB at 10 % loss: frames lost,
    found by the receiver's SACKs (and the timers), resent; memory equals the source."""
    r = cosim_tx.run_model(_cfg(nbytes=48 * 1024, loss=0.1, seed=3))
    _closed_loop(r)
    assert r["cycles"] / cosim.CLOCK_HZ >= r["sim_time_s"]
    eng = r["engine"]
    assert 48 <= eng["frames"] - eng["retransmits"] <= 48 + 5      # 1 KiB MTU, 6 WRITEs


def test_cosim_tx_config_checked():
    """MR-ENG-125: the TX direction runs the block ``tx``'s MTU and connections."""
    with pytest.raises(ValueError, match="MTU"):
        cosim_tx.check_config(cosim.Config(nbytes=4096))
    with pytest.raises(ValueError, match="connections"):
        cosim_tx.check_config(_cfg(n_conns=3))


def test_cosim_tx_cli_model(capsys):
    """MR-ENG-124/127: ``metaroce cosim --direction tx --engine model --json``: the head fields,
    the direction and the model <-> model reference."""
    assert main(["cosim", "--direction", "tx", "--engine", "model", "--json", "--bytes", "32768",
                 "--loss", "0.05", "--seed", "2"]) == 0
    r = json.loads(capsys.readouterr().out)
    assert list(r)[:6] == ["ok", "sha256_match", "bytes", "goodput_vs_limit", "cycles", "mismatches"]
    assert r["direction"] == "tx" and r["engine_sim"] == "model" and r["mismatches"] is None
    assert r["config"]["mtu_log2"] == 10 and r["config"]["ack_every"] == 4
    assert r["reference"]["ok"] and r["ok"]


@pytest.mark.slow
def test_cosim_tx_rtl_lockstep():
    """MR-ENG-126: the loop on the RTL (Verilator) with the cycle model alongside: 0 mismatches,
    every output compared every cycle (64 KiB at 5 % loss)."""
    from metaroce.commands.cosim import run_rtl
    r = run_rtl(_cfg(nbytes=64 * 1024, loss=0.05, seed=5), lockstep=True, direction="tx")
    assert r["lockstep"] and r["mismatches"] == 0
    _closed_loop(r)


@pytest.mark.slow
@pytest.mark.parametrize("scenario,nbytes,loss", [("writes", 1 << 20, 0.01), ("reorder", 512 << 10, 0.02),
                                                  ("single-path", 512 << 10, 0.02)])
def test_cosim_tx_rtl_scenarios(capsys, scenario, nbytes, loss):
    """MR-ENG-126: the scenarios with the RTL sending."""
    assert main(["cosim", scenario, "--direction", "tx", "--json", "--bytes", str(nbytes),
                 "--loss", str(loss)]) == 0
    r = json.loads(capsys.readouterr().out)
    _closed_loop(r)
