"""The configuration of a world: which replicas, chats, clocks and rules it has.

Theory of operation
-------------------
A ``WorldConfig`` is everything about a world that never changes while it runs: the
replicas and their chatd rules (one rule set for all, or one per replica in a rollout),
the agent's configuration, the workspace's state at the start, the chats with their
turns, each node's clock (``ClockSpec``: offset, drift and jumps in integer
milliseconds) and the timing the world was built with, before any planted bug changed
it. ``model/system.py`` reads it at every step and
re-exports these names (every driver says ``msys.WorldConfig``); it lives here so the
state machine's module holds the state machine.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from . import agent, chatd
from .core import EMPTY, FMap
from .timing import Timing



@dataclass(frozen=True)
class ClockSpec:
    """A node clock: ``offset + true + drift + steps`` in integer milliseconds."""

    offset_ms: int = 0
    drift_ppm: int = 0
    steps: tuple[tuple[int, int], ...] = ()  # (at true ms, jump ms)

    def read(self, true_ms: int) -> int:
        if self is PERFECT_CLOCK:
            return true_ms  # most nodes of most worlds: every step reads several clocks
        jumps = sum(by for at, by in self.steps if at <= true_ms)
        return self.offset_ms + true_ms + (true_ms * self.drift_ppm) // 1_000_000 + jumps

    def true_delay(self, after_ms: int) -> int:
        """How much true time passes while this clock advances ``after_ms``."""
        if self.drift_ppm == 0:
            return after_ms
        rate = 1_000_000 + self.drift_ppm
        return -((-after_ms * 1_000_000) // rate)  # ceiling division


PERFECT_CLOCK = ClockSpec()


@dataclass(frozen=True)
class ChatSpec:
    name: str
    chat_id: str
    turns: tuple  # tuple of turns, each a tuple of chattool.ToolCall
    gen_time_ms: int = chatd.DEFAULT_GEN_TIME_MS
    start_at_ms: int = 0

    def __init__(self, name, chat_id, turns, gen_time_ms=chatd.DEFAULT_GEN_TIME_MS, start_at_ms=0):
        # (as model/core.py ``SetTimer.__init__``: each field straight into the instance
        # dict; every swarm seed builds its world's chats and config anew)
        d = self.__dict__
        d["name"] = name
        d["chat_id"] = chat_id
        d["turns"] = turns
        d["gen_time_ms"] = gen_time_ms
        d["start_at_ms"] = start_at_ms


_REFERENCE_AGENT = agent.AgentConfig()  # ``WorldConfig``'s default agent (one object, as a field default is)


@dataclass(frozen=True)
class WorldConfig:
    replicas: tuple[str, ...] = ("replica-1", "replica-2")
    chatd_rules: Any = chatd.CONTRACT
    agent_config: agent.AgentConfig = _REFERENCE_AGENT
    chats: tuple[ChatSpec, ...] = ()
    clocks: FMap = EMPTY  # node -> ClockSpec
    files: FMap = EMPTY
    agent_boot_at_ms: int = 0
    replica_rules: FMap = EMPTY  # replica name -> ChatdRules, for mixed versions in a rollout
    pubsub_immediate: bool = False  # deliver publishes within the commit's step (explorer worlds)
    message_ids_per_chat: bool = False  # each chat numbers its own messages (chatd_db.Db)
    # chatd's timing as the world was built, before any planted bug changed it (set where
    # the world is built: model/worlds.py, sim/world/build.py). Checkers bound the world by this
    # clock, so a bug that changes timing (no-agent-answer-timeout) cannot move its own
    # bound and checkers need not know the planted bugs. None: ``chatd_rules.timing``.
    reference_timing: Timing | None = None
    # The agent's handlers (``boot``, ``shutdown``, ``on_request``, ``on_timer`` with
    # the agent package's signatures); None is model/agent/. Only tests plug in a stub agent,
    # so that every chatd test runs through this module's one interpreter of effects.
    agent_impl: Any = None
    # The chat's workspace at the start (model/builder.py ``WORKSPACE_DIAL_STATUS``):
    # "running" (its agent boots), "none" (the chat has no workspace), "stopped" (no
    # running agent, the disk kept) or "deleted".
    workspace: str = "running"

    def __init__(self, replicas=("replica-1", "replica-2"), chatd_rules=chatd.CONTRACT, agent_config=_REFERENCE_AGENT,
                 chats=(), clocks=EMPTY, files=EMPTY, agent_boot_at_ms=0, replica_rules=EMPTY, pubsub_immediate=False,
                 message_ids_per_chat=False, reference_timing=None, agent_impl=None, workspace="running"):
        # (as ``ChatSpec.__init__``)
        d = self.__dict__
        d["replicas"] = replicas
        d["chatd_rules"] = chatd_rules
        d["agent_config"] = agent_config
        d["chats"] = chats
        d["clocks"] = clocks
        d["files"] = files
        d["agent_boot_at_ms"] = agent_boot_at_ms
        d["replica_rules"] = replica_rules
        d["pubsub_immediate"] = pubsub_immediate
        d["message_ids_per_chat"] = message_ids_per_chat
        d["reference_timing"] = reference_timing
        d["agent_impl"] = agent_impl
        d["workspace"] = workspace

    def clock(self, node: str) -> ClockSpec:
        return self.clocks._index.get(node) or PERFECT_CLOCK  # (the map's dict: asked several times a step)

    def timing_before_bugs(self) -> Timing:
        """The world's chatd clock without its planted bugs (``reference_timing``)."""
        return self.reference_timing if self.reference_timing is not None else self.chatd_rules.timing
