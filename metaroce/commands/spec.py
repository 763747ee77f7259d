"""``metaroce spec``: the requirement IDs of docs/spec and the tests that cite them."""
import json

HELP = "list spec requirement IDs and the tests that cite them (run from a source checkout)"


def add_arguments(p):
    p.add_argument("--uncovered", action="store_true", help="only IDs no test cites")
    p.add_argument("--json", action="store_true", help="one JSON object")


def run(args):
    from ..cli import CliError
    from .. import spec

    root = spec.repo_root()
    if root is None:
        raise CliError("docs/spec not found: run from a source checkout (pip install -e .)")
    defined = spec.defined_ids(root / "docs" / "spec")
    cited = spec.cited_ids(root / "tests")
    rows = [{"id": i, "chapter": f, "tests": sorted(cited.get(i, ()))} for i, f in sorted(defined.items())]
    if args.uncovered:
        rows = [r for r in rows if not r["tests"]]
    if args.json:
        print(json.dumps({"defined": len(defined), "covered": sum(1 for i in defined if i in cited),
                          "rows": rows}))
    else:
        for r in rows:
            print(f"{r['id']:<14} {r['chapter']:<16} {', '.join(r['tests']) or '-- not cited by any test'}")
        print(f"{sum(1 for i in defined if i in cited)} of {len(defined)} requirements cited by tests")
    return 0
