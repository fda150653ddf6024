"""A tool call, its identity and age, and the execute tool's arguments.

Theory of operation
-------------------
``ToolCall`` is what the assistant message committed (provider ID, tool, raw JSON
arguments). ``Identity`` and ``ToolCallAge`` are what design B adds to it (Rule 1 of
model/chattool/__init__.py; docs/contract.md C4.1): the tool call UUID (model/identity.py)
and an age that never compares clocks. The execute arguments are decoded as Go's
``json.Unmarshal`` into ``ExecuteArgs`` would (wrong types are refused with Go's
wording), and ``effective_timeout_ms`` is the timeout a foreground execute runs with:
the argument parsed by ``time.ParseDuration`` (model/gocompat/duration.py), else the
timing's execute default.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from .. import identity as ident
from ..core import CachedRepr
from ..gocompat.duration import DurationError, parse_duration_ms
from ..gocompat.encoding import json_quote, json_type_name, loads_go
from ..timing import DEFAULT_TIMING, Timing
from .constants import EXECUTE


@dataclass(frozen=True)
class ToolCallAge:
    """Time since the tool call was committed, without comparing clocks.

    ``at_read_ms`` = db_now - created_at, both from the database clock; ``read_at_ms`` is
    the replica's own clock at that read. ``read_at_ms=None`` is Go's zero value (no
    clock), which reports 0.
    """

    at_read_ms: int = 0
    read_at_ms: int | None = None

    @classmethod
    def from_db(cls, db_now_ms: int, committed_at_ms: int, read_at_ms: int) -> "ToolCallAge":
        return cls(db_now_ms - committed_at_ms, read_at_ms)

    def now(self, now_ms: int) -> int:
        if self.read_at_ms is None:
            return 0
        return max(self.at_read_ms + (now_ms - self.read_at_ms), 0)


@dataclass(frozen=True)
class Identity:
    """``ToolCallIdentity``: the chat, the assistant message holding the call, the
    provider tool call ID, and the age shared by one attempt's calls."""

    chat_id: str
    message_id: int
    tool_call_id: str
    age: ToolCallAge = ToolCallAge()
    # The incarnation-token design only (model/designs.py): the agent incarnation stored
    # for this call before its first request, sent on every request. None: not sent.
    incarnation: int | None = None

    @property
    def uuid(self) -> str:
        return ident.tool_call_uuid(self.chat_id, self.message_id, self.tool_call_id)


@dataclass(frozen=True, repr=False)
class ToolCall(CachedRepr):
    """One tool call of the assistant message, as committed: provider ID, tool name and
    the raw JSON arguments the model produced."""

    provider_id: str
    tool: str
    args_json: str


# ---------------------------------------------------------------------------
# execute arguments
# ---------------------------------------------------------------------------


class ArgsError(ValueError):
    """The arguments do not decode into the tool's argument struct."""


class InvalidTimeout(ValueError):
    """The timeout argument is not a Go duration; the message is the tool's text."""


@dataclass(frozen=True)
class ExecuteArgs:
    command: str = ""
    timeout: str | None = None
    run_in_background: bool | None = None
    workdir: str | None = None


# Go's json.Unmarshal into ExecuteArgs: the JSON type each known field must have. A null
# leaves a field at its zero value; unknown fields are ignored.
_EXECUTE_ARG_TYPES: dict[str, tuple[type, str]] = {
    "command": (str, "string"),
    "timeout": (str, "string"),
    "run_in_background": (bool, "bool"),
    "workdir": (str, "string"),
    "model_intent": (str, "string"),
}


@lru_cache(maxsize=4096)  # pure, and asked of the same arguments on every retry and by the checkers
def parse_execute_args(args_json: str) -> ExecuteArgs:
    try:
        value = loads_go(args_json)
    except ValueError as err:
        raise ArgsError(f"invalid parameters: {err}") from None
    if value is None:
        return ExecuteArgs()
    if not isinstance(value, dict):
        raise ArgsError(f"invalid parameters: json: cannot unmarshal {json_type_name(value)} "
                        "into Go value of type chattool.ExecuteArgs")
    fields: dict[str, Any] = {}
    for name, (py_type, go_type) in _EXECUTE_ARG_TYPES.items():
        if name not in value or value[name] is None:
            continue
        item = value[name]
        if not isinstance(item, py_type) or (py_type is not bool and isinstance(item, bool)):
            raise ArgsError(
                f"invalid parameters: json: cannot unmarshal {json_type_name(item)} into Go struct field "
                f"ExecuteArgs.{name} of type {go_type}"
            )
        fields[name] = item
    fields.pop("model_intent", None)
    return ExecuteArgs(**fields)


def strip_trailing_ampersand(command: str) -> tuple[str, bool]:
    """A shell-style trailing "&" (not "&&" or "|&"): the command without it, and whether
    it had one. Models sometimes write "cmd &" instead of run_in_background."""
    trimmed = command.strip()
    if not trimmed.endswith("&") or trimmed.endswith("&&") or trimmed.endswith("|&"):
        return command, False
    return trimmed[:-1].strip(), True


def runs_in_background(args: ExecuteArgs) -> bool:
    if args.run_in_background:
        return True
    return strip_trailing_ampersand(args.command)[1]


def call_target(call: ToolCall) -> str:
    """What a call acts on, as the agent will see it: an execute call's command (without
    the trailing "&" that only means background), a file tool's (first) path; "" when
    the arguments cannot be read. Used to tell which call a header-less request serves."""
    try:
        value = json.loads(call.args_json)
    except ValueError:
        return ""
    if not isinstance(value, dict):
        return ""
    if call.tool == EXECUTE:
        return strip_trailing_ampersand(str(value.get("command", "")))[0].strip()
    files = value.get("files")
    if isinstance(files, list) and files and isinstance(files[0], dict):
        return str(files[0].get("path", ""))
    return str(value.get("path", ""))


def effective_timeout_ms(args: ExecuteArgs, timing: Timing = DEFAULT_TIMING) -> int:
    """The timeout argument, or the timing's execute default (10 s); no maximum in design B."""
    if args.timeout is None:
        return timing.execute_default_timeout_ms
    try:
        return parse_duration_ms(args.timeout)
    except DurationError as err:
        raise InvalidTimeout(f"invalid timeout {json_quote(args.timeout)}: {err}") from None
