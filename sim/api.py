"""Races as Python: build a scenario in a few lines, run it, and ask what happened.

Theory of operation
-------------------
A scenario file (scenarios/README.md) stays the main form; this module is the same
language in Python, word for word, for a test that wants its world next to its asserts:

    world = Scenario("lost start answer").chat("chat-1").execute("toolu_01", "make", runs_for="20m", timeout="30m")
    world = world.fault(lose(route="start", tool_call="toolu_01", direction="response"))
    result = run(world, variant="contract")          # the pytest fixture ``toolcall_run`` is this
    assert result.call("toolu_01").process_starts == 1

One validation path. ``Scenario`` (the builder) only assembles the dict a TOML file
parses into: each method writes one table or key of that dict, under the file's own
name (``world(replicas=3)`` is ``[world] replicas = 3``, ``chat("chat-2")`` a new
``[[turns]]`` entry with ``chat = "chat-2"``, ``execute(...)`` one of its
``tool_calls``, ``fault(lose(...))`` one ``[[faults]]``, ``expect("contract", ...)`` the
``[expect.contract]`` table). Nothing is checked while building (a fault may name a tool
call added later); ``scenario`` hands the dict to ``toolcall_sim.world.scenario.from_dict``, the loader
of files, so a built world is the same frozen ``toolcall_sim.world.scenario_spec.Scenario`` value a file
gives, or the same one-line ``ScenarioError`` (``<name>: turns[0].tool_calls[0].timeout:
...``). ``to_toml`` writes the dict with sim/world/scenario_toml.py's writer, which refuses a
text that would read back as anything else; ``from_file``/``from_dict`` go the other
way, by calling the builder's methods, so a file that round-trips shows the methods
cover what files say (tests/test_api.py does it for every shipped scenario).

The builder is immutable: every method returns a new builder, so a test can branch
one base world into several (``base.fault(...)``, ``base.world(agent="old")``).

Faults are values made by one function per fault kind of model/vocabulary.py's
``FAULTS`` (``lose``, ``delay``, ``handler_panic``, ``agent_restart``, ...), whose keyword
arguments are that kind's fields; the message faults take the message's fields
(``route``, ``tool_call``, ``direction``, ``nth``) flat, the scheduled ones a trigger:
``at="1m"``, or ``when=on("request_sent", route="start", tool_call="toolu_01")``, and
``offset``. ``FAULT_MAKERS`` maps each kind to its function (a test checks it is the
vocabulary's list).

Results. ``run`` runs a scenario value, builder or file with ``toolcall_sim.world.run.run_scenario`` and
returns a ``Result``: the fields of ``toolcall-sim run --json`` as attributes, ``call(id)``
for one tool call, and assertion helpers whose messages tell what happened, with counts
that carry their sentence (``Told``). They live in sim/api_results.py (its theory of
operation says how), which imports nothing of this module; this one re-exports them.

A race that did not happen fails. A test's asserts can all hold in a run whose fault
did nothing: a takeover by the replica that already owns the chat, a trigger whose nth
event never came, a fault aimed at a tool call that was already over when it fired.
The test would then pass on a story that was never told. So ``run`` checks the faults
before it returns and raises ``FaultDidNothing`` (an ``AssertionError``: a failed test,
not an error) naming each such fault by index, kind and trigger, and why:
``faults[0] (takeover to replica-1 when request_sent of toolu_01 (nth 1)) fired at
0.042 s and did nothing: the new owner already owns the chat``. The three checks are
``RunResult.fault_problems`` (what a scenario file's expectations already fail on; a
fault the variant's ``faults_never_fired`` lists may stay unfired) and
``RunResult.race_problems`` (the API's own: a story's racing steps overlapped, i.e. a
fault aimed at a tool call by its trigger or message fired before that call was over).
Opting out is explicit and per run: ``allow_noop_faults=True`` (every fault) or a list
of fault indexes; the pytest marker ``toolcall_allow_noop_faults`` does the same for a
test's ``toolcall_run``. The error carries the run (``err.result``), and
``Result.fault_problems()`` lists the problems whatever the opt-out.
"""

from __future__ import annotations

import copy
import tomllib
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import Any, Mapping

from toolcall_sim.model import vocabulary
from toolcall_sim.reports import scenario_test as told

