"""``metaroce regs [--c-header | --json] [--conns N --paths N --keys N]``: the host register
map (docs/spec/hw-regs.md, MR-REG-003, MR-REG-005) as a table, JSON or a C header."""
import json

HELP = "print the host register map (AXI4-Lite) as a table, JSON or a C header"


def add_arguments(p):
    fmt = p.add_mutually_exclusive_group()
    fmt.add_argument("--c-header", action="store_true", help="print C #defines")
    fmt.add_argument("--json", action="store_true", help="print one JSON object")
    p.add_argument("--conns", type=int, default=4096, help="RX connections (default 4096)")
    p.add_argument("--paths", type=int, default=8, help="paths per connection (default 8)")
    p.add_argument("--keys", type=int, default=1024, help="key rows (default 1024)")


def run(args):
    from ..cli import CliError
    from ..models import regs
    from ..models.rx import layouts
    try:
        rmap = regs.register_map(layouts(args.conns, args.paths, args.keys))
    except ValueError as e:
        raise CliError(str(e)) from None
    if args.c_header:
        print(regs.c_header(rmap), end="")
    elif args.json:
        print(json.dumps({"conns": args.conns, "paths": args.paths, "keys": args.keys,
                          "data_words": rmap.data_words,
                          "registers": [{"name": r.name, "offset": r.offset, "bits": r.width,
                                         "access": r.access, "reset": r.reset,
                                         "description": r.desc} for r in rmap.regs]}))
    else:
        print(regs.markdown_table(rmap))
    return 0
