"""The ``metaroce`` command.

Each subcommand lives in ``metaroce/commands/<name>.py`` and defines ``HELP``,
``add_arguments(parser)`` and ``run(args) -> int``. Errors reach the user as one line on
stderr and a non-zero exit, never a traceback.
"""
import argparse
import importlib
import os
import pkgutil
import sys

from . import commands


class CliError(Exception):
    """A user-facing error: printed as one line, exit status 2."""


def _command_modules():
    for info in sorted(pkgutil.iter_modules(commands.__path__), key=lambda m: m.name):
        if not info.name.startswith("_"):
            yield info.name, importlib.import_module(f"{commands.__name__}.{info.name}")


def build_parser():
    parser = argparse.ArgumentParser(
        prog="metaroce", description="MetaRoCE: specification, golden model, HDL and testbenches.")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name, mod in _command_modules():
        p = sub.add_parser(name, help=mod.HELP, description=mod.HELP)
        mod.add_arguments(p)
        p.set_defaults(_run=mod.run)
    return parser


def _innermost(exc):
    """``FILE:LINE`` of the frame that raised: enough to file a bug report from (MR-CLI-002)."""
    tb = exc.__traceback__
    if tb is None:
        return "?"
    while tb.tb_next is not None:
        tb = tb.tb_next
    return f"{os.path.basename(tb.tb_frame.f_code.co_filename)}:{tb.tb_lineno}"


def main(argv=None):
    """Run one subcommand; every failure is one stderr line and a non-zero exit (MR-CLI-001..003)."""
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "_run", None):
        parser.print_help()
        return 2
    try:
        return int(args._run(args) or 0)
    except CliError as e:
        print(f"metaroce {args.command}: error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"metaroce {args.command}: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return 0
    except MemoryError:
        print(f"metaroce {args.command}: error: out of memory", file=sys.stderr)
        return 2
    except (OSError, ValueError) as e:
        print(f"metaroce {args.command}: error: {e}", file=sys.stderr)
        return 2
    except Exception as e:          # a bug: one line naming where, not a traceback
        if os.environ.get("METAROCE_DEBUG") == "1":
            raise
        print(f"metaroce {args.command}: internal error: {type(e).__name__}: {e} ({_innermost(e)})",
              file=sys.stderr)
        return 3
