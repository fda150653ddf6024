"""JSON a user hands the command line (counterexamples, traces, baselines), read strictly.

Theory of operation
-------------------
Rule 1. Only JSON: ``NaN``, ``Infinity`` and ``-Infinity``, which Python's ``json`` takes
        and no other JSON reader does, are refused, as is a duplicated key in one object
        (the second would silently win).
Rule 2. Bounded nesting: a file nested deeper than ``MAX_DEPTH`` arrays and objects is
        refused, whether Python's parser runs out of stack on it (``RecursionError``) or
        not (every reader after the parser would walk it again). No file this tool writes
        comes near: a counterexample is 5 levels deep, a trace line 4.
Rule 3. Every refusal is ``JSONRefused``, a ``ValueError`` whose message is one line
        naming the problem, for the caller to prefix with the file's name.
"""

from __future__ import annotations

import json

MAX_DEPTH = 64  # arrays and objects inside one another, at most


class JSONRefused(ValueError):
    """One line: why a JSON text is not taken (not JSON, NaN, nested too deep)."""


class NotJSON(JSONRefused):
    """The text does not parse as one JSON value at all (it may be JSON lines)."""


def _no_constant(name: str):
    raise JSONRefused(f"{name} is not a JSON number")


def _no_duplicates(pairs):
    out = {}
    for key, value in pairs:
        if key in out:
            raise JSONRefused(f"key {key!r} appears twice in one object")
        out[key] = value
    return out


def loads(text: str):
    """``json.loads`` under Rules 1-3."""
    try:
        doc = json.loads(text, parse_constant=_no_constant, object_pairs_hook=_no_duplicates)
    except RecursionError:
        raise JSONRefused(f"nested deeper than {MAX_DEPTH} levels") from None
    except JSONRefused:
        raise
    except ValueError as err:
        raise NotJSON(f"not JSON: {err}") from None
    if depth(doc) > MAX_DEPTH:
        raise JSONRefused(f"nested deeper than {MAX_DEPTH} levels")
    return doc


def depth(doc) -> int:
    """How many arrays and objects lie inside one another in ``doc`` (walked with a
    stack, not recursion, so a deep value cannot exhaust Python's)."""
    deepest = 0
    stack = [(doc, 1)]
    while stack:
        value, level = stack.pop()
        if isinstance(value, dict):
            children = value.values()
        elif isinstance(value, list):
            children = value
        else:
            continue
        deepest = max(deepest, level)
        if deepest > MAX_DEPTH:
            return deepest
        stack.extend((child, level + 1) for child in children)
    return deepest
