"""Classification (rule 4 of ``toolcall_sim.model.properties``): which documented residual risk or
known finding a violation is, if any, as a table of recognizers.

Theory of operation
-------------------
``CLASSIFIERS`` is a table of (class, properties it may explain, recognizer), tried in
order; ``classify`` takes the first row whose property list holds the violation's
property and whose recognizer accepts it, and no row means a new finding. Each
recognizer reads only the records proving its class (an effect's incarnation, the age its
request carried, the interrupt result's unknown reason, the agent's pending-run record, the
edit that discarded a call and when its stale request was sent), for every tool kind. The classes and their texts are ``toolcall_sim.model.properties.risks``.
``informational`` reports the one residual risk that is no violation at all (a false
unknown after an agent start).
"""

from __future__ import annotations

from bisect import bisect_right
from dataclasses import replace
from typing import Callable

from .. import chattool
from .checks import reached_gone_incarnation
from .evidence import Evidence, Violation, agent_clock_at, call_of, violation


def _agent_boot_before(ev: Evidence, idx: int) -> int | None:
    """Index of the agent start that was current at trace record ``idx``: the last one of
    ``Evidence.agent_ups`` at or before it."""
    at = bisect_right(ev.agent_ups, idx)
    return ev.agent_ups[at - 1] if at else None


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
    restarted = boot is not None and ev.agent_ups[0] < boot  # an agent start before that one
    if sent is None or not restarted or "age_ms" not in ev.trace[sent]:
        return False
    return ev.trace[sent]["t_ms"] - ev.trace[sent]["age_ms"] <= ev.trace[boot]["t_ms"]


# The unknown reasons of an interrupt's result that say the cancel got no sure answer
# (model/chattool/ UNKNOWN_REASONS): no answer in time (a slow agent), no agent at all,
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
    call = call_of(ev, uuid)
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
    (``CANCEL_UNSURE_REASONS``), the agent never recorded a cancel before any of the late
    side effects (US10's promise needs one: a run after a recorded cancel breaks the
    promise itself, which this risk does not explain), and a late effect is in the
    evidence."""
    if not v.evidence or not v.uuid:
        return False
    first = ev.trace[v.evidence[0]]
    if not (first.get("truth") == "result_committed" and first.get("task") == "interrupt"
            and first.get("result_kind") == "unknown" and first.get("reason") in CANCEL_UNSURE_REASONS):
        return False
    late = _effects_in(v, ev)
    return bool(late) and not any(m < i for m in ev.never_received.get(v.uuid) or [] for i in late)


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
    then started the process, and run age counts from the record (docs/contract.md A4.3,
    model/agent/ rule 3). An interrupt sees the same thing (US2's checker): the stop rule
    spares the process because its record is past the timeout, and the interrupt commits
    ``timed_out`` for a command that only just spawned. Proven by the timed_out commit, the process start, and the
    ``run_pending`` note of the same request: record age at the commit >= the timeout."""
    if not v.uuid or not v.evidence:
        return False
    ri = v.evidence[-1]
    rec = ev.trace[ri]
    if rec.get("truth") != "result_committed" or rec.get("result_kind") != "timed_out":
        return False
    call = call_of(ev, v.uuid)
    starts = [i for i in ev.starts.get(v.uuid, []) if i < ri]
    if call is None or call.background or not starts:
        return False
    now_ms = agent_clock_at(ev, ri)
    for si in starts:
        cause = ev.trace[si].get("cause")
        pending = next((i for i in range(si - 1, -1, -1)
                        if ev.trace[i].get("note") == "run_pending" and ev.trace[i].get("cause") == cause
                        and ev.trace[i].get("uuid") == v.uuid), None)
        if pending is not None and now_ms - ev.trace[pending]["clock_ms"] >= call.timeout_ms:
            return True
    return False


def _is_read_failure_after_restart(v: Violation, ev: Evidence) -> bool:
    """read_failure_after_restart_is_failed (a known finding): chatd committed ``failed``
    with exit code -1 for a foreground command whose process an agent restart killed
    while chatd waited for its output. Go's waitForProcess takes a failed blocking read
    and a failed snapshot before the deadline for "get process output: ...; use
    process_output with ID ... to retry" (coderd/x/chatd/chattool/execute.go), never for
    an unknown outcome. Proven by the failed commit and the shutdown kill before it."""
    if not v.uuid or not v.evidence:
        return False
    rec = ev.trace[v.evidence[-1]]
    if rec.get("truth") != "result_committed" or rec.get("result_kind") != "failed" or rec.get("exit_code") != -1:
        return False
    return any(ev.trace[i].get("by") == "shutdown" for i in v.evidence[:-1])


def _is_kill_failed(v: Violation, ev: Evidence) -> bool:
    """kill_failed_reported_interrupted (a known finding): the interrupt's cancel reached
    the agent, whose kill of the process group failed (the stopper error, 500, docs/contract.md
    A3 and A4.2), and the command ran on. Proven by the agent's ``stop_failed`` note for
    the process between its start and the interrupt's result."""
    if not v.uuid or len(v.evidence) < 2:
        return False
    start, result = v.evidence[0], v.evidence[-1]
    pid = ev.trace[start].get("pid")
    trace = ev.trace
    return any(start < i < result and trace[i].get("note") == "stop_failed" and trace[i].get("pid") == pid
               for i in ev.marks)


