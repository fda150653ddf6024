"""The properties: pure functions of the indexed trace (``Evidence``) that say whether
the contract held, each returning the ``Violation``s that prove it did not.

Theory of operation
-------------------
``PROPERTIES`` is the table every driver evaluates (``toolcall_sim.model.properties.evaluate``): each
row names a property, its kind (``always``, ``eventually``, ``sometimes``: rule 1 of
``toolcall_sim.model.properties``), the user story it comes from, a one-line statement and its check.
A check reads result kinds, exit codes and process IDs, never result texts (rule 2), and
returns violations; a ``sometimes`` check returns one when the path was never reached.
Whether a violation is new or a documented residual risk is not decided here
(``toolcall_sim.model.properties.classify``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache
from typing import Callable

from .evidence import CallInfo, Evidence, Violation, agent_clock_at, call_of, violation

@dataclass(frozen=True)
class Property:
    """One row of ``PROPERTIES``: a named check with its kind (rule 1 of
    ``toolcall_sim.model.properties``) and the user story it states."""

    name: str
    kind: str  # always | eventually | sometimes
    story: str
    statement: str
    check: Callable[["Evidence"], list] = field(compare=False)
    needs_quiescence: bool = True  # eventually-properties with their own time bound say False
    # The records its check depends on, as ``evidence.record_tags`` names them, for a
    # check that reads nothing else: the index entries those records make, the records
    # before one of them, never the trace's end. A record with none of these tags then
    # leaves its violations as they were, which is what the explorer's monitors
    # (model/properties/monitor.py) rely on; tests/test_monitor.py checks each
    # declaration against what the check really reads. None: it reads the whole trace
    # (its end, say) and is checked anew every time.
    reads: frozenset | None = None
    # Of ``reads``, the records whose arrival can change its violations, when that is
    # fewer: a check that finds each violation at one record from the records before it
    # (fenced_commits at a commit, unknown_only_when_unknowable at an unknown result
    # from the agent restarts before it) is changed only by a new such record, and by
    # the records its text counts (the side effects); a mark that only a later side
    # effect can violate (canceled_before_received_never_runs: a cancel's mark or an
    # interrupt's result, the earliest of which counts) only by that effect. None:
    # every record it reads.
    changed_by: frozenset | None = None


def _truths(*names: str) -> frozenset:
    """``Property.reads`` for ``truth`` records of these kinds."""
    return frozenset(("truth", name) for name in names)


_EFFECTS = _truths("process_started", "edit_applied")
_PROCESS_LIFE = _truths("process_started", "process_exited", "process_killed")
_RESULTS = _truths("result_committed")


# ---------------------------------------------------------------------------
# Safety
# ---------------------------------------------------------------------------


def _most_changed_file(ev: Evidence, idx: list[int]) -> list[int]:
    """Of a call's applied edits, those of the file it changed most often (the first such
    file): an edit_files call changes each of its files once when it is applied once, and
    the agent records one ``edit_applied`` per file (model/agent/files.py)."""
    by_path: dict = {}
    for i in idx:
        by_path.setdefault(ev.trace[i].get("path"), []).append(i)
    return max(by_path.values(), key=len, default=idx)


def _at_most_once(ev: Evidence) -> list[Violation]:
    """US1: one process, or one applied edit, per tool call UUID; an edit of several files
    is applied once when each of its files was changed once. Calls of one message that
    share a provider ID share the UUID: they are one tool call here, as the agent's record
    store makes them (docs/contract.md C1.3)."""
    out = []
    for call in ev.firsts:
        edits = _most_changed_file(ev, ev.edits[call.uuid])
        for what, idx in (("process starts", ev.starts[call.uuid]), ("edits applied", edits)):
            if len(idx) > 1:
                out.append(violation("at_most_once", call, ev.trace[idx[1]]["t_ms"],
                              f"{len(idx)} {what} for {call.provider_id}", idx))
    return out


def _one_result(ev: Evidence) -> list[Violation]:
    """Each call of a message has one committed result; copies sharing a provider ID have
    one each (Go commits a result per call: docs/contract.md C1.3 step 5, C3.2 step 4)."""
    out = []
    for call in ev.calls:
        idx = ev.results_of(call)
        if len(idx) > 1:
            kinds = ", ".join(str(ev.trace[i].get("result_kind")) for i in idx)
            out.append(violation("one_result", call, ev.trace[idx[1]]["t_ms"],
                          f"{len(idx)} committed results for {call.provider_id} ({kinds})", idx))
    return out


def _truthful_result(ev: Evidence) -> list[Violation]:
    """The committed kind matches what really happened (US5)."""
    out = []
    for call in ev.calls:
        effects = ev.starts[call.uuid] if call.tool == "execute" else ev.edits[call.uuid]
        for ri in ev.results_of(call):
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
                        age_ms = agent_clock_at(ev, ri) - started_ms
                        ok = ok or age_ms >= call.timeout_ms
                    else:
                        ok = ok or (lived_ms - started_ms) >= call.timeout_ms
                if not ok:
                    bad = f"timed_out but no process of it was running at its {call.timeout_ms} ms deadline", before
            elif kind == "failed" and call.tool == "execute" and rec.get("exit_code") == -1:
                # A failed execute result with no exit code of the process claims the
                # command failed; a process that an agent shutdown or restart killed, and
                # that never exited on its own, did not fail: its outcome is unknown
                # (issue 34). Start errors run no process and are not judged here.
                killed = [i for i in ev.kills[call.uuid] if i < ri and ev.trace[i].get("by") == "shutdown"]
                exited = [i for i in ev.exits[call.uuid] if i < ri]
                if killed and not exited:
                    bad = "failed but its process was killed by an agent restart, not failed: the outcome is unknown", \
                        killed
            elif kind == "failed" and call.tool != "execute" and before and ev.disk_at(ri):
                # A failed file result says the change did not happen; an edit of this
                # call that was applied and is still on the workspace's disk makes it a
                # lie (US3; issue 34: a retry that meets a stopped workspace, whose disk
                # keeps an earlier attempt's change, docs/contract.md C5.4 and C5.6). A
                # deleted workspace, or none, keeps no change: its plain error is true.
                bad = f"failed but {len(before)} edit(s) of it were applied and the workspace keeps its disk", before
            elif kind == "applied" and not [i for i in ev.edits[call.uuid] if i < ri]:
                bad = "applied but no edit was applied", ()
            elif kind == "background_started" and not before:
                bad = "background_started but no process was started", ()
            if bad is not None:
                detail, evidence = bad
                out.append(violation("truthful_result", call, t, f"{call.provider_id}: {detail}", tuple(evidence) + (ri,)))
    return out




def _retry_changes_nothing(ev: Evidence) -> list[Violation]:
    """A side effect is caused only by the first task attempt that caused one for its
    call (US4): a retry or a new owner gets the recorded answer instead."""
    out = []
    for call in ev.firsts:
        for idx in (ev.starts[call.uuid], ev.edits[call.uuid]):
            if len(idx) < 2:
                continue
            first = ev.attempt_of(ev.trace[idx[0]].get("cause"))
            later = [i for i in idx[1:] if ev.attempt_of(ev.trace[i].get("cause")) != first]
            if later:
                causes = {ev.attempt_of(ev.trace[i].get("cause")) for i in later}
                again = ev.attempt_of(ev.trace[later[0]].get("cause"))
                more = f" and {len(causes) - 1} more attempt(s)" if len(causes) > 1 else ""
                out.append(violation("retry_changes_nothing", call, ev.trace[later[0]]["t_ms"],
                              f"{call.provider_id}: side effect again from {again}{more} after {first}",
                              (idx[0], *later)))
    return out


def _interrupt_results(ev: Evidence, call: CallInfo) -> list[int]:
    return [i for i in ev.results_of(call) if ev.trace[i].get("task") == "interrupt"]


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
                age_ms = agent_clock_at(ev, ri) - ev.trace[si]["clock_ms"]
                if age_ms < call.timeout_ms:
                    out.append(violation("interrupt_stops_foreground", call, rec["t_ms"],
                                  f"{call.provider_id}: interrupt committed {rec.get('result_kind')} and left its "
                                  f"process running at run age {age_ms} ms (< {call.timeout_ms} ms)", (si, ri)))
    return out


def _background_survives(ev: Evidence) -> list[Violation]:
    """US6: a background process, or a foreground one past its timeout, is never killed
    by a cancel. Judged per UUID, by its first call: chatd cancels the copies sharing one
    only when every copy gets the same cancel (model/chattool/interrupt.py)."""
    out = []
    for call in ev.firsts:
        if call.tool != "execute":
            continue
        for ki in ev.kills[call.uuid]:
            rec = ev.trace[ki]
            if rec.get("by") != "cancel":
                continue
            si = ev.pid_start.get(f"{rec.get('incarnation')}/{rec.get('pid')}")
            age_ms = ev.agent_age_ms(si, ki) if si is not None else 0
            if call.background:
                out.append(violation("background_survives", call, rec["t_ms"],
                              f"{call.provider_id}: a cancel killed a background process", (ki,)))
            elif age_ms >= call.timeout_ms:
                out.append(violation("background_survives", call, rec["t_ms"],
                              f"{call.provider_id}: a cancel killed a process past its {call.timeout_ms} ms timeout "
                              f"(run age {age_ms} ms)", (ki,)))
    return out


def _chat_isolation(ev: Evidence) -> list[Violation]:
    """US9: a request carrying one chat's ID never kills or reuses another chat's process."""
    out = []
    for i in ev.marks_by.get(("truth", "process_killed"), ()):  # the kills, in trace order
        rec = ev.trace[i]
        if rec.get("kind") != "truth" or rec.get("by") == "shutdown":
            continue
        si = ev.pid_start.get(f"{rec.get('incarnation')}/{rec.get('pid')}")
        if si is None or rec.get("cause_chat") is None:
            continue
        owner_chat = ev.trace[si].get("chat_id")
        if owner_chat != rec.get("cause_chat"):
            call = call_of(ev, ev.pid_owner.get(f"{rec.get('incarnation')}/{rec.get('pid')}"))
            out.append(violation("chat_isolation", call, rec["t_ms"],
                          f"chat {rec.get('cause_chat')} killed a process of chat {owner_chat}", (si, i)))
    return out


def _canceled_before_received(ev: Evidence) -> list[Violation]:
    """US10: once a cancel answered that the agent never received a call, or an interrupt
    committed the call's result, no request for that call that reaches the agent after it
    runs (in any agent lifetime). A request that arrived before and whose handler applied
    it after is not one: the design's proof is about arrival. A message edit that
    discarded the call's branch resolved it too, without a cancel (design section 7: "a
    tool call resolved without a cancel"): a side effect of a request arriving after the
    edit is a violation, which the stale request the design accepts
    (``stale_request_after_edit``, model/properties/classify.py) explains when it was sent
    before the edit and arrived before the chat's next message. Judged per UUID: copies
    sharing one are resolved by one commit, the first copy's result first; their effects
    are the UUID's starts and edits both (copies of different tools)."""
    out = []
    for call in ev.firsts:
        marks = ev.never_received[call.uuid] + _interrupt_results(ev, call)
        edit = ev.discarded.get(call.uuid)
        if edit is not None:
            marks = marks + [edit]
        if not marks:
            continue
        first = min(marks)
        why = "a cancel recorded it as never received" if first in ev.never_received[call.uuid] else \
            "a message edit discarded its branch" if first == edit else "the interrupt committed its result"
        if call.uuid in ev.copied:
            effects = sorted(ev.starts[call.uuid] + ev.edits[call.uuid])
        else:
            effects = ev.starts[call.uuid] if call.tool == "execute" else ev.edits[call.uuid]
        # Judged by the request's arrival at the agent, not by the effect: an edit that
        # arrived before the interrupt and was applied after it was received first.
        received = ev.received
        late = [i for i in effects if received.get(ev.trace[i].get("cause"), i) > first]
        if late:
            arrived = received.get(ev.trace[late[0]].get("cause"), late[0])
            out.append(violation("canceled_before_received_never_runs", call, ev.trace[late[0]]["t_ms"],
                          f"{call.provider_id} ran after {why}",
                          (first, arrived, *late) if arrived != late[0] else (first, *late)))
    return out


