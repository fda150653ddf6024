"""The workspace agent half of the contract: record store, tool call middleware, cancel
handler, processes and files ("Rev C", docs/contract.md A2 to A4).

Theory of operation
-------------------
The agent is one pure state machine. A request arrives (``on_request``), a handler run
finishes (``on_timer("handler:<run>")`` or ``on_handler_done``), a process exits
(``on_timer("exit:<pid>")``), a blocking output read reaches its cap
(``on_timer("outwait:<req>")``), a caller stops waiting (``on_client_gone``) or the agent
shuts down (``shutdown``). Each returns ``(new_state, effects)``; answers leave as
``Reply`` effects addressed to the request's sender, ground truth as ``Truth``.

Rule 1 (decision order, section 2.2/2.4). For a request with tool call headers in chat C
        for message M: malformed headers 400; no chat 400; then under one step:
        M < C.latest -> 409 stale_tool_call (stale before the age rule); a record of M
        exists -> canceled marker 409 tool_call_canceled, different input hash 409
        input_mismatch (never waits), pending -> wait, done -> replay; no record and
        ``uptime - margin <= age`` (negative age counts as 0) -> 409
        agent_started_after_tool_call; otherwise the call is proven new: insert the record
        FIRST (raising C.latest to M and dropping older messages' records), then run the
        handler once.
Rule 2 (A1). The record is inserted before the handler runs. A handler run is a separate
        step (timer ``handler:<run>`` after ``AgentRules.handler_ms``, world.handler_time)
        so that concurrent requests, cancels and faults can land while it is pending; they
        wait on the run, never run it again. Every start, edit and write runs this way,
        with tool call headers or without (today's chatd, an old agent): a slow handler is
        slow for everyone, and a handler_panic fault reaches every run.
Rule 3. Every answer that comes from a record (first run, replay, cancel of a started
        call) carries ``Coder-Tool-Call-Run-Age-Ms`` = floor(now - record creation). Only
        Content-Type and that header are forwarded, never other handler headers. The one
        exception is a panic (section 2.5): the panic leaves the creating request's stack,
        so httpmw.Recover answers it 500 "An internal server error occurred." without the
        header, while waiters and later requests get the recorded 500.
Rule 4. Refusals change nothing: a 400 or any 409 records nothing and does not raise the
        chat's latest message ID.
Rule 5 (cancel, section 3). Validate (headers, path ID == UUID of the request's own chat
        and headers, JSON body) before touching the store. No record and provable: insert
        a canceled marker, answer started=false. Pending run: wait, then stop. Started:
        call the stopper after the run published, on every repeated cancel too. A cancel
        never turns a record that ran into a marker. The threshold is clamped to [0, max].
Rule 6 (stop rule, section 4.2). Kill the process only while it runs with run age below
        the threshold (0 never stops). Canceled is sticky and only a cancel sets it; a
        killed process keeps its partial output and exit code -1. A process's run age
        counts from the request's arrival, the record's instant (design glossary "run
        age"), so it equals the header's run age even after a slow spawn. A failed kill
        (``Script.kill_fails``) is the stopper error: 500, process untouched.
Rule 7 (A2, A7). Work outlives its request: a caller that goes away stops nothing. The
        creating request's handler runs even if its client left; a waiter whose client
        left is answered with nothing. Shutdown kills every process (not a cancel) and
        loses every record; restart is shutdown plus a fresh boot with a new uptime.
Rule 8 (section 4.4, A4.9). Reaping is lazy (on list, before the chat filter): an exited
        process is removed once more than 5 minutes have passed since its exit second
        (Go keeps exit instants in whole Unix seconds) unless its tool call record is
        current (latest message of its chat; ``AgentRules.kept_when_exited``); each
        removal is a ``process_reaped`` note. A list answers ``ProcessInfo`` rows
        (no output), running first, then the newest start, at most 10.
Rule 9 (agentproc api.go). Output and signal refuse (404, ``%q``-quoted ID) only when the
        request has a chat and the process a different, non-empty one; list with a chat
        shows that chat's processes, without one every process. Signal checks in Go's
        order: isolation, JSON body, empty signal, kill/terminate only (SIGKILL/SIGTERM),
        unknown 404, exited 409 "not running".
Rule 10. Bodies decode as Go's encoding/json does (model/gocompat/decode.py): one value, trailing bytes
        unread, case-folded keys, int64 range, ``null`` keeps; any decode error is the
        handler's 400 with Go's error as detail, never a Python exception.

Model abstractions (recorded so a reader can check them against the Go code):
- The body is always fully readable, so the middleware's "Failed to read request body"
  400 does not occur; a handler panic is injected with ``on_handler_done(panic=True)``,
  and ``after_effects=True`` makes it panic after its side effects (the process spawned).
- Output is reported through Go's head/tail buffer (16 KiB + 16 KiB, lines cut at 2048
  bytes) with its ``truncated`` info; the model keeps the whole output underneath.
- SIGTERM ends a model process like SIGKILL (exit -1): scripts do not trap signals.
- Answers written with ``httpapi.Write`` carry Content-Type ``application/json`` here;
  Go writes ``application/json; charset=utf-8`` and a trailing newline.
- Processes run scripts (``Script``): output written at start, a run time, output written
  at exit and an exit code. Commands the config does not name are read as a tiny shell
  (``echo X; sleep N; exit K``, ``true``, ``false``).
- The process ID of a request without tool call headers is ``proc-<incarnation>-<n>``
  from the agent's own counter (the real agent draws a random UUID).
- Output reads are never wrapped by the middleware; signal and list neither.

Where the design and the code facts differ we follow the code facts (docs/contract.md):
there is no time-based record expiry in Rev C (design section 6 mentions none either; the
chatd-contract's 1 h retention belongs to Rev D), and a canceled marker is only created when
a cancel comes first (section 6.1 item 2). The stopper looks the process up by ID alone,
as Go's ``StopToolCallProcess`` does (the ID already names the cancel's own chat). Where
no code fact exists we follow the design: the process's start instant is the record's
(Rev C process.go is not in the repository history, docs/contract.md A0.3 and A4.3), and
the cancel answer's JSON tags and omitempty are the design's (docs/contract.md A6.4 could
not verify them). The reference texts disagree on the panic: docs/contract.md A2.5 and
the design say waiters and later requests get the recorded 500, and the Go test says the
panic "reaches the caller"; middleware.go re-panics after publishing, so the creating
request's answer is httpmw.Recover's, which is what the model gives it.

Where each part lives (each module opens with its own theory of operation):
- ``routes.py``: the entry points (``on_request``, ``on_timer``, ``on_client_gone``) and
  the route table; the old agent's one difference (no middleware, no cancel route).
- ``middleware.py``: rules 1 to 4, the decision of a tool call request and the handler
  run (``on_handler_done``, ``_run_handler``).
- ``store.py``: the records (section 2): input hash, ``lookup``, insert.
- ``cancel.py``: rule 5, the cancel route (section 3).
- ``processes.py``: rules 6, 8 and 9: start, exit, kill, the stopper, output, signal,
  list and reaping (section 4.1 to 4.5).
- ``files.py``: edit and write (section 4.6).
- ``wire.py``: routes, texts, the Go structs bodies decode into, answer helpers (rule 10).
- ``state.py``: the state values, boot, shutdown and restart (rule 7).
- ``rules.py``: ``AgentRules`` (values and the hooks Rev C follows), ``AgentConfig``.
- ``planted.py``: the agent's planted bugs, each an override of one hook.

Variants and planted bugs: ``AgentRules`` holds the values a variant or scenario sets
and, as methods, the rules a planted bug breaks, so the handlers read as Rev C and a bug
is a subclass overriding the hooks of the one rule it breaks (planted.py). The only branch on the rules is the
real version difference, Rev C or an old agent (``understands_tool_calls``, routes.py).

The package re-exports every name the single module had, so ``from toolcall_sim.model import agent``
and ``agent.AgentRules``, ``agent.START_PATH``... keep working. Two names are seams that
the Go-shaped tests replace on the package (tests/agent_harness.py): ``_run_handler``
(the handler a run calls) and ``stop_tool_call_process`` (the cancel's stopper); the
middleware and the cancel handler call them through the package so a replacement there
takes effect.
"""

