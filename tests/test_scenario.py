"""Scenario files: schema checks, one-line errors, the runner's result, shipped scenarios (MR-SCN-*)."""
import copy
import json
import tomllib

import pytest

from metaroce.cli import main
from metaroce.sim.scenario import ScenarioError, check_scenario, load_scenario, run_scenario, shipped_scenarios

BASE = """
name = "t"
until_us = 20000
[topology]
kind = "single"
hosts = 3
rate_gbps = 100
rtt_us = 8
[[flows]]
src = "h0"
dst = "h1"
size = "64Ki"
"""


def _write(tmp_path, text, name="s.toml"):
    p = tmp_path / name
    p.write_text(text)
    return p


BAD = [
    ("topology.colour = 1\n", "topology.colour: unknown key"),
    ("[topology]\nkind = \"ring\"\n[[flows]]\nsrc=\"h0\"\ndst=\"h1\"\nsize=1\n", "topology.kind: 'ring' is not one of"),
    ("[topology]\nhosts = \"4\"\n[[flows]]\nsrc=\"h0\"\ndst=\"h1\"\nsize=1\n", "topology.hosts: expected an integer"),
    ("[topology]\nrate_gbps = -1\n[[flows]]\nsrc=\"h0\"\ndst=\"h1\"\nsize=1\n", "topology.rate_gbps: -1.0 is out of range"),
    ("[[flows]]\nsrc=\"h0\"\ndst=\"h7\"\nsize=1\n", "flows[0].dst: unknown host 'h7' (hosts are h0 .. h1)"),
    ("[[flows]]\nsrc=\"h0\"\ndst=\"h1\"\n", "flows[0].size: missing required key"),
    ("[[flows]]\nsrc=\"h0\"\ndst=\"h1\"\nsize=\"lots\"\n", "flows[0].size: expected a size"),
    ("[[flows]]\nsrc=\"h0\"\ndst=\"h1\"\nsize=1\n[[faults]]\nlinks=[\"h0>p0.spine9\"]\nloss=0.1\n",
     "faults[0].links[0]: no link matches 'h0>p0.spine9'"),
    ("[[flows]]\nsrc=\"h0\"\ndst=\"h1\"\nsize=1\n[[faults]]\nlinks=[\"h0>p0.leaf0\"]\nloss=1.5\n",
     "faults[0].loss: 1.5 is out of range [0, 1]"),
    ("[[flows]]\nsrc=\"h0\"\ndst=\"h1\"\nsize=1\n[[faults]]\nlinks=[\"h0>p0.leaf0\"]\ndirection=\"up\"\n",
     "faults[0].direction: 'up' is not one of ack, both, data"),
    ("[[flows]]\nsrc=\"h0\"\ndst=\"h1\"\nsize=1\n[[failures]]\nswitch=\"p0.spine3\"\nat_us=1\n",
     "failures[0].switch: unknown switch 'p0.spine3'"),
    ("[[flows]]\nsrc=\"h0\"\ndst=\"h1\"\nsize=1\n[protocol.params]\nwarp=9\n", "protocol.params.warp: unknown parameter of metaroce"),
    ("[protocol]\nname=\"rocev2\"\n[protocol.params]\nmtu=1000\n[[flows]]\nsrc=\"h0\"\ndst=\"h1\"\nsize=1\n",
     "protocol.params: RoCEv2 path MTU"),
    ("[ecn]\nmode=\"red\"\nkmin_bytes=100\nkmax_bytes=50\n[[flows]]\nsrc=\"h0\"\ndst=\"h1\"\nsize=1\n",
     "ecn.kmax_bytes: 50 must be above kmin_bytes"),
    ("[pfc]\nenabled=true\n[[flows]]\nsrc=\"h0\"\ndst=\"h1\"\nsize=1\n", "pfc.xoff_bytes: missing"),
    ("[topology]\nkind=\"fat_tree\"\nk=4\nhosts=17\n[[flows]]\nsrc=\"h0\"\ndst=\"h1\"\nsize=1\n",
     "topology.hosts: 17 hosts do not fit a k=4 fat tree"),
    ("flows = 3\n", "flows: expected an array of tables"),
    ("[[flows]]\nsrc=\"h0\"\ndst=\"h1\"\nsize=1\n[[failures]]\nlink=\"h0>p0.leaf0\"\nat_us=5\nuntil_us=2\n",
     "failures[0].until_us: 2.0 is not after at_us"),
    ("seed = 1\nseed = 2\n", "not valid TOML"),
    ("[[flows]]\nsrc=\"h0\"\ndst=\"h1\"\nsize=1\n[[failures]]\nplane=1\nat_us=5\n",
     "failures[0].plane: unknown plane 1 (planes are 0 .. 0)"),
    ("[[flows]]\nsrc=\"h0\"\ndst=\"h1\"\nsize=1\n[[failures]]\nplane=0\nswitch=\"p0.leaf0\"\nat_us=5\n",
     "failures[0]: give exactly one of link, switch or plane"),
]


