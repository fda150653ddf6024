"""The agent's state: its records, pending runs, waiting requests and processes, and its
life (boot, shutdown, restart; docs/contract.md A2.1, A4.1, design A2 and A7).

Theory of operation
-------------------
``AgentState`` is one immutable value; every handler returns a new one with its effects.
The record store is ``chats`` (chat ID -> ``ChatRecords``: the chat's latest message ID
and that message's records), which store.py reads and writes. A handler run that has its
record but has not published is a ``Run``; a request waiting for a run or a process is a
``Waiter``; a spawned process is a ``Process``. Shutdown loses everything in memory
(records, runs, waiters, processes) and keeps only the disk (``files``); restart is
shutdown plus a fresh boot with a new uptime and incarnation (rule 7).
"""

from __future__ import annotations

from dataclasses import dataclass

from ..core import EMPTY, CachedRepr, CancelTimer, FMap, Reply, Request, TransportError, probe, replace, truth
from ..identity import Key

# ``AgentConfig`` (model/agent/rules.py) is named below in annotations only, which
# ``from __future__ import annotations`` keeps as text: importing it, even under
# TYPE_CHECKING, would close the circle rules -> state -> rules (issue 33: none).


@dataclass(frozen=True, repr=False)
class Recorded(CachedRepr):
    """A recorded response: status, Content-Type and body of the one run."""

    status: int
    content_type: str
    body: bytes


@dataclass(frozen=True, repr=False)
class Record(CachedRepr):
    input_hash: str
    canceled: bool
    created_at_ms: int
    run_id: str  # the pending or finished run that owns this record; "" for markers
    recorded: Recorded | None  # None while the run is pending


@dataclass(frozen=True, repr=False)
class ChatRecords(CachedRepr):
    latest_message_id: int
    records: FMap = EMPTY  # provider tool call ID -> Record


@dataclass(frozen=True, repr=False)
class Run(CachedRepr):
    """A handler run that has its record but has not published yet."""

    key: Key | None  # None: no tool call headers (or an old agent), nothing is recorded
    kind: str  # start | edit | write
    request: Request
    created_at_ms: int  # the request's arrival: the record's instant, and the process's start


@dataclass(frozen=True, repr=False)
class Waiter(CachedRepr):
    """A request waiting for something: a run to publish (replay or cancel), or a process
    to exit (output read)."""

    request: Request
    kind: str  # replay | cancel | output
    target: str  # run ID for replay/cancel, process ID for output
    key: Key | None = None
    threshold_ms: int = 0  # cancel only


@dataclass(frozen=True, repr=False)
class Process(CachedRepr):
    pid: str
    chat_id: str
    key: Key | None
    command: str
    background: bool
    started_at_ms: int
    output: str
    running: bool = True
    exit_code: int | None = None
    exited_at_ms: int | None = None
    canceled: bool = False
    workdir: str = ""  # the directory it runs in (manager.resolveWorkDir), as a list reports it


@dataclass(frozen=True, repr=False)
class AgentState(CachedRepr):
    config: AgentConfig
    incarnation: int
    started_at_ms: int
    chats: FMap = EMPTY  # chat ID -> ChatRecords
    runs: FMap = EMPTY  # run ID -> Run
    waiters: FMap = EMPTY  # request ID -> Waiter
    processes: FMap = EMPTY  # pid -> Process
    files: FMap = EMPTY  # path -> content (the workspace disk; survives restarts)
    pid_counter: int = 0


Effects = list


def boot(config: AgentConfig, now_ms: int, files: FMap = EMPTY, incarnation: int = 1) -> AgentState:
    """A fresh agent process: no records, no processes, uptime starts now (A7)."""
    return AgentState(config=config, incarnation=incarnation, started_at_ms=now_ms, files=files)


def shutdown(state: AgentState, now_ms: int) -> tuple[AgentState, Effects]:
    """Agent shutdown (rule 7): kill every process (not a cancel), break every open
    request. Returns the dead state; ``restart`` boots the next incarnation."""
    effects: Effects = []
    for pid, proc in state.processes.items():
        if proc.running:
            effects.append(probe("A4.5.process-killed"))
            effects.append(CancelTimer(f"exit:{pid}"))
            effects.append(truth("process_killed", pid=pid, by="shutdown", incarnation=state.incarnation))
        else:
            effects.append(probe("A4.5.exited-process-lost"))
    for chat in state.chats.values():
        if chat.records:
            effects.append(probe("A4.5.records-lost"))
    for req_id, waiter in state.waiters.items():
        if waiter.kind == "output":
            effects.append(CancelTimer(f"outwait:{req_id}"))
        effects.append(probe("A4.5.request-broken"))
        effects.append(Reply(waiter.request.src, TransportError(req_id, "agent shut down")))
    for run_id in state.runs:
        effects.append(probe("A4.5.run-lost"))
        effects.append(CancelTimer(f"handler:{run_id}"))
    dead = replace(state, chats=EMPTY, runs=EMPTY, waiters=EMPTY, processes=EMPTY)
    return dead, effects


def restart(state: AgentState, now_ms: int) -> tuple[AgentState, Effects]:
    """Shutdown then boot the next incarnation; the disk (files) survives."""
    dead, effects = shutdown(state, now_ms)
    return boot(state.config, now_ms, dead.files, state.incarnation + 1), effects
