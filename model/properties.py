"""Properties: pure functions of a run's trace and final state that say whether the
contract held, with the evidence that proves it.

Theory of operation
-------------------
A run leaves two kinds of evidence in its trace. Ground truth: ``truth`` records of the
agent (a process started, exited or was killed; an edit was applied), each with the
request that caused it (``cause``, ``cause_chat``, ``cause_headers``). Belief: ``truth``
records of kind ``result_committed``, what chatd told the model, with the result kind and
the task and attempt that committed it. A property reads both, plus the final ``System``
(which tool calls were committed, and their arguments), and returns ``Violation``s naming
the property, the tool call, the simulated time and the trace records that prove it.

Rule 1. A property is ``always`` (safety: it can be checked on any prefix), ``eventually``
        (liveness: checked only once the run has quiesced, i.e. no chat is still runnable)
        or ``sometimes`` (reachability: reported as *unreached*, never as a violation, so a
        run that never exercised the interesting path is visible).
Rule 2. Properties read result *kinds* (and exit codes, process IDs), never result texts.
Rule 3. Ground truth is attributed to a tool call by its UUID when the agent knew it, and
        otherwise by (chat, command) or (chat, path): under ``today`` the agent picks
        process IDs, so the command is the only link. Scenarios give each execute call of a
        chat its own command.
Rule 4. A violation that matches a residual risk the design documents (section 7) is
        reported as that risk, with its reference, not as a new finding (``classify``);
        one that matches a known finding about the contract (``KNOWN_FINDINGS``) is
        reported by that name. Each class has one recognizer (``CLASSIFIERS``) that reads
        only the records proving it (an effect's incarnation, the age its request
        carried, the interrupt result's unknown reason, the agent's pending-run record),
        for every tool kind; a violation no recognizer accepts is a new finding.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from functools import lru_cache
from typing import Callable

from . import chattool
from .identity import tool_call_uuid
from .timing import DEFAULT_TIMING

# Runner notice, backoff, commit: the interrupt bound's allowance (US7) on top of the dial
# and agent answer timeouts, on the reference clock (``interrupt_bound_ms`` scales it).
INTERRUPT_SLACK_MS = 30_000


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


@dataclass(frozen=True)
class Property:
    name: str
    kind: str  # always | eventually | sometimes
    story: str
    statement: str
    check: Callable[["Evidence"], list] = field(compare=False)
    needs_quiescence: bool = True  # eventually-properties with their own time bound say False


# ---------------------------------------------------------------------------
# Indexing the trace
# ---------------------------------------------------------------------------


def committed_calls(final) -> list[CallInfo]:
    """Every tool call of every committed assistant message, in message order, read with
    chatd's own argument rules (background, effective timeout, target)."""
    timing = final.config.chatd_rules.timing
    out = []
    for chat_id, chat in final.db.chats.items():
        for msg in chat.messages:
            if msg.role != "assistant":
                continue
            for tc in msg.tool_calls:
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
                    )
                )
    return out


class Evidence:
    """The trace indexed per tool call, computed once and shared by every property."""

    def __init__(self, trace: list[dict], final):
        self.trace = trace
        self.final = final
        self.calls = committed_calls(final)
        uuids = [c.uuid for c in self.calls]
        self.starts: dict[str, list[int]] = {u: [] for u in uuids}
        self.edits: dict[str, list[int]] = {u: [] for u in uuids}
        self.results: dict[str, list[int]] = {u: [] for u in uuids}
        self.exits: dict[str, list[int]] = {u: [] for u in uuids}
        self.kills: dict[str, list[int]] = {u: [] for u in uuids}
        self.never_received: dict[str, list[int]] = {u: [] for u in uuids}
        self.pid_owner: dict[str, str] = {}  # "<incarnation>/<pid>" -> call uuid
        self.pid_start: dict[str, int] = {}  # "<incarnation>/<pid>" -> index of its start
        self.sends: dict[str, int] = {}  # request id -> index of its send record
        self.agent_downs: list[int] = []
        self.interrupts: list[int] = []
        self.interruption_done: list[int] = []
        self.faults: list[int] = []
        by_uuid = {c.uuid: c for c in self.calls}
        by_command = {(c.chat_id, c.command): c for c in self.calls if c.tool == "execute"}
        by_path = {(c.chat_id, c.path): c for c in self.calls if c.tool != "execute"}
        for i, rec in enumerate(trace):
            kind = rec.get("kind")
            if kind == "send":
                self.sends.setdefault(rec.get("req"), i)
            elif kind == "agent_down":
                self.agent_downs.append(i)
            elif kind == "fault":
                self.faults.append(i)
            elif kind == "note":
                name = rec.get("note")
                if name == "cancel_never_received" and rec.get("uuid") in self.never_received:
                    self.never_received[rec["uuid"]].append(i)
                elif name == "interrupt_requested":
                    self.interrupts.append(i)
                elif name == "interruption_finished":
                    self.interruption_done.append(i)
            if kind != "truth":
                continue
            what = rec.get("truth")
            if what == "process_started":
                call = by_uuid.get(rec.get("uuid")) or by_command.get((rec.get("chat_id"), rec.get("command")))
                pid_key = f"{rec.get('incarnation')}/{rec.get('pid')}"
                self.pid_start[pid_key] = i
                if call is not None:
                    self.starts[call.uuid].append(i)
                    self.pid_owner[pid_key] = call.uuid
            elif what in ("process_exited", "process_killed"):
                owner = self.pid_owner.get(f"{rec.get('incarnation')}/{rec.get('pid')}")
                if owner is not None:
                    (self.exits if what == "process_exited" else self.kills)[owner].append(i)
            elif what == "edit_applied":
                call = by_uuid.get(rec.get("uuid")) or by_path.get((rec.get("cause_chat"), rec.get("path")))
                if call is None:
                    call = next((c for c in self.calls if c.tool != "execute" and c.path == rec.get("path")), None)
                if call is not None:
                    self.edits[call.uuid].append(i)
            elif what == "result_committed":
                if rec.get("uuid") in self.results:
                    self.results[rec["uuid"]].append(i)

    # -- helpers ---------------------------------------------------------------
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

    def attempt_of(self, req_id: str | None) -> str:
        """The task attempt a request belongs to: '<worker>/t<n>/a<m>' from its ID."""
        if not req_id:
            return ""
        parts = req_id.split("/")
        return "/".join(parts[:3]) if len(parts) >= 3 else req_id