# Re-exported on purpose: Result, Call and Told are public API of toolcall_sim.api (in
# __all__), and a user's `from toolcall_sim.api import Result` must keep working now that
# they are defined in sim/api_results.py (which never imports this module).
from toolcall_sim.api_results import Call, Result, Told
from toolcall_sim.world.run import run_scenario
from toolcall_sim.world.scenario import ScenarioError, from_dict, load
from toolcall_sim.world.scenario_spec import Scenario as ScenarioValue
from toolcall_sim.world.scenario_toml import exact_toml

__all__ = [
    "Scenario", "Fault", "Result", "Call", "Told", "run", "on", "FAULT_MAKERS", "FaultDidNothing",
    "agent_restart", "agent_shutdown", "replica_crash", "ownership_change", "takeover", "interrupt",
    "user_message", "message_edit", "workspace", "partition", "heal", "db_outage", "request", "lose", "delay",
    "handler_panic",
    "ScenarioError",
]

_TRIGGER_KEYS = ("at", "when", "offset")
_MESSAGE_KEYS = ("route", "tool_call", "direction", "nth")


# ---------------------------------------------------------------------------
# Faults
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Fault:
    """One ``[[faults]]`` entry, as the file writes it (``kind`` and its keys)."""

    table: Mapping[str, Any]

    def as_dict(self) -> dict:
        return copy.deepcopy(dict(self.table))


def _given(**values) -> dict:
    """The keys a caller gave (None: not given, as a key left out of a file)."""
    return {k: v for k, v in values.items() if v is not None}


def _scheduled(kind: str, at, when, offset, **fields) -> Fault:
    return Fault(MappingProxyType({"kind": kind, **_given(at=at, when=when, offset=offset), **_given(**fields)}))


def _message_fault(kind: str, route, tool_call, direction, nth, **fields) -> Fault:
    message = _given(route=route, tool_call=tool_call, direction=direction, nth=nth)
    return Fault(MappingProxyType({"kind": kind, "message": message, **_given(**fields)}))


def on(event: str, route: str | None = None, tool_call: str | None = None, nth: int | None = None) -> dict:
    """A fault's ``when``: the ``nth`` ``event`` (request_sent, process_started, ...) of
    ``tool_call`` on ``route``."""
    return {"event": event, **_given(route=route, tool_call=tool_call, nth=nth)}


def agent_restart(downtime: str | None = None, *, at: str | None = None, when: dict | None = None,
                  offset: str | None = None) -> Fault:
    return _scheduled("agent_restart", at, when, offset, downtime=downtime)


def agent_shutdown(*, at: str | None = None, when: dict | None = None, offset: str | None = None) -> Fault:
    return _scheduled("agent_shutdown", at, when, offset)


def workspace(state: str, *, at: str | None = None, when: dict | None = None, offset: str | None = None) -> Fault:
    return _scheduled("workspace", at, when, offset, state=state)


def replica_crash(replica: str, downtime: str | None = None, *, at: str | None = None, when: dict | None = None,
                  offset: str | None = None) -> Fault:
    return _scheduled("replica_crash", at, when, offset, replica=replica, downtime=downtime)


def ownership_change(chat: str | None = None, to: str | None = None, immediate: bool | None = None, *,
                     at: str | None = None, when: dict | None = None, offset: str | None = None) -> Fault:
    return _scheduled("ownership_change", at, when, offset, chat=chat, to=to, immediate=immediate)


def takeover(to: str, chat: str | None = None, *, at: str | None = None, when: dict | None = None,
             offset: str | None = None) -> Fault:
    return _scheduled("takeover", at, when, offset, to=to, chat=chat)


def interrupt(chat: str | None = None, *, at: str | None = None, when: dict | None = None,
              offset: str | None = None) -> Fault:
    return _scheduled("interrupt", at, when, offset, chat=chat)


def user_message(chat: str | None = None, *, at: str | None = None, when: dict | None = None,
                 offset: str | None = None) -> Fault:
    return _scheduled("user_message", at, when, offset, chat=chat)


def message_edit(chat: str | None = None, *, at: str | None = None, when: dict | None = None,
                 offset: str | None = None) -> Fault:
    return _scheduled("message_edit", at, when, offset, chat=chat)


def partition(between: list[str], duration: str | None = None, *, at: str | None = None,
              when: dict | None = None, offset: str | None = None) -> Fault:
    return _scheduled("partition", at, when, offset, between=list(between), duration=duration)


def heal(between: list[str] | None = None, *, at: str | None = None, when: dict | None = None,
         offset: str | None = None) -> Fault:
    return _scheduled("heal", at, when, offset, between=None if between is None else list(between))