@pytest.mark.parametrize("text, msg", BAD)
def test_bad_file_is_one_line_naming_file_and_key(tmp_path, capsys, text, msg):
    """MR-SCN-001: a bad file is refused with one line: file, key path, what is wrong; exit 2."""
    p = _write(tmp_path, text)
    with pytest.raises(ScenarioError) as ei:
        run_scenario(p)
    assert str(ei.value).startswith(f"{p}: ") and msg in str(ei.value)
    assert main(["sim", str(p)]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.count("\n") == 1 and msg in err and "Traceback" not in err
    assert err.startswith("metaroce sim: error: ")


def test_missing_file_and_bad_seed(tmp_path, capsys):
    """MR-SCN-001: an unreadable file and a negative seed are one-line errors too."""
    assert main(["sim", str(tmp_path / "nope.toml")]) == 2
    assert "cannot read" in capsys.readouterr().err
    p = _write(tmp_path, BASE)
    assert main(["sim", str(p), "--seed", "-1"]) == 2
    assert capsys.readouterr().err.count("\n") == 1


def test_defaults_filled_in():
    sc = check_scenario(tomllib.loads(BASE))
    assert sc["protocol"]["name"] == "metaroce" and sc["flows"][0]["name"] == "f0"
    assert sc["flows"][0]["size"] == 64 * 1024 and sc["flows"][0]["paths"] == 8
    assert sc["buffer"]["model"] == "static" and sc["faults"] == []


def test_cli_json_result(tmp_path, capsys):
    """MR-SCN-005/006: --json prints one object with flows, links and fairness."""
    p = _write(tmp_path, BASE + '\n[[flows]]\nsrc = "h2"\ndst = "h1"\nsize = "64Ki"\n')
    assert main(["sim", str(p), "--json", "--seed", "3"]) == 0
    res = json.loads(capsys.readouterr().out)
    assert res["seed"] == 3 and res["delivered_ok"] and res["all_done"]
    assert [f["name"] for f in res["flows"]] == ["f0", "f1"]
    for f in res["flows"]:
        assert f["status"] == "success" and f["delivered_ok"] and f["bytes"] == 64 * 1024
        assert 0 < f["goodput_gbps"] <= 100 and f["fct_s"] > 0 and f["retransmits"] == 0
        assert f["data_frames"] == 16
    down = {ln["name"]: ln for ln in res["links"]}["p0.leaf0>h1"]
    assert 0 < down["utilisation"] <= 1 and down["frames"] >= 32
    assert 0.5 < res["fairness"]["jain"] <= 1
    assert res["fairness"]["min_share"] <= 1 <= res["fairness"]["max_share"]


def test_send_streams_repeat_and_interval():
    """MR-SCN-003: sends land in the receiver's posted buffers, message m on stream m % streams;
    every message completes once at both ends."""
    for proto in ("metaroce", "rocev2"):
        sc = tomllib.loads(BASE)
        sc["protocol"] = {"name": proto}
        sc["flows"] = [{"src": "h0", "dst": "h1", "size": 10_000, "verb": "send", "streams": 2,
                        "repeat": 5, "interval_us": 3},
                       {"src": "h2", "dst": "h1", "size": 20_000, "repeat": 3, "count": 2}]
        res = run_scenario(sc, seed=2)
        assert res["delivered_ok"], proto
        names = [f["name"] for f in res["flows"]]
        assert names == ["f0", "f1.0", "f1.1"]
        assert [f["messages"] for f in res["flows"]] == [5, 3, 3]
        assert res["flows"][0]["bytes"] == 50_000
        # Message 4 was posted at 12 us, so the flow cannot finish before that.
        assert res["flows"][0]["fct_s"] > 12e-6
        assert res["flows"][1]["spurious"] is None    # h2 sends two flows


def test_incomplete_flow_is_reported_not_ok():
    """MR-SCN-005: a flow whose destination is cut off is incomplete and not delivered_ok."""
    sc = tomllib.loads(BASE)
    sc["until_us"] = 300
    sc["failures"] = [{"link": "p0.leaf0>h1", "at_us": 0}]
    res = run_scenario(sc)
    f = res["flows"][0]
    assert f["status"] == "incomplete" and not f["delivered_ok"] and f["fct_s"] is None
    assert not res["delivered_ok"] and not res["all_done"]


def test_seed_reproducible_and_overridable():
    """MR-SCN-002: the same seed gives the same run; another seed other losses."""
    sc = tomllib.loads(BASE)
    sc["faults"] = [{"links": ["h0>*"], "loss": 0.05}]
    a, b, c = run_scenario(sc, seed=5), run_scenario(sc, seed=5), run_scenario(sc, seed=6)
    key = lambda r: (r["flows"][0]["fct_s"], [ln["lost"] for ln in r["links"]])  # noqa: E731
    assert key(a) == key(b) and key(a) != key(c)
    assert a["delivered_ok"] and c["delivered_ok"]


def test_protocol_params_reach_the_endpoint():
    """MR-SCN-003/006: protocol.params are the endpoint's keyword arguments and are reported."""
    sc = tomllib.loads(BASE)
    sc["protocol"] = {"name": "rocev2", "params": {"timeout_exp": 3, "mtu": 1024}}
    res = run_scenario(sc)
    assert res["delivered_ok"]
    assert res["protocol"]["params"]["timeout_exp"] == 3
    assert res["flows"][0]["data_frames"] == 64


# -- shipped scenarios (MR-SCN-007) -------------------------------------------------------------

def _shipped(name):
    (p,) = [p for p in shipped_scenarios() if p.stem == name]
    return load_scenario(p)


def _small(sc, size):
    sc = copy.deepcopy(sc)
    for f in sc["flows"]:
        f["size"] = size
    return sc


def test_every_shipped_scenario_is_covered():
    names = {p.stem for p in shipped_scenarios()}
    assert names == set(CHECKS), "add a check for every shipped scenario"


def _check_single_switch_loss(res):
    (f,) = res["flows"]
    assert f["retransmits"] > 0 and sum(ln["lost"] for ln in res["links"]) > 0
    lost = {ln["name"]: ln["lost"] for ln in res["links"]}
    assert lost["h0>p0.leaf0"] > 0 and lost.get("h1>p0.leaf0", 0) == 0


def _check_leaf_spine_spine_loss(res):
    lost = {ln["name"]: ln["lost"] for ln in res["links"] if ln["lost"]}
    assert lost and all("spine1" in n for n in lost)
    assert any(n.startswith("p0.spine1>") for n in lost)      # ACKs come back over spine 1 too


def _check_fat_tree_incast(res):
    assert len(res["flows"]) == 15 and res["fairness"]["jain"] > 0.8
    down = {ln["name"]: ln for ln in res["links"]}["p0.pod0.edge0>h0"]
    assert down["utilisation"] > 0.5
    assert sum(1 for ln in res["links"] if "core" in ln["name"]) >= 4


def _check_pfc_lossless_rocev2(res):
    assert res["switch_drops"] == 0 and res["pauses"] > 0
    assert all(f["retransmits"] == 0 and f["timeouts"] == 0 for f in res["flows"])


def _check_link_failure_reconverge(res):
    assert res["route_updates"] >= 1
    downs = {ln["name"]: ln["down_drops"] for ln in res["links"]}
    assert "p0.leaf1>p0.spine1" in downs or "p0.spine1>p0.leaf1" in downs


def _check_switch_failure_rocev2(res):
    assert res["route_updates"] == 1
    assert sum(f["timeouts"] for f in res["flows"]) >= 1       # a QP was on the dead spine
    assert sum(ln["down_drops"] for ln in res["links"]) > 0


def _check_loss_single_switch(res):
    lost = {ln["name"]: ln["lost"] for ln in res["links"]}
    assert lost["h0>p0.leaf0"] > 0 and lost["h1>p0.leaf0"] > 0          # data and ACKs
    assert res["flows"][0]["retransmits"] > 0


def _check_loss_leaf_spine(res):
    lost = {ln["name"]: ln["lost"] for ln in res["links"] if ln["lost"]}
    assert lost and set(lost) <= {"p0.leaf0>p0.spine1", "p0.spine1>p0.leaf0"}
    assert sum(1 for ln in res["links"] if ln["name"].startswith("p0.leaf0>p0.spine")) >= 2


def _check_pfc_dcqcn_incast(res):
    assert res["protocol"]["name"] == "rocev2-dcqcn" and res["protocol"]["params"]["dcqcn"] is True
    assert res["switch_drops"] == 0 and res["marks"] > 0 and res["pauses"] > 0


def _check_failover_leaf_spine(res):
    assert res["route_updates"] >= 1            # switches learned of the dead cable
    downs = {ln["name"]: ln["down_drops"] for ln in res["links"]}
    assert downs.get("p0.leaf0>p0.spine1", 0) + downs.get("p0.spine1>p0.leaf0", 0) > 0


def _check_failover_planes(res):
    downs = {ln["name"]: ln["down_drops"] for ln in res["links"] if ln["down_drops"]}
    assert downs and all(n.startswith(("p1.", "h0>p1", "h1>p1")) for n in downs)
    assert res["flows"][0]["retransmits"] > 0


def _check_fair_trickle_bulk(res):
    """MR-CC-012 scenario: the trickle is 60 messages; both flows end at one receiver."""
    bulk, trickle = res["flows"]
    assert trickle["messages"] == 60 and bulk["dst"] == trickle["dst"] == "h0"
    down = {ln["name"]: ln for ln in res["links"]}["p0.leaf0>h0"]
    assert down["frames"] >= bulk["data_frames"] + trickle["data_frames"] - down["drops"]


def _check_core_shared(res, link="p0.leaf0>p0.spine0"):
    """MR-CC-011 scenarios: every flow crosses the one core link; its receiver link is its own."""
    links = {ln["name"]: ln for ln in res["links"]}
    assert links[link]["frames"] + links[link]["drops"] >= sum(f["data_frames"] for f in res["flows"])
    assert len({f["dst"] for f in res["flows"]}) == len(res["flows"])


def _check_fair_core_paths(res):
    _check_core_shared(res)
    assert [f["paths"] for f in res["flows"]] == [1, 8]


def _check_heldout_core_paths(res):
    _check_core_shared(res)
    assert [f["paths"] for f in res["flows"]] == [1, 4, 16]


def _check_heldout_core_n(res):
    _check_core_shared(res)
    assert [f["paths"] for f in res["flows"]] == [1, 2, 4, 8, 16, 32, 64, 128]


def _check_heldout_trickle_3bulk(res):
    assert len(res["flows"]) == 4 and {f["dst"] for f in res["flows"]} == {"h0"}


def _check_heldout_fat_tree_recv(res):
    assert [f["paths"] for f in res["flows"]] == [1, 32, 8]
    assert sum(1 for ln in res["links"] if "core" in ln["name"]) >= 2


CHECKS = {
    "failover_leaf_spine": _check_failover_leaf_spine,
    "failover_planes": _check_failover_planes,
    "loss_single_switch": _check_loss_single_switch,
    "loss_leaf_spine": _check_loss_leaf_spine,
    "pfc_dcqcn_incast": _check_pfc_dcqcn_incast,
    "fair_trickle_bulk": _check_fair_trickle_bulk,
    "fair_core_paths": _check_fair_core_paths,
    "fair_core_n": _check_core_shared,
    "heldout_trickle_3bulk": _check_heldout_trickle_3bulk,
    "heldout_core_paths": _check_heldout_core_paths,
    "heldout_core_n": _check_heldout_core_n,
    "heldout_fat_tree_recv": _check_heldout_fat_tree_recv,
    "switch_failure_rocev2": _check_switch_failure_rocev2,
    "single_switch_loss": _check_single_switch_loss,
    "leaf_spine_spine_loss": _check_leaf_spine_spine_loss,
    "fat_tree_incast": _check_fat_tree_incast,
    "pfc_lossless_rocev2": _check_pfc_lossless_rocev2,
    "link_failure_reconverge": _check_link_failure_reconverge,
}

SMALL = {"failover_leaf_spine": "16Mi", "failover_planes": "48Mi",
         "loss_single_switch": "2Mi", "loss_leaf_spine": "4Mi", "pfc_dcqcn_incast": "512Ki",
         "switch_failure_rocev2": "512Ki", "single_switch_loss": "1Mi", "leaf_spine_spine_loss": "1Mi", "fat_tree_incast": "128Ki",
         "pfc_lossless_rocev2": "256Ki", "link_failure_reconverge": "2Mi",
         "fair_trickle_bulk": "64Ki", "fair_core_paths": "1Mi", "fair_core_n": "512Ki",
         "heldout_trickle_3bulk": "64Ki", "heldout_core_paths": "512Ki", "heldout_core_n": "128Ki",
         "heldout_fat_tree_recv": "64Ki"}


def _run_checked(name, sc):
    res = run_scenario(sc)
    assert res["delivered_ok"] and res["all_done"], name
    assert all(f["status"] == "success" and f["delivered_ok"] for f in res["flows"])
    assert res["unexpected_completions"] == 0
    CHECKS[name](res)
    return res


@pytest.mark.parametrize("name", sorted(CHECKS))
def test_shipped_scenario_small(name):
    """MR-SCN-007: each shipped scenario, with small flows, delivers every byte correctly."""
    from metaroce.commands.transfer import parse_size
    _run_checked(name, _small(_shipped(name), parse_size(SMALL[name])))


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(CHECKS))
def test_shipped_scenario_full(name):
    """MR-SCN-007: each shipped scenario as shipped."""
    _run_checked(name, _shipped(name))


