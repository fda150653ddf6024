"""Two ways a design variant's later attempt begins an execute call without a start:
attach to a process ID it already knows (``begin_attach``, the ledger design) and look
the call's process up (``begin_lookup``, the first-attempt-only design).

Theory of operation
-------------------
Both are model/designs.py variants, never behaviour of design B; the task layer picks
them through its rules' bookkeeping (model/chatd/designs.py). Neither sends a start:

- ``begin_attach(pid)``: the ledger (#27100) recorded the process ID an earlier start
  answered with. A background call reports the background start with that ID at once; a
  foreground call waits on it as chatd waits on an old agent's process (the legacy wait:
  blocking output reads until the execute timeout counted from this attempt's start,
  execute.py Rule 5), which is the wait #27100 had: it had no run age to continue from.
- ``begin_lookup``: first-attempt-only (the previous revision named in docs/contract.md D3):
  the later attempt reads the output of the process named by the tool call UUID (the
  one route that can tell whether the process exists). An answer is a process: a
  background call reports its background start, a foreground call waits on it as above.
  A 404 is what the design names as its flaw: chatd cannot tell "never started" from
  "started and gone" and reports unknown (reason ``not_found``); a request that does not
  reach the agent reports unknown ``unreachable`` (the agent could not be asked).

Model abstractions: file tools have no process to look up, so both designs begin them
as design B does (the designs' sections and PRs are about execute).
"""

from __future__ import annotations

from .args import ArgsError, InvalidTimeout, effective_timeout_ms, parse_execute_args, runs_in_background
from .classifier import AgentError, ErrorClass, check_process_text, unknown_outcome
from .execute import _on_output_answer, _send_output_read
from .results import Result, _background_started, _text_error, execute_result_json
from .state import CallState, CallStep, Phase, _arm, _finish
from ..core import Response, replace

# The unknown reason of a lookup the agent answered with "no such process".
LOOKUP_NOT_FOUND = "not_found"


def _execute_args(cs: CallState) -> tuple[CallState, Result | None]:
    """The call's arguments as ``_begin_execute`` reads them, or the failed result."""
    try:
        args = parse_execute_args(cs.call.args_json)
    except ArgsError as err:
        return cs, _text_error("failed", str(err))
    if not args.command:
        return cs, _text_error("failed", "command is required")
    background = runs_in_background(args)
    cs = replace(cs, background=background, command=args.command)
    if background:
        return cs, None
    try:
        timeout_ms = effective_timeout_ms(args, cs.timing)
    except InvalidTimeout as err:
        return cs, _text_error("failed", str(err))
    return replace(cs, timeout_ms=timeout_ms, deadline_at_ms=cs.started_at_ms + timeout_ms), None


def _wait_on(cs: CallState, pid: str, now_ms: int, op: str) -> CallStep:
    """The legacy wait on ``pid``: blocking reads until the execute timeout from now."""
    cs = replace(cs, process_id=pid, legacy=True, phase=Phase.WAIT)
    cs, armed = _arm(cs, "deadline_timer", cs.timeout_ms)
    cs, send = _send_output_read(cs, now_ms, wait=True)
    cs = replace(cs, pending_op=op)
    return cs, (*armed, send)


def begin_attach(cs: CallState, pid: str, now_ms: int) -> CallStep:
    """ledger: a later attempt waits on the process ID an earlier start recorded."""
    cs, failed = _execute_args(cs)
    if failed is not None:
        return _finish(cs, failed)
    if cs.background:
        return _finish(cs, _background_started(pid))
    return _wait_on(cs, pid, now_ms, "wait")


def begin_lookup(cs: CallState, now_ms: int) -> CallStep:
    """first-attempt-only: a later attempt looks the call's process up instead of
    starting it (``cs.identity`` names it)."""
    cs, failed = _execute_args(cs)
    if failed is not None:
        return _finish(cs, failed)
    pid = cs.identity.uuid  # type: ignore[union-attr]
    if cs.background:
        # One non-blocking read: a background process is looked up, never waited for.
        cs = replace(cs, process_id=pid, legacy=True, phase=Phase.WAIT)
        cs, send = _send_output_read(cs, now_ms, wait=False)
        return replace(cs, pending_op="lookup"), (send,)
    return _wait_on(cs, pid, now_ms, "lookup")


def on_lookup_answer(cs: CallState, answer: Response, now_ms: int) -> CallStep:
    """The process exists: a background call's start is reported, a foreground call
    is waited on (the answer is the first blocking read)."""
    if cs.background:
        return _finish(cs, _background_started(cs.process_id))
    return _on_output_answer(cs, answer, now_ms)


def lookup_failed(cs: CallState, err: AgentError, now_ms: int) -> CallStep:
    """No process could be found: unknown, whether the command ran or not."""
    reachable = err.cls in (ErrorClass.RESPONSE, ErrorClass.REFUSED)
    reason = LOOKUP_NOT_FOUND if reachable else "unreachable"
    why = ("the workspace agent has no process for this tool call" if reachable
           else f"the workspace agent could not be asked ({err.text})")
    text = unknown_outcome(f"{why}; an earlier attempt may have started the command",
                           "the command may have run", check_process_text(cs.process_id))
    return _finish(cs, Result("unknown", False, execute_result_json(error=text), process_id=cs.process_id,
                              reason=reason))
