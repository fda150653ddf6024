"""Swarm worlds: how one seed draws a scenario, and the race stories it may tell.

Theory of operation
-------------------
``draw_scenario(S)`` draws, from ``random.Random(f"swarm:{S}")`` and nothing else, a
world (replicas, latency range, loss), a workload (chats, assistant turns, tool calls),
the stories it tells (each of ``STORIES`` with probability 1/4), a fault mix (each kind
of ``FAULT_KINDS`` enabled with probability 1/2, then 0-4 faults of the enabled kinds)
and how long to run. The result is a plain dict in the shape of a scenario file
(validated by ``toolcall_sim.world.scenario.from_dict``; ``toolcall_sim.world.scenario_toml.to_toml`` writes it out),
so a swarm world *is* a scenario file.

A story is the world shape of a hand-written scenario that exposes a race (a start
delayed across an agent restart, an owner change just as a command exits, two chats
running the same command, ...). It works on a ``_Draft`` (the world being drawn):
it reshapes a few tool calls or world durations and adds the faults that make the race
happen; the random faults are then drawn over the result, so they see the final calls,
chats and replicas. sim/drivers/swarm.py runs and judges what is drawn here.

Rule 1. No global ``random``, no wall clock, no iteration over sets or hash order: every
        choice is a call on the seed's own generator in program order, over sorted or
        literal sequences. The order of the draws is part of every seed: reordering two
        lines here changes every swarm world (and the pinned windows of
        tests/test_swarm.py).
Rule 2. Drawn durations are whole milliseconds written with ``format_duration``, and the
        loss is rounded to 4 decimals, so the TOML written for a world parses back to the
        identical dict.
Rule 3. A story stays inside the contract's assumptions: one that aims at an instant
        first makes the world exact enough to hit it (every message takes the same
        time). One that stretches a duration past reality to widen a race window
        (minutes-long handlers) leaves the rest of the world as drawn: a command that
        then reaches its timeout while its start is pending is the known finding
        ``run_age_counts_from_record`` (scenarios/finding_slow_spawn_timed_out.toml),
        reported by name, so no class of outcome is kept out of the sample.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Callable

from toolcall_sim.model import vocabulary  # the fault kinds and trigger events swarm draws
from toolcall_sim.model.timing import DEFAULT_TIMING

from toolcall_sim.world.scenario import ROUTE_OF_TOOL, format_duration, parse_duration

# How many drawn stories a search tries by default: ``toolcall-sim search`` and the
# detection table (sim/ci/bugs.py) alike. Here, beside the drawing, rather than in
# sim/drivers/story_search.py, so the command line reads it without importing hypothesis.
# 1,000 since the stories grew from nine to thirteen (issue 34): hypothesis plans its
# phases on this number, and at 500 it no longer reached the commit-fence bugs (found at
# 321 programs with 1,000 under hypothesis 6.155, 873 under 6.170; every other bug at the
# same program as before, under both).
SEARCH_EXAMPLES = 1000

# Fault kinds swarm toggles per seed: the vocabulary's swarm subset (model/vocabulary.py
# says why the others stay out).
FAULT_KINDS = vocabulary.SWARM_FAULT_KINDS
MAX_FAULTS = 4
STORY_PROBABILITY = 0.25  # each of STORIES is told in about one seed in four
EARLY_HORIZON_MS = 5 * 60_000  # half of the timed faults fire in the run's first 5 minutes
ATTEMPT_TIMEOUT_MS = DEFAULT_TIMING.task_timeout_ms  # chatd's attempt timeout (15 min)

_S = 1_000
_MIN = 60_000
_H = 3_600_000

_COMMAND_BASES = ("go test ./...", "make build", "npm run lint", "cargo check", "pytest -q", "make e2e")
_EXECUTE_TIMEOUTS_MS = (30 * _S, 1 * _MIN, 5 * _MIN, 10 * _MIN, 20 * _MIN, 30 * _MIN, 1 * _H, 2 * _H)
# The trigger events swarm draws (a subset of vocabulary.TRIGGER_EVENTS, in this order:
# the order is part of every seed's draw).
_TRIGGER_EVENTS = ("request_sent", "request_delivered", "response_sent", "process_started", "result_committed")
assert set(_TRIGGER_EVENTS) <= set(vocabulary.TRIGGER_EVENTS)


# ---------------------------------------------------------------------------
# Drawing a world
# ---------------------------------------------------------------------------


def draw_scenario(seed: int, rng=None) -> dict:
    """The scenario dict of swarm seed ``seed``: same seed, same dict, in any process.
    ``rng`` replaces the seed's own generator: anything with ``random.Random``'s
    ``randint``, ``random``, ``uniform``, ``choice`` and ``choices`` (the hypothesis
    search, sim/drivers/story_search.py, answers each call with a draw it can shrink); the
    draws are the same calls in the same order either way."""
    rng = rng if rng is not None else _SeedRandom(f"swarm:{seed}")
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

    # (a copy of a shared provider ID is no fault's target: the loader could not tell it apart)
    calls = [tc for turn in turns for tc in turn["tool_calls"] if "provider_id" not in tc]
    chats = sorted({turn["chat"] for turn in turns})
    enabled = [kind for kind in FAULT_KINDS if rng.random() < 0.5]
    faults = []
    if enabled and calls:  # (a world of one shared provider ID's copies: the stories' faults alone)
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


class _SeedRandom(random.Random):
    """A seed's own generator: ``random.Random`` (same seed, same stream, same draws)
    with the two calls the drawing makes most, some forty a seed, going straight to
    ``_randbelow``, as random.py's own do after their checks (``randint`` through
    ``randrange``)."""

    def randint(self, a: int, b: int) -> int:
        if type(a) is not int or type(b) is not int or b < a:
            return super().randint(a, b)  # (its ValueError or TypeError, as before)
        return a + self._randbelow(b - a + 1)  # (randrange's answer for int bounds, b >= a)

    def choice(self, seq):
        if not len(seq):
            return super().choice(seq)  # (its IndexError)
        return seq[self._randbelow(len(seq))]  # (as random.py's ``choice``)


# Fault kinds a long workload draws at a rate (sim/ci/sweep.py): scheduled, at a time.
RATED_FAULT_KINDS = ("agent_restart", "ownership_change", "interrupt")


def draw_long_workload(seed: int, chats: int, turns: int, calls: tuple[int, int], long_share: float,
                       until_ms: int, rates_per_hour: dict[str, float], downtime_max_ms: int = 0) -> dict:
    """The long mixed workload of the risk sweep (sim/ci/sweep.py): ``chats`` chats of
    ``turns`` assistant turns, each with ``calls`` tool calls (a range), drawn with the
    swarm's own tool-call draws (``long_share`` of the foreground commands outlive the
    attempt timeout), and faults of ``RATED_FAULT_KINDS`` as Poisson processes at
    ``rates_per_hour`` over the first 90% of the run (an agent restart is down for
    0..``downtime_max_ms``; an interrupt or ownership change picks a chat). The workload
    and the faults come from two streams of their own (``"sweep-workload:S"``,
    ``"sweep-faults:S"``), so one seed has the same tool calls at every rate, and a
    rate's faults land at the same times in every world of the sweep (common random
    numbers: differences between points are the parameters', not the draws'). No world,
    no network: the sweep adds them. Plain dict, validated by ``toolcall_sim.world.scenario.from_dict``."""
    rng = random.Random(f"sweep-workload:{seed}")
    files: dict[str, str] = {}
    turns_out = _draw_workload(rng, files, (chats, chats), (turns, turns), calls, long_share)
    chat_names = sorted({t["chat"] for t in turns_out})
    faults = []
    horizon_ms = until_ms * 9 // 10
    for kind in RATED_FAULT_KINDS:
        rate = rates_per_hour.get(kind, 0.0)
        if rate <= 0:
            continue
        frng = random.Random(f"sweep-faults:{seed}:{kind}")
        at_ms = 0
        while True:
            at_ms += max(1, round(frng.expovariate(rate / _H)))
            if at_ms >= horizon_ms:
                break
            fault: dict = {"kind": kind, "at": format_duration(at_ms)}
            if kind == "agent_restart":
                fault["downtime"] = format_duration(frng.randint(0, downtime_max_ms))
            else:
                fault["chat"] = frng.choice(chat_names)
            faults.append(fault)
    faults.sort(key=lambda f: parse_duration(f["at"], "at"))
    scenario: dict = {"name": f"sweep-{seed}", "summary": f"sweep workload seed {seed}", "seed": seed,
                      "until": format_duration(until_ms), "turns": turns_out, "faults": faults}
    if files:
        scenario["world"] = {"files": files}
    return scenario


def _draw_workload(rng: random.Random, files: dict[str, str], chats: tuple[int, int] = (1, 2),
                   turns: tuple[int, int] = (1, 2), calls: tuple[int, int] = (1, 3),
                   long_share: float | None = None) -> list[dict]:
    """``chats`` chats (a range: 1-2 for swarm), ``turns`` assistant turns each (1-2),
    ``calls`` tool calls per turn (1-3); the sweep asks for long workloads (sim/ci/sweep.py).
    IDs, commands and paths are unique in the whole scenario: the checkers attribute a
    process to its call by (chat, command) and an edit by (chat, path), and the agent's
    scripts are keyed by command alone."""
    turns_out = []
    serial = 0
    for chat_no in range(1, rng.randint(*chats) + 1):
        for _ in range(rng.randint(*turns)):
            batch = []
            for _ in range(rng.randint(*calls)):
                serial += 1
                batch.append(_draw_tool_call(rng, serial, files, long_share))
            turns_out.append({"chat": f"chat-{chat_no}", "tool_calls": batch})
    return turns_out


def _draw_tool_call(rng: random.Random, serial: int, files: dict[str, str], long_share: float | None = None) -> dict:
    call_id = f"toolu_{serial:02d}"
    shape = rng.choices(("foreground", "background", "edit", "write"), weights=(4, 1, 2, 2))[0]
    if shape == "foreground":
        # A third each: done within seconds, within one attempt, or outliving the
        # 15-minute attempt timeout (the CODAGT-757 shape: the retry must attach).
        # ``long_share`` (the sweep's) sets the last share; the rest split evenly.
        if long_share is None:
            bucket = rng.randint(0, 2)
        else:
            bucket = 2 if rng.random() < long_share else rng.randint(0, 1)
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
        route = ROUTE_OF_TOOL[call["tool"]]
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
    route = ROUTE_OF_TOOL[call["tool"]]
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
    route = ROUTE_OF_TOOL[call["tool"]]  # process_started, result_committed: the call's own route
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


def _process_of_its_own(d: _Draft) -> dict:
    """A claimed command that outlives the chatd side of its call: a background server, or
    a foreground command past its timeout (chatd commits timed_out, the process runs on:
    US6). A new background call is added to a first turn when none is free."""
    free = [tc for t in d.turns for tc in t["tool_calls"]
            if tc["tool"] == "execute" and tc["id"] not in d.claimed and (tc.get("background") or d.rng.random() < 0.5)]
    if free:
        call = d.rng.choice(free)
    else:
        call_id, serial = d.next_id()
        call = {"id": call_id, "tool": "execute", "background": True,
                "command": f"{d.rng.choice(_COMMAND_BASES)} --serve={serial}"}
        d.rng.choice(d.first_turns())["tool_calls"].append(call)
    if not call.get("background"):
        call["timeout"] = format_duration(d.rng.choice((10 * _S, 30 * _S)))
    call["runs_for"] = format_duration(d.rng.randint(10 * _MIN, 2 * _H))
    d.claimed.append(call["id"])
    return call


def _story_process_signal(d: _Draft) -> None:
    """us06_us09_process_signal, us06_timed_out_foreground_signaled: a process that outlives
    its call ends only by the model's process_signal (US6), sent as a crafted request on the
    contract's process ID (the call's UUID) by its own chat or another (US9: another chat's
    signal must kill nothing), sometimes after an output read."""
    call = _process_of_its_own(d)
    chats = sorted({t["chat"] for t in d.turns})
    after_ms = d.rng.randint(1 * _S, 3 * _MIN)
    if d.rng.random() < 0.5:
        d.faults.append({"kind": "request", "name": f"output_{call['id']}", "route": "output",
                         "tool_call": call["id"], "as_chat": d.rng.choice(chats),
                         "when": _when("process_started", call), "offset": format_duration(after_ms)})
    d.faults.append({"kind": "request", "name": f"signal_{call['id']}", "route": "signal", "tool_call": call["id"],
                     "as_chat": d.rng.choice(chats), "when": _when("process_started", call),
                     "offset": format_duration(after_ms + d.rng.randint(0, 10 * _MIN))})


def _story_message_edit(d: _Draft) -> None:
    """rr_stale_request_after_edit, q4_edit_stale_start_after_next_message: the user edits
    the message while a call's request is on its way (design Q4): no cancel is sent, the
    branch's calls get no result, and a stale request that still arrives acts (the residual
    risk stale_request_after_edit) unless the chat's next message reached the agent first."""
    call = _foreground(d, d.turns)
    d.faults.append({"kind": "message_edit", "chat": _chat_of(d, call), "when": _when("request_sent", call),
                     "offset": format_duration(d.rng.randint(0, 2 * d.latency_max_ms))})
    if d.rng.random() < 0.5:
        d.faults.append({"kind": "delay", "message": _message("start", call),
                         "by": format_duration(d.rng.randint(1 * _S, 60 * _S))})


