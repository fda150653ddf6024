"""Properties: pure functions of a run's trace and final state that say whether the
contract held.

Theory of operation
-------------------
A run leaves two kinds of evidence in its trace: ground truth (``truth`` records: a process
really started, exited, was killed; an edit was really applied) and belief (``truth``
records of kind ``result_committed``: what chatd told the model). A property reads both,
plus the final ``System`` (to know which tool calls were committed), and returns
``Violation``s, each naming the tool call, the simulated time and the trace records that
prove it.

Rule 1. A property is ``always`` (safety: checked on any prefix), ``eventually``
        (liveness: checked once the run has quiesced) or ``sometimes`` (reachability:
        reported when never seen, to catch vacuous runs).
Rule 2. Properties read result *kinds*, never result texts.
Rule 3. Ground truth is attributed to a tool call by its UUID when the request carried
        tool call headers, and otherwise by (chat, command) or (chat, path): under
        ``today`` the agent picks process IDs, so the command is the only link. Scenarios
        therefore give each execute call of a chat its own command.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Callable

from .identity import tool_call_uuid


@dataclass(frozen=True)
class CallInfo:
    chat_id: str
    message_id: int
    provider_id: str
    uuid: str
    tool: str
    command: str = ""
    path: str = ""


@dataclass(frozen=True)
class Violation:
    property: str
    uuid: str | None
    provider_id: str | None
    at_ms: int
    detail: str
    evidence: tuple[int, ...] = ()  # indexes of trace records that prove it


@dataclass(frozen=True)
class Property:
    name: str
    kind: str  # always | eventually | sometimes
    story: str
    statement: str
    check: Callable[["Evidence"], list[Violation]] = field(compare=False)


def committed_calls(final) -> list[CallInfo]:
    """Every tool call of every committed assistant message, in message order."""
    out = []
    for chat_id, chat in final.db.chats.items():
        for msg in chat.messages:
            if msg.role != "assistant":
                continue
            for tc in msg.tool_calls:
                try:
                    args = json.loads(tc.args_json)
                except ValueError:
                    args = {}
                args = args if isinstance(args, dict) else {}
                out.append(
                    CallInfo(
                        chat_id,
                        msg.id,
                        tc.provider_id,
                        tool_call_uuid(chat_id, msg.id, tc.provider_id),
                        tc.tool,
                        str(args.get("command", "")).rstrip().rstrip("&").rstrip(),
                        str(args.get("path", "")) or _first_path(args),
                    )
                )
    return out


def _first_path(args: dict) -> str:
    files = args.get("files")
    if isinstance(files, list) and files and isinstance(files[0], dict):
        return str(files[0].get("path", ""))
    return ""


class Evidence:
    """The trace indexed per tool call, computed once and shared by every property."""

    def __init__(self, trace: list[dict], final):
        self.trace = trace
        self.final = final
        self.calls = committed_calls(final)
        self.starts: dict[str, list[int]] = {c.uuid: [] for c in self.calls}
        self.edits: dict[str, list[int]] = {c.uuid: [] for c in self.calls}
        self.results: dict[str, list[int]] = {c.uuid: [] for c in self.calls}
        self.exits: dict[str, list[int]] = {c.uuid: [] for c in self.calls}
        self.kills: dict[str, list[int]] = {c.uuid: [] for c in self.calls}
        self.pid_owner: dict[str, str] = {}
        by_uuid = {c.uuid: c for c in self.calls}
        by_command = {(c.chat_id, c.command): c for c in self.calls if c.tool == "execute"}
        by_path = {(c.path): c for c in self.calls if c.tool != "execute"}
        for i, rec in enumerate(trace):
            if rec.get("kind") != "truth":
                continue
            kind = rec.get("truth")
            if kind == "process_started":
                call = by_uuid.get(rec.get("uuid")) or by_command.get((rec.get("chat_id"), rec.get("command")))
                if call is not None:
                    self.starts[call.uuid].append(i)
                    self.pid_owner[f"{rec.get('incarnation')}/{rec.get('pid')}"] = call.uuid
            elif kind in ("process_exited", "process_killed"):
                owner = self.pid_owner.get(f"{rec.get('incarnation')}/{rec.get('pid')}")
                if owner is not None:
                    (self.exits if kind == "process_exited" else self.kills)[owner].append(i)
            elif kind == "edit_applied":
                call = by_uuid.get(rec.get("uuid")) or by_path.get(rec.get("path"))
                if call is not None:
                    self.edits[call.uuid].append(i)
            elif kind == "result_committed":
                if rec.get("uuid") in self.results:
                    self.results[rec["uuid"]].append(i)

    def call(self, uuid: str) -> CallInfo:
        return next(c for c in self.calls if c.uuid == uuid)


def _at_most_once(ev: Evidence) -> list[Violation]:
    out = []
    for call in ev.calls:
        for what, idx in (("process starts", ev.starts[call.uuid]), ("edits applied", ev.edits[call.uuid])):
            if len(idx) > 1:
                out.append(
                    Violation(
                        "at_most_once",
                        call.uuid,
                        call.provider_id,
                        ev.trace[idx[1]]["t_ms"],
                        f"{len(idx)} {what} for {call.provider_id}",
                        tuple(idx),
                    )
                )
    return out


def _one_result_always(ev: Evidence) -> list[Violation]:
    out = []
    for call in ev.calls:
        idx = ev.results[call.uuid]
        if len(idx) > 1:
            out.append(
                Violation("one_result", call.uuid, call.provider_id, ev.trace[idx[1]]["t_ms"],
                          f"{len(idx)} committed results for {call.provider_id}", tuple(idx))
            )
    return out


def _one_result_eventually(ev: Evidence) -> list[Violation]:
    end = ev.trace[-1]["t_ms"] if ev.trace else 0
    return [
        Violation("one_result_eventually", c.uuid, c.provider_id, end, f"no committed result for {c.provider_id}")
        for c in ev.calls
        if not ev.results[c.uuid]
    ]


PROPERTIES: tuple[Property, ...] = (
    Property("at_most_once", "always", "US1, A1",
             "Per tool call, at most one process started and at most one edit applied, across every agent incarnation.",
             _at_most_once),
    Property("one_result", "always", "US1, C7",
             "Every tool call of a committed assistant message has at most one committed result.",
             _one_result_always),
    Property("one_result_eventually", "eventually", "US1, C7",
             "Once the run has quiesced, every committed tool call has exactly one committed result.",
             _one_result_eventually),
)


def quiesced(final) -> bool:
    """The run has settled: no chat is still runnable (running, interrupting,
    requires_action), so every tool call that will get a result has one."""
    from .chatd_db import RUNNABLE

    return all(chat.status not in RUNNABLE for chat in final.db.chats.values())


def check(trace: list[dict], final, kinds: tuple[str, ...] = ("always", "eventually")) -> list[Violation]:
    """Violations of the properties of the given kinds. ``eventually`` properties are
    checked only when the run has quiesced (rule 1)."""
    ev = Evidence(trace, final)
    settled = quiesced(final)
    out: list[Violation] = []
    for prop in PROPERTIES:
        if prop.kind in kinds and (prop.kind != "eventually" or settled):
            out.extend(prop.check(ev))
    return out


def by_name() -> dict[str, Property]:
    return {p.name: p for p in PROPERTIES}


__all__ = ["CallInfo", "Evidence", "PROPERTIES", "Property", "Violation", "check", "committed_calls", "by_name"]
