"""The stall probe (stall42_split_interval.py) with the retransmit unit's model of a given commit
(default main 28fefbd, before MR-TXS-440) loaded in place of the tree's, everything else the
tree's: the "before" column of docs/hw/tx-results.md stl43 (issue 13, session 43).

    MEM_HEAD=0 .venv/bin/python -W ignore docs/hw/probes/stall43_unit_before.py 8 16 0.15 1 2 3
    COMMIT=<sha> ... (another commit's models/retransmit.py)
"""
import os
import runpy
import subprocess
import sys
import types
from pathlib import Path

import metaroce.models as pkg

here = Path(__file__).resolve().parent
src = subprocess.run(["git", "show", os.environ.get("COMMIT", "28fefbdf") + ":models/retransmit.py"],
                     cwd=here, check=True, capture_output=True, text=True).stdout
mod = types.ModuleType("metaroce.models.retransmit")
mod.__package__ = "metaroce.models"
sys.modules[mod.__name__] = mod
exec(compile(src, "retransmit.py (" + os.environ.get("COMMIT", "28fefbdf") + ")", "exec"), mod.__dict__)
pkg.retransmit = mod
sys.argv = [str(here / "stall42_split_interval.py")] + sys.argv[1:]
runpy.run_path(sys.argv[0], run_name="__main__")
