"""Subcommands of the ``metaroce`` command, one module each."""
import sys


def lockstep_status(res):
    """The end of a lockstep command (replay, coverage): the first mismatch reports and problems
    to stderr; exit status 1 when there were any."""
    for line in res.get("mismatch_reports", [])[:3] + res.get("problems", [])[:10]:
        print(line, file=sys.stderr)
    return 1 if res["mismatches"] or res.get("problems") else 0
