"""The payload DMA's one verification stack, simulator-independent part (MR-DMR-*).

* :class:`Cmd`: one read command (``bad``: it reads the host memory's error window, whose
  bursts are answered SLVERR or DECERR with junk data);
* traffic: :func:`directed_cases` (every lane offset, 4 KiB and burst boundaries, zero and
  maximum lengths), :func:`random_cases`, :func:`stream_cases` (back-to-back commands of one
  size, for line rate);
* :class:`HostMemory`: an AXI4 read slave over a byte image: random ``arready``, R beats in
  order after a random latency per burst with random gaps, every burst checked against the
  AXI4 rules (4 KiB, ``arlen``, ``arsize``, INCR, ID); ``rlast`` on each burst's last beat;
* :class:`Driver`: the ``s_cmd`` source with idle cycles, random ``m_data`` and ``m_done``
  backpressure, and the host memory, cycle by cycle from one seed;
* :func:`check`: the results against the rules (bursts, payload beats, done records in order
  with their error bit, each after its command's last R beat).
"""
from __future__ import annotations

import collections
import random
from dataclasses import dataclass

from .dma_read import (AXI_4K, INCR, MAX_BURST, RESP_DECERR, RESP_OKAY, RESP_SLVERR,
                       cmd_layout, done_layout, lane_keep, out_beats, pack, payload_layout,
                       r_beats, read_bursts, rotl, unpack)
from .dma_write_cases import (BASE, Layout, directed_specs, place, random_specs,  # noqa: F401
                              stream_specs)
from .driver import CounterReadout, run_alone

#: MR-DMR-044: R latencies the random runs draw from (cycles from AR taken to the first beat).
LATENCY = (1, 300)


@dataclass(frozen=True)
class Cmd:
    conn: int
    addr: int
    length: int
    bad: bool = False
    name: str = ""
    lane: int = 0               # MR-TX-480: the beats' rotation (with ``rotate``)


def _cmd(rng, conn, addr, length, bad, name):
    return Cmd(conn, addr, length, bad, name)


def directed_cases(width, conns=256, *, seed=0, max_burst=MAX_BURST):
    """MR-DMR-010..013, MR-DMR-020..022: the placement DMA's directed commands
    (:func:`~metaroce.models.dma_write_cases.directed_specs`) with two beats minus the lane (no
    spill) and zero lengths back to back added. Returns ``(layout, cmds)``."""
    size, specs = directed_specs(width, max_burst, read=True)
    lay = Layout(size)
    return lay, place(random.Random(seed), lay, specs, conns, make=_cmd)


def random_cases(width, n, conns=256, *, seed=0, bad_every=7):
    """MR-DMR-*: ``n`` commands of random lengths (0 to 9,000 bytes, most under 2 KiB) at
    random offsets; every ``bad_every``-th one in the error window."""
    rng = random.Random(seed)
    size, specs = random_specs(rng, width, n)
    lay = Layout(size)
    return lay, place(rng, lay, specs, conns, bad_every, make=_cmd)


def with_lanes(cmds, seed=0):
    """MR-TX-480: ``cmds`` each given a random ``lane`` (0..63: every width's lanes and more)."""
    import dataclasses
    rng = random.Random(seed ^ 0x1A7E)
    return [dataclasses.replace(c, lane=rng.randrange(64)) for c in cmds]


def stream_cases(width, n, length, *, offset=0, conns=256, seed=0):
    """``n`` back-to-back commands of ``length`` bytes, each starting ``offset`` bytes into a
    beat (MR-DMR-042: line rate)."""
    size, specs = stream_specs(width, n, length, offset)
    lay = Layout(size)
    return lay, place(random.Random(seed), lay, specs, conns, make=_cmd)


