"""What a user reads in a crafted request's answer: reading ``[expect.<variant>.requests]``
and judging a run's answers by it.

Theory of operation
-------------------
A ``request`` fault's answer is a ``probe_answer`` record (model/system.py Rule 7): its
HTTP status and its body text, as the agent wrote them. A story says what that answer
shows with the fields of model/vocabulary.py ``EXPECT_ANSWER_FIELDS``: its ``status``
everywhere; for a process list (route ``list``) the ``processes`` it names and which of
them have ``exited`` with which exit code; for a process output read (route ``output``)
whether it is ``running``, its ``exit_code`` and text its ``output`` contains.

``read_answer_expectation`` is the loader's half: one expectation, a bare status or a
table, checked against the request's route (a field the route's answer never has is bad
input, exit 2) and against the tool calls (a process is named by its execute call's
scenario ``id``). It returns the fields as sorted ``(name, value)`` pairs.

``answer_failures`` is the run's half. The agent names a process by an ID of its own
(the tool call UUID under the contract, ``proc-<boot>-<n>`` without tool call headers),
so the run hands in ``process_names``, each process ID the trace started with the
scenario ``id`` of the call that started it; an ID no call started is shown as itself.
A list compares as a multiset (a chat's next message may run the same call ``id`` again).
"""

from __future__ import annotations

import json
from typing import Any

from toolcall_sim.model import vocabulary

from toolcall_sim.world.scenario_check import _Checker, _Context


def read_answer_expectation(c: _Checker, where: str, value: Any, route: str, ctx: _Context) -> tuple:
    """``name = 404`` or ``name = { status = 200, processes = [...], ... }`` of a request
    on ``route``: the fields as sorted ``(name, value)`` pairs."""
    if not isinstance(value, dict):
        return (("status", _status(c, value, where)),)
    fields = vocabulary.EXPECT_ANSWER_FIELDS
    c.keys(value, fields, where)
    if not value:
        c.fail(where, f"says nothing about the answer (fields: {', '.join(fields)})")
    out: dict[str, Any] = {}
    for key, raw in value.items():
        at = f"{where}.{key}"
        if route not in fields[key].routes:
            c.fail(at, f"a {route} answer has no {key} (only a {' or '.join(fields[key].routes)} answer has)")
        if key == "status":
            out[key] = _status(c, raw, at)
        elif key == "processes":
            names = tuple(_execute_call(c, v, at, ctx) for v in c.capped(c.typed(raw, list, at), vocabulary.MAX_ITEMS,
                                                                         at, "processes"))
            if len(names) > _LISTED_AT_MOST:
                c.fail(at, f"names {len(names)} processes: a list names at most {_LISTED_AT_MOST}")
            out[key] = tuple(sorted(names))
        elif key == "exited":
            table = c.capped(c.table(raw, at), vocabulary.MAX_ITEMS, at, "processes")
            out[key] = tuple(sorted(
                (_execute_call(c, name, f"{at}.{name}", ctx),
                 c.bounded(code, vocabulary.RESULT_EXIT_CODE_MIN, vocabulary.EXIT_CODE_MAX, f"{at}.{name}",
                           " (an exit code; -1: killed)"))
                for name, code in table.items()))
        elif key == "running":
            out[key] = c.typed(raw, bool, at)
        elif key == "exit_code":
            out[key] = c.bounded(raw, vocabulary.RESULT_EXIT_CODE_MIN, vocabulary.EXIT_CODE_MAX, at,
                                 " (an exit code; -1: killed)")
        else:  # output
            out[key] = c.text(raw, at)
    # What no answer could show is bad input, not "not met".
    if "processes" in out and "exited" in out:
        unlisted = sorted({name for name, _ in out["exited"]} - set(out["processes"]))
        if unlisted:
            c.fail(f"{where}.exited", f"{', '.join(unlisted)} exited but is not among the listed processes")
    if out.get("running") is True and "exit_code" in out:
        c.fail(f"{where}.exit_code", "a running process has no exit code yet")
    return tuple(sorted(out.items()))