# Unknown reasons that say chatd could not learn the outcome from the agent: no answer,
# no agent, an unreadable answer, an output that could not be read past the deadline
# (model/chattool/ UNKNOWN_REASONS), or a recorded start whose process the agent did not
# report (``no_process``: the agent itself says a request for the call reached it).
UNREACHABLE_REASONS = ("unreachable", "no_answer", "unreadable", "not_received", "no_process")
# The requests that can make a tool call act, whose sending the explorer keeps on paths.
_ACTING_ROUTES = ("start", "edit", "write", "cancel")


def reached_gone_incarnation(ev: Evidence, call: CallInfo, before_idx: int) -> bool:
    """Whether a request for ``call`` that could act (start, edit, write, cancel) was sent
    before an agent went down, both before trace record ``before_idx``: that request may
    have reached an incarnation that is gone. Sends name the provider tool call ID, not
    the chat, so a same-named call of another chat also counts (the check errs towards
    allowing an unknown, never towards a false alarm)."""
    downs = [d for d in ev.agent_downs if d < before_idx]
    if not downs:
        return False
    last_down = downs[-1]
    trace = ev.trace
    provider_id = call.provider_id
    for i in range(last_down):
        rec = trace[i]
        if rec.get("kind") == "send" and rec.get("route") in _ACTING_ROUTES and rec.get("tool_call") == provider_id:
            return True
    return False