def _v(name, call: CallInfo | None, at_ms, detail, evidence=()) -> Violation:
    return Violation(name, call.uuid if call else None, call.provider_id if call else None, at_ms, detail,
                     tuple(evidence))


# ---------------------------------------------------------------------------
# Safety
# ---------------------------------------------------------------------------


def _at_most_once(ev: Evidence) -> list[Violation]:
    out = []
    for call in ev.calls:
        for what, idx in (("process starts", ev.starts[call.uuid]), ("edits applied", ev.edits[call.uuid])):
            if len(idx) > 1:
                out.append(_v("at_most_once", call, ev.trace[idx[1]]["t_ms"],
                              f"{len(idx)} {what} for {call.provider_id}", idx))
    return out


def _one_result(ev: Evidence) -> list[Violation]:
    out = []
    for call in ev.calls:
        idx = ev.results[call.uuid]
        if len(idx) > 1:
            kinds = ", ".join(str(ev.trace[i].get("result_kind")) for i in idx)
            out.append(_v("one_result", call, ev.trace[idx[1]]["t_ms"],
                          f"{len(idx)} committed results for {call.provider_id} ({kinds})", idx))
    return out


def _truthful_result(ev: Evidence) -> list[Violation]:
    """The committed kind matches what really happened (US5)."""
    out = []
    for call in ev.calls:
        effects = ev.starts[call.uuid] if call.tool == "execute" else ev.edits[call.uuid]
        for ri in ev.results[call.uuid]:
            rec = ev.trace[ri]
            kind = rec.get("result_kind")
            t = rec["t_ms"]
            before = [i for i in effects if i < ri]
            bad = None
            if kind in ("not_run", "not_applied") and effects:
                bad = f"{kind} but {len(effects)} side effect(s) happened", effects
            elif kind == "canceled":
                killed = [i for i in ev.kills[call.uuid] if i < ri and ev.trace[i].get("by") == "cancel"]
                if not killed:
                    bad = "canceled but no cancel killed its process", before
            elif kind == "completed" and call.tool == "execute":
                code = rec.get("exit_code")
                exited = [i for i in ev.exits[call.uuid] + ev.kills[call.uuid] if i < ri]
                codes = [ev.trace[i].get("exit_code", -1) if ev.trace[i]["truth"] == "process_exited" else -1
                         for i in exited]
                if not exited:
                    bad = "completed but no process of it had exited", before
                elif code is not None and code not in codes:
                    bad = f"completed with exit code {code} but the process exited with {codes}", exited
            elif kind == "timed_out":
                ok = False
                for si in before:
                    end = ev.ended(call, si)
                    lived_ms = (ev.trace[end]["clock_ms"] if end is not None and end < ri else None)
                    started_ms = ev.trace[si]["clock_ms"]
                    if lived_ms is None:
                        # still running at the commit: its run age then must have reached the timeout
                        age_ms = _agent_clock_at(ev, ri) - started_ms
                        ok = ok or age_ms >= call.timeout_ms
                    else:
                        ok = ok or (lived_ms - started_ms) >= call.timeout_ms
                if not ok:
                    bad = f"timed_out but no process of it was running at its {call.timeout_ms} ms deadline", before
            elif kind == "applied" and not [i for i in ev.edits[call.uuid] if i < ri]:
                bad = "applied but no edit was applied", ()
            elif kind == "background_started" and not before:
                bad = "background_started but no process was started", ()
            if bad is not None:
                detail, evidence = bad
                out.append(_v("truthful_result", call, t, f"{call.provider_id}: {detail}", tuple(evidence) + (ri,)))
    return out


