"""Hypothesis over the swarm's race stories: search that draws worlds, aims at the races,
and shrinks a failure to a smaller story.

Theory of operation
-------------------
The swarm (sim/drivers/swarm.py) draws each world from a seed's ``random.Random``
(``toolcall_sim.world.stories.draw_scenario``): replicas, latency, loss, chats, turns, tool calls, the
race stories it tells (an owner change as a command exits, a start delayed across an
agent restart, an interrupt at a command's deadline, ...) and a fault mix. This search
hands the same drawing code a ``DrawnRandom`` instead: an object with the five methods
of ``random.Random`` the stories call, each answered by a hypothesis draw. So hypothesis
draws exactly the swarm's worlds (two chats, two messages, three replicas, start
requests delayed past the 2 s age margin: worlds no explorer exhausts), and when one
fails it shrinks the *draws*: fewer stories, fewer faults, smaller numbers. The shrunk
failure is still a story, a scenario file, and its run is saved in the one replay format
(``toolcall-sim replay``), like a swarm failure.

Rule 1 (shrinking direction). ``randint`` and ``choice`` shrink towards the low end and
        the first option; ``random()`` is ``1 - u`` with ``u`` shrinking to 0, so every
        ``rng.random() < p`` of the drawing (a story told, a fault kind on, an explicit
        timeout) shrinks to *off*: a shrunk story tells only what its failure needs.
        (``u`` is spread evenly over [0, 1), so a story is told about as often as in
        the swarm; measured: with ``u`` as drawn, 14 % instead of 25 %, and one bug
        of fifteen went unfound in 300 programs.)
Rule 2 (aiming). After each run, ``approach`` reads four quantities off the trace that
        grow as a run nears a race the contract must win, and hands each to
        ``hypothesis.target``, which then mutates the programs that scored highest:
        ``restart_vs_request_in_flight_ms``, minus how far an agent restart fell from
        a start, edit or write request's flight (0 once one crosses it), and then
        ``age_slack_ms``, a request sent before an agent restart and delivered after it,
        its uptime at arrival minus the age it carries, capped at the age margin (the
        agent's refusal rests on that difference, docs/contract.md A2.3; the
        no-age-margin bug runs it anywhere above 0); ``cancel_vs_threshold_ms``, minus
        the distance between a cancel's arrival run age and the
        ``stop_if_run_age_below`` threshold chatd sent with it (the stop rule,
        docs/contract.md A4.2); ``owner_change_vs_exit_ms``, minus the distance between
        a takeover and a command's exit (the commit fences, docs/contract.md C2.4).
        They guide the search only; no verdict reads them.
Rule 3 (budgets). Every budget counts programs (runs), never seconds: ``max_examples``
        bounds the search, ``shrink_runs`` bounds what shrinking may run after the first
        failure. A story already seen to fail fails again from memory (no run); once the
        shrink budget is spent, the next new story ends the search (``ShrinkSpent``) and
        the smallest failure met so far is the result.
Rule 4 (determinism). Hypothesis runs from a fixed seed (``hypothesis.seed``), so the same
        arguments and the same example database give the same programs. The database
        (the failures hypothesis replays first next time) lives under the output folder,
        never in the current directory; the detection table (sim/ci/bugs.py) runs with a
        fresh one. Hypothesis also mixes literal constants of every local module
        imported so far into its draws (about one draw in twenty), so the same seed
        drew other programs under pytest than from the command line (measured: a bug
        found after 25 programs in one, 44 in the other); the search gives it none
        (``_no_local_constants``).
"""

from __future__ import annotations

import json
import tempfile
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from hypothesis import HealthCheck, Phase, given, settings, target
from hypothesis import strategies as st

from toolcall_sim.drivers.minimize import size
from toolcall_sim.world.stories import SEARCH_EXAMPLES, draw_scenario

EXAMPLES = SEARCH_EXAMPLES  # programs by default: sim/world/stories.py says why it lives there
SHRINK_RUNS = 200  # runs shrinking may spend after the first failure (Rule 3)
_UNIT = 1_000  # resolution of DrawnRandom.random()
_SPREAD = 383  # coprime with _UNIT: n -> n * 383 mod 1000 is a permutation of 0..999


