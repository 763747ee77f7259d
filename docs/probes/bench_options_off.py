"""Run one ``metaroce`` command with endpoint options forced (the "before" of an A/B of a default
change, in one tree): every Endpoint built in this process takes them.

    .venv/bin/python docs/probes/bench_options_off.py lost_first_turn=0,spread_once=0 bench fairness --set all ...
"""
import sys

from metaroce.models import endpoint as E

opts = {k: bool(int(v)) for k, v in (kv.split("=") for kv in sys.argv[1].split(",") if kv)}
_init = E.Endpoint.__init__


def _forced(self, *a, **k):
    k.update(opts)
    _init(self, *a, **k)


E.Endpoint.__init__ = _forced
from metaroce.cli import main  # noqa: E402

sys.exit(main(sys.argv[2:]))