def _agent_clock_at(ev: Evidence, idx: int) -> int:
    """The agent's clock reading closest before trace record ``idx``."""
    for i in range(idx, -1, -1):
        if ev.trace[i].get("node") == "agent" and "clock_ms" in ev.trace[i]:
            return ev.trace[i]["clock_ms"] + (ev.trace[idx]["t_ms"] - ev.trace[i]["t_ms"])
    return ev.trace[idx]["t_ms"]


def _retry_changes_nothing(ev: Evidence) -> list[Violation]:
    """A side effect is caused only by the first task attempt that caused one for its
    call (US4): a retry or a new owner gets the recorded answer instead."""
    out = []
    for call in ev.calls:
        for idx in (ev.starts[call.uuid], ev.edits[call.uuid]):
            if len(idx) < 2:
                continue
            first = ev.attempt_of(ev.trace[idx[0]].get("cause"))
            later = [i for i in idx[1:] if ev.attempt_of(ev.trace[i].get("cause")) != first]
            if later:
                causes = {ev.attempt_of(ev.trace[i].get("cause")) for i in later}
                again = ev.attempt_of(ev.trace[later[0]].get("cause"))
                more = f" and {len(causes) - 1} more attempt(s)" if len(causes) > 1 else ""
                out.append(_v("retry_changes_nothing", call, ev.trace[later[0]]["t_ms"],
                              f"{call.provider_id}: side effect again from {again}{more} after {first}",
                              (idx[0], *later)))
    return out


def _interrupt_results(ev: Evidence, call: CallInfo) -> list[int]:
    return [i for i in ev.results[call.uuid] if ev.trace[i].get("task") == "interrupt"]


def _interrupt_stops_foreground(ev: Evidence) -> list[Violation]:
    """US2: an interrupt that resolves a foreground execute whose process runs below its
    timeout kills it and reports it canceled (unknown is allowed: the agent could not
    answer; see the residual risks)."""
    out = []
    for call in ev.calls:
        if call.tool != "execute" or call.background:
            continue
        for ri in _interrupt_results(ev, call):
            rec = ev.trace[ri]
            if rec.get("result_kind") == "unknown":
                continue
            for si in [i for i in ev.starts[call.uuid] if i < ri]:
                if not ev.running_at(call, si, rec["t_ms"]):
                    continue
                age_ms = _agent_clock_at(ev, ri) - ev.trace[si]["clock_ms"]
                if age_ms < call.timeout_ms:
                    out.append(_v("interrupt_stops_foreground", call, rec["t_ms"],
                                  f"{call.provider_id}: interrupt committed {rec.get('result_kind')} and left its "
                                  f"process running at run age {age_ms} ms (< {call.timeout_ms} ms)", (si, ri)))
    return out


def _background_survives(ev: Evidence) -> list[Violation]:
    """US6: a background process, or a foreground one past its timeout, is never killed
    by a cancel."""
    out = []
    for call in ev.calls:
        if call.tool != "execute":
            continue
        for ki in ev.kills[call.uuid]:
            rec = ev.trace[ki]
            if rec.get("by") != "cancel":
                continue
            si = ev.pid_start.get(f"{rec.get('incarnation')}/{rec.get('pid')}")
            age_ms = ev.agent_age_ms(si, ki) if si is not None else 0
            if call.background:
                out.append(_v("background_survives", call, rec["t_ms"],
                              f"{call.provider_id}: a cancel killed a background process", (ki,)))
            elif age_ms >= call.timeout_ms:
                out.append(_v("background_survives", call, rec["t_ms"],
                              f"{call.provider_id}: a cancel killed a process past its {call.timeout_ms} ms timeout "
                              f"(run age {age_ms} ms)", (ki,)))
    return out


def _chat_isolation(ev: Evidence) -> list[Violation]:
    """US9: a request carrying one chat's ID never kills or reuses another chat's process."""
    out = []
    for i, rec in enumerate(ev.trace):
        if rec.get("kind") != "truth" or rec.get("truth") != "process_killed" or rec.get("by") == "shutdown":
            continue
        si = ev.pid_start.get(f"{rec.get('incarnation')}/{rec.get('pid')}")
        if si is None or rec.get("cause_chat") is None:
            continue
        owner_chat = ev.trace[si].get("chat_id")
        if owner_chat != rec.get("cause_chat"):
            uuid = ev.pid_owner.get(f"{rec.get('incarnation')}/{rec.get('pid')}")
            call = next((c for c in ev.calls if c.uuid == uuid), None)
            out.append(_v("chat_isolation", call, rec["t_ms"],
                          f"chat {rec.get('cause_chat')} killed a process of chat {owner_chat}", (si, i)))
    return out


