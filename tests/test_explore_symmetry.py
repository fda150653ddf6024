"""The explorer's reductions are sound (model/explore_symmetry.py Rule 3).

The reduced search keeps one state of each set of states that differ only by which of
some interchangeable replicas did what. Checked here two ways: every state the unreduced
search reaches has a twin (the same state with the replicas renamed) among the reduced
search's states, and the reduced search finds the same properties violated at the same
breadth-first depths as the unreduced one, on every small world and every planted bug,
with three replicas so that there is something to fold."""

from __future__ import annotations

import dataclasses
import itertools
import re
from collections import deque
from dataclasses import replace

import pytest

from toolcall_sim.model import explore as ex
from toolcall_sim.model import core, planted_bugs, worlds
from toolcall_sim.model import system as msys
from toolcall_sim.model.core import FMap
from toolcall_sim.model.explore_context import Context
from toolcall_sim.model.explore_symmetry import interchangeable

from tests.test_explore_bugs import WHERE, bounds

THREE = ("replica-1", "replica-2", "replica-3")
# every renaming of the three but the identity
RENAMINGS = [dict(zip("123", p)) for p in itertools.permutations("123")][1:]
_NAME = re.compile(r"replica-(\d)")


def three(config):
    return replace(config, replicas=THREE)


def reachable(config, b: ex.Bounds, limit: int = 60_000) -> list:
    """Every state of a breadth-first search, as nodes (a test's own search: the real
    one keeps keys only)."""
    ctx = Context()
    root = ctx.initial_node(config)
    seen = {ctx.key(root)}
    queue, nodes = deque([root]), [root]
    while queue:
        node = queue.popleft()
        for action in ex.enabled(node, b):
            child, _ = ctx.step(node, action)
            key = ctx.key(child)
            if key not in seen:
                seen.add(key)
                nodes.append(child)
                queue.append(child)
                assert len(nodes) < limit, "world too large for this test"
    return nodes


def renamed(value, names: dict):
    """``value`` with every replica name in it renamed by ``names`` ("2" -> "3"), maps
    built again (an ``FMap`` iterates in the order of its keys, which the names are in)."""
    if isinstance(value, str):
        return _NAME.sub(lambda m: "replica-" + names[m.group(1)], value) if "replica-" in value else value
    if isinstance(value, FMap):
        return FMap((renamed(k, names), renamed(v, names)) for k, v in value._index.items())
    if isinstance(value, tuple):
        return tuple(renamed(v, names) for v in value)
    if isinstance(value, dict):
        return {renamed(k, names): renamed(v, names) for k, v in value.items()}
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        changes = {f.name: renamed(getattr(value, f.name), names) for f in dataclasses.fields(value)
                   if f.name != "config"}
        return core.replace(value, **changes)
    return value


def text(node, names: dict | None = None) -> str:
    """A state as text with the replicas renamed by ``names``, sequence numbers left out,
    every unordered part (replicas, messages, timers, the ghost as a multiset) sorted:
    two states are the same exactly when their texts are."""
    s = node.system

    def r(value):
        return value if names is None else renamed(value, names)

    def bag(items) -> str:
        return repr(sorted(repr(r(i)) for i in items))
    parts = [str(s.now_ms), repr(r(s.agent)), str(s.agent_incarnation), repr(s.agent_files), repr(r(s.db)),
             bag(s.replicas._index.values()),
             bag((e.src, e.dst, e.payload, e.what, e.sent_at_ms) for e in s.in_flight),
             bag((e.src, e.dst, e.payload, e.what) for e in s.dials_waiting),
             bag((k, t.due_ms) for k, t in s.timers._items), repr(node.used),
             bag(tuple(sorted(rec.items())) for rec in ex.ghost_trace(node))]
    return "\n".join(parts)


@pytest.mark.parametrize("name,budgets", [
    ("two-messages", dict(ownership_changes=2, agent_restarts=0, lost_responses=0)),
    ("late-pubsub", dict(ownership_changes=1, interrupts=0, task_retries=0, lost_responses=0, agent_restarts=0)),
    ("default", dict(ownership_changes=2, agent_restarts=0, interrupts=0, lost_responses=0)),
])
def test_every_unreduced_state_has_a_twin_among_the_reduced(name, budgets):
    config = three(worlds.build(name, "contract"))
    full = reachable(config, ex.Bounds(symmetry=False, **budgets))
    reduced = reachable(config, ex.Bounds(**budgets))
    assert len(reduced) < len(full)  # there was something to fold
    kept = {text(n) for n in reduced}
    missing = [n for n in full if text(n) not in kept and not any(text(n, p) in kept for p in RENAMINGS)]
    assert not missing, f"{len(missing)} of {len(full)} states have no twin, e.g.\n{text(missing[0])}"


