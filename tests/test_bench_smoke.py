"""Every benchmark runs in a tiny configuration and its rows carry the documented fields.

Targets are measured by the benchmarks themselves (docs/benchmarks.md), not here; these tests
check that each benchmark runs, that its JSON has the documented shape, and that every run
delivered every byte exactly once (``delivered_ok``; MR-FAB-051).
"""
import json

from metaroce.cli import main

LOSS_FIELDS = {"protocol", "topology", "link_gbps", "rtt_us", "loss", "direction", "pattern", "seeds",
               "goodput_gbps", "goodput_min", "goodput_max", "goodput_vs_limit", "goodput_vs_lossless",
               "retransmitted", "spurious_retransmits", "timeouts", "sender_busy", "frames_per_packet",
               "complete", "delivered_ok"}


def _bench(capsys, *args):
    rc = main(["bench", *args, "--json", "--no-plot", "--jobs", "1"])
    out = capsys.readouterr().out
    assert rc == 0
    obj = json.loads(out)
    assert obj["bench"] == args[0] and obj["rows"]
    return obj


def test_bench_loss_smoke(capsys):
    """bench loss --quick: every protocol at every point of both shipped topologies, 2 seeds."""
    obj = _bench(capsys, "loss", "--quick")
    rows = obj["rows"]
    protos = {"metaroce", "rocev2", "rocev2-adaptive", "rocev2-dcqcn", "irn"}
    assert {r["protocol"] for r in rows} == protos
    assert {(r["topology"], r["loss"], r["direction"], r["pattern"]) for r in rows} == {
        (t, 0.0, "none", "none") for t in ("single", "leaf_spine")} | {
        (t, 0.05, "both", p) for t in ("single", "leaf_spine") for p in ("iid", "bursty")}
    limit = obj["params"]["workload"]["payload_limit_gbps"]
    for r in rows:
        assert LOSS_FIELDS <= set(r)
        assert r["delivered_ok"] is True and r["seeds"] == 2 and r["complete"] == 2
        assert 0 < r["goodput_min"] <= r["goodput_gbps"] <= r["goodput_max"]
        assert abs(r["goodput_vs_limit"] - r["goodput_gbps"] / limit) < 1e-4     # JSON rounds
        assert 0 < r["sender_busy"] <= 1.0 and r["frames_per_packet"] >= 1.0
        if r["loss"] == 0:
            assert r["goodput_vs_lossless"] == 1.0 and r["retransmitted"] == 0
            assert r["frames_per_packet"] == 1.0
        elif r["topology"] == "single":
            assert r["retransmitted"] > 0
    assert set(obj["params"]["protocols"]) == protos
    assert obj["params"]["protocols"]["rocev2-dcqcn"]["dcqcn"] is True
    assert "single_loss0.05_both_iid_best_baseline" in obj["summary"]


def test_bench_spray_smoke(capsys):
    obj = _bench(capsys, "spray", "--bytes", "256Ki", "--paths", "8,64", "--senders", "2", "--spines", "4")
    assert [r["paths"] for r in obj["rows"]] == [8, 64, 1]
    for r in obj["rows"]:
        assert {"protocol", "paths", "packets_sent", "spurious_retransmits", "spurious_per_packet",
                "delivered_ok"} <= set(r)
        assert r["delivered_ok"] is True and r["packets_sent"] >= 128


def test_bench_incast_smoke(capsys):
    obj = _bench(capsys, "incast", "--senders", "4", "--total", "2Mi", "--min-bytes", "256Ki")
    assert len(obj["rows"]) == 4
    assert {(r["topology"], r["protocol"]) for r in obj["rows"]} == {
        (t, p) for t in ("single", "fat_tree") for p in ("metaroce", "rocev2")}
    for r in obj["rows"]:
        assert {"protocol", "senders", "converge_rtts", "jain", "peak_queue_kb", "drops",
                "drops_after_converged", "drop_fraction", "goodput_gbps", "delivered_ok"} <= set(r)
        assert r["delivered_ok"] is True and 0 < r["jain"] <= 1.0 and r["senders"] == 4
        assert 0 <= r["drop_fraction"] < 1


def test_bench_fairness_smoke(capsys):
    """bench fairness: every case on its shipped scenario, both protocols, the documented row."""
    obj = _bench(capsys, "fairness", "--scale", "0.5")
    rows = obj["rows"]
    assert [(r["case"], r["protocol"]) for r in rows] == [
        (c, p) for c in ("trickle_bulk", "core_1v8", "core_1v64", "core_n4") for p in ("metaroce", "rocev2")]
    for r in rows:
        assert {"case", "protocol", "flows", "jain", "bulk_vs_ideal", "delivered_ok"} <= set(r)
        assert r["delivered_ok"] is True and 0 < r["jain"] <= 1.0 and r["window_us"] > 0
        for f in r["flows"]:
            assert {"name", "paths", "gbps"} <= set(f) and f["gbps"] >= 0
    paths = {r["case"]: [f["paths"] for f in r["flows"]] for r in rows if r["protocol"] == "metaroce"}
    assert paths["core_1v8"] == [1, 8] and paths["core_1v64"] == [1, 64]


