"""What chatd commits for a tool call: ``Result`` and the texts the model sees.

Theory of operation
-------------------
Checkers read ``Result.kind`` (and ``reason``, ``process_id``, ``exit_code``); the chat
model reads ``content`` (Rule 8 of model/chattool/__init__.py). The execute tool's
content is ``ExecuteResult`` as Go marshals it (field order kept, empty fields omitted),
its output cut to 32 KB on a UTF-8 boundary (``truncateOutput``); the file tools' content
and plain error texts are built by their own modules from ``_text_error``. The kinds each
tool can produce are listed here (``EXECUTE_KINDS``, ``FILE_KINDS``) and checked by
model/vocabulary.py.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..core import Probe, probe
from ..gocompat.encoding import go_json
from .constants import EXECUTE, FILE_TOOLS, GENERIC_INTERRUPTED_TEXT, MAX_OUTPUT_TO_MODEL_BYTES


EXECUTE_KINDS = (
    "completed", "timed_out", "background_started", "canceled", "not_run", "unknown",
    "interrupted_generic", "failed",
)
FILE_KINDS = ("applied", "not_applied", "unknown", "failed", "interrupted_generic")
# ``not_found`` only in the first-attempt-only design variant (model/chattool/lookup.py).
UNKNOWN_REASONS = ("agent_restarted", "unreachable", "no_answer", "unreadable", "not_received", "no_process",
                   "not_found")


@dataclass(frozen=True)
class Result:
    """What chatd commits for one tool call. Checkers read ``kind`` (and ``reason``,
    ``process_id``, ``exit_code``), never ``content``."""

    kind: str
    is_error: bool
    content: str
    exit_code: int | None = None
    process_id: str | None = None
    reason: str | None = None
    wall_duration_ms: int | None = None


def truncate_output(output: str) -> str:
    """``truncateOutput``: at most 32 KB, cut on a UTF-8 boundary."""
    raw = output.encode("utf-8", errors="surrogateescape")
    if len(raw) <= MAX_OUTPUT_TO_MODEL_BYTES:
        return output
    return raw[:MAX_OUTPUT_TO_MODEL_BYTES].decode("utf-8", errors="ignore")


def execute_result_json(
    *,
    success: bool = False,
    output: str = "",
    exit_code: int = 0,
    wall_duration_ms: int = 0,
    error: str = "",
    note_text: str = "",
    background_process_id: str = "",
    backgrounded: bool = False,
) -> str:
    """``ExecuteResult`` marshaled in Go's field order, omitempty fields left out."""
    value: dict[str, Any] = {"success": success}
    if output:
        value["output"] = truncate_output(output)
    value["exit_code"] = exit_code
    value["wall_duration_ms"] = wall_duration_ms
    if error:
        value["error"] = error
    if note_text:
        value["note"] = note_text
    if background_process_id:
        value["background_process_id"] = background_process_id
    if backgrounded:
        value["backgrounded"] = True
    return go_json(value)


def generic_result() -> Result:
    """The result every interrupted call had before CODAGT-757 (3.3), and the fallback."""
    return Result("interrupted_generic", True, go_json({"error": GENERIC_INTERRUPTED_TEXT}))


def _text_error(kind: str, text: str, **fields: Any) -> Result:
    return Result(kind, True, text, **fields)


def _background_started(process_id: str) -> Result:
    return Result(
        "background_started", False,
        execute_result_json(success=True, background_process_id=process_id, backgrounded=True),
        process_id=process_id,
    )


# Rule coverage (model/probes.py): the row of a result table a finished call took. An
# execute call's result in generation is a row of docs/contract.md C5.2, on interrupt (its
# cancel's answer) one of C5.3; an edit_files or write_file result, in either, one of
# C5.4. Every row's probe is built here once, so each ID is a literal
# (tests/test_probes.py reads the call sites).
_EXECUTE_ROWS_IN_GENERATION = {
    "completed": probe("C5.2.completed"),
    "timed_out": probe("C5.2.timed-out"),
    "background_started": probe("C5.2.background-started"),
    "failed": probe("C5.2.failed"),
    "unknown": probe("C5.2.unknown"),
}
_EXECUTE_ROWS_ON_INTERRUPT = {
    "canceled": probe("C5.3.canceled"),
    "timed_out": probe("C5.3.timed-out"),
    "background_started": probe("C5.3.background-started"),
    "completed": probe("C5.3.completed"),
    "failed": probe("C5.3.failed"),
    "not_run": probe("C5.3.not-run"),
    "unknown": probe("C5.3.unknown"),
    "interrupted_generic": probe("C5.3.generic"),
}
_FILE_ROWS = {
    "applied": probe("C5.4.applied"),
    "not_applied": probe("C5.4.not-applied"),
    "unknown": probe("C5.4.unknown"),
    "failed": probe("C5.4.failed"),
    "interrupted_generic": probe("C5.4.generic"),
}


def result_row_probe(tool: str, on_interrupt: bool, kind: str) -> Probe | None:
    """The probe of the row ``kind`` of the table for ``tool`` (None: a tool without an
    agent side, whose placeholder result is no row of these tables)."""
    if tool == EXECUTE:
        return (_EXECUTE_ROWS_ON_INTERRUPT if on_interrupt else _EXECUTE_ROWS_IN_GENERATION).get(kind)
    if tool in FILE_TOOLS:
        return _FILE_ROWS.get(kind)
    return None