def _canceled_before_received(ev: Evidence) -> list[Violation]:
    """US10: once a cancel answered that the agent never received a call, or an interrupt
    committed the call's result, that call never runs (in any agent lifetime)."""
    out = []
    for call in ev.calls:
        marks = ev.never_received[call.uuid] + _interrupt_results(ev, call)
        if not marks:
            continue
        first = min(marks)
        why = "a cancel recorded it as never received" if first in ev.never_received[call.uuid] else \
            "the interrupt committed its result"
        effects = ev.starts[call.uuid] if call.tool == "execute" else ev.edits[call.uuid]
        late = [i for i in effects if i > first]
        if late:
            out.append(_v("canceled_before_received_never_runs", call, ev.trace[late[0]]["t_ms"],
                          f"{call.provider_id} ran after {why}", (first, *late)))
    return out


def _fenced_commits(ev: Evidence) -> list[Violation]:
    """No commit from a non-owner or a replaced attempt: every result commit comes from
    the chat's owner at that time, and from the newest generation attempt it began.

    Both halves read records chatd already emits, nothing added for the check: the owner
    from ``acquired`` notes; the attempts from ``batch_started`` notes (each is one
    ``RecordGenerationAttempt`` that went through, with its generation_attempt; its task's
    chat comes from the ``task_started`` note). A generation commit whose own attempt
    began before another batch attempt of the same chat began was made by a replaced
    attempt: with the attempt fence (chatd-contract.md 2.4 requireGenerationAttempt) the
    chat row's generation_attempt no longer matches and the commit is refused. A
    generate-assistant attempt emits no such note, but it only begins once no call is
    unresolved, so no batch can be waiting to commit behind it. The explorer keeps
    neither note on its paths (they would split its states), so there only the owner
    half can fire."""
    out = []
    owner: dict[str, str] = {}
    chat_of_task: dict[str, str] = {}
    begun: dict[str, list[tuple[int, str, int]]] = {}  # chat -> (index, replica, generation_attempt)
    for i, rec in enumerate(ev.trace):
        kind = rec.get("kind")
        if kind == "note":
            name = rec.get("note")
            if name == "acquired":
                owner[rec.get("chat_id")] = rec.get("worker_id")
            elif name == "task_started":
                chat_of_task[rec.get("task")] = rec.get("chat_id")
            elif name == "batch_started" and rec.get("task") in chat_of_task:
                begun.setdefault(chat_of_task[rec["task"]], []).append(
                    (i, rec.get("node"), rec.get("generation_attempt", 0)))
        elif kind == "truth" and rec.get("truth") == "result_committed":
            chat_id = rec.get("chat_id")
            replica = str(rec.get("replica") or "")
            owner_replica = owner.get(chat_id, "").rsplit("-w", 1)[0]
            call = next((c for c in ev.calls if c.uuid == rec.get("uuid")), None)
            if replica and chat_id in owner and owner_replica != replica:
                out.append(_v("fenced_commits", call, rec["t_ms"],
                              f"{replica} committed a result for a chat owned by {owner[chat_id]}", (i,)))
                continue
            if rec.get("task") != "generation":
                continue
            gen = rec.get("generation_attempt", 0)
            begins = begun.get(chat_id, [])
            mine = next((b for b in reversed(begins) if b[1] == replica and b[2] == gen), None)
            later = [b for b in begins if mine is not None and b[0] > mine[0]]
            if later:
                out.append(_v("fenced_commits", call, rec["t_ms"],
                              f"{replica}'s generation attempt {gen} committed after {later[-1][1]} began "
                              f"attempt {later[-1][2]} of the chat", (mine[0], later[-1][0], i)))
    return out


# ---------------------------------------------------------------------------
# Liveness
# ---------------------------------------------------------------------------


def _one_result_eventually(ev: Evidence) -> list[Violation]:
    return [
        _v("one_result_eventually", c, ev.end_ms(), f"no committed result for {c.provider_id} after the run quiesced")
        for c in ev.calls
        if not ev.results[c.uuid]
    ]


# Faults that strike chatd itself (the explorer's takeover is an ownership change at once).
_SLOW_FAULTS = ("replica_crash", "ownership_change", "takeover", "db_outage")


@lru_cache(maxsize=16)  # a pure function of a frozen Timing; evaluated on every explored state
def interrupt_bound_ms(timing) -> int:
    """How long an interrupt may take on the clock ``timing``: the dial timeout plus the
    agent answer timeout plus slack (30 s on the reference clock, scaled like the dial
    timeout elsewhere): 2 min on the reference clock, 10 small ms on the explorer's. The
    checker passes the world's clock before its planted bugs
    (``WorldConfig.timing_before_bugs``): a bound read from the bug's own answer timeout
    would grow with it and never catch it."""
    slack_ms = INTERRUPT_SLACK_MS * timing.dial_timeout_ms // DEFAULT_TIMING.dial_timeout_ms
    return timing.dial_timeout_ms + timing.agent_answer_timeout_ms + slack_ms


