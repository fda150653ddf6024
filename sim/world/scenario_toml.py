"""Writing scenario files: a scenario dict as the TOML a person would write.

Theory of operation
-------------------
sim/world/scenario.py reads a scenario file (TOML) into a dict and validates it; this module
goes the other way, for the dicts swarm draws and minimizes (sim/world/stories.py,
sim/drivers/minimize.py), so that files are read and written in one place. ``to_toml`` writes
top-level tables as ``[section]``s (a nested table holding multi-line strings becomes
``[section.sub]``), top-level lists of tables as ``[[turns]]``/``[[faults]]``, a list of
tables inside a table as a multi-line array of inline tables (``tool_calls = [ {...},
... ]``, as the shipped scenarios write it), and everything else inline.

Rule 1. The text is the dict, exactly: ``exact_toml`` parses what it wrote and refuses
        to hand out a text that reads back as anything else (a value with no faithful
        TOML form raises instead of being written wrong).
"""

from __future__ import annotations

import json
import re
import tomllib

_BARE_KEY = re.compile(r"^[A-Za-z0-9_-]+$")


def _key(k: str) -> str:
    return k if _BARE_KEY.match(k) else json.dumps(k, ensure_ascii=False)


def _inline(value) -> str:
    """A TOML value on one line. JSON string escapes (\\n, \\", \\uXXXX) are TOML basic
    string escapes too."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, list):
        return "[" + ", ".join(_inline(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{ " + ", ".join(f"{_key(k)} = {_inline(v)}" for k, v in value.items()) + " }" if value else "{}"
    raise TypeError(f"no TOML form for {type(value).__name__}")


def _body(table: dict) -> list[str]:
    """The key/value lines of one table; a list of tables becomes a multi-line array of
    inline tables (``tool_calls = [ {...}, ... ]``, as the shipped scenarios write it)."""
    lines = []
    for k, v in table.items():
        if isinstance(v, list) and v and all(isinstance(x, dict) for x in v):
            lines.append(f"{_key(k)} = [")
            lines.extend(f"  {_inline(x)}," for x in v)
            lines.append("]")
        else:
            lines.append(f"{_key(k)} = {_inline(v)}")
    return lines


def to_toml(data: dict) -> str:
    """The scenario dict as a TOML scenario file. Top-level tables become ``[section]``s
    (a nested table holding multi-line strings becomes ``[section.sub]``), top-level lists
    of tables become ``[[turns]]``/``[[faults]]``; everything else is inline."""
    head, sections, arrays = [], [], []
    for k, v in data.items():
        if isinstance(v, dict):
            plain = {kk: vv for kk, vv in v.items() if not (isinstance(vv, dict) and _multiline(vv))}
            sections.append(f"\n[{_key(k)}]")
            sections.extend(_body(plain))
            for kk, vv in v.items():
                if kk not in plain:
                    sections.append(f"\n[{_key(k)}.{_key(kk)}]")
                    sections.extend(_body(vv))
        elif isinstance(v, list) and v and all(isinstance(x, dict) for x in v):
            for x in v:
                arrays.append(f"\n[[{_key(k)}]]")
                arrays.extend(_body(x))
        elif isinstance(v, list) and not v:
            head.append(f"{_key(k)} = []")
        else:
            head.append(f"{_key(k)} = {_inline(v)}")
    return "\n".join(head + sections + arrays) + "\n"


def _multiline(table: dict) -> bool:
    return any(isinstance(v, str) and "\n" in v for v in table.values())



def exact_toml(data: dict) -> str:
    """``to_toml(data)``, checked (Rule 1): raises ValueError if it reads back as
    anything but ``data``."""
    text = to_toml(data)
    if tomllib.loads(text) != data:
        raise ValueError(f"TOML writer lost information for scenario {data.get('name')!r}")
    return text
