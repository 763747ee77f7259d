"""The registered block ``tx_rows_paced`` (docs/spec/hw-tx.md section 2.18, MR-TX-386): the TX
top with the row scheduler and pacing (``Tx(rows=True, pacing=True)``, MR-TXS-346), the
configuration the engine with the rows ships when pacing is on, for its Verilator lockstep
(tb/tx_paced.py with ``TXP_ROWS=1``).

A module of its own so that no other block's build changes: the Verilator builds are keyed on
the sources their component's module imports (tb/build.py ``block_fingerprint``), and
hdl/tx.py is in the TX engine's and the whole engine's.

Golden model: :func:`metaroce.models.tx_rows_paced.tx_rows_paced_model_small`.
"""
from ..models.tx import SMALL
from .tx import Tx

__all__ = ["tx_rows_paced_small"]


def tx_rows_paced_small(width=64):
    """MR-TX-386: ``Tx(width, **SMALL, rows=True, pacing=True)`` (2 connections x 2 streams x 4
    paths), the rows joined to the per-frame pacer (``PacedTxSched(rows=True)``)."""
    return Tx(width, **SMALL, rows=True, pacing=True)
