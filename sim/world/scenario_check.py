"""What the scenario loader checks values with: one checker that turns the first bad value
into one line (``ScenarioError``), and the context a scenario's turns give its faults and
expectations (which tool calls, chats and replicas exist).

Its own module so that the loader (sim/world/scenario.py), the fault reader
(sim/world/scenario_faults.py) and the expectations reader (sim/world/scenario_expect.py) all
import it and none imports the loader (issue 33: no import circle). The rules it enforces are sim/world/scenario.py's (Rule 7 there: no raw control byte in
an error line).
"""

from __future__ import annotations

import re
import reprlib
from dataclasses import dataclass
from typing import Any

from toolcall_sim.model import vocabulary

from toolcall_sim.world.scenario_spec import ScenarioError, parse_duration

# Control characters (C0, DEL, C1): never printed raw to a terminal (Rule 7).
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f]")


# A value quoted in an error line: at most a few nested levels and some dozens of
# characters of it (a 1 MB list or a 5,000-deep table is no one line).
_SHORT = reprlib.Repr()
_SHORT.maxlevel, _SHORT.maxstring, _SHORT.maxother, _SHORT.maxlist, _SHORT.maxdict = 3, 60, 60, 6, 4


def _short(value: Any) -> str:
    return _SHORT.repr(value)


def _printable(text: str) -> str:
    """``text`` with every control character written as its escape (``\\x07``), so a line
    that quotes a user's bytes cannot move the cursor, ring or clear the terminal."""
    return _CONTROL.sub(lambda m: repr(m.group())[1:-1], text)



# ---------------------------------------------------------------------------
# Validation helpers
# ---------------------------------------------------------------------------


class _Checker:
    def __init__(self, path: str):
        self.path = path

    def fail(self, where: str, reason: str):
        raise ScenarioError(_printable(f"{self.path}: {where}: {reason}"))  # (Rule 7: no raw control bytes)

    def name(self, value: Any, where: str, empty_ok: bool = False) -> str:
        """A name the run prints or keys by (a scenario, chat, tool call, path, fault
        name): a string, not empty, no control character at all (Rule 7)."""
        text = self.text(value, where, allowed="")
        if not text and not empty_ok:
            self.fail(where, "must not be empty")
        return text

    def text(self, value: Any, where: str, allowed: str = "\t\n\r") -> str:
        """Free text (a summary, a command, a file's content): a string of at most
        ``MAX_TEXT_CHARS`` with no control character but those ``allowed`` (Rule 7)."""
        text = self.typed(value, str, where)
        if len(text) > vocabulary.MAX_TEXT_CHARS:
            self.fail(where, f"{len(text)} characters, over the cap of {vocabulary.MAX_TEXT_CHARS}")
        bad = next((ch for ch in _CONTROL.findall(text) if ch not in allowed), None)
        if bad is not None:
            self.fail(where, f"holds the control character {bad!r} at {text.index(bad)}"
                             + (" (only tab and newline are allowed here)" if allowed else " (not allowed in a name)"))
        return text

    def capped(self, value: Any, cap: int, where: str, what: str):
        """A list or table of at most ``cap`` entries (model/vocabulary.py's sizes)."""
        if len(value) > cap:
            self.fail(where, f"{len(value)} {what}, over the cap of {cap}")
        return value

    def bounded(self, value: Any, low: int, high: int, where: str, why: str = "") -> int:
        """An integer from ``low`` to ``high`` (inclusive)."""
        value = self.typed(value, int, where)
        if not low <= value <= high:
            self.fail(where, f"must be from {low} to {high}{why}, got {value}")
        return value

    def table(self, value: Any, where: str) -> dict:
        if not isinstance(value, dict):
            self.fail(where, f"expected a table, got {type(value).__name__}")
        return value

    def keys(self, table: dict, allowed, where: str):
        for key in table:
            if key not in allowed:
                self.fail(f"{where}.{key}" if where else key, f"unknown key (allowed: {', '.join(sorted(allowed))})")

    def typed(self, value: Any, kind, where: str):
        if type(value) is kind:
            return value  # exactly the type asked for (a bool is no int here: its type is bool)
        if kind == "duration":
            try:
                return parse_duration(value, where)
            except ScenarioError as err:
                self.fail(where, str(err).split(": ", 1)[1])
        if kind is int and (isinstance(value, bool) or not isinstance(value, int)):
            self.fail(where, f"expected an integer, got {_short(value)}")
        if kind is float and (isinstance(value, bool) or not isinstance(value, (int, float))):
            self.fail(where, f"expected a number, got {_short(value)}")
        if kind is str and not isinstance(value, str):
            self.fail(where, f"expected a string, got {_short(value)}")
        if kind is bool and not isinstance(value, bool):
            self.fail(where, f"expected true or false, got {_short(value)}")
        if kind is list and not isinstance(value, list):
            self.fail(where, f"expected a list, got {_short(value)}")
        if kind is dict and not isinstance(value, dict):
            self.fail(where, f"expected a table, got {_short(value)}")
        return value


@dataclass(frozen=True)
class _Context:
    ids: set
    tool_of: dict
    chat_of: dict
    chats: tuple
    replicas: tuple
    nodes: tuple
    provider_of: dict  # tool call id -> provider ID (what the world's records name)
    shared: set  # provider IDs used in more than one chat
    # tool call id -> every ToolCallSpec of its turn with its provider ID, in call order,
    # for a call whose provider ID another call of its assistant message has too
    copies: dict

    def provider(self, c: "_Checker", tool_call: str, where: str) -> str:
        """What the world names a tool call by (its provider ID), refused when another
        chat's call, or another call of its own assistant message, has the same one: the
        copies of a message carry the same tool call headers, so a trigger could not tell
        them apart."""
        provider = self.provider_of[tool_call]
        if provider in self.shared:
            c.fail(where, f"{tool_call}'s provider ID {provider!r} is shared by calls of several chats: "
                          "a message or event cannot tell them apart")
        if tool_call in self.copies:
            others = ", ".join(s.id for s in self.copies[tool_call] if s.id != tool_call)
            c.fail(where, f"{tool_call}'s provider ID {provider!r} is shared by {others} in the same assistant "
                          "message: a message or event cannot tell them apart (match by route and nth alone)")
        return provider