def db_outage(duration: str | None = None, *, at: str | None = None, when: dict | None = None,
              offset: str | None = None) -> Fault:
    return _scheduled("db_outage", at, when, offset, duration=duration)


def request(name: str, route: str, tool_call: str | None = None, as_chat: str | None = None,
            headers: dict | None = None, body: str | None = None, *, at: str | None = None,
            when: dict | None = None, offset: str | None = None) -> Fault:
    return _scheduled("request", at, when, offset, name=name, route=route, tool_call=tool_call, as_chat=as_chat,
                      headers=None if headers is None else dict(headers), body=body)


def lose(route: str | None = None, tool_call: str | None = None, direction: str | None = None,
         nth: int | None = None) -> Fault:
    return _message_fault("lose", route, tool_call, direction, nth)


def delay(by: str, route: str | None = None, tool_call: str | None = None, direction: str | None = None,
          nth: int | None = None) -> Fault:
    return _message_fault("delay", route, tool_call, direction, nth, by=by)


def handler_panic(route: str | None = None, tool_call: str | None = None, direction: str | None = None,
                  nth: int | None = None, after_spawn: bool | None = None) -> Fault:
    return _message_fault("handler_panic", route, tool_call, direction, nth, after_spawn=after_spawn)


# One maker per fault kind of the vocabulary, by kind (tests/test_api.py checks the two
# lists are the same and that each maker takes exactly its kind's fields).
FAULT_MAKERS = {
    "agent_restart": agent_restart, "agent_shutdown": agent_shutdown, "replica_crash": replica_crash,
    "ownership_change": ownership_change, "takeover": takeover, "interrupt": interrupt,
    "user_message": user_message, "message_edit": message_edit, "workspace": workspace, "partition": partition,
    "heal": heal, "db_outage": db_outage,
    "request": request, "lose": lose, "delay": delay, "handler_panic": handler_panic,
}


def _fault_from_table(table: dict) -> Fault:
    """The maker call that writes ``table`` (one ``[[faults]]`` entry of a file); a table
    the makers cannot write is passed through unchanged, for the loader to refuse."""
    table = dict(table)
    maker = FAULT_MAKERS.get(table.get("kind")) if isinstance(table.get("kind"), str) else None
    if maker is None:
        return Fault(MappingProxyType(table))
    kind = table.pop("kind")
    message = table.pop("message", None) if vocabulary.FAULTS[kind].shape == "message" else None
    if isinstance(message, dict) and set(message) <= set(_MESSAGE_KEYS):
        table.update(message)
    elif message is not None:
        return Fault(MappingProxyType({"kind": kind, "message": message, **table}))
    try:
        return maker(**table)
    except TypeError:  # a key the kind does not take: the loader names it
        return Fault(MappingProxyType({"kind": kind, **({"message": message} if message is not None else {}),
                                       **table}))


# ---------------------------------------------------------------------------
# The builder
# ---------------------------------------------------------------------------


