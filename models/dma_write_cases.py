"""The placement DMA's one verification stack, simulator-independent part (MR-DMA-*).

* :class:`Cmd`: one placement command and its payload bytes (``bad``: it lands in the host
  memory's error window, whose bursts are answered SLVERR or DECERR and write nothing);
* traffic: :func:`directed_cases` (every lane offset, 4 KiB and burst boundaries, zero and
  maximum lengths), :func:`random_cases`, :func:`stream_cases` (back-to-back commands of one
  size, for line rate);
* :class:`HostMemory`: an AXI4 write slave over a byte image, random ``awready``/``wready``,
  W beats taken before their AW, B responses in order after a random latency, every burst
  checked against the AXI4 rules (4 KiB, ``awlen``, ``awsize``, INCR, ``wlast``);
* :class:`Driver`: ``s_place`` and ``s_data`` sources with idle cycles, random ``m_done``
  backpressure, and the host memory, cycle by cycle from one seed;
* :func:`check`: the results against the rules (memory image, bytes written once, bursts,
  done records in order and after their last B).
"""
from __future__ import annotations

import collections
import random
from dataclasses import dataclass

from .driver import CounterReadout, run_alone
from .dma_write import (AXI_4K, INCR, MAX_BURST, RESP_DECERR, RESP_OKAY, RESP_SLVERR, apply,
                        boundary, bursts, done_layout, pack, payload_layout, place_layout,
                        unpack)

#: Host memory windows: placed bytes land in [BASE, BASE + size); the error window follows.
BASE = 0x0000_7F12_3450_0000
#: MR-DMA-044: B latencies the random runs draw from (cycles after a burst's last W beat).
LATENCY = (1, 300)


@dataclass(frozen=True)
class Cmd:
    conn: int
    addr: int
    payload: bytes
    bad: bool = False
    name: str = ""


class Layout:
    """Where a run's commands go: the good window and the error window, both ``size`` bytes."""

    def __init__(self, size):
        self.size = size
        self.base = BASE
        self.bad_base = BASE + size

    def in_bad(self, addr):
        return self.bad_base <= addr < self.bad_base + self.size


def _fill(rng, n):
    return bytes(rng.getrandbits(8) for _ in range(n))


def _cmd(rng, conn, addr, length, bad, name):
    return Cmd(conn, addr, _fill(rng, length), bad, name)


def place(rng, lay, specs, conns, bad_every=0, make=_cmd):
    """Commands at increasing addresses (never overlapping) from ``(offset, length)`` specs:
    ``offset`` is how far after the previous command's end in its window this one starts;
    every ``bad_every``-th one in the error window. ``make(rng, conn, addr, length, bad, name)``
    builds a command (the read DMA's carry no payload). Shared with models/dma_read_cases.py."""
    out = []
    good = bad = 0
    for i, (gap, length) in enumerate(specs):
        is_bad = bool(bad_every) and i % bad_every == bad_every - 1
        at = bad if is_bad else good
        addr = (lay.bad_base if is_bad else lay.base) + at + gap
        if is_bad:
            bad = at + gap + length
        else:
            good = at + gap + length
        out.append(make(rng, rng.randrange(conns), addr, length, is_bad, f"c{i}"))
    assert max(good, bad) <= lay.size, "layout too small for the commands"
    return out


def directed_specs(width, max_burst=MAX_BURST, *, read=False):
    """The directed commands' ``(offset, length)`` specs and the window they need: every start
    lane with lengths 1, to the end of the beat, one past it and two beats (``read``: also two
    beats minus the lane, and zero lengths back to back, MR-DMR-010..013); commands that end on
    and cross a 4 KiB and a burst boundary; zero length; the longest command (65,535 bytes)
    from an odd address."""
    nb = width // 8
    bound = boundary(nb, max_burst)
    specs = []
    pos = 0

    def at(offset_mod, length, modulus=nb):
        nonlocal pos
        gap = (offset_mod - pos) % modulus
        specs.append((gap, length))
        pos += gap + length

    for o in range(nb):
        for length in (1, nb - o, nb - o + 1, 2 * nb, 2 * nb - o)[:5 if read else 4]:
            at(o, length)
    for b in sorted({bound, AXI_4K}):
        at(b - 3, 3, b)              # ends on the boundary
        at(b - 5, 11, b)             # crosses it
        at(0, b, b)                  # exactly one block
        at(7, 2 * b + 1, b)          # three bursts
    at(5, 0)
    if read:
        at(0, 0)
        at(1, 1)
    at(3, 65535)
    return pos + AXI_4K, specs