def _interrupt_finishes(ev: Evidence) -> list[Violation]:
    """US7: an interrupt finishes within the dial bound plus the agent answer timeout
    (plus slack for the runner to notice and commit) once the agent is reachable or known
    unreachable; a fault that strikes chatd itself in the window (crash, ownership change,
    database outage) only delays it, so those interrupts are checked for finishing at all."""
    out = []
    bound_ms = interrupt_bound_ms(ev.final.config.timing_before_bugs()) if ev.interrupts else 0
    for ii in ev.interrupts:
        rec = ev.trace[ii]
        chat_id = rec.get("chat_id")
        done = next((d for d in ev.interruption_done if d > ii and ev.trace[d].get("chat_id") == chat_id), None)
        t0 = rec["t_ms"]
        slow_faults = [f for f in ev.faults if ev.trace[f].get("fault") in _SLOW_FAULTS
                       and t0 - bound_ms <= ev.trace[f]["t_ms"] <= t0 + bound_ms]
        if done is None:
            if ev.end_ms() - t0 > bound_ms and not slow_faults:
                out.append(_v("interrupt_finishes", None, ev.end_ms(),
                              f"the interrupt of chat {chat_id} had not finished {ev.end_ms() - t0} ms later "
                              f"(bound {bound_ms} ms)", (ii,)))
        elif not slow_faults and ev.trace[done]["t_ms"] - t0 > bound_ms:
            took = ev.trace[done]["t_ms"] - t0
            out.append(_v("interrupt_finishes", None, ev.trace[done]["t_ms"],
                          f"the interrupt of chat {chat_id} took {took} ms (bound {bound_ms} ms)", (ii, done)))
    return out


# ---------------------------------------------------------------------------
# Reachability (sometimes)
# ---------------------------------------------------------------------------


def _reached(ev: Evidence, predicate) -> list[Violation]:
    return [] if any(predicate(i, r) for i, r in enumerate(ev.trace)) else [
        Violation("", None, None, ev.end_ms(), "never reached")
    ]


def _completes_after_ownership_change(ev: Evidence):
    moved = [i for i in ev.faults if ev.trace[i].get("fault") in ("ownership_change", "replica_crash")]
    return _reached(ev, lambda i, r: moved and i > moved[0] and r.get("truth") == "result_committed"
                    and r.get("result_kind") in ("completed", "applied"))


def _retry_gets_recorded_start(ev: Evidence):
    return _reached(ev, lambda i, r: r.get("kind") == "note" and r.get("note") == "replayed")


def _cancel_kills_foreground(ev: Evidence):
    return _reached(ev, lambda i, r: r.get("truth") == "process_killed" and r.get("by") == "cancel")


def _cancel_first_refuses_start(ev: Evidence):
    return _reached(ev, lambda i, r: r.get("kind") == "note" and r.get("note") == "refused"
                    and r.get("code") == "tool_call_canceled")


PROPERTIES: tuple[Property, ...] = (
    Property("at_most_once", "always", "US1, A1",
             "Per tool call, at most one process started and at most one edit applied, across every agent incarnation.",
             _at_most_once),
    Property("one_result", "always", "US1, C7",
             "Every tool call of a committed assistant message has at most one committed result.", _one_result),
    Property("truthful_result", "always", "US5",
             "The committed result kind matches what really happened (unknown is always allowed).", _truthful_result),
    Property("retry_changes_nothing", "always", "US4",
             "A task retry or ownership change causes no new side effect: only the first attempt acts.",
             _retry_changes_nothing),
    Property("interrupt_stops_foreground", "always", "US2",
             "An interrupt kills a foreground process below its timeout and reports it canceled.",
             _interrupt_stops_foreground),
    Property("background_survives", "always", "US6",
             "A background process, or a foreground one past its timeout, is never killed by a cancel.",
             _background_survives),
    Property("chat_isolation", "always", "US9, A5",
             "A request carrying one chat's ID never kills another chat's process.", _chat_isolation),
    Property("canceled_before_received_never_runs", "always", "US10",
             "A tool call the agent recorded as canceled before receiving it never runs.", _canceled_before_received),
    Property("fenced_commits", "always", "C7, chatd 2.4",
             "Results are committed only by the chat's owner and by its newest generation attempt.", _fenced_commits),
    Property("one_result_eventually", "eventually", "US1, C7",
             "Once the run has quiesced, every committed tool call has exactly one committed result.",
             _one_result_eventually),
    Property("interrupt_finishes", "eventually", "US7",
             "An interrupt finishes within the dial bound plus the agent answer timeout once the agent is reachable or known unreachable.",
             _interrupt_finishes, needs_quiescence=False),
    Property("completes_after_ownership_change", "sometimes", "US1",
             "A tool call completes after an ownership change or replica crash.", _completes_after_ownership_change),
    Property("retry_gets_recorded_start", "sometimes", "US4",
             "A repeated request gets the recorded answer back.", _retry_gets_recorded_start),
    Property("cancel_kills_foreground", "sometimes", "US2",
             "A cancel kills a foreground process.", _cancel_kills_foreground),
    Property("cancel_first_refuses_start", "sometimes", "US10",
             "A start that arrives after a cancel is refused with tool_call_canceled.", _cancel_first_refuses_start),
)


