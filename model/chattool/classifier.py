"""The classifier of failed agent requests, and the texts chatd writes for each class.

Theory of operation
-------------------
Rule 4 of model/chattool/__init__.py (docs/contract.md C5.1): a failed request becomes an
``AgentError`` of one ``ErrorClass``, decided by the first matching row of
``CLASSIFIER`` (NoAnswer, Refused, Response, Unreachable, Unreadable). The SDK's reading
of an HTTP error answer is model/sdk.py's. ``AGENT_ERROR_OUTCOMES`` maps a class (and a
refusal code) to a result kind and an unknown reason, or to "fall back" (Go's
``AgentErrorText`` with ok=false); ``agent_error_text`` fills in the words of the tool
at hand (``Words``: what may have happened, and how to check it). The execute tool's
start-error enrichments (a missing ``sh``, a file dumped with a shell command) are here
too, since they only rewrite texts.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import Enum
from typing import Any, Callable

from .. import identity as ident
from .. import sdk
from ..core import Probe, Response, TransportError, probe
from ..gocompat.duration import format_duration_ms
from .constants import AGENT_ANSWER_TIMEOUT_MS, EDIT_FILES, WRITE_FILE


class ErrorClass(str, Enum):
    NO_ANSWER = "NoAnswer"
    REFUSED = "Refused"
    RESPONSE = "Response"
    UNREACHABLE = "Unreachable"
    UNREADABLE = "Unreadable"


@dataclass(frozen=True)
class AgentError:
    """A failed agent request: its class, refusal code, and Go's ``err.Error()`` text.
    ``sentinel`` is the wrapped sentinel error's text that AgentErrorText words an unknown
    reason with: ErrAgentAnswerTimeout's for NoAnswer, else empty."""

    cls: ErrorClass
    text: str
    code: str = ""
    sentinel: str = ""


@dataclass(frozen=True)
class NoAnswer:
    """Our own agent answer timer ended the request (``ErrAgentAnswerTimeout``) after
    ``after_ms``, the answer timeout of the call's timing."""

    op: str  # "Post" / "Get": Go's url.Error Op
    url: str
    after_ms: int = AGENT_ANSWER_TIMEOUT_MS


@dataclass(frozen=True)
class Deadline:
    """A context deadline ended the request inside the transport (a ``*url.Error``)."""

    op: str
    url: str


@dataclass(frozen=True)
class Undecodable:
    """A 2xx answer whose body could not be read."""

    detail: str


def no_answer_reason(answer_timeout_ms: int) -> str:
    """ErrAgentAnswerTimeout's text. Go formats it from the answer timeout constant, so a
    scaled timing prints its own timeout ("... within 17ms"), as a Go build with that
    constant would."""
    return f"the workspace agent did not answer within {format_duration_ms(answer_timeout_ms)}"


NO_ANSWER_REASON = no_answer_reason(AGENT_ANSWER_TIMEOUT_MS)  # the reference text, "... 1m0s"
AGENT_RESTARTED_REASON = "the workspace agent restarted after this tool call"
NO_PROCESS_REASON = "the workspace agent reported no process for this tool call"


def _is_2xx(status: int) -> bool:
    return 200 <= status < 300


def _is_refusal(failure: Any) -> bool:
    return isinstance(failure, Response) and ident.read_tool_call_error(failure.status, failure.body) is not None


# Section 5.1 ClassifyAgentError, checked top to bottom; the first matching row wins.
CLASSIFIER: tuple[tuple[str, Callable[[Any], bool], ErrorClass], ...] = (
    ("our agent answer timer fired", lambda f: isinstance(f, NoAnswer), ErrorClass.NO_ANSWER),
    ("409 with a known code", _is_refusal, ErrorClass.REFUSED),
    ("any other HTTP error answer the SDK reads as a *codersdk.Error, 404 included",
     lambda f: isinstance(f, Response) and not _is_2xx(f.status) and _is_sdk_error(f), ErrorClass.RESPONSE),
    ("transport failure or a deadline inside the transport",
     lambda f: isinstance(f, (TransportError, Deadline)), ErrorClass.UNREACHABLE),
    ("anything else: an answer that could not be read", lambda f: True, ErrorClass.UNREADABLE),
)


def _is_sdk_error(failure: Response) -> bool:
    """Whether ``codersdk.ReadBodyAsError`` makes a ``*codersdk.Error`` of this answer; a
    JSON body it cannot decode is a plain ``decode body`` error instead (model/sdk.py), which
    ClassifyAgentError puts under "anything else"."""
    return isinstance(sdk.read_body_as_error(failure.status, failure.content_type, failure.body), sdk.SDKError)


