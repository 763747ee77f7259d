"""``metaroce sim SCENARIO.toml``: run a scenario file and print its results (docs/spec/scenario.md).

A bad file is one line on stderr naming the file, the key path and the problem, exit 2
(MR-SCN-001). ``--json`` prints the result object (MR-SCN-006); without it, a table per flow and
the busiest links. Exit 1 when a flow did not deliver its bytes correctly.
"""
import json
import math

HELP = "run a scenario file (TOML: topology, flows, faults, protocol) on the fabric simulator"


def add_arguments(p):
    p.add_argument("scenario", help="a scenario file (TOML), or the name of a shipped one "
                                    "(see --list)", nargs="?")
    p.add_argument("--json", action="store_true", help="print the result as one JSON object")
    p.add_argument("--seed", type=int, help="override the scenario's seed")
    p.add_argument("--list", action="store_true", help="list the shipped scenarios")


def _jsonable(v):
    if isinstance(v, float):
        return round(v, 9) if math.isfinite(v) else None
    if isinstance(v, dict):
        return {k: _jsonable(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_jsonable(x) for x in v]
    return v


def _resolve(name):
    import pathlib

    from metaroce.sim.scenario import shipped_scenarios
    p = pathlib.Path(name)
    if p.exists() or p.suffix == ".toml":
        return p
    for s in shipped_scenarios():
        if s.stem == name:
            return s
    return p


def run(args):
    from metaroce.cli import CliError
    from metaroce.sim.scenario import ScenarioError, run_scenario, shipped_scenarios

    if args.list:
        for s in shipped_scenarios():
            print(s.stem)
        return 0
    if not args.scenario:
        raise CliError("give a scenario file (or --list)")
    if args.seed is not None and args.seed < 0:
        raise CliError("--seed must be >= 0")
    try:
        res = run_scenario(_resolve(args.scenario), seed=args.seed)
    except ScenarioError as e:
        raise CliError(str(e)) from None
    if args.json:
        print(json.dumps(_jsonable(res)))
    else:
        _table(res)
    return 0 if res["delivered_ok"] else 1


def _table(res):
    from rich.console import Console
    from rich.table import Table

    con = Console()
    if not con.is_terminal:
        con = Console(width=140)
    t = Table(title=f"{res['scenario']} ({res['protocol']['name']}, seed {res['seed']})")
    for c in ("flow", "src>dst", "bytes", "FCT us", "Gb/s", "retx", "spurious", "timeouts", "status", "ok"):
        t.add_column(c)
    for f in res["flows"]:
        t.add_row(f["name"], f"{f['src']}>{f['dst']}", str(f["bytes"]),
                  "-" if f["fct_s"] is None else f"{f['fct_s'] * 1e6:.1f}", f"{f['goodput_gbps']:.1f}",
                  str(f["retransmits"]), str(f["spurious"]), str(f["timeouts"]), f["status"],
                  str(f["delivered_ok"]))
    con.print(t)
    lt = Table(title="busiest links")
    for c in ("link", "util", "frames", "drops", "marks", "pauses", "lost"):
        lt.add_column(c)
    for ln in sorted(res["links"], key=lambda x: -x["utilisation"])[:10]:
        lt.add_row(ln["name"], f"{ln['utilisation']:.3f}", str(ln["frames"]), str(ln["drops"]),
                   str(ln["marks"]), str(ln["pauses"]), str(ln["lost"]))
    con.print(lt)
    fa = res["fairness"]
    con.print(f"jain {fa['jain']:.3f}  min/max share {fa['min_share']:.3f}/{fa['max_share']:.3f}  "
              f"drops {res['switch_drops']}  marks {res['marks']}  pauses {res['pauses']}  "
              f"sim {res['sim_time_s'] * 1e6:.1f} us  wall {res['wall_s']:.2f} s  "
              f"delivered_ok {res['delivered_ok']}")
