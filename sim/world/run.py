"""Run a scenario in the simulated world and summarise it.

``build(scenario, variant)`` gives the pure model's ``WorldConfig`` plus the world's options
(sim/world/build.py's timed world, or a ``[replay]`` file's explorer world,
sim/world/replay_world.py); ``run_scenario`` runs it in the simulated world, checks the
properties and the scenario's expectations, and returns a ``RunResult`` that the command
line prints as a story or as JSON.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import uuid
from dataclasses import dataclass

from toolcall_sim.model import agent
from toolcall_sim.model import properties as props
from toolcall_sim.model import system as msys

from toolcall_sim.world.answers import answer_failures
from toolcall_sim.world.scenario import Scenario, ScenarioError, ToolCallSpec, check_until, format_duration
from toolcall_sim.world.replay import trace_sha256
from toolcall_sim.world.simulation import Simulation, WorldOptions

from toolcall_sim.world.build import build as build_timed


def build(scenario: Scenario, variant: str) -> tuple[msys.WorldConfig, WorldOptions]:
    """The world ``scenario`` runs in under ``variant`` (sim/world/build.py), or, for a
    ``[replay]`` file, the explorer's world its steps run in (sim/world/replay_world.py)."""
    if scenario.replay is not None:
        from toolcall_sim.world import replay_world

        return replay_world.world_of(scenario, variant)[0], WorldOptions()
    return build_timed(scenario, variant)


# What a scenario holds that does not decide the run: where it was read from, its prose,
# its expectations, and the defaults the header records as their effective values.
_NOT_RUN = ("path", "summary", "expect", "variant", "seed", "until_ms")
# Fields added after trace hashes were pinned: part of the digest only when set, so every
# scenario that does not use them keeps its digest and its trace hash.
_NEW_WHEN_SET = ("latency_shape", "stalls", "replay")
# The same for fields of the dataclasses inside a scenario: class -> its fields added
# after the pin, left out of the digest while false.
_NEW_FIELDS_WHEN_SET = {ToolCallSpec: ("kill_fails",)}


def scenario_digest(scenario: Scenario) -> str:
    """The scenario's identity by content: SHA-256 of the canonical JSON (sorted keys, no
    spaces) of its validated values that decide the run. The same file read as
    ``us02_x``, ``scenarios/us02_x.toml``, from another checkout or an installed package,
    or a copy elsewhere, has one digest; so a run has one trace hash wherever it runs."""
    values = {name: getattr(scenario, name) for name in _field_names(type(scenario))
              if name not in _NOT_RUN and not (name in _NEW_WHEN_SET and not getattr(scenario, name))}
    # The encoder walks the lists, tuples and dicts itself and asks ``_as_json`` only for
    # what it cannot encode (each dataclass, as a dict of its fields): the JSON of
    # ``dataclasses.asdict`` without its deep copies or a Python call per value.
    canonical = json.dumps(values, sort_keys=True, separators=(",", ":"), default=_as_json)
    return hashlib.sha256(canonical.encode()).hexdigest()


def _as_json(value):
    """``json.dumps``'s ``default`` for the digest: a dataclass as the dict of its fields
    (the one value the encoder cannot take; lists, tuples and dicts it walks itself, a
    tuple as a list), anything else ``_canonical``."""
    kind = type(value)
    if hasattr(kind, "__dataclass_fields__"):
        new = _NEW_FIELDS_WHEN_SET.get(kind)
        if new is not None:
            return {name: getattr(value, name) for name in _field_names(kind)
                    if not (name in new and not getattr(value, name))}
        fields_ = getattr(value, "__dict__", None)
        if fields_ is not None and len(fields_) == len(_field_names(kind)):
            # A frozen dataclass's instance dict holds exactly its fields (nothing else
            # set on it): that dict is the one to encode, keys sorted by the encoder.
            return fields_
        return {name: getattr(value, name) for name in _field_names(kind)}
    return _canonical(value)


_FIELD_NAMES: dict[type, tuple[str, ...]] = {}


def _field_names(cls: type) -> tuple[str, ...]:
    """``dataclasses.fields`` of a class, by name, looked up once per class."""
    names = _FIELD_NAMES.get(cls)
    if names is None:
        names = _FIELD_NAMES[cls] = tuple(f.name for f in dataclasses.fields(cls))
    return names


