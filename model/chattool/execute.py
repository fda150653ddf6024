"""The execute tool's steps: start, wait for the process, snapshot.

Theory of operation
-------------------
Rules 3 and 5 of model/chattool/__init__.py (docs/contract.md C4.2 step 4, 4.3, 4.5): a
start request carries the tool call headers and waits at most the agent answer timeout
(design B) or the execute timeout; a background start answers at once. A foreground start
answered with the tool call UUID is a new agent, which is waited for with blocking output
reads until ``timeout - max(run_age, 0)``; any other ID is an old agent, waited for until
the execute timeout from this attempt's start. When the wait ends or a read fails, one
snapshot decides between completed, timed out and unknown "not received"
(``ToolLayer.snapshot_failure_unknown``; before the stack, Go's legacy timed-out text).
"""

from __future__ import annotations

from typing import Any

from .. import identity as ident
from ..core import Effect, Response, json_body, note, probe, replace
from ..gocompat.duration import format_duration_ms
from ..gocompat.encoding import json_type_name
from .args import (
    ArgsError, InvalidTimeout, effective_timeout_ms, parse_execute_args, runs_in_background,
    strip_trailing_ampersand,
)
from .classifier import (
    AgentError, Deadline, Undecodable, _enrich_start_error, _file_dump_note, _start_words,
    agent_error_text, check_process_text, classified, classify, unknown_outcome,
)
from .constants import AGENT_URL, START_PATH
from .results import Result, _background_started, _text_error, execute_result_json
from .state import (
    CallState, CallStep, Phase, _UndecodableError, _arm, _arm_into, _decode, _disarm, _disarm_into, _finish, _headers,
    _send, _send_into,
)


# Rule coverage (model/probes.py): the execute request sequence (C4.2), the deadline
# arithmetic of a new agent's start answer (C4.3) and an old agent's legacy wait (C4.6).
_START_WITH_HEADERS = probe("C4.2.start-with-headers")
_START_WITHOUT_HEADERS = probe("C4.2.start-without-headers")
_BACKGROUND_ANSWERED = probe("C4.2.background-answered")
_BUDGET_LEFT = probe("C4.3.budget-left")
_BUDGET_SPENT = probe("C4.3.budget-spent")
_READ_AGAIN = probe("C4.3.read-again")
_LEGACY_WAIT = probe("C4.6.legacy-wait")


def _begin_execute(cs: CallState, now_ms: int) -> CallStep:
    try:
        args = parse_execute_args(cs.call.args_json)
    except ArgsError as err:
        return _finish(cs, _text_error("failed", str(err)))
    if not args.command:
        return _finish(cs, _text_error("failed", "command is required"))
    background = runs_in_background(args)
    command = args.command
    if not args.run_in_background:
        command = strip_trailing_ampersand(command)[0]
    # The step's edits of the state, copied into it once at the end (state.py's docstring).
    changes: dict[str, Any] = {"background": background, "command": command}
    timeout_ms = cs.timeout_ms
    if not background:
        try:
            timeout_ms = effective_timeout_ms(args, cs.timing)
        except InvalidTimeout as err:
            return _finish(replace(cs, **changes), _text_error("failed", str(err)))
        changes["timeout_ms"] = timeout_ms
        changes["deadline_at_ms"] = now_ms + timeout_ms
        if timeout_ms <= 0:
            # The command context has already expired: Go's client fails the start
            # before sending it, as a transport error.
            err = classify(Deadline("Post", AGENT_URL + START_PATH))
            return classified(_start_failed(replace(cs, **changes), err), err)
    body: dict[str, Any] = {"background": background, "command": command}
    if args.workdir:
        body["workdir"] = args.workdir
    # (``_headers`` reads the chat, identity and send flag, which this step leaves as they were)
    effects: list[Effect] = [_send_into(changes, cs, "start", "POST", START_PATH, "", _headers(cs, now_ms, True),
                                        json_body(body)),
                             _START_WITH_HEADERS if cs.identity is not None and cs.send_identity
                             else _START_WITHOUT_HEADERS]
    if cs.layer.agent_answer_timeout and (background or timeout_ms > cs.timing.agent_answer_timeout_ms):
        _arm_into(changes, cs, "answer_timer", cs.timing.agent_answer_timeout_ms, effects)
    if not background:
        # cmdCtx: ends the start request first when the timeout is short, and is the
        # legacy wait's deadline for an old agent.
        _arm_into(changes, cs, "deadline_timer", timeout_ms, effects)
    changes["phase"] = Phase.START
    return replace(cs, **changes), tuple(effects)


# --- execute: start answer ---------------------------------------------------


