"""Seeded, reproducible fault models for fabric links (docs/spec/fabric.md, "Faults").

A :class:`Faults` object is attached to one :class:`~metaroce.sim.fabric.Link` and decides, for
every frame that crosses the link, whether it is lost, delayed (reordered), duplicated or
corrupted. Each link draws from its own ``random.Random`` seeded from ``(seed, link name)``, so a
run is reproducible and adding a fault to one link does not change the draws on another.
"""
from __future__ import annotations

import random
from dataclasses import dataclass, field

from metaroce.models import wire

#: Opcodes that carry data (loss with ``data_only`` applies to these only).
# the data direction: data packets and the sender announcement (MR-WIRE-084), which travels
# the data's way and is lost with it
DATA_OPS = frozenset(int(op) for op in wire.PAYLOAD_OPS) | {wire.MR_ANNOUNCE}


@dataclass
class GilbertElliott:
    """Two-state burst-loss channel: ``good`` and ``bad`` states with their own loss rates.

    Per frame the state moves good->bad with probability ``p_gb`` and bad->good with ``p_bg``;
    the frame is then lost with ``loss_good`` or ``loss_bad``. Mean burst length is ``1/p_bg``;
    stationary loss is ``(p_gb*loss_bad + p_bg*loss_good) / (p_gb + p_bg)``.
    """
    p_gb: float = 0.001
    p_bg: float = 0.2
    loss_good: float = 0.0
    loss_bad: float = 1.0

    def mean_loss(self):
        return (self.p_gb * self.loss_bad + self.p_bg * self.loss_good) / (self.p_gb + self.p_bg)


@dataclass
class Faults:
    """Fault probabilities for one link; all zero means a perfect link.

    ``loss``: independent loss probability. ``burst``: a :class:`GilbertElliott` channel (applied
    after ``loss``). ``data_only``: loss and bursts hit only data frames (ACKs/NAKs pass), which is
    how the ``loss`` benchmark defines loss. ``direction`` (``data``, ``ack`` or ``both``), when
    given, overrides ``data_only``: ``ack`` hits every frame without payload opcode (ACK, NAK,
    CNP), ``both`` every frame (MR-FAB-036). ``reorder``: probability that a frame is held back by
    an extra delay drawn uniformly from ``[0, reorder_delay]`` seconds, so later frames overtake
    it. ``jitter``: every frame gets an extra uniform ``[0, jitter]`` delay. ``duplicate``:
    probability of delivering a second copy. ``corrupt``: probability of flipping one random bit
    of the encoded frame (IP header onward); the receiving host decodes it and drops it with the
    decoder's reason when a check fails.
    """
    loss: float = 0.0
    burst: GilbertElliott | None = None
    data_only: bool = True
    reorder: float = 0.0
    reorder_delay: float = 0.0
    jitter: float = 0.0
    duplicate: float = 0.0
    corrupt: float = 0.0
    seed: int = 0
    direction: str | None = None
    _bad_state: bool = field(default=False, repr=False)

    def __post_init__(self):
        for name in ("loss", "reorder", "duplicate", "corrupt"):
            v = getattr(self, name)
            if not 0.0 <= v <= 1.0:
                raise ValueError(f"fault probability {name}={v} is not in [0, 1]")
        if self.reorder_delay < 0 or self.jitter < 0:
            raise ValueError("reorder_delay and jitter must be >= 0")
        if self.direction is None:
            self.direction = "data" if self.data_only else "both"
        elif self.direction not in ("data", "ack", "both"):
            raise ValueError(f"fault direction {self.direction!r} is not data, ack or both")
        else:
            self.data_only = self.direction == "data"
        if self.burst is not None:
            ge = self.burst
            for name in ("p_gb", "p_bg", "loss_good", "loss_bad"):
                v = getattr(ge, name)
                if not 0.0 <= v <= 1.0:
                    raise ValueError(f"Gilbert-Elliott {name}={v} is not in [0, 1]")
            if ge.p_gb + ge.p_bg == 0:
                raise ValueError("Gilbert-Elliott needs p_gb + p_bg > 0")

    def rng_for(self, link_name):
        """The link's own generator: depends only on the seed and the link's name."""
        return random.Random(f"{self.seed}:{link_name}")

    def active(self):
        return bool(self.loss or self.burst or self.reorder or self.jitter or self.duplicate
                    or self.corrupt)

    def lose(self, rng, opcode):
        """True when the frame is lost (independent loss, then the burst channel)."""
        d = self.direction
        if d != "both" and (opcode in DATA_OPS) != (d == "data"):
            return False
        if self.loss and rng.random() < self.loss:
            return True
        ge = self.burst
        if ge is not None:
            if self._bad_state:
                if rng.random() < ge.p_bg:
                    self._bad_state = False
            elif rng.random() < ge.p_gb:
                self._bad_state = True
            p = ge.loss_bad if self._bad_state else ge.loss_good
            if p and rng.random() < p:
                return True
        return False

    def extra_delay(self, rng):
        d = 0.0
        if self.jitter:
            d += rng.random() * self.jitter
        if self.reorder and rng.random() < self.reorder:
            d += rng.random() * self.reorder_delay
        return d
