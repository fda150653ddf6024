"""Expectations: a scenario's ``[expect.<variant>]`` tables, read and checked before
anything runs.

Theory of operation
-------------------
An expectations block says, per variant (``contract``, ``today``, a planted bug's
``contract+<bug>``: whatever model/planted_bugs.py resolves), what a run of the scenario
under that variant must show: per tool call, by its ``id``, counts (process starts, edits
applied, processes killed or running at the end), the kinds of its results in order
(``results``) and the fields of its first one (``result = {...}``); for the whole run, the
properties it violates, its residual risks, the sometimes-properties it reaches, how
soon an interrupt finishes, the faults that never fire, what each crafted request's
answer shows (sim/world/answers.py), how many records the agent holds per chat at the
end, and at which seeds all this holds (``seeds``).

Here it is only read, never judged: whether a run meets it is decided after the run
(sim/world/run.py ``expectation_failures``). Reading refuses, as one line (the loader's
``ScenarioError``, sim/world/scenario.py's Rules 3, 4 and 7), a name the scenario does
not define (a tool call, a request fault, a chat, a replica, a fault's index), a word the
vocabulary does not know, and an expectation no run could meet: a negative count, a count
or a result kind the call's tool never makes, a name twice, a ``result`` that contradicts
``results`` or whose commit bounds leave no millisecond between them.

Its own module because it is a reader apart, with words of its own (model/vocabulary.py's
``EXPECT_*``): the last section read, it needs only what the sections before it built (the
checker and the context of sim/world/scenario_check.py, the request faults' names, the
number of faults) and returns an ``Expectation`` (sim/world/scenario_spec.py). The loader
imports it (``read_expect``, and ``_a``, the "an execute" wording its tool call reader
shares); it never imports the loader (issue 33: no import circle).
"""

from __future__ import annotations

from typing import Any

from toolcall_sim.model import vocabulary

from toolcall_sim.world.answers import read_answer_expectation
from toolcall_sim.world.scenario_check import _Checker, _Context
from toolcall_sim.world.scenario_faults import _one_of
from toolcall_sim.world.scenario_spec import Expectation, format_duration


def read_expect(c: _Checker, value: Any, ctx: _Context, request_names: dict[str, str], faults: int) -> tuple:
    """``[expect.<variant>]``: what a run under that variant must show, by variant name."""
    expect = []
    for var, spec in sorted(c.table(value, "expect").items()):
        expect.append((var, _expectation(c, var, spec, ctx, request_names, faults)))
    return tuple(expect)


def _expectation(c: _Checker, var: str, spec: Any, ctx: _Context, request_names: dict[str, str],
                 faults: int) -> Expectation:
    from toolcall_sim.model import planted_bugs
    from toolcall_sim.model import properties as props

    where = f"expect.{var}"
    try:
        planted_bugs.resolve(var)
    except planted_bugs.UnknownVariant as err:
        c.fail(where, str(err))
    spec = c.table(spec, where)
    kinds = {p.name: p.kind for p in props.PROPERTIES}

    def names(key: str, known, what: str) -> tuple[str, ...]:
        out = tuple(c.typed(v, str, f"{where}.{key}") for v in c.typed(spec[key], list, f"{where}.{key}"))
        for n in out:
            if n not in known:
                c.fail(f"{where}.{key}", f"unknown {what} {n!r} (known: {', '.join(sorted(known))})")
        if len(set(out)) != len(out):  # (the run's set of names could never equal a list with a repeat)
            c.fail(f"{where}.{key}", f"names a {what} twice: it could never be met")
        return out

    calls = []
    violations = residual = None
    sometimes: tuple[str, ...] = ()
    within = None
    requests: tuple = ()
    records_at_end: tuple = ()
    seeds = "any"
    never: tuple[int, ...] = ()
    for key, value in spec.items():
        if key == "violations":
            violations = names(key, [n for n, k in kinds.items() if k != "sometimes"], "property")
        elif key == "residual_risks":
            residual = names(key, props.RESIDUAL_RISKS, "residual risk")
        elif key == "sometimes":
            sometimes = names(key, [n for n, k in kinds.items() if k == "sometimes"], "sometimes-property")
        elif key == "interrupt_finished_within":
            within = c.typed(value, "duration", f"{where}.{key}")
        elif key == "faults_never_fired":
            never = tuple(c.bounded(i, 0, faults - 1, f"{where}.{key}", f" (indexes of the {faults} faults)")
                          for i in c.typed(value, list, f"{where}.{key}")) if faults else ()
            if value and not faults:
                c.fail(f"{where}.{key}", "the scenario has no faults")
            if len(set(never)) != len(never):
                c.fail(f"{where}.{key}", "names a fault twice")
        elif key == "requests":
            table = c.table(value, f"{where}.requests")
            answers = []
            for rname, wanted in table.items():
                if rname not in request_names:
                    c.fail(f"{where}.requests.{rname}", f"no request fault has that name (requests: {', '.join(request_names) or 'none'})")
                answers.append((rname, read_answer_expectation(c, f"{where}.requests.{rname}", wanted,
                                                               request_names[rname], ctx)))
            requests = tuple(sorted(answers))
        elif key == "records_at_end":
            table = c.capped(c.table(value, f"{where}.{key}"), vocabulary.MAX_CHATS, f"{where}.{key}", "chats")
            records_at_end = tuple(sorted(
                (_one_of(c, chat, f"{where}.{key}.{chat}", "chat", ctx.chats),
                 c.bounded(count, 0, vocabulary.MAX_TOOL_CALLS, f"{where}.{key}.{chat}", " (records held)"))
                for chat, count in table.items()))
        elif key == "seeds":
            seeds = c.typed(value, str, f"{where}.seeds")
            if seeds not in vocabulary.EXPECT_SEEDS:
                c.fail(f"{where}.seeds", f"expected one of {', '.join(vocabulary.EXPECT_SEEDS)}, got {seeds!r}")
        elif key not in ctx.ids:
            c.fail(f"{where}.{key}", f"names a tool call that does not exist (tool calls: {', '.join(sorted(ctx.ids)) or 'none'})")
        else:
            calls.append((key, _call_expectation(c, f"{where}.{key}", value, ctx.tool_of[key], ctx)))
    return Expectation(tuple(calls), violations, residual, sometimes, within, requests, seeds, never, records_at_end)