def _next_message_reached_agent(ev: Evidence, call, before_idx: int) -> bool:
    """Whether, before trace record ``before_idx``, the agent had a request for a call of a
    later message of ``call``'s chat: an agent record naming such a call's UUID (its
    pending run, a refusal, a replay, a side effect), or a side effect attributed to such a
    call (under ``today`` the agent knows no UUIDs: rule 3 of the properties). From then
    on the contract's agent answers ``call``'s requests ``stale_tool_call`` (its latest
    message ID for the chat is higher, docs/contract.md A2.2)."""
    later = {c.uuid for c in ev.calls if c.chat_id == call.chat_id and c.message_id > call.message_id}
    if not later:
        return False
    trace = ev.trace
    for i in ev.marks:  # the notes and truths, in trace order
        if i >= before_idx:
            break
        rec = trace[i]
        if rec.get("node") == "agent" and rec.get("uuid") in later:
            return True
    return any(i < before_idx for u in later for i in ev.starts[u] + ev.edits[u])


def _is_stale_request_after_edit(v: Violation, ev: Evidence) -> bool:
    """stale_request_after_edit (design section 7, Q4): a message edit discarded the
    call's branch with no cancel, and a request for it that chatd sent BEFORE the edit
    (still in flight, or still being handled) acted after it, having arrived before the
    chat's next message reached the agent. Proven by the edit's ``message_edited`` note being the
    violation's first mark (not an interrupt's result or a cancel's mark), each late side
    effect's cause being a chatd send before that note, and no request of a later message
    of the chat having reached the agent before that cause arrived. A request sent after the edit
    (a chatd that still runs the discarded call) or a stale one that acted after the
    chat's next message reached the agent (the contract refuses it ``stale_tool_call``;
    only today's agent lets it act) is not this risk."""
    edit = ev.discarded.get(v.uuid) if v.uuid else None
    if edit is None or not v.evidence or v.evidence[0] != edit:
        return False
    call = call_of(ev, v.uuid)
    late = _effects_in(v, ev)
    if call is None or not late:
        return False
    for i in late:
        cause = ev.trace[i].get("cause")
        sent = ev.sends.get(cause)
        if sent is None or sent > edit or ev.trace[sent].get("node") == "probe":
            return False
        # "if it ARRIVES before the chat's next message": the agent admits a request when
        # it arrives (its record), so a slow handler acting later is still this risk.
        if _next_message_reached_agent(ev, call, ev.received.get(cause, i)):
            return False
    return True


def _is_false_unknown_after_start(v: Violation, ev: Evidence) -> bool:
    """false_unknown_after_agent_start: the unknown is the agent's
    ``agent_started_after_tool_call`` (reason ``agent_restarted``) for a call no gone
    incarnation can have received: the agent started after the call was committed, or a
    request landed within the margin right after it started (design section 7)."""
    return bool(v.evidence) and ev.trace[v.evidence[-1]].get("reason") == "agent_restarted"


def _is_duplicate_without_cancel(v: Violation, ev: Evidence) -> bool:
    """duplicate_ids_without_cancel: the call's UUID is shared by calls of its message
    (one provider ID) that would not all get the same cancel, so the interrupt sends none
    for any of them (chattool's ``select_cancels``, Go's ``interruptedToolCalls``) and
    each keeps the generic result while its process, or a start still on its way, goes
    on. Proven by the committed message itself: its copies of the provider ID and the
    contract's own selection over them, with the world's timing."""
    call = call_of(ev, v.uuid) if v.uuid else None
    if call is None or call.uuid not in ev.copied:
        return False
    chat = ev.final.db.chats.get(call.chat_id)
    msg = next((m for m in chat.messages if m.id == call.message_id), None) if chat is not None else None
    if msg is None:
        return False
    copies = [tc for tc in msg.tool_calls if tc.provider_id == call.provider_id]
    return not chattool.select_cancels(copies, ev.final.config.chatd_rules.timing)


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
    ("stale_request_after_edit", ("canceled_before_received_never_runs",), _is_stale_request_after_edit),
    ("mixed_coderd_versions", ("truthful_result", "canceled_before_received_never_runs",
                               "interrupt_stops_foreground"), _is_header_less_old_coderd),
    ("run_age_counts_from_record", ("truthful_result", "interrupt_stops_foreground"), _is_run_age_from_record),
    ("read_failure_after_restart_is_failed", ("truthful_result",), _is_read_failure_after_restart),
    ("kill_failed_reported_interrupted", ("interrupt_stops_foreground",), _is_kill_failed),
    ("false_unknown_after_agent_start", ("unknown_only_when_unknowable",), _is_false_unknown_after_start),
    ("duplicate_ids_without_cancel", ("interrupt_stops_foreground", "canceled_before_received_never_runs"),
     _is_duplicate_without_cancel),
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
    false unknown after an agent start, where an earlier request may have reached a gone
    agent (so ``unknown_only_when_unknowable`` allows it) and yet nothing ever ran. The
    false unknowns that property reports (no such request) are its classified
    violations, not repeated here."""
    out = []
    trace = ev.trace
    for call in ev.calls:
        for ri in ev.results_of(call):
            rec = trace[ri]
            if rec.get("result_kind") == "unknown" and rec.get("reason") == "agent_restarted" \
                    and not (ev.starts if call.tool == "execute" else ev.edits)[call.uuid] \
                    and reached_gone_incarnation(ev, call, ri):
                out.append(replace(violation("truthful_result", call, rec["t_ms"],
                                      f"{call.provider_id}: unknown (agent restarted) although nothing ever ran", (ri,)),
                                   residual_risk="false_unknown_after_agent_start"))
    return out
