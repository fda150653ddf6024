"""chatd's tool layer for execute, edit_files and write_file (CODAGT-757 design B).

Theory of operation
-------------------
This package is the Python twin of chatd's ``chattool`` package as design B has it
(docs/contract.md C3.2 step 3, 4 and 5; the Go files named there: toolcall.go,
execute.go, interrupt.go, filetoolcall.go). It knows nothing about tasks, attempts,
replicas or the database: the task layer (model/chatd/) dials the agent, creates one
``CallState`` per tool call and feeds it answers and timer firings, and commits
``CallState.result``. Everything here is a pure function of its arguments; time enters as
the replica's own clock reading in integer milliseconds. Every duration this layer waits
for comes from the ``timing`` (model/timing.py) the task passes to ``begin_call``,
``begin_cancel`` and ``select_cancels`` and ``CallState`` keeps; the durations named below
are its defaults (the reference values), which a scaled run replaces.

Rule 1 (identity, 4.1). ``ToolCallAge`` is measured from database timestamps at the read
        plus the replica's monotonic time since then, never negative; its zero value
        reports 0. Tool call headers are built from it immediately before each start,
        edit, write or cancel request; output reads never carry them.
Rule 2 (one request at a time). A call has at most one request in flight
        (``pending_req_id``). An answer for any other request ID, and a timer whose name
        is not currently armed, is stale and ignored. Request IDs and timer names start
        with the caller's ``req_prefix`` and carry a per-call sequence number, so several
        calls share a replica and an old timer can never be mistaken for a new one.
Rule 3 (agent answer timeout, 4.5). Every start, edit, write and cancel request waits at
        most ``timing.agent_answer_timeout_ms`` (1 min) for its answer; output reads
        never do. A foreground start also ends at the execute timeout; when both are
        equal the execute timeout wins (so the result is "could not be reached", 7.17).
        The timer exists only in the layer ``DESIGN_B`` (``ToolLayer``): before the
        stack (``BEFORE_STACK``) a start, edit or write waits on its command context
        (a foreground start: the execute timeout) or on the attempt (15 min).
Rule 4 (classifier, 5.1). A failed request is classified in this order: NoAnswer (our
        answer timer fired), Refused(code) (a coded 409), Response (any other HTTP
        error, 404 included), Unreachable (a transport failure or a deadline inside the
        transport), Unreadable (a 2xx answer we cannot decode). ``AGENT_ERROR_OUTCOMES``
        maps the class to a result kind or to "fall back" (AgentErrorText's ok=false).
Rule 5 (foreground execute, 4.2 step 4, 4.3). A start answer whose ID is the tool call
        UUID is a new agent: wait ``timeout - max(run_age, 0)`` from the answer with
        blocking reads (the agent caps each at its output wait cap, 5 min; a read that
        returns "running" is simply repeated). Any other ID is an old agent: the legacy
        wait runs until the execute timeout counted from this attempt's start. When the
        wait deadline passes or a read fails, one snapshot (``timing.snapshot_timeout_ms``)
        decides: exited -> completed; running past the deadline -> timed out with
        ``background_process_id``; the snapshot itself failing past the deadline ->
        unknown "not received" (never "timed out"; C6, Q9c). Before the stack
        (``BEFORE_STACK``) that last case said "command timed out after <timeout>;
        failed to get output: <err>", kind ``timed_out``.
Rule 6 (C4). When the attempt's context ends the task calls ``abort``: we stop waiting
        and send nothing more; the only effects are ``CancelTimer``.
Rule 7 (interrupt, 3.2 step 3, 5.3, 5.4). ``interrupted_call`` decides whether a call gets
        a cancel and its stop run age (effective timeout for a foreground execute, 0
        otherwise). Calls sharing a provider ID get one cancel only when every copy has
        ``same_cancel``. A cancel is sent once, never resent, and bounded by Rule 3; its
        answer maps to a result through ``_EXECUTE_CANCEL_RULES`` / ``_FILE_CANCEL_RULES``.
Rule 8 (results). ``Result.kind`` is what checkers read; ``content`` is the text the
        model sees (ExecuteResult JSON in Go's field order, or the file tools' JSON, or a
        plain error text), ``is_error`` whether chatd stores it as an error result.
        Unknown results carry a ``reason`` from ``UNKNOWN_REASONS``.
Rule 9 (context budget, 1.3 step 6, 3.2 step 3.7). Before the task commits a result it
        is cut to ``tool_result_byte_budget`` of the chat model's context window
        (``fit_result_to_context``: chatloop's head-and-tail cut with a "Coder truncated"
        marker); a cut non-error result is stored as ``{"output": <cut text>}``, as
        chatprompt stores text that is not JSON. The cut never changes ``kind``.

Where the reference (docs/contract.md, code facts) and the design differ we follow the
reference:
- The agent answer timeout also bounds write_file requests (4.5 and 5.4); the newest
  writefile.go seen does not wrap its request, the reference says it does.
- A live or recorded HTTP error of a file tool reads ``unexpected status code N: <message>``
  (5.4's write example), not the newer message-only text.
- Stale / canceled refusals of a file request read ``<action>: <err>`` (5.4).
- The interrupt stop age uses the execute default (10 s) when the call has no timeout
  argument (section 8 item 5); the timing's execute default is the only default here
  (no separate ``ExecuteOptions.DefaultTimeout``).

Layers (``ToolLayer``). ``DESIGN_B`` is the tool layer after the CODAGT-757 stack;
``BEFORE_STACK`` is the chattool before it (docs/contract.md D9, PRs 4-6), as
the legacy branches of the Go execute tool have it (``executeBackground`` /
``executeForeground`` without an identity, ``waitForProcess``; coder/coder
``coderd/x/chatd/chattool/execute.go``): no agent answer timer and the pre-Q9c text for a
snapshot that fails past the deadline. The identity-dependent behaviour of the stack
(headers, attach by run age, the classifier's unknown texts) needs an ``identity``, which
a chatd before the stack never builds (model/chatd/ passes ``identity=None``).

Model abstractions (recorded so a reader can check them against the Go code):
- ``send_identity=False`` with an identity models a chatd that knows the identity but sends
  no tool call headers: the agent picks its own process ID, so execute takes the legacy
  wait, while error texts still use the identity's wording. ``identity=None`` is the
  pre-CODAGT-757 chatd (legacy behavior throughout).
- A call's result is only ever built while its attempt is alive (the task calls ``abort``
  otherwise), so "the tool call's context ended" legacy texts never reach a result here.
- An execute timeout that is zero or negative is a command context that has already
  expired: Go's client fails the start before sending it ("context deadline exceeded",
  classified Unreachable), so we send nothing.
- A 2xx answer that lacks a field we need (start ``id``, output ``running``, cancel
  ``started``) is Unreadable. Go would decode zero values; the stricter reading keeps a
  malformed agent from passing as "exited with code 0".
- Error texts of transport failures are ``<Op> "http://agent<path>": <reason>``, like Go's
  ``*url.Error``; exact byte equality with Go is not a goal, the kinds are.
- A read that fails before the deadline, followed by a failed snapshot, gives kind
  ``failed`` (Go's text "get process output: ...; use process_output with ID ... to
  retry" claims no outcome).

Where each part lives (one module per seam; this ``__init__`` re-exports every public name,
so ``from toolcall_sim.model import chattool; chattool.begin_call(...)`` is the one way in):
- constants.py: reference durations, tools and paths, ``ToolLayer``, dial error texts;
- args.py: ``ToolCall``, ``Identity``, ``ToolCallAge`` and the execute arguments (Rule 1);
- results.py: ``Result`` and the execute result JSON (Rule 8);
- budget.py: the per-result context budget (Rule 9);
- classifier.py: the classifier and the error texts (Rule 4);
- interrupt.py: which calls get a cancel (Rule 7);
- state.py: ``CallState``, ``CallStep`` and the request/timer helpers (Rules 2, 6);
- calls.py: ``begin_call``, ``on_answer``, ``on_timer`` (routing only);
- execute.py, files.py, cancel.py: the steps of each operation (Rules 3, 5, 7);
- dial.py: results for a call whose dial failed;
- lookup.py: the design variants' attach and lookup (model/designs.py), never design B.
Go compatibility the tool layer shares with the loader (durations, Go's JSON text) lives
in model/gocompat/, re-exported here under its old names.
"""