def _canonical(value):
    """A JSON form for the few non-JSON values a scenario may hold, the same in every
    process: a set in sorted order, an enum by value. Anything else has no canonical form
    (a ``repr`` could hold a memory address), which is a harness error, not a hash."""
    import enum

    if isinstance(value, (set, frozenset)):
        return sorted(value, key=lambda v: json.dumps(v, sort_keys=True, default=_canonical))
    if isinstance(value, enum.Enum):
        return value.value
    raise TypeError(f"a scenario value of type {type(value).__name__} has no canonical form")


@dataclass
class RunResult:
    scenario: Scenario
    variant: str
    seed: int
    until_ms: int
    world: Simulation
    violations: list
    report: props.Report | None = None

    @property
    def trace_bytes(self) -> bytes:
        return ("\n".join(self.world.trace_lines()) + "\n").encode()

    @property
    def trace_sha256(self) -> str:
        return trace_sha256(self.world.trace)

    def tool_call_rows(self) -> list[dict]:
        ev = props.Evidence(self.world.trace, self.world.system)
        names = {c.chat_id: n for n, c in ((s.name, s) for s in self.world.system.config.chats)}
        # The scenario's name of each call: its id, found by chat, provider ID and its
        # place among the calls of its turn with that provider ID (copies share one only
        # within a turn: sim/world/scenario.py).
        ids = {}
        for turn in self.scenario.turns:
            seen: dict[str, int] = {}
            for tc in turn.tool_calls:
                copy = seen[tc.provider] = seen.get(tc.provider, -1) + 1
                ids[turn.chat, tc.provider, copy] = tc.id
        rows = []
        for c in ev.calls:
            results = [
                {
                    "kind": self.world.trace[i].get("result_kind"),
                    "is_error": self.world.trace[i].get("is_error"),
                    "committed_at_s": self.world.trace[i]["t_ms"] / 1000,
                    **{k: self.world.trace[i].get(k) for k in _RESULT_FIELDS},
                }
                for i in ev.results_of(c)
            ]
            rows.append(
                {
                    "chat": names.get(c.chat_id, c.chat_id),
                    "message_id": c.message_id,
                    "id": ids.get((names.get(c.chat_id, c.chat_id), c.provider_id, c.copy), c.provider_id),
                    "provider_id": c.provider_id,
                    "uuid": c.uuid,
                    "tool": c.tool,
                    "process_starts": len(ev.starts[c.uuid]),
                    "edits_applied": len(ev.edits[c.uuid]),
                    "processes_killed": len(ev.kills[c.uuid]),
                    "processes_running_at_end": len(ev.starts[c.uuid]) - len(ev.exits[c.uuid]) - len(ev.kills[c.uuid]),
                    "results": results,
                }
            )
        return rows

    def process_names(self) -> dict[str, str]:
        """Each process ID the agent gave in this run -> the scenario ``id`` of the execute
        call that started it (the tool call UUID under the contract, ``proc-<boot>-<n>``
        without tool call headers: the attribution of model/properties/evidence.py)."""
        ev = props.Evidence(self.world.trace, self.world.system)
        ids = {row["uuid"]: row["id"] for row in self.tool_call_rows()}
        return {key.partition("/")[2]: ids[uuid] for key, uuid in ev.pid_owner.items() if uuid in ids}

    def agent_end_state(self) -> dict:
        """The agent when the run ends, as a user of its API would read it (``run --json``'s
        ``agent``): whether it is up and which boot; per chat the tool call records it holds
        (the latest message's: their count, by route and by state, and each one); and the
        processes of this boot, each held (running or exited, its exit code, and whether
        the next list would reap it: model/agent/processes.py ``reaped_now``) or reaped by a
        list (``process_reaped``). Records and processes of an earlier boot are gone."""
        system = self.world.system
        state = system.agent
        if state is None:
            return {"up": False, "incarnation": None, "chats": [], "processes": []}
        ev = props.Evidence(self.world.trace, system)
        chat_names = {c.chat_id: c.name for c in system.config.chats}
        rows = self.tool_call_rows()
        by_key = {(r["chat"], r["message_id"], r["provider_id"]): r for r in rows}
        chats = []
        # Every chat of the world, in the scenario's order (one the agent holds nothing
        # for shows 0), then any other chat ID a crafted header made the agent hold.
        chat_ids = [c.chat_id for c in system.config.chats]
        chat_ids += [chat_id for chat_id in state.chats if chat_id not in chat_names]
        for chat_id in chat_ids:
            name = chat_names.get(chat_id, chat_id)
            held = state.chats.get(chat_id)
            if held is None:
                chats.append({"chat": name, "latest_message_id": None, "records": 0, "by_route": {}, "by_state": {},
                              "held": []})
                continue
            records = []
            for provider_id, rec in held.records.items():
                row = by_key.get((name, held.latest_message_id, provider_id))
                records.append({
                    "tool_call": row["id"] if row else provider_id,
                    "message_id": held.latest_message_id,
                    "route": _ROUTE_OF_TOOL.get(row["tool"]) if row else None,
                    "state": "canceled" if rec.canceled else "pending" if rec.recorded is None else "recorded",
                    "status": rec.recorded.status if rec.recorded is not None and not rec.canceled else None,
                })
            chats.append({
                "chat": name, "latest_message_id": held.latest_message_id, "records": len(records),
                "by_route": _counts(r["route"] or "unknown" for r in records),
                "by_state": _counts(r["state"] for r in records),
                "held": records,
            })
        names = self.process_names()
        clock_ms = system.config.clock(msys.AGENT).read(self.until_ms)
        procs = []
        for pid, proc in state.processes.items():
            procs.append((ev.pid_start.get(f"{state.incarnation}/{pid}", -1), {
                "id": pid, "tool_call": names.get(pid), "chat": chat_names.get(proc.chat_id, proc.chat_id),
                "running": proc.running, "exit_code": proc.exit_code, "reaped": False, "reaped_at_s": None,
                "reaped_at_next_list": agent.reaped_now(state, proc, clock_ms),
            }))
        for rec in self.world.trace:
            if rec.get("note") == "process_reaped" and rec.get("incarnation") == state.incarnation:
                pid = rec["pid"]
                procs.append((ev.pid_start.get(f"{state.incarnation}/{pid}", -1), {
                    "id": pid, "tool_call": names.get(pid), "chat": chat_names.get(rec.get("chat_id"), rec.get("chat_id")),
                    "running": False, "exit_code": rec.get("exit_code"), "reaped": True, "reaped_at_s": rec["t_ms"] / 1000,
                    "reaped_at_next_list": False,
                }))
        procs.sort(key=lambda p: p[0])
        return {"up": True, "incarnation": state.incarnation, "chats": chats, "processes": [p for _, p in procs]}

    def found(self) -> tuple[list[str], list[str]]:
        """(the properties violated, the residual risks reported), sorted, as
        ``violations`` and ``residual_risks`` of an expectation name them: a known finding
        is a real violation (expected under ``violations``), only named."""
        found = sorted({v.property for v in self.violations if v.residual_risk is None or props.is_known_finding(v)})
        info = self.report.informational if self.report else []
        risks = sorted({v.residual_risk for v in list(self.violations) + list(info)
                        if v.residual_risk is not None and not props.is_known_finding(v)})
        return found, risks

    def expectation_failures(self) -> list[str]:
        exp = self.scenario.expectation(self.variant)
        found, risks = self.found()
        if exp is None:
            return self._fault_failures(()) + ([f"violations: {', '.join(found)}"] if found else [])
        failures = self._fault_failures(exp.faults_never_fired)
        rows = {r["id"]: r for r in self.tool_call_rows()}
        for call_id, wanted in exp.tool_calls:
            row = rows.get(call_id)
            for key, value in wanted:
                if key == "result":
                    if row is None:
                        failures.append(f"{call_id}.result: the tool call was never committed")
                    else:
                        failures += _result_failures(call_id, dict(value), row["results"][0] if row["results"] else None)
                    continue
                if row is None:
                    got = 0 if key != "results" else ()
                elif key == "results":
                    got = tuple(r["kind"] for r in row["results"])
                else:
                    got = row[key]
                if got != value:
                    failures.append(f"{call_id}.{key}: expected {value!r}, got {got!r}")
        if exp.sometimes:
            unreached = set(self.report.unreached) if self.report else set(exp.sometimes)
            for name in exp.sometimes:
                if name in unreached:
                    failures.append(f"sometimes: {name} was never reached")
        if exp.interrupt_finished_within_ms is not None:
            failures += self._interrupt_failures(exp.interrupt_finished_within_ms)
        if exp.requests:
            process_names = self.process_names()
            for name, wanted in exp.requests:
                answer = next((r for r in self.world.trace if r.get("kind") == "probe_answer" and r.get("name") == name),
                              None)
                failures += answer_failures(name, wanted, answer, process_names)
        if exp.records_at_end:
            held = {row["chat"]: row["records"] for row in self.agent_end_state()["chats"]}
            for chat, count in exp.records_at_end:
                if held.get(chat, 0) != count:
                    failures.append(f"records_at_end.{chat}: expected {count}, got {held.get(chat, 0)}")
        if exp.violations is not None and tuple(sorted(exp.violations)) != tuple(found):
            failures.append(f"violations: expected {sorted(exp.violations)}, got {found}")
        if exp.residual_risks is not None and tuple(sorted(exp.residual_risks)) != tuple(risks):
            failures.append(f"residual_risks: expected {sorted(exp.residual_risks)}, got {risks}")
        return failures

    def _fault_failures(self, never: tuple[int, ...]) -> list[str]:
        """A fault that did nothing, or never fired at all (its trigger's nth event or
        message never came before the run ended: sim/world/simulation.py Rule 5), makes the scenario
        say something that did not happen, unless the expectation says it never fires
        (``faults_never_fired``: then firing is the failure)."""
        return [p.text for p in self.fault_problems(never)]

    def fault_problems(self, never: tuple[int, ...] = ()) -> list["FaultProblem"]:
        """Each fault that did nothing (``did_nothing``), never fired (``never_fired``,
        unless ``never`` lists it) or fired although ``never`` lists it (``fired``), in
        the scenario's order, named by index, kind and trigger."""
        fired, skipped = self.world.fired, self.world.skipped
        out = []
        for i, fault in enumerate(self.world.options.faults):
            name = f"faults[{i}] ({fault_words(fault)})"
            if i in skipped:
                out.append(FaultProblem(i, "did_nothing", f"{name} fired at {fired[i] / 1000:g} s and did nothing: "
                                                          f"{skipped[i]}"))
            elif i in never and i in fired:
                out.append(FaultProblem(i, "fired", f"faults_never_fired: {name} fired at {fired[i] / 1000:g} s"))
            elif i not in fired and i not in never:
                out.append(FaultProblem(i, "never_fired", f"{name} never fired: its trigger did not come before the "
                                                          f"run ended at {format_duration(self.until_ms)}"))
        return out

    def race_problems(self) -> list["FaultProblem"]:
        """Each fault aimed at a tool call that fired when that call was already over
        (``raced_nothing``). A fault is aimed at a call when its trigger names it
        (``when = { event = ..., tool_call = "toolu_01" }``) or the message it loses,
        delays or panics on is the call's; a crafted request (``request``) names a call
        to forge a request about it, not to race it, and a fault at a time names none.
        The call is over once its last result is committed and its last process has
        exited or been killed; a call with no result, or a process still running at the
        end, is never over. A fault in the same millisecond as the call's end still
        raced it. This is the scenario API's check that a story's racing steps
        overlapped (sim/api.py ``run``); a scenario file's expectations do not ask it."""
        spans = self._call_ends()
        out = []
        for i, fault in enumerate(self.world.options.faults):
            call = aimed_call(fault)
            if call is None or i not in self.world.fired or call not in spans:
                continue
            at_ms, (end_ms, committed_ms, exited_ms) = self.world.fired[i], spans[call]
            if end_ms is None or at_ms <= end_ms:
                continue
            parts = [f"its last result committed at {committed_ms / 1000:g} s"]
            if exited_ms is not None:
                parts.append(f"its last process ended at {exited_ms / 1000:g} s")
            out.append(FaultProblem(i, "raced_nothing", f"faults[{i}] ({fault_words(fault)}) raced nothing: it fired "
                                                        f"at {at_ms / 1000:g} s, after {call} was over "
                                                        f"({', '.join(parts)})"))
        return out

    def _call_ends(self) -> dict[str, tuple]:
        """Scenario ``id`` -> (the true time the call was over, or None while it is not;
        its last result's commit time; its last process end, or None without one). Copies
        of one ID (a model's duplicate provider IDs) are over when all of them are."""
        ev = props.Evidence(self.world.trace, self.world.system)
        trace = self.world.trace
        rows: dict[str, list[dict]] = {}
        for row in self.tool_call_rows():
            rows.setdefault(row["id"], []).append(row)
        out: dict[str, tuple] = {}
        for call, copies in rows.items():
            commits = [round(r["committed_at_s"] * 1000) for row in copies for r in row["results"]]
            ends = [trace[i]["t_ms"] for row in copies for i in ev.exits[row["uuid"]] + ev.kills[row["uuid"]]]
            open_ = any(not row["results"] or row["processes_running_at_end"] > 0 for row in copies)
            committed, exited = max(commits, default=None), max(ends, default=None)
            out[call] = (None if open_ else max(commits + ends), committed, exited)
        return out

    def _interrupt_failures(self, within_ms: int) -> list[str]:
        """Every interrupt the user asked for finished (``interruption_finished``) within
        ``within_ms`` of true time."""
        trace = self.world.trace
        out = []
        for i, rec in enumerate(trace):
            if rec.get("kind") != "note" or rec.get("note") != "interrupt_requested":
                continue
            done = next((r for r in trace[i + 1:] if r.get("kind") == "note" and r.get("note") == "interruption_finished"
                         and r.get("chat_id") == rec.get("chat_id")), None)
            if done is None:
                out.append(f"interrupt_finished_within: the interrupt at {rec['t_ms'] / 1000}s never finished")
            elif done["t_ms"] - rec["t_ms"] > within_ms:
                out.append(f"interrupt_finished_within: the interrupt at {rec['t_ms'] / 1000}s took "
                           f"{format_duration(done['t_ms'] - rec['t_ms'])} (> {format_duration(within_ms)})")
        return out