def test_bench_failover_smoke(capsys):
    obj = _bench(capsys, "failover", "--bytes", "6Mi", "--fail-at", "8", "--protocols", "metaroce,rocev2-adaptive")
    rows = {(r["protocol"], r["scenario"]): r for r in obj["rows"]}
    assert {s for _, s in rows} == {"path", "path_reconverge", "plane"}
    for (proto, scen), r in rows.items():
        assert {"recover_rtts", "during_gbps", "before_gbps", "goodput_gbps", "status", "delivered_ok"} <= set(r)
        assert r["before_gbps"] > 0
        if proto == "metaroce":
            assert r["delivered_ok"] is True and r["recover_rtts"] is not None
    # a single-path QP gets through a dead uplink only when the switches reconverge
    assert rows[("rocev2-adaptive", "path_reconverge")]["delivered_ok"] is True
    assert rows[("rocev2-adaptive", "path")]["status"] == "error:retry_exc_err"
    assert obj["params"]["protocols"]["rocev2-adaptive"]["adaptive_rto"] is True


def test_bench_scale_smoke(capsys, tmp_path):
    rc = main(["bench", "scale", "--conns", "40", "--pairs", "2", "--planes", "1,2",
               "--bytes-per-conn", "16Ki", "--json", "--jobs", "1", "--plot", str(tmp_path / "s.png")])
    obj = json.loads(capsys.readouterr().out)
    assert rc == 0 and [r["planes"] for r in obj["rows"]] == [1, 2]
    for r in obj["rows"]:
        assert {"planes", "connections", "goodput_gbps", "scaling", "sim_pkts_per_s", "delivered_ok"} <= set(r)
        assert r["delivered_ok"] is True and r["connections"] == 40 and r["sim_pkts_per_s"] > 0
    assert (tmp_path / "s.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_bench_verbs_smoke(capsys):
    """MR-VERB-003, MR-GBN-022: READ and WRITE rows for both protocols, delivered, under loss."""
    obj = _bench(capsys, "verbs", "--bytes", "512Ki", "--losses", "0,0.02")
    rows = obj["rows"]
    assert {(r["protocol"], r["op"], r["loss"]) for r in rows} == {
        (p, op, x) for p in ("metaroce", "rocev2") for op in ("read", "write") for x in (0, 0.02)}
    assert all(r["delivered_ok"] and r["goodput_gbps"] > 0 for r in rows)
    assert all(r["read_vs_write"] > 0 for r in rows if r["op"] == "read")
    assert "read_loss0.02_metaroce_over_rocev2" in obj["summary"]


def test_bench_table_and_errors(capsys):
    rc = main(["bench", "loss", "--bytes", "256Ki", "--losses", "0", "--seeds", "1", "--topologies", "single",
               "--protocols", "metaroce", "--no-plot", "--jobs", "1"])
    out = capsys.readouterr().out
    assert rc == 0 and "goodput" in out and "metaroce" in out      # a wide table: headers may be cut
    assert main(["bench", "loss", "--losses", "2"]) == 2
    assert "--losses" in capsys.readouterr().err
    assert main(["bench"]) == 2
    assert "loss" in capsys.readouterr().err


def test_bench_auth_smoke(capsys):
    """bench auth (MR-SEC-110..112): every mode at every loss point, simulated over the seeds;
    the tag's wire overhead is the same at every loss, and every run delivered its bytes."""
    obj = _bench(capsys, "auth", "--bytes", "256Ki", "--seeds", "2", "--udp-bytes", "0",
                 "--losses", "0,0.05", "--packets", "20")
    rows = obj["rows"]
    assert [(r["mode"], r["loss"]) for r in rows] == [
        (m, x) for x in (0.0, 0.05) for m in ("off", "auth", "encrypt")]
    for r in rows:
        assert r["delivered_ok"] is True and r["sim_gbps"] > 0
        assert (r["wire_overhead"] > 0) == (r["mode"] != "off")
    off = {r["loss"]: r["sim_gbps"] for r in rows if r["mode"] == "off"}
    assert all(abs(r["sim_vs_off"] - r["sim_gbps"] / off[r["loss"]]) < 1e-3 for r in rows)
    assert rows[0]["sim_gbps"] > rows[3]["sim_gbps"]        # loss costs goodput


def test_bench_auth_bad_losses(capsys):
    """MR-CLI-001: a bad --losses is one line and exit 2."""
    assert main(["bench", "auth", "--losses", "0,x", "--json"]) == 2
    err = capsys.readouterr().err
    assert err.strip().splitlines() == ["metaroce bench: error: --losses: not a list of numbers: '0,x'"]


def test_bench_simspeed_where_smoke(capsys):
    """bench simspeed --where: the parts of each mode add up to its bytecodes per packet, and the
    MetaRoCE endpoint's work is booked to its entry points by frame kind."""
    obj = _bench(capsys, "simspeed", "--hosts", "4", "--packets", "20", "--where")
    total = obj["summary"]["bytecodes_per_packet"]
    assert set(total) == {"fabric", "metaroce", "rocev2"}
    for mode, ops in total.items():
        parts = [r for r in obj["rows"] if r["mode"] == mode]
        assert {"event loop", "links and switches", "hosts and NICs"} <= {r["part"] for r in parts}
        assert abs(sum(r["bytecodes_per_packet"] for r in parts) - ops) <= len(parts)     # rounding
        assert abs(sum(r["share"] for r in parts) - 1.0) < 0.01
        assert obj["summary"]["top_functions"][mode]
    mr = {r["part"]: r for r in obj["rows"] if r["mode"] == "metaroce"}
    for part in ("data received", "ACK received", "data sent", "ACK sent", "idle polls"):
        assert mr["endpoint: " + part]["bytecodes_per_packet"] > 0