def _unknown_only_when_unknowable(ev: Evidence) -> list[Violation]:
    """Issue 16 item 4 (US5's other half): an ``unknown`` result is committed only when
    chatd could not learn the outcome: the agent was unreachable or did not answer
    (``UNREACHABLE_REASONS``), or a request for the call may have reached an agent
    incarnation that is gone (``reached_gone_incarnation``). An agent that answered
    "no such call" for a call that no gone incarnation can have received makes it an
    unknown chatd could have known. The contract's documented false unknown (a restart
    between the commit and the first request) is such a case, classified as its
    residual risk (model/properties/classify.py)."""
    out = []
    for call in ev.calls:
        for ri in ev.results_of(call):
            rec = ev.trace[ri]
            if rec.get("result_kind") != "unknown" or rec.get("reason") in UNREACHABLE_REASONS:
                continue
            if reached_gone_incarnation(ev, call, ri):
                continue
            effects = ev.starts[call.uuid] if call.tool == "execute" else ev.edits[call.uuid]
            ran = f"it ran {len(effects)} time(s)" if effects else "it never ran"
            out.append(violation("unknown_only_when_unknowable", call, rec["t_ms"],
                                 f"{call.provider_id}: unknown ({rec.get('reason') or 'no reason'}) although no request "
                                 f"for it can have reached a gone agent and the agent answered; {ran}", (ri,)))
    return out


