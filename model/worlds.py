"""The explorer's worlds: small, named, each holding only what a class of races needs.

Theory of operation
-------------------
Exhaustive search pays for every message, timer and tool call a world holds, so a world
holds what its races need and nothing more. ``default`` is the issue's world: one chat,
one agent, two replicas, one assistant message with a foreground and a background execute
(or an edit). Each other world changes the one thing some races need and drops the rest:

- ``two-chats``: two chats run the same command, so one chat's requests can reach the
  other chat's process (chat isolation, US9 and A5);
- ``two-messages``: one edit, the cheapest tool call there is (one request, one answer),
  and a model that answers twice (the edit, then text), so an interrupt can also strike
  while the model writes its second message, when every call of the last assistant
  message is already resolved;
- ``late-pubsub``: database events travel like any other message instead of reaching
  every replica within the commit's step, so a replica can still act after its chat was
  taken over and before it hears of it (the commit fences, chatd 2.4).

One world is not small: ``goal`` is issue 36's goal world, the union of the default
world and two-messages on three replicas (three parallel calls, then a second message),
which no class of races needs whole; it is named so that ``toolcall-sim explore --world
goal`` and the bench's ``largest_world`` row (sim/ci/bench.py) search the same world, and
``small_names()`` leaves it out of what iterates over the small worlds.

Rule 1. Every world runs on the explorer's clock (``Timing.explorer()``); a planted
        bug's changes to chatd's timing or to the agent's rules win over it.
Rule 2. A world is built by name (``build(name, variant, second)``); counterexample files
        record the name, so ``toolcall-sim replay`` rebuilds the same world.
Rule 3. Chats start once the agent has been up longer than the age margin, as in any real
        workspace (an agent younger than the margin refuses every unknown call).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Callable

from . import agent, chattool, planted_bugs
from . import system as msys
from .core import FMap
from .timing import Timing

CHAT_1 = "6c1e0a8e-2f7b-5c38-9a0c-1d2e3f405162"
CHAT_2 = "9d4b2c1a-7e6f-5a8b-8c9d-0e1f2a3b4c5d"
FILE = "/w/a.txt"


def rules(variant: str):
    """(chatd rules, agent rules) of ``variant`` on the explorer's clock (Rule 1): the
    planted bug's knobs are applied on top of the clock, so they win."""
    timing = Timing.explorer()
    return planted_bugs.resolve(variant, timing.agent_rules(agent.AgentRules()), timing)


def execute(provider_id: str, command: str, **args) -> chattool.ToolCall:
    return chattool.ToolCall(provider_id, "execute", json.dumps({"command": command, **args}))


def edit(provider_id: str, path: str = FILE) -> chattool.ToolCall:
    """An indentation fix the agent applies on every run and that changes the file only the
    first time: the search " one" matches the line "one" by the third pass of agentfiles'
    search/replace (leading and trailing white space ignored, model/agent/files.py), before
    and after it reads "\tone". So a repeat is a second side effect that leaves the disk as
    the first left it, as every repeat of a start is a second process; a search that the
    first run removes would make the repeat a refused edit instead (the scenarios
    us03_edit_across_retry and us08_old_agent show that one)."""
    return chattool.ToolCall(provider_id, "edit_files", json.dumps(
        {"files": [{"path": path, "edits": [{"search": " one", "replace": "\tone\n"}]}]}))


def _world(variant: str, chats: tuple, scripts: dict, pubsub_immediate: bool = True,
           replicas: tuple[str, ...] = ("replica-1", "replica-2")) -> msys.WorldConfig:
    """Two replicas (or ``replicas``), one agent, ``/w/a.txt`` reading "one", and
    ``chats``: (chat ID, scripted turns, how long after the first chat it starts)."""
    c_rules, a_rules = rules(variant)
    timing = c_rules.timing
    start_ms = 4 * timing.agent_age_margin_ms  # Rule 3
    specs = tuple(
        msys.ChatSpec(f"chat-{i}", chat_id, turns, gen_time_ms=timing.default_gen_time_ms,
                      start_at_ms=start_ms + later_ms)
        for i, (chat_id, turns, later_ms) in enumerate(chats, 1)
    )
    return msys.WorldConfig(
        replicas=replicas,
        chatd_rules=c_rules,
        agent_config=agent.AgentConfig(rules=a_rules, scripts=FMap(scripts)),
        chats=specs,
        files=FMap({FILE: "one\n"}),
        pubsub_immediate=pubsub_immediate,
        reference_timing=Timing.explorer(),  # the clock before the variant's planted bugs (Rule 1)
    )


# ---------------------------------------------------------------------------
# The worlds
# ---------------------------------------------------------------------------


