"""The payload DMA's rules (models/dma_read.py) on their own, and its cycle model through the
block's driver and checker (models/dma_read_cases.py), without the RTL."""
import random

import pytest

from metaroce.models import dma_read as dr
from metaroce.models import dma_read_cases as dc
from metaroce.models import dma_write as dw


@pytest.mark.parametrize("width,max_burst", [(64, 256), (128, 4), (512, 256), (512, 1)])
def test_read_bursts_rule(width, max_burst):
    """MR-DMR-010..013: the read bursts are the placement DMA's split (4 KiB, max_burst, first
    byte's address, beats from its first to its last byte), none for length 0; the R beats of
    a command are its bursts' beats, the bus words holding its bytes."""
    nb = width // 8
    rng = random.Random(width * max_burst)
    for _ in range(300):
        addr = rng.choice([0, (1 << 64) - 3 * 4096, rng.randrange(1 << 40)]) + rng.randrange(8192)
        length = rng.choice([0, 1, nb - 1, nb, nb + 1, rng.randrange(1, 65536)])
        length = min(length, (1 << 64) - addr)
        bs = dr.read_bursts(addr, length, nb, max_burst)
        if length == 0:
            assert bs == [] and dr.r_beats(addr, length, nb) == 0
            continue
        assert bs == dw.bursts(addr, length, nb, max_burst)
        assert sum(b.beats for b in bs) == dr.r_beats(addr, length, nb)
        first = addr - addr % nb
        assert dr.r_beats(addr, length, nb) == (addr + length - 1) // nb - first // nb + 1


@pytest.mark.parametrize("width", [64, 128, 256, 512])
def test_realign_rule(width):
    """MR-DMR-020..022: R beats realigned by the kept-beat rule (payload beat k from R beats k
    and k + 1, a flush from the kept beat alone when the last payload beat lies in the last R
    beat) give the command's bytes packed from lane 0, keep exactly its lanes, 0 elsewhere."""
    nb = width // 8
    rng = random.Random(width)
    for _ in range(200):
        o = rng.randrange(nb)
        length = rng.choice([1, nb - o, nb - o + 1, nb, 2 * nb - o, rng.randrange(1, 6 * nb)])
        mem = bytes(rng.getrandbits(8) for _ in range(8 * nb))
        addr = o + nb
        payload = mem[addr:addr + length]
        n_r = dr.r_beats(addr, length, nb)
        rs = [int.from_bytes(mem[nb + k * nb:2 * nb + k * nb], "little") for k in range(n_r)]
        n_out = -(-length // nb)
        spill = n_r == n_out + 1
        held, got = 0, []
        for k, r in enumerate(rs):
            final = spill and k == n_r - 1
            keep = dr.keep_mask((length - 1) % nb + 1) if final else dr.keep_mask(nb)
            word, held_next = dr.realign(held, r, o, keep, nb)
            if k:
                got.append((word, keep, int(final)))
            held = held_next
        if not spill:
            keep = dr.keep_mask((length - 1) % nb + 1)
            got.append((dr.realign(held, rng.getrandbits(8 * nb), o, keep, nb, flush=True)[0], keep, 1))
        assert got == dr.out_beats(payload, nb)
        assert n_r in (n_out, n_out + 1)


def test_bad_parameters():
    """MR-DMR-001."""
    for kw in ({"max_burst": 0}, {"max_burst": 6}, {"outstanding": 5000}, {"outstanding": 1},
               {"id_width": 0}, {"axi_id": -1}, {"conns": 3}):
        with pytest.raises(ValueError):
            dr.DmaReadCycleModel(64, **kw)
    with pytest.raises(ValueError):
        dr.DmaReadCycleModel(32)


@pytest.mark.parametrize("width", [64, 128, 256, 512])
def test_model_directed_and_random(width):
    """MR-DMR-030/031, MR-DMR-043/044: the cycle model alone through the driver: bursts,
    payload beats, done records (errors included) in order after their last R beat, with
    backpressure, idle inputs, R latency up to 300 cycles, R gaps, wrong rid/rlast and 4
    commands outstanding."""
    lay, cmds = dc.directed_cases(width, seed=width)
    dc.run_model(width, lay, cmds, seed=1)
    lay, cmds = dc.random_cases(width, 80, seed=width)
    dc.run_model(width, lay, cmds, seed=2, outstanding=4, p_idle=0.4, p_bp=0.5, p_axi=0.5,
                 noise=True)


def test_model_outstanding_covers_latency():
    """MR-DMR-042/043: one-beat commands at 512 bits with 200 cycles of R latency go at one R
    beat and one payload beat per cycle with 256 commands outstanding, and are held back
    with 16."""
    lay, cmds = dc.stream_cases(512, 600, 64)
    full = dc.run_model(512, lay, cmds, p_idle=0, p_bp=0, p_axi=0, latency=(200, 200))
    r, b = full.mem.r_cycles, full.res["beat_cycles"]
    assert r[-1] - r[0] + 1 == len(r) == 600 and b[-1] - b[0] + 1 == len(b) == 600
    few = dc.run_model(512, lay, cmds, outstanding=16, p_idle=0, p_bp=0, p_axi=0, latency=(200, 200))
    r = few.mem.r_cycles
    assert (r[-1] - r[0] + 1) > 5 * len(r)


def test_checker_catches_a_wrong_byte():
    """MR-DMR-021: the checker fails when one payload byte differs (the check can fail)."""
    lay, cmds = dc.directed_cases(64)
    drv = dc.run_model(64, lay, cmds, check_outputs=False)
    d, k, last = drv.res["beats"][5]
    drv.res["beats"][5] = (d ^ 1, k, last)
    with pytest.raises(AssertionError, match="payload beats"):
        dc.check(64, lay, cmds, drv)


def test_latency():
    """MR-DMR-045: first AR 6 cycles after its command is taken; a payload beat on m_data 2
    cycles after the R beat that completes it, 3 for a flushed last beat."""
    lay, cmds = dc.stream_cases(512, 20, 64)
    drv = dc.run_model(512, lay, cmds, p_idle=0, p_bp=0, p_axi=0, latency=(1, 1))
    res, r = drv.res, drv.mem.r_cycles
    assert res["ar_cycles"][0] - res["cmd_taken"][0] == 6
    assert res["beat_cycles"] == [c + 3 for c in r]          # one-beat commands: all flushes
    lay, cmds = dc.stream_cases(64, 1, 64, offset=5)          # 8 payload beats from 9 R beats
    drv = dc.run_model(64, lay, cmds, p_idle=0, p_bp=0, p_axi=0, latency=(1, 1))
    assert drv.res["beat_cycles"] == [c + 2 for c in drv.mem.r_cycles[1:]]
