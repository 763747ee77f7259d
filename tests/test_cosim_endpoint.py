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
    if "reference" in r:        # MR-ENG-290: the CLI's runs carry the reference's completions
        assert r["engine"]["completions_digest"] == r["reference"]["completions_digest"][r["engine"]["host"]]
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


def test_cosim_mac_argument_refuses_other_values(capsys):
    """MR-ENG-120/124: ``--mac`` other than ``cut-through`` or ``store-and-forward``: one line
    and exit 2."""
    with pytest.raises(SystemExit) as e:
        main(["cosim", "--mac", "wormhole"])
    assert e.value.code == 2 and "--mac" in capsys.readouterr().err


def test_cosim_mac_argument(capsys):
    """MR-ENG-120/124/125/138: ``--mac`` is the engine's MAC model in every kind of run (the
    receive half, the TX half, the whole engine against the endpoint); ``--mac
    store-and-forward`` runs the earlier harness, later than the cut-through MAC on the same
    run."""
    for kind in (["--direction", "rx"], ["--direction", "tx"], ["--peer", "endpoint"]):
        cycles = {}
        for mac in ("cut-through", "store-and-forward"):
            assert main(["cosim", *kind, "--engine", "model", "--json", "--bytes", "8192",
                         *(["--back", "1024"] if "--peer" in kind else []), "--loss", "0",
                         "--mac", mac]) == 0
            r = json.loads(capsys.readouterr().out)
            assert r["ok"] and r["config"]["mac_cut_through"] == (mac == "cut-through")
            cycles[mac] = r["cycles"]
        assert cycles["cut-through"] < cycles["store-and-forward"], kind


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


def test_fabric_mac_sends_while_the_frame_streams():
    """MR-ENG-138: the whole engine's MAC (``FabricMac``) puts a frame on the host's link from
    its first beat: it reaches the other host the frame's beats (less one cycle) earlier than
    when the host's NIC takes it at its last beat and serialises it again (the earlier harness,
    ``cut_through=False``); a second frame handed at once waits for the link, and ``m_axis``
    is held while the link is more than the MAC's FIFO behind. A frame coming in reaches the
    MAC its beats less one cycle before its last bit (it streams into ``s_axis`` as it
    arrives)."""
    from metaroce.models import codec
    from metaroce.models.rx_cases import LOCAL_ADDR
    from metaroce.models.endpoint import ack_frame
    raw = codec.encode(ack_frame(LOCAL_ADDR, "10.0.0.1", 0xFFFF, 1, 0xC000, 0, 5, 0, 0, 0, 5))
    data = codec.encode(codec.decode(raw))
    arrivals = {}
    for cut in (True, False):
        cfg = _cfg(4096, 0.0, 1)
        fab = cosim.build_fabric(cfg)
        h0, h1 = fab.hosts
        h0.ep, h1.ep = cosim.RtlPeer("10.0.0.1"), cosim.RtlPeer(LOCAL_ADDR)
        mac = cosim.FabricMac(h1, cut_through=cut, into=cosim.link_into(fab, h1))
        beats = -(-len(data) // 8)
        cosim.fabric_to(fab, 1600)
        t_last = fab.sim.now            # the NIC takes the frame now (the harness before)
        first = t_last - (beats - 1) / cosim.CLOCK_HZ
        seen = []
        h0.rx_hook = lambda f, now: seen.append(now)
        mac.send(data, first)
        if cut:
            byte_s = 8 / (cfg.width * cosim.CLOCK_HZ)
            end = first + (len(data) + 24) * byte_s
            assert mac.wire_free == pytest.approx(end)
            assert not mac.can_send(first + 3 * byte_s * 8) and mac.can_send(end - 31 * byte_s)
            mac.send(data, first)           # the link is busy: it starts at the first's end
            assert mac.wire_free == pytest.approx(end + (len(data) + 24) * byte_s)
        fab.sim.run(until=1e-3)
        arrivals[cut] = seen[0]
        got = []
        h1.rx_hook = lambda f, now: got.append(now)
        back = codec.encode(ack_frame("10.0.0.1", LOCAL_ADDR, 0xFFFF, 1, 0xC000, 0, 5, 0, 0, 0, 5))
        h0.ep.tx.append(codec.decode(back))
        h0.pump()
        fab.sim.run(until=2e-3)
        assert list(mac.rx) == [back] and len(back) == len(data)
        arrivals["in", cut] = got[0]
    assert arrivals[False] - arrivals[True] == pytest.approx((beats - 1) / cosim.CLOCK_HZ)
    assert arrivals["in", False] - arrivals["in", True] == pytest.approx((beats - 1) / cosim.CLOCK_HZ)


def test_fabric_mac_receives_early_on_a_link_without_faults():
    """MR-ENG-138: the receive side of ``FabricMac`` on ``h0``, whose link carries no faults:
    an incoming frame reaches the MAC its beats less one cycle before its last bit, as on
    ``h1``'s lossy link."""
    from metaroce.models import codec
    from metaroce.models.endpoint import ack_frame
    from metaroce.models.rx_cases import LOCAL_ADDR
    raw = codec.encode(ack_frame(LOCAL_ADDR, "10.0.0.1", 0xFFFF, 1, 0xC000, 0, 5, 0, 0, 0, 5))
    beats = -(-len(raw) // 8)
    got = {}
    for cut in (True, False):
        fab = cosim.build_fabric(_cfg(4096, 0.0, 1))
        h0, h1 = fab.hosts
        h0.ep, h1.ep = cosim.RtlPeer("10.0.0.1"), cosim.RtlPeer(LOCAL_ADDR)
        mac = cosim.FabricMac(h0, cut_through=cut, into=cosim.link_into(fab, h0))
        seen = []
        h0.rx_hook = lambda f, now: seen.append(now)
        h1.ep.tx.append(codec.decode(raw))
        h1.pump()
        fab.sim.run(until=1e-3)
        assert list(mac.rx) == [raw]
        got[cut] = seen[0]
    assert got[False] - got[True] == pytest.approx((beats - 1) / cosim.CLOCK_HZ)


@pytest.mark.parametrize("kind,direction", [("endpoint", "rx"), ("endpoint", "tx"), ("peer", "rx")])
def test_reference_pair_has_the_runs_writes(kind, direction):
    """MR-ENG-138/139: the reference of a whole-engine run posts the run's own WRITEs both ways
    (``reference_writes``: stream, offset, length of each WR of h0 and of h1's back traffic), and
    the reference endpoints move them whole."""
    cfg = _cfg(20000, 0.02, 5, back=3000)
    w0, w1 = cosim_engine.reference_writes(cfg, kind, direction)
    of = lambda items: [(x["stream"], x["va"], x["length"]) for x in items]      # noqa: E731
    if kind == "peer":
        drv = cosim_engine.PeerCosim(cfg)
        assert (of(drv.a.items), of(drv.b.items)) == (w0, w1)
    else:
        drv = cosim_engine.EndpointCosim(cfg, direction)
        eng, ep = of(drv.eng.items), drv.ep_writes
        assert (ep, eng) == (w0, w1) if direction == "rx" else (eng, ep) == (w0, w1)
    assert sum(n for _, _, n in w0) == cfg.nbytes and sum(n for _, _, n in w1) == 3000
    assert len({s for s, _, _ in w0}) == 2          # both streams of the engine's connection
    r = cosim_engine.run_reference_pair(cfg, w0, w1)
    assert r["ok"] and 0 < r["goodput_vs_limit"] <= 1