class Scenario:
    """A scenario under construction: the dict of a scenario file, one method per table.

    ``Scenario(name, summary=..., variant=..., seed=..., until=...)`` are the file's
    top-level keys; every method returns a new builder. ``scenario`` is the validated
    value (``toolcall_sim.world.scenario_spec.Scenario``), ``to_toml()`` the file."""

    def __init__(self, name: str, *, summary: str | None = None, variant: str | None = None,
                 seed: int | None = None, until: str | None = None):
        self._data: dict = {"name": name, **_given(summary=summary, variant=variant, seed=seed, until=until),
                            "turns": []}

    # -- plumbing ---------------------------------------------------------------
    def _with(self, change) -> "Scenario":
        new = object.__new__(Scenario)
        new._data = copy.deepcopy(self._data)
        change(new._data)
        return new

    def to_dict(self) -> dict:
        """The scenario file's dict (what ``tomllib`` reads from ``to_toml()``)."""
        return copy.deepcopy(self._data)

    @property
    def name(self) -> str:
        """The scenario's name (``"scenario"`` while a dict read without one lacks it)."""
        name = self._data.get("name")
        return name if isinstance(name, str) else "scenario"

    @property
    def scenario(self) -> ScenarioValue:
        """The validated scenario: ``toolcall_sim.world.scenario.from_dict`` of ``to_dict()``, the file
        loader's path; a bad world raises its one-line ``ScenarioError``."""
        return from_dict(self.to_dict(), f"<{self.name}>")

    def to_toml(self) -> str:
        """The scenario file; validated first (a world the loader refuses is not written)."""
        self.scenario
        return exact_toml(self.to_dict())

    def write(self, path: str | Path) -> Path:
        """Write ``to_toml()`` to ``path``, whole or not at all and never over a device, FIFO
        or folder (sim/io/output.py; an OSError is its ``OutputError``); ``toolcall-sim run
        PATH`` runs it."""
        from toolcall_sim.io.output import write_atomic

        return write_atomic(path, self.to_toml())

    def __repr__(self) -> str:
        return f"Scenario({self.name!r})"

    def __eq__(self, other) -> bool:
        return isinstance(other, Scenario) and self._data == other._data

    __hash__ = None  # a builder is compared by content, like the dict it holds

    # -- top level --------------------------------------------------------------
    def summary(self, text: str) -> "Scenario":
        return self._with(lambda d: d.__setitem__("summary", text))

    def variant(self, name: str) -> "Scenario":
        return self._with(lambda d: d.__setitem__("variant", name))

    def seed(self, seed: int) -> "Scenario":
        return self._with(lambda d: d.__setitem__("seed", seed))

    def until(self, duration: str) -> "Scenario":
        return self._with(lambda d: d.__setitem__("until", duration))

    # -- [world], [network], [clocks] -------------------------------------------
    def world(self, **keys) -> "Scenario":
        """``[world]`` keys (replicas, agent, attempt_timeout, files, ...), added to those
        given before."""
        return self._with(lambda d: d.setdefault("world", {}).update(copy.deepcopy(keys)))

    def network(self, latency: dict | None = None, loss: float | None = None) -> "Scenario":
        """``[network]``: ``latency={"min": "2ms", "max": "40ms"}`` and ``loss``."""
        return self._with(lambda d: d.setdefault("network", {}).update(_given(latency=latency, loss=loss)))

    def link(self, name: str, latency: dict | None = None, loss: float | None = None) -> "Scenario":
        """``[network.links."<node>-><node>"]``: one link's own latency and loss."""
        return self._with(lambda d: d.setdefault("network", {}).setdefault("links", {}).__setitem__(
            name, _given(latency=latency, loss=loss)))

    def clock(self, node: str, offset: str | None = None, drift_ppm: int | None = None,
              steps: list | None = None) -> "Scenario":
        """``[clocks.<node>]``: the node's offset (may be negative), drift and steps."""
        return self._with(lambda d: d.setdefault("clocks", {}).__setitem__(
            node, _given(offset=offset, drift_ppm=drift_ppm, steps=copy.deepcopy(steps))))

    # -- [[turns]] --------------------------------------------------------------
    def turn(self, chat: str | None = None) -> "Scenario":
        """A new ``[[turns]]`` entry: the next assistant message, of ``chat`` (omitted:
        the loader's default, chat-1). The tool calls added next belong to it."""
        return self._with(lambda d: d["turns"].append(_given(chat=chat)))

    def chat(self, name: str) -> "Scenario":
        """The next assistant message of chat ``name`` (a new ``[[turns]]`` entry)."""
        return self.turn(name)

    def _call(self, table: dict) -> "Scenario":
        def change(d):
            if not d["turns"]:
                d["turns"].append({})
            d["turns"][-1].setdefault("tool_calls", []).append(table)
        return self._with(change)

    def execute(self, id: str, command: str, *, runs_for: str | None = None, timeout: str | None = None,
                background: bool | None = None, exit_code: int | None = None, output: str | None = None,
                provider_id: str | None = None, kill_fails: bool | None = None) -> "Scenario":
        """An ``execute`` tool call of the current turn (``kill_fails``: the agent cannot kill
        its process group, so a cancel's stop fails)."""
        return self._call({"id": id, **_given(provider_id=provider_id), "tool": "execute", "command": command,
                           **_given(runs_for=runs_for, timeout=timeout, background=background, exit_code=exit_code,
                                    output=output, kill_fails=kill_fails)})

    def edit_files(self, id: str, path: str, edits: list | None = None, *,
                   provider_id: str | None = None) -> "Scenario":
        """An ``edit_files`` tool call: ``edits`` as ``{"search", "replace"}`` tables or
        ``(search, replace)`` pairs."""
        tables = None if edits is None else [e if isinstance(e, dict) else {"search": e[0], "replace": e[1]}
                                              for e in edits]
        return self._call({"id": id, **_given(provider_id=provider_id), "tool": "edit_files", "path": path,
                           **_given(edits=tables)})

    def write_file(self, id: str, path: str, content: str | None = None, *,
                   provider_id: str | None = None) -> "Scenario":
        """A ``write_file`` tool call."""
        return self._call({"id": id, **_given(provider_id=provider_id), "tool": "write_file", "path": path,
                           **_given(content=content)})

    # -- [[faults]], [expect.<variant>] -----------------------------------------
    def fault(self, *faults: Fault) -> "Scenario":
        """``[[faults]]`` entries, in order (``lose(...)``, ``interrupt(at="1m")``, ...)."""
        return self._with(lambda d: d.setdefault("faults", []).extend(f.as_dict() for f in faults))

    def expect(self, variant: str, calls: dict | None = None, /, **keys) -> "Scenario":
        """``[expect.<variant>]``: per tool call (``toolu_01={"process_starts": 1}``, or a
        dict of them for IDs that are no Python names) and per variant (``violations``,
        ``residual_risks``, ``sometimes``, ``interrupt_finished_within``, ``requests``, ``seeds``,
        ``faults_never_fired``, ``records_at_end``)."""
        table = {**copy.deepcopy(calls or {}), **copy.deepcopy(keys)}
        return self._with(lambda d: d.setdefault("expect", {}).setdefault(variant, {}).update(table))

    # -- from a file ------------------------------------------------------------
    @classmethod
    def from_dict(cls, data: dict) -> "Scenario":
        """The builder calls that write ``data`` (a scenario file's dict), made one by
        one, table by table; a value of a shape no method writes (a file's mistake) is
        carried as it is, for the loader to refuse with its one line."""
        b = cls(data.get("name"), **{k: data[k] for k in ("summary", "variant", "seed", "until") if k in data})
        for key in ("name", "turns"):  # required: left out, the loader says "<key>: missing"
            if key not in data:
                b = b._with(lambda d, key=key: d.pop(key))
        readers = {"world": Scenario._read_world, "network": Scenario._read_network, "clocks": Scenario._read_clocks,
                   "turns": Scenario._read_turns, "faults": Scenario._read_faults, "expect": Scenario._read_expect}
        for key, value in data.items():
            if key in ("name", "summary", "variant", "seed", "until"):
                continue
            reader = readers.get(key)
            b = reader(b, value) if reader is not None else b._raw(key, value)
        return b

    def _read_world(self, world) -> "Scenario":
        return self.world(**world) if isinstance(world, dict) else self._raw("world", world)

    def _read_network(self, network) -> "Scenario":
        if not isinstance(network, dict) or not set(network) <= {"latency", "loss", "links"} \
                or not isinstance(network.get("links", {}), dict):
            return self._raw("network", network)
        b = self.network(network.get("latency"), network.get("loss")) if set(network) - {"links"} else self
        for name, spec in network.get("links", {}).items():
            fits = isinstance(spec, dict) and set(spec) <= {"latency", "loss"}
            b = b.link(name, **spec) if fits else b._with(
                lambda d, name=name, spec=spec: d.setdefault("network", {}).setdefault("links", {}).__setitem__(
                    name, copy.deepcopy(spec)))
        return b

    def _read_clocks(self, clocks) -> "Scenario":
        if not isinstance(clocks, dict):
            return self._raw("clocks", clocks)
        b = self
        for node, spec in clocks.items():
            fits = isinstance(spec, dict) and set(spec) <= {"offset", "drift_ppm", "steps"}
            b = b.clock(node, **spec) if fits else b._with(
                lambda d, node=node, spec=spec: d.setdefault("clocks", {}).__setitem__(node, copy.deepcopy(spec)))
        return b

    def _read_turns(self, turns) -> "Scenario":
        if not isinstance(turns, list):
            return self._raw("turns", turns)
        b = self
        for turn in turns:
            b = b._turn_from_table(turn)
        return b

    def _read_faults(self, faults) -> "Scenario":
        if not isinstance(faults, list):
            return self._raw("faults", faults)
        b = self
        for f in faults:
            b = b.fault(_fault_from_table(f)) if isinstance(f, dict) else b._with(
                lambda d, f=f: d.setdefault("faults", []).append(copy.deepcopy(f)))
        return b

    def _read_expect(self, expect) -> "Scenario":
        if not isinstance(expect, dict):
            return self._raw("expect", expect)
        b = self
        for variant, table in expect.items():
            b = b.expect(variant, table) if isinstance(table, dict) else b._with(
                lambda d, v=variant, t=table: d.setdefault("expect", {}).__setitem__(v, copy.deepcopy(t)))
        return b

    @classmethod
    def from_file(cls, path: str | Path) -> "Scenario":
        """The builder of a scenario file (checked: a bad file raises its one line)."""
        load(path)
        return cls.from_dict(tomllib.loads(Path(path).read_text(encoding="utf-8")))

    def _turn_from_table(self, turn) -> "Scenario":
        if not isinstance(turn, dict) or not set(turn) <= {"chat", "tool_calls"} \
                or not isinstance(turn.get("tool_calls", []), list):
            return self._with(lambda d: d["turns"].append(copy.deepcopy(turn)))
        b = self.turn(turn.get("chat"))
        for tc in turn.get("tool_calls", []):
            tc = dict(tc) if isinstance(tc, dict) else tc
            tool = tc.pop("tool", "execute") if isinstance(tc, dict) else None
            try:
                b = {"execute": b.execute, "edit_files": b.edit_files, "write_file": b.write_file}[tool](**tc)
            except (KeyError, TypeError):  # not a call the methods write: the loader names what is wrong
                raw = tc if not isinstance(tc, dict) else {**tc, **({"tool": tool} if tool is not None else {})}
                b = b._raw_call(raw)
        if "tool_calls" in turn and not turn["tool_calls"]:
            b = b._with(lambda d: d["turns"][-1].__setitem__("tool_calls", []))
        return b

    # A value no method writes (a file's mistake), kept as it is so the loader reports it.
    def _raw(self, key: str, value) -> "Scenario":
        return self._with(lambda d: d.__setitem__(key, copy.deepcopy(value)))

    def _raw_call(self, table) -> "Scenario":
        return self._call(copy.deepcopy(table))


