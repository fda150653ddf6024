"""Swarm testing: many small random worlds, each with its own mix of fault kinds.

Theory of operation
-------------------
Random testing with every fault kind always on tends to test the *average* of the fault
kinds: a world that restarts the agent every few minutes never lets a 20-minute command
reach its second attempt, and a world full of partitions rarely shows what one delayed
start request does to an interrupt. Swarm testing (Groce et al., "Swarm Testing", ISSTA
2012; TigerBeetle's VOPR does the same) instead turns each fault kind on or off per run,
so some runs are quiet except for one kind of trouble and others pile several together.

One swarm seed S is one run:

1. ``draw_scenario(S)`` draws, from ``random.Random(f"swarm:{S}")`` and nothing else, a
   world (replicas, latency range, loss), a workload (chats, assistant turns, tool
   calls), the stories it tells (each of ``STORIES`` with probability 1/4), a fault mix
   (each kind of ``FAULT_KINDS`` enabled with probability 1/2, then 0-4 faults of the
   enabled kinds) and how long to run. A story is the world shape of a hand-written
   scenario that exposes a race (a start delayed across an agent restart, an owner
   change just as a command exits, two chats running the same command, ...): it
   reshapes a few tool calls or world durations and adds the faults that make the race
   happen; the random faults are then drawn over the result. The result is a plain dict
   in the shape of a scenario file and is validated by ``sim.scenario.from_dict``, so a
   swarm world *is* a scenario file: ``to_toml`` writes it out and ``toolcall-sim run``
   runs it again.
2. ``run_seed`` runs it with ``sim.run.run_scenario`` under the variant. A violation with
   ``residual_risk`` None is a new finding (a *failure*); documented residual risks and
   known findings (``model.properties.KNOWN_FINDINGS``: the slow-spawn ``timed_out`` of
   scenarios/finding_slow_spawn_timed_out.toml) are counted by name, each in its own
   tally, and are not failures. Every class is sampled: no story steers clear of one. A run that raises is a failure of the pseudo
   property ``exception``: the model must not crash on any world the scenario format
   can describe.
3. A failure is minimized (``minimize``): greedy delta debugging that takes one step at
   a time (halve the run time, remove one fault, one chat, one extra tool call or one
   extra turn, zero the network loss, drop a replica) and keeps each step after which
   the *same* property still fails as a new finding, in passes until a pass keeps none
   (so the result is 1-minimal). Each candidate is a full deterministic re-run with the
   same root seed, so the minimized scenario fails on its own. Steps only ever remove,
   so the schedule never grows.
4. ``run_swarm`` runs seeds ``first_seed .. first_seed + seeds - 1`` in order, in this
   process or in ``workers`` spawned processes; each seed's outcome depends only on the
   seed and the variant, and the outcomes are ordered by seed, so the report does not
   depend on the number of workers.

Rule 1. No global ``random``, no wall clock, no iteration over sets or hash order: every
        choice is a call on the seed's own generator in program order, over sorted or
        literal sequences.
Rule 2. Drawn durations are whole milliseconds written with ``format_duration``, and the
        loss is rounded to 4 decimals, so the TOML written for a failure parses back to
        the identical dict (checked before the file is written).
Rule 3. A seed reports at most one failure: the earliest new finding (by simulated time,
        then property name); the seed's other failing properties are listed with it.
        Minimizing one property per seed keeps the cost of a failing seed bounded.
Rule 4. A story stays inside the contract's assumptions: one that aims at an instant
        first makes the world exact enough to hit it (every message takes the same
        time). One that stretches a duration past reality to widen a race window
        (minutes-long handlers) leaves the rest of the world as drawn: a command that
        then reaches its timeout while its start is pending is the known finding
        ``run_age_counts_from_record`` (scenarios/finding_slow_spawn_timed_out.toml),
        reported by name, so no class of outcome is kept out of the sample.
"""

from __future__ import annotations

import json
import multiprocessing
import random
import re
import sys
import tomllib
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from model import vocabulary  # the fault kinds and trigger events swarm draws
from model import planted_bugs
from model.properties import KNOWN_FINDINGS
from model.timing import DEFAULT_TIMING

from .output import check_out_dir, default_out_dir, sigint_deferred, sigint_flag, write_atomic
from .scenario import ScenarioError, format_duration, from_dict, parse_duration

# Fault kinds swarm toggles per seed: the vocabulary's swarm subset (model/vocabulary.py
# says why the others stay out).
FAULT_KINDS = vocabulary.SWARM_FAULT_KINDS
MAX_FAULTS = 4
STORY_PROBABILITY = 0.25  # each of STORIES is told in about one seed in four
EARLY_HORIZON_MS = 5 * 60_000  # half of the timed faults fire in the run's first 5 minutes
ATTEMPT_TIMEOUT_MS = DEFAULT_TIMING.task_timeout_ms  # chatd's attempt timeout (15 min)
MIN_UNTIL_MS = 5 * 60_000  # minimizing halves the run time down to this, no further
MAX_MINIMIZE_RUNS = 150  # bound on the re-runs one failing seed may cost
DEFAULT_OUT_DIR = default_out_dir("swarm")  # relative: under the current directory, never in the package
PROGRESS_EVERY = 25  # seeds between progress lines on stderr
EXCEPTION = "exception"  # pseudo property: the run raised

_MS = 1
_S = 1_000
_MIN = 60_000
_H = 3_600_000

_COMMAND_BASES = ("go test ./...", "make build", "npm run lint", "cargo check", "pytest -q", "make e2e")
_ROUTE_OF_TOOL = {"execute": "start", "edit_files": "edit", "write_file": "write"}
_EXECUTE_TIMEOUTS_MS = (30 * _S, 1 * _MIN, 5 * _MIN, 10 * _MIN, 20 * _MIN, 30 * _MIN, 1 * _H, 2 * _H)
# The trigger events swarm draws (a subset of vocabulary.TRIGGER_EVENTS, in this order:
# the order is part of every seed's draw).
_TRIGGER_EVENTS = ("request_sent", "request_delivered", "response_sent", "process_started", "result_committed")
assert set(_TRIGGER_EVENTS) <= set(vocabulary.TRIGGER_EVENTS)