from __future__ import annotations

# Names the single module imported and callers reach as agent.<name>.
from ..core import EMPTY, FMap, Note, Reply, Request, Response, replace
from ..identity import MAX_MS, Key
from . import planted
from .cancel import _answer_cancel, _cancel
from .files import _edit_files, _write_file
from .middleware import _begin_run, _middleware, _recovered_reply, _run_handler, on_handler_done
from .planted import with_bugs
from .processes import (
    LINE_TRUNCATION_SUFFIX,
    MAX_HEAD_BYTES,
    MAX_LINE_LENGTH,
    MAX_LIST_PROCESSES,
    MAX_TAIL_BYTES,
    _go_text,
    _kill,
    _list,
    _not_found,
    _output,
    _output_reply,
    _output_value,
    _process_exit,
    _script_of,
    _signal,
    _start_process,
    _truncate_lines,
    _visible,
    _wake_output_waiters,
    head_tail_output,
    parse_script,
    process_info,
    reap,
    reaped_now,
    stop_tool_call_process,
    unix_s,
)
from .routes import on_client_gone, on_request, on_timer
from .rules import AGENT_VARIANTS, OLD_AGENT, AgentConfig, AgentRules, Script
from .state import (
    AgentState,
    ChatRecords,
    Effects,
    Process,
    Record,
    Recorded,
    Run,
    Waiter,
    boot,
    restart,
    shutdown,
)
from .store import REFUSAL_FOR_VERDICT, _insert, _set_record, current, input_hash, lookup, uptime_ms
from .wire import (
    _CANCEL_RE,
    _FILE_EDIT,
    _FILE_EDITS,
    _OUTPUT_RE,
    _SIGNAL_RE,
    CANCEL_REQUEST,
    EDIT_PATH,
    EDIT_REQUEST,
    JSON,
    KILL_ERROR,
    LIST_PATH,
    MIDDLEWARE_ROUTES,
    MSG_BAD_JSON,
    MSG_CANCEL_NEEDS_HEADERS,
    MSG_CANCEL_WRONG_ID,
    MSG_HANDLER_FAILED,
    MSG_INTERNAL,
    MSG_INVALID_HEADERS,
    MSG_NO_CHAT,
    MSG_SIGNAL_FAILED,
    MSG_STOP_FAILED,
    PANIC_RECORDED,
    SIGNAL_REQUEST,
    SIGNALS,
    START_PATH,
    START_REQUEST,
    WRITE_PATH,
    _bad_json,
    _json_response,
    _message,
    _query,
    _rec,
    _recorded_reply,
    _refused,
    _run_age_header,
    chat_of,
    decode_cancel_response,
)

__all__ = [
    "AgentConfig",
    "AgentRules",
    "AgentState",
    "MAX_MS",
    "Note",
    "Script",
    "boot",
    "current",
    "decode_cancel_response",
    "input_hash",
    "lookup",
    "on_client_gone",
    "on_handler_done",
    "on_request",
    "on_timer",
    "parse_script",
    "process_info",
    "reap",
    "reaped_now",
    "restart",
    "shutdown",
    "stop_tool_call_process",
    "with_bugs",
]
