"""pvw29: the endpoint of a base commit and the worktree's give the same window traces.

The session's edit of models/endpoint.py (the window arithmetic through
``protocol.keep_window``, ``initial_path_window``, ``shared_window``) must change no result.
Run twice and compare:

    git show 6650cb3:models/endpoint.py > /tmp/endpoint_base.py
    .venv/bin/python docs/hw/probes/cwnd_endpoint_same.py /tmp/endpoint_base.py /tmp/base.pkl
    .venv/bin/python docs/hw/probes/cwnd_endpoint_same.py - /tmp/new.pkl
    .venv/bin/python -c "import pickle; a, b = (pickle.load(open(f, 'rb')) for f in
        ('/tmp/base.pkl', '/tmp/new.pkl')); print({k: a[k] == b[k] for k in a})"

Each run records the "verdicts" trace (MR-CW-113: every verdict kind, restores) and the "mesh"
trace (MR-CW-040) with the endpoint's state after every record.
"""
import importlib.util
import pickle
import sys

src, dst = sys.argv[1], sys.argv[2]
if src != "-":                      # the base commit's endpoint in place of the worktree's
    import metaroce.models as pkg
    spec = importlib.util.spec_from_file_location("metaroce.models.endpoint", src)
    mod = importlib.util.module_from_spec(spec)
    mod.__package__ = "metaroce.models"
    sys.modules["metaroce.models.endpoint"] = mod
    spec.loader.exec_module(mod)
    pkg.endpoint = mod
from metaroce.models import cwnd_cases as cc  # noqa: E402

out = {sc: cc.endpoint_trace(scenario=sc, verdicts=(sc == "verdicts"))
       for sc in ("verdicts", "mesh")}
with open(dst, "wb") as f:
    pickle.dump(out, f)
print({k: len(v[1]) for k, v in out.items()})