class DrawnRandom:
    """``random.Random``'s methods that sim/world/stories.py calls, each one hypothesis draw
    (Rule 1): the stories draw the same calls in the same order as from a seed."""

    def __init__(self, data):
        self._data = data

    def randint(self, a: int, b: int) -> int:
        return self._data.draw(st.integers(a, b))

    def random(self) -> float:
        """``1 - u``; the draw shrinks to ``u`` = 0 (every option off, Rule 1), and is
        spread over [0, 1) by a step coprime with ``_UNIT``: hypothesis draws small
        integers far more often than large ones, which would leave nearly every story
        and fault kind off."""
        return 1 - (self._data.draw(st.integers(0, _UNIT - 1)) * _SPREAD % _UNIT) / _UNIT

    def uniform(self, a: float, b: float) -> float:
        return a + (b - a) * self._data.draw(st.integers(0, _UNIT)) / _UNIT

    def choice(self, seq):
        return seq[self._data.draw(st.integers(0, len(seq) - 1))]

    def choices(self, population, weights=None, k: int = 1):
        """``k`` weighted picks: one integer below the weights' sum each, so the first
        option (the commonest of the drawing's shapes) is what shrinking keeps."""
        weights = list(weights) if weights is not None else [1] * len(population)
        picks = []
        for _ in range(k):
            n = self._data.draw(st.integers(0, sum(weights) - 1))
            for item, w in zip(population, weights):
                if n < w:
                    picks.append(item)
                    break
                n -= w
        return picks


def draw_story(data) -> dict:
    """One scenario dict drawn by hypothesis: the run's seed (its latencies and losses),
    then the swarm's drawing over a ``DrawnRandom``."""
    run_seed = data.draw(st.integers(0, 10**6))
    scenario = draw_scenario(run_seed, DrawnRandom(data))
    scenario["name"] = f"search-{run_seed}"
    scenario["summary"] = scenario["summary"].replace(f"swarm seed {run_seed}", "hypothesis story", 1)
    return scenario


# ---------------------------------------------------------------------------
# Aiming: quantities that grow as a run nears a race (Rule 2)
# ---------------------------------------------------------------------------


def approach(trace: list[dict], margin_ms: int, scenario: dict) -> dict[str, int]:
    """The Rule 2 quantities a run of ``scenario`` reached (a label is missing when its
    race never began: no request across a restart, no cancel, no takeover)."""
    # Indices, not times: a restart in the same millisecond as a send still comes after it.
    sends = {r["seq"]: i for i, r in enumerate(trace) if r.get("kind") == "send" and "seq" in r}
    ups = [i for i, r in enumerate(trace) if r.get("kind") == "agent_up"]
    exits = [r["t_ms"] for r in trace if r.get("truth") == "process_exited"]
    takeovers = [r["t_ms"] for r in trace if r.get("note") == "acquired" and r.get("previous")]
    thresholds: dict[str, int] = {}  # provider ID -> the stop threshold of its latest cancel
    started: dict[str, int] = {}  # command -> the agent clock of its latest start
    # provider ID -> command (a command runs in one chat, or in two as twins: either start will do)
    commands = {tc["id"]: tc.get("command") for turn in scenario["turns"] for tc in turn["tool_calls"]}
    out: dict[str, int] = {}

    def keep(label: str, value: int) -> None:
        out[label] = max(out.get(label, value), value)

    for i, r in enumerate(trace):
        kind = r.get("kind")
        if r.get("truth") == "process_started":
            started[r.get("command")] = r["clock_ms"]
        elif kind == "note" and r.get("note") == "chattool_cancel_sent":
            thresholds[r.get("provider_id")] = r.get("stop_if_run_age_below_ms")
        elif kind == "deliver" and r.get("node") == "agent":
            route, sent = r.get("route"), sends.get(r.get("seq"))
            if route in ("start", "edit", "write") and sent is not None and "age_ms" in trace[sent]:
                # How near an agent restart came to this request's flight (0: it crossed).
                sent_ms = trace[sent]["t_ms"]
                near = [max(sent_ms - trace[u]["t_ms"], trace[u]["t_ms"] - r["t_ms"], 0) for u in ups[1:]]
                if near:
                    keep("restart_vs_request_in_flight_ms", -min(near))
                crossed = [u for u in ups if sent < u < i]
                if crossed:
                    uptime_ms = r["t_ms"] - trace[crossed[-1]]["t_ms"]
                    keep("age_slack_ms", min(uptime_ms - trace[sent]["age_ms"], margin_ms))
            elif route == "cancel" and thresholds.get(r.get("tool_call")) is not None:
                run_start_ms = started.get(commands.get(r["tool_call"]))
                if run_start_ms is not None:
                    run_age_ms = r["clock_ms"] - run_start_ms
                    keep("cancel_vs_threshold_ms", -abs(run_age_ms - thresholds[r["tool_call"]]))
    if exits and takeovers:
        keep("owner_change_vs_exit_ms", -min(abs(a - b) for a in takeovers for b in exits))
    return out


