"""The model of the registered block ``tx_sched_rows_paced`` (docs/spec/hw-tx-sched.md
section 16q, MR-TXS-367): ``PacedTxSchedCycleModel(rows=True)`` at the small shape. A module of
its own for the reason hdl/tx_sched_rows_paced.py gives (models/tx_pace.py is in the TX
engine's build key)."""
from __future__ import annotations

from .tx_pace import PacedTxSchedCycleModel
from .tx_sched import SMALL

__all__ = ["tx_sched_rows_paced_model_small"]


def tx_sched_rows_paced_model_small(width=64, **kw):
    """MR-TXS-367: the block's cycle model; ``kw``: the row model's switches (negative
    controls, e.g. ``pace_ignored``)."""
    return PacedTxSchedCycleModel(width, **SMALL, rows=True, **kw)