# The counts a tool call of each tool can show more than 0 of (``RunResult.tool_call_rows``):
# an execute starts, kills and leaves running processes; a file tool applies edits.
_COUNTS_OF_TOOL = {"execute": ("process_starts", "processes_killed", "processes_running_at_end"),
                   "edit_files": ("edits_applied",), "write_file": ("edits_applied",)}


def _call_expectation(c: _Checker, where: str, value: Any, tool: str, ctx: _Context) -> tuple:
    """What one tool call must show; an expectation no run could meet is refused here
    (sim/world/scenario.py's Rule 4), not reported as "not met" after the run: a
    negative count, a count the call's tool never makes, a result kind its tool never
    gives, a ``result`` that contradicts ``results`` or whose bounds leave no time to
    commit in."""
    value = c.table(value, where)
    c.keys(value, set(vocabulary.EXPECT_CALL_KEYS), where)
    items: list = []
    own_kinds = vocabulary.EXECUTE_KINDS if tool == "execute" else vocabulary.FILE_KINDS
    for k in vocabulary.EXPECT_COUNTS:
        if k in value:
            count = c.typed(value[k], int, f"{where}.{k}")
            if count < 0:
                c.fail(f"{where}.{k}", f"a count is never negative, got {count}")
            if count and k not in _COUNTS_OF_TOOL[tool]:
                c.fail(f"{where}.{k}", f"{_a(tool)} tool call always has 0 (it could never be {count})")
            items.append((k, count))
    kinds = None
    if "results" in value:
        listed = c.capped(c.typed(value["results"], list, f"{where}.results"), vocabulary.MAX_ITEMS,
                          f"{where}.results", "results")
        kinds = tuple(c.typed(v, str, f"{where}.results") for v in listed)
        for kind in kinds:
            if kind not in vocabulary.RESULT_KINDS:
                c.fail(f"{where}.results", f"unknown result kind {kind!r} (known: {', '.join(vocabulary.RESULT_KINDS)})")
            if kind not in own_kinds:
                c.fail(f"{where}.results", f"{_a(tool)} tool call never gets a {kind!r} result "
                                           f"(its kinds: {', '.join(own_kinds)})")
        items.append(("results", kinds))
    if "result" in value:
        table = c.table(value["result"], f"{where}.result")
        c.keys(table, set(vocabulary.EXPECT_RESULT_FIELDS), f"{where}.result")
        fields = []
        for k, v in table.items():
            fw = f"{where}.result.{k}"
            what = vocabulary.EXPECT_RESULT_FIELDS[k]
            if what == "duration":
                v = c.typed(v, "duration", fw)
            elif k == "exit_code":  # a process's exit status, or -1: killed (model/vocabulary.py)
                v = c.bounded(v, vocabulary.RESULT_EXIT_CODE_MIN, vocabulary.EXIT_CODE_MAX, fw,
                              " (an exit status, or -1 for a killed process)")
            elif what == "integer":
                v = c.typed(v, int, fw)
                if v < 0:
                    c.fail(fw, f"is never negative, got {v}")
            else:
                v = c.typed(v, str, fw)
                if what == "result kind" and v not in vocabulary.RESULT_KINDS:
                    c.fail(fw, f"unknown result kind {v!r} (known: {', '.join(vocabulary.RESULT_KINDS)})")
                if what == "result kind" and v not in own_kinds:
                    c.fail(fw, f"{_a(tool)} tool call never gets a {v!r} result (its kinds: {', '.join(own_kinds)})")
                if what == "replica" and v not in ctx.replicas:
                    c.fail(fw, f"no such replica {v!r} (replicas: {', '.join(ctx.replicas)})")
            fields.append((k, v))
        _check_result_fields(c, f"{where}.result", dict(fields), kinds)
        items.append(("result", tuple(sorted(fields))))
    return tuple(items)


def _a(tool: str) -> str:
    """"an execute", "a write_file"."""
    return ("an " if tool[0] in "aeiou" else "a ") + tool


def _check_result_fields(c: _Checker, where: str, fields: dict, kinds: tuple | None) -> None:
    """A ``result = {...}`` some run could show: the first result of ``results`` (when
    given) is of its kind, and its commit time lies strictly between ``committed_after``
    and ``committed_before`` (whole milliseconds; not checked against ``until``, which
    ``run --until`` may lengthen)."""
    if kinds is not None and not kinds:
        c.fail(where, "results = [] expects no result, and result = {...} a first one: they could never both hold")
    if kinds and "kind" in fields and fields["kind"] != kinds[0]:
        c.fail(f"{where}.kind", f"{fields['kind']!r}, but results names {kinds[0]!r} first: "
                                "they could never both hold")
    after, before = fields.get("committed_after"), fields.get("committed_before")
    if before is not None and before <= 0:
        c.fail(f"{where}.committed_before", "0s: nothing commits before the run starts")
    if after is not None and before is not None and before <= after + 1:
        c.fail(f"{where}", f"committed_before ({format_duration(before)}) leaves no millisecond after "
                           f"committed_after ({format_duration(after)})")
