"""``metaroce coverage BLOCK``: run a block's testbench on a coverage build under Verilator
and report line, toggle and functional coverage (issue 7, item 6).

For the RX engine (``coverage rx_256x4``, MR-RX-073): per traffic shape the coverage suite
(window and bad-input cases with both write opcodes, other opcodes, a burst, ``--frames``
random packets) and the reference endpoint's traffic, every output compared every cycle; the
functional bins are outcome x opcode class x traffic shape at the run's width; the toggle
exclusions are :data:`metaroce.tb.coverage.RX_TOGGLE_EXCLUSIONS` plus the counters' bits the
run cannot reach.

The build is ``--coverage-line --coverage-toggle`` (its own cache entry, see
:mod:`metaroce.tb.build`); the run is the testbench's ``<block>_coverage`` cocotb test (for
the parser: the case suite in the traffic shapes none / idle / bp / both, every output
compared every cycle with the model); Verilator writes ``coverage.dat``, which
:mod:`metaroce.tb.coverage` summarises, with the toggle exclusions listed and the
functional bins (opcode x header set x drop reason x backpressure pattern at this width).

With ``--json``: one object ``{"block", "width", "frames", "cycles", "mismatches",
"problems", "line", "toggle", "functional", "targets", "coverage_dat"}``.  Exit status 1
when RTL and model disagreed or a frame's outcome was wrong.
"""
import json
import shutil
import sys
import tempfile
from pathlib import Path

from . import lockstep_status

HELP = "line, toggle and functional coverage of a block's testbench under Verilator"

#: Toggle target over the bits that can toggle (issue 7).
TOGGLE_TARGET = 98.0
#: MR-TX-419: the TX engine's first floor, over its named signals' bits that can toggle.
TX_TOGGLE_TARGET = 90.0
#: MR-TX-417: random work requests per traffic shape of ``coverage tx`` by default.
TX_WRS = 20


def add_arguments(p):
    p.add_argument("block", help="block name, e.g. parser")
    p.add_argument("--width", type=int, default=64, help="datapath width in bits (default 64)")
    p.add_argument("--frames", type=int, default=None,
                   help="random and as many mutated frames per traffic shape, on top of the "
                        "fixed cases (default 100); for tx: random work requests per traffic "
                        "shape, on top of the directed ones (default 20)")
    p.add_argument("--seed", type=int, default=1, help="seed of the frames and traffic")
    p.add_argument("--shapes", default="none,idle,bp,both",
                   help="traffic shapes, comma-separated (default none,idle,bp,both)")
    p.add_argument("--keep", metavar="DIR", help="copy coverage.dat and the results here")
    p.add_argument("--json", action="store_true", help="one JSON object")


def simulate(blk, width, frames, seed, shapes, extra_env=None):
    """Build (cached), run the coverage test; returns (results dict, coverage.dat path in a
    temporary directory that the caller removes)."""
    from .. import blocks
    from ..cli import CliError
    from metaroce.sim import verilator as vl
    from metaroce.tb import build as tb_build
    if sys.stderr.isatty():
        print(f"metaroce coverage: coverage build of {blk.name} at {width} bits (cached after "
              "the first, which takes minutes), then the simulation", file=sys.stderr)
    try:
        b = tb_build.build(blk, width, coverage=True)
    except vl.ToolchainError as e:
        raise CliError(str(e).splitlines()[0]) from None
    tmp = Path(tempfile.mkdtemp(dir=blocks.scratch_dir(), prefix=f"coverage-{blk.name}-"))
    out = tmp / "result.json"
    env = {"METAROCE_COVERAGE_OUT": str(out), "PARSER_RANDOM": str(frames),
           "METAROCE_COVERAGE_SHAPES": ",".join(shapes),
           "COCOTB_TEST_FILTER": f"{blk.tb.rsplit('.', 1)[-1]}_coverage$", **(extra_env or {})}
    log = tmp / "sim.log"
    try:
        vl.run(b, blk.tb, extra_env=env, seed=seed, run_dir=tmp / "run", log_file=log)
    except (vl.SimulationError, AssertionError) as e:
        raise CliError(f"the simulation failed: {str(e).splitlines()[0]} (log: {log})") from None
    dat = tmp / "run" / "coverage.dat"
    if not out.is_file() or not dat.is_file():
        raise CliError(f"the simulation wrote no results or no coverage.dat (log: {log})")
    return json.loads(out.read_text()), dat, tmp