class HostMemory:
    """An AXI4 read slave over a byte image of both windows (MR-DMR-044): ``arready`` low with
    probability ``p_bp``; a burst's first R beat is offered ``latency`` cycles (random in the
    range) after its AR, never before the previous burst's beats; then its beats in order,
    each held back a cycle with probability ``p_gap`` (once offered, a beat stays until
    taken). Bursts in the error window are answered SLVERR or DECERR with random data.
    ``image``: the good window's first bytes (default: random bytes in both windows).
    ``passive``: another slave (cocotbext-axi's ``AxiRamRead``) drives the handshakes; this one
    only watches the bus and keeps the same records."""

    def __init__(self, lay: Layout, width, rng, *, p_bp=0.3, p_gap=0.3, latency=LATENCY,
                 max_burst=MAX_BURST, axi_id=0, passive=False, noise=False, image=None):
        self.passive = passive
        self.noise = noise              # MR-DMR-031: wrong rid and rlast change nothing
        self.lay, self.nb, self.rng = lay, width // 8, rng
        self.p_bp, self.p_gap, self.latency = p_bp, p_gap, latency
        self.max_burst, self.axi_id = max_burst, axi_id
        if image is None:
            init = random.Random(7)
            self.image = bytes(init.getrandbits(8) for _ in range(2 * lay.size))
        else:                           # the good window's bytes given, the rest zero
            self.image = bytes(image) + bytes(2 * lay.size - len(image))
        self.beats = collections.deque()    # (release cycle, rdata, rresp, rlast)
        self.bursts = []                    # (araddr, arlen) in order
        self.r_cycles = []
        self.last_release = 0
        self.offered = False

    def read(self, addr, n):
        off = addr - self.lay.base
        assert 0 <= off and off + n <= len(self.image), f"read outside the host memory at {addr:#x}"
        return self.image[off:off + n]

    def inputs(self, inp, cycle):
        inp["m_axi__arready"] = int(self.rng.random() >= self.p_bp)
        if self.beats and self.beats[0][0] <= cycle and (self.offered or self.rng.random() >= self.p_gap):
            _, rdata, rresp, rlast = self.beats[0]
            self.offered = True
            inp.update({"m_axi__rvalid": 1, "m_axi__rdata": rdata, "m_axi__rresp": rresp,
                        "m_axi__rlast": rlast ^ (self.noise and self.rng.random() < 0.5),
                        "m_axi__rid": self.rng.randrange(16) if self.noise else self.axi_id})
        else:
            inp.update({"m_axi__rvalid": 0, "m_axi__rdata": 0, "m_axi__rresp": 0,
                        "m_axi__rlast": 0, "m_axi__rid": 0})

    def observe(self, inp, out, cycle):
        if out["m_axi__arvalid"] and inp["m_axi__arready"]:
            self._burst((out["m_axi__araddr"], out["m_axi__arlen"], out["m_axi__arsize"],
                         out["m_axi__arburst"], out["m_axi__arid"]), cycle)
        if inp["m_axi__rvalid"] and out["m_axi__rready"]:
            if not self.passive:
                self.beats.popleft()
                self.offered = False
            self.r_cycles.append(cycle)

    def _burst(self, ar, cycle):
        addr, arlen, size, burst, arid = ar
        nb = self.nb
        assert burst == INCR and size == (nb - 1).bit_length() and arid == self.axi_id, ar
        assert arlen < self.max_burst, f"burst of {arlen + 1} beats > {self.max_burst}"
        first = addr - addr % nb
        assert first // AXI_4K == (first + (arlen + 1) * nb - 1) // AXI_4K, f"{addr:#x} crosses 4 KiB"
        self.bursts.append((addr, arlen))
        if self.passive:
            return
        bad = self.lay.in_bad(addr)
        release = max(self.last_release, cycle + self.rng.randint(*self.latency))
        self.last_release = release
        for k in range(arlen + 1):
            if bad:
                rdata, rresp = self.rng.getrandbits(8 * nb), self.rng.choice([RESP_SLVERR, RESP_DECERR])
            else:
                rdata, rresp = int.from_bytes(self.read(first + k * nb, nb), "little"), RESP_OKAY
            self.beats.append((release, rdata, rresp, int(k == arlen)))

    @property
    def idle(self):
        return not self.beats


