"""Shared stream helpers for the cocotb testbenches (AXI4-Stream and valid/ready ports).

Amaranth names the Verilog ports of a nested signature ``<port>__<member>`` (for example
``s_axis__tdata``), while cocotbext-axi's ``AxiStreamBus.from_prefix`` joins with ``_``.
:func:`axis_bus` builds the bus with the ``__`` separator instead, so every block's
testbench drives Amaranth ports with the stock cocotbext-axi source and sink.

Helpers:

* :func:`axis_bus`, :func:`axis_source`, :func:`axis_sink`: cocotbext-axi endpoints on an
  Amaranth port, optionally with a random pause pattern (idle cycles / backpressure);
* :func:`random_pause`: an endless seeded pause pattern for ``set_pause_generator``;
* :class:`ReadyRandomiser`: random ``ready`` for a plain valid/ready port;
* :func:`to_beats` / :func:`from_beats`: bytes <-> (tdata, tkeep, tlast) beats, byte 0 in
  the least significant bits as AXI4-Stream puts it.
"""
from __future__ import annotations

import random
from collections.abc import Iterator

SEP = "__"  # Amaranth's separator between a port and its members in Verilog names


def port_name(prefix: str, member: str) -> str:
    """Verilog name of ``member`` of the Amaranth port ``prefix`` (``s_axis`` -> ``s_axis__tdata``)."""
    return f"{prefix}{SEP}{member}"


def axis_bus(dut, prefix: str):
    """A cocotbext-axi ``AxiStreamBus`` for the Amaranth port ``prefix`` (``prefix__tdata``...)."""
    from cocotbext.axi import AxiStreamBus
    return AxiStreamBus.from_prefix(dut, prefix, bus_separator=SEP)


def random_pause(probability: float, rng: random.Random | None = None,
                 max_run: int = 0) -> Iterator[bool]:
    """Endless pause pattern: ``True`` (pause this cycle) with ``probability``.

    ``max_run`` > 0 also inserts occasional long pauses of up to ``max_run`` cycles, which
    fill internal FIFOs and exercise the full/empty corners that short pauses never reach.
    """
    rng = rng or random.Random()
    while True:
        if max_run and rng.random() < 0.01:
            for _ in range(rng.randint(1, max_run)):
                yield True
        yield rng.random() < probability


def axis_source(dut, prefix: str, clock, reset=None, pause: float = 0.0,
                rng: random.Random | None = None):
    """``AxiStreamSource`` on port ``prefix``; ``pause`` > 0 inserts random idle cycles."""
    src = _fast_classes()[0](axis_bus(dut, prefix), clock, reset)
    _quiet(src)
    if pause > 0:
        src.set_pause_generator(random_pause(pause, rng))
    return src


def axis_sink(dut, prefix: str, clock, reset=None, pause: float = 0.0,
              rng: random.Random | None = None):
    """``AxiStreamSink`` on port ``prefix``; ``pause`` > 0 applies random backpressure."""
    sink = _fast_classes()[1](axis_bus(dut, prefix), clock, reset)
    _quiet(sink)
    if pause > 0:
        sink.set_pause_generator(random_pause(pause, rng, max_run=40))
    return sink


_FAST = None