# The marks ``_fenced_commits`` reads: its ``Property.reads``, and what it iterates.
_FENCE_MARKS = (("note", "acquired"), ("note", "task_started"), ("note", "batch_started"),
                ("truth", "result_committed"))


def _marks_of(ev: Evidence, kinds: tuple) -> list[int]:
    """The indexes of the marks of these kinds (``Evidence.marks_by`` keys), in trace order,
    each once (a note with a ``truth`` field is filed under both of its kinds)."""
    out: list[int] = []
    for kind in kinds:
        out += ev.marks_by.get(kind, ())
    return sorted(set(out)) if len(out) > 1 else out


def _fenced_commits(ev: Evidence) -> list[Violation]:
    """No commit from a non-owner or a replaced attempt: every result commit comes from
    the chat's owner at that time, and from the newest generation attempt it began.

    Both halves read records chatd already emits, nothing added for the check: the owner
    from ``acquired`` notes; the attempts from ``batch_started`` notes (each is one
    ``RecordGenerationAttempt`` that went through, with its generation_attempt; its task's
    chat comes from the ``task_started`` note). A generation commit whose own attempt
    began before another batch attempt of the same chat began was made by a replaced
    attempt: with the attempt fence (docs/contract.md C2.4 requireGenerationAttempt) the
    chat row's generation_attempt no longer matches and the commit is refused. A
    generate-assistant attempt emits no such note, but it only begins once no call is
    unresolved, so no batch can be waiting to commit behind it. The explorer keeps
    neither note on its paths (they would split its states), so there only the owner
    half can fire."""
    out = []
    owner: dict[str, str] = {}
    chat_of_task: dict[str, str] = {}
    begun: dict[str, list[tuple[int, str, int]]] = {}  # chat -> (index, replica, generation_attempt)
    trace = ev.trace
    for i in _marks_of(ev, _FENCE_MARKS):  # only these notes and truths are read, in trace order
        rec = trace[i]
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
            if replica and chat_id in owner and owner_replica != replica:
                out.append(violation("fenced_commits", call_of(ev, rec.get("uuid")), rec["t_ms"],
                              f"{replica} committed a result for a chat owned by {owner[chat_id]}", (i,)))
                continue
            if rec.get("task") != "generation":
                continue
            gen = rec.get("generation_attempt", 0)
            begins = begun.get(chat_id, [])
            mine = None  # the newest attempt of this replica and generation attempt
            for b in reversed(begins):
                if b[1] == replica and b[2] == gen:
                    mine = b
                    break
            later = [b for b in begins if b[0] > mine[0]] if mine is not None else []
            if later:
                out.append(violation("fenced_commits", call_of(ev, rec.get("uuid")), rec["t_ms"],
                              f"{replica}'s generation attempt {gen} committed after {later[-1][1]} began "
                              f"attempt {later[-1][2]} of the chat", (mine[0], later[-1][0], i)))
    return out