# ---------------------------------------------------------------------------
# Drawing a world
# ---------------------------------------------------------------------------


def draw_scenario(seed: int) -> dict:
    """The scenario dict of swarm seed ``seed``: same seed, same dict, in any process."""
    rng = random.Random(f"swarm:{seed}")
    replicas = rng.randint(1, 3)
    latency_min_ms = rng.randint(1, 20)
    # Latency stays well below the agent's 2 s age margin: a longer transit is the
    # documented residual risk (age_check_best_effort), which a delay fault reaches anyway.
    latency_max_ms = latency_min_ms + rng.randint(0, 300)
    loss = 0.0 if rng.random() < 0.5 else round(rng.uniform(0.0, 0.05), 4)
    until_ms = rng.randint(20, 90) * _MIN

    files: dict[str, str] = {}
    turns = _draw_workload(rng, files)
    d = _Draft(rng, replicas, latency_min_ms, latency_max_ms, until_ms, turns)
    told = [name for name, _ in STORIES if rng.random() < STORY_PROBABILITY]
    for name, tell in STORIES:
        if name in told:
            tell(d)

    calls = [tc for turn in turns for tc in turn["tool_calls"]]
    chats = sorted({turn["chat"] for turn in turns})
    enabled = [kind for kind in FAULT_KINDS if rng.random() < 0.5]
    faults = []
    if enabled:
        for _ in range(rng.randint(0, MAX_FAULTS)):
            faults.append(_draw_fault(rng, rng.choice(enabled), d.replicas, chats, calls, d.until_ms))

    world: dict = {"replicas": d.replicas}
    if d.gen_ms is not None:
        world["generation_time"] = format_duration(d.gen_ms)
    if d.handler_ms:
        world["handler_time"] = format_duration(d.handler_ms)
    if files:
        world["files"] = files
    return {
        "name": f"swarm-{seed}",
        "summary": f"swarm seed {seed}; stories: {', '.join(told) or 'none'}; "
                   f"fault kinds on: {', '.join(enabled) or 'none'}",
        "seed": seed,
        "until": format_duration(d.until_ms),
        "world": world,
        "network": {
            "latency": {"min": format_duration(d.latency_min_ms), "max": format_duration(d.latency_max_ms)},
            "loss": loss,
        },
        "turns": turns,
        "faults": d.faults + faults,
    }


def _draw_workload(rng: random.Random, files: dict[str, str]) -> list[dict]:
    """1-2 chats, 1-2 assistant turns each, 1-3 tool calls per turn. IDs, commands and
    paths are unique in the whole scenario: the checkers attribute a process to its call
    by (chat, command) and an edit by (chat, path), and the agent's scripts are keyed by
    command alone."""
    turns = []
    serial = 0
    for chat_no in range(1, rng.randint(1, 2) + 1):
        for _ in range(rng.randint(1, 2)):
            calls = []
            for _ in range(rng.randint(1, 3)):
                serial += 1
                calls.append(_draw_tool_call(rng, serial, files))
            turns.append({"chat": f"chat-{chat_no}", "tool_calls": calls})
    return turns


def _draw_tool_call(rng: random.Random, serial: int, files: dict[str, str]) -> dict:
    call_id = f"toolu_{serial:02d}"
    shape = rng.choices(("foreground", "background", "edit", "write"), weights=(4, 1, 2, 2))[0]
    if shape == "foreground":
        # A third each: done within seconds, within one attempt, or outliving the
        # 15-minute attempt timeout (the CODAGT-757 shape: the retry must attach).
        bucket = rng.randint(0, 2)
        if bucket == 0:
            runs_for_ms = rng.randint(1 * _S, 60 * _S)
        elif bucket == 1:
            runs_for_ms = rng.randint(1 * _MIN, 14 * _MIN)
        else:
            runs_for_ms = rng.randint(ATTEMPT_TIMEOUT_MS + 1 * _MIN, 60 * _MIN)
        call = {"id": call_id, "tool": "execute", "command": f"{rng.choice(_COMMAND_BASES)} --job={serial}",
                "runs_for": format_duration(runs_for_ms)}
        if rng.random() < 0.85:  # otherwise the 10 s default timeout
            call["timeout"] = format_duration(rng.choice(_EXECUTE_TIMEOUTS_MS))
        exit_code = rng.choice((0, 0, 0, 1, 2))
        if exit_code:
            call["exit_code"] = exit_code
        if rng.random() < 0.3:
            call["output"] = f"=== RUN Test{serial}\n"
        return call
    if shape == "background":
        return {"id": call_id, "tool": "execute", "command": f"{rng.choice(_COMMAND_BASES)} --serve={serial}",
                "runs_for": format_duration(rng.randint(1 * _MIN, 2 * _H)), "background": True}
    if shape == "edit":
        path = f"/home/coder/src/file{serial}.go"
        lines = [f"var v{k} = {rng.randint(0, 99)}" for k in range(rng.randint(1, 4))]
        files[path] = "package src\n" + "\n".join(lines) + "\n"
        search = rng.choice(lines)
        return {"id": call_id, "tool": "edit_files", "path": path,
                "edits": [{"search": search, "replace": f"{search} // edited by {call_id}"}]}
    return {"id": call_id, "tool": "write_file", "path": f"/home/coder/notes/note{serial}.md",
            "content": f"# note {serial}\n{rng.randint(0, 10**6)}\n"}


def _draw_fault(rng: random.Random, kind: str, replicas: int, chats: list[str], calls: list[dict],
                until_ms: int) -> dict:
    fault: dict = {"kind": kind}
    if kind in ("lose", "delay"):
        call = rng.choice(calls)
        route = _ROUTE_OF_TOOL[call["tool"]]
        if call["tool"] == "execute" and rng.random() < 0.3:
            route = "cancel"  # only sent after an interrupt; harmless when never sent
        fault["message"] = {"route": route, "tool_call": call["id"],
                            "direction": rng.choice(("request", "response")), "nth": _draw_nth(rng)}
        if kind == "delay":
            fault["by"] = format_duration(rng.randint(1 * _S, 120 * _S))
        return fault
    _draw_trigger(rng, fault, calls, until_ms)
    if kind == "agent_restart":
        fault["downtime"] = format_duration(rng.choice((0, rng.randint(1 * _S, 30 * _S), rng.randint(1 * _MIN, 10 * _MIN))))
    elif kind == "replica_crash":
        fault["replica"] = f"replica-{rng.randint(1, replicas)}"
        fault["downtime"] = format_duration(rng.choice((0, rng.randint(1 * _S, 2 * _MIN))))
    elif kind in ("ownership_change", "interrupt"):
        fault["chat"] = rng.choice(chats)
    elif kind == "partition":
        fault["between"] = ["agent", f"replica-{rng.randint(1, replicas)}"]
        fault["duration"] = format_duration(rng.randint(5 * _S, 15 * _MIN))
    elif kind == "db_outage":
        fault["duration"] = format_duration(rng.randint(1 * _S, 3 * _MIN))
    return fault