# ---------------------------------------------------------------------------
# The search
# ---------------------------------------------------------------------------


class StoryFailed(AssertionError):
    """A drawn story with a new finding (hypothesis shrinks on it)."""


class ShrinkSpent(BaseException):
    """The shrink budget is spent: not an ``Exception``, so hypothesis does not take it
    for a failure to shrink but lets it end the search (Rule 3)."""


@dataclass
class Outcome:
    """What one search found, as plain values (sim/ci/bugs.py tabulates them)."""

    variant: str
    programs: int = 0  # programs run (shrinking's included)
    programs_to_failure: int | None = None  # programs run up to and including the first failure
    seconds_to_failure: float | None = None  # reported only, never a budget
    seconds: float = 0.0
    violated: str | None = None  # the property of the shrunk failure
    detail: str = ""
    scenario: dict | None = None  # the shrunk story
    shrink_runs: int = 0
    interrupted: bool = False
    targets: dict = field(default_factory=dict)  # the highest of each Rule 2 quantity seen

    @property
    def found(self) -> bool:
        return self.scenario is not None

    @property
    def length(self) -> tuple[int, int, int] | None:
        """(faults, tool calls, turns) of the shrunk story."""
        return size(self.scenario) if self.scenario is not None else None


def _judge(scenario: dict, variant: str):
    """Run a drawn story: (new findings sorted, trace). A crash is the finding
    ``exception`` (as in the swarm: the model must not crash on a describable world)."""
    from toolcall_sim.world.run import run_scenario
    from toolcall_sim.world.scenario import from_dict

    try:
        result = run_scenario(from_dict(scenario, f"<{scenario['name']}>"), variant)
    except Exception as err:  # noqa: BLE001 - any crash of the model or world is a finding
        return [(0, "exception", f"{type(err).__name__}: {err}")], []
    findings = sorted((v.at_ms, v.property, v.detail) for v in result.violations if v.residual_risk is None)
    return findings, result.world.trace