# ---------------------------------------------------------------------------
# Liveness
# ---------------------------------------------------------------------------


def _one_result_eventually(ev: Evidence) -> list[Violation]:
    """Every committed call has a result once the run has quiesced, except a call a
    message edit discarded: its message is soft-deleted and nothing answers it, by design
    (Q4: canceling on message edit is out of scope; Go's ``Tx.EditMessage`` synthesizes
    results only for open calls that stay in the active history)."""
    return [
        violation("one_result_eventually", c, ev.end_ms(), f"no committed result for {c.provider_id} after the run quiesced")
        for c in ev.calls
        if not ev.results_of(c) and c.uuid not in ev.discarded
    ]


# Faults that strike chatd itself (the explorer's takeover is an ownership change at once).
_SLOW_FAULTS = ("replica_crash", "ownership_change", "takeover", "db_outage")


@lru_cache(maxsize=16)  # a pure function of a frozen Timing; evaluated on every explored state
def interrupt_bound_ms(timing) -> int:
    """The rule's bound on an interrupt task (US7; the design's interrupt paragraph: "each
    cancel waits at most the agent answer timeout, after a dial bounded by chatd's dial
    timeout"): dial timeout + agent answer timeout, on the runner's own clock (90 s on the
    reference clock, 7 small ms on the explorer's). No slack: the task's two timers are
    the whole of its waiting. The checker passes the world's clock before its planted bugs
    (``WorldConfig.timing_before_bugs``): a bound read from the bug's own answer timeout
    would grow with it and never catch it."""
    return timing.dial_timeout_ms + timing.agent_answer_timeout_ms


def _interrupt_task_start(ev: Evidence, after: int, before: int | None, chat_id) -> int | None:
    """The first interrupt task a runner started for ``chat_id`` between two records."""
    for i in ev.marks_by.get(("note", "task_started"), ()):
        if i > after and (before is None or i < before):
            rec = ev.trace[i]
            if rec.get("result_kind") == "interrupt" and rec.get("chat_id") == chat_id:
                return i
    return None