# ---------------------------------------------------------------------------
# Running
# ---------------------------------------------------------------------------


class FaultDidNothing(AssertionError):
    """``run``'s failure when a fault did nothing, never fired or raced nothing (the
    module's theory of operation): the message names each such fault and why; ``result``
    is the run, ``problems`` the ``FaultProblem``s (index, problem, text)."""

    def __init__(self, message: str, result: "Result", problems: list):
        super().__init__(message)
        self.result = result
        self.problems = problems


def _allowed(allow_noop_faults, faults: int, name: str) -> frozenset[int]:
    """The fault indexes ``allow_noop_faults`` lets do nothing: all of them (True), none
    (False) or the ones listed; anything else is refused (never taken and ignored)."""
    if allow_noop_faults is True or allow_noop_faults is False:
        return frozenset(range(faults)) if allow_noop_faults else frozenset()
    if not isinstance(allow_noop_faults, (list, tuple, set, frozenset)) \
            or not all(type(i) is int for i in allow_noop_faults):
        raise TypeError(f"allow_noop_faults: expected True, False or a list of fault indexes, "
                        f"got {allow_noop_faults!r}")
    for i in sorted(allow_noop_faults):
        if not 0 <= i < faults:
            have = f"faults[0]..faults[{faults - 1}]" if faults else "no faults"
            raise ValueError(f"allow_noop_faults: {name} has no faults[{i}] (it has {have})")
    return frozenset(allow_noop_faults)


