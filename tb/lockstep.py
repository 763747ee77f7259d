"""Generic cocotb lockstep harness: the RTL and its cycle model, compared on every cycle.

Every block of the engine (RX parser, context table, retransmit unit, ...) has a cycle
model with ``step(inputs) -> outputs``: ``inputs`` holds the value of every input port in
this clock cycle by Verilog port name, the result every output port in the same cycle,
and the call advances the model by one clock.  :class:`Lockstep` runs such a model next to
the design under Verilator:

* once per cycle, after the rising edge and in ``ReadOnly`` (all writes of the drivers for
  this cycle done, combinational logic settled), it samples every input and output;
* it steps the model with the sampled inputs and compares every output the model returns
  with the sampled output, every cycle;
* a mismatch raises :class:`Mismatch` naming the cycle, the signal, the expected and the
  actual value, followed by the last input beats (``history``) -- or, for replay tools
  with ``stop_on_mismatch=False``, is counted and the first few are kept.

The harness never writes a signal: the drivers (cocotbext-axi sources and sinks, see
:mod:`metaroce.tb.streams`) write right after the edge, and the harness only reads in
``ReadOnly``.  Cycle 0 is the first cycle after reset is released; the model must start in
its reset state.  If the reset is itself a model input (its name is in ``inputs``), the
model sees it and sampling starts with the first edge instead.

Use from a block's cocotb test (see ``tb/parser.py``, ``tb/standin.py``)::

    model = MyBlockModel(width)
    ins, outs = model_port_lists(model)            # from model.port_names()
    h = Lockstep(dut, model, ins, outs, transfers=["m_meta"])
    src = axis_source(dut, "s_axis", dut.clk, dut.rst, pause=0.3)    # metaroce.tb.streams
    sink = axis_sink(dut, "m_axis", dut.clk, dut.rst, pause=0.4)
    ReadyRandomiser(dut.m_meta__ready, dut.clk, pause=0.4)
    await h.start()                                # clock, reset, then compare every cycle
    await src.send(frame_bytes)
    await h.wait_until(lambda: sink.count() == 1, timeout_cycles=10_000)

The comparison itself is :class:`Core` (no simulator in it): the cocotb monitor above, the
fast driven loop :func:`drive` (one coroutine that also drives the inputs from a traffic
driver, for long runs) and :func:`drive_amaranth` (the Amaranth simulator's
``add_testbench``) all step the model and compare through it, so a mismatch reads the same
wherever it is found.

Waveforms: build with ``metaroce.sim.verilator.build(..., waves="fst")`` (Verilator
``--trace-fst``; ``waves=True`` falls back to VCD where liblz4-dev is missing) and run with
``waves=True`` (or ``WAVES=1``); the trace lands in the run directory and mismatch
messages name it (:attr:`Lockstep.waves_hint`).  Cycle ``n`` of the harness is
the clock period starting at ``start_time + n * period``: the message gives that time too.
"""
from __future__ import annotations

import collections
import functools
import json
import os
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Protocol

from .streams import SEP

#: Cycles kept (as sampled) for the input-beat history of a mismatch message.
RECENT_CYCLES = 512

__all__ = ["CycleModel", "Mismatch", "CombinationalOutput", "Core", "Lockstep", "drive", "drive_amaranth", "read_int",
           "model_port_lists", "port_values", "run_amaranth", "AmaranthSim", "shared_sim",
           "source_closure"]


class CycleModel(Protocol):
    """What the harness needs from a cycle model."""

    def step(self, inputs: Mapping[str, int]) -> Mapping[str, int]: ...


class Mismatch(AssertionError):
    """The RTL and the model disagree.  ``cycle``, ``signal``, ``expected``, ``actual``."""

    def __init__(self, message: str, cycle: int, signal: str, expected: int, actual: int):
        super().__init__(message)
        self.cycle = cycle
        self.signal = signal
        self.expected = expected
        self.actual = actual


def _reader(handle) -> Callable[[], int]:
    """Fast integer read of a signal (cocotb's ``int(h.value)`` builds a LogicArray first)."""
    raw = getattr(handle, "_handle", None)
    width = len(handle)
    if raw is None:
        return lambda: int(handle.value)
    if width < 32:
        return raw.get_signal_val_long          # non-negative below 32 bits: no mask needed
    if width == 32:
        mask = (1 << width) - 1
        get = raw.get_signal_val_long
        return lambda: get() & mask
    get = raw.get_signal_val_binstr

    def read() -> int:
        try:
            return int(get(), 2)
        except ValueError:  # X/Z (four-state simulators): let cocotb raise a clear error
            return int(handle.value)
    return read


def _watched_reader(handle) -> Callable[[], int]:
    """A reader that reads ``handle`` only after it changed: a value-change callback of the
    simulator (Verilator compares the value after every evaluation, in C++) marks it stale;
    the callback is a plain function, not a coroutine, and arms itself again.  Reading a
    1,438-bit meta record as a binary string costs about 7 us; the record changes at most
    once per frame."""
    from cocotb import simulator
    read = _reader(handle)
    raw = handle._handle
    cell = [True, 0]              # stale, value

    def changed() -> None:
        cell[0] = True
        simulator.register_value_change_callback(raw, changed, simulator.VALUE_CHANGE)

    simulator.register_value_change_callback(raw, changed, simulator.VALUE_CHANGE)

    def get() -> int:
        if cell[0]:
            cell[0] = False
            cell[1] = read()
        return cell[1]
    return get


