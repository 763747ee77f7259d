"""pen29: the default engine's RTLIL without the ``src`` attributes, to compare two trees.

Usage (from a worktree; for main's tree, ``git archive main | tar -x -C DIR`` and a package
directory whose ``metaroce`` holds that tree's ``metaroce/`` with ``hdl``, ``models``, ``tb``,
``sim`` linked in, on ``PYTHONPATH``)::

    python docs/hw/probes/pen29_rtlil.py OUT.il

prints the SHA-256 and the line count of ``rtlil.convert(Engine(64), name="engine")`` with the
``attribute \\src`` lines dropped (and writes that text to OUT.il)."""
import hashlib
import sys

from amaranth.back import rtlil

import metaroce.hdl.engine as engine

text = "".join(line for line in rtlil.convert(engine.Engine(64), name="engine").splitlines(True)
               if "attribute \\src" not in line)
with open(sys.argv[1], "w") as f:
    f.write(text)
print(engine.__file__, hashlib.sha256(text.encode()).hexdigest(), text.count("\n"))