def sdk_error_text(status: int, content_type: str, body: bytes) -> str:
    """``codersdk.ReadBodyAsError(...).Error()`` without method and URL (model/sdk.py has
    the rules: a JSON body gives its message and detail, or "response has no message" with
    the body; an empty JSON body "empty response body"; anything else names the content
    type and quotes the body, "no response body" when empty)."""
    return sdk.read_body_as_error(status, content_type, body).text()


def classify(failure: Any, op: str = "", url: str = "") -> AgentError:
    """Classify one failed request (Rule 4). ``failure`` is a non-2xx ``Response``, a
    ``TransportError``, a ``NoAnswer``, a ``Deadline`` or an ``Undecodable``; ``op`` and
    ``url`` name the request in a transport error's text, as Go's ``*url.Error`` does."""
    cls = next(c for _, match, c in CLASSIFIER if match(failure))
    if cls is ErrorClass.NO_ANSWER:
        # AwaitAgentAnswer wraps the request's own error with ErrAgentAnswerTimeout.
        reason = no_answer_reason(failure.after_ms)
        return AgentError(cls, f'{failure.op} "{failure.url}": context canceled: {reason}', sentinel=reason)
    if cls is ErrorClass.REFUSED:
        refusal = ident.read_tool_call_error(failure.status, failure.body)
        assert refusal is not None
        return AgentError(cls, refusal.text(), refusal.code)
    if cls is ErrorClass.RESPONSE:
        return AgentError(cls, sdk_error_text(failure.status, failure.content_type, failure.body))
    if isinstance(failure, Deadline):
        return AgentError(cls, f'{failure.op} "{failure.url}": context deadline exceeded')
    if isinstance(failure, TransportError):
        return AgentError(cls, f'{op} "{url}": {failure.reason}' if url else failure.reason)
    if isinstance(failure, Response):
        # An error answer whose JSON body ReadBodyAsError could not decode ("decode body").
        return AgentError(cls, sdk.read_body_as_error(failure.status, failure.content_type, failure.body).text())
    return AgentError(cls, failure.detail if isinstance(failure, Undecodable) else str(failure))


def unknown_outcome(reason: str, effect: str, check: str) -> str:
    """``UnknownOutcome``: ``outcome unknown: <reason>, so <effect>. <check>``."""
    return f"outcome unknown: {reason}, so {effect}. {check}"


def _reason_text(reason: str, err: AgentError) -> str:
    texts = {
        "agent_restarted": AGENT_RESTARTED_REASON,
        "unreachable": f"the workspace agent could not be reached ({err.text})",
        "unreadable": f"the workspace agent's answer could not be read ({err.text})",
        "no_answer": err.sentinel,
    }
    return texts[reason]


@dataclass(frozen=True)
class Words:
    """``AgentErrorWords``: how one tool words its results."""

    action: str = ""
    existing: str = ""
    effect: str = ""
    check: str = ""
    restarted_effect: str = ""
    restarted_check: str = ""


# Section 5.1 AgentErrorText: (class, refusal code) -> (result kind, unknown reason).
# None means ok=false: the caller falls back (legacy text in generation, generic on
# interrupt), because only a stale attempt whose commit fails the fence sees it, or the
# agent answered with an ordinary HTTP error.
AGENT_ERROR_OUTCOMES: dict[tuple[ErrorClass, str], tuple[str, str] | None] = {
    (ErrorClass.REFUSED, ident.AGENT_STARTED_AFTER_TOOL_CALL): ("unknown", "agent_restarted"),
    (ErrorClass.REFUSED, ident.INPUT_MISMATCH): ("failed", ""),
    (ErrorClass.REFUSED, ident.STALE_TOOL_CALL): None,
    (ErrorClass.REFUSED, ident.TOOL_CALL_CANCELED): None,
    (ErrorClass.RESPONSE, ""): None,
    (ErrorClass.UNREACHABLE, ""): ("unknown", "unreachable"),
    (ErrorClass.UNREADABLE, ""): ("unknown", "unreadable"),
    (ErrorClass.NO_ANSWER, ""): ("unknown", "no_answer"),
}


def agent_error_text(err: AgentError, words: Words) -> tuple[str, str, str] | None:
    """``(kind, reason, text)`` for a classified error, or None to fall back."""
    outcome = AGENT_ERROR_OUTCOMES[(err.cls, err.code)]
    if outcome is None:
        return None
    kind, reason = outcome
    if reason == "agent_restarted":
        return kind, reason, unknown_outcome(
            AGENT_RESTARTED_REASON, words.restarted_effect or words.effect, words.restarted_check or words.check
        )
    if kind == "failed":
        return kind, reason, (
            f"{words.action}: this request changed nothing because {words.existing} already exists "
            f"with a different input: {err.text}"
        )
    return kind, reason, unknown_outcome(_reason_text(reason, err), words.effect, words.check)