def _draw_nth(rng: random.Random) -> int:
    """Mostly the first message or event of its kind (every run has one); sometimes the
    second, which only a retry or a re-read sends."""
    return 1 if rng.random() < 0.75 else 2


def _draw_trigger(rng: random.Random, fault: dict, calls: list[dict], until_ms: int) -> None:
    """Two thirds of scheduled faults fire at a time in the first two thirds of the run;
    the rest fire a few seconds after a named event of a random tool call, which is how
    narrow races (an interrupt while a start request is in flight) get hit at all."""
    if rng.random() < 2 / 3:
        # Half of them early: tool calls start within seconds and most short ones are
        # over within minutes, so a time drawn over the whole run mostly misses them.
        horizon_ms = EARLY_HORIZON_MS if rng.random() < 0.5 else until_ms * 2 // 3
        fault["at"] = format_duration(rng.randint(0, horizon_ms))
        return
    call = rng.choice(calls)
    event = rng.choice(_TRIGGER_EVENTS)
    if event == "process_started" and call["tool"] != "execute":
        event = "request_sent"
    # process_started and result_committed are no messages: their route is the call's own.
    route = _ROUTE_OF_TOOL[call["tool"]]
    fault["when"] = {"event": event, "route": route, "tool_call": call["id"], "nth": _draw_nth(rng)}
    fault["offset"] = format_duration(rng.randint(0, 5 * _S))


# ---------------------------------------------------------------------------
# Stories: world shapes a seed may turn on
# ---------------------------------------------------------------------------


@dataclass
class _Draft:
    """A world being drawn: what the stories may change before the random faults are
    drawn over the result (so those see the final calls, chats and replicas)."""

    rng: random.Random
    replicas: int
    latency_min_ms: int
    latency_max_ms: int
    until_ms: int
    turns: list[dict]
    gen_ms: int | None = None  # world.generation_time, when a story sets it
    handler_ms: int = 0  # world.handler_time, when a story sets it
    faults: list[dict] = field(default_factory=list)  # the stories' faults
    claimed: list[str] = field(default_factory=list)  # tool calls a story has shaped

    def next_id(self) -> tuple[str, int]:
        serial = 1 + max(int(tc["id"].rsplit("_", 1)[1]) for t in self.turns for tc in t["tool_calls"])
        return f"toolu_{serial:02d}", serial

    def first_turns(self, chat: str | None = None) -> list[dict]:
        """Each chat's first turn (of ``chat`` only, when given), in chat order."""
        firsts: dict[str, dict] = {}
        for turn in self.turns:
            firsts.setdefault(turn["chat"], turn)
        return [t for c, t in firsts.items() if chat is None or c == chat]

    def last_turns(self) -> list[dict]:
        """Each chat's last turn, in chat order."""
        return list({turn["chat"]: turn for turn in self.turns}.values())

    def fixed_latency(self, at_least_ms: int = 1) -> int:
        """Every message takes the same time, so a story can aim at an exact instant."""
        self.latency_min_ms = self.latency_max_ms = max(self.latency_min_ms, at_least_ms)
        return self.latency_min_ms

    def process_start_ms(self) -> int:
        """When a first-turn start runs on the agent in a quiet world with fixed latency
        L: chat:ownership reaches a replica (L), the model answers (generation time),
        chat:update reaches the runner (L), dial and answer (2 L), the start (L), then
        the handler runs."""
        return 5 * self.latency_min_ms + (self.gen_ms or DEFAULT_TIMING.default_gen_time_ms) + self.handler_ms


def _foreground(d: _Draft, turns: list[dict], claim: bool = True) -> dict:
    """An unclaimed foreground execute of ``turns`` (a new one appended to one of them when
    there is none), claimed for the calling story."""
    free = [tc for t in turns for tc in t["tool_calls"]
            if tc["tool"] == "execute" and not tc.get("background") and tc["id"] not in d.claimed]
    if free:
        call = d.rng.choice(free)
    else:
        call_id, serial = d.next_id()
        call = {"id": call_id, "tool": "execute", "command": f"{d.rng.choice(_COMMAND_BASES)} --job={serial}",
                "runs_for": format_duration(1 * _MIN), "timeout": format_duration(5 * _MIN)}
        d.rng.choice(turns)["tool_calls"].append(call)
    if claim:
        d.claimed.append(call["id"])
    return call


def _chat_of(d: _Draft, call: dict) -> str:
    return next(t["chat"] for t in d.turns if any(tc["id"] == call["id"] for tc in t["tool_calls"]))


def _when(event: str, call: dict, nth: int = 1) -> dict:
    route = _ROUTE_OF_TOOL[call["tool"]]  # process_started, result_committed: the call's own route
    return {"event": event, "route": route, "tool_call": call["id"], "nth": nth}


def _message(route: str, call: dict, nth: int = 1) -> dict:
    return {"route": route, "tool_call": call["id"], "direction": "request", "nth": nth}