def polling(config):
    """``config`` with the replicas' acquisition poll due at 5 small ms, inside the
    horizon (the explorer's clock pushes it past every horizon): untouched replicas then
    have timers of their own to fire, which Rule 2 prunes for all but the representative."""
    rules = config.chatd_rules
    return replace(config, chatd_rules=replace(rules, timing=replace(rules.timing, acquisition_interval_ms=5)))


def test_a_polling_untouched_replica_is_folded_too():
    """Rule 2's timers: with a poll inside the horizon, an untouched twin's poll is left
    out (it is offered unreduced), and every unreduced state still has a twin."""
    config = polling(three(worlds.build("two-messages", "contract")))
    b = dict(ownership_changes=1, agent_restarts=0, interrupts=0, lost_responses=0, task_retries=0)
    full = reachable(config, ex.Bounds(symmetry=False, **b))
    reduced = reachable(config, ex.Bounds(**b))
    twin_fires = sum(1 for n in full if (twin := interchangeable(n.system))
                     for a in ex.enabled(n, ex.Bounds(symmetry=False, **b))
                     if type(a) is msys.Fire and a.node in twin)
    assert twin_fires and len(reduced) < len(full)
    kept = {text(n) for n in reduced}
    assert all(text(n) in kept or any(text(n, p) in kept for p in RENAMINGS) for n in full)


def found(result: ex.Result) -> list:
    return sorted((v.property, v.residual_risk, v.depth) for v in result.violations)


@pytest.mark.parametrize("name", worlds.small_names())
def test_every_small_world_finds_the_same_violations_reduced(name):
    """Contract at 1 ms in flight (below the 2 ms age margin) with three replicas: the
    same residual risks at the same depths, no new finding either way."""
    budgets = dict(ownership_changes=1) if name != "two-chats" else dict(ownership_changes=1, interrupts=0)
    config = three(worlds.build(name, "contract"))
    full = ex.explore(config, replace(bounds(**budgets), symmetry=False), max_states=150_000)
    reduced = ex.explore(config, bounds(**budgets), max_states=150_000)
    assert full.exhausted and reduced.exhausted
    assert reduced.states < full.states
    assert found(reduced) == found(full)
    assert all(v.residual_risk is not None for v in reduced.violations)


@pytest.mark.parametrize("mutant", planted_bugs.PLANTED_BUGS, ids=lambda m: m.name)
def test_every_planted_bug_is_found_reduced_as_unreduced(mutant):
    world, budgets = WHERE[mutant.name]
    config = three(worlds.build(world, f"contract+{mutant.name}"))
    full = ex.explore(config, replace(bounds(**budgets), symmetry=False), max_states=100_000)
    reduced = ex.explore(config, bounds(**budgets), max_states=100_000)
    assert full.exhausted and reduced.exhausted
    assert reduced.states <= full.states
    assert found(reduced) == found(full)
    assert any(v.residual_risk is None for v in reduced.violations)


def test_a_replica_named_by_an_expectation_is_never_folded():
    """Rule 1: ``pinned_replicas`` keeps replica-3 out of every class, so a takeover by it
    stays a choice of its own beside replica-2's."""
    config = three(worlds.two_messages("contract"))
    node = ex.initial_node(config)
    while not any(getattr(a, "kind", None) == "takeover" for a in ex.enabled(node, ex.Bounds(symmetry=False))):
        node, _ = ex.step(node, ex.enabled(node, ex.Bounds())[0])
    assert interchangeable(node.system) == {"replica-3": "replica-2"}
    assert interchangeable(node.system, ("replica-3",)) == {}

    def targets(b):
        return sorted(dict(a.params)["to"] for a in ex.enabled(node, b) if getattr(a, "kind", None) == "takeover")
    assert targets(ex.Bounds()) == ["replica-2"]
    assert targets(ex.Bounds(pinned_replicas=("replica-3",))) == ["replica-2", "replica-3"]
    assert targets(ex.Bounds(symmetry=False)) == ["replica-2", "replica-3"]