# ---------------------------------------------------------------------------
# Residual risks (design section 7)
# ---------------------------------------------------------------------------

RESIDUAL_RISKS = {
    "age_check_best_effort": (
        "codagt-757-design.md section 7: the age check is best effort; a request delayed longer than the "
        "2 s margin right after an agent restart can run a second time"
    ),
    "mixed_coderd_versions": (
        "codagt-757-design.md section 7: mixed coderd versions during a rollout; a header-less request from an "
        "old coderd ran while the interrupt reports not run"
    ),
    "unknown_cancel_work_later": (
        "codagt-757-design.md section 7: a cancel the agent cannot answer for sure (a slow agent, or a cancel "
        "landing within the margin right after an agent start) turns into unknown, and the work may still happen "
        "later; US10's never-runs promise comes only with a recorded cancel"
    ),
    "false_unknown_after_agent_start": (
        "codagt-757-design.md section 7: false unknown; a tool call committed shortly before the agent started "
        "gets agent_started_after_tool_call although no earlier agent received it"
    ),
}

# Findings about the contract itself that stand after the fixes: real violations, so a
# scenario expects them under ``violations``, but each is recognised and named like a
# residual risk so a swarm or a search reports it as known instead of as new.
KNOWN_FINDINGS = {
    "run_age_counts_from_record": (
        "scenarios/finding_slow_spawn_timed_out.toml: run age counts from the agent's record, not from the "
        "process start (agent-contract.md 4.3), so with a start handler slower than the margin and a second "
        "start waiting on it, chatd commits timed_out for a command that has not run its timeout"
    ),
}


def is_known_finding(v: Violation) -> bool:
    """A violation classified as a known finding (not a documented residual risk)."""
    return v.residual_risk in KNOWN_FINDINGS




def _agent_boot_before(ev: Evidence, idx: int) -> int | None:
    """Index of the agent start that was current at trace record ``idx``."""
    return next((i for i in range(idx, -1, -1) if ev.trace[i].get("kind") == "agent_up"), None)


def _fooled_by_delay(ev: Evidence, start_idx: int) -> bool | None:
    """Would the real contract (2 s margin) have run the request that caused this side
    effect? True when the agent's uptime on arrival, less the margin, exceeded the age the
    request carried: then only the request's own delay explains the second run (the
    documented residual risk). None when the trace cannot tell."""
    rec = ev.trace[start_idx]
    sent = ev.sends.get(rec.get("cause"))
    if sent is None or "age_ms" not in ev.trace[sent]:
        return None
    boot = _agent_boot_before(ev, start_idx)  # an agent record belongs to the current agent
    if boot is None:
        return None
    uptime_ms = rec["clock_ms"] - ev.trace[boot]["clock_ms"]
    # The contract's margin on this world's clock scale (2 s, or its scaled twin), read from
    # chatd's timing, which planted agent bugs never change.
    margin_ms = ev.final.config.chatd_rules.timing.agent_age_margin_ms
    return uptime_ms - margin_ms > ev.trace[sent]["age_ms"]


def _predates_boot(ev: Evidence, effect_idx: int) -> bool:
    """Whether the tool call behind this side effect was committed before the agent that
    performed it booted (commit time: the request's send time less the age it carried).
    Only an agent restart after the commit makes it so."""
    rec = ev.trace[effect_idx]
    sent = ev.sends.get(rec.get("cause"))
    boot = _agent_boot_before(ev, effect_idx)
    restarted = boot is not None and any(r.get("kind") == "agent_up" for r in ev.trace[:boot])
    if sent is None or not restarted or "age_ms" not in ev.trace[sent]:
        return False
    return ev.trace[sent]["t_ms"] - ev.trace[sent]["age_ms"] <= ev.trace[boot]["t_ms"]