def _story_next_generation_interrupt(d: _Draft) -> None:
    """bug_interrupt_during_next_generation: the model takes 10-60 s per message and the
    user interrupts after a batch's results are committed, while the next message is
    being written (a chat gets a second turn if it has none)."""
    d.gen_ms = d.rng.randint(10 * _S, 60 * _S)
    chat = d.rng.choice(sorted({t["chat"] for t in d.turns}))
    first = d.first_turns(chat)[0]
    if sum(1 for t in d.turns if t["chat"] == chat) == 1:
        call_id, serial = d.next_id()
        d.turns.append({"chat": chat, "tool_calls": [
            {"id": call_id, "tool": "write_file", "path": f"/home/coder/notes/note{serial}.md",
             "content": f"# note {serial}\n"}]})
    d.faults.append({"kind": "interrupt", "chat": chat,
                     "when": _when("result_committed", d.rng.choice(first["tool_calls"])),
                     "offset": format_duration(d.rng.randint(1 * _S, d.gen_ms - 1 * _S))})


def _story_slow_spawn_new_owner(d: _Draft) -> None:
    """bug_slow_spawn_retry: the agent's handlers take 70-150 s and the chat changes owner
    just after a start was sent, so the new owner's start arrives while the first run is
    still pending (takeover comes 21-60 s after the change)."""
    d.replicas = max(d.replicas, 2)
    d.handler_ms = d.rng.randint(70 * _S, 150 * _S)
    call = _foreground(d, d.turns)
    d.faults.append({"kind": "ownership_change", "chat": _chat_of(d, call), "when": _when("request_sent", call),
                     "offset": format_duration(d.rng.randint(0, 5 * _S))})


