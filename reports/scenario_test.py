"""The text of races run as tests: assertion sentences and a failed scenario's report.

Theory of operation
-------------------
sim/api.py and sim/api_results.py (the Python scenario API and what its runs return) and
sim/pytest_plugin.py (scenario files as pytest items) hand this module plain values: a tool call's process starts as ``(t_ms,
incarnation, pid)`` points, its committed results as the rows of ``toolcall-sim run
--json``, the run's JSON doc and trace records. It writes what a person reads when a
race does not go as expected, in the story's terms rather than as ``assert 2 == 1``:

    toolu_01 started 2 processes (at 2.121 s on agent incarnation 1, at 902.21 s on incarnation 1); expected 1

``failure_report`` is the whole text of a failed scenario item: the first unmet
expectation (the line CI summaries show), the scenario and its
story, what happened to each tool call, the unmet expectations, each violation with the
trace records it cites as evidence, the command that reproduces the run, and the path of
its sequence diagram (drawn by ``toolcall_sim.reports.figures.sequence_svg``, written by the plugin). Times are
true time from the start of the run, in seconds. ``noop_faults`` is the text of sim/api.py's
``FaultDidNothing``: a run whose faults did nothing, never fired or raced nothing.
"""

from __future__ import annotations

# Trace record keys every record has, or that the evidence line already shows.
_RECORD_HEAD = ("t_ms", "node", "clock_ms", "kind", "truth", "note")
EVIDENCE_LINE_CHARS = 240  # one evidence record per line, cut at this width


def seconds(t_ms: int) -> str:
    return f"{t_ms / 1000:g} s"


def _count(n: int, one: str, many: str) -> str:
    return f"{n} {one if n == 1 else many}"


def _points(points, verb: str = "at") -> str:
    """``(at 2.121 s on agent incarnation 1, at 902.21 s on incarnation 1)``."""
    parts = [f"{verb} {seconds(t)} on {'agent ' if i == 0 else ''}incarnation {inc}"
             for i, (t, inc, _pid) in enumerate(points)]
    return f" ({', '.join(parts)})" if parts else ""


def starts_phrase(starts) -> str:
    return f"started {_count(len(starts), 'process', 'processes') if starts else 'no process'}{_points(starts)}"


def process_starts(call_id: str, starts) -> str:
    return f"{call_id} {starts_phrase(starts)}"


def processes_killed(call_id: str, kills) -> str:
    what = _count(len(kills), "process", "processes") if kills else "no process"
    return f"{call_id} had {what} killed{_points(kills)}"


def processes_running(call_id: str, running) -> str:
    what = _count(len(running), "process", "processes") if running else "no process"
    return f"{call_id} left {what} running at the end{_points(running, 'started at')}"


def edits_phrase(n: int) -> str:
    return f"applied {_count(n, 'edit', 'edits') if n else 'no edit'}"


def edits_applied(call_id: str, n: int) -> str:
    return f"{call_id} {edits_phrase(n)}"


def _one_result(r: dict) -> str:
    reason = f" ({r['reason']})" if r.get("reason") else ""
    by = f" by {r['replica']}" if r.get("replica") else ""
    return f"{r['kind']}{reason} at {r['committed_at_s']:g} s{by}"


def results_phrase(committed: list[dict]) -> str:
    if not committed:
        return "committed no result"
    return f"committed {_count(len(committed), 'result', 'results')} ({', '.join(_one_result(r) for r in committed)})"


def results(call_id: str, committed: list[dict]) -> str:
    return f"{call_id} {results_phrase(committed)}"


def _shown(value) -> str:
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(str(v) for v in value) + "]"
    return str(value)


def expected(sentence: str, value) -> str:
    """What happened, then what the test expected."""
    return f"{sentence}; expected {_shown(value)}"


def unmet(scenario: str, variant: str, failures: list[str]) -> str:
    return f"scenario {scenario} under {variant}: expectations not met:\n" + "\n".join(f"  {f}" for f in failures)


def noop_faults(scenario: str, variant: str, seed: int, problems: list[str], indexes: list[int]) -> str:
    """sim/api.py ``run``'s failure when faults did not make their race: the first fault
    first (the line CI summaries show), then the run, each fault, and how to opt out."""
    lines = [problems[0] + (f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""),
             f"scenario {scenario} under {variant}, seed {seed}: the race this test tells did not happen"]
    if len(problems) > 1:
        lines.extend(f"  {p}" for p in problems)
    lines.append("make it happen (another target, trigger or time), or say the test means it: "
                 f"allow_noop_faults=[{', '.join(str(i) for i in indexes)}]")
    return "\n".join(lines)


