"""The result side of the Python scenario API: what ``toolcall_sim.api.run`` returns, and
the values a test asserts on.

Theory of operation
-------------------
sim/api.py builds and runs a world; this module is what comes back, and it imports
nothing of sim/api.py (sim/api.py imports it and re-exports its public names, so a test
still writes ``from toolcall_sim.api import Result``).

A run is a ``Result``: the fields of ``toolcall-sim run --json`` as attributes (the doc is
``toolcall_sim.reports.run.run_json``'s, so the two cannot drift), ``call(id)`` for one
tool call (a ``Call``), and assertion helpers whose messages tell what happened
(``toolu_01 started 2 processes (at 2.121 s on agent incarnation 1, at 902.21 s on
incarnation 1); expected 1``). A tool call's counts and result kinds are an ``int`` and a
``list`` that carry that sentence (``Told``: ``Count`` and ``Kinds``): a plain ``assert
call.process_starts == 1`` compares numbers as always, and the pytest plugin
(sim/pytest_plugin.py) prints the sentence when it fails. The sentences are written by
reports/scenario_test.py.

``Result.fault_problems()`` lists the faults that did nothing, never fired or raced
nothing, in words, whatever a run allowed: what sim/api.py ``run`` fails on
(``FaultDidNothing``, its theory of operation says why).
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field

from toolcall_sim.model.properties import Evidence
from toolcall_sim.reports import scenario_test as told
from toolcall_sim.reports.run import run_json, story

from toolcall_sim.world.run import RunResult


class Told:
    """A value of a run that knows its sentence: ``told(expected)`` says what happened
    and what was expected (the plugin's ``pytest_assertrepr_compare`` prints it)."""

    sentence: str

    def told(self, expected) -> str:
        return told.expected(self.sentence, expected)


class Count(int, Told):
    def __new__(cls, value: int, sentence: str):
        obj = super().__new__(cls, value)
        obj.sentence = sentence
        return obj


class Kinds(list, Told):
    def __init__(self, kinds, sentence: str):
        super().__init__(kinds)
        self.sentence = sentence


@dataclass
class Call:
    """One tool call of a run: its row of ``run --json`` (``row``), its counts and result
    kinds as ``Told`` values, and assertions that tell its story."""

    row: dict
    starts: list = field(default_factory=list)  # (t_ms, incarnation, pid) of each process start
    kills: list = field(default_factory=list)  # (t_ms, incarnation, pid) of each kill
    running: list = field(default_factory=list)  # starts still running at the end

    @property
    def id(self) -> str:
        return self.row["id"]

    @property
    def uuid(self) -> str:
        return self.row["uuid"]

    @property
    def chat(self) -> str:
        return self.row["chat"]

    @property
    def tool(self) -> str:
        return self.row["tool"]

    @property
    def committed(self) -> list[dict]:
        """The committed results (kind, reason, replica, committed_at_s, ...), in order."""
        return self.row["results"]

    @property
    def process_starts(self) -> Count:
        return Count(self.row["process_starts"], told.process_starts(self.id, self.starts))

    @property
    def processes_killed(self) -> Count:
        return Count(self.row["processes_killed"], told.processes_killed(self.id, self.kills))

    @property
    def processes_running_at_end(self) -> Count:
        return Count(self.row["processes_running_at_end"], told.processes_running(self.id, self.running))

    @property
    def edits_applied(self) -> Count:
        return Count(self.row["edits_applied"], told.edits_applied(self.id, self.row["edits_applied"]))

    @property
    def results(self) -> Kinds:
        """The committed result kinds in order (``["completed"]``)."""
        return Kinds([r["kind"] for r in self.committed], told.results(self.id, self.committed))

    def _check(self, value: Told, expected) -> None:
        if value != expected:
            raise AssertionError(value.told(expected))

    def assert_process_starts(self, expected: int) -> None:
        self._check(self.process_starts, expected)

    def assert_processes_killed(self, expected: int) -> None:
        self._check(self.processes_killed, expected)

    def assert_processes_running_at_end(self, expected: int) -> None:
        self._check(self.processes_running_at_end, expected)

    def assert_edits_applied(self, expected: int) -> None:
        self._check(self.edits_applied, expected)

    def assert_results(self, expected: list[str]) -> None:
        self._check(self.results, list(expected))


class Result:
    """A run: the fields of ``toolcall-sim run --json`` as attributes (``scenario``,
    ``variant``, ``seed``, ``trace_sha256``, ``events``, ``sim_time_s``, ``tool_calls``,
    ``violations``, ``residual_risks``, ``unknown_results``, ``unreached``,
    ``expect_met``, ``agent``), ``json()`` for the doc itself, ``call(id)``, and assertions."""

    FIELDS = ("scenario", "variant", "seed", "trace_sha256", "events", "sim_time_s", "tool_calls", "violations",
              "residual_risks", "unknown_results", "unreached", "expect_met", "agent")

    def __init__(self, run_result: RunResult, file: str | None = None):
        self.run_result = run_result
        self.file = file  # the scenario file that reproduces it, when there is one
        self._doc = run_json(run_result)

    def __getattr__(self, name: str):
        if name in Result.FIELDS:
            return copy.deepcopy(self._doc[name])
        raise AttributeError(name)

    def json(self) -> dict:
        """The ``run --json`` doc."""
        return copy.deepcopy(self._doc)

    @property
    def trace(self) -> list[dict]:
        return self.run_result.world.trace

    def calls(self) -> list[Call]:
        return [self._call(row) for row in self._doc["tool_calls"]]

    def call(self, id: str) -> Call:
        """The tool call the scenario names ``id`` (KeyError naming the known ones)."""
        for row in self._doc["tool_calls"]:
            if row["id"] == id:
                return self._call(row)
        known = [t.id for turn in self.run_result.scenario.turns for t in turn.tool_calls]
        if id in known:  # defined but never committed by chatd: nothing happened to it
            return Call({"id": id, "uuid": None, "chat": None, "tool": None, "process_starts": 0, "edits_applied": 0,
                         "processes_killed": 0, "processes_running_at_end": 0, "results": []})
        raise KeyError(f"no tool call {id!r} in scenario {self.run_result.scenario.name!r} (tool calls: "
                       f"{', '.join(known) or 'none'})")

    def _call(self, row: dict) -> Call:
        trace = self.run_result.world.trace
        ev = Evidence(trace, self.run_result.world.system)
        def points(indices):
            return [(trace[i]["t_ms"], trace[i].get("incarnation"), trace[i].get("pid")) for i in indices]
        starts = ev.starts.get(row["uuid"], [])
        ended = {(trace[i].get("incarnation"), trace[i].get("pid"))
                 for i in ev.exits.get(row["uuid"], []) + ev.kills.get(row["uuid"], [])}
        running = [i for i in starts if (trace[i].get("incarnation"), trace[i].get("pid")) not in ended]
        return Call(row, points(starts), points(ev.kills.get(row["uuid"], [])), points(running))

    # -- what a test asks -------------------------------------------------------
    def story(self) -> str:
        """What ``toolcall-sim run`` prints."""
        return story(self.run_result)

    def expectation_failures(self) -> list[str]:
        return self.run_result.expectation_failures()

    def _fault_problems(self) -> list:
        """The faults that did nothing, never fired (but those the variant's
        ``faults_never_fired`` lists) or raced nothing (``FaultProblem``s, by index)."""
        rr = self.run_result
        exp = rr.scenario.expectation(rr.variant)
        never = exp.faults_never_fired if exp is not None else ()
        found = [p for p in rr.fault_problems(never) if p.problem in ("did_nothing", "never_fired")]
        return sorted(found + rr.race_problems(), key=lambda p: p.index)

    def fault_problems(self) -> list[str]:
        """What ``run`` fails on unless allowed, whatever was allowed: each fault that did
        nothing, never fired or raced nothing, in words (empty: every fault made its race)."""
        return [p.text for p in self._fault_problems()]

    def assert_expectations(self) -> None:
        """The scenario's ``[expect.<variant>]`` holds (with none: nothing is violated)."""
        failures = self.expectation_failures()
        if failures:
            raise AssertionError(told.unmet(self.run_result.scenario.name, self.variant, failures))

    def assert_no_violations(self) -> None:
        """No property is violated as a new finding (residual risks and known findings
        are named, not failures)."""
        self.assert_violations()

    def assert_violations(self, *names: str) -> None:
        """The properties violated as new findings are exactly ``names``."""
        new = [v for v in self._doc["violations"] if v["residual_risk"] is None or v["known_finding"]]
        if sorted({v["property"] for v in new}) != sorted(set(names)):
            raise AssertionError(told.violations(sorted(set(names)), new))