def _writer(handle, immediate: bool = False) -> Callable[[int], None]:
    """Fast integer write without the LogicArray conversion: a deposit (as ``handle.value =
    v``), or with ``immediate`` a write without delay (seen by the next evaluation)."""
    raw = getattr(handle, "_handle", None)
    width = len(handle)
    if raw is None:
        def write(v: int) -> None:
            handle.value = v
        return write
    action = 3 if immediate else 0             # GPI: NO_DELAY / DEPOSIT
    if width <= 32:
        return functools.partial(raw.set_signal_val_int, action)
    put_bin = raw.set_signal_val_binstr
    fmt = f"0{width}b"
    return lambda v: put_bin(action, format(v, fmt))


def read_int(handle) -> int:
    """Integer value of ``handle`` (see :func:`_reader`)."""
    return _reader(handle)()


class Core:
    """The comparison, without a simulator: step ``model`` with a cycle's inputs and compare
    every output it returns with the design's outputs of the same cycle.

    Args:
        model: a :class:`CycleModel`.
        inputs, outputs: port names (see :class:`Lockstep`).
        widths: ``{port: bits}`` (for the messages).
        history, stop_on_mismatch, beat_ports, transfers, on_cycle, max_reported: as in
            :class:`Lockstep`.
        where: ``where(cycle) -> str``, extra text for a mismatch (simulation time,
            waveform file).
    """

    def __init__(self, model: CycleModel, inputs: Sequence[str], outputs: Sequence[str],
                 widths: Mapping[str, int], *, history: int = 8, stop_on_mismatch: bool = True,
                 beat_ports: Iterable[str] | None = None, transfers: Iterable[str] = (),
                 on_cycle: Callable | None = None, max_reported: int = 10,
                 where: Callable[[int], str] | None = None):
        self.model = model
        self.inputs = list(inputs)
        self.outputs = list(outputs)
        if set(self.inputs) & set(self.outputs):
            raise ValueError(f"ports both input and output: {set(self.inputs) & set(self.outputs)}")
        self._width = dict(widths)
        if beat_ports is None:
            beat_ports = [n[:-len(SEP + "tvalid")] for n in self.inputs if n.endswith(SEP + "tvalid")]
        self.beat_ports = list(beat_ports)
        self._beat_fields = {
            p: [(m, f"{p}{SEP}{m}") for m in ("tdata", "tkeep", "tlast", "tuser")
                if f"{p}{SEP}{m}" in self._width] for p in self.beat_ports}
        self._history_len = max(1, history)
        # the last cycles as sampled; the beat history is derived from them on a mismatch
        self._recent: collections.deque = collections.deque(maxlen=RECENT_CYCLES)
        self.stop_on_mismatch = stop_on_mismatch
        self.max_reported = max_reported
        self.on_cycle = on_cycle
        self.where = where
        self.transfers: dict[str, list[tuple[int, dict[str, int]]]] = {p: [] for p in transfers}
        self._transfer_members = {
            p: [n for n in (*self.inputs, *self.outputs) if n.startswith(p + SEP)] for p in transfers}
        for p in self.transfers:
            for m in ("valid", "ready"):
                if f"{p}{SEP}{m}" not in self._width:
                    raise ValueError(f"transfer port {p!r} needs sampled {p}{SEP}{m}")
        self.cycle = 0
        self.mismatches = 0
        self.mismatch_cycles = 0
        self.reports: list[str] = []
        self.error: Mismatch | None = None
        self._step = model.step

    def compare(self, ins: Mapping[str, int], outs: Mapping[str, int]) -> Mapping[str, int]:
        """One cycle: ``ins`` (every input) and ``outs`` (every output) as the design had
        them; steps the model, compares, returns the model's outputs.  Raises
        :class:`Mismatch` (``stop_on_mismatch``) or counts it."""
        cycle = self.cycle
        self._recent.append((cycle, ins, outs))
        expected = self._step(ins)
        if expected != outs:
            self._check(cycle, expected, ins, outs)
        for p, log in self.transfers.items():
            if outs.get(f"{p}{SEP}valid", ins.get(f"{p}{SEP}valid")) and \
                    ins.get(f"{p}{SEP}ready", outs.get(f"{p}{SEP}ready")):
                members = self._transfer_members[p]
                log.append((cycle, {n[len(p) + len(SEP):]: (outs[n] if n in outs else ins[n])
                                    for n in members}))
        if self.on_cycle is not None:
            self.on_cycle(cycle, ins, outs)
        self.cycle = cycle + 1
        return expected

    def _check(self, cycle, expected, ins, outs):
        bad = []
        for name, actual in outs.items():
            try:
                exp = expected[name]
            except KeyError:
                raise KeyError(f"the model returned no value for output {name!r}") from None
            if exp != actual:
                bad.append((name, int(exp), actual))
        extra = sorted(set(expected) - set(outs))
        if extra:
            raise KeyError(f"the model returned outputs the harness does not sample: {extra}")
        if bad:
            self._mismatch(cycle, bad, ins, outs)

    @property
    def history(self) -> list:
        """The last accepted input beats ``(cycle, port, 1, fields)`` among the last
        :data:`RECENT_CYCLES` cycles, oldest first."""
        return self._beats()[0]

    def _beats(self):
        # Accepted beats go into the history once each; a beat still waiting for tready is
        # shown separately (backpressure would otherwise fill the history with one beat).
        accepted: collections.deque = collections.deque(maxlen=self._history_len)
        waiting: dict = {}
        for cycle, ins, outs in self._recent:
            for p in self.beat_ports:
                if ins.get(f"{p}{SEP}tvalid"):
                    ready = outs.get(f"{p}{SEP}tready", ins.get(f"{p}{SEP}tready", 1))
                    beat = (cycle, p, ready, {m: ins[n] for m, n in self._beat_fields[p]})
                    if ready:
                        accepted.append(beat)
                        waiting.pop(p, None)
                    else:
                        waiting[p] = beat
                else:
                    waiting.pop(p, None)
        return list(accepted), waiting

    def _fmt(self, name, v):
        w = self._width.get(name, 1)
        return str(v) if w == 1 else f"{v:#0{(w + 3) // 4 + 2}x}"

    def history_text(self) -> str:
        accepted, waiting = self._beats()
        if not accepted and not waiting:
            return "\n  (no input beats in the last cycles)"
        lines = [f"\n  last {len(accepted)} accepted input beat(s), then any waiting "
                 "(cycle port acc/WAIT fields):"]
        for cycle, p, ready, fields in [*accepted, *waiting.values()]:
            f = " ".join(f"{k}={self._fmt(f'{p}{SEP}{k}', v)}" for k, v in fields.items())
            lines.append(f"    {cycle:>8} {p} {'acc' if ready else 'WAIT'} {f}")
        return "\n".join(lines)

    def _mismatch(self, cycle, bad, ins, outs):
        self.mismatches += len(bad)
        self.mismatch_cycles += 1
        head = "; ".join(f"{n}: expected {self._fmt(n, e)}, actual {self._fmt(n, a)}" for n, e, a in bad)
        where = f"cycle {cycle}" + (self.where(cycle) if self.where else "")
        msg = f"RTL/model mismatch at {where}: {head}{self.history_text()}"
        if len(self.reports) < self.max_reported:
            self.reports.append(msg)
        if self.error is None:
            name, exp, act = bad[0]
            self.error = Mismatch(msg, cycle, name, exp, act)
            try:
                import cocotb
                cocotb.log.error(msg)
            except Exception:       # not under a simulator
                pass
        if self.stop_on_mismatch:
            raise self.error