# The unknown reasons of an interrupt's result that say the cancel got no sure answer
# (model/chattool.py UNKNOWN_REASONS): no answer in time (a slow agent), no agent at all,
# an answer that could not be read, a cancel refused as younger than the agent
# (agent_started_after_tool_call: a cancel within the margin right after an agent start),
# or a recorded start whose process did not exist yet (a handler still pending). Any
# other unknown (or a reason-less one) is not this residual risk.
CANCEL_UNSURE_REASONS = ("no_answer", "unreachable", "unreadable", "agent_restarted", "no_process")

_EFFECT_TRUTHS = ("process_started", "edit_applied")


def _incarnation(ev: Evidence, idx: int):
    """The agent incarnation that performed the side effect at ``idx``: the record's own
    field, else the incarnation of the agent start current at that record."""
    rec = ev.trace[idx]
    if rec.get("incarnation") is not None:
        return rec["incarnation"]
    boot = _agent_boot_before(ev, idx)
    return ev.trace[boot].get("incarnation") if boot is not None else None


def _effects_in(v: Violation, ev: Evidence) -> list[int]:
    """The side effects (a process start, an edit or a write) among a violation's evidence."""
    return [i for i in v.evidence if ev.trace[i].get("kind") == "truth" and ev.trace[i].get("truth") in _EFFECT_TRUTHS]


def _call_effects(ev: Evidence, uuid: str) -> list[int]:
    call = next((c for c in ev.calls if c.uuid == uuid), None)
    return (ev.starts if call is not None and call.tool == "execute" else ev.edits).get(uuid, [])


def _is_duplicate_across_restart(v: Violation, ev: Evidence) -> bool:
    """age_check_best_effort, repeated side effect: each agent incarnation performed the
    call's effect at most once, and every effect after the first was caused by a request
    that only its own delay let through the 2 s margin (``_fooled_by_delay``). The same
    for a process start, an edit and a write (all carry their incarnation)."""
    effects = _effects_in(v, ev)
    if len(effects) < 2:
        return False
    incarnations = [_incarnation(ev, i) for i in effects]
    if None in incarnations or len(set(incarnations)) != len(incarnations):
        return False  # two effects in one agent lifetime: the margin plays no part
    return all(_fooled_by_delay(ev, i) for i in effects[1:])


def _is_delayed_cancel_after_restart(v: Violation, ev: Evidence) -> bool:
    """age_check_best_effort, carried by a cancel: the cancel travelled so long that an
    agent restarted after the call ran took the call for one it never received."""
    if not v.uuid:
        return False
    marks = ev.never_received.get(v.uuid) or []
    if not marks or not _fooled_by_delay(ev, marks[0]):
        return False
    return any(i < marks[0] and _agent_boot_before(ev, i) != _agent_boot_before(ev, marks[0])
               for i in _call_effects(ev, v.uuid))


def _is_delayed_effect_after_restart(v: Violation, ev: Evidence) -> bool:
    """age_check_best_effort, carried by the effect's own request: a start, edit or write
    that travelled past the margin reached an agent that booted after the call was
    committed (and so lost the cancel's mark): the agent took it for a younger call."""
    effects = _effects_in(v, ev)
    return bool(effects) and all(_predates_boot(ev, i) and _fooled_by_delay(ev, i) for i in effects)


def _is_unknown_cancel(v: Violation, ev: Evidence) -> bool:
    """unknown_cancel_work_later: the call's first mark is the interrupt's committed
    ``unknown`` result with a reason that says the cancel got no sure answer
    (``CANCEL_UNSURE_REASONS``), the agent never recorded a cancel before the late side
    effect (US10's promise needs one), and the late effect is in the evidence."""
    if not v.evidence or not v.uuid:
        return False
    first = ev.trace[v.evidence[0]]
    if not (first.get("truth") == "result_committed" and first.get("task") == "interrupt"
            and first.get("result_kind") == "unknown" and first.get("reason") in CANCEL_UNSURE_REASONS):
        return False
    late = _effects_in(v, ev)
    return bool(late) and not any(m < late[0] for m in ev.never_received.get(v.uuid) or [])


def _is_header_less_old_coderd(v: Violation, ev: Evidence) -> bool:
    """mixed_coderd_versions: a new coderd's cancel found no record because an old
    coderd's request carried no tool call headers, and that request is what ran."""
    effects = [ev.trace[i] for i in _effects_in(v, ev)]
    return bool(effects) and bool(v.uuid) and bool(ev.never_received.get(v.uuid)) \
        and all(r.get("cause_headers") is False for r in effects)


