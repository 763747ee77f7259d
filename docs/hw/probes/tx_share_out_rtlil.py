"""RTLIL probe, not part of the design: hashes of the RTLIL (``src`` attributes dropped) of the
retransmit unit (SMALL 4 x 4 x 256), the default TX and the TX with verdicts without the
share-out (``Tx(verdicts=True, share_out=False)``; ``--old`` builds ``Tx(verdicts=True)``,
for a tree before hw-tx.md MR-TX-300 where that was the join without it). Run on two trees
(e.g. an exported base with ``PYTHONPATH`` pointing at it) and compare:

    .venv/bin/python docs/hw/probes/tx_share_out_rtlil.py [--old]
"""
import hashlib
import re
import sys

from amaranth.back import rtlil

from metaroce.hdl.retransmit import Retransmit
from metaroce.hdl.tx import SMALL, Tx


def digest(design):
    text = re.sub(r'attribute \\src "[^"]*"\n\s*', "", rtlil.convert(design))
    return hashlib.sha1(text.encode()).hexdigest()[:12]


print("retransmit", digest(Retransmit(64, conns=4, paths=4, pool=256)))
print("tx", digest(Tx(64, **SMALL)))
kw = {} if "--old" in sys.argv else {"share_out": False}
print("tx_verdicts_without_share_out", digest(Tx(64, **SMALL, verdicts=True, **kw)))