def run(args):
    from ..cli import CliError
    from .verilog import block_and_width
    from metaroce.tb import coverage as cov
    blk = block_and_width(args)
    if blk.tb not in ("metaroce.tb.parser", "metaroce.tb.rx") and blk.name != "tx":
        raise CliError(f"block {blk.name!r} has no coverage test yet (the parser, the RX engine "
                       "and the TX engine tx)")
    if args.frames is None:
        args.frames = TX_WRS if blk.name == "tx" else 100
    if args.frames < 0:
        raise CliError("--frames must be 0 or more")
    if blk.tb == "metaroce.tb.rx":
        return run_rx(args, blk)
    if blk.name == "tx":
        return run_tx(args, blk)
    from metaroce.models.parser_cases import SHAPES
    shapes = _shapes(args, SHAPES)
    res, dat, tmp = simulate(blk, args.width, args.frames, args.seed, shapes)
    try:
        points = cov.read_coverage_dat(dat)
        temps, flags = cov.counter_temporaries_of(points, blk.name)
        summary = cov.summarise(points, res.get("counts"),
                                cov.TOGGLE_EXCLUSIONS + cov.record_exclusions(args.width)
                                + cov.word_exclusions(points),
                                counter_temps=temps, counter_flag_temps=flags,
                                constant_bits=cov.constant_bits_of(points))
        func = cov.functional(args.width, res["shapes"])
        _keep(args, blk, dat, res)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    out = _result(args, blk, res, summary, func, "frames",
                  {"every_reason_every_shape": func["every_reason_every_shape"]})
    if args.json:
        print(json.dumps(out))
    else:
        _print_head(args, blk, out, summary, "frames")
        tn, tt, ta = summary["toggle_named"], summary["toggle_temporaries"], summary["toggle_all_points"]
        print(f"       named signals {tn['covered']}/{tn['total']} ({tn['percent']}%), temporaries "
              f"($N) {tt['covered']}/{tt['total']} ({tt['percent']}%); every point, nothing "
              f"excluded: {ta['covered']}/{ta['total']} ({ta['percent']}%)")
        _print_tail(func, tn["uncovered"])
    return lockstep_status(res)


def run_rx(args, blk):
    """``metaroce coverage rx|rx_256x4`` (MR-RX-073)."""
    from metaroce.models.rx_cases import SHAPES
    from metaroce.tb import coverage as cov
    shapes = _shapes(args, SHAPES)
    lay = blk.make_model(args.width).lay
    res, dat, tmp = simulate(blk, args.width, args.frames, args.seed, shapes,
                             extra_env={"RX_RANDOM": str(args.frames), "RX_CONNS": str(lay.conns),
                                        "RX_PATHS": str(lay.paths), "RX_KEYS": str(lay.keys),
                                        "RX_STREAMS": str(lay.streams)})
    try:
        points = cov.read_coverage_dat(dat)
        temps, _ = cov.counter_temporaries_of(points, blk.name, "ctr")
        summary = cov.summarise(points, res["counts"],
                                cov.rx_exclusions(lay, args.width, points, res["counts"],
                                                  placed_bound=res.get("placed_bound"),
                                                  read_placed_bound=res.get("read_placed_bound")),
                                counter_temps=temps, constant_bits=cov.constant_bits_of(points, named=True),
                                counter_re=cov.RX_COUNTER)
        func = cov.functional_rx(args.width, res["shapes"])
        _keep(args, blk, dat, res)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    out = _result(args, blk, res, summary, func, "records",
                  {"every_outcome_every_shape": func["every_outcome_every_shape"],
                   "all_bins": func["bins_hit"] == func["bins_total"]})
    if args.json:
        print(json.dumps(out))
    else:
        _print_head(args, blk, out, summary, "records")
        ta = summary["toggle_all_points"]
        print(f"       every point, nothing excluded: {ta['covered']}/{ta['total']} ({ta['percent']}%)")
        _print_tail(func, summary["toggle"]["uncovered"])
    return lockstep_status(res)


def run_tx(args, blk):
    """``metaroce coverage tx`` (MR-TX-416..420): ``--frames`` random work requests per traffic
    shape (with the directed ones, READ responses and a dead connection's batch, tb/tx.py
    ``tx_coverage``); line and toggle coverage with :func:`metaroce.tb.coverage.tx_exclusions`;
    the functional bins of :func:`metaroce.tb.coverage.functional_tx`."""
    from metaroce.models.tx_cases import SHAPES
    from metaroce.tb import coverage as cov
    shapes = _shapes(args, SHAPES)
    res, dat, tmp = simulate_tx(blk, args, shapes)
    try:
        points = cov.read_coverage_dat(dat)
        summary = cov.summarise(points, None, cov.tx_exclusions(points, res.get("counter_max")),
                                constant_bits=cov.constant_bits_of(points, named=True))
        func = cov.functional_tx(args.width, res["shapes"])
        _keep(args, blk, dat, res)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    out = _result(args, blk, res, summary, func, "work_requests",
                  {"every_bin_some_shape": func["every_bin_some_shape"],
                   "all_bins": func["bins_hit"] == func["bins_total"]},
                  toggle_target=TX_TOGGLE_TARGET, count=sum(b["work_requests"] for b in res["batches"]))
    out["batches"] = res["batches"]
    out["mismatch_reports"] = res.get("mismatch_reports", [])[:4]
    out["problem_list"] = res["problems"][:10]
    if args.json:
        print(json.dumps(out))
    else:
        _print_head(args, blk, out, summary, "work_requests")
        tn, ta = summary["toggle_named"], summary["toggle_all_points"]
        print(f"       named signals {tn['covered']}/{tn['total']} ({tn['percent']}%); every point, "
              f"nothing excluded: {ta['covered']}/{ta['total']} ({ta['percent']}%)")
        _print_tail(func, tn["uncovered"])
    return lockstep_status(res)


