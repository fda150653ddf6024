"""The evidence index: a run's trace indexed per tool call, once, for every property and
every classifier to read.

Theory of operation
-------------------
A run leaves two kinds of evidence in its trace. Ground truth: ``truth`` records of the
agent (a process started, exited or was killed; an edit was applied), each with the
request that caused it (``cause``, ``cause_chat``, ``cause_headers``). Belief: ``truth``
records of kind ``result_committed``, what chatd told the model, with the result kind and
the task and attempt that committed it. ``Evidence`` walks the trace once and files each
record under the tool call it belongs to (by UUID when the agent knew it, otherwise by
(chat, command) or (chat, path): rule 3 of ``toolcall_sim.model.properties``), next to the final
``System``'s committed calls (``committed_calls``). A ``Violation`` names the property,
the tool call, the simulated time and the indexes of the trace records that prove it.
"""

from __future__ import annotations

from dataclasses import dataclass

from .. import chattool
from ..identity import tool_call_uuid
from .risks import KNOWN_FINDINGS


@dataclass(frozen=True)
class CallInfo:
    chat_id: str
    message_id: int
    provider_id: str
    uuid: str
    tool: str
    command: str = ""
    path: str = ""
    background: bool = False
    timeout_ms: int = 10_000
    # Its place among the calls of its message that share its provider ID (0: the
    # first, or the only one). Copies share the UUID, so its process starts, edits,
    # exits and kills; each copy has its own committed results (``Evidence.results_of``).
    copy: int = 0


@dataclass(frozen=True)
class Violation:
    property: str
    uuid: str | None
    provider_id: str | None
    at_ms: int
    detail: str
    evidence: tuple[int, ...] = ()  # indexes of the trace records that prove it
    # Its class when it is not new: a residual risk of the design (``RESIDUAL_RISKS``) or
    # a known finding (``KNOWN_FINDINGS``, still a violation: ``is_known_finding``).
    residual_risk: str | None = None

    def to_json(self) -> dict:
        return {
            "property": self.property,
            "uuid": self.uuid,
            "id": self.provider_id,
            "at_s": self.at_ms / 1000,
            "detail": self.detail,
            "evidence": list(self.evidence),
            "residual_risk": self.residual_risk,
            "known_finding": self.residual_risk in KNOWN_FINDINGS,
        }



# ---------------------------------------------------------------------------
# Indexing the trace
# ---------------------------------------------------------------------------


def committed_calls(final) -> list[CallInfo]:
    """Every tool call of every committed assistant message, in message order, read with
    chatd's own argument rules (background, effective timeout, target). The messages a
    message edit soft-deleted count (their calls were committed; ``Evidence.discarded``
    says when the edit discarded them)."""
    timing = final.config.chatd_rules.timing
    out = []
    for chat_id, chat in final.db.chats.items():
        deleted = getattr(chat, "deleted_messages", ())
        for msg in sorted(chat.messages + deleted, key=lambda m: m.id) if deleted else chat.messages:
            if msg.role != "assistant":
                continue
            seen: dict[str, int] = {}  # provider ID -> calls with it so far in the message
            for tc in msg.tool_calls:
                copy = seen[tc.provider_id] = seen.get(tc.provider_id, -1) + 1
                background, timeout_ms = False, timing.execute_default_timeout_ms
                if tc.tool == chattool.EXECUTE:
                    try:
                        args = chattool.parse_execute_args(tc.args_json)
                        background = chattool.runs_in_background(args)
                        timeout_ms = chattool.effective_timeout_ms(args, timing)
                    except (chattool.ArgsError, chattool.InvalidTimeout):
                        pass
                target = chattool.call_target(tc)
                out.append(
                    CallInfo(
                        chat_id,
                        msg.id,
                        tc.provider_id,
                        tool_call_uuid(chat_id, msg.id, tc.provider_id),
                        tc.tool,
                        target if tc.tool == chattool.EXECUTE else "",
                        target if tc.tool != chattool.EXECUTE else "",
                        background,
                        timeout_ms,
                        copy,
                    )
                )
    return out


def record_tags(rec: dict) -> tuple:
    """What a record is, as ``Property.reads`` names it (model/properties/checks.py):
    ``("kind", kind)`` for every record, ``("note", name)`` for a note, ``("truth",
    what)`` for a record with a ``truth`` field. Every index entry ``Evidence`` makes for
    a record is named by one of its tags (a start by ``("truth", "process_started")``,
    a send by ``("kind", "send")``, a cancel's mark by ``("note",
    "cancel_never_received")``)."""
    kind = rec.get("kind")
    tags = [("kind", kind)]
    if kind == "note":
        tags.append(("note", rec.get("note")))
    if "truth" in rec:
        tags.append(("truth", rec["truth"]))
    return tuple(tags)