def run_scenario(scenario: Scenario, variant: str | None = None, seed: int | None = None,
                 until_ms: int | None = None, idle: str | None = None, verdicts_only: bool = False) -> RunResult:
    """Run the scenario in the simulated world (sim/world/simulation.py). ``idle`` overrides how the replicas' periodic
    loops run (``WorldOptions.idle``: "batched", the default, or "stepwise", which
    records every firing). ``verdicts_only`` leaves the header record and the action
    records out of the trace (``WorldOptions.action_records``), for a caller that reads
    only the verdicts (the swarm's ``judge``): no property reads either, the header's
    scenario digest is a sixth of a swarm seed's cost before the run and the action
    records a third of its trace. Such a trace is not the run's trace (its hash differs):
    it is never written or hashed; the verdicts are the same (tests/test_swarm.py)."""
    variant = variant or scenario.variant
    if scenario.replay is not None:
        return _replayed(scenario, variant, seed, until_ms, verdicts_only)
    seed = scenario.seed if seed is None else seed
    if until_ms is None:
        until_ms = scenario.until_ms
    else:
        check_until(until_ms, "--until")
        for i, fault in enumerate(scenario.faults):
            t = fault.trigger
            if t.at_ms is not None and t.at_ms + t.offset_ms >= until_ms:
                raise ScenarioError(f"--until: {format_duration(until_ms)} ends the run before faults[{i}] "
                                    f"({fault.kind} at {format_duration(t.at_ms + t.offset_ms)}) would fire")
    config, options = build(scenario, variant)
    if idle is not None:
        options = dataclasses.replace(options, idle=idle)
    if verdicts_only:
        options.action_records = False  # (the options were just built for this run)
    # The scenario by content, never by the path it was typed as (a path would give the
    # same run another hash in another folder or checkout).
    record = None
    if not verdicts_only:
        record = {"scenario": scenario.name, "scenario_sha256": scenario_digest(scenario), "variant": variant,
                  "seed": seed, "until_ms": until_ms}
    world = Simulation(config, seed, options, record)
    world.run(until_ms)
    report = props.evaluate(world.trace, world.system)
    return RunResult(scenario, variant, seed, until_ms, world, report.violations, report=report)