class Lockstep:
    """Run ``model`` in lockstep with ``dut`` and compare every output every cycle.

    Args:
        dut: the cocotb top handle.
        model: a :class:`CycleModel`.
        inputs: Verilog names of the input ports the model reads (not the clock).
        outputs: Verilog names of the output ports to compare.  Every output the model
            returns must be listed; every listed output must be returned by the model.
        clock, reset: names of the clock and the active-high synchronous reset.
        history: how many input beats a mismatch message shows.
        stop_on_mismatch: raise at the first mismatch (tests) or count them (replay).
        beat_ports: AXI4-Stream input ports (prefixes) whose beats go into the history;
            default: every ``<p>__tvalid`` among ``inputs``.
        transfers: valid/ready ports (prefixes, e.g. ``"m_meta"``) whose transfers are
            recorded in :attr:`transfers` as ``(cycle, {member: value})``; members are all
            sampled signals of that port.
        on_cycle: called as ``on_cycle(cycle, inputs, outputs)`` after each compared cycle.
    """

    def __init__(self, dut, model: CycleModel, inputs: Sequence[str], outputs: Sequence[str], *,
                 clock: str = "clk", reset: str = "rst", history: int = 8,
                 stop_on_mismatch: bool = True, beat_ports: Iterable[str] | None = None,
                 transfers: Iterable[str] = (), on_cycle: Callable | None = None,
                 max_reported: int = 10):
        self.dut = dut
        self.model = model
        self.inputs = list(inputs)
        self.outputs = list(outputs)
        self.clock = getattr(dut, clock)
        self.reset_name = reset
        self.reset = getattr(dut, reset) if reset else None
        self._in = [(n, _reader(self._handle(n))) for n in self.inputs]
        self._out = [(n, _reader(self._handle(n))) for n in self.outputs]
        self.core = Core(model, self.inputs, self.outputs,
                         {n: len(self._handle(n)) for n in (*self.inputs, *self.outputs)},
                         history=history, stop_on_mismatch=stop_on_mismatch, beat_ports=beat_ports,
                         transfers=transfers, on_cycle=on_cycle, max_reported=max_reported,
                         where=self._where)
        self.start_time: int | None = None
        self.period: int | None = None
        self._task = None
        self._running = False

    # the core's state, under the names the tests read
    cycle = property(lambda self: self.core.cycle)
    mismatches = property(lambda self: self.core.mismatches)
    mismatch_cycles = property(lambda self: self.core.mismatch_cycles)
    reports = property(lambda self: self.core.reports)
    error = property(lambda self: self.core.error)
    transfers = property(lambda self: self.core.transfers)
    history = property(lambda self: self.core.history)
    stop_on_mismatch = property(lambda self: self.core.stop_on_mismatch)

    @property
    def waves_hint(self) -> str:
        """The trace file this simulation writes, if any (the run directory is the cwd)."""
        for name in ("dump.fst", "dump.vcd"):
            if os.path.exists(name):
                return os.path.abspath(name)
        return ""

    def _where(self, cycle) -> str:
        t = None if self.start_time is None else self.start_time + cycle * (self.period or 0)
        text = f" (sim time {t} ns)" if t is not None else ""
        if self.waves_hint:
            text += f" [waveform: {self.waves_hint}, cycle {cycle} starts at {t} ns]"
        return text

    def _handle(self, name):
        h = getattr(self.dut, name, None)
        if h is None:
            raise AttributeError(f"the design has no port {name!r}")
        return h

    # -- running ------------------------------------------------------------------------

    async def start(self, *, period_ns: int = 10, reset_cycles: int = 4, start_clock: bool = True,
                    monitor: bool = True) -> None:
        """Start the clock, hold reset for ``reset_cycles`` and start comparing.

        Drivers created before this call with ``reset=dut.rst`` stay idle during reset.
        Returns in the first compared cycle, right after reset is released.  With
        ``monitor=False`` nothing is compared here: :func:`drive` does it.
        """
        from cocotb.clock import Clock
        from cocotb.triggers import RisingEdge
        from cocotb.utils import get_sim_time
        if start_clock:
            Clock(self.clock, period_ns, unit="ns").start()
        self.period = period_ns
        sees_reset = self.reset_name in self.inputs
        if self.reset is not None:
            self.reset.value = 1
            if sees_reset and monitor:
                self._launch(get_sim_time("ns"), wait_edge=True)
            for _ in range(reset_cycles):
                await RisingEdge(self.clock)
            self.reset.value = 0
        else:
            await RisingEdge(self.clock)
        if not sees_reset and monitor:
            self._launch(get_sim_time("ns"), wait_edge=False)
        if not monitor:
            self.start_time = get_sim_time("ns") + self.period

    def _launch(self, now, wait_edge):
        import cocotb
        self.start_time = now + (self.period if wait_edge else 0)
        self._running = True
        self._task = cocotb.start_soon(self._monitor(wait_edge))

    async def _monitor(self, wait_edge: bool) -> None:
        from cocotb.triggers import ReadOnly, RisingEdge
        edge = RisingEdge(self.clock)
        ro = ReadOnly()
        if wait_edge:
            await edge
        while self._running:
            await ro
            self._compare_cycle()
            await edge

    def stop(self) -> None:
        """Stop comparing (after the current cycle)."""
        self._running = False

    def check(self) -> None:
        """Raise the first mismatch, if any (for ``stop_on_mismatch=False``)."""
        if self.error is not None:
            raise self.error

    async def wait_until(self, condition: Callable[[], bool], timeout_cycles: int,
                         what: str = "condition") -> None:
        """Wait, cycle by cycle, until ``condition()``; raise on a mismatch or the timeout."""
        from cocotb.triggers import RisingEdge
        edge = RisingEdge(self.clock)
        for _ in range(timeout_cycles):
            if self.error is not None and self.stop_on_mismatch:
                raise self.error
            if condition():
                return
            await edge
        if self.stop_on_mismatch:
            self.check()
        raise TimeoutError(f"{what} not reached within {timeout_cycles} cycles "
                           f"(cycle {self.cycle}){self.core.history_text()}")

    async def cycles(self, n: int) -> None:
        """Let ``n`` cycles pass (raising a mismatch as soon as it happens)."""
        from cocotb.triggers import RisingEdge
        edge = RisingEdge(self.clock)
        for _ in range(n):
            await edge
            if self.error is not None and self.stop_on_mismatch:
                raise self.error

    def _compare_cycle(self) -> None:
        ins = {n: r() for n, r in self._in}
        outs = {n: r() for n, r in self._out}
        try:
            self.core.compare(ins, outs)
        except Mismatch:
            self._running = False   # the waiting test raises self.error


