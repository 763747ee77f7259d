"""What every block's traffic driver shares: the end of a run (one verification stack per block).

Phase 0 drives the block's traffic. Once everything is sent and the block has been quiet for
``quiet_cycles`` cycles, phase 1 reads every counter once through ``reg_addr``/``reg_data``
(``reg_data`` answers the previous cycle's address), then phase 2 is finished; without
``read_counters`` phase 1 is skipped. Used by the parser's and the RX engine's drivers
(``models/parser_cases.py``, ``models/rx_cases.py``) so that both end alike.
"""
from __future__ import annotations


class CounterReadout:
    """Mixin for a block driver. The driver sets ``n_counters``, ``quiet_cycles``,
    ``read_counters``, ``limit``, ``cycle`` and ``res`` (with a ``"counters"`` entry), calls
    :meth:`_readout_reset` in ``__init__``, and defines ``sent_all`` and :meth:`_stuck` (how far the
    traffic got, for the no-progress message)."""

    def _readout_reset(self):
        self._phase = 0                     # 0 traffic, 1 counter reads, 2 finished
        self._quiet = 0
        self._reg_i = 0

    @property
    def finished(self):
        return self._phase == 2

    def _readout_addr(self):
        """The ``reg_addr`` of this read-out cycle."""
        return min(self._reg_i, self.n_counters - 1)

    def _readout_observe(self, out):
        """One read-out cycle's observation; True when the driver is reading counters (the
        caller then observes nothing else this cycle)."""
        if self._phase != 1:
            return False
        if self._reg_i > 0:
            self.res["counters"].append(out["reg_data"])
        self._reg_i += 1
        if self._reg_i > self.n_counters:
            self._phase = 2
        self.cycle += 1
        return True

    def settle(self, busy):
        """After ``observe``: ``busy`` is whether the model still holds work (a bool, or a
        callable asked only once everything is sent)."""
        if self._phase:
            return
        if not self.sent_all or (busy() if callable(busy) else busy):
            self._quiet = 0
        else:
            self._quiet += 1
        if self._quiet > self.quiet_cycles:
            self.res["cycles"] = self.cycle
            if self.read_counters:
                self._phase = 1
                self.res["counters"] = []
            else:
                self._phase = 2
        elif self.cycle > self.limit:
            raise AssertionError(f"no progress after {self.cycle} cycles {self._stuck()}")


def run_alone(model, drv, *, busy=None, on_cycle=None):
    """A block's cycle model alone with its driver: each cycle the driver's inputs, the model's
    step, ``on_cycle(cycle, inputs, outputs)`` if given, the driver's observation, until the
    driver has finished; ``busy`` (default ``model.busy``) as :meth:`CounterReadout.settle` takes
    it. Returns the driver."""
    step = model.step
    busy = model.busy if busy is None else busy
    while not drv.finished:
        inp = drv.inputs()
        out = step(inp)
        if on_cycle is not None:
            on_cycle(drv.cycle, inp, out)
        drv.observe(inp, out)
        drv.settle(busy)
    return drv