def _interrupt_finishes(ev: Evidence) -> list[Violation]:
    """US7: every interrupt finishes, within the rules' own bounds. Two bounds, each the
    rule's and each on the clock of the replica that keeps it:

    - the interrupt task, from its start to its commit: dial timeout + agent answer
      timeout (``interrupt_bound_ms``);
    - the notice, from the user's request to the task's start: the runner's sync interval
      (a lost ``chat:update`` is made up for by the runner's periodic re-read of its chat),
      or, for a chat no runner held at the request (its ``chat:ownership`` was lost, so the
      replica that starts the task acquires the chat after the request), the worker's
      acquisition poll: the rule that brings an unowned chat to a runner (swarm seed
      60489, issue 34).

    A fault that strikes chatd itself in the window (crash, ownership change, database
    outage) only delays an interrupt, so those interrupts are checked for finishing at all.
    A message edit while the chat is interrupting ends the interruption (chatstate's
    transition matrix: I0/I1 -> R0 on EditMessage; the interrupt task is canceled and
    its commit fenced out): the edit is that interrupt's end.
    """
    out = []
    if not ev.interrupts:
        return out
    timing = ev.final.config.timing_before_bugs()
    task_bound_ms = interrupt_bound_ms(timing)
    sync_bound_ms, acquire_bound_ms = timing.runner_sync_interval_ms, timing.acquisition_interval_ms
    whole_ms = task_bound_ms + max(sync_bound_ms, acquire_bound_ms)
    config = ev.final.config
    for ii in ev.interrupts:
        rec = ev.trace[ii]
        chat_id = rec.get("chat_id")
        ends = ev.interruption_done + ev.edits_of_chat.get(chat_id, [])
        done = min((d for d in ends if d > ii and ev.trace[d].get("chat_id") == chat_id), default=None)
        t0 = rec["t_ms"]
        t_end = ev.trace[done]["t_ms"] if done is not None else ev.end_ms()
        if any(ev.trace[f].get("fault") in _SLOW_FAULTS and t0 - whole_ms <= ev.trace[f]["t_ms"] <= t_end
               for f in ev.faults):
            continue
        start = _interrupt_task_start(ev, ii, done, chat_id)
        if start is None:
            if t_end - t0 > whole_ms:
                what = "finished" if done is not None else "not started"
                out.append(violation("interrupt_finishes", None, t_end,
                                     f"the interrupt of chat {chat_id}: no interrupt task started, {what} "
                                     f"{t_end - t0} ms later (bound {whole_ms} ms)", (ii,)))
            continue
        node, started = ev.trace[start]["node"], ev.trace[start]
        clock = config.clock(node)
        noticed_ms = started["clock_ms"] - clock.read(t0)
        acquired = max((i for i in ev.marks_by.get(("note", "acquired"), ())
                        if i < start and ev.trace[i].get("chat_id") == chat_id and ev.trace[i].get("node") == node),
                       default=None)
        unowned = acquired is not None and acquired > ii  # its runner came after the request
        notice_bound_ms = acquire_bound_ms if unowned else sync_bound_ms
        if noticed_ms > notice_bound_ms:
            rule = "the acquisition poll" if unowned else "the runner's sync interval"
            out.append(violation("interrupt_finishes", None, started["t_ms"],
                                 f"the interrupt of chat {chat_id} was noticed {noticed_ms} ms after the request "
                                 f"on {node}'s clock (bound: {rule}, {notice_bound_ms} ms)",
                                 (ii, start)))
        if done is None:
            took_ms = clock.read(t_end) - started["clock_ms"]
            if took_ms > task_bound_ms:
                out.append(violation("interrupt_finishes", None, t_end,
                                     f"the interrupt task of chat {chat_id} had not finished {took_ms} ms after it "
                                     f"started on {node} (bound: dial + agent answer timeout, {task_bound_ms} ms)",
                                     (ii, start)))
            continue
        finished = ev.trace[done]
        took_ms = (finished["clock_ms"] - started["clock_ms"] if finished.get("node") == node
                   else clock.read(finished["t_ms"]) - started["clock_ms"])
        if took_ms > task_bound_ms:
            out.append(violation("interrupt_finishes", None, finished["t_ms"],
                                 f"the interrupt task of chat {chat_id} took {took_ms} ms on {node}'s clock "
                                 f"(bound: dial + agent answer timeout, {task_bound_ms} ms)", (ii, start, done)))
    return out


# ---------------------------------------------------------------------------
# Reachability (sometimes)
# ---------------------------------------------------------------------------


