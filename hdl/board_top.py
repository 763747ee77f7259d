"""Board wrapper for ``metaroce build``: puts any registered block on a real board
(MR-FLOW-022).

A block out of context has hundreds of ports (the 64-bit parser: 85 inputs, 1,660 outputs),
far more than a board has pins, and a synthesis tool removes every cell whose output reaches
no pin. :class:`BoardTop` therefore keeps the block's ports on chip:

* **Clock and reset.** The board oscillator feeds an ECP5 PLL (``EHXPLLL``, configured by
  ``ecppll``; instantiated here as the module ``pll_module``) that makes the core clock; the
  board's active-low reset button and the PLL's lock signal reset the core domain through a
  reset synchroniser (asserted at once, released on the core clock). ``global_reset=True`` puts
  the block's reset through a ``DCCA`` (MR-FLOW-042), on a global network; off by default: at
  the engine, the global's fixed wires into the slices' LSR left a logic arc unroutable.
* **Traffic source** (:class:`Harness`). A 32-bit Galois LFSR shifts 32 new pseudo-random bits
  per cycle into a shift register as wide as all the block's inputs together (at least 32
  bits); every input bit of the block (data, keep, valid, last, ready of its output streams,
  register addresses) is a flip-flop that loads its shift-register bit in the cycles the
  LFSR's low bit is set (an enable, not a LUT: no input register of the block then has the
  same D and enable as a shift stage). Nothing the block reads is a constant, so no
  logic folds away, and no input register of the block duplicates a flip-flop of the source.
* **Observer.** Every output bit is registered, then reduced by pipelined XOR trees (4 bits to
  1 per registered stage, one LUT4 level) into :data:`Harness.GROUPS` bits, one per LED. Every
  output bit can flip an LED, so all logic that drives an output survives synthesis, and the
  observer adds one LUT level per stage, never a long path of its own.
* **LEDs.** ``led[0]`` heartbeat (core-clock counter, ~1 Hz at 100 MHz), ``led[1]`` PLL locked,
  ``led[2..7]`` the six XOR-reduced output groups. The board's LEDs are active low.

The block is an ``Instance`` of its own Verilog module (the same text ``metaroce pnr``
places), so the wrapper can also be synthesized around a stand-in for the block to count
what it costs alone (MR-FLOW-023).
"""
from __future__ import annotations

from amaranth.hdl import Cat, ClockDomain, ClockSignal, Const, Elaboratable, Instance, Module, \
    Mux, ResetSignal, Signal
from amaranth.lib.cdc import ResetSynchronizer

__all__ = ["Harness", "BoardTop", "block_ports", "LFSR_TAPS"]

#: Galois LFSR x^32 + x^22 + x^2 + x + 1 (maximal length), as the feedback mask.
LFSR_TAPS = 0x80200003
LFSR_SEED = 0xACE1_2468


def _silence_unused(obj, seen=None):
    """Mark ``obj`` and the elaboratables it holds (attributes, lists, dicts) as used: a
    component built for its ports only would otherwise warn, at some later garbage
    collection, once for each sub-block its constructor made (UnusedElaboratable)."""
    from amaranth.hdl import Elaboratable
    seen = set() if seen is None else seen
    if id(obj) in seen:
        return
    seen.add(id(obj))
    if isinstance(obj, Elaboratable):
        obj._MustUse__silence = True
        inner = vars(obj).values()
    elif isinstance(obj, (list, tuple)):
        inner = obj
    elif isinstance(obj, dict):
        inner = obj.values()
    else:
        return
    for x in inner:
        _silence_unused(x, seen)