def _on_start_answer(cs: CallState, answer: Response, now_ms: int) -> CallStep:
    try:
        body = _decode(answer, (("id", str),))
    except _UndecodableError as err:
        failure = classify(Undecodable(str(err)))
        return classified(_start_failed(cs, failure), failure)
    pid = body["id"]
    # The step's edits of the state, copied into it once (state.py's docstring).
    changes: dict[str, Any] = {}
    effects: list[Effect] = []
    _disarm_into(changes, cs, "answer_timer", effects)
    if cs.background:
        effects.append(_BACKGROUND_ANSWERED)
        return _finish(cs, _background_started(pid), effects, changes)
    if cs.identity is not None and pid == cs.identity.uuid:
        # New agent: the deadline is the process start plus the timeout (4.3), so a later
        # attempt continues the same timeout instead of restarting it.
        run_age_ms = max(ident.parse_run_age_ms(answer.headers), 0)
        remaining_ms = cs.timeout_ms - run_age_ms
        changes.update(process_id=pid, run_age_ms=run_age_ms, wait_started_at_ms=now_ms, legacy=False,
                       deadline_at_ms=now_ms + remaining_ms)
        _disarm_into(changes, cs, "deadline_timer", effects)
        effects.append(note("chattool_attach", provider_id=cs.call.provider_id, run_age_ms=run_age_ms,
                            remaining_ms=remaining_ms))
        if remaining_ms <= 0:
            # No time left: the wait context has already expired; read once.
            effects.append(_BUDGET_SPENT)
            cs, snap = _begin_snapshot(replace(cs, **changes), now_ms, timed_out=True,
                                       read_error=classify(Deadline("Get", _output_url(pid, True))).text)
            return cs, tuple(effects) + snap
        effects.append(_BUDGET_LEFT)
        _arm_into(changes, cs, "deadline_timer", remaining_ms, effects)
    else:
        # Old agent (or no headers sent): the legacy wait until start + timeout.
        changes["process_id"] = pid
        changes["legacy"] = True
        effects.append(note("chattool_legacy_wait", provider_id=cs.call.provider_id, process_id=pid))
        effects.append(_LEGACY_WAIT)
    # ``_send_output_read`` of the process just named (output reads carry no tool call headers)
    send = _send_into(changes, cs, "wait", "GET", f"/api/v0/processes/{ident.path_escape(pid)}/output", "wait=true",
                      _headers(cs, now_ms, False), b"")
    changes["phase"] = Phase.WAIT
    return replace(cs, **changes), tuple(effects) + (send,)


def _start_failed(cs: CallState, err: AgentError) -> CallStep:
    """``startErrorResult`` (5.2): an ExecuteResult JSON error, stored as a non-error."""
    words = _start_words(cs.identity.uuid if cs.identity else "", cs.background)
    mapped = agent_error_text(err, words) if cs.identity is not None else None
    if mapped is None:
        text = _enrich_start_error(f"{words.action}: {err.text}")
        return _finish(cs, Result("failed", False, execute_result_json(error=text)))
    kind, reason, text = mapped
    # The restart text names no process: the process, if any, died with the old agent.
    process_id = None if reason == "agent_restarted" else cs.identity.uuid  # type: ignore[union-attr]
    return _finish(cs, Result(kind, False, execute_result_json(error=text), process_id=process_id,
                              reason=reason or None))


# --- execute: waiting for the process ---------------------------------------


def _output_url(pid: str, wait: bool) -> str:
    return f"{AGENT_URL}/api/v0/processes/{ident.path_escape(pid)}/output" + ("?wait=true" if wait else "")


def _send_output_read(cs: CallState, now_ms: int, wait: bool) -> tuple[CallState, Effect]:
    # Output reads never carry tool call headers (4.1).
    path = f"/api/v0/processes/{ident.path_escape(cs.process_id)}/output"
    return _send(cs, "wait" if wait else "snapshot", "GET", path, "wait=true" if wait else "",
                 _headers(cs, now_ms, False), b"")


def _wall_ms(cs: CallState, now_ms: int) -> int:
    if cs.legacy:
        return now_ms - cs.started_at_ms
    return cs.run_age_ms + (now_ms - cs.wait_started_at_ms)


def _process_result(cs: CallState, now_ms: int, kind: str, *, success: bool = False, output: str = "",
                    exit_code: int = -1, error: str = "", reason: str | None = None,
                    background_id: bool = True) -> Result:
    """A foreground result after the start, with wall time and the file-dump note."""
    wall_ms = _wall_ms(cs, now_ms)
    content = execute_result_json(
        success=success, output=output, exit_code=exit_code, wall_duration_ms=wall_ms, error=error,
        note_text=_file_dump_note(cs.command), background_process_id=cs.process_id if background_id else "",
    )
    return Result(kind, False, content, exit_code=exit_code, process_id=cs.process_id, reason=reason,
                  wall_duration_ms=wall_ms)


def _completed(cs: CallState, now_ms: int, output: str, exit_code: int | None) -> Result:
    code = 0 if exit_code is None else exit_code
    return _process_result(cs, now_ms, "completed", success=code == 0, output=output, exit_code=code,
                           background_id=False)