class CombinationalOutput(AssertionError):
    """:func:`drive` with ``registered_outputs=True`` saw an output change after the inputs
    of the same cycle were written: the design has an input-to-output path."""


#: :func:`drive` with ``registered_outputs``: every this many cycles (and in the first
#: cycles) the outputs are read a second time after the inputs were written, to catch a
#: design whose outputs are not all flip-flops.
REGISTERED_CHECK_EVERY = 61


#: :func:`drive` with ``registered_outputs``: the coroutine looks every this many cycles
#: whether the cycle callbacks are done (one cocotb wake-up per window, not per cycle).
POLL_CYCLES = 64


async def drive(h: Lockstep, driver, *, busy: Callable[[], bool] | None = None,
                max_cycles: int | None = None, watch: Iterable[str] = (),
                registered_outputs: bool = False) -> int:
    """The fast lockstep loop: drive the inputs, read the outputs and compare, cycle by
    cycle, until ``driver.finished`` (or ``max_cycles``).

    Per cycle, at the falling clock edge (mid-cycle: the design only samples on the rising
    edge), the inputs ``driver.inputs()`` returns are written (only those that changed,
    straight through the simulator handle, without delay, so the simulator evaluates the
    clock's fall and the new inputs once); in ``ReadOnly`` of that time step every output is
    read once, the core steps the model and compares every output (:meth:`Core.compare`),
    then ``driver.observe(inputs, outputs)`` and ``driver.settle(busy())``.  Two triggers
    and two evaluations of the design per cycle, no other coroutine (see
    docs/hw/verification.md for what each costs).

    ``registered_outputs``: the design drives every output from a flip-flop (the parser:
    MR-HW-055), so the outputs are final right after the rising edge.  Each cycle is then
    one plain simulator callback at the falling edge (no coroutine wake-up): it reads every
    output *before* writing the cycle's inputs, compares and arms the next cycle's callback;
    the coroutine only looks every :data:`POLL_CYCLES` cycles whether the run is over, and
    the cycles until it looks are compared too, with the inputs held (``driver.observe`` is
    not called for them; they count in the cycles returned, so ``max_cycles`` is a lower
    bound).  A mismatch still names its cycle and signal and is raised by the coroutine;
    after it the model keeps stepping, uncompared, until the coroutine looks, so that a
    caller catching it stays in step with the design.  Every
    :data:`REGISTERED_CHECK_EVERY` cycles (and in a cycle with a mismatch) the outputs are
    read again in ``ReadOnly``, after the writes; a change raises
    :class:`CombinationalOutput` (the assumption is wrong for this design), so the mode
    cannot hide a difference.

    ``watch``: wide outputs that seldom change (a record register): read again only after
    the simulator reported a change of value (:func:`_watched_reader`), so each is still
    compared every cycle with its exact value.  Call after ``await h.start(monitor=False)``
    (or a previous ``drive``); returns the cycles compared.
    """
    watch = set(watch)
    core = h.core
    writers = {n: _writer(h._handle(n), immediate=True) for n in h.inputs}
    watched = h.__dict__.setdefault("_watched", {})     # one watcher per signal and harness
    for n in watch:
        if n not in watched:
            watched[n] = _watched_reader(h._handle(n))
    readers = [(n, watched[n] if n in watched else _reader(h._handle(n))) for n in h.outputs]
    busy = busy or (lambda: False)
    prev = h.__dict__.setdefault("_driven", {})       # what the inputs hold now
    limit = float("inf") if max_cycles is None else max_cycles
    await _to_falling_edge(h)
    if registered_outputs:
        return await _drive_callbacks(h, driver, busy, limit, readers, writers, prev)
    from cocotb.triggers import ReadOnly, Timer
    ro = ReadOnly()
    half, period = Timer(h.period / 2, unit="ns"), Timer(h.period, unit="ns")
    compare, inputs, observe, settle = core.compare, driver.inputs, driver.observe, driver.settle
    n = 0
    try:
        while not driver.finished and n < limit:
            ins = inputs()
            for name, v in ins.items():
                if prev.get(name) != v:
                    writers[name](v)
                    prev[name] = v
            await ro
            outs = {name: r() for name, r in readers}
            compare(ins, outs)
            observe(ins, outs)
            settle(busy)
            n += 1
            if not driver.finished:
                await period
    finally:
        # back in step with the rising edge, as the caller expects (also after a mismatch)
        await half
    return n