def test_cli_runs_shipped_scenario_by_name(capsys):
    assert main(["sim", "--list"]) == 0
    assert "pfc_lossless_rocev2" in capsys.readouterr().out.split()


def test_pfc_scenario_drops_without_pfc():
    """MR-SCN-007/MR-FAB-015: the shipped PFC scenario needs PFC: without it the same incast
    overflows the shared buffer and RoCEv2 retransmits."""
    sc = _small(_shipped("pfc_lossless_rocev2"), 256 * 1024)
    sc["pfc"]["enabled"] = False
    res = run_scenario(sc)
    assert res["delivered_ok"] and res["switch_drops"] > 0 and res["pauses"] == 0
    assert sum(f["retransmits"] for f in res["flows"]) > 0


def test_run_ends_at_last_completion_or_time_limit():
    """MR-SCN-004: the run stops at the last expected completion, or at until_us."""
    sc = tomllib.loads(BASE)
    sc["flows"][0]["start_us"] = 5
    res = run_scenario(sc)
    assert res["sim_time_s"] == pytest.approx(5e-6 + res["flows"][0]["fct_s"], abs=1e-12)
    sc["until_us"] = 7
    res = run_scenario(sc)
    assert res["sim_time_s"] == pytest.approx(7e-6) and res["flows"][0]["status"] == "incomplete"


