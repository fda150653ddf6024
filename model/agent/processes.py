"""The process side of the agent: starting, exiting and killing processes, the stop rule
the cancel handler calls, output reads, signals, the list and its lazy reaping
(docs/contract.md A4.1 to A4.5, agentproc api.go and headtail.go).

Theory of operation
-------------------
A process runs a ``Script`` (or a command read as a tiny shell): it writes its first
output when it starts, runs for a while (timer ``exit:<pid>``), then writes the rest and
exits. A tool call's process is named by ``AgentRules.pid_for`` (Rev C: the tool call
UUID); one started without tool call headers takes the agent's own counter. A kill keeps
the partial output and sets exit code -1; only a cancel marks it canceled (rule 6). The
stopper (``stop_tool_call_process``) applies the stop rule: kill only a running process
whose run age, counted from the request's arrival, is below a non-zero threshold.
Output, signal and list are not wrapped by the tool call middleware; output and signal
refuse another chat's process (rule 9, ``AgentRules.process_visible``). Exited
processes are reaped lazily, on list (rule 8): ``manager.list`` compares the exit instant
in whole Unix seconds (Go keeps ``exitedAt`` as ``time.Now().Unix()``), and Rev C keeps
an exited process whose tool call record is current (``AgentRules.kept_when_exited``).
Each reaped process leaves a ``process_reaped`` note, so a run can tell a user which
processes a list dropped. The list answer is agentproc's ``ListProcessesResponse``:
``ProcessInfo`` rows (no output), running first, then the newest start, at most 10
(``handleListProcesses``; docs/contract.md A4.9).
"""

from __future__ import annotations

from typing import Any

from ..core import CancelTimer, FMap, Reply, Request, SetTimer, note, probe, replace, truth
from ..gocompat.decode import GoJSONError, go_quote
from ..identity import Key
from .rules import Script
from .state import AgentState, Effects, Process, Waiter
from .wire import (
    KILL_ERROR,
    MSG_BAD_JSON,
    MSG_SIGNAL_FAILED,
    SIGNALS,
    _bad_json,
    _json_response,
    _message,
    _query,
    _rec,
    chat_of,
    decode_signal,
    decode_start,
)

# The head/tail output buffer (agent/agentproc/headtail.go): what output and cancel answers
# report of a process's output.
MAX_HEAD_BYTES = 16 << 10
MAX_TAIL_BYTES = 16 << 10
MAX_LINE_LENGTH = 2048
LINE_TRUNCATION_SUFFIX = " ... [truncated]"
# handleListProcesses' maxListProcesses: a list answer names at most this many processes
# (the cap keeps a model's context small; api.go).
MAX_LIST_PROCESSES = 10


def parse_script(command: str) -> Script:
    """A tiny shell for commands no scenario names: ``echo X``, ``sleep N``, ``exit K``,
    ``true``, ``false`` separated by ';'. Output before the first sleep is written at
    start, the rest at exit."""
    runs_for_ms, exit_code, before, after = 0, 0, [], []
    for part in (p.strip() for p in command.split(";")):
        words = part.split()
        if not words:
            continue
        target = after if runs_for_ms else before
        if words[0] == "echo":
            target.append(" ".join(words[1:]) + "\n")
        elif words[0] == "sleep" and len(words) > 1:
            runs_for_ms += int(float(words[1]) * 1000)
        elif words[0] == "exit" and len(words) > 1:
            exit_code = int(words[1])
            break
        elif words[0] == "false":
            exit_code = 1
    return Script(runs_for_ms, exit_code, "".join(before), "".join(after))