def _story_duplicate_ids(d: _Draft) -> None:
    """dup_ids_*: the model gives two calls of one assistant message the same provider ID
    (one UUID): copies of one command (one process, one cancel when both qualify) or with
    another timeout (no cancel at all: duplicate_ids_without_cancel), and the user
    interrupts while they run. Copies are never named by a message fault or trigger (the
    loader refuses that: it could not tell them apart), so the interrupt fires at a time."""
    named = {f[k]["tool_call"] for f in d.faults for k in ("when", "message") if k in f}
    named |= {f["tool_call"] for f in d.faults if "tool_call" in f}
    spared = [c for c in sorted(named) if c not in d.claimed]  # (no copy of a call a fault names)
    d.claimed.extend(spared)
    call = _running_foreground(d, d.first_turns())
    del d.claimed[-1 - len(spared):-1]
    call_id, _ = d.next_id()
    copy = {**call, "id": call_id}
    if d.rng.random() < 0.5:
        copy["timeout"] = format_duration(parse_duration(call["timeout"], "timeout") + 1 * _MIN)
    call["provider_id"] = copy["provider_id"] = f"{call['id']}_shared"
    turn = next(t for t in d.turns if call in t["tool_calls"])
    turn["tool_calls"].append(copy)
    d.claimed.append(call_id)
    d.faults.append({"kind": "interrupt", "chat": turn["chat"],
                     "at": format_duration(d.process_start_ms() + d.rng.randint(1 * _S, 60 * _S))})