def simulate_tx(blk, args, shapes):
    """MR-TX-416: a simulation per batch of each shape (tb/tx.py ``tx_coverage``: one engine a
    simulation), their results merged (the shapes' event counts summed, the counters' largest
    values, mismatches, problems, cycles) and their ``coverage.dat`` files point by point (a
    point's counts added), each simulation's directory removed once read; returns as
    :func:`simulate`."""
    from collections import Counter
    from metaroce.models.tx_cases import BATCHES
    from metaroce.tb import coverage as cov
    acc: Counter = Counter()
    res = {"shapes": {}, "problems": [], "mismatches": 0, "mismatch_reports": [], "cycles": 0,
           "batches": [], "counter_max": {}}
    tmps = []
    try:
        for shape in shapes:
            counts: dict = {}
            for batch in BATCHES:
                r, dat, tmp = simulate(blk, args.width, args.frames, args.seed, [shape],
                                       extra_env={"TX_COVERAGE_WRS": str(args.frames),
                                                  "TX_COVERAGE_BATCH": batch})
                tmps.append(tmp)
                cov.dat_counts(dat, acc)
                if len(tmps) > 1:
                    shutil.rmtree(tmp, ignore_errors=True)
                for k, v in r["shapes"].get(shape, {}).items():
                    counts[k] = counts.get(k, 0) + v
                for k in ("problems", "mismatch_reports", "batches"):
                    res[k] += r[k]
                res["mismatches"] += r["mismatches"]
                res["cycles"] += r["cycles"]
                for name, vals in r["counter_max"].items():
                    top = res["counter_max"].get(name, [0] * len(vals))
                    res["counter_max"][name] = [max(a, b) for a, b in zip(top, vals)]
            res["shapes"][shape] = counts
        merged = tmps[0] / "merged_coverage.dat"
        cov.write_dat(acc, merged)
    except BaseException:
        for tmp in tmps:
            shutil.rmtree(tmp, ignore_errors=True)
        raise
    return res, merged, tmps[0]


def _shapes(args, known):
    """``--shapes`` as a list, each one of ``known`` (the block's traffic shapes); else one line."""
    from ..cli import CliError
    shapes = [x.strip() for x in args.shapes.split(",") if x.strip()]
    if not shapes or any(x not in known for x in shapes):
        raise CliError(f"--shapes: choose from {', '.join(known)}")
    return shapes


def _keep(args, blk, dat, res):
    """``--keep DIR``: the run's coverage.dat and results beside each other."""
    if args.keep:
        keep = Path(args.keep)
        keep.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(dat, keep / f"coverage_{blk.name}_w{args.width}.dat")
        (keep / f"coverage_{blk.name}_w{args.width}.json").write_text(json.dumps(res))


def _result(args, blk, res, summary, func, unit, targets, toggle_target=None, count=None):
    """The ``--json`` object; ``unit`` names what the run counts (frames, records; ``count``
    when given, else the points per shape); ``toggle_target`` (default :data:`TOGGLE_TARGET`)
    over the named signals' bits when given."""
    toggle_pct = summary["toggle"]["percent"] or 0.0
    if toggle_target is not None:
        toggle_pct = summary["toggle_named"]["percent"] or 0.0
    else:
        toggle_target = TOGGLE_TARGET
    return {"block": blk.name, "width": args.width,
            unit: count if count is not None else sum(len(v) for v in res["shapes"].values()),
            "cycles": res["cycles"],
            "mismatches": res["mismatches"], "problems": len(res["problems"]),
            "line": summary["line"], "toggle": summary["toggle"],
            "toggle_named": summary["toggle_named"],
            "toggle_temporaries": summary["toggle_temporaries"],
            "toggle_all_points": summary["toggle_all_points"], "functional": func,
            "targets": {**targets, f"toggle_{toggle_target:g}": toggle_pct >= toggle_target},
            "coverage_dat": str(Path(args.keep) / f"coverage_{blk.name}_w{args.width}.dat")
            if args.keep else None}


def _print_head(args, blk, out, summary, unit):
    line, tog = summary["line"], summary["toggle"]
    print(f"{blk.name} at {args.width} bits: {out[unit]} {unit}, {out['cycles']} cycles, "
          f"{out['mismatches']} RTL/model mismatches, {out['problems']} problems")
    print(f"line   {line['covered']}/{line['total']} ({line['percent']}%)")
    print(f"toggle {tog['covered']}/{tog['total']} ({tog['percent']}%) of the bits that can "
          f"toggle; excluded: " + "; ".join(f"{n} ({why})" for why, n in tog["excluded"].items()))


def _print_tail(func, uncovered):
    print(f"functional {func['bins_hit']}/{func['bins_total']} bins ({func['percent']}%)")
    for m in func["missing"][:20]:
        print(f"  missing {m}")
    for u in uncovered[:20]:
        print(f"  toggle never seen: {u}")