def _start_process(state: AgentState, req: Request, key: Key | None, started_at_ms: int):
    """agentproc ``handleStartProcess``. ``started_at_ms`` is the instant the request
    arrived, which is the record's instant for a tool call: the design (glossary, "run
    age") says the process takes that instant as its start time, so the header run age and
    the process's run age agree even when the spawn was slow (``handler_ms``). Go's Rev C
    process.go was not seen (docs/contract.md A0.3, A4.3 [inferred])."""
    # A4.1: a start that fails is an answer like any other (recorded under a tool call).
    try:
        body = decode_start(req.body)
    except GoJSONError as err:
        return state, _rec(400, _bad_json(err)), [probe("A4.1.failed-bad-body")]
    command = body["command"]
    if not command:
        return state, _rec(400, {"message": "Command is required."}), [probe("A4.1.failed-no-command")]
    workdir = body["workdir"]
    if workdir and workdir not in state.config.dirs:
        detail = f"chdir {workdir}: no such file or directory"
        return state, _rec(500, {"message": "Failed to start process.", "detail": detail}), [probe("A4.1.failed-workdir")]
    if key is not None:
        pid = state.config.rules.pid_for(key, command)
        named = probe("A4.1.tool-call-id")
    else:
        state = replace(state, pid_counter=state.pid_counter + 1)
        pid = f"proc-{state.incarnation}-{state.pid_counter}"
        named = probe("A4.1.own-id")
    script = state.config.scripts.get(command) or parse_script(command)
    chat_id = chat_of(req) or ""
    # manager.resolveWorkDir: the request's directory, else the agent's configured one
    # (the model's first existing directory); ``ProcessInfo.WorkDir`` reports it.
    proc = Process(pid, chat_id, key, command, body["background"], started_at_ms, script.output_at_start,
                   workdir=workdir or state.config.dirs[0])
    state = replace(state, processes=state.processes.set(pid, proc))
    effects: Effects = [
        named,
        truth(
            "process_started",
            pid=pid,
            chat_id=chat_id,
            command=command,
            uuid=key.uuid if key else None,
            incarnation=state.incarnation,
        ),
        SetTimer(f"exit:{pid}", script.runs_for_ms),
    ]
    return state, _rec(200, {"id": pid, "started": True}), effects


def _process_exit(state: AgentState, pid: str, now_ms: int) -> tuple[AgentState, Effects]:
    proc = state.processes.get(pid)
    if proc is None or not proc.running:
        return state, []
    script = state.config.scripts.get(proc.command) or parse_script(proc.command)
    proc = replace(
        proc,
        running=False,
        exit_code=script.exit_code,
        exited_at_ms=now_ms,
        output=proc.output + script.output_at_exit,
    )
    state = replace(state, processes=state.processes.set(pid, proc))
    effects: Effects = [truth("process_exited", pid=pid, exit_code=script.exit_code, incarnation=state.incarnation)]
    return _wake_output_waiters(state, pid, effects)


def _kill(state: AgentState, pid: str, by: str, now_ms: int, signal: str = "SIGKILL") -> tuple[AgentState, Effects]:
    """Signal the process group: partial output kept, exit code -1 (Go's signal death).
    SIGTERM ends a model process too: scripts never trap it (a real command may)."""
    proc = state.processes[pid]
    proc = replace(proc, running=False, exit_code=-1, exited_at_ms=now_ms, canceled=proc.canceled or by == "cancel")
    state = replace(state, processes=state.processes.set(pid, proc))
    fields = {"signal": signal} if signal != "SIGKILL" else {}
    effects: Effects = [
        CancelTimer(f"exit:{pid}"),
        truth("process_killed", pid=pid, by=by, incarnation=state.incarnation, **fields),
    ]
    return _wake_output_waiters(state, pid, effects)


def _script_of(state: AgentState, proc: Process) -> Script:
    return state.config.scripts.get(proc.command) or parse_script(proc.command)


def _wake_output_waiters(state: AgentState, pid: str, effects: Effects) -> tuple[AgentState, Effects]:
    proc = state.processes[pid]
    for req_id, waiter in list(state.waiters.items()):
        if waiter.kind == "output" and waiter.target == pid:
            state = replace(state, waiters=state.waiters.remove(req_id))
            effects.append(CancelTimer(f"outwait:{req_id}"))
            effects.append(_output_reply(waiter.request, proc))
    return state, effects