def _story_workspace_state(d: _Draft) -> None:
    """ws_*: the workspace is stopped (its agent goes, the disk stays) or deleted (the disk
    goes too) while a call runs or its request is on its way, sometimes started again
    minutes later, and sometimes the user interrupts right after: each call keeps today's
    result where the design says so (C5, US8: no agent cannot leave a process running;
    only no workspace or a deleted one loses a file change)."""
    named = [(t, tc) for t in d.turns for tc in t["tool_calls"] if "provider_id" not in tc]  # (no copy: duplicate_ids)
    state = d.rng.choice(("stopped", "deleted"))
    after_ms = d.rng.randint(0, 30 * _S)
    if named:
        turn, call = d.rng.choice(named)
        event = "process_started" if call["tool"] == "execute" else "request_sent"
        chat = turn["chat"]

        def when(offset_ms: int) -> dict:
            return {"when": _when(event, call), "offset": format_duration(offset_ms)}
    else:  # every call is a copy of one provider ID: aim at the first batch's start instead
        chat = d.turns[0]["chat"]

        def when(offset_ms: int) -> dict:
            return {"at": format_duration(d.process_start_ms() + offset_ms)}
    d.faults.append({"kind": "workspace", "state": state, **when(after_ms)})
    if d.rng.random() < 0.5:
        d.faults.append({"kind": "interrupt", "chat": chat, **when(after_ms + d.rng.randint(1, 5 * _S))})
    if state == "stopped" and d.rng.random() < 0.5:
        d.faults.append({"kind": "workspace", "state": "running", **when(after_ms + d.rng.randint(1 * _MIN, 10 * _MIN))})


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
    ("process_signal", _story_process_signal),
    ("message_edit", _story_message_edit),
    ("duplicate_ids", _story_duplicate_ids),
    ("workspace_state", _story_workspace_state),
    ("twin_chats", _story_twin_chats),
)