def test_setup_hook_sees_the_fabric_before_the_run():
    """MR-SCN-003: the library's setup hook gets the fabric and the flow map; its taps see the
    run (how a benchmark adds its own measurements)."""
    seen = []

    def setup(fab, info):
        assert fab.sim.now == 0 and [f["name"] for f in info["flows"]] == ["f0"]
        key = (fab.hosts[0].addr, 1)
        assert info["flow_of"] == {key: 0}
        fab.hosts[1].rx_hook = lambda frame, now: seen.append(info["flow_of"].get(
            (frame.ip.src, frame.bth.dest_qp))) if frame.payload else None

    res = run_scenario(tomllib.loads(BASE), setup=setup)
    assert res["delivered_ok"] and seen.count(0) == res["flows"][0]["data_frames"] == 16


def test_plane_failure_moves_traffic_to_the_other_planes():
    """MR-SCN-002/MR-FAB-035: a failed plane carries nothing after the failure; MetaRoCE
    finishes on the others."""
    sc = tomllib.loads(BASE)
    sc["topology"]["planes"] = 2
    sc["flows"][0]["size"] = "1Mi"
    sc["failures"] = [{"plane": 1, "at_us": 10}]
    res = run_scenario(sc)
    assert res["delivered_ok"]
    links = {ln["name"]: ln for ln in res["links"]}
    assert links["h0>p1.leaf0"]["down_drops"] > 0
    assert links["h0>p0.leaf0"]["frames"] > links["h0>p1.leaf0"]["frames"]