def search(variant: str, max_examples: int, shrink_runs: int = SHRINK_RUNS, database_dir: Path | None = None,
           seed: int = 0, on_program: Callable[[Outcome], None] | None = None) -> Outcome:
    """Hypothesis over drawn stories under ``variant``, at most ``max_examples`` programs
    generated and ``shrink_runs`` run while shrinking; the outcome holds the shrunk
    failure, if any. ``on_program`` sees the outcome after every program run."""
    from hypothesis.configuration import set_hypothesis_home_dir
    from hypothesis.database import DirectoryBasedExampleDatabase

    from toolcall_sim.model.timing import DEFAULT_TIMING

    outcome = Outcome(variant)
    failing: dict[str, tuple[str, str]] = {}  # scenario JSON -> (property, detail) of a failure met
    best: list = []  # [key, scenario] of the failure hypothesis shrank to last
    started = time.perf_counter()

    def program(data) -> None:
        scenario = draw_story(data)
        key = json.dumps(scenario, sort_keys=True)
        verdict = failing.get(key)
        if verdict is None:
            if outcome.programs_to_failure is not None and outcome.shrink_runs >= shrink_runs:
                raise ShrinkSpent
            verdict = run(scenario, key)
        if verdict is not None:
            best[:] = [key, scenario]
            # One place raises, so hypothesis sees one failure however it was known (Rule 3).
            raise StoryFailed(": ".join(verdict))

    def run(scenario: dict, key: str) -> tuple[str, str] | None:
        outcome.programs += 1
        if outcome.programs_to_failure is not None:
            outcome.shrink_runs += 1
        findings, trace = _judge(scenario, variant)
        for label, value in approach(trace, DEFAULT_TIMING.agent_age_margin_ms, scenario).items():
            outcome.targets[label] = max(outcome.targets.get(label, value), value)
            target(float(value), label=label)
        if on_program is not None:
            on_program(outcome)
        if not findings:
            return None
        _, prop, detail = findings[0]
        failing[key] = (prop, detail)
        if outcome.programs_to_failure is None:
            outcome.programs_to_failure = outcome.programs
            outcome.seconds_to_failure = time.perf_counter() - started
        return failing[key]

    chosen = settings(
        max_examples=max_examples, deadline=None, derandomize=False, print_blob=False,
        database=DirectoryBasedExampleDatabase(str(database_dir)) if database_dir is not None else None,
        suppress_health_check=list(HealthCheck),
        phases=(Phase.explicit, Phase.reuse, Phase.generate, Phase.target, Phase.shrink),
    )
    # The seed as ``hypothesis.seed`` sets it, without its side effect of switching the
    # example database off (Rule 4): ``given`` copies the attribute from the function.
    program._hypothesis_internal_use_seed = seed
    test = chosen(given(st.data())(program))
    scratch = tempfile.TemporaryDirectory()
    # Hypothesis's own folder (.hypothesis) is ours too, never the current directory's.
    home = database_dir.parent / ".hypothesis" if database_dir is not None else Path(scratch.name)
    set_hypothesis_home_dir(home)
    try:
        with _no_local_constants():
            test()
    except (StoryFailed, ShrinkSpent):
        pass
    except KeyboardInterrupt:
        outcome.interrupted = True
    finally:
        set_hypothesis_home_dir(None)
        scratch.cleanup()
        outcome.seconds = time.perf_counter() - started
    if best:
        key, scenario = best
        outcome.scenario = scenario
        outcome.violated, outcome.detail = failing[key]
    return outcome


@contextmanager
def _no_local_constants():
    """Rule 4: hypothesis's draws must not depend on which modules this process imported.
    It reads them through one private function (hypothesis 6.1xx); where that is gone,
    nothing is changed."""
    try:
        from hypothesis.internal.conjecture import providers
        from hypothesis.internal.constants_ast import Constants
    except ImportError:  # another hypothesis: nothing to switch off
        yield
        return
    saved = getattr(providers, "_get_local_constants", None)
    if saved is None:
        yield
        return
    none = Constants()
    providers._get_local_constants = lambda: none
    try:
        yield
    finally:
        providers._get_local_constants = saved


def write_failure(outcome: Outcome, out_dir: Path) -> tuple[Path, Path]:
    """The shrunk story as a scenario file (under the variant, no expectations: ``run``
    exits 1 while it reproduces) and its run as a counterexample in the replay format."""
    from toolcall_sim.drivers import counterexample as cx
    from toolcall_sim.world.scenario_toml import exact_toml

    variant = outcome.variant
    data = {**outcome.scenario, "variant": variant,
            "summary": f"hypothesis story under {variant}, shrunk: {outcome.violated}"}
    stem = f"search-{variant.replace('+', '_')}-{outcome.violated}"
    # Both files or neither (sim/io/output.py Rule 1).
    return cx.write_pair(Path(out_dir) / f"{stem}.toml", exact_toml(data), variant, outcome.violated, "hypothesis",
                         outcome.detail)