from __future__ import annotations

from ..gocompat.encoding import go_json  # noqa: F401 (re-exported)
from ..gocompat.duration import (  # noqa: F401 (re-exported)
    DurationError, format_duration_ms, parse_duration_ms,
)
from .constants import (  # noqa: F401 (re-exported)
    AGENT_ANSWER_TIMEOUT_MS, AGENT_NODE, AGENT_OUTPUT_WAIT_CAP_MS, AGENT_URL, BEFORE_STACK,
    DESIGN_B, DIAL_DELETED, DIAL_ERROR_TEXTS, DIAL_NO_AGENT, DIAL_NO_WORKSPACE, EDIT_FILES,
    EDIT_PATH, EXECUTE, EXECUTE_DEFAULT_TIMEOUT_MS, FILE_TOOLS, GENERIC_INTERRUPTED_TEXT,
    MAX_OUTPUT_TO_MODEL_BYTES, SERIAL_TOOLS, SNAPSHOT_TIMEOUT_MS, START_PATH, ToolLayer,
    WRITE_FILE, WRITE_PATH, dial_error_text,
)
from .args import (  # noqa: F401 (re-exported)
    ArgsError, ExecuteArgs, Identity, InvalidTimeout, ToolCall, ToolCallAge, call_target,
    effective_timeout_ms, parse_execute_args, runs_in_background, strip_trailing_ampersand,
)
from .results import (  # noqa: F401 (re-exported)
    EXECUTE_KINDS, FILE_KINDS, Result, UNKNOWN_REASONS, execute_result_json, generic_result,
    result_row_probe, truncate_output,
)
from .budget import (  # noqa: F401 (re-exported)
    BYTES_PER_TOKEN_ESTIMATE, DEFAULT_TOOL_RESULT_BYTES, MIN_TOOL_RESULT_BYTES,
    TOOL_RESULT_CONTEXT_DIVISOR, TRUNCATION_MARKER_RESERVE_BYTES, fit_result_to_context,
    tool_result_byte_budget, truncate_tool_result_text,
)
from .classifier import (  # noqa: F401 (re-exported)
    AGENT_ERROR_OUTCOMES, AGENT_RESTARTED_REASON, AgentError, CLASSIFIER, Deadline, ErrorClass,
    NO_ANSWER_REASON, NO_PROCESS_REASON, NoAnswer, Undecodable, Words, agent_error_text,
    check_file_text, check_or_signal_text, check_process_text, classified, classify, no_answer_reason,
    sdk_error_text, sdk_text_probe, unknown_outcome,
)
from .interrupt import (  # noqa: F401 (re-exported)
    CancelPick, InterruptPlan, interrupted_call, same_cancel, select_cancels,
)
from .state import (  # noqa: F401 (re-exported)
    CallState, CallStep, Phase, abort, owns,
)
from .cancel import (  # noqa: F401 (re-exported)
    CancelAnswer, HTTP_STATUS_TEXT, ToolCallProcess, begin_cancel, recorded_error_text,
    _read_cancel_answer,
)
from .lookup import (  # noqa: F401 (design variants, lookup.py)
    LOOKUP_NOT_FOUND, begin_attach, begin_lookup, lookup_failed, on_lookup_answer,
)
from .calls import (  # noqa: F401 (re-exported)
    begin_call, new_call_state, on_answer, on_timer,
)
from .dial import (  # noqa: F401 (re-exported)
    dial_failed_result, unreachable_result,
)