# handleListProcesses' cap (model/agent/processes.py MAX_LIST_PROCESSES, not imported: a
# loader check does not need the agent package).
_LISTED_AT_MOST = 10


def _status(c: _Checker, value: Any, where: str) -> int:
    return c.bounded(value, vocabulary.HTTP_STATUS_MIN, vocabulary.HTTP_STATUS_MAX, where, " (an HTTP status)")


def _execute_call(c: _Checker, name: Any, where: str, ctx: _Context) -> str:
    name = c.typed(name, str, where)
    if name not in ctx.ids:
        c.fail(where, f"names a tool call that does not exist: {name!r}")
    if ctx.tool_of[name] != "execute":
        c.fail(where, f"{name} is a {ctx.tool_of[name]} call: only an execute call starts a process")
    return name


def answer_failures(name: str, wanted: tuple, answer: dict | None, process_names: dict[str, str]) -> list[str]:
    """What ``answer`` (the first ``probe_answer`` record of request ``name``, None when it
    never came) does not show of ``wanted`` (``read_answer_expectation``'s pairs), one
    line each."""
    where = f"requests.{name}"
    if answer is None:
        return [f"{where}: expected {_words(wanted)}, got no answer"]
    out = []
    status = answer.get("status")
    body = _json(answer.get("body"))
    for key, value in wanted:
        if key == "status":
            if status != value:
                out.append(f"{where}: expected status {value}, got {status}")
            continue
        got = _read(key, body, process_names)
        if got is _MISSING:
            out.append(f"{where}.{key}: the answer ({status} {_short(answer.get('body'))}) has no {key}")
        elif key == "output":
            if value not in got:
                out.append(f"{where}.output: expected it to contain {value!r}, got {_short(got)!r}")
        elif _key(got) != _key(value):
            out.append(f"{where}.{key}: expected {_shown(key, value)}, got {_shown(key, got)}")
    return out


_MISSING = object()


def _read(key: str, body: Any, process_names: dict[str, str]) -> Any:
    """The answer's ``key`` as an expectation states it, or ``_MISSING``."""
    if not isinstance(body, dict):
        return _MISSING
    if key in ("processes", "exited"):
        rows = body.get("processes")
        if not isinstance(rows, list) or not all(isinstance(r, dict) for r in rows):
            return _MISSING
        named = [(process_names.get(r.get("id"), r.get("id")), r) for r in rows]
        if key == "processes":
            return tuple(sorted(str(n) for n, _ in named))
        return tuple((str(n), r.get("exit_code")) for n, r in named if r.get("running") is False)
    if key == "exit_code":  # ``omitempty``: absent while the process runs
        return body.get("exit_code")
    return body.get(key, _MISSING)


def _json(text: Any) -> Any:
    try:
        return json.loads(text) if isinstance(text, str) else None
    except ValueError:
        return None


def _key(value: Any) -> Any:
    """A list or table compares as a multiset, whatever its order (and an exit code that
    is missing, None, still compares)."""
    return sorted(map(repr, value)) if isinstance(value, tuple) else value


def _shown(key: str, value: Any) -> str:
    """A value as the scenario file writes it: a list, a table, a number or true/false."""
    if key == "exited":
        return "{ " + ", ".join(f"{k} = {_shown('', v)}" for k, v in sorted(value, key=repr)) + " }" if value else "{}"
    if isinstance(value, tuple):
        return "[" + ", ".join(sorted(value)) + "]"
    if isinstance(value, bool):
        return "true" if value else "false"
    return "none" if value is None else str(value)


def _words(wanted: tuple) -> str:
    return ", ".join(f"{k} {_shown(k, v)}" for k, v in wanted)


def _short(text: Any) -> str:
    text = str(text)
    return text if len(text) <= 100 else text[:97] + "..."