def _is_run_age_from_record(v: Violation, ev: Evidence) -> bool:
    """run_age_counts_from_record (a known finding): chatd committed ``timed_out`` for a
    foreground command whose process had not reached its timeout, but whose agent record
    had: the record was created (``run_pending``) by the start request whose slow handler
    then started the process, and run age counts from the record (agent-contract.md 4.3,
    model/agent.py Rule 3). An interrupt sees the same thing (US2's checker): the stop rule
    spares the process because its record is past the timeout, and the interrupt commits
    ``timed_out`` for a command that only just spawned. Proven by the timed_out commit, the process start, and the
    ``run_pending`` note of the same request: record age at the commit >= the timeout."""
    if not v.uuid or not v.evidence:
        return False
    ri = v.evidence[-1]
    rec = ev.trace[ri]
    if rec.get("truth") != "result_committed" or rec.get("result_kind") != "timed_out":
        return False
    call = next((c for c in ev.calls if c.uuid == v.uuid), None)
    starts = [i for i in ev.starts.get(v.uuid, []) if i < ri]
    if call is None or call.background or not starts:
        return False
    now_ms = _agent_clock_at(ev, ri)
    for si in starts:
        cause = ev.trace[si].get("cause")
        pending = next((i for i in range(si - 1, -1, -1)
                        if ev.trace[i].get("note") == "run_pending" and ev.trace[i].get("cause") == cause
                        and ev.trace[i].get("uuid") == v.uuid), None)
        if pending is not None and now_ms - ev.trace[pending]["clock_ms"] >= call.timeout_ms:
            return True
    return False


# Rule 4, as a table: (class, properties it may explain, recognizer), tried in order. A
# class is a documented residual risk (``RESIDUAL_RISKS``) or a known finding
# (``KNOWN_FINDINGS``); each recognizer reads only the records that prove it.
CLASSIFIERS: tuple[tuple[str, tuple[str, ...], Callable[[Violation, Evidence], bool]], ...] = (
    ("age_check_best_effort", ("at_most_once", "retry_changes_nothing"), _is_duplicate_across_restart),
    ("age_check_best_effort", ("truthful_result", "canceled_before_received_never_runs"),
     _is_delayed_cancel_after_restart),
    ("age_check_best_effort", ("truthful_result", "canceled_before_received_never_runs",
                               "interrupt_stops_foreground"), _is_delayed_effect_after_restart),
    ("unknown_cancel_work_later", ("canceled_before_received_never_runs",), _is_unknown_cancel),
    ("mixed_coderd_versions", ("truthful_result", "canceled_before_received_never_runs",
                               "interrupt_stops_foreground"), _is_header_less_old_coderd),
    ("run_age_counts_from_record", ("truthful_result", "interrupt_stops_foreground"), _is_run_age_from_record),
)


def classify(v: Violation, ev: Evidence) -> Violation:
    """Rule 4: name the documented residual risk or known finding a violation matches,
    if any (the first recognizer of ``CLASSIFIERS`` that accepts it)."""
    for name, properties, recognizes in CLASSIFIERS:
        if v.property in properties and recognizes(v, ev):
            return replace(v, residual_risk=name)
    return v


def informational(ev: Evidence) -> list[Violation]:
    """Findings that are not violations but that the design names as residual risks: a
    false unknown after an agent start."""
    out = []
    for call in ev.calls:
        effects = ev.starts[call.uuid] if call.tool == "execute" else ev.edits[call.uuid]
        for ri in ev.results[call.uuid]:
            rec = ev.trace[ri]
            if rec.get("result_kind") == "unknown" and rec.get("reason") == "agent_restarted" and not effects:
                out.append(replace(_v("truthful_result", call, rec["t_ms"],
                                      f"{call.provider_id}: unknown (agent restarted) although nothing ever ran", (ri,)),
                                   residual_risk="false_unknown_after_agent_start"))
    return out


# ---------------------------------------------------------------------------
# Entry points
# ---------------------------------------------------------------------------


def quiesced(final) -> bool:
    """The run has settled: no chat is still runnable (running, interrupting,
    requires_action), so every tool call that will get a result has one."""
    from .chatd_db import RUNNABLE

    return all(chat.status not in RUNNABLE for chat in final.db.chats.values())


@dataclass
class Report:
    violations: list  # new findings and residual risks, classified
    unreached: list  # names of sometimes-properties never reached
    informational: list
    unknown_results: int
    results: int
    quiesced: bool

    @property
    def new_findings(self) -> list:
        return [v for v in self.violations if v.residual_risk is None]


def evaluate(trace: list[dict], final, kinds: tuple[str, ...] = ("always", "eventually", "sometimes")) -> Report:
    ev = Evidence(trace, final)
    settled = quiesced(final)
    violations: list[Violation] = []
    unreached: list[str] = []
    for prop in PROPERTIES:
        if prop.kind not in kinds:
            continue
        if prop.kind == "eventually" and prop.needs_quiescence and not settled:
            continue
        found = prop.check(ev)
        if prop.kind == "sometimes":
            if found:
                unreached.append(prop.name)
            continue
        violations.extend(classify(v, ev) for v in found)
    results = [ev.trace[i] for idx in ev.results.values() for i in idx]
    unknown = sum(1 for r in results if r.get("result_kind") == "unknown")
    return Report(violations, unreached, informational(ev), unknown, len(results), settled)