def violations(expected_names: list[str], found: list[dict]) -> str:
    """``assert_violations``: the new findings found and the ones expected."""
    got = "; ".join(f"{v['property']} at {v['at_s']:g} s ({v['detail']})" for v in found) or "nothing"
    return f"violated as new findings: {got}; expected {_shown(expected_names) if expected_names else 'none'}"


def _short(value: str) -> str:
    """A UUID as its first 8 characters, as the story shows a tool call's."""
    return value[:8] if len(value) == 36 and value.count("-") == 4 else value


def record_line(index: int, rec: dict) -> str:
    """One trace record as an evidence line: its index, time, node and what it is, then
    its other fields (None left out)."""
    what = " ".join(str(rec[k]) for k in ("kind", "truth", "note") if rec.get(k) is not None)
    rest = " ".join(f"{k}={_short(v)!r}" if isinstance(v, str) else f"{k}={v}" for k, v in rec.items()
                    if k not in _RECORD_HEAD and v is not None)
    line = f"#{index} at {seconds(rec.get('t_ms', 0))} {rec.get('node', '?')}: {what} {rest}".rstrip()
    return line if len(line) <= EVIDENCE_LINE_CHARS else line[:EVIDENCE_LINE_CHARS - 3] + "..."


def reproduce(file: str | None, variant: str, seed: int) -> str:
    """The command that runs it again (a scenario built in Python has no file unless it
    was written out: ``Scenario.write``)."""
    if file is None:
        return f"(built in Python: write it with Scenario.write(PATH), then toolcall-sim run PATH --variant {variant} --seed {seed})"
    return f"toolcall-sim run {file} --variant {variant} --seed {seed}"


def failure_report(doc: dict, summary: str, file: str | None, failures: list[str], trace: list[dict],
                   calls: list[dict], hash_problem: str | None = None, diagram: str | None = None) -> str:
    """The text of a failed scenario item. ``calls`` are ``{"row", "starts"}`` per tool
    call (its ``run --json`` row and its process starts as points); ``diagram``: where
    the plugin wrote the run's sequence diagram (``sequence_svg``), if it could."""
    problems = failures + ([hash_problem] if hash_problem else [])
    # The first line is what CI summaries show (pytest's short summary, junit's message).
    lines = [problems[0] + (f" (and {len(problems) - 1} more)" if len(problems) > 1 else "") if problems
             else "the run did not go as expected",
             f"scenario {doc['scenario']} under {doc['variant']}, seed {doc['seed']}" + (f" ({file})" if file else "")]
    if summary:
        lines.append(f"  story: {summary}")
    lines.append(f"what happened ({doc['sim_time_s']:g} s simulated, {doc['events']} trace records):")
    for call in calls:
        row = call["row"]
        effect = starts_phrase(call["starts"]) if row["tool"] == "execute" else edits_phrase(row["edits_applied"])
        lines.append(f"  {row['chat']} {row['id']} ({row['tool']}): {effect}; {results_phrase(row['results'])}")
    for rec in trace:
        if rec.get("kind") == "probe_answer":
            lines.append(f"  request {rec['name']} at {seconds(rec['t_ms'])}: {rec.get('status') or 'no answer'}")
    if failures:
        lines.append("expectations not met:")
        lines.extend(f"  {f}" for f in failures)
    if hash_problem:
        lines.append(hash_problem)
    for title, found in (("violations", doc["violations"]), ("residual risks", doc["residual_risks"])):
        if not found:
            continue
        lines.append(f"{title}:")
        for v in found:
            label = (" (known finding)" if v.get("known_finding") else
                     f" (residual risk {v['residual_risk']})" if v.get("residual_risk") else " (new finding)")
            lines.append(f"  {v['property']} at {v['at_s']:g} s{label}: {v['detail']}")
            for i in v.get("evidence", ()):
                if 0 <= i < len(trace):
                    lines.append(f"    evidence {record_line(i, trace[i])}")
    if not doc["violations"]:
        lines.append("violations: none")
    lines.append(f"reproduce: {reproduce(file, doc['variant'], doc['seed'])}")
    lines.append(f"sequence diagram: {diagram}" if diagram else "sequence diagram: none (it could not be written)")
    lines.append(f"trace sha256 {doc['trace_sha256']}")
    return "\n".join(lines)


def hash_moved(key: str, pinned: str | None, now: str, file: str) -> str:
    """The pinned trace hash of ``key`` (``<stem>/<variant>``) is not this run's."""
    if pinned is None:
        return (f"trace hash: {key} has no pinned hash in {file}; pin it with TOOLCALL_SIM_REPIN=1 "
                f"(this run: {now})")
    return (f"trace hash moved: {key} is pinned to {pinned} in {file}, this run gives {now} (behaviour changed; "
            f"if that is meant, re-pin with TOOLCALL_SIM_REPIN=1 and say why)")