class Driver(CounterReadout):
    """The ``s_cmd`` source (idle with probability ``p_idle``), ``m_data.ready`` and
    ``m_done.ready`` low with probability ``p_bp`` each, and a :class:`HostMemory`
    (``p_axi``: its ``arready`` backpressure and R gaps; ``passive``: it only watches).
    Results in ``res``: ``beats`` (``(data, keep, last)`` taken on ``m_data``), ``done``
    (flat records), ``done_cycles``, ``beat_cycles``, ``cmd_taken``, ``ar_cycles``,
    ``cycles``."""

    def __init__(self, width, lay, cmds, *, conns=256, seed=0, p_idle=0.2, p_bp=0.3, p_axi=0.3,
                 latency=LATENCY, max_burst=MAX_BURST, axi_id=0, passive=False, noise=False,
                 rotate=False):
        self.width, self.nb = width, width // 8
        self.rng = random.Random(seed)
        self.p_idle, self.p_bp = p_idle, p_bp
        self.rotate = bool(rotate)              # MR-TX-480: the commands carry their lane
        self.cmd = cmd_layout(conns, lane=self.rotate)
        self.beat = payload_layout(width)
        self.cmds = list(cmds)
        self.mem = HostMemory(lay, width, random.Random(seed + 1), p_bp=p_axi, p_gap=p_axi,
                              latency=latency, max_burst=max_burst, axi_id=axi_id,
                              passive=passive, noise=noise)
        self.i = 0
        self.cycle = 0
        self.n_counters = 0
        self.read_counters = False
        self.quiet_cycles = 3
        self.limit = 5000 + sum(c.length // self.nb + 4 for c in self.cmds) * (
            1 + int(10 * max(p_idle, p_bp, p_axi))) + 20 * len(self.cmds) + 10 * latency[1]
        self._readout_reset()
        self.res = {"beats": [], "done": [], "done_cycles": [], "beat_cycles": [],
                    "cmd_taken": [], "ar_cycles": [], "cycles": 0, "counters": None}

    @property
    def sent_all(self):
        return self.i >= len(self.cmds)

    def _stuck(self):
        return (f"(commands taken {self.i}/{len(self.cmds)}, beats {len(self.res['beats'])}, "
                f"done {len(self.res['done'])})")

    def inputs(self):
        rng = self.rng
        inp = {"s_cmd__valid": 0, "s_cmd__payload": 0}
        if self.i < len(self.cmds) and (self.p_idle == 0 or rng.random() >= self.p_idle):
            c = self.cmds[self.i]
            inp["s_cmd__valid"] = 1
            inp["s_cmd__payload"] = pack(self.cmd, {"conn": c.conn, "addr": c.addr,
                                                    "length": c.length,
                                                    **({"lane": c.lane} if self.rotate else {})})
        inp["m_data__ready"] = int(self.p_bp == 0 or rng.random() >= self.p_bp)
        inp["m_done__ready"] = int(self.p_bp == 0 or rng.random() >= self.p_bp)
        if not self.mem.passive:
            self.mem.inputs(inp, self.cycle)
        return inp

    def observe(self, inp, out):
        res, cyc = self.res, self.cycle
        if inp["s_cmd__valid"] and out["s_cmd__ready"]:
            self.i += 1
            res["cmd_taken"].append(cyc)
        if out["m_data__valid"] and inp["m_data__ready"]:
            b = unpack(self.beat, out["m_data__payload"])
            res["beats"].append((b["data"], b["keep"], b["last"]))
            res["beat_cycles"].append(cyc)
        if out["m_done__valid"] and inp["m_done__ready"]:
            res["done"].append(out["m_done__payload"])
            res["done_cycles"].append(cyc)
        if out["m_axi__arvalid"] and inp["m_axi__arready"]:
            res["ar_cycles"].append(cyc)
        self.mem.observe(inp, out, cyc)
        self.cycle += 1

    def busy_with(self, model_busy):
        return lambda: model_busy() or not self.mem.idle