def _replayed(scenario: Scenario, variant: str, seed: int | None, until_ms: int | None,
              verdicts_only: bool) -> RunResult:
    """A scenario with ``[replay]``: its steps applied in order in its world, judged as
    any run (sim/world/replay_world.py); it draws nothing and ends at its last step,
    so a seed or an end of its own is refused (Rule 3 there)."""
    from toolcall_sim.world import replay_world

    for flag, value in (("--seed", seed), ("--until", until_ms)):
        if value is not None:
            raise ScenarioError(f"{flag}: {scenario.path} replays its steps: it draws nothing and ends at its last step")
    config, horizon_ms = replay_world.world_of(scenario, variant)
    record = None if verdicts_only else {"scenario": scenario.name, "scenario_sha256": scenario_digest(scenario),
                                         "variant": variant, "seed": scenario.seed,
                                         "until_ms": scenario.replay.steps[-1].at_ms}
    world = Simulation(config, scenario.seed, WorldOptions(action_records=not verdicts_only), record)
    replay_world.run(scenario, world, horizon_ms)
    report = props.evaluate(world.trace, world.system)
    return RunResult(scenario, variant, scenario.seed, scenario.replay.steps[-1].at_ms, world, report.violations,
                     report=report)


@dataclass(frozen=True)
class FaultProblem:
    """A fault that did not make the story it is in: ``problem`` is ``did_nothing``,
    ``never_fired``, ``fired`` (``faults_never_fired`` lists it) or ``raced_nothing``
    (``RunResult.race_problems``); ``text`` names it by index, kind and trigger."""

    index: int
    problem: str
    text: str