def default(variant: str = "contract", second: str = "background") -> msys.WorldConfig:
    """One chat, one agent, two replicas, one assistant message with two parallel calls:
    a foreground execute that outlives one attempt (so a task retry matters) and a
    background execute (or an edit)."""
    fg = execute("toolu_fg", "make test", timeout="8ms")
    other = edit("toolu_ed") if second == "edit" else execute("toolu_bg", "make serve", run_in_background=True)
    # The foreground command runs 12 ms: past its 8 ms timeout and past the first 10 ms
    # attempt, so retries, ownership changes and interrupts all find it running.
    scripts = {"make test": agent.Script(runs_for_ms=12), "make serve": agent.Script(runs_for_ms=10**6)}
    return _world(variant, ((CHAT_1, ((fg, other),), 0),), scripts)


def two_chats(variant: str = "contract") -> msys.WorldConfig:
    """Two chats, each with one foreground execute of the same command (the default
    world's, 12 ms with an 8 ms timeout). The second chat starts 4 ms after the first,
    when the first one's command runs and its blocking read waits without a message in
    flight, so the two chats' exchanges do not interleave step by step (which would
    multiply the states for nothing); interrupts may still strike either chat anywhere."""
    a = execute("toolu_a", "make test", timeout="8ms")
    b = execute("toolu_b", "make test", timeout="8ms")
    scripts = {"make test": agent.Script(runs_for_ms=12)}
    return _world(variant, ((CHAT_1, ((a,),), 0), (CHAT_2, ((b,),), 4)), scripts)


def two_messages(variant: str = "contract") -> msys.WorldConfig:
    """One chat whose model answers twice: an edit, then (with the edit's result in) a
    text answer that ends the turn."""
    return _world(variant, ((CHAT_1, ((edit("toolu_ed"),), ()), 0),), {})


def late_pubsub(variant: str = "contract") -> msys.WorldConfig:
    """One chat, one assistant message with one edit; database events are messages the
    explorer delivers in any order (within the in-flight bound) like every other."""
    return _world(variant, ((CHAT_1, ((edit("toolu_ed"),),), 0),), {}, pubsub_immediate=False)


THREE_REPLICAS = ("replica-1", "replica-2", "replica-3")


def goal(variant: str = "contract", calls: int = 3) -> msys.WorldConfig:
    """Issue 36's goal world: three replicas, one chat whose model answers twice, first
    with ``calls`` parallel calls (the default world's foreground execute that outlives an
    attempt, its background execute, two-messages' edit; fewer take them in that order),
    then with text. The bench's ladder (sim/ci/bench.py ``largest_world``) builds it with
    fewer calls on its lower rungs."""
    batch = (execute("toolu_fg", "make test", timeout="8ms"),
             execute("toolu_bg", "make serve", run_in_background=True), edit("toolu_ed"))[:calls]
    scripts = {"make test": agent.Script(runs_for_ms=12), "make serve": agent.Script(runs_for_ms=10**6)}
    return _world(variant, ((CHAT_1, (batch, ()), 0),), scripts, replicas=THREE_REPLICAS)


@dataclass(frozen=True)
class SmallWorld:
    """One of the explorer's named worlds: its name (what counterexample files record),
    a one-line summary for ``toolcall-sim list``, and how to build it under a variant."""

    name: str
    summary: str
    build: Callable[[str], msys.WorldConfig]  # variant -> world
    small: bool = True  # False: a world beyond exhaustive search's everyday reach (``goal``)


WORLDS: tuple[SmallWorld, ...] = (
    SmallWorld("default", "one chat, one assistant message: a foreground and a background execute (or an edit)", default),
    SmallWorld("two-chats", "two chats, each one foreground execute of the same command", two_chats),
    SmallWorld("two-messages", "one chat whose model answers with an edit, then with text", two_messages),
    SmallWorld("late-pubsub", "one chat, one edit, database events delivered late like any message", late_pubsub),
    SmallWorld("goal", "issue 36's goal: three replicas, one chat: a foreground and a background execute and an edit, "
               "then text (large: see toolcall-sim bench's largest_world)", goal, small=False),
)


class UnknownWorld(ValueError):
    pass


def names() -> list[str]:
    return [w.name for w in WORLDS]


def small_names() -> list[str]:
    """The small worlds: what tests and the bench's reduction row run over every one of."""
    return [w.name for w in WORLDS if w.small]


def build(name: str = "default", variant: str = "contract", second: str = "background") -> msys.WorldConfig:
    """The world ``name`` under ``variant`` (Rule 2); ``second`` shapes only ``default``."""
    if name == "default":
        return default(variant, second)
    for w in WORLDS:
        if w.name == name:
            return w.build(variant)
    raise UnknownWorld(f"unknown world {name!r} (known: {', '.join(names())})")