def _fast_classes():
    """cocotbext-axi's source and sink with a per-beat (not per-byte) inner loop.

    The stock sink reads ``int(tdata.value)`` once per byte lane (64 times per beat at 512
    bits), which made it the slowest part of a 512-bit lockstep run.  These subclasses keep
    the same protocol behaviour (handshake sampling, pause generator, reset) and only read
    or write each signal once per beat.
    """
    global _FAST
    if _FAST is not None:
        return _FAST
    from cocotb.triggers import RisingEdge
    from cocotb.utils import get_sim_time
    from cocotbext.axi import AxiStreamFrame, AxiStreamSink, AxiStreamSource

    class FastAxiStreamSource(AxiStreamSource):
        async def _run(self):
            frame = None
            off = 0
            self.active = False
            bus = self.bus
            lanes = self.byte_lanes
            assert self.byte_size == 8
            has_tuser = hasattr(bus, "tuser")
            edge = RisingEdge(self.clock)
            while True:
                await edge
                tready = int(bus.tready.value)
                tvalid = int(bus.tvalid.value)
                if (tready and tvalid) or not tvalid:
                    if not frame and not self.queue.empty():
                        frame = self.queue.get_nowait()
                        self.dequeue_event.set()
                        self.queue_occupancy_bytes -= len(frame)
                        self.queue_occupancy_frames -= 1
                        self.current_frame = frame
                        frame.sim_time_start = get_sim_time()
                        frame.sim_time_end = None
                        frame.normalize()
                        self.active = True
                        off = 0
                    if frame and not self.pause:
                        n = min(lanes, len(frame.tdata) - off)
                        data = int.from_bytes(bytes(frame.tdata[off:off + n]), "little")
                        keep = 0
                        for i, k in enumerate(frame.tkeep[off:off + n]):
                            keep |= (k & 1) << i
                        user = frame.tuser[off + n - 1]
                        off += n
                        last = int(off >= len(frame.tdata))
                        if last:
                            frame.sim_time_end = get_sim_time()
                            frame.handle_tx_complete()
                            frame = None
                            self.current_frame = None
                        bus.tdata.value = data
                        bus.tvalid.value = 1
                        bus.tlast.value = last
                        bus.tkeep.value = keep
                        if has_tuser:
                            bus.tuser.value = user
                    else:
                        bus.tvalid.value = 0
                        bus.tlast.value = 0
                        self.active = bool(frame)
                        if not frame and self.queue.empty():
                            self.idle_event.set()
                            self.active_event.clear()
                            await self.active_event.wait()

    class FastAxiStreamSink(AxiStreamSink):
        async def _run(self):
            frame = None
            self.active = False
            bus = self.bus
            lanes = self.byte_lanes
            assert self.byte_size == 8
            has_tuser = hasattr(bus, "tuser")
            edge = RisingEdge(self.clock)
            wake = self.wake_event.wait()
            while True:
                pause_sample = bool(self.pause)
                await edge
                tready = int(bus.tready.value)
                tvalid = int(bus.tvalid.value)
                if tready and tvalid:
                    if not frame:
                        frame = AxiStreamFrame(bytearray(), [], [], [], [])
                        frame.sim_time_start = get_sim_time()
                        self.active = True
                    data = int(bus.tdata.value).to_bytes(lanes, "little")
                    keep = int(bus.tkeep.value)
                    user = int(bus.tuser.value) if has_tuser else 0
                    frame.tdata += data
                    frame.tkeep += [(keep >> i) & 1 for i in range(lanes)]
                    frame.tid += [0] * lanes
                    frame.tdest += [0] * lanes
                    frame.tuser += [user] * lanes
                    if int(bus.tlast.value):
                        frame.sim_time_end = get_sim_time()
                        self.queue_occupancy_bytes += len(frame)
                        self.queue_occupancy_frames += 1
                        self.queue.put_nowait(frame)
                        self.active_event.set()
                        frame = None
                else:
                    self.active = bool(frame)
                paused = self.full() or pause_sample
                bus.tready.value = int(not paused)
                if (not tvalid or paused) and (pause_sample == bool(self.pause)):
                    self.wake_event.clear()
                    await wake

    _FAST = (FastAxiStreamSource, FastAxiStreamSink)
    return _FAST


def _quiet(endpoint) -> None:
    # cocotbext-axi logs every frame at INFO: thousands of frames would swamp the log.
    import logging
    endpoint.log.setLevel(logging.WARNING)


class ReadyRandomiser:
    """Drive a ``ready`` input randomly: low with probability ``pause`` each cycle.

    Writes right after the rising edge (never in ReadOnly).  ``pause=0`` holds it high.
    """

    def __init__(self, signal, clock, pause: float = 0.0, rng: random.Random | None = None):
        import cocotb
        self.signal = signal
        self.clock = clock
        self.pause = pause
        self.rng = rng or random.Random()
        signal.value = 1 if pause <= 0 else 0
        self._task = cocotb.start_soon(self._run())

    async def _run(self):
        from cocotb.triggers import RisingEdge
        edge = RisingEdge(self.clock)
        gen = random_pause(self.pause, self.rng, max_run=40) if self.pause > 0 else None
        while True:
            await edge
            self.signal.value = 1 if gen is None else int(not next(gen))

    def stop(self, ready: int = 1) -> None:
        self._task.cancel()
        self.signal.value = ready


def to_beats(data: bytes, width: int) -> list[tuple[int, int, int]]:
    """``data`` as AXI4-Stream beats ``(tdata, tkeep, tlast)`` of ``width`` bits."""
    n = width // 8
    if not data:
        raise ValueError("an AXI4-Stream frame needs at least one byte")
    beats = []
    for off in range(0, len(data), n):
        chunk = data[off:off + n]
        beats.append((int.from_bytes(chunk, "little"), (1 << len(chunk)) - 1,
                      int(off + n >= len(data))))
    return beats


def from_beats(beats, width: int) -> bytes:
    """Join ``(tdata, tkeep, ...)`` beats back into bytes (only the kept bytes)."""
    n = width // 8
    out = bytearray()
    for beat in beats:
        tdata, tkeep = beat[0], beat[1]
        raw = int(tdata).to_bytes(n, "little")
        out += bytes(raw[i] for i in range(n) if (tkeep >> i) & 1)
    return bytes(out)