def block_ports(component) -> list[tuple[str, int, str]]:
    """``[(verilog_name, width, "i"|"o")]`` of a ``wiring.Component``'s ports, named as
    ``verilog.convert`` names them (signature path joined with ``__``); ``clk`` and ``rst``
    are not included."""
    from amaranth.hdl import Value
    from amaranth.lib.wiring import In
    _silence_unused(component)     # only its signature is read here
    out = []
    for path, member, value in component.signature.flatten(component):
        name = "__".join(str(p) for p in path)
        width = Value.cast(value).shape().width
        out.append((name, width, "i" if member.flow == In else "o"))
    return out


def lfsr_step(state: int) -> int:
    """One Galois step of the 32-bit LFSR (the Python reference of :class:`Harness`)."""
    return (state >> 1) ^ (LFSR_TAPS if state & 1 else 0)


class Harness(Elaboratable):
    """Traffic source and observer around a block's flattened ports, all in the ``sync``
    domain.

    ``inputs``: total width of the block's inputs; ``outputs``: total width of its outputs.
    ``to_block`` (``inputs`` bits) drives the block, ``from_block`` (``outputs`` bits) is
    what the block drives, ``observed`` (:data:`GROUPS` bits) the XOR-reduced outputs.
    ``observe=False`` leaves ``observed`` at zero: the negative control that shows the check
    of MR-FLOW-023 catches a block synthesis removed.
    """
    GROUPS = 6
    FAN_IN = 4

    def __init__(self, inputs: int, outputs: int, *, observe: bool = True):
        if inputs < 1 or outputs < 1:
            self._MustUse__silence = True   # a rejected design is not an unused one
            raise ValueError(f"a block needs inputs and outputs (has {inputs} and {outputs} bits)")
        self.inputs, self.outputs, self.observe = inputs, outputs, observe
        self.to_block = Signal(inputs)
        self.from_block = Signal(outputs)
        self.observed = Signal(self.GROUPS)

    def groups(self) -> list[range]:
        """The output bit ranges XOR-reduced into each bit of ``observed`` (contiguous,
        sizes differing by at most one; empty when there are fewer bits than groups)."""
        n, g = self.outputs, self.GROUPS
        edges = [n * k // g for k in range(g + 1)]
        return [range(edges[k], edges[k + 1]) for k in range(g)]

    def latency(self) -> int:
        """Cycles from ``from_block`` to ``observed``: the input register, then one per
        XOR stage of the widest group."""
        widest = max(len(r) for r in self.groups())
        stages = 0
        while widest > 1:
            widest = -(-widest // self.FAN_IN)
            stages += 1
        return 1 + stages

    def elaborate(self, platform):
        m = Module()
        lfsr = Signal(32, init=LFSR_SEED)
        m.d.sync += lfsr.eq((lfsr >> 1) ^ Mux(lfsr[0], Const(LFSR_TAPS, 32), 0))
        shift = Signal(max(self.inputs, 32))
        m.d.sync += shift.eq(Cat(lfsr, shift[:-32]) if len(shift) > 32 else lfsr)
        # The block reads a register that loads the shift register when the LFSR's low bit is
        # set, not the shift register itself: an input register of the block would otherwise
        # have the same D as the next shift stage, and synthesis would merge the two
        # (MR-FLOW-023 counts). The enable keeps them apart without a LUT a bit (the XOR of
        # two neighbours it replaces took 811 LUT4s around the whole engine).
        held = Signal(self.inputs)
        with m.If(lfsr[0]):
            m.d.sync += held.eq(shift[:self.inputs])
        m.d.comb += self.to_block.eq(held)
        if not self.observe:
            return m
        captured = Signal(self.outputs)
        m.d.sync += captured.eq(self.from_block)
        reduced = []
        for k, bits in enumerate(self.groups()):
            level = [captured[i] for i in bits]
            stage = 0
            while len(level) > 1:
                nxt = []
                for j in range(0, len(level), self.FAN_IN):
                    r = Signal(name=f"xor_g{k}_s{stage}_{j // self.FAN_IN}")
                    m.d.sync += r.eq(Cat(*level[j:j + self.FAN_IN]).xor())
                    nxt.append(r)
                level, stage = nxt, stage + 1
            reduced.append(level[0] if level else Const(0, 1))
        # Groups narrower than the widest are delayed to the same latency, so that
        # ``observed`` is one cycle's outputs (the behaviour tests/test_build.py checks).
        total = self.latency() - 1
        for k, bits in enumerate(self.groups()):
            depth, n = 0, len(bits)
            while n > 1:
                n, depth = -(-n // self.FAN_IN), depth + 1
            value = reduced[k]
            for d in range(total - depth):
                r = Signal(name=f"xor_g{k}_delay{d}")
                m.d.sync += r.eq(value)
                value = r
            m.d.comb += self.observed[k].eq(value)
        return m


class BoardTop(Elaboratable):
    """The board's top module: ``clk_in`` (the oscillator), ``rst_n`` (active-low reset
    button), ``led`` (8 active-low LEDs); see the module docstring for what it does.

    ``block``: the block's Verilog module name; ``ports``: :func:`block_ports` of it;
    ``pll_module``: the PLL's Verilog module (ports ``clkin``, ``clkout0``, ``locked``, as
    ``ecppll`` writes it), or ``None`` to clock the core from ``clk_in`` directly;
    ``global_reset``: the block's reset through a ``DCCA`` (MR-FLOW-042), or (the default)
    straight from the reset synchroniser.
    """
    LEDS = 8

    def __init__(self, block: str, ports: list[tuple[str, int, str]], *,
                 pll_module: str | None = "board_pll", heartbeat_bits: int = 27,
                 observe: bool = True, global_reset: bool = False):
        self.block, self.ports, self.pll_module = block, list(ports), pll_module
        self.global_reset = global_reset
        self.heartbeat_bits = heartbeat_bits
        self.clk_in = Signal()
        self.rst_n = Signal()
        self.led = Signal(self.LEDS)
        ins = sum(w for _, w, d in self.ports if d == "i")
        outs = sum(w for _, w, d in self.ports if d == "o")
        self.harness = Harness(ins, outs, observe=observe)

    def elaborate(self, platform):
        m = Module()
        m.domains.sync = ClockDomain("sync")
        locked = Signal()
        if self.pll_module is not None:
            core_clk = Signal()
            m.submodules.pll = Instance(self.pll_module, i_clkin=self.clk_in,
                                        o_clkout0=core_clk, o_locked=locked)
            m.d.comb += ClockSignal("sync").eq(core_clk)
        else:
            m.d.comb += [ClockSignal("sync").eq(self.clk_in), locked.eq(1)]
        m.submodules.reset_sync = ResetSynchronizer(~self.rst_n | ~locked, domain="sync")
        m.submodules.harness = h = self.harness
        block_rst = ResetSignal("sync")
        if self.global_reset:
            # MR-FLOW-042: nextpnr-ecp5 routes a DCCA's output on a global network, to fabric
            # pins (LSR) as well as clocks; it promotes only clocks by itself
            block_rst = Signal()
            m.submodules.reset_global = Instance("DCCA", i_CLKI=ResetSignal("sync"), i_CE=Const(1, 1),
                                                 o_CLKO=block_rst)
        kwargs = {"i_clk": ClockSignal("sync"), "i_rst": block_rst}
        at_in = at_out = 0
        for name, width, direction in self.ports:
            if direction == "i":
                kwargs[f"i_{name}"] = h.to_block[at_in:at_in + width]
                at_in += width
            else:
                kwargs[f"o_{name}"] = h.from_block[at_out:at_out + width]
                at_out += width
        m.submodules.block = Instance(self.block, **kwargs)
        heartbeat = Signal(self.heartbeat_bits)
        m.d.sync += heartbeat.eq(heartbeat + 1)
        # Active-low LEDs: a lit LED is a 1 above.
        m.d.comb += self.led.eq(~Cat(heartbeat[-1], locked, h.observed))
        return m
