"""Minimizing: greedy delta debugging, and the one-step simplifications of a scenario.

Theory of operation
-------------------
``minimize(start, still_fails, steps)`` is generic: ``steps(x)`` lists every one-step
simplification of ``x``, cheapest to check first, and ``still_fails(x)`` re-runs the
check. It takes each step after which the check still fails and goes on from the same
place in the new value's list (the steps before it were just refused, so they are not
checked again in this pass); it repeats passes until one takes no step, or until
``max_runs`` checks are spent. A pass that took no step checked every simplification of
the result, so the result is 1-minimal. Nothing here knows about swarm or the model.

``scenario_steps`` are the simplifications of a scenario dict (the shape of a scenario
file, as sim/world/stories.py draws it): halve the run time, remove one fault, one chat, one
extra tool call or one extra turn, zero the network loss, drop a replica. Each only ever
removes, so a minimized schedule never grows (``size`` says what shrinks). sim/drivers/swarm.py
minimizes a failing seed with them; so could any scenario file.

Rule 1. A candidate whose ``still_fails`` raises one of ``refused`` (for scenarios: a
        ScenarioError, a simplification that broke a cross reference) is not a step.
Rule 2. Every accepted step was checked, so when ``start`` failed the result still fails
        on its own (for scenarios: a full deterministic re-run with the same root seed).
"""

from __future__ import annotations

import json
from typing import Callable, Iterable, TypeVar

from toolcall_sim.world.scenario import ScenarioError, format_duration, parse_duration

T = TypeVar("T")

MIN_UNTIL_MS = 5 * 60_000  # scenario_steps halve the run time down to this, no further


def minimize(start: T, still_fails: Callable[[T], bool], steps: Callable[[T], Iterable[T]], max_runs: int,
             refused: tuple[type[BaseException], ...] = ()) -> tuple[T, int]:
    """Greedy delta debugging to a fixpoint (see the module docstring). Returns the
    smallest failing value found and the number of checks spent."""
    runs = 0
    current = start
    progress = True
    while progress and runs < max_runs:
        progress = False
        candidates, position = list(steps(current)), 0
        while position < len(candidates) and runs < max_runs:
            runs += 1
            try:
                fails = still_fails(candidates[position])
            except refused:
                fails = False  # Rule 1: not a step
            if fails:
                current = candidates[position]
                candidates = list(steps(current))  # the next step now sits at ``position``
                progress = True
            else:
                position += 1
    return current, runs


def minimize_scenario(data: dict, still_fails: Callable[[dict], bool], max_runs: int) -> tuple[dict, int]:
    """``minimize`` over ``scenario_steps``; a candidate the loader refuses is no step.
    The result is never larger than ``data`` in any component of ``size``."""
    return minimize(data, still_fails, scenario_steps, max_runs, refused=(ScenarioError,))


# ---------------------------------------------------------------------------
# The steps of a scenario dict
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


def scenario_steps(data: dict):
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

