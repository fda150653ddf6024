"""The per-result context budget: a result is cut to fit the chat model's window.

Theory of operation
-------------------
Rule 9 of model/chattool/__init__.py (docs/contract.md C1.3 step 6, 3.2 step 3.7): before
the task commits a result, ``fit_result_to_context`` cuts it to
``tool_result_byte_budget`` of the context window with chatloop's head-and-tail cut and a
"Coder truncated" marker. The cut changes ``content`` only, never ``kind``, so checkers
see the same verdicts whatever the window.
"""

from __future__ import annotations

from ..core import replace
from ..gocompat.encoding import go_json, loads_go


# --- per-result context budget (docs/contract.md C1.3 step 6, 3.2 step 3.7) ----------
#
# Every committed tool result, live or from an interrupt's cancel answer, is cut to a
# byte budget derived from the chat model's context window, so one oversized result (a
# megabyte diff, a long output) cannot overflow the next prompt on its own. The rule is
# chatloop's tooltruncate.go (coder/coder coderd/x/chatd/chatloop): at most a third of
# the window at ~3 bytes per token, never below 16 KB, 64 KB when the window is unknown;
# the cut keeps a head (2/3) and a tail (1/3) around a marker that says how many bytes
# went. It sits on top of execute's own 32 KB output cap (``truncate_output``).
TOOL_RESULT_CONTEXT_DIVISOR = 3  # a result may take at most 1/3 of the window
BYTES_PER_TOKEN_ESTIMATE = 3  # conservative: dense JSON/log output runs below 4 bytes/token
MIN_TOOL_RESULT_BYTES = 16 * 1024  # the floor, so small windows still see useful output
DEFAULT_TOOL_RESULT_BYTES = 64 * 1024  # the window is unknown (context limit <= 0)
TRUNCATION_MARKER_RESERVE_BYTES = 256  # room kept for the marker: the result never exceeds the budget


def tool_result_byte_budget(context_limit_tokens: int) -> int:
    """``toolResultByteBudget``: the most bytes one tool result may put into the prompt
    for a model whose context window is ``context_limit_tokens`` (<= 0: unknown). Go then
    clamps the budget to the platform's int, which binds only on a 32-bit build (a window
    above 2^31 tokens): the model is of a 64-bit build, where an int64 window divided by
    3 and times 3 always fits, so it has no clamp."""
    if context_limit_tokens <= 0:
        return DEFAULT_TOOL_RESULT_BYTES
    budget_bytes = context_limit_tokens // TOOL_RESULT_CONTEXT_DIVISOR * BYTES_PER_TOKEN_ESTIMATE
    if budget_bytes < MIN_TOOL_RESULT_BYTES:
        return MIN_TOOL_RESULT_BYTES
    return budget_bytes


def _utf8_valid_part(raw: bytes) -> str:
    """The bytes as text with any partial rune at a cut dropped (Go's ToValidUTF8(s, ""))."""
    return raw.decode("utf-8", errors="ignore")


def truncate_tool_result_text(text: str, max_bytes: int) -> tuple[str, bool]:
    """``truncateToolResultText``: ``(text, False)`` when it fits (or ``max_bytes <= 0``);
    otherwise at most ``max_bytes`` of valid UTF-8: a head and a tail around the
    "Coder truncated N bytes" marker, or a plain head cut when the budget is too small
    to hold the marker and both ends."""
    raw = text.encode("utf-8", errors="surrogateescape")
    if max_bytes <= 0 or len(raw) <= max_bytes:
        return text, False
    if max_bytes <= TRUNCATION_MARKER_RESERVE_BYTES * 2:
        return _utf8_valid_part(raw[:max_bytes]), True
    avail = max_bytes - TRUNCATION_MARKER_RESERVE_BYTES
    head_bytes = avail * 2 // 3
    tail_bytes = avail - head_bytes
    head = _utf8_valid_part(raw[:head_bytes])
    tail = _utf8_valid_part(raw[len(raw) - tail_bytes:])
    removed = len(raw) - len(head.encode("utf-8")) - len(tail.encode("utf-8"))
    marker = (f"\n\n[... Coder truncated {removed} bytes to fit the model context; narrow the query "
              "or read a specific file or range for the full output ...]\n\n")
    return head + marker + tail, True


def _is_json(text: str) -> bool:
    try:
        loads_go(text)
    except ValueError:
        return False
    return True


def fit_result_to_context(result: "Result", max_bytes: int) -> "Result":
    """A committed result cut to the per-result budget, stored the way chatd stores a tool
    response (chatprompt's MarshalToolResultContent): a non-error text that is no longer
    JSON after the cut is stored as ``{"output": <cut text>}``; an error result keeps its
    (cut) text. ``kind`` and the other fields are unchanged: cutting never changes what
    the call did. A result that fits is returned as it is."""
    cut, truncated = truncate_tool_result_text(result.content, max_bytes)
    if not truncated:
        return result
    if not result.is_error and not _is_json(cut):
        cut = go_json({"output": cut})
    return replace(result, content=cut)
