"""The registered block ``tx_sched_rows_paced`` (docs/spec/hw-tx-sched.md section 16q,
MR-TXS-367): the row scheduler with pacing joined to the per-frame pacer
(``PacedTxSched(rows=True)``, MR-TXS-342) at the register scheduler's small shape, for its
Verilator lockstep (tb/tx_pace.py with ``TXP_ROWS=1``).

A module of its own so that no other block's build changes: the Verilator builds are keyed on
the sources their component's module imports (tb/build.py ``block_fingerprint``), and
hdl/tx_pace.py is in the TX engine's and the whole engine's.

Golden model: :func:`metaroce.models.tx_sched_rows_paced.tx_sched_rows_paced_model_small`.
"""
from ..models.tx_sched import SMALL
from .tx_pace import PacedTxSched

__all__ = ["tx_sched_rows_paced_small"]


def tx_sched_rows_paced_small(width=64):
    """MR-TXS-367: ``PacedTxSched(rows=True)`` at ``SMALL`` (2 connections x 2 streams x 4
    paths); no data path, ``width`` changes nothing."""
    return PacedTxSched(width, **SMALL, rows=True)