def test_rocev2_without_reconvergence_fails_on_the_dead_spine():
    """MR-SCN-007/MR-FAB-017: without reconvergence the QP hashed onto the dead spine never gets
    through: its write ends with a retry error (the scenario completes only because switches
    reconverge)."""
    sc = _small(_shipped("switch_failure_rocev2"), 512 * 1024)
    sc["routing"]["reconverge_us"] = None
    res = run_scenario(sc)
    bad = [f for f in res["flows"] if f["status"] != "success"]
    assert len(bad) == 1 and bad[0]["status"] == "error:retry_exc_err" and not res["delivered_ok"]


def test_runs_repeat_frame_for_frame():
    """MR-SEC-152: a scenario draws its R_Keys from a generator seeded by the run, so two runs of
    the same scenario and seed carry the same frames (R_Keys in the RETHs included); another seed
    gives other keys."""
    def frames(seed):
        seen = []

        def setup(fab, info):
            fab.hosts[1].rx_hook = lambda frame, now: seen.append(
                (now, frame.reth.rkey if frame.reth is not None else None, frame.bth.psn))
        run_scenario(tomllib.loads(BASE), seed=seed, setup=setup)
        return seen

    a, b, c = frames(1), frames(1), frames(2)
    assert a == b and any(k is not None for _, k, _ in a)
    assert {k for _, k, _ in a} != {k for _, k, _ in c}


@pytest.mark.parametrize("on", [True, False, None])
def test_switch_control_priority_reaches_every_port(on):
    """MR-FAB-019: ``switch.control_priority`` (default true) sets the control queue of every
    switch port; a bad value is refused in one line."""
    from metaroce.sim.scenario import build_fabric
    text = BASE + ("" if on is None else f"[switch]\ncontrol_priority = {str(on).lower()}\n")
    sc = check_scenario(tomllib.loads(text))
    fab = build_fabric(sc, 1)
    assert fab.ports and all(p.control is (on is not False) for p in fab.ports.values())
    with pytest.raises(ScenarioError, match="control_priority"):
        check_scenario(tomllib.loads(BASE + "[switch]\ncontrol_priority = 3\n"))
