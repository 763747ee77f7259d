"""``metaroce bench NAME``: run a benchmark; print a table (or ``--json``), save a plot.

Registration convention (how to add a benchmark, e.g. ``bench parser``): create one module
``metaroce/benches/<name>.py``; it is discovered automatically (modules whose name starts with
``_`` are helpers and are skipped). The module defines

``HELP``
    one line, shown by ``metaroce bench --help``;
``add_arguments(parser)`` (optional)
    its own options (the common ones below are added by this command);
``run(args, ui) -> dict``
    runs the benchmark and returns ``{"rows": [dict, ...]}`` plus optional keys:
    ``"title"`` (table title), ``"columns"`` (row keys shown in the table, in order; default:
    every key of the first row), ``"params"`` (dict printed under the table and included in
    the JSON, e.g. the baseline's parameters), ``"notes"`` (list of lines printed under the
    table), ``"summary"`` (dict added to the JSON object) and ``"plot"`` (a callable
    ``plot(path)`` that writes a PNG).

``ui`` (:class:`metaroce.benches._common.UI`) gives ``ui.map(fn, jobs, label)``: runs
``fn(job)`` for every job over ``--jobs`` worker processes (fn must be a module-level function)
with a progress bar on stderr, and returns the results in job order.

Common options: ``--json`` prints one object ``{"bench": NAME, "rows": [...], ...}`` on stdout;
``--plot FILE`` writes the plot there (default ``OUT/bench-NAME.png`` with ``--out OUT``,
default ``bench-out``); ``--no-plot``; ``--jobs N`` (default: the number of CPUs, at most 2).
"""
import importlib
import json
import os
import pkgutil
import sys

HELP = "run a benchmark (loss, spray, incast, failover, scale, streams, ...): table, JSON, plot"


def _benches():
    from metaroce import benches
    for info in sorted(pkgutil.iter_modules(benches.__path__), key=lambda m: m.name):
        if not info.name.startswith("_"):
            yield info.name, importlib.import_module(f"{benches.__name__}.{info.name}")


def add_arguments(p):
    sub = p.add_subparsers(dest="bench", metavar="NAME")
    for name, mod in _benches():
        bp = sub.add_parser(name, help=mod.HELP, description=mod.HELP)
        if hasattr(mod, "add_arguments"):
            mod.add_arguments(bp)
        bp.add_argument("--json", action="store_true", help="print one JSON object on stdout")
        bp.add_argument("--plot", metavar="FILE", help="write the plot to FILE (PNG)")
        bp.add_argument("--no-plot", action="store_true", help="do not write a plot")
        bp.add_argument("--out", default="bench-out", help="directory for default plot files")
        bp.add_argument("--jobs", type=int, default=min(2, os.cpu_count() or 1),
                        help="worker processes for independent runs")
        bp.set_defaults(_bench_mod=mod)


def _jsonable(v):
    if isinstance(v, float):
        return round(v, 6)
    if isinstance(v, dict):
        return {k: _jsonable(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_jsonable(x) for x in v]
    return v


def _fmt(v):
    if isinstance(v, float):
        if v == 0:
            return "0"
        if abs(v) >= 1000 or abs(v) < 0.001:
            return f"{v:.3g}"
        return f"{v:.4g}"
    return str(v)


def run(args):
    from ..cli import CliError
    from ..benches._common import UI

    mod = getattr(args, "_bench_mod", None)
    if mod is None:
        names = ", ".join(n for n, _ in _benches())
        raise CliError(f"name a benchmark: {names}")
    if args.jobs < 1:
        raise CliError("--jobs must be >= 1")
    ui = UI(jobs=args.jobs)
    res = mod.run(args, ui)
    name = args.bench
    rows = res["rows"]
    plot_path = None
    if res.get("plot") and not args.no_plot:
        plot_path = args.plot or os.path.join(args.out, f"bench-{name}.png")
        d = os.path.dirname(plot_path)
        if d:
            os.makedirs(d, exist_ok=True)
        res["plot"](plot_path)
    if args.json:
        obj = {"bench": name, "rows": rows}
        for k in ("params", "summary"):
            if k in res:
                obj[k] = res[k]
        if plot_path:
            obj["plot"] = plot_path
        json.dump(_jsonable(obj), sys.stdout)
        sys.stdout.write("\n")
        return 0
    from rich.console import Console
    from rich.table import Table

    con = Console() if sys.stdout.isatty() else Console(width=200)
    cols = res.get("columns") or (list(rows[0]) if rows else [])
    t = Table(title=res.get("title", f"bench {name}"))
    for c in cols:
        t.add_column(c, justify="right")
    for r in rows:
        t.add_row(*(_fmt(r.get(c, "")) for c in cols))
    con.print(t)
    for k, v in (res.get("params") or {}).items():
        con.print(f"[bold]{k}[/bold]: {json.dumps(_jsonable(v))}")
    for k, v in (res.get("summary") or {}).items():
        con.print(f"{k}: {json.dumps(_jsonable(v))}")
    for line in res.get("notes", []):
        con.print(line)
    if plot_path:
        con.print(f"plot: {plot_path}")
    return 0