def _visible(state: AgentState, req: Request, proc: Process) -> bool:
    """agentproc's chat isolation for output and signal (A5, api.go): refused only when the
    request has a chat and the process has a different, non-empty one. A request without
    a chat, or a process started without one, passes (``AgentRules.process_visible``)."""
    return state.config.rules.process_visible(chat_of(req), proc.chat_id)


def _not_found(req: Request, pid: str) -> Reply:
    return _message(req, 404, f"Process {go_quote(pid)} not found.")


def head_tail_output(raw: str) -> tuple[str, dict | None]:
    """``HeadTailBuffer.Output`` (agent/agentproc/headtail.go): up to 16 KiB of head and
    16 KiB of tail joined by an omission marker, long lines cut, and the truncation info;
    output that fits the head comes back whole with no info. Lengths are UTF-8 bytes, as
    Go's; a cut inside a character becomes U+FFFD per byte, as Go's JSON encoder writes it."""
    data = raw.encode("utf-8", errors="surrogateescape")
    if not data:
        return "", None
    if len(data) <= MAX_HEAD_BYTES:
        return _go_text(_truncate_lines(data)), None
    head, tail = data[:MAX_HEAD_BYTES], data[MAX_HEAD_BYTES:][-MAX_TAIL_BYTES:]
    omitted = len(data) - len(head) - len(tail)
    joint = f"\n\n... [omitted {omitted} bytes] ...\n\n".encode() if omitted > 0 else b"\n"
    result = _truncate_lines(head) + joint + _truncate_lines(tail)
    info = {"original_bytes": len(data), "retained_bytes": len(result), "omitted_bytes": omitted, "strategy": "head_tail"}
    return _go_text(result), info


def _truncate_lines(data: bytes) -> bytes:
    if len(data) <= MAX_LINE_LENGTH:
        return data
    cut = MAX_LINE_LENGTH - len(LINE_TRUNCATION_SUFFIX)
    lines = data.split(b"\n")
    return b"\n".join(line[:cut] + LINE_TRUNCATION_SUFFIX.encode() if len(line) > MAX_LINE_LENGTH else line for line in lines)


def _go_text(data: bytes) -> str:
    return "".join("\ufffd" if 0xDC80 <= ord(c) <= 0xDCFF else c for c in data.decode("utf-8", errors="surrogateescape"))


def _output_value(proc: Process) -> dict:
    output, truncated = head_tail_output(proc.output)
    value = {"running": proc.running, "exit_code": proc.exit_code, "output": output}
    if truncated is not None:
        value["truncated"] = truncated
    return value


def _output_reply(req: Request, proc: Process) -> Reply:
    return _json_response(req, 200, _output_value(proc))


def _output(state: AgentState, req: Request, pid: str, now_ms: int) -> tuple[AgentState, Effects]:
    proc = state.processes.get(pid)
    if proc is None or not _visible(state, req, proc):
        return state, [_not_found(req, pid)]
    if proc.running and _query(req).get("wait") == "true":
        waiter = Waiter(req, "output", pid)
        state = replace(state, waiters=state.waiters.set(req.req_id, waiter))
        return state, [SetTimer(f"outwait:{req.req_id}", state.config.rules.output_wait_cap_ms)]
    return state, [_output_reply(req, proc)]


