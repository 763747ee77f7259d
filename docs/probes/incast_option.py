"""One ``bench incast`` run with endpoint options changed (A/B of an option against the shipped
defaults), printing the bench's row without the plot series.

    .venv/bin/python docs/probes/incast_option.py SENDERS single|fat_tree SEED STAGGER_US MIN_BYTES TOTAL [opt=0|1,...]

The bench's sweep uses STAGGER 0, MIN_BYTES 1Mi, TOTAL 64Mi; its held-out sweep 0.05, 512Ki, 16Mi.
"""

import json, sys
from metaroce.benches import incast

n, topo, seed = int(sys.argv[1]), sys.argv[2], int(sys.argv[3])
stagger, min_bytes, total = float(sys.argv[4]), int(sys.argv[5]), int(sys.argv[6])
opts = dict((k, bool(int(v))) for k, v in (kv.split("=") for kv in sys.argv[7].split(",") if kv)) \
    if len(sys.argv) > 7 else {}
base = incast.endpoint_cfg
incast.endpoint_cfg = lambda proto: dict(base(proto), **opts)
row = incast.one_run({"protocol": "metaroce", "senders": n, "total": total, "min_bytes": min_bytes,
                      "stagger": stagger, "seed": seed, "topology": topo})
row.pop("_series")
row.pop("wall_s")
print(json.dumps(dict(row, seed=seed, stagger=stagger, options=opts)))
