"""How long a message takes: the latency shapes of ``[network]``, and rare long stalls.

Theory of operation
-------------------
The world draws each message's transit time when the message is sent, from the
network's own seeded stream (sim/world/simulation.py, ``Simulation._carry``). Today's worlds draw
it uniformly from ``latency = { min, max }``; real networks have tails: most messages
are fast and a few are very slow (a loaded replica, a congested link, a GC pause, a TCP
retransmit after a lost segment, 1-3 s). The contract's residual risks live in that
tail (docs/contract.md D7: a start delayed longer than the agent's 2 s age
margin right after an agent restart can run twice), so a risk estimate needs a tail
shaped like production's, not only a range. The shapes, one small object each:

- ``Uniform(min_ms, max_ms)``: ``rng.randint(min, max)``, the draw every world made
  before shapes existed (one call on the stream, so old traces are unchanged).
- ``LogNormal(median_ms, p99_ms)``: ln(latency) is normal with mu = ln(median) and
  sigma = (ln(p99) - ln(median)) / z(0.99), z(0.99) = 2.326348: half the messages take
  less than the median, 1% more than p99 (one ``rng.lognormvariate`` call, rounded to
  whole milliseconds: time is integer milliseconds everywhere).
- ``Stalls(probability, min_ms, max_ms)``: on top of any shape, each message with
  ``probability`` stalls for an extra ``randint(min, max)`` (a mixture: the latency is
  the shape's, or the shape's plus a stall). Drawn after the message's latency and loss,
  and only when stalls are configured, so a world without them draws exactly as before.

Rule 1. A draw is a call on the stream it is given, nothing else: no global ``random``,
        no wall clock. The same seed gives the same latencies in any process.
        (``lognormvariate`` uses ``math.log``/``exp``/``cos``/``sqrt`` of the C library;
        CPython on one platform gives the same floats in every process.)
Rule 2. The shapes and their fields are the vocabulary's (``toolcall_sim.model.vocabulary.
        LATENCY_SHAPES``, ``STALL_FIELDS``); ``SHAPES`` here must name the same set
        (checked at import).
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass

from toolcall_sim.model import vocabulary

Z_99 = 2.3263478740408408  # the standard normal's 99th percentile


@dataclass(frozen=True)
class Uniform:
    min_ms: int
    max_ms: int

    def draw_ms(self, rng: random.Random) -> int:
        return rng.randint(self.min_ms, self.max_ms)


@dataclass(frozen=True)
class LogNormal:
    median_ms: int
    p99_ms: int

    @property
    def mu(self) -> float:
        return math.log(self.median_ms)

    @property
    def sigma(self) -> float:
        return (math.log(self.p99_ms) - math.log(self.median_ms)) / Z_99

    def draw_ms(self, rng: random.Random) -> int:
        return round(rng.lognormvariate(self.mu, self.sigma))

    def quantile_ms(self, q: float) -> float:
        from statistics import NormalDist

        return math.exp(self.mu + self.sigma * NormalDist().inv_cdf(q))


@dataclass(frozen=True)
class Stalls:
    probability: float
    min_ms: int
    max_ms: int

    def extra_ms(self, rng: random.Random) -> int:
        """The extra time of one message: a stall with ``probability``, else none."""
        if rng.random() < self.probability:
            return rng.randint(self.min_ms, self.max_ms)
        return 0


SHAPES = {"uniform": Uniform, "lognormal": LogNormal}
assert set(SHAPES) == set(vocabulary.LATENCY_SHAPES), "sim/world/latency.py and model/vocabulary.py disagree on shapes"


def shape_of(params: tuple[tuple[str, object], ...]):
    """The shape a scenario's validated ``latency_shape`` names (``("shape", name)`` plus
    its fields in milliseconds); None for an empty tuple (a plain ``min``/``max``)."""
    if not params:
        return None
    values = dict(params)
    name = values.pop("shape")
    return SHAPES[name](**values)


def stalls_of(params: tuple[tuple[str, object], ...]) -> Stalls | None:
    return Stalls(**dict(params)) if params else None