# The record kinds ``Evidence`` indexes (besides any record with a ``truth`` field).
_INDEXED_KINDS = frozenset(("note", "truth", "send", "agent_down", "agent_up", "fault", "workspace"))
# A workspace in these states has no disk: no file change of a tool call survives
# (docs/contract.md C5.6; model/builder.py ``set_workspace``).
_NO_DISK = ("none", "deleted")


class Evidence:
    """The trace indexed per tool call, computed once and shared by every property."""

    def __init__(self, trace: list[dict], final, calls: list | None = None):
        self.trace = trace
        self.final = final
        self.calls = calls = committed_calls(final) if calls is None else calls
        # One call per UUID (the first copy): the calls a property judges per tool call
        # UUID (its process starts and edits), once however many copies share it.
        self.firsts = [c for c in calls if c.copy == 0]
        # The UUIDs that copies share, whose results ``results_of`` sorts by copy.
        self.copied = frozenset(c.uuid for c in calls if c.copy)
        uuids = [c.uuid for c in calls]
        self.starts = starts = {u: [] for u in uuids}
        self.edits = edits = {u: [] for u in uuids}
        self.results = results = {u: [] for u in uuids}
        self.exits = exits = {u: [] for u in uuids}
        self.kills = kills = {u: [] for u in uuids}
        self.never_received = never_received = {u: [] for u in uuids}
        self.pid_owner: dict[str, str] = {}  # "<incarnation>/<pid>" -> call uuid
        self.pid_start: dict[str, int] = {}  # "<incarnation>/<pid>" -> index of its start
        self.sends: dict[str, int] = {}  # request id -> index of its send record
        # request id -> index of its arrival at the agent (the ``request_received`` truth of
        # a start, edit or write whose handler runs): what a side effect is judged by
        self.received: dict[str, int] = {}
        self.agent_downs: list[int] = []
        self.agent_ups: list[int] = []  # the agent's starts (classify.py ``_agent_boot_before``)
        self.faults: list[int] = []
        self.workspace_moves: list[int] = []  # the ``workspace`` records: its state at the start, its moves
        # Indices of the notes, the truths and any other record with a ``truth`` field:
        # all that the reachability properties (checks.py ``_reached_mark``) and the scans
        # for notes and truths ask about, a tenth of a trace.
        self.marks = marks = []
        # The notes by name and the records with a ``truth`` field by it, each in trace
        # order: ``marks_by`` is made of them after the walk, and the notes indexed on their own
        # (cancels never received, interrupts) are read from their lists.
        notes: dict = {}
        truths: dict = {}
        by_uuid = {c.uuid: c for c in calls}
        by_command = {(c.chat_id, c.command): c for c in calls if c.tool == "execute"}
        by_path = {(c.chat_id, c.path): c for c in calls if c.tool != "execute"}
        pid_owner, pid_start, sends = self.pid_owner, self.pid_start, self.sends
        # The world's records each filed by its kind alone, in trace order.
        listed_by_kind = {"agent_down": self.agent_downs, "agent_up": self.agent_ups, "fault": self.faults,
                          "workspace": self.workspace_moves}
        for i, rec in enumerate(trace):
            kind = rec.get("kind")
            if kind == "note":
                marks.append(i)
                notes.setdefault(rec.get("note"), []).append(i)
                if "truth" in rec:
                    truths.setdefault(rec["truth"], []).append(i)
                continue
            if kind not in _INDEXED_KINDS and "truth" not in rec:
                continue  # most records (deliveries, replies, timers): nothing to index
            what = None
            if "truth" in rec:
                marks.append(i)
                what = rec["truth"]
                truths.setdefault(what, []).append(i)  # (a truth is one record in 17)
            elif kind == "truth":
                marks.append(i)
            if kind == "send":
                sends.setdefault(rec.get("req"), i)
                continue
            listed = listed_by_kind.get(kind)
            if listed is not None:
                listed.append(i)
                continue
            if kind != "truth":
                continue
            if what == "process_started":
                call = by_uuid.get(rec.get("uuid")) or by_command.get((rec.get("chat_id"), rec.get("command")))
                pid_key = f"{rec.get('incarnation')}/{rec.get('pid')}"
                pid_start[pid_key] = i
                if call is not None:
                    starts[call.uuid].append(i)
                    pid_owner[pid_key] = call.uuid
            elif what == "process_exited" or what == "process_killed":
                owner = pid_owner.get(f"{rec.get('incarnation')}/{rec.get('pid')}")
                if owner is not None:
                    (exits if what == "process_exited" else kills)[owner].append(i)
            elif what == "edit_applied":
                call = by_uuid.get(rec.get("uuid")) or by_path.get((rec.get("cause_chat"), rec.get("path")))
                if call is None:
                    path = rec.get("path")
                    for c in calls:  # the first file call on that path, of any chat
                        if c.tool != "execute" and c.path == path:
                            call = c
                            break
                if call is not None:
                    edits[call.uuid].append(i)
            elif what == "request_received":
                self.received.setdefault(rec.get("cause"), i)
            elif what == "result_committed":
                uuid = rec.get("uuid")
                if uuid in results:
                    results[uuid].append(i)
        # The calls a message edit discarded (chatd_db rule 9): uuid -> index of the
        # ``message_edited`` note. Its chat's messages between the edited and the
        # replacement message IDs are the discarded branch.
        self.discarded: dict[str, int] = {}
        self.edits_of_chat: dict[str, list[int]] = {}
        for i in notes.get("message_edited", ()):
            rec = trace[i]
            self.edits_of_chat.setdefault(rec.get("chat_id"), []).append(i)
            low, high = rec.get("edited_message_id"), rec.get("replacement_message_id")
            for c in calls:
                if c.chat_id == rec.get("chat_id") and low < c.message_id < high and c.uuid not in self.discarded:
                    self.discarded[c.uuid] = i
        self.interrupts: list[int] = list(notes.get("interrupt_requested", ()))
        self.interruption_done: list[int] = list(notes.get("interruption_finished", ()))
        for i in notes.get("cancel_never_received", ()):
            uuid = trace[i].get("uuid")
            if uuid in never_received:
                never_received[uuid].append(i)
        # The marks by what they are: ("note", name) for a note, ("truth", name) for a
        # record with a ``truth`` field, each in trace order; a reachability property
        # asks only those of its kind (``checks._reached_mark``).
        self.marks_by: dict[tuple, list[int]] = {("note", name): idx for name, idx in notes.items()}
        for what, idx in truths.items():
            self.marks_by["truth", what] = idx

    # -- helpers ---------------------------------------------------------------
    def results_of(self, call: CallInfo) -> list[int]:
        """The committed results of ``call`` itself: its UUID's results, and of a UUID
        that copies share, those whose ``copy`` is the call's. chatd writes a result for
        every copy in the one commit that resolves them (docs/contract.md C3.7), and the
        commit marks each with its copy (model/chatd_db.py)."""
        idx = self.results[call.uuid]
        if call.uuid not in self.copied:
            return idx
        trace = self.trace
        return [i for i in idx if trace[i].get("copy", 0) == call.copy]

    def end_ms(self) -> int:
        return self.trace[-1]["t_ms"] if self.trace else 0

    def ended(self, call: CallInfo, start_idx: int) -> int | None:
        """Index of the exit or kill of the process started at ``start_idx``."""
        rec = self.trace[start_idx]
        key = (rec.get("incarnation"), rec.get("pid"))
        for i in self.exits[call.uuid] + self.kills[call.uuid]:
            r = self.trace[i]
            if (r.get("incarnation"), r.get("pid")) == key:
                return i
        return None

    def running_at(self, call: CallInfo, start_idx: int, t_ms: int) -> bool:
        end = self.ended(call, start_idx)
        return self.trace[start_idx]["t_ms"] <= t_ms and (end is None or self.trace[end]["t_ms"] > t_ms)

    def agent_age_ms(self, start_idx: int, at_idx: int) -> int:
        """Run age on the agent's own clock between two agent records."""
        return self.trace[at_idx]["clock_ms"] - self.trace[start_idx]["clock_ms"]

    def disk_at(self, idx: int) -> bool:
        """Whether the workspace had its disk at trace record ``idx``: it was running or
        stopped (a stop keeps the volume), not deleted and not missing."""
        state = "running"
        for i in self.workspace_moves:
            if i > idx:
                break
            state = self.trace[i].get("state")
        return state not in _NO_DISK

    def attempt_of(self, req_id: str | None) -> str:
        """The task attempt a request belongs to: '<worker>/t<n>/a<m>' from its ID."""
        if not req_id:
            return ""
        return "/".join(req_id.split("/")[:3])  # (an ID of fewer parts is its own attempt)



def call_of(ev: Evidence, uuid: str | None) -> CallInfo | None:
    """The first committed call with this UUID, if any."""
    return next((c for c in ev.calls if c.uuid == uuid), None)


def violation(name, call: CallInfo | None, at_ms, detail, evidence=()) -> Violation:
    """A violation of property ``name`` by ``call`` (None: no single call) at ``at_ms``."""
    return Violation(name, call.uuid if call else None, call.provider_id if call else None, at_ms, detail,
                     tuple(evidence))


def agent_clock_at(ev: Evidence, idx: int) -> int:
    """The agent's clock reading closest before trace record ``idx``."""
    for i in range(idx, -1, -1):
        if ev.trace[i].get("node") == "agent" and "clock_ms" in ev.trace[i]:
            return ev.trace[i]["clock_ms"] + (ev.trace[idx]["t_ms"] - ev.trace[i]["t_ms"])
    return ev.trace[idx]["t_ms"]