def _timed_out(cs: CallState, now_ms: int, output: str) -> Result:
    return _process_result(cs, now_ms, "timed_out", output=output,
                           error=f"command timed out after {format_duration_ms(cs.timeout_ms)}")


_OUTPUT_FIELDS = (("running", bool),)


# The output answer's optional fields and their Go types. Go decodes the answer into the
# SDK's process output struct ([inferred] its name, ProcessOutputResponse): a field of
# another JSON type fails the decode, so the read is unreadable (C5.1), as the cancel
# answer's fields are (model/chattool/cancel.py ``_typed``); null or absent is the zero value.
_OUTPUT_TYPED = (("exit_code", int, "int"), ("output", str, "string"))


def _read_output(answer: Response) -> tuple[bool, int | None, str]:
    body = _decode(answer, _OUTPUT_FIELDS)
    for name, py_type, go_type in _OUTPUT_TYPED:
        value = body.get(name)
        if value is not None and type(value) is not py_type:
            raise _UndecodableError(f"decode response: json: cannot unmarshal {json_type_name(value)} "
                                    f"into Go struct field ProcessOutputResponse.{name} of type {go_type}")
    return body["running"], body.get("exit_code"), body.get("output") or ""


def _on_output_answer(cs: CallState, answer: Response, now_ms: int) -> CallStep:
    try:
        running, exit_code, output = _read_output(answer)
    except _UndecodableError as err:
        failure = classify(Undecodable(str(err)))
        return classified(_read_failed(cs, failure, now_ms), failure)
    if not running:
        return _finish(cs, _completed(cs, now_ms, output, exit_code))
    if cs.deadline_at_ms is not None and now_ms >= cs.deadline_at_ms:
        return _finish(cs, _timed_out(cs, now_ms, output))
    # The agent capped this read (its output wait cap); time is left, so read again.
    cs, send = _send_output_read(cs, now_ms, wait=True)
    return cs, (note("chattool_wait_again", provider_id=cs.call.provider_id), send, _READ_AGAIN)


def _read_failed(cs: CallState, err: AgentError, now_ms: int) -> CallStep:
    """A blocking read failed: look once more with a snapshot, which decides (Rule 5)."""
    timed_out = cs.deadline_at_ms is not None and now_ms >= cs.deadline_at_ms
    return _begin_snapshot(cs, now_ms, timed_out=timed_out, read_error=err.text)


def _begin_snapshot(cs: CallState, now_ms: int, *, timed_out: bool, read_error: str) -> CallStep:
    """Stop the blocking read and take one snapshot, limited to the timing's snapshot
    timeout (30 s) on the attempt."""
    cs, effects = _disarm(cs, "deadline_timer")
    cs = replace(cs, phase=Phase.SNAPSHOT, timed_out=timed_out, read_error=read_error)
    cs, send = _send_output_read(cs, now_ms, wait=False)
    cs, armed = _arm(cs, "snapshot_timer", cs.timing.snapshot_timeout_ms)
    mark = note("chattool_snapshot", provider_id=cs.call.provider_id, timed_out=timed_out)
    return cs, (*effects, mark, send, *armed)


def _on_snapshot_answer(cs: CallState, answer: Response, now_ms: int) -> CallStep:
    try:
        running, exit_code, output = _read_output(answer)
    except _UndecodableError as err:
        failure = classify(Undecodable(str(err)))
        return classified(_snapshot_failed(cs, failure, now_ms), failure)
    if not running:
        # Exited: the real result, even past the deadline ("transparent recovery").
        return _finish(cs, _completed(cs, now_ms, output, exit_code))
    if cs.timed_out:
        return _finish(cs, _timed_out(cs, now_ms, output))
    text = f"get process output: {cs.read_error} (process still running, use process_output to check later)"
    return _finish(cs, _process_result(cs, now_ms, "failed", output=output, error=text))


def _snapshot_failed(cs: CallState, err: AgentError, now_ms: int) -> CallStep:
    if cs.timed_out and not cs.layer.snapshot_failure_unknown:
        # Before Q9c: the wait hit its deadline, so the result claimed a timeout.
        text = f"command timed out after {format_duration_ms(cs.timeout_ms)}; failed to get output: {err.text}"
        return _finish(cs, _process_result(cs, now_ms, "timed_out", error=text))
    if cs.timed_out:
        # The wait may have been cut after the process exited: never claim a timeout (C6).
        text = unknown_outcome(
            f"the command's result was not received within {format_duration_ms(cs.timeout_ms)} ({err.text})",
            "the command may still be running or may have finished",
            check_process_text(cs.process_id),
        )
        return _finish(cs, _process_result(cs, now_ms, "unknown", error=text, reason="not_received"))
    text = f"get process output: {cs.read_error}; use process_output with ID {cs.process_id} to retry"
    return _finish(cs, _process_result(cs, now_ms, "failed", error=text))