def run(world: "Scenario | ScenarioValue | str | Path", variant: str | None = None, seed: int | None = None,
        until: str | None = None, *, allow_noop_faults: "bool | list[int]" = False) -> Result:
    """Run a builder, a scenario value or a scenario file under ``variant`` (default: the
    scenario's) with ``seed`` (default: the scenario's) for ``until`` (a duration).

    Raises ``FaultDidNothing`` when a fault did nothing, never fired (unless the
    variant's ``faults_never_fired`` lists it) or raced nothing, except the faults
    ``allow_noop_faults`` lets (True: all; a list: those indexes)."""
    __tracebackhide__ = True  # (pytest shows the test's line, not this one)
    from toolcall_sim.world.scenario_spec import parse_duration

    file = None
    if isinstance(world, Scenario):
        value = world.scenario
    elif isinstance(world, ScenarioValue):
        value = world
    elif isinstance(world, (str, Path)):
        value, file = load(world), str(world)
    else:
        raise TypeError(f"run: expected a Scenario, a scenario value or a path, got {type(world).__name__}")
    allowed = _allowed(allow_noop_faults, len(value.faults), value.name)
    until_ms = None if until is None else parse_duration(until, "until")
    result = Result(run_scenario(value, variant, seed, until_ms), file)
    problems = [p for p in result._fault_problems() if p.index not in allowed]
    if problems:
        raise FaultDidNothing(told.noop_faults(value.name, result.variant, result.seed,
                                               [p.text for p in problems], sorted({p.index for p in problems})),
                              result, problems)
    return result