def _signal(state: AgentState, req: Request, pid: str, now_ms: int) -> tuple[AgentState, Effects]:
    """agentproc ``handleSignalProcess``, checks in Go's order: another chat's process 404;
    body not JSON 400; no signal 400; a signal other than kill/terminate 400; unknown
    process 404; exited process 409; kill failed 500; else SIGKILL or SIGTERM to the
    process group and 200. A signal is the model's own action, never a cancel (Canceled
    stays false, section 4.2)."""
    proc = state.processes.get(pid)
    if proc is not None and not _visible(state, req, proc):
        return state, [_not_found(req, pid)]
    try:
        sig = decode_signal(req.body)["signal"]
    except GoJSONError as err:
        return state, [_message(req, 400, MSG_BAD_JSON, str(err))]
    if not sig:
        return state, [_message(req, 400, "Signal is required.")]
    if sig not in SIGNALS:
        return state, [_message(req, 400, f'Unsupported signal {go_quote(sig)}. Use "kill" or "terminate".')]
    if proc is None:
        return state, [_not_found(req, pid)]
    if not proc.running:
        return state, [_message(req, 409, f"Process {go_quote(pid)} is not running.")]
    if _script_of(state, proc).kill_fails:
        detail = f"{sig} process: {KILL_ERROR}"
        return state, [_message(req, 500, MSG_SIGNAL_FAILED, detail)]
    state, effects = _kill(state, pid, "signal", now_ms, SIGNALS[sig])
    return state, effects + [_message(req, 200, f"Signal {go_quote(sig)} sent to process {go_quote(pid)}.")]


def unix_s(clock_ms: int) -> int:
    """``time.Time.Unix()`` of an agent clock reading: whole seconds, floored (also before
    the epoch, as Go's). The model's agent clock reads 0 at a whole second."""
    return clock_ms // 1000


def reaped_now(state: AgentState, proc: Process, now_ms: int) -> bool:
    """Rule 8, ``manager.list``'s test for one process: it exited, more than
    ``exitedProcessReapAge`` has passed since its exit second (Go keeps the exit instant
    in whole Unix seconds, so a process that exited at 12.9 s goes 0.9 s earlier than its
    exact instant would say), and the rules do not keep it (Rev C: its tool call record
    is current; docs/contract.md A4.4)."""
    return _reap_branch(state, proc, now_ms).rule.startswith("A4.4.reaped")


# A4.4's branches, as ``reap`` counts them per process (rule coverage).
_RUNNING, _RECENT, _KEPT = probe("A4.4.running"), probe("A4.4.exited-recently"), probe("A4.4.kept-current")
_REAPED_NO_KEY, _REAPED_NOT_CURRENT = probe("A4.4.reaped-no-key"), probe("A4.4.reaped-not-current")


def _reap_branch(state: AgentState, proc: Process, now_ms: int):
    """The branch of A4.4 one process takes at a list: its probe (``reaped_now`` reads it)."""
    if proc.running or proc.exited_at_ms is None:
        return _RUNNING
    reap_after_ms = state.config.rules.exited_reap_after_ms  # a timing constant, not a version difference
    if now_ms - unix_s(proc.exited_at_ms) * 1000 <= reap_after_ms:
        return _RECENT
    kept = state.config.rules.kept_when_exited(state, proc)  # the hook decides; the probe names its answer
    if kept:
        return _KEPT
    return _REAPED_NO_KEY if proc.key is None else _REAPED_NOT_CURRENT


def reap(state: AgentState, now_ms: int) -> tuple[AgentState, Effects]:
    """Rule 8: drop every exited process ``reaped_now`` names, of every chat (Go reaps
    before it filters by chat), each with a ``process_reaped`` note."""
    keep, effects, reaped = [], [], False
    for pid, proc in state.processes.items():
        branch = _reap_branch(state, proc, now_ms)
        effects.append(branch)
        if branch is _REAPED_NO_KEY or branch is _REAPED_NOT_CURRENT:
            effects.append(note("process_reaped", pid=pid, chat_id=proc.chat_id, exit_code=proc.exit_code,
                                incarnation=state.incarnation))
            reaped = True
            continue
        keep.append((pid, proc))
    if not reaped:
        return state, effects
    return replace(state, processes=FMap(keep)), effects


def process_info(proc: Process) -> dict:
    """``workspacesdk.ProcessInfo`` with Go's JSON tags: ``workdir``, ``exit_code`` and
    ``exited_at_unix`` omitted when empty (``omitempty``), the instants in Unix seconds,
    no output (a list never carries output; the output route does). The model's JSON
    sorts keys where Go writes them in field order (the package docstring's abstraction)."""
    info: dict[str, Any] = {"id": proc.pid, "command": proc.command}
    if proc.workdir:
        info["workdir"] = proc.workdir
    info["background"] = proc.background
    info["running"] = proc.running
    if proc.exit_code is not None:
        info["exit_code"] = proc.exit_code
    info["started_at_unix"] = unix_s(proc.started_at_ms)
    if proc.exited_at_ms is not None:
        info["exited_at_unix"] = unix_s(proc.exited_at_ms)
    return info


