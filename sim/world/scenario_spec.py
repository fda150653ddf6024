"""What a scenario is once read: its values, and the duration words they are written in.

Theory of operation
-------------------
sim/world/scenario.py reads and checks a scenario file; what it returns is built from the
frozen dataclasses here (``Scenario`` with its ``Turn``s of ``ToolCallSpec``s, its
``FaultSpec``s with their ``Trigger``s and ``MessageMatch``es, its ``Expectation``s per
variant), all plain values in integer milliseconds, so sim/world/run.py and sim/world/simulation.py can
use a scenario without knowing how it was written. The duration words (``"1h30m"``) are
read and written here too, because the reader, the swarm drawing and the run all share
them. A bad value raises ``ScenarioError``, whose message is one line
``<file>: <field>: <reason>`` (the command line prints it and exits 2).

Rule 1. Durations are strings with units ("250ms", "2s", "15m", "9h", "1h30m"), read with
        the same Go duration grammar chatd uses for an execute timeout, never negative
        (but a clock offset: ``parse_signed_duration``); they become integer
        milliseconds and ``format_duration`` writes them back.
Rule 2. Tuples of pairs, not dicts: a ``Scenario`` is frozen and compares by value.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from toolcall_sim.io.errors import ScenarioError  # noqa: F401 - raised here, and imported from here by many
from toolcall_sim.model import vocabulary
from toolcall_sim.model.gocompat.duration import DurationError, parse_duration_ms

# The route a tool call's request goes to (a cancel goes to ``cancel``).
ROUTE_OF_TOOL = {"execute": "start", "edit_files": "edit", "write_file": "write"}


def parse_duration(text: Any, where: str) -> int:
    """Rule 1: "1h30m" -> 5_400_000, read with the same Go duration grammar chatd uses for
    an execute timeout. Raises ScenarioError naming ``where``."""
    if isinstance(text, bool) or not isinstance(text, str):
        raise ScenarioError(f"{where}: expected a duration string such as \"2s\", got {text!r}")
    s = text.strip()
    if s.startswith("-"):
        raise ScenarioError(f"{where}: duration must not be negative, got {text!r}")
    try:
        return parse_duration_ms(s)
    except DurationError:
        raise ScenarioError(
            f"{where}: not a duration {text!r} (use e.g. \"250ms\", \"2s\", \"15m\", \"9h\")"
        ) from None


def format_duration(ms: int) -> str:
    """Inverse of parse_duration for display: 5_400_000 -> "1h30m"."""
    whole = type(ms) is int  # (a float or a bool equal to an int is written otherwise)
    if whole:
        text = _TEXT_OF_MS.get(ms)
        if text is not None:
            return text
    if ms == 0:
        text = "0s"
    else:
        text = ""
        rest = ms
        for unit, size in (("h", 3_600_000), ("m", 60_000), ("s", 1_000), ("ms", 1)):
            if rest >= size:
                text += f"{rest // size}{unit}"
                rest %= size
    if whole and ms >= 0:
        if len(_TEXT_OF_MS) >= _WRITTEN_MAX:
            _TEXT_OF_MS.clear()
            WRITTEN_MS.clear()
        _TEXT_OF_MS[ms] = text
        WRITTEN_MS[text] = ms
    return text


# The durations ``format_duration`` has written, both ways: a swarm seed writes some
# twenty (sim/world/stories.py) and ``toolcall_sim.world.scenario_drawn.from_drawn`` reads them straight back, so
# the reader looks a text up in ``WRITTEN_MS`` before parsing it, and the writer answers a
# repeated value (the timeouts, latencies and run lengths the drawing picks from short
# lists) from ``_TEXT_OF_MS``. Only whole non-negative milliseconds, whose text parses
# back to the same value (Rule 1; tests/test_setup_paths.py), so either map gives
# what the computation would. Bounded: emptied when full.
_WRITTEN_MAX = 4096
_TEXT_OF_MS: dict[int, str] = {}
WRITTEN_MS: dict[str, int] = {}


@dataclass(frozen=True)
class ToolCallSpec:
    id: str  # the scenario's name for the call (unique in the file)
    tool: str
    command: str = ""
    runs_for_ms: int = 0
    timeout_ms: int | None = None
    background: bool = False
    exit_code: int = 0
    output: str = ""
    path: str = ""
    content: str = ""
    edits: tuple[tuple[str, str], ...] = ()
    provider_id: str = ""  # the ID the model gave it; empty: the same as ``id``
    kill_fails: bool = False  # the agent's kill of its process group fails (EPERM): a cancel's stop errors

    @property
    def provider(self) -> str:
        return self.provider_id or self.id


@dataclass(frozen=True)
class Turn:
    chat: str
    tool_calls: tuple[ToolCallSpec, ...]


@dataclass(frozen=True)
class MessageMatch:
    """Names one request or response: its route, the tool call, which one (nth)."""

    route: str | None  # None: any route (the events that are not messages)
    tool_call: str | None = None
    direction: str = "request"  # request | response | none (process_started, result_committed, message_committed)
    nth: int = 1


@dataclass(frozen=True)
class Trigger:
    at_ms: int | None = None
    event: str | None = None
    match: MessageMatch | None = None
    offset_ms: int = 0


@dataclass(frozen=True)
class FaultSpec:
    kind: str
    trigger: Trigger
    params: tuple[tuple[str, Any], ...] = ()

    def get(self, name: str, default: Any = None) -> Any:
        return dict(self.params).get(name, default)


@dataclass(frozen=True)
class Expectation:
    tool_calls: tuple[tuple[str, tuple[tuple[str, Any], ...]], ...] = ()
    violations: tuple[str, ...] | None = None  # properties violated as new findings
    residual_risks: tuple[str, ...] | None = None  # documented residual risks reported
    sometimes: tuple[str, ...] = ()  # sometimes-properties the run must reach
    interrupt_finished_within_ms: int | None = None  # every interrupt finishes within this
    # crafted request name -> what its answer shows: sorted (field, value) pairs of
    # model/vocabulary.py EXPECT_ANSWER_FIELDS (sim/world/answers.py)
    requests: tuple[tuple[str, tuple[tuple[str, Any], ...]], ...] = ()
    seeds: str = "any"  # model/vocabulary.py EXPECT_SEEDS: "pinned" holds at the file's own seed only
    faults_never_fired: tuple[int, ...] = ()  # indexes of the faults that never fire under this variant
    records_at_end: tuple[tuple[str, int], ...] = ()  # chat name -> tool call records the agent holds at the end


@dataclass(frozen=True)
class ReplaySpec:
    """``[replay]`` (sim/world/scenario_replay.py): the world the steps run in (``world``:
    a small world of model/worlds.py by name, with ``second``; None: the file's own on
    the explorer's clock) and the steps, model actions in order on that clock."""

    world: str | None
    second: str
    steps: tuple  # model/actions.py actions


@dataclass(frozen=True)
class Scenario:
    path: str
    name: str
    summary: str
    variant: str
    seed: int
    until_ms: int
    world: tuple[tuple[str, Any], ...]
    latency_min_ms: int
    latency_max_ms: int
    loss: float
    links: tuple[tuple[str, tuple[tuple[str, Any], ...]], ...]
    clocks: tuple[tuple[str, tuple[tuple[str, Any], ...]], ...]
    turns: tuple[Turn, ...]
    faults: tuple[FaultSpec, ...]
    expect: tuple[tuple[str, Expectation], ...] = field(default=())
    # ``[network] latency = { shape = ..., ... }`` (sim/world/latency.py): ("shape", name) and its
    # fields in ms; empty: uniform ``latency_min_ms``..``latency_max_ms``.
    latency_shape: tuple[tuple[str, Any], ...] = ()
    stalls: tuple[tuple[str, Any], ...] = ()  # ``[network] stalls``: probability, min_ms, max_ms; empty: none
    replay: ReplaySpec | None = None  # ``[replay]``: the run applies these steps instead of drawing a future

    def world_value(self, name: str, default: Any = None) -> Any:
        return self.world_values().get(name, default)

    def world_values(self) -> dict[str, Any]:
        """``world`` as a dict (read it, never change it): built once per scenario (a run
        asks a dozen of its values) and kept beside the fields (not a field: equality,
        hashing and the digest skip it)."""
        values = self.__dict__.get("_world_values")
        if values is None:
            values = self.__dict__["_world_values"] = dict(self.world)
        return values

    def expectation(self, variant: str) -> Expectation | None:
        return dict(self.expect).get(variant)

    def replicas(self) -> tuple[str, ...]:
        return tuple(f"replica-{i + 1}" for i in range(self.world_value("replicas", 2)))


def parse_signed_duration(text: Any, where: str) -> int:
    """A duration that may be negative (a clock offset, sim/world/scenario.py's Rule 5): "-2h"
    -> -7_200_000."""
    if isinstance(text, str) and text.strip().startswith("-"):
        return -parse_duration(text.strip()[1:], where)
    return parse_duration(text, where)


def check_until(until_ms: int, where: str) -> int:
    """A run lasts more than nothing and at most ``vocabulary.MAX_UNTIL_MS`` (a longer ask
    would run for minutes of real time with no word)."""
    if until_ms <= 0:
        raise ScenarioError(f"{where}: must be longer than 0s")
    if until_ms > vocabulary.MAX_UNTIL_MS:
        raise ScenarioError(f"{where}: {format_duration(until_ms)} is longer than the cap of "
                            f"{format_duration(vocabulary.MAX_UNTIL_MS)} of simulated time")
    return until_ms