def _reached_mark(ev: Evidence, predicate, mark: tuple[str, str]) -> list[Violation]:
    """Whether some record satisfies ``predicate``, for a predicate that holds only for
    the marks ``mark`` names (``("note", name)`` or ``("truth", name)``, every property
    below): it asks only those (``Evidence.marks_by``), a few records of a trace."""
    trace = ev.trace
    for i in ev.marks_by.get(mark, ()):
        if predicate(i, trace[i]):
            return []
    return _never_reached(ev)


def _never_reached(ev: Evidence) -> list[Violation]:
    return [Violation("", None, None, ev.end_ms(), "never reached")]


# The faults that move a chat to another runner: a takeover is an ownership change at once
# (model/vocabulary.py: the explorer's, and a scenario's ``takeover``).
_MOVES = ("ownership_change", "takeover", "replica_crash")


def _completes_after_ownership_change(ev: Evidence):
    moved = [i for i in ev.faults if ev.trace[i].get("fault") in _MOVES]
    return _reached_mark(ev, lambda i, r: moved and i > moved[0] and r.get("truth") == "result_committed"
                         and r.get("result_kind") in ("completed", "applied"), ("truth", "result_committed"))


def _retry_gets_recorded_start(ev: Evidence):
    return _reached_mark(ev, lambda i, r: r.get("kind") == "note" and r.get("note") == "replayed", ("note", "replayed"))


def _cancel_kills_foreground(ev: Evidence):
    return _reached_mark(ev, lambda i, r: r.get("truth") == "process_killed" and r.get("by") == "cancel",
                         ("truth", "process_killed"))


def _cancel_first_refuses_start(ev: Evidence):
    return _reached_mark(ev, lambda i, r: r.get("kind") == "note" and r.get("note") == "refused"
                         and r.get("code") == "tool_call_canceled", ("note", "refused"))


PROPERTIES: tuple[Property, ...] = (
    Property("at_most_once", "always", "US1, A1",
             "Per tool call, at most one process started and at most one edit applied, across every agent incarnation.",
             _at_most_once, reads=_EFFECTS),
    Property("one_result", "always", "US1, C7",
             "Every tool call of a committed assistant message has at most one committed result.", _one_result,
             reads=_RESULTS),
    Property("truthful_result", "always", "US5",
             "The committed result kind matches what really happened (unknown is always allowed).", _truthful_result,
             reads=_RESULTS | _EFFECTS | _PROCESS_LIFE | {("kind", "workspace")}),
    Property("retry_changes_nothing", "always", "US4",
             "A task retry or ownership change causes no new side effect: only the first attempt acts.",
             _retry_changes_nothing, reads=_EFFECTS),
    Property("interrupt_stops_foreground", "always", "US2",
             "An interrupt kills a foreground process below its timeout and reports it canceled.",
             _interrupt_stops_foreground, reads=_RESULTS | _PROCESS_LIFE),
    Property("background_survives", "always", "US6",
             "A background process, or a foreground one past its timeout, is never killed by a cancel.",
             _background_survives, reads=_truths("process_started", "process_killed")),
    Property("chat_isolation", "always", "US9, A5",
             "A request carrying one chat's ID never kills another chat's process.", _chat_isolation,
             reads=_truths("process_started", "process_killed")),
    Property("canceled_before_received_never_runs", "always", "US10, section 7",
             "A tool call the agent recorded as canceled before receiving it, or that an interrupt or a message edit "
             "resolved, never runs from a request that arrives afterwards.", _canceled_before_received,
             reads=_RESULTS | _EFFECTS | _truths("request_received")
             | {("note", "cancel_never_received"), ("note", "message_edited")},
             changed_by=_EFFECTS),
    Property("unknown_only_when_unknowable", "always", "US5, issue 16",
             "An unknown result only when the agent was unreachable or a request for the call may have reached a gone agent incarnation.",
             _unknown_only_when_unknowable, reads=_RESULTS | _EFFECTS | {("kind", "agent_down")},
             changed_by=_RESULTS | _EFFECTS),
    Property("fenced_commits", "always", "C7, chatd 2.4",
             "Results are committed only by the chat's owner and by its newest generation attempt.", _fenced_commits,
             reads=frozenset(_FENCE_MARKS), changed_by=_RESULTS),
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