# The field that tells one fault of a kind from another, and how its words show it.
_FAULT_TARGET = {"takeover": ("to", "to {}"), "ownership_change": ("to", "to {}"), "replica_crash": ("replica", "of {}"),
                 "workspace": ("state", "{}"), "request": ("name", "{!r}"), "partition": ("between", "between {}"),
                 "heal": ("between", "between {}")}


def fault_words(fault) -> str:
    """A fault in words, its kind, target and trigger: ``takeover to replica-1 at 1m``,
    ``lose when response on start of toolu_01 (nth 1)``."""
    key, shape = _FAULT_TARGET.get(fault.kind, (None, ""))
    value = fault.get(key) if key else None
    if isinstance(value, (list, tuple)):
        value = " and ".join(str(v) for v in value)
    target = f" {shape.format(value)}" if value is not None else ""
    return f"{fault.kind}{target} {_trigger_words(fault)}"


def aimed_call(fault) -> str | None:
    """The tool call a fault races (``RunResult.race_problems``): the one its trigger or
    its message names; None for a crafted request, a fault at a time, or one naming no call."""
    if fault.kind == "request":
        return None
    t = fault.trigger
    match = t.match if t.event is not None else fault.get("message")
    return getattr(match, "tool_call", None)


def _trigger_words(fault) -> str:
    """What a fault waits for, in words: ``when process_started of toolu_01 (nth 2)``."""
    t = fault.trigger
    if t.at_ms is not None:
        return f"at {format_duration(t.at_ms + t.offset_ms)}"
    m = t.match if t.event is not None else fault.get("message")
    what = t.event or f"{m.direction} on {m.route or 'any route'}"
    words = f"when {what}" + (f" of {m.tool_call}" if m.tool_call else "") + f" (nth {m.nth})"
    return words + (f" + {format_duration(t.offset_ms)}" if t.offset_ms else "")


