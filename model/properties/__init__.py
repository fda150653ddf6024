"""Properties: pure functions of a run's trace and final state that say whether the
contract held, with the evidence that proves it.

The package has one module per seam: ``evidence`` indexes the trace per tool call,
``checks`` holds the properties (``PROPERTIES``), ``risks`` names the residual risks and
known findings, ``classify`` recognises them (``CLASSIFIERS``), and ``monitor`` keeps
the verdicts of a growing trace (the explorer's) and holds ``_check``, the evaluation
every driver runs. This module only
evaluates a run (``evaluate``) and re-exports the public names, so ``toolcall_sim.model.properties.X``
keeps working for every caller.

Theory of operation
-------------------
A run leaves two kinds of evidence in its trace. Ground truth: ``truth`` records of the
agent (a process started, exited or was killed; an edit was applied), each with the
request that caused it (``cause``, ``cause_chat``, ``cause_headers``). Belief: ``truth``
records of kind ``result_committed``, what chatd told the model, with the result kind and
the task and attempt that committed it. A property reads both, plus the final ``System``
(which tool calls were committed, and their arguments), and returns ``Violation``s naming
the property, the tool call, the simulated time and the trace records that prove it.

Rule 1. A property is ``always`` (safety: it can be checked on any prefix), ``eventually``
        (liveness: checked only once the run has quiesced, i.e. no chat is still runnable)
        or ``sometimes`` (reachability: reported as *unreached*, never as a violation, so a
        run that never exercised the interesting path is visible).
Rule 2. Properties read result *kinds* (and exit codes, process IDs), never result texts.
Rule 3. Ground truth is attributed to a tool call by its UUID when the agent knew it, and
        otherwise by (chat, command) or (chat, path): under ``today`` the agent picks
        process IDs, so the command is the only link. Scenarios give each execute call of a
        chat its own command.
Rule 4. A violation that matches a residual risk the design documents (section 7) is
        reported as that risk, with its reference, not as a new finding (``classify``);
        one that matches a known finding about the contract (``KNOWN_FINDINGS``) is
        reported by that name. Each class has one recognizer (``CLASSIFIERS``) that reads
        only the records proving it (an effect's incarnation, the age its request
        carried, the interrupt result's unknown reason, the agent's pending-run record),
        for every tool kind; a violation no recognizer accepts is a new finding.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..chatd_db import RUNNABLE
from .checks import PROPERTIES, Property, interrupt_bound_ms
from .classify import CANCEL_UNSURE_REASONS, CLASSIFIERS, classify, informational
from .evidence import CallInfo, Evidence, Violation, agent_clock_at, committed_calls, record_tags, violation
from .monitor import Monitor, _check
from .risks import KNOWN_FINDINGS, RESIDUAL_RISKS, is_known_finding

# Rule 4's table must name what exists: a row with a misspelled class or property would
# never match and would pass every violation off as new, so it fails at import instead
# (as model/system.py checks its fault handlers against the vocabulary).
_unknown_rows = [
    (name, properties) for name, properties, _ in CLASSIFIERS
    if name not in RESIDUAL_RISKS and name not in KNOWN_FINDINGS
    or not set(properties) <= {p.name for p in PROPERTIES}
]
if _unknown_rows:
    raise ImportError(f"CLASSIFIERS rows name unknown classes or properties: {_unknown_rows}")

__all__ = [
    "CANCEL_UNSURE_REASONS",
    "CLASSIFIERS",
    "CallInfo",
    "Evidence",
    "KNOWN_FINDINGS",
    "Monitor",
    "PROPERTIES",
    "Property",
    "RESIDUAL_RISKS",
    "Report",
    "Violation",
    "agent_clock_at",
    "classify",
    "committed_calls",
    "evaluate",
    "informational",
    "interrupt_bound_ms",
    "is_known_finding",
    "quiesced",
    "record_tags",
    "violation",
]


# ---------------------------------------------------------------------------
# Entry points
# ---------------------------------------------------------------------------


def quiesced(final) -> bool:
    """The run has settled: no chat is still runnable (running, interrupting,
    requires_action), so every tool call that will get a result has one."""
    return all(chat.status not in RUNNABLE for chat in final.db.chats.values())


def violations_of(trace: list[dict], final, kinds: tuple[str, ...], calls=None) -> list:
    """Only ``evaluate(...).violations``, judged on the whole trace: what the explorer's
    monitors (``Monitor``) give for every new history, step by step. ``calls`` is
    ``evidence.committed_calls(final)`` when the caller has it already (it depends on
    the committed messages alone, which most steps leave as they are)."""
    ev = Evidence(trace, final, calls)
    return _check(ev, kinds, quiesced(final))[0]


@dataclass
class Report:
    violations: list  # new findings and residual risks, classified
    unreached: list  # names of sometimes-properties never reached
    informational: list
    unknown_results: int
    results: int
    quiesced: bool


def evaluate(trace: list[dict], final, kinds: tuple[str, ...] = ("always", "eventually", "sometimes")) -> Report:
    ev = Evidence(trace, final)
    settled = quiesced(final)
    violations, unreached = _check(ev, kinds, settled)
    results = unknown = 0  # the committed results, and those of them unknown
    for idx in ev.results.values():
        results += len(idx)
        for i in idx:
            if trace[i].get("result_kind") == "unknown":
                unknown += 1
    return Report(violations, unreached, informational(ev), unknown, results, settled)
