"""The lockstep harness's own self-test: a small stand-in block, its cycle model and its
cocotb tests (run by ``tests/test_lockstep.py``).

``FrameStats(width)`` has the shape of the engine's blocks: an AXI4-Stream input
``s_axis`` (tdata, tkeep, tvalid, tready, tlast, tuser), an AXI4-Stream output ``m_axis``
behind a two-entry register slice (skid buffer, full throughput), a valid/ready output
``m_meta`` carrying one record per frame (bytes, beats, error = OR of tuser) and a frame
counter.  ``FrameStatsModel`` is its cycle model with the ``step(inputs) -> outputs``
contract of :mod:`metaroce.tb.lockstep`.  ``bug=`` plants a deliberate RTL bug, so the
self-test can check that the harness catches and reports it.
"""
from __future__ import annotations

import os
import random

import cocotb
from amaranth.hdl import Module, Signal
from amaranth.lib import data, wiring
from amaranth.lib.wiring import In, Out

from .lockstep import Lockstep, Mismatch
from .streams import ReadyRandomiser, axis_sink, axis_source

META_LAYOUT = data.StructLayout({"bytes": 16, "beats": 16, "error": 1})


def axis_signature(width: int, user: int = 1) -> wiring.Signature:
    """AXI4-Stream as a wiring signature (members named as in the AXI spec)."""
    return wiring.Signature({
        "tdata": Out(width), "tkeep": Out(width // 8), "tvalid": Out(1), "tready": In(1),
        "tlast": Out(1), "tuser": Out(user)})


class FrameStats(wiring.Component):
    def __init__(self, width: int = 64, bug: str | None = None):
        if width % 8 or width < 8:
            raise ValueError(f"width must be a positive multiple of 8, not {width}")
        self.width = width
        self.bug = bug
        super().__init__({
            "s_axis": In(axis_signature(width)),
            "m_axis": Out(axis_signature(width)),
            "m_meta": Out(wiring.Signature({"valid": Out(1), "ready": In(1),
                                            "data": Out(META_LAYOUT)})),
            "frames": Out(32),
        })

    def elaborate(self, platform):
        m = Module()
        s, o, meta = self.s_axis, self.m_axis, self.m_meta
        fields = ("tdata", "tkeep", "tlast", "tuser")
        skid_valid = Signal()
        skid = {f: Signal(len(getattr(s, f)), name=f"skid_{f}") for f in fields}
        nbytes = Signal(16)
        nbeats = Signal(16)
        err = Signal()
        meta_stall = meta.valid & ~meta.ready
        # A last beat needs the meta register free, or the record would be overwritten.
        m.d.comb += s.tready.eq(~skid_valid & (~meta_stall | ~s.tlast))
        s_fire = s.tvalid & s.tready

        with m.If(~o.tvalid | o.tready):
            with m.If(skid_valid):
                m.d.sync += [getattr(o, f).eq(skid[f]) for f in fields]
                m.d.sync += [o.tvalid.eq(1), skid_valid.eq(0)]
            with m.Else():
                m.d.sync += [getattr(o, f).eq(getattr(s, f)) for f in fields]
                m.d.sync += o.tvalid.eq(s_fire if self.bug != "drop_valid" else s.tvalid)
        with m.Elif(s_fire):
            m.d.sync += [skid[f].eq(getattr(s, f)) for f in fields]
            m.d.sync += skid_valid.eq(1)

        with m.If(meta.ready):
            m.d.sync += meta.valid.eq(0)
        popcount = sum(s.tkeep[i] for i in range(len(s.tkeep)))
        with m.If(s_fire):
            with m.If(s.tlast):
                m.d.sync += [nbytes.eq(0), nbeats.eq(0), err.eq(0), meta.valid.eq(1),
                             meta.data.bytes.eq(nbytes + popcount),
                             meta.data.beats.eq(nbeats + 1),
                             meta.data.error.eq(err | s.tuser[0])]
                m.d.sync += self.frames.eq(self.frames + (2 if self.bug == "count" else 1))
            with m.Else():
                m.d.sync += [nbytes.eq(nbytes + popcount), nbeats.eq(nbeats + 1),
                             err.eq(err | s.tuser[0])]
        return m


class FrameStatsModel:
    """Cycle model of :class:`FrameStats`: ``step(inputs) -> outputs`` once per clock."""

    FIELDS = ("tdata", "tkeep", "tlast", "tuser")

    def __init__(self, width: int = 64):
        self.width = width
        self.o = {f: 0 for f in self.FIELDS}
        self.o_valid = 0
        self.skid = {f: 0 for f in self.FIELDS}
        self.skid_valid = 0
        self.meta_valid = 0
        self.meta = (0, 0, 0)
        self.count = (0, 0, 0)  # bytes, beats, error of the frame so far
        self.frames = 0

    @staticmethod
    def meta_to_dict(word: int) -> dict:
        return {"bytes": word & 0xFFFF, "beats": (word >> 16) & 0xFFFF, "error": (word >> 32) & 1}

    def port_names(self):
        ins = ["s_axis__tdata", "s_axis__tkeep", "s_axis__tvalid", "s_axis__tlast",
               "s_axis__tuser", "m_axis__tready", "m_meta__ready"]
        outs = ["s_axis__tready", "m_axis__tdata", "m_axis__tkeep", "m_axis__tvalid",
                "m_axis__tlast", "m_axis__tuser", "m_meta__valid", "m_meta__data", "frames"]
        return ins, outs

    def step(self, i):
        s = {f: i[f"s_axis__{f}"] for f in self.FIELDS}
        meta_ready = i["m_meta__ready"]
        o_ready = i["m_axis__tready"]
        bytes_, beats, err = self.meta
        out = {"s_axis__tready": int(not self.skid_valid and
                                     (not (self.meta_valid and not meta_ready) or not s["tlast"])),
               "m_axis__tvalid": self.o_valid, "m_meta__valid": self.meta_valid,
               "m_meta__data": bytes_ | (beats << 16) | (err << 32), "frames": self.frames}
        out.update({f"m_axis__{f}": v for f, v in self.o.items()})
        s_fire = i["s_axis__tvalid"] and out["s_axis__tready"]
        # next state
        if not self.o_valid or o_ready:
            if self.skid_valid:
                self.o, self.o_valid, self.skid_valid = dict(self.skid), 1, 0
            else:
                self.o, self.o_valid = dict(s), int(bool(s_fire))
        elif s_fire:
            self.skid, self.skid_valid = dict(s), 1
        if meta_ready:
            self.meta_valid = 0
        if s_fire:
            n = bin(s["tkeep"]).count("1")
            b, k, e = self.count
            if s["tlast"]:
                self.meta = ((b + n) & 0xFFFF, (k + 1) & 0xFFFF, e | (s["tuser"] & 1))
                self.meta_valid = 1
                self.count = (0, 0, 0)
                self.frames = (self.frames + 1) & 0xFFFFFFFF
            else:
                self.count = ((b + n) & 0xFFFF, (k + 1) & 0xFFFF, e | (s["tuser"] & 1))
        return out


# --------------------------------------------------------------------------------------
# cocotb tests (inside the simulator; see tests/test_lockstep.py)

SHAPES = {"idle": (0.3, 0.0), "bp": (0.0, 0.4), "both": (0.3, 0.4), "none": (0.0, 0.0)}


async def _run_frames(dut, shape: str, n_frames: int, stop_on_mismatch: bool = True):
    rng = random.Random(int(os.environ.get("COCOTB_RANDOM_SEED", "1")))
    width = len(dut.s_axis__tdata)
    model = FrameStatsModel(width)
    ins, outs = model.port_names()
    h = Lockstep(dut, model, ins, outs, transfers=["m_meta"], stop_on_mismatch=stop_on_mismatch)
    idle, bp = SHAPES[shape]
    src = axis_source(dut, "s_axis", dut.clk, dut.rst, pause=idle, rng=rng)
    sink = axis_sink(dut, "m_axis", dut.clk, dut.rst, pause=bp, rng=rng)
    ReadyRandomiser(dut.m_meta__ready, dut.clk, pause=bp, rng=rng)
    await h.start()
    frames = []
    for _ in range(n_frames):
        n = rng.choice([1, 2, width // 8, width // 8 + 1, rng.randint(1, 300)])
        payload = bytes(rng.getrandbits(8) for _ in range(n))
        user = rng.random() < 0.2
        frames.append((payload, user))
        await src.send(_frame(payload, user))
    await h.wait_until(lambda: len(h.transfers["m_meta"]) == n_frames and sink.count() == n_frames,
                       timeout_cycles=200 * n_frames + 1000, what="all frames out")
    await h.cycles(5)
    h.stop()
    return h, model, frames, sink


def _frame(payload, user):
    from cocotbext.axi import AxiStreamFrame
    return AxiStreamFrame(payload, tuser=[0] * (len(payload) - 1) + [int(user)])


@cocotb.parametrize(shape=["none", "idle", "bp", "both"])
@cocotb.test()
async def lockstep_frames(dut, shape):
    """Random frames through the stand-in: zero mismatches, data and records right."""
    h, model, frames, sink = await _run_frames(dut, shape, int(os.environ.get("STANDIN_FRAMES", "60")))
    width = len(dut.s_axis__tdata)
    for k, (payload, user) in enumerate(frames):
        got = sink.recv_nowait()
        assert bytes(got.tdata) == payload, f"frame {k}: data differs"
        rec = model.meta_to_dict(h.transfers["m_meta"][k][1]["data"])
        assert rec == {"bytes": len(payload), "beats": -(-len(payload) // (width // 8)),
                       "error": int(user)}, f"frame {k}: {rec}"
    assert int(dut.frames.value) == len(frames)
    assert h.mismatches == 0 and h.cycle > 0
    if shape == "none":  # register slice at full throughput: one beat per cycle
        beats = sum(-(-len(p) // (width // 8)) for p, _ in frames)
        assert h.cycle < beats + 20 + 4 * len(frames)


@cocotb.test(skip=os.environ.get("STANDIN_EXPECT_MISMATCH") is None)
async def lockstep_catches_bug(dut):
    """Run against a build with a planted bug: the harness must report a mismatch that
    names the cycle, the signal, expected/actual and the last input beats."""
    try:
        await _run_frames(dut, "bp", 40)
    except Mismatch as e:
        text = str(e)
        expected_signal = os.environ["STANDIN_EXPECT_MISMATCH"]
        assert e.signal == expected_signal, f"reported {e.signal}, expected {expected_signal}"
        assert f"cycle {e.cycle}" in text and "expected" in text and "actual" in text
        assert "input beat" in text and "s_axis" in text
        if os.environ.get("WAVES"):
            assert "waveform: " in text and "dump." in text
        return
    raise AssertionError("the planted bug was not detected")


@cocotb.test(skip=os.environ.get("STANDIN_EXPECT_MISMATCH") is None)
async def lockstep_counts_mismatches(dut):
    """With stop_on_mismatch=False the harness keeps going and counts mismatching cycles."""
    h, *_ = await _run_frames(dut, "none", 20, stop_on_mismatch=False)
    assert h.mismatches > 0 and h.reports and h.error is not None


class BeatDriver:
    """A traffic driver for :func:`metaroce.tb.lockstep.drive` (``inputs()``, ``observe()``,
    ``settle()``, ``finished``): ``n_frames`` random frames back to back, ``m_axis`` always
    ready; ``m_meta__ready`` always high (every output of the stand-in is then a flip-flop)
    or, with ``toggle_meta_ready``, flipping every cycle (``s_axis__tready`` then follows it
    within the cycle, through the meta stall)."""

    def __init__(self, width: int, n_frames: int, seed: int, toggle_meta_ready: bool = False):
        rng = random.Random(seed)
        nb = width // 8
        self.beats = []
        for _ in range(n_frames):
            n = rng.randint(1, 3 * nb)
            data = bytes(rng.getrandbits(8) for _ in range(n))
            for k in range(0, n, nb):
                chunk = data[k:k + nb]
                self.beats.append((int.from_bytes(chunk, "little"), (1 << len(chunk)) - 1,
                                   int(k + nb >= n), 0))
        self.toggle = toggle_meta_ready
        self.i = self.cycle = self.quiet = 0
        self.finished = False

    def inputs(self):
        d, k, last, user = self.beats[self.i] if self.i < len(self.beats) else (0, 0, 0, 0)
        return {"s_axis__tdata": d, "s_axis__tkeep": k, "s_axis__tvalid": int(self.i < len(self.beats)),
                "s_axis__tlast": last, "s_axis__tuser": user, "m_axis__tready": 1,
                "m_meta__ready": (self.cycle & 1) if self.toggle else 1}

    def observe(self, ins, outs):
        if ins["s_axis__tvalid"] and outs["s_axis__tready"]:
            self.i += 1
        self.cycle += 1

    def settle(self, busy):
        self.quiet = self.quiet + 1 if self.i >= len(self.beats) else 0
        self.finished = self.quiet > 4


@cocotb.test(skip=os.environ.get("STANDIN_DRIVE") is None)
async def drive_registered(dut):
    """:func:`~metaroce.tb.lockstep.drive` with ``registered_outputs`` (one simulator callback
    per cycle, polled every POLL_CYCLES): ``STANDIN_DRIVE=pass`` (correct build: zero
    mismatches, every frame counted), ``mismatch`` (the ``count`` bug: the first mismatch
    is raised with the cycle and the signal the model alone predicts), ``combinational``
    (meta ready toggling: ``s_axis__tready`` depends on it within the cycle, which the
    check reports); ``triggers``: the same traffic through the two-trigger loop
    (``registered_outputs=False``), which allows it."""
    from .lockstep import CombinationalOutput, drive
    mode = os.environ["STANDIN_DRIVE"]
    width = len(dut.s_axis__tdata)
    model = FrameStatsModel(width)
    ins, outs = model.port_names()
    h = Lockstep(dut, model, ins, outs)
    for name in ins:
        getattr(dut, name).value = 0
    await h.start(monitor=False)
    n_frames = 30
    drv = BeatDriver(width, n_frames, seed=7, toggle_meta_ready=mode == "combinational")
    if mode == "pass":
        cycles = await drive(h, drv, registered_outputs=True)
        assert h.mismatches == 0 and cycles == h.cycle >= len(drv.beats)
        assert int(dut.frames.value) == n_frames
        # a second run continues in step with the design
        drv2 = BeatDriver(width, 5, seed=8)
        await drive(h, drv2, registered_outputs=True)
        assert h.mismatches == 0 and int(dut.frames.value) == n_frames + 5
        return
    if mode == "triggers":
        # the two-trigger loop (outputs read in ReadOnly, after the writes) takes an output
        # that follows an input within the cycle: zero mismatches with meta ready toggling
        drv = BeatDriver(width, n_frames, seed=7, toggle_meta_ready=True)
        cycles = await drive(h, drv)
        assert h.mismatches == 0 and cycles == h.cycle >= len(drv.beats)
        assert int(dut.frames.value) == n_frames
        return
    if mode == "combinational":
        try:
            await drive(h, drv, registered_outputs=True)
        except CombinationalOutput as e:
            assert "s_axis__tready" in str(e), str(e)
            return
        raise AssertionError("the combinational s_axis__tready went unnoticed")
    # mode == "mismatch": where must the first difference be?  The model alone, with the
    # same driver, gives the cycle its frame counter first moves (the bug adds 2, not 1).
    alone, ref = FrameStatsModel(width), BeatDriver(width, n_frames, seed=7)
    first = None
    while first is None and not ref.finished:
        i = ref.inputs()
        o = alone.step(i)
        if o["frames"]:
            first = ref.cycle
        ref.observe(i, o)
        ref.settle(False)
    try:
        await drive(h, drv, registered_outputs=True)
    except Mismatch as e:
        assert (e.cycle, e.signal) == (first, "frames"), (e.cycle, e.signal, first)
        assert f"cycle {first}" in str(e) and "frames: expected 0x00000001, actual 0x00000002" in str(e), str(e)
        return
    raise AssertionError("the planted bug was not detected")
