"""The model of the registered block ``tx_rows_paced`` (docs/spec/hw-tx.md section 2.18,
MR-TX-386): ``TxCycleModel(rows=True, pacing=True)`` at the small shape. A module of its own
for the reason hdl/tx_rows_paced.py gives (models/tx.py is in the TX engine's build key)."""
from __future__ import annotations

from .tx import SMALL, TxCycleModel

__all__ = ["tx_rows_paced_model_small"]


def tx_rows_paced_model_small(width=64, *, retime_hold=True, **kw):
    """MR-TX-386: the block's cycle model; ``kw``: ``TxCycleModel``'s switches (``pace_ignored``).
    ``retime_hold`` False (negative control only, MR-TX-388): the rows' model without
    MR-TXS-372's hold (MR-TXS-371's early packets; ``TxSchedRowsModel(retime_hold=False)``)."""
    model = TxCycleModel(width, **SMALL, rows=True, pacing=True, **kw)
    # TxCycleModel has no switch of its own for it (models/tx.py is in the TX builds' key)
    model.sched.retime_hold = bool(retime_hold)
    return model