def _list(state: AgentState, req: Request, now_ms: int) -> tuple[AgentState, Effects]:
    """agentproc ``handleListProcesses`` over ``manager.list`` (docs/contract.md A4.9):
    reap first, across all chats; a request with a chat sees that chat's processes only
    (not those started without a chat, unlike output and signal), one without a chat every
    process; running first, then the latest start second first; at most
    ``MAX_LIST_PROCESSES``. Go sorts with ``sort.Slice`` over map order, so processes that
    tie (same running state, same start second) come in no fixed order; the model breaks
    the tie by the exact start instant, then the ID, so a run is reproducible."""
    state, effects = reap(state, now_ms)
    chat_id = chat_of(req) or ""
    effects.append(probe("A4.9.one-chat") if chat_id else probe("A4.9.every-chat"))
    procs = [p for p in state.processes.values() if not chat_id or p.chat_id == chat_id]
    procs.sort(key=lambda p: (not p.running, -unix_s(p.started_at_ms), -p.started_at_ms, p.pid))
    if len(procs) > MAX_LIST_PROCESSES:
        effects.append(probe("A4.9.capped"))
    infos = [process_info(p) for p in procs[:MAX_LIST_PROCESSES]]
    return state, effects + [_json_response(req, 200, {"processes": infos})]


def stop_tool_call_process(
    state: AgentState, pid: str, threshold_ms: int, now_ms: int
) -> tuple[AgentState, dict | None, Effects, str]:
    """``API.StopToolCallProcess`` (rule 6): ``(state, process, effects, error)``.
    ``process`` is None when no process has that ID; ``error`` is non-empty when the kill
    failed (``Script.kill_fails``), and the process then runs on, not canceled.

    Like Go it looks the ID up without the chat: the ID is the tool call UUID derived from
    the cancel's own chat, so it can only name that chat's process. Only the
    pid-from-command planted bug breaks that, because its IDs come from the command.

    ``process`` is ``ToolCallProcess`` with the design's tags: ``running``, ``canceled``
    and ``run_age_ms`` always; ``output`` (head/tail, as the output route reports it),
    ``truncated`` and ``exit_code`` (nil while running) only when set."""
    proc = state.processes.get(pid)
    if proc is None:
        return state, None, [probe("A4.2.no-process")], ""
    effects: Effects = []
    run_age_ms = now_ms - proc.started_at_ms
    stops = proc.running and threshold_ms > 0 and state.config.rules.stop_below(run_age_ms, threshold_ms)
    if stops:
        if _script_of(state, proc).kill_fails:
            return state, None, [probe("A4.2.kill-fails"), note("stop_failed", pid=pid)], f"kill process group: {KILL_ERROR}"
        state, effects = _kill(state, pid, "cancel", now_ms)
        effects = [probe("A4.2.kill-young"), *effects]
        proc = state.processes[pid]
    elif proc.running:
        effects.append(probe("A4.2.leave-running"))
        if threshold_ms <= 0:
            effects.append(probe("A4.3.threshold-zero"))  # run age never compared: 0 never stops
        effects.append(note("left_running", pid=pid, run_age_ms=run_age_ms, threshold_ms=threshold_ms))
    else:
        effects.append(probe("A4.2.already-exited"))
    output, truncated = head_tail_output(proc.output)
    value: dict[str, Any] = {"running": proc.running, "canceled": proc.canceled, "run_age_ms": run_age_ms}
    if output:
        value["output"] = output
    if truncated is not None:
        value["truncated"] = truncated
    if proc.exit_code is not None:
        value["exit_code"] = proc.exit_code
    return state, value, effects, ""
