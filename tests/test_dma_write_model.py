"""The placement DMA's rules (models/dma_write.py) on their own, and its cycle model through
the block's driver and checker (models/dma_write_cases.py), without the RTL."""
import random

import pytest

from metaroce.models import dma_write as dw
from metaroce.models import dma_write_cases as dc


def _commands(nb, max_burst, rng, n=400):
    bound = dw.boundary(nb, max_burst)
    for _ in range(n):
        base = rng.choice([0, bound * rng.randrange(1, 50), (1 << 64) - 3 * bound])
        addr = base + rng.randrange(2 * bound)
        length = rng.choice([0, 1, nb - 1, nb, nb + 1, rng.randrange(1, 3 * bound),
                             rng.randrange(1, 65536)])
        if addr + length > 1 << 64:
            length = (1 << 64) - addr
        yield addr, length


@pytest.mark.parametrize("width,max_burst", [(64, 256), (64, 4), (128, 32), (256, 256), (512, 256),
                                             (512, 1)])
def test_bursts_rule(width, max_burst):
    """MR-DMA-010..013: bursts cover the command in order, never cross the 4 KiB or max_burst
    boundary, have at most max_burst beats, end at the command's end or a boundary; a
    zero-length command is one one-beat burst."""
    nb = width // 8
    rng = random.Random(width + max_burst)
    bound = dw.boundary(nb, max_burst)
    assert bound <= dw.AXI_4K and bound // nb <= max_burst
    for addr, length in _commands(nb, max_burst, rng):
        bs = dw.bursts(addr, length, nb, max_burst)
        assert bs[-1].last and not any(b.last for b in bs[:-1])
        assert sum(b.nbytes for b in bs) == length
        a = addr
        for b in bs:
            assert b.addr == a % (1 << 64)
            first = b.addr - b.addr % nb
            end = b.addr + max(b.nbytes, 1)
            assert b.beats == -(-(end - first) // nb) <= max_burst
            assert first // bound == (first + b.beats * nb - 1) // bound          # no crossing
            assert first // dw.AXI_4K == (first + b.beats * nb - 1) // dw.AXI_4K
            if not b.last:
                assert (b.addr + b.nbytes) % bound == 0                           # ends at a boundary
            a += b.nbytes
        if length == 0:
            assert [(b.nbytes, b.beats) for b in bs] == [(0, 1)]


@pytest.mark.parametrize("width,max_burst", [(64, 256), (128, 8), (512, 256), (512, 2)])
def test_beats_and_realign(width, max_burst):
    """MR-DMA-020..022: the write beats carry every payload byte at its address's lane, strobes
    exactly the command's bytes, 0 elsewhere; input beat k is consumed by write beat k; wlast
    closes each burst of the split rule (the two rules agree beat for beat)."""
    nb = width // 8
    rng = random.Random(width * max_burst)
    for addr, length in _commands(nb, max_burst, rng, n=150):
        length = min(length, 5000)
        payload = bytes(rng.getrandbits(8) for _ in range(length))
        ins = []
        for i in range(0, length, nb):
            chunk = payload[i:i + nb]
            junk = (rng.getrandbits(8 * nb) << 8 * len(chunk)) & ((1 << 8 * nb) - 1)
            ins.append(int.from_bytes(chunk, "little") | junk)
        beats = dw.w_beats(addr, length, nb, max_burst)
        o = addr % nb
        held, image = 0, {}
        for k, b in enumerate(beats):
            assert b.src == (k if k < len(ins) else None)
            cur = ins[b.src] if b.src is not None else rng.getrandbits(8 * nb)
            word, rot = dw.realign(held, cur, o, b.strobe, nb)
            if b.src is not None:
                held = rot
            raw = word.to_bytes(nb, "little")
            for j in range(nb):
                if b.strobe >> j & 1:
                    image[addr - o + k * nb + j] = raw[j]
                else:
                    assert raw[j] == 0
        assert image == {addr + i: payload[i] for i in range(length)}
        assert len(beats) == max(1, -(-(o + length) // nb))
        assert len([b for b in beats if b.src is not None]) == len(ins)
        per_burst = [b.beats for b in dw.bursts(addr, length, nb, max_burst)]
        ends = [k for k, b in enumerate(beats) if b.last]
        assert ends == [sum(per_burst[:i + 1]) - 1 for i in range(len(per_burst))]


def test_bad_parameters():
    """MR-DMA-001."""
    for kw in ({"max_burst": 0}, {"max_burst": 6}, {"outstanding": 5000}, {"id_width": 0},
               {"axi_id": -1}, {"conns": 3}):
        with pytest.raises(ValueError):
            dw.DmaWriteCycleModel(64, **kw)
    with pytest.raises(ValueError):
        dw.DmaWriteCycleModel(32)


@pytest.mark.parametrize("width", [64, 128, 256, 512])
def test_model_directed_and_random(width):
    """MR-DMA-030, MR-DMA-043/044: the cycle model alone through the driver: memory image, bursts,
    done records (errors included) and their order after the B responses, with backpressure,
    idle inputs, B latency up to 300 cycles and 4 outstanding slots."""
    lay, cmds = dc.directed_cases(width, seed=width)
    dc.run_model(width, lay, cmds, seed=1)
    lay, cmds = dc.random_cases(width, 80, seed=width)
    dc.run_model(width, lay, cmds, seed=2, outstanding=4, p_idle=0.4, p_bp=0.5, p_axi=0.5)


def test_model_outstanding_covers_latency():
    """MR-DMA-042/043: one-beat commands at 512 bits with 200 cycles of B latency go at one per
    cycle with 256 outstanding slots, and are held back with 16."""
    lay, cmds = dc.stream_cases(512, 600, 64)
    full = dc.run_model(512, lay, cmds, p_idle=0, p_bp=0, p_axi=0, latency=(200, 200))
    w = full.res["w_cycles"]
    assert w[-1] - w[0] + 1 == len(w) == 600
    few = dc.run_model(512, lay, cmds, outstanding=16, p_idle=0, p_bp=0, p_axi=0, latency=(200, 200))
    w = few.res["w_cycles"]
    assert (w[-1] - w[0] + 1) > 5 * len(w)


def test_checker_catches_a_wrong_byte():
    """MR-DMA-030: the checker fails when one placed byte differs (the check can fail)."""
    lay, cmds = dc.directed_cases(64)
    drv = dc.run_model(64, lay, cmds, check_outputs=False)
    drv.mem.image[cmds[3].addr - lay.base] ^= 1
    with pytest.raises(AssertionError, match="image"):
        dc.check(64, lay, cmds, drv)