def _story_owner_change_near_exit(d: _Draft) -> None:
    """bug_owner_change_near_exit: with fixed latency L, a first-turn command exits so
    that its answer reaches the old owner 1..L-1 ms after another replica took the chat
    over, before the old runner hears of it (its next sync or chat:update, both L after
    the takeover). The takeover is the first acquisition poll that finds the owner's last
    heartbeat stale; the chat's other foreground calls are made shorter so the batch
    commits at that exit."""
    t = DEFAULT_TIMING
    lat = d.fixed_latency(at_least_ms=2)
    d.replicas = max(d.replicas, 2)
    turn = d.rng.choice(d.first_turns())
    call = _foreground(d, [turn])
    start_ms = d.process_start_ms()
    change_ms = start_ms + d.rng.randint(1 * _S, 40 * _S)
    if change_ms % t.heartbeat_interval_ms == 0:
        change_ms += 1  # not on a heartbeat tick: no tie to order
    heartbeat_ms = max(lat, change_ms // t.heartbeat_interval_ms * t.heartbeat_interval_ms)  # acquired at L
    takeover_ms = ((heartbeat_ms + t.heartbeat_stale_ms) // t.acquisition_interval_ms + 1) * t.acquisition_interval_ms
    runs_for_ms = takeover_ms + d.rng.randint(1, lat - 1) - lat - start_ms
    call["runs_for"] = format_duration(runs_for_ms)
    call["timeout"] = format_duration(runs_for_ms + 5 * _MIN)
    for other in turn["tool_calls"]:
        if other["tool"] == "execute" and not other.get("background") and other["id"] not in d.claimed:
            short_ms = min(parse_duration(other["runs_for"], "runs_for"), d.rng.randint(1 * _S, runs_for_ms // 2))
            other["runs_for"] = format_duration(short_ms)
            d.claimed.append(other["id"])
    d.faults.append({"kind": "ownership_change", "chat": turn["chat"], "at": format_duration(change_ms)})


def _story_interrupt_at_deadline(d: _Draft) -> None:
    """bug_interrupt_at_deadline: with fixed latency L, the user interrupts so that the
    cancel (chat:update, dial, answer, cancel: 4 L later) reaches the agent exactly at the
    command's deadline: the process must be left running."""
    lat = d.fixed_latency()
    call = _foreground(d, d.turns)
    timeout_ms = d.rng.choice((10 * _S, 30 * _S, 1 * _MIN, 5 * _MIN, 10 * _MIN))
    call["timeout"] = format_duration(timeout_ms)
    call["runs_for"] = format_duration(timeout_ms + d.rng.randint(1 * _MIN, 30 * _MIN))
    d.faults.append({"kind": "interrupt", "chat": _chat_of(d, call), "when": _when("process_started", call),
                     "offset": format_duration(timeout_ms - 4 * lat)})


def _story_delayed_retry_across_restart(d: _Draft) -> None:
    """bug_delayed_retry_across_restart: a command outlives its first attempt; the agent
    restarts as the retry's start is sent, and that start arrives with the agent's uptime
    just above the age it carries (attempt timeout + backoff + three hops), inside the 2 s
    margin that must refuse it."""
    t = DEFAULT_TIMING
    call = _foreground(d, d.last_turns())  # no later message may make the late start stale
    call["runs_for"] = format_duration(d.rng.randint(ATTEMPT_TIMEOUT_MS + 1 * _MIN, 60 * _MIN))
    call["timeout"] = format_duration(d.rng.choice((1 * _H, 2 * _H)))
    d.faults.append({"kind": "agent_restart", "downtime": "0s", "when": _when("request_sent", call, nth=2)})
    by_ms = ATTEMPT_TIMEOUT_MS + t.task_retry_initial_backoff_ms + d.rng.randint(
        3 * d.latency_max_ms + 1, t.agent_age_margin_ms)
    d.faults.append({"kind": "delay", "message": _message("start", call, nth=2), "by": format_duration(by_ms)})
    d.until_ms = max(d.until_ms, 2 * ATTEMPT_TIMEOUT_MS + 10 * _MIN)


def _story_interrupt_before_start(d: _Draft) -> None:
    """us10_interrupt_before_start_arrives: a start request is slow to arrive and the
    user interrupts first, so the cancel reaches the agent before the start does."""
    call = _foreground(d, d.turns)
    offset_ms = d.rng.randint(0, 2 * _S)
    d.faults.append({"kind": "interrupt", "chat": _chat_of(d, call), "when": _when("request_sent", call),
                     "offset": format_duration(offset_ms)})
    by_ms = offset_ms + 3 * d.latency_max_ms + d.rng.randint(1 * _S, 40 * _S)
    d.faults.append({"kind": "delay", "message": _message("start", call), "by": format_duration(by_ms)})


def _running_foreground(d: _Draft, turns: list[dict]) -> dict:
    """A claimed foreground command that still runs a minute after it started."""
    call = _foreground(d, turns)
    call["runs_for"] = format_duration(d.rng.randint(5 * _MIN, 30 * _MIN))
    call["timeout"] = format_duration(d.rng.choice((10 * _MIN, 20 * _MIN, 30 * _MIN, 1 * _H)))
    return call


def _interrupt_while_running(d: _Draft, call: dict) -> None:
    d.faults.append({"kind": "interrupt", "chat": _chat_of(d, call), "when": _when("process_started", call),
                     "offset": format_duration(d.rng.randint(1 * _S, 60 * _S))})


def _story_lost_cancel(d: _Draft) -> None:
    """bug_lost_cancel: the user interrupts a running command and the cancel request is
    lost: the agent answer timeout must still end the interrupt."""
    call = _running_foreground(d, d.first_turns())
    _interrupt_while_running(d, call)
    d.faults.append({"kind": "lose", "message": _message("cancel", call)})


def _story_background_in_batch(d: _Draft) -> None:
    """us06_background_survives: a batch holds a background server and a running
    foreground command, and the user interrupts it: only the foreground one is stopped."""
    turn = d.rng.choice(d.first_turns())
    call = _running_foreground(d, [turn])
    if not any(tc.get("background") for tc in turn["tool_calls"]):
        call_id, serial = d.next_id()
        turn["tool_calls"].append({"id": call_id, "tool": "execute", "background": True,
                                   "command": f"{d.rng.choice(_COMMAND_BASES)} --serve={serial}",
                                   "runs_for": format_duration(d.rng.randint(1 * _H, 2 * _H))})
    _interrupt_while_running(d, call)


def _story_twin_chats(d: _Draft) -> None:
    """us09_chat_isolation: a second chat runs the same command as the first (its own
    tool call), its start a second later (a delay well inside the age margin), and the
    user interrupts the first chat while both run."""
    original = _foreground(d, d.first_turns("chat-1"), claim=False)
    if original["id"] not in d.claimed:
        original["runs_for"] = format_duration(d.rng.randint(1 * _MIN, 14 * _MIN))
        original["timeout"] = format_duration(d.rng.choice((20 * _MIN, 30 * _MIN)))
        d.claimed.append(original["id"])
    call_id, _ = d.next_id()
    twin = {**original, "id": call_id}
    second = d.first_turns("chat-2")
    if second:
        second[0]["tool_calls"].insert(0, twin)
    else:
        d.turns.append({"chat": "chat-2", "tool_calls": [twin]})
    d.faults.append({"kind": "delay", "message": _message("start", twin),
                     "by": format_duration(d.rng.randint(500, DEFAULT_TIMING.agent_age_margin_ms * 3 // 4))})
    d.faults.append({"kind": "interrupt", "chat": "chat-1", "when": _when("process_started", twin),
                     "offset": format_duration(d.rng.randint(1 * _S, 20 * _S))})


# Applied in this order: the stories that set world durations first (later ones aim with
# them), the twin last (it copies a command no later story may change).
STORIES: tuple[tuple[str, Callable[[_Draft], None]], ...] = (
    ("next_generation_interrupt", _story_next_generation_interrupt),
    ("slow_spawn_new_owner", _story_slow_spawn_new_owner),
    ("owner_change_near_exit", _story_owner_change_near_exit),
    ("interrupt_at_deadline", _story_interrupt_at_deadline),
    ("delayed_retry_across_restart", _story_delayed_retry_across_restart),
    ("interrupt_before_start", _story_interrupt_before_start),
    ("lost_cancel", _story_lost_cancel),
    ("background_in_batch", _story_background_in_batch),
    ("twin_chats", _story_twin_chats),
)


# ---------------------------------------------------------------------------
# Running and judging one scenario dict
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Verdict:
    """What one run of a scenario dict found, as plain values."""

    findings: tuple[tuple[int, str, str], ...]  # new findings: (at_ms, property, detail), sorted
    residual_risks: tuple[str, ...]  # names, one per occurrence, sorted
    unknown_results: int
    results: int
    sim_ms: int

    @property
    def properties(self) -> frozenset[str]:
        return frozenset(p for _, p, _ in self.findings)

    def first(self, prop: str | None = None) -> tuple[int, str, str] | None:
        return next((f for f in self.findings if prop is None or f[1] == prop), None)


def judge(data: dict, variant: str) -> Verdict:
    """Run ``data`` under ``variant``. A crash of the run is a finding of ``exception``;
    a dict that is not a valid scenario raises ScenarioError (the caller's mistake)."""
    from .run import run_scenario

    scenario = from_dict(data, f"<{data.get('name', 'swarm')}>")
    try:
        result = run_scenario(scenario, variant)
    except ScenarioError:
        raise
    except Exception as err:  # noqa: BLE001 - any crash of the model or world is a finding
        return Verdict(((0, EXCEPTION, f"{type(err).__name__}: {err}"),), (), 0, 0, scenario.until_ms)
    report = result.report
    findings = sorted((v.at_ms, v.property, v.detail) for v in result.violations if v.residual_risk is None)
    risks = sorted(v.residual_risk for v in list(result.violations) + list(report.informational)
                   if v.residual_risk is not None)
    return Verdict(tuple(findings), tuple(risks), report.unknown_results, report.results, result.until_ms)


# ---------------------------------------------------------------------------
# Minimizing
# ---------------------------------------------------------------------------


def _referenced_calls(faults: list[dict]) -> set[str]:
    names = set()
    for f in faults:
        for key in ("message", "when"):
            if isinstance(f.get(key), dict) and f[key].get("tool_call"):
                names.add(f[key]["tool_call"])
    return names


def _without_fault(data: dict, index: int) -> dict:
    return {**data, "faults": data["faults"][:index] + data["faults"][index + 1:]}


def _without_call(data: dict, turn_index: int, call_index: int) -> dict:
    turns = [dict(t) for t in data["turns"]]
    calls = turns[turn_index]["tool_calls"]
    turns[turn_index]["tool_calls"] = calls[:call_index] + calls[call_index + 1:]
    return _prune_files({**data, "turns": turns})


def _without_turn(data: dict, turn_index: int) -> dict:
    return _prune_files({**data, "turns": data["turns"][:turn_index] + data["turns"][turn_index + 1:]})


def _prune_files(data: dict) -> dict:
    """Drop workspace files no remaining edit names (they only make the repro longer)."""
    world = data.get("world", {})
    if "files" not in world:
        return data
    used = {tc.get("path") for t in data["turns"] for tc in t["tool_calls"] if tc.get("tool") == "edit_files"}
    files = {p: c for p, c in world["files"].items() if p in used}
    world = {k: v for k, v in world.items() if k != "files"}
    if files:
        world["files"] = files
    return {**data, "world": world}


def _candidates(data: dict):
    """Every one-step simplification of ``data``, cheapest to check first: half the run
    time (every later check then runs faster), then each fault (the schedule is what a
    reader studies), then each chat no fault names, each tool call no fault names (a turn
    keeps one), each turn no fault names (a chat keeps one: faults name chats), then a
    loss-free network and one replica fewer (when no fault names the last one)."""
    until_ms = parse_duration(data.get("until", "1h"), "until")
    if until_ms // 2 >= MIN_UNTIL_MS:
        yield {**data, "until": format_duration(until_ms // 2)}
    for i in range(len(data["faults"])):
        yield _without_fault(data, i)
    named = _referenced_calls(data["faults"])
    chats = list(dict.fromkeys(turn["chat"] for turn in data["turns"]))
    named_chats = {f.get("chat", "chat-1") for f in data["faults"] if f["kind"] in ("interrupt", "ownership_change")}
    for chat in chats:
        calls = {tc["id"] for t in data["turns"] if t["chat"] == chat for tc in t["tool_calls"]}
        if len(chats) > 1 and chat not in named_chats and not named & calls:
            yield _prune_files({**data, "turns": [t for t in data["turns"] if t["chat"] != chat]})
    for ti, turn in enumerate(data["turns"]):
        for ci, call in enumerate(turn["tool_calls"]):
            if len(turn["tool_calls"]) > 1 and call["id"] not in named:
                yield _without_call(data, ti, ci)
    turns_of_chat: dict[str, int] = {}
    for turn in data["turns"]:
        turns_of_chat[turn["chat"]] = turns_of_chat.get(turn["chat"], 0) + 1
    for ti, turn in enumerate(data["turns"]):
        if turns_of_chat[turn["chat"]] > 1 and not named & {c["id"] for c in turn["tool_calls"]}:
            yield _without_turn(data, ti)
    if data.get("network", {}).get("loss", 0.0) > 0.0:
        yield {**data, "network": {**data["network"], "loss": 0.0}}
    replicas = data.get("world", {}).get("replicas", 2)
    if replicas > 1 and f"replica-{replicas}" not in json.dumps(data["faults"]):
        yield {**data, "world": {**data["world"], "replicas": replicas - 1}}


def size(data: dict) -> tuple[int, int, int]:
    """(faults, tool calls, turns): what minimizing may only shrink."""
    return (len(data["faults"]), sum(len(t["tool_calls"]) for t in data["turns"]), len(data["turns"]))


def minimize(data: dict, still_fails: Callable[[dict], bool], max_runs: int = MAX_MINIMIZE_RUNS) -> tuple[dict, int]:
    """Greedy delta debugging to a fixpoint: check the one-step simplifications in order,
    take each that still fails and go on from the same place in the new world's list
    (the steps before it were just refused, so they are not checked again in this pass);
    repeat passes until one takes no step (or after ``max_runs`` checks). Returns the
    smallest failing dict found and the number of checks spent. The result is never
    larger than ``data`` in any component of ``size`` and, when ``data`` failed, still
    fails (every accepted step was checked); a pass that took no step checked every
    simplification of the result, so it is 1-minimal."""
    runs = 0
    current = data
    progress = True
    while progress and runs < max_runs:
        progress = False
        candidates, position = list(_candidates(current)), 0
        while position < len(candidates) and runs < max_runs:
            runs += 1
            try:
                fails = still_fails(candidates[position])
            except ScenarioError:
                fails = False  # a simplification that broke a cross reference: not a step
            if fails:
                current = candidates[position]
                candidates = list(_candidates(current))  # the next step now sits at ``position``
                progress = True
            else:
                position += 1
    return current, runs


# ---------------------------------------------------------------------------
# One seed
# ---------------------------------------------------------------------------


def run_seed(seed: int, variant: str, minimize_failures: bool = True) -> dict:
    """Draw, run, judge and (on a failure) minimize swarm seed ``seed``. Plain JSON-able
    values only: this is what a worker process sends back."""
    data = draw_scenario(seed)
    verdict = judge(data, variant)
    outcome = {
        "seed": seed,
        "sim_ms": verdict.sim_ms,
        "results": verdict.results,
        "unknown_results": verdict.unknown_results,
        "residual_risks": list(verdict.residual_risks),
        "failure": None,
    }
    first = verdict.first()
    if first is None:
        return outcome
    at_ms, prop, detail = first
    minimized, runs = data, 0
    if minimize_failures:
        minimized, runs = minimize(data, lambda d: prop in judge(d, variant).properties)
    final = judge(minimized, variant).first(prop) if minimized is not data else first
    outcome["failure"] = {
        "seed": seed,
        "property": prop,
        "detail": final[2],
        "at_s": final[0] / 1000,
        "original_detail": detail,
        "other_properties": sorted(verdict.properties - {prop}),
        "faults_drawn": len(data["faults"]),
        "faults": [describe_fault(f) for f in minimized["faults"]],
        "tool_calls": size(minimized)[1],
        "minimize_runs": runs,
        "scenario": minimized,
    }
    return outcome


def describe_fault(f: dict) -> str:
    """One fault in a few words: ``interrupt chat-1 at 3m12s``, ``delay start toolu_02
    request #1 by 30s``."""
    kind = f["kind"]
    if kind in ("lose", "delay", "handler_panic"):
        m = f["message"]
        text = f"{kind} {m['route']} {m.get('tool_call') or '*'} {m.get('direction', 'request')} #{m.get('nth', 1)}"
        return text + (f" by {f['by']}" if kind == "delay" else "")
    what = {
        "agent_restart": lambda: f"agent_restart (down {f.get('downtime', '0s')})",
        "replica_crash": lambda: f"replica_crash {f['replica']} (down {f.get('downtime', '0s')})",
        "partition": lambda: f"partition {'|'.join(f['between'])} for {f.get('duration', 'ever')}",
        "db_outage": lambda: f"db_outage for {f.get('duration', 'ever')}",
    }.get(kind, lambda: f"{kind} {f.get('chat', 'chat-1')}")()
    if "at" in f:
        return f"{what} at {f['at']}"
    w = f["when"]
    return f"{what} {f.get('offset', '0s')} after {w['event']} {w.get('route', 'start')} {w.get('tool_call') or '*'} #{w.get('nth', 1)}"


# ---------------------------------------------------------------------------
# Many seeds
# ---------------------------------------------------------------------------


def _job(args: tuple[int, str]) -> dict:  # module level: spawned workers import it by name
    seed, variant = args
    return run_seed(seed, variant)


def _worker_ignores_sigint() -> None:  # module level: the pool's initializer
    """Ctrl-C is the parent's to handle: it stops handing out seeds and reports."""
    import signal

    signal.signal(signal.SIGINT, signal.SIG_IGN)


def iter_outcomes(first_seed: int, seeds: int, variant: str, workers: int = 1):
    """The outcomes of seeds ``first_seed .. first_seed + seeds - 1``, in seed order, one
    at a time (so a caller that stops early keeps every finished one)."""
    jobs = ((seed, variant) for seed in range(first_seed, first_seed + seeds))
    if workers <= 1 or seeds <= 1:
        for job in jobs:
            yield _job(job)
        return
    # spawn, not fork: a worker starts from a clean interpreter, so nothing the parent
    # did (imports, caches, random state) can leak into a run.
    pool = ProcessPoolExecutor(max_workers=min(workers, seeds), mp_context=multiprocessing.get_context("spawn"),
                               initializer=_worker_ignores_sigint)
    try:
        yield from pool.map(_job, jobs, chunksize=1)
    finally:
        pool.shutdown(wait=True, cancel_futures=True)


def summarize(outcomes: list[dict], first_seed: int, variant: str) -> dict:
    """The report of finished outcomes (all of them, or those before a Ctrl-C)."""
    risks: dict[str, int] = {}
    known: dict[str, int] = {}
    for o in outcomes:
        for name in o["residual_risks"]:
            tally = known if name in KNOWN_FINDINGS else risks
            tally[name] = tally.get(name, 0) + 1
    results = sum(o["results"] for o in outcomes)
    unknown = sum(o["unknown_results"] for o in outcomes)
    return {
        "variant": variant,
        "first_seed": first_seed,
        "seeds_run": len(outcomes),
        "failures": [o["failure"] for o in outcomes if o["failure"] is not None],
        "residual_risks": dict(sorted(risks.items())),
        "known_findings": dict(sorted(known.items())),
        "sim_hours": round(sum(o["sim_ms"] for o in outcomes) / _H, 3),
        "results": results,
        "unknown_results": unknown,
        "unknown_rate": round(unknown / results, 4) if results else 0.0,
    }


def run_swarm(first_seed: int, seeds: int, variant: str, workers: int = 1) -> dict:
    """The report of seeds ``first_seed .. first_seed + seeds - 1``: outcomes ordered by
    seed, so it is the same for any ``workers``."""
    return summarize(list(iter_outcomes(first_seed, seeds, variant, workers)), first_seed, variant)


# ---------------------------------------------------------------------------
# TOML out
# ---------------------------------------------------------------------------

_BARE_KEY = re.compile(r"^[A-Za-z0-9_-]+$")


def _key(k: str) -> str:
    return k if _BARE_KEY.match(k) else json.dumps(k, ensure_ascii=False)


def _inline(value) -> str:
    """A TOML value on one line. JSON string escapes (\\n, \\", \\uXXXX) are TOML basic
    string escapes too."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, list):
        return "[" + ", ".join(_inline(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{ " + ", ".join(f"{_key(k)} = {_inline(v)}" for k, v in value.items()) + " }" if value else "{}"
    raise TypeError(f"no TOML form for {type(value).__name__}")


def _body(table: dict) -> list[str]:
    """The key/value lines of one table; a list of tables becomes a multi-line array of
    inline tables (``tool_calls = [ {...}, ... ]``, as the shipped scenarios write it)."""
    lines = []
    for k, v in table.items():
        if isinstance(v, list) and v and all(isinstance(x, dict) for x in v):
            lines.append(f"{_key(k)} = [")
            lines.extend(f"  {_inline(x)}," for x in v)
            lines.append("]")
        else:
            lines.append(f"{_key(k)} = {_inline(v)}")
    return lines


def to_toml(data: dict) -> str:
    """The scenario dict as a TOML scenario file. Top-level tables become ``[section]``s
    (a nested table holding multi-line strings becomes ``[section.sub]``), top-level lists
    of tables become ``[[turns]]``/``[[faults]]``; everything else is inline."""
    head, sections, arrays = [], [], []
    for k, v in data.items():
        if isinstance(v, dict):
            plain = {kk: vv for kk, vv in v.items() if not (isinstance(vv, dict) and _multiline(vv))}
            sections.append(f"\n[{_key(k)}]")
            sections.extend(_body(plain))
            for kk, vv in v.items():
                if kk not in plain:
                    sections.append(f"\n[{_key(k)}.{_key(kk)}]")
                    sections.extend(_body(vv))
        elif isinstance(v, list) and v and all(isinstance(x, dict) for x in v):
            for x in v:
                arrays.append(f"\n[[{_key(k)}]]")
                arrays.extend(_body(x))
        elif isinstance(v, list) and not v:
            head.append(f"{_key(k)} = []")
        else:
            head.append(f"{_key(k)} = {_inline(v)}")
    return "\n".join(head + sections + arrays) + "\n"


def _multiline(table: dict) -> bool:
    return any(isinstance(v, str) and "\n" in v for v in table.values())


def write_failure(failure: dict, variant: str, out_dir: Path) -> Path:
    """Write a failure's minimized scenario; the file runs under ``variant`` by default and
    has no expectations, so ``toolcall-sim run`` exits 1 while the bug reproduces."""
    data = {**failure["scenario"], "variant": variant,
            "summary": f"swarm seed {failure['seed']} under {variant}, minimized: {failure['property']}"}
    text = to_toml(data)
    if tomllib.loads(text) != data:  # Rule 2: the file must be the scenario, exactly
        raise AssertionError(f"TOML emitter lost information for swarm seed {failure['seed']}")
    return write_atomic(out_dir / f"swarm-{failure['seed']}-{variant}.toml", text)


def write_counterexample(failure: dict, variant: str, scenario_path: Path) -> Path:
    """The failure as a counterexample in the one replay format (the minimized world's
    run, as labelled actions), next to its scenario file: ``toolcall-sim replay`` runs it
    through the pure model with no simpy."""
    from . import counterexample as cx
    from .run import run_scenario
    from .scenario import load

    result = run_scenario(load(str(scenario_path)), variant)
    scenario = tomllib.loads(scenario_path.read_text(encoding="utf-8"))  # the file, embedded: replays anywhere
    return cx.save_run(scenario_path.with_suffix(".json"), scenario, variant, result.world.trace,
                       failure["property"], "swarm", failure["detail"])


# ---------------------------------------------------------------------------
# Command line
# ---------------------------------------------------------------------------


def add_arguments(parser) -> None:
    parser.add_argument("--seeds", type=int, required=True, help="how many seeds to run")
    parser.add_argument("--first-seed", type=int, default=1, help="the first seed (default 1)")
    parser.add_argument("--workers", type=int, default=1, help="worker processes (default 1)")
    parser.add_argument("--variant", default="contract", help="variant, e.g. contract+no-age-margin")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument("--out", default=DEFAULT_OUT_DIR, metavar="DIR",
                        help=f"where minimized failing scenarios and their counterexamples are written (default "
                             f"./{DEFAULT_OUT_DIR}, under the current directory)")


def main(args, out) -> int:
    """``toolcall-sim swarm``: 0 no new finding, 1 some, 2 bad input (ScenarioError), 130
    interrupted. Each failing seed's scenario and counterexample are written as soon as
    the seed is done, together (a Ctrl-C waits for the pair), so an interrupted swarm
    keeps every finished one; the summary covers the seeds finished before it."""
    from .cli import check_variant

    if args.seeds < 1:
        raise ScenarioError(f"swarm: --seeds: must be at least 1, got {args.seeds}")
    if args.workers < 1:
        raise ScenarioError(f"swarm: --workers: must be at least 1, got {args.workers}")
    if args.first_seed < 0:
        raise ScenarioError(f"swarm: --first-seed: must not be negative, got {args.first_seed}")
    check_variant(args.variant, "swarm: --variant")
    out_dir = check_out_dir(args.out)
    last = args.first_seed + args.seeds - 1
    if not args.json:
        out.write(f"swarm under {args.variant}: seeds {args.first_seed}..{last}; failures go to {out_dir}\n")
        out.flush()
    outcomes: list[dict] = []
    interrupted = False
    try:
        for outcome in iter_outcomes(args.first_seed, args.seeds, args.variant, args.workers):
            outcomes.append(outcome)
            if outcome["failure"] is not None:
                with sigint_deferred():
                    _write_failure_files(outcome["failure"], args.variant, out_dir)
                f = outcome["failure"]
                sys.stderr.write(f"  ... seed {f['seed']} FAIL {f['property']}: {f['file']}, {f['counterexample']}\n")
                sys.stderr.flush()
            if len(outcomes) % PROGRESS_EVERY == 0 and len(outcomes) < args.seeds:
                failures = sum(1 for o in outcomes if o["failure"] is not None)
                sys.stderr.write(f"  ... {len(outcomes)} of {args.seeds} seeds, {failures} failure(s)\n")
                sys.stderr.flush()
    except KeyboardInterrupt:
        interrupted = True
    report = summarize(outcomes, args.first_seed, args.variant)
    report["out"] = str(out_dir)
    report["interrupted"] = interrupted
    if args.json:
        out.write(json.dumps(report, indent=2, sort_keys=True) + "\n")
    else:
        if interrupted:
            out.write(f"interrupted (Ctrl-C) after {len(outcomes)} of {args.seeds} seeds: the summary so far\n")
        out.write(format_report(report, header=False))
    if interrupted:
        return 130
    return 1 if report["failures"] else 0


def _write_failure_files(failure: dict, variant: str, out_dir: Path) -> None:
    failure["reproduce"] = [f"toolcall-sim swarm --seeds 1 --first-seed {failure['seed']} --variant {variant}"]
    path = write_failure(failure, variant, out_dir)
    failure["file"] = _shown(path)
    failure["reproduce"].append(f"toolcall-sim run {failure['file']} --variant {variant}")
    failure["counterexample"] = _shown(write_counterexample(failure, variant, path))
    failure["reproduce"].append(f"toolcall-sim replay {failure['counterexample']}")


def _shown(path: Path) -> str:
    try:
        return str(path.resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(path)


def format_report(report: dict, header: bool = True) -> str:
    last = report["first_seed"] + report["seeds_run"] - 1
    lines = [f"swarm under {report['variant']}: seeds {report['first_seed']}..{last}"] if header else []
    for f in report["failures"]:
        also = f" (also: {', '.join(f['other_properties'])})" if f["other_properties"] else ""
        lines.append(f"FAIL seed {f['seed']}: {f['property']} at {f['at_s']:g}s: {f['detail']}{also}")
        lines.append(f"  faults ({f['faults_drawn']} drawn, {len(f['faults'])} kept, {f['tool_calls']} tool call(s)): "
                     + ("; ".join(f["faults"]) or "none"))
        for cmd in f.get("reproduce", []):
            lines.append(f"  reproduce: {cmd}")
    risks = ", ".join(f"{k}={v}" for k, v in report["residual_risks"].items()) or "none"
    known = ", ".join(f"{k}={v}" for k, v in report.get("known_findings", {}).items()) or "none"
    lines.append(
        f"summary: {report['seeds_run']} seed(s), {len(report['failures'])} failure(s), residual risks: {risks}, "
        f"known findings: {known}, "
        f"{report['sim_hours']:g} simulated hours, unknown results {report['unknown_results']}/{report['results']} "
        f"({100 * report['unknown_rate']:.1f}%)"
    )
    return "\n".join(lines) + "\n"