# Words of each tool and context (sections 5.2, 5.3, 5.4).
_RESTARTED_COMMAND = "the command may have run before the restart"
_RESTARTED_CHECK = "Check the workspace state before running it again."


def check_process_text(process_id: str) -> str:
    return f"Check it with process_output using process ID {process_id}."


def check_or_signal_text(process_id: str) -> str:
    return f"Check or signal it with process_output or process_signal using process ID {process_id}."


def check_file_text(uuid: str) -> str:
    return f"Check the file before changing it again (tool call {uuid})."


def _start_words(uuid: str, background: bool) -> Words:
    return Words(
        action="start background process" if background else "start process",
        existing=f"a process for this tool call (process ID {uuid})",
        effect="the command may have started",
        check=check_process_text(uuid),
        restarted_effect=_RESTARTED_COMMAND,
        restarted_check=_RESTARTED_CHECK,
    )


def _interrupt_words(uuid: str, background: bool) -> Words:
    return Words(
        effect="the command may be running in the background" if background else "the command may still be running",
        check=check_or_signal_text(uuid),
        restarted_effect=_RESTARTED_COMMAND,
        restarted_check=_RESTARTED_CHECK,
    )


_FILE_TEXTS = {
    # tool: (action, existing record, change)
    EDIT_FILES: ("edit files", "an edit for this tool call", "edit"),
    WRITE_FILE: ("write file", "a write for this tool call", "write"),
}


def _file_words(tool: str, uuid: str) -> Words:
    action, existing, change = _FILE_TEXTS[tool]
    return Words(
        action=action,
        existing=existing,
        effect=f"the {change} may have been applied",
        check=check_file_text(uuid),
        restarted_effect=f"the {change} may have been applied before the restart",
    )


_SH_NOT_FOUND_FRAGMENT = 'exec: "sh": executable file not found'
_SH_NOT_FOUND_GUIDANCE = (
    'The workspace has no POSIX shell (sh) on its PATH. Coder Agents run commands with "sh -c". '
    "On Windows, install sh via Git Bash, MSYS2, or WSL, then restart the workspace to pick up the "
    "updated PATH."
)


def _enrich_start_error(text: str) -> str:
    if _SH_NOT_FOUND_FRAGMENT in text:
        return text + "\n\n" + _SH_NOT_FOUND_GUIDANCE
    return text


# ``fileDumpPatterns``: commands that dump whole files get an advisory note.
_FILE_DUMP_PATTERNS = (
    re.compile(r"^cat\s+"),
    re.compile(r"^(rg|grep)\s+.*--include-all"),
    re.compile(r"^(rg|grep)\s+-l\s+"),
)
_FILE_DUMP_NOTE = "Consider using read_file instead of dumping file contents with shell commands."


def _file_dump_note(command: str) -> str:
    return _FILE_DUMP_NOTE if any(p.search(command) for p in _FILE_DUMP_PATTERNS) else ""


# Rule coverage (model/probes.py): the class ``classify`` gave a failed request (C5.1),
# and the SDK's reading of an HTTP error answer a result quotes (C5.5: a JSON body with a
# message, any other JSON body, or not JSON).
_CLASS_PROBES = {
    ErrorClass.NO_ANSWER: probe("C5.1.no-answer"),
    ErrorClass.REFUSED: probe("C5.1.refused"),
    ErrorClass.RESPONSE: probe("C5.1.response"),
    ErrorClass.UNREACHABLE: probe("C5.1.unreachable"),
    ErrorClass.UNREADABLE: probe("C5.1.unreadable"),
}
_SDK_JSON_MESSAGE = probe("C5.5.json-message")
_SDK_JSON_OTHER = probe("C5.5.json-without-message")
_SDK_NOT_JSON = probe("C5.5.not-json")


def classified(step: tuple, err: AgentError) -> tuple:
    """A call's step after a failure, with the probe of the failure's class in front."""
    cs, effects = step
    return cs, (_CLASS_PROBES[err.cls], *effects)


def sdk_text_probe(failure: Any) -> Probe | None:
    """The probe of the SDK text an HTTP error answer (not a coded refusal) is quoted
    with, or None for anything else."""
    if not isinstance(failure, Response) or _is_2xx(failure.status) or _is_refusal(failure):
        return None
    read = sdk.read_body_as_error(failure.status, failure.content_type, failure.body)
    if sdk.media_type(failure.content_type) != "application/json":
        return _SDK_NOT_JSON
    # (the SDK's own fallback messages: an empty body, or a JSON body without a message)
    fallbacks = ("empty response body", f"unexpected status code {failure.status}, response has no message")
    if isinstance(read, sdk.SDKError) and read.message not in fallbacks:
        return _SDK_JSON_MESSAGE
    return _SDK_JSON_OTHER