# The agent route a tool's request goes to (its records are that route's).
_ROUTE_OF_TOOL = {"execute": "start", "edit_files": "edit", "write_file": "write"}


def _counts(words) -> dict[str, int]:
    out: dict[str, int] = {}
    for word in words:
        out[word] = out.get(word, 0) + 1
    return dict(sorted(out.items()))


# Fields of a result_committed record that a row shows and ``result = {...}`` may check.
_RESULT_FIELDS = ("reason", "process_id", "exit_code", "replica", "attempt", "generation_attempt", "task")


def _result_failures(call_id: str, wanted: dict, first: dict | None) -> list[str]:
    """``result = {...}``: the first committed result of the call has these fields;
    ``committed_before`` / ``committed_after`` bound its commit time (true time)."""
    if first is None:
        return [f"{call_id}.result: no result was committed"]
    out = []
    at_ms = round(first["committed_at_s"] * 1000)
    for key, value in sorted(wanted.items()):
        if key == "committed_before":
            if not at_ms < value:
                out.append(f"{call_id}.result.committed_before: committed at {format_duration(at_ms)}, not before {format_duration(value)}")
        elif key == "committed_after":
            if not at_ms > value:
                out.append(f"{call_id}.result.committed_after: committed at {format_duration(at_ms)}, not after {format_duration(value)}")
        else:
            got = first.get(key)
            if got != value:
                out.append(f"{call_id}.result.{key}: expected {value!r}, got {got!r}")
    return out