async def _to_falling_edge(h: Lockstep) -> None:
    """Wait for the next falling clock edge (cycle ``n`` starts at ``start_time + n *
    period``; a caller may be at a rising edge or anywhere before the falling edge)."""
    from cocotb.triggers import Timer
    from cocotb.utils import get_sim_steps, get_sim_time
    now = get_sim_time("step")
    start = get_sim_steps(h.start_time, "ns")
    period = get_sim_steps(h.period, "ns")
    fall = start + period // 2
    wait = (fall - now) % period
    await Timer(wait or period, unit="step")


async def _drive_callbacks(h, driver, busy, limit, readers, writers, prev) -> int:
    """:func:`drive` with ``registered_outputs``: one simulator callback per cycle.  Called
    at a falling edge; returns at the rising edge that ends the last compared cycle."""
    from cocotb import simulator
    from cocotb.triggers import Timer
    from cocotb.utils import get_sim_steps
    core = h.core
    period = get_sim_steps(h.period, "ns")
    compare, inputs, observe, settle = core.compare, driver.inputs, driver.observe, driver.settle
    # n: cycles driven; tail: cycles compared after the driver finished (inputs held)
    st = {"n": 0, "tail": 0, "done": False, "stop": False, "error": None, "cb": None}

    def fail(e):
        if st["error"] is not None:         # a second failure: stop stepping altogether
            st["stop"] = True
            return False
        st["error"] = e
        st["done"] = True
        return True

    def moved(outs, cycle):
        # in ReadOnly: did an output move with the inputs written in this cycle?
        again = {name: r() for name, r in readers}
        if again == outs:
            return None
        bad = [k for k in outs if again[k] != outs[k]]
        return CombinationalOutput(
            f"cycle {cycle}: output(s) {', '.join(bad)} changed after the cycle's inputs were "
            "written: not registered; use drive(registered_outputs=False)")

    def finish(ins, outs, in_readonly=False):
        # compare, observe, settle, then arm the next cycle's callback
        cycle_no = core.cycle
        try:
            n = st["n"]
            compare(ins, outs)
            observe(ins, outs)
            settle(busy)
            st["n"] = n + 1
            st["done"] = driver.finished or n + 1 >= limit
        except BaseException as e:          # raised in the coroutine, not in the simulator
            if not fail(e):
                return
            if isinstance(e, Mismatch) and not in_readonly:
                # a combinational output shows up as a mismatch first: say so if it is one
                simulator.register_readonly_callback(diagnose, outs, cycle_no, e)
        st["cb"] = simulator.register_timed_callback(period, cycle)

    def diagnose(outs, cycle_no, mismatch):
        err = moved(outs, cycle_no)
        if err is not None and st["error"] is mismatch:
            st["error"] = CombinationalOutput(f"{err}; first seen as: {mismatch}")

    def recheck(ins, outs):
        # ReadOnly of a check cycle: the outputs must not have moved with the new inputs
        err = moved(outs, core.cycle)
        if err is not None:
            fail(err)
            st["stop"] = True
            return
        finish(ins, outs, in_readonly=True)

    def cycle():
        st["cb"] = None
        if st["stop"]:
            return
        try:
            outs = {name: r() for name, r in readers}
            if not st["done"]:
                ins = inputs()
                for name, v in ins.items():
                    if prev.get(name) != v:
                        writers[name](v)
                        prev[name] = v
                if st["n"] % REGISTERED_CHECK_EVERY < 2:
                    simulator.register_readonly_callback(recheck, ins, outs)
                else:
                    finish(ins, outs)
                return
            if st["error"] is None:
                compare(dict(prev), outs)
                st["tail"] += 1
            else:
                # after an error: keep the model in step with the design, uncompared
                core.model.step(dict(prev))
                core.cycle += 1
        except BaseException as e:          # raised in the coroutine, not in the simulator
            if not fail(e):
                return
        st["cb"] = simulator.register_timed_callback(period, cycle)

    cycle()
    # look a quarter period after a falling edge, never at a cycle callback's time; stop
    # before the next falling edge and return at the rising edge in between
    quarter = Timer(period // 4, unit="step")
    window = Timer(POLL_CYCLES * period, unit="step")
    await quarter
    while not st["done"]:
        await window
    st["stop"] = True
    if st["cb"] is not None:
        st["cb"].deregister()
        st["cb"] = None
    await quarter
    if st["error"] is not None:
        raise st["error"]
    return st["n"] + st["tail"]


def drive_amaranth(sim, core: Core, driver, signals: Mapping[str, object], *,
                   busy: Callable[[], bool] | None = None, extra_inputs: Callable | None = None) -> None:
    """The same loop in the Amaranth simulator: add an async testbench to ``sim`` that, per
    cycle, sets ``driver.inputs()`` (plus ``extra_inputs()``, e.g. a random reset) on
    ``signals`` (``{port name: Amaranth value}``), reads every output, compares through
    ``core`` and ticks, until ``driver.finished``."""
    sim.add_testbench(_amaranth_bench(core, driver, signals, busy=busy, extra_inputs=extra_inputs))


def _amaranth_bench(core: Core, driver, signals: Mapping[str, object], *,
                    busy: Callable[[], bool] | None = None, extra_inputs: Callable | None = None):
    """The testbench coroutine function of :func:`drive_amaranth`."""
    busy = busy or (lambda: False)
    outs_names = core.outputs

    async def bench(ctx):
        while not driver.finished:
            ins = driver.inputs()
            if extra_inputs is not None:
                ins.update(extra_inputs())
            for n, v in ins.items():
                ctx.set(signals[n], v)
            outs = {n: ctx.get(signals[n]) for n in outs_names}
            core.compare(ins, outs)
            driver.observe(ins, outs)
            driver.settle(busy)
            await ctx.tick()

    return bench


def port_values(dut, names: Iterable[str]) -> dict:
    """``{port name: Amaranth value}`` of a component's flattened port names
    (``"m_meta__payload"`` is ``dut.m_meta.payload``)."""
    from amaranth.hdl import Value
    sig = {}
    for name in names:
        obj = dut
        for part in name.split("__"):
            obj = getattr(obj, part)
        sig[name] = Value.cast(obj)
    return sig


def run_amaranth(dut, model, driver, *, busy: Callable[[], bool] | None = None,
                 on_cycle=None, extra_inputs: Callable | None = None, background=()) -> Core:
    """A block's lockstep in the Amaranth simulator: ``dut`` in a ``sync`` domain, the model's
    ports as the port list, every output compared every cycle (:func:`drive_amaranth`) until
    the driver finishes. ``background``: more testbench coroutines (observers) run beside it.
    Returns the :class:`Core` (``mismatches``, ``cycle``)."""
    return AmaranthSim(dut).run(model, driver, busy=busy, on_cycle=on_cycle,
                                extra_inputs=extra_inputs, background=background)


class AmaranthSim:
    """``dut``'s Amaranth simulation, elaborated and compiled once (for a large block most of a
    short run's time) and run once per lockstep run. Between runs ``Simulator.reset()`` puts
    every signal, memory, clock and testbench back to its start, so a run on a used simulation
    is the run on a new one. One testbench and :data:`BACKGROUND_SLOTS` background ones call
    the current run's coroutines."""

    BACKGROUND_SLOTS = 4

    def __init__(self, dut):
        from amaranth.hdl import ClockDomain, Module
        from amaranth.sim import Simulator
        top = Module()
        top.domains.sync = ClockDomain()
        top.submodules.dut = dut
        self.dut = dut
        self.runs = 0
        self._main = None
        self._background = ()
        self.sim = Simulator(top)
        self.sim.add_clock(1e-8)

        async def main(ctx):
            await self._main(ctx)
        self.sim.add_testbench(main)
        for k in range(self.BACKGROUND_SLOTS):
            self.sim.add_testbench(self._slot(k), background=True)

    def _slot(self, k):
        async def slot(ctx):
            if k < len(self._background):
                await self._background[k](ctx)
        return slot

    def run(self, model, driver, *, busy: Callable[[], bool] | None = None, on_cycle=None,
            extra_inputs: Callable | None = None, background=()) -> Core:
        """One lockstep run (as :func:`run_amaranth`) on this simulation, from its start."""
        if len(background) > self.BACKGROUND_SLOTS:
            raise ValueError(f"at most {self.BACKGROUND_SLOTS} background testbenches")
        ins, outs = model_port_lists(model)
        sig = port_values(self.dut, ins + outs)
        core = Core(model, ins, outs, {n: len(v) for n, v in sig.items()}, on_cycle=on_cycle)
        self._main = _amaranth_bench(core, driver, sig, busy=busy or model.busy, extra_inputs=extra_inputs)
        self._background = tuple(background)
        if self.runs:
            self.sim.reset()
        self.runs += 1
        self.sim.run()
        return core


#: Simulations :func:`shared_sim` keeps per process (the small RX's takes some 500 MB).
KEPT_SIMS = 3
_shared_sims: collections.OrderedDict = collections.OrderedDict()


def _design_globals(only=None) -> list:
    """The values of the loaded ``metaroce`` modules' globals (but ``tb``'s; with ``only``,
    those of the modules it names) and of the attributes of the classes they define, in a
    fixed order: what elaborating a design can read, and what a test may monkeypatch."""
    import sys
    seen = []
    for modname in sorted(sys.modules):
        mod = sys.modules[modname]
        if not modname.startswith("metaroce.") or modname.startswith("metaroce.tb") or mod is None:
            continue
        if only is not None and modname not in only:
            continue
        for name, value in list(vars(mod).items()):
            if only is not None and getattr(value, "__name__", None) == f"{modname}.{name}":
                continue    # a package's submodule, bound when first imported anywhere
            seen.append((modname, name, value))
            if isinstance(value, type) and value.__module__ == modname:
                seen += [(modname, f"{name}.{attr}", v) for attr, v in list(vars(value).items())]
    return seen


def _imported_names(src, package) -> set:
    """The absolute names of the ``metaroce`` modules (and packages) ``src`` imports, at any
    depth (function-level imports too); ``from X import y`` names ``X.y`` when that is a module."""
    import ast
    import importlib.util
    out = set()
    for node in ast.walk(ast.parse(src)):
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = importlib.util.resolve_name("." * node.level + (node.module or ""), package) \
                if node.level else node.module
            out.add(base)
            for a in node.names:
                name = f"{base}.{a.name}"
                if name.startswith("metaroce.") and importlib.util.find_spec(base) is not None:
                    try:
                        if importlib.util.find_spec(name) is not None:
                            out.add(name)
                    except ModuleNotFoundError:
                        pass
    return {n for n in out if n == "metaroce" or n.startswith("metaroce.")}


_closure_cache: dict = {}


def source_closure(modules) -> dict:
    """MR-FLOW-040: ``{module name: SHA-256 of its source}`` of ``modules`` (modules or their
    names) and of every ``metaroce`` module their source imports (at any depth of the source,
    function-level imports included), transitively. A module made from edited source
    (:func:`wrong_form`, its ``__source__``) is hashed on that source."""
    import hashlib
    import importlib
    todo = [importlib.import_module(m) if isinstance(m, str) else m for m in modules]
    out = {}
    while todo:
        mod = todo.pop()
        if mod.__name__ in out:
            continue
        src = getattr(mod, "__source__", None)
        if src is None:
            with open(mod.__file__, "rb") as f:
                src = f.read()
        src = src if isinstance(src, bytes) else src.encode()
        digest = hashlib.sha256(src).hexdigest()
        out[mod.__name__] = digest
        package = mod.__package__ if mod.__package__ is not None else mod.__name__.rpartition(".")[0]
        if (package, digest) not in _closure_cache:
            _closure_cache[package, digest] = _imported_names(src, package)
        todo += [importlib.import_module(n) for n in sorted(_closure_cache[package, digest]) if n not in out]
    return out


def shared_sim(key, make_dut: Callable[[], object], modules=()) -> AmaranthSim:
    """The :class:`AmaranthSim` of ``make_dut()`` this process made for ``key`` before (the
    last :data:`KEPT_SIMS` are kept), else a new one. ``key`` names the design's parameters;
    the identities of the design modules' globals and class attributes are part of the key
    (the values kept alive with the simulation, so an identity is never reused), so a design
    made while a test monkeypatched one of them is shared with no run but the same patch's
    (such a test had better make its own :class:`AmaranthSim`: a shared one takes a place).
    MR-FLOW-040: so is the source of ``modules`` (the modules that define the design) and of
    their import closure (:func:`source_closure`): a design of a module made from other source
    (a wrong form, which is in no ``sys.modules`` entry) shares no simulation with the right
    one under the same ``key``."""
    sources = tuple(sorted(source_closure(modules).items()))
    # with the closure known, only its modules' globals can change the design: a module
    # imported later (by a test's stimulus) does not make the same design miss
    now = _design_globals(dict(sources) if modules else None)
    full = (key, sources, tuple((m, n, id(v)) for m, n, v in now))
    if full in _shared_sims:
        _shared_sims.move_to_end(full)
        return _shared_sims[full][1]
    asim = AmaranthSim(make_dut())
    # the key as it was before elaboration (which may import more modules: the next lookup of
    # the same design then misses once)
    _shared_sims[full] = (now, asim)
    while len(_shared_sims) > KEPT_SIMS:
        _shared_sims.popitem(last=False)
    return asim


def write_out(var: str, row) -> None:
    """A testbench's JSON result (its figures, or where it failed) to the file the environment
    variable ``var`` names, for the pytest side that started the simulator; nothing without it."""
    out = os.environ.get(var)
    if out:
        with open(out, "w") as f:
            json.dump(row, f)


def model_port_lists(model, dut=None, exclude: Sequence[str] = ("clk",)) -> tuple[list[str], list[str]]:
    """``(inputs, outputs)`` from a model's ``port_names()`` (a ``{"inputs": [...],
    "outputs": [...]}`` mapping or an ``(inputs, outputs)`` pair), minus ``exclude``."""
    names = model.port_names()
    if isinstance(names, Mapping):
        ins, outs = list(names["inputs"]), list(names["outputs"])
    else:
        ins, outs = (list(x) for x in names)
    ins = [n for n in ins if n not in exclude]
    outs = [n for n in outs if n not in exclude]
    return ins, outs


def verilog_ports(component, name: str) -> set[str]:
    """The input and output names of ``component`` converted to Verilog as module ``name``:
    the tests that a block's Verilog ports are its cycle model's (``port_names()``)."""
    from amaranth.back import verilog
    text = verilog.convert(component, name=name)
    top = text[text.index(f"module {name}("):]
    top = top[:top.index("endmodule")]
    return set(re.findall(r"^\s*(?:input|output)\s+(?:\[[^\]]+\]\s*)?(\w+);", top, re.M))


def wrong_form(module: str, old: str, new: str):
    """The RTL module ``metaroce.hdl.<module>`` with the one occurrence of ``old`` in its source
    replaced by ``new``, loaded as a module of its own: a wrong form of a block, for the negative
    controls that show a lockstep or an invariant catches it."""
    import importlib.util
    import types
    spec = importlib.util.find_spec(f"metaroce.hdl.{module}")
    with open(spec.origin) as f:
        src = f.read()
    assert src.count(old) == 1, old
    mod = types.ModuleType(f"metaroce.hdl._{module}_wrong")
    mod.__package__ = "metaroce.hdl"
    mod.__source__ = src.replace(old, new)      # source_closure hashes this, not the file
    # dont_inherit: not this file's ``from __future__ import annotations`` (a component's
    # signature annotations must be evaluated, as on a plain import)
    exec(compile(mod.__source__, spec.origin, "exec", dont_inherit=True), mod.__dict__)
    return mod


def wrong_helper(module: str, helper: str, old: str, new: str):
    """The RTL module ``metaroce.hdl.<module>`` loaded as a module of its own, the names it
    imports from the shared module ``metaroce.hdl.<helper>`` taken from ``wrong_form(helper,
    old, new)``: a block built on a wrong form of a shared helper (e.g. hdl/counters.py's
    ``counter_ram`` in the parser or the RX), for negative controls."""
    import importlib
    import importlib.util
    import types
    good, bad = importlib.import_module(f"metaroce.hdl.{helper}"), wrong_form(helper, old, new)
    spec = importlib.util.find_spec(f"metaroce.hdl.{module}")
    with open(spec.origin) as f:
        src = f.read()
    mod = types.ModuleType(f"metaroce.hdl._{module}_wrong_{helper}")
    mod.__package__ = "metaroce.hdl"
    mod.__source__ = src + "\n" + bad.__source__          # hashed apart from the right one's
    exec(compile(src, spec.origin, "exec", dont_inherit=True), mod.__dict__)
    swapped = [n for n, v in list(mod.__dict__.items()) if getattr(good, n, None) is v and hasattr(bad, n)
               and callable(v)]
    assert swapped, (module, helper)
    for n in swapped:
        mod.__dict__[n] = getattr(bad, n)
    return mod


def flat_port_names(signature) -> set:
    """The port names of a component's ``signature`` as the flattened Verilog and the cycle
    models name them: a plain port by its name, an interface's members as ``name__member``."""
    out = set()
    for name, member in signature.members.items():
        out |= {name} if member.is_port else {f"{name}__{k}" for k in member.signature.members}
    return out