def random_specs(rng, width, n):
    """``n`` random ``(offset, length)`` specs (lengths 0 to 9,000 bytes, most under 2 KiB) and
    the window they need."""
    specs = []
    total = 0
    for _ in range(n):
        r = rng.random()
        length = (0 if r < 0.02 else rng.randint(1, 2 * width // 8) if r < 0.4
                  else rng.randint(1, 2048) if r < 0.9 else rng.randint(2048, 9000))
        gap = rng.choice([0, 0, rng.randrange(64), rng.randrange(AXI_4K)])
        specs.append((gap, length))
        total += gap + length
    return total + AXI_4K, specs


def stream_specs(width, n, length, offset=0):
    """``n`` back-to-back commands of ``length`` bytes, each starting ``offset`` bytes into a
    beat, and the window they need."""
    nb = width // 8
    stride = -(-(offset + length) // nb) * nb
    return n * stride + AXI_4K, [(offset if i == 0 else stride - length, length) for i in range(n)]


def directed_cases(width, conns=256, *, seed=0, max_burst=MAX_BURST):
    """MR-DMA-010..013, MR-DMA-020..022: :func:`directed_specs`. Returns ``(layout, cmds)``."""
    size, specs = directed_specs(width, max_burst)
    lay = Layout(size)
    return lay, place(random.Random(seed), lay, specs, conns)


def random_cases(width, n, conns=256, *, seed=0, bad_every=7):
    """MR-DMA-*: ``n`` commands of :func:`random_specs` at random offsets; every
    ``bad_every``-th one in the error window."""
    rng = random.Random(seed)
    size, specs = random_specs(rng, width, n)
    lay = Layout(size)
    return lay, place(rng, lay, specs, conns, bad_every)


def stream_cases(width, n, length, *, offset=0, conns=256, seed=0):
    """``n`` back-to-back commands of ``length`` bytes, each starting ``offset`` bytes into a
    beat (MR-DMA-042: line rate)."""
    size, specs = stream_specs(width, n, length, offset)
    lay = Layout(size)
    return lay, place(random.Random(seed), lay, specs, conns)


class HostMemory:
    """An AXI4 write slave over a byte image (MR-DMA-044): ``awready``/``wready`` low with
    probability ``p_bp``; W beats are taken whether or not their AW came; a burst completes
    once its AW and all its beats are in, and its B response is offered ``latency`` cycles
    later (random in the range), in order. Bursts in the error window write nothing and are
    answered SLVERR or DECERR. ``passive``: another slave (cocotbext-axi's ``AxiRam``) drives
    the handshakes; this one only watches the bus and keeps the same records."""

    def __init__(self, lay: Layout, width, rng, *, p_bp=0.3, latency=LATENCY, max_burst=MAX_BURST,
                 axi_id=0, passive=False, bid_noise=False):
        self.passive = passive
        self.bid_noise = bid_noise      # MR-DMA-031: a wrong bid changes nothing
        self.lay, self.nb, self.rng = lay, width // 8, rng
        self.p_bp, self.latency = p_bp, latency
        self.max_burst, self.axi_id = max_burst, axi_id
        init = random.Random(7)
        self.image = bytearray(init.getrandbits(8) for _ in range(lay.size))
        self.initial = bytes(self.image)
        self.count = bytearray(lay.size)    # writes per byte
        self.aw = collections.deque()
        self.w = collections.deque()
        self.b = collections.deque()        # (release cycle, bresp)
        self.bursts = []                    # (awaddr, awlen) in order
        self.b_cycles = []
        self.last_release = 0

    def inputs(self, inp, cycle):
        inp["m_axi__awready"] = int(self.rng.random() >= self.p_bp)
        inp["m_axi__wready"] = int(self.rng.random() >= self.p_bp)
        if self.b and self.b[0][0] <= cycle:
            inp.update({"m_axi__bvalid": 1, "m_axi__bresp": self.b[0][1],
                        "m_axi__bid": self.rng.randrange(16) if self.bid_noise else self.axi_id})
        else:
            inp.update({"m_axi__bvalid": 0, "m_axi__bresp": 0, "m_axi__bid": 0})

    def observe(self, inp, out, cycle):
        if out["m_axi__awvalid"] and inp["m_axi__awready"]:
            a = (out["m_axi__awaddr"], out["m_axi__awlen"], out["m_axi__awsize"],
                 out["m_axi__awburst"], out["m_axi__awid"])
            self.aw.append(a)
            self.bursts.append(a[:2])
        if out["m_axi__wvalid"] and inp["m_axi__wready"]:
            self.w.append((out["m_axi__wdata"], out["m_axi__wstrb"], out["m_axi__wlast"]))
        if inp["m_axi__bvalid"] and out["m_axi__bready"]:
            if not self.passive:
                self.b.popleft()
            self.b_cycles.append(cycle)
        while self.aw and len(self.w) > self.aw[0][1]:
            self._burst(self.aw.popleft(), cycle)

    def _burst(self, aw, cycle):
        addr, awlen, size, burst, awid = aw
        nb = self.nb
        beats = [self.w.popleft() for _ in range(awlen + 1)]
        assert burst == INCR and size == (nb - 1).bit_length() and awid == self.axi_id, aw
        assert awlen < self.max_burst, f"burst of {awlen + 1} beats > {self.max_burst}"
        first = addr - addr % nb
        assert first // AXI_4K == (first + (awlen + 1) * nb - 1) // AXI_4K, f"{addr:#x} crosses 4 KiB"
        assert [b[2] for b in beats] == [0] * awlen + [1], "wlast not on the burst's last beat"
        bad = self.lay.in_bad(addr)
        for k, (wdata, strb, _) in enumerate(beats):
            raw = wdata.to_bytes(nb, "little")
            for j in range(nb):
                if not strb >> j & 1:
                    assert raw[j] == 0, "a lane without strobe carries data"
                    continue
                a = first + k * nb + j
                if bad:
                    assert self.lay.in_bad(a), f"an error-window burst writes {a:#x}"
                    continue
                off = a - self.lay.base
                assert 0 <= off < self.lay.size, f"write outside the host memory at {a:#x}"
                self.image[off] = raw[j]
                self.count[off] += 1
        if self.passive:
            return
        release = max(self.last_release, cycle + self.rng.randint(*self.latency))
        self.last_release = release
        self.b.append((release, self.rng.choice([RESP_SLVERR, RESP_DECERR]) if bad else RESP_OKAY))

    @property
    def idle(self):
        return not (self.aw or self.w or self.b)


class Driver(CounterReadout):
    """``s_place`` and ``s_data`` sources (idle with probability ``p_idle``, each on its own),
    ``m_done.ready`` low with probability ``p_bp``, and a :class:`HostMemory` (MR-DMA-044;
    ``passive``: it only watches, another slave answers).
    Unused lanes of each last input beat carry junk, which must not reach memory. Results in
    ``res``: ``done`` (flat records) and ``done_cycles``, ``place_taken``, ``data_taken``,
    ``w_cycles``, ``aw_cycles``, ``cycles``."""

    def __init__(self, width, lay, cmds, *, conns=256, seed=0, p_idle=0.2, p_bp=0.3, p_axi=0.3,
                 latency=LATENCY, max_burst=MAX_BURST, axi_id=0, passive=False, bid_noise=False):
        self.width, self.nb = width, width // 8
        self.rng = random.Random(seed)
        self.p_idle, self.p_bp = p_idle, p_bp
        self.place = place_layout(conns)
        self.beat = payload_layout(width)
        self.cmds = list(cmds)
        self.mem = HostMemory(lay, width, random.Random(seed + 1), p_bp=p_axi, latency=latency,
                              max_burst=max_burst, axi_id=axi_id, passive=passive,
                              bid_noise=bid_noise)
        self.beats = collections.deque(b for c in self.cmds for b in self._beats_of(c.payload))
        self.i = 0
        self.cycle = 0
        self.n_counters = 0
        self.read_counters = False
        self.quiet_cycles = 3
        self.limit = 5000 + sum(len(c.payload) // self.nb + 4 for c in self.cmds) * (
            1 + int(10 * max(p_idle, p_bp, p_axi))) + 20 * len(self.cmds) + 10 * latency[1]
        self._readout_reset()
        self._place = self._data = None
        self.res = {"done": [], "done_cycles": [], "place_taken": [], "data_taken": [],
                    "w_cycles": [], "aw_cycles": [], "cycles": 0, "counters": None}

    def _beats_of(self, payload):
        nb = self.nb
        out = []
        for j in range(-(-len(payload) // nb)):
            chunk = payload[j * nb:(j + 1) * nb]
            junk = self.rng.getrandbits(8 * (nb - len(chunk))) << (8 * len(chunk))
            out.append(pack(self.beat, {"data": int.from_bytes(chunk, "little") | junk,
                                        "keep": (1 << len(chunk)) - 1,
                                        "last": int(j == -(-len(payload) // nb) - 1)}))
        return out

    @property
    def sent_all(self):
        return self.i >= len(self.cmds) and not self.beats

    def _stuck(self):
        return (f"(commands taken {self.i}/{len(self.cmds)}, beats left {len(self.beats)}, "
                f"done {len(self.res['done'])})")

    def inputs(self):
        rng = self.rng
        inp = {"s_place__valid": 0, "s_place__payload": 0, "s_data__valid": 0,
               "s_data__payload": 0}
        if self.i < len(self.cmds) and (self.p_idle == 0 or rng.random() >= self.p_idle):
            c = self.cmds[self.i]
            inp["s_place__valid"] = 1
            inp["s_place__payload"] = pack(self.place, {"conn": c.conn, "addr": c.addr,
                                                        "length": len(c.payload)})
        if self.beats and (self.p_idle == 0 or rng.random() >= self.p_idle):
            inp["s_data__valid"] = 1
            inp["s_data__payload"] = self.beats[0]
        inp["m_done__ready"] = int(rng.random() >= self.p_bp)
        if not self.mem.passive:
            self.mem.inputs(inp, self.cycle)
        return inp

    def observe(self, inp, out):
        res, cyc = self.res, self.cycle
        if inp["s_place__valid"] and out["s_place__ready"]:
            self.i += 1
            res["place_taken"].append(cyc)
        if inp["s_data__valid"] and out["s_data__ready"]:
            self.beats.popleft()
            res["data_taken"].append(cyc)
        if out["m_done__valid"] and inp["m_done__ready"]:
            res["done"].append(out["m_done__payload"])
            res["done_cycles"].append(cyc)
        if out["m_axi__wvalid"] and inp["m_axi__wready"]:
            res["w_cycles"].append(cyc)
        if out["m_axi__awvalid"] and inp["m_axi__awready"]:
            res["aw_cycles"].append(cyc)
        self.mem.observe(inp, out, cyc)
        self.cycle += 1

    def busy_with(self, model_busy):
        return lambda: model_busy() or not self.mem.idle


def expected_image(lay, initial, cmds):
    """MR-DMA-030: the host memory after every good command placed, in order."""
    img = bytearray(initial)
    for c in cmds:
        if not c.bad:
            apply(img, lay.base, c.addr, c.payload)
    return bytes(img)


def check(width, lay, cmds, drv: Driver, *, conns=256, max_burst=MAX_BURST):
    """The one checker (MR-DMA-010..013, MR-DMA-020..022, MR-DMA-030, MR-DMA-040..044): the
    bursts are the rule's, the memory image is the
    commands' bytes and nothing else, each placed byte was written once, one done record per
    command in order with its error flag, and each after its command's last B response."""
    nb = width // 8
    mem, res = drv.mem, drv.res
    want = []
    last_burst = []
    for c in cmds:
        for b in bursts(c.addr, len(c.payload), nb, max_burst):
            want.append((b.addr, b.beats - 1))
        last_burst.append(len(want) - 1)
    assert mem.bursts == want, "bursts differ from the split rule"
    assert bytes(mem.image) == expected_image(lay, mem.initial, cmds), "host memory image differs"
    count = bytearray(lay.size)
    for c in cmds:
        if not c.bad:
            off = c.addr - lay.base
            count[off:off + len(c.payload)] = b"\1" * len(c.payload)
    assert bytes(mem.count) == bytes(count), "a byte written other than exactly once"
    done = done_layout(conns)
    got = [unpack(done, v) for v in res["done"]]
    exp = [{"conn": c.conn, "length": len(c.payload), "error": int(c.bad)} for c in cmds]
    assert got == exp, "done records differ (order, length or error)"
    for i, cyc in enumerate(res["done_cycles"]):
        assert cyc > mem.b_cycles[last_burst[i]], f"command {i} done before its last B response"


def run_model(width, lay, cmds, *, conns=256, seed=0, max_burst=MAX_BURST, outstanding=256,
              check_outputs=True, **kw):
    """:class:`DmaWriteCycleModel` alone through the :class:`Driver`; returns the driver."""
    from .dma_write import DmaWriteCycleModel
    model = DmaWriteCycleModel(width, conns, max_burst=max_burst, outstanding=outstanding)
    drv = Driver(width, lay, cmds, conns=conns, seed=seed, max_burst=max_burst, **kw)
    run_alone(model, drv, busy=drv.busy_with(model.busy))
    if check_outputs:
        check(width, lay, cmds, drv, conns=conns, max_burst=max_burst)
    return drv


__all__ = ["Cmd", "Layout", "directed_cases", "random_cases", "stream_cases", "HostMemory",
           "Driver", "check", "expected_image", "run_model", "BASE", "LATENCY"]
