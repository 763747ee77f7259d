"""RTLIL probe, not part of the design (rin34): the default ``Tx``'s RTLIL (``src`` attributes
dropped) from this tree's hdl/tx.py and from another tree's hdl/tx.py (e.g. the base's, from
``git show BASE:hdl/tx.py > /tmp/tx_base.py``) loaded as a module beside it (the rest of
hdl/ this tree's; ``Tx()`` builds no block changed by rin34 but hdl/tx.py), hashed:

    .venv/bin/python docs/hw/probes/tx_rows_rtlil.py /tmp/tx_base.py
"""
import hashlib
import re
import sys
import types

from amaranth.back import rtlil

from metaroce.hdl import tx as cur
from metaroce.models.tx import SMALL


def load(path, name):
    mod = types.ModuleType(f"metaroce.hdl.{name}")
    mod.__package__ = "metaroce.hdl"
    sys.modules[mod.__name__] = mod
    with open(path) as f:
        exec(compile(f.read(), path, "exec"), mod.__dict__)
    return mod


def digest(design):
    text = re.sub(r'attribute \\src "[^"]*"\n\s*', "", rtlil.convert(design))
    return hashlib.sha1(re.sub(r"_tx_other\b", "tx", text).encode()).hexdigest()[:12]


other = load(sys.argv[1], "_tx_other")
print("tx: this tree", digest(cur.Tx(64, **SMALL)), "other", digest(other.Tx(64, **SMALL)))