def expected_beats(mem: HostMemory, cmds, nb, rotate=False):
    """MR-DMR-021: per command, the payload beats it must return (data from the image);
    MR-TX-480: with ``rotate``, each beat's data and keep rotated up by the command's lane."""
    if not rotate:
        return [out_beats(mem.read(c.addr, c.length), nb) for c in cmds]
    return [[(rotl(d, c.lane % nb, nb), lane_keep(k, c.lane, nb), last)
             for d, k, last in out_beats(mem.read(c.addr, c.length), nb)] for c in cmds]


def check(width, lay, cmds, drv: Driver, *, conns=256, max_burst=MAX_BURST, rotate=False):
    """The one checker (MR-DMR-010..013, MR-DMR-020..022, MR-DMR-030, MR-DMR-040..044): the
    bursts are the split rule's; the payload beats are each command's bytes packed from lane 0
    (``keep``, ``last``, zero lanes past the payload; data not compared for commands answered
    with an error; MR-TX-480: with ``rotate``, each beat's data and keep rotated up by its
    command's lane); one done record per command in order with its error bit, each after its
    command's last R beat."""
    nb = width // 8
    mem, res = drv.mem, drv.res
    want = [(b.addr, b.beats - 1) for c in cmds for b in read_bursts(c.addr, c.length, nb, max_burst)]
    assert mem.bursts == want, "bursts differ from the split rule"
    got = list(res["beats"])
    pos = 0
    for i, (c, exp) in enumerate(zip(cmds, expected_beats(mem, cmds, nb, rotate))):
        mine = got[pos:pos + len(exp)]
        pos += len(exp)
        if c.bad:
            mine = [(d & 0, k, last) for d, k, last in mine]
            exp = [(0, k, last) for _, k, last in exp]
        assert mine == exp, f"payload beats of command {i} ({c.name}: {c.addr:#x}+{c.length}) differ"
    assert pos == len(got), f"{len(got) - pos} payload beats more than the commands' ({pos})"
    done = done_layout(conns)
    recs = [unpack(done, v) for v in res["done"]]
    # a zero-length command reads nothing, so nothing can fail (MR-DMR-013)
    assert recs == [{"conn": c.conn, "length": c.length, "error": int(c.bad and c.length > 0)}
                    for c in cmds], \
        "done records differ (order, length or error)"
    n_r = 0
    for i, c in enumerate(cmds):
        n_r += r_beats(c.addr, c.length, nb)
        if n_r:
            assert res["done_cycles"][i] > mem.r_cycles[n_r - 1], \
                f"command {i} done before its last R beat"


def run_model(width, lay, cmds, *, conns=256, seed=0, max_burst=MAX_BURST, outstanding=256,
              check_outputs=True, rotate=False, **kw):
    """:class:`DmaReadCycleModel` alone through the :class:`Driver`; returns the driver."""
    from .dma_read import DmaReadCycleModel
    model = DmaReadCycleModel(width, conns, max_burst=max_burst, outstanding=outstanding,
                              rotate=rotate)
    drv = Driver(width, lay, cmds, conns=conns, seed=seed, max_burst=max_burst, rotate=rotate,
                 **kw)
    run_alone(model, drv, busy=drv.busy_with(model.busy))
    if check_outputs:
        check(width, lay, cmds, drv, conns=conns, max_burst=max_burst, rotate=rotate)
    return drv


__all__ = ["Cmd", "Layout", "directed_cases", "random_cases", "stream_cases", "with_lanes", "HostMemory",
           "Driver", "check", "expected_beats", "run_model", "BASE", "LATENCY"]
