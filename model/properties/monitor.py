"""Monitors: the safety properties' verdicts carried from a history to a longer one,
instead of every property judged anew over every history.

Theory of operation
-------------------
The explorer (model/explore.py Rule 3) checks the safety properties on every new state,
and a state's ghost history is its parent's followed by the few records of one step
(issue 14: judging each whole history was a fifth of the search). A history's monitor
state is small and hashable: for each incremental property (one that declares
``Property.reads``, ``INCREMENTAL``), the violations it has before classification, as
a tuple (``Monitor``; all clear is ``()`` for each).

Rule 1. A step's monitor is its parent history's with only the properties re-checked
        that read one of the new records' tags (``evidence.record_tags``, ``recheck``):
        every other property keeps its violations, because its check reads nothing but
        the records it declares and records before them, which new records leave as
        they were. A property that finds each violation at one record from the records
        before it is re-checked only for a new such record (``Property.changed_by``). A re-check runs the property's own check on the evidence of the
        whole new history (``Evidence``); a step whose records no property reads (a
        start request sent, an agent's boot) needs no evidence at all.
Rule 2. ``violations`` is ``_check``, the one evaluation every driver runs (the simulated
        world's ``evaluate`` and ``violations_of`` call it on evidence of the whole
        trace): it takes the incremental properties' violations from the monitor,
        checks the others (the eventually-properties read the trace's end) and
        classifies every violation anew, since a classifier reads records the property
        does not (a later cancel's mark, say). A state all clear of safety violations
        asked for them alone needs no evidence.
Rule 3. There is one definition of each property, its check; a monitor only decides
        when to run it again. A monitor belongs to one set of committed calls (the
        evidence files records by call): under other calls it is started again from the
        whole history (``Monitor.of``). Evidence reads of its final state only the
        configuration (classify.py, the interrupt bound), which a whole search shares.
Rule 4. The state is a tuple of tuples of frozen ``Violation``s, so a caller can keep
        one per history for the price of a pointer (the explorer keeps them per ghost
        history handle, model/explore_context.py ``Context.verdict``), and an evidence,
        which is as big as its history, only while one verdict is computed.

tests/test_monitor.py grows monitors record by record over hand-written traces and
compares the monitor's verdict with ``violations_of`` on every state of small searches;
it also checks each ``reads`` against what its check really reads.
"""

from __future__ import annotations

from typing import Callable

from .checks import PROPERTIES
from .classify import classify
from .evidence import Evidence, Violation, record_tags

# The incremental properties (Rule 1), in ``PROPERTIES`` order: a monitor keeps one
# tuple of violations for each.
INCREMENTAL = tuple(p for p in PROPERTIES if p.reads is not None)
_INCREMENTAL = tuple((p.changed_by or p.reads, p.check) for p in INCREMENTAL)
# The record tags of a step's new records -> the places in ``INCREMENTAL`` of the
# properties that read one of them: a few dozen kinds of step, each asked thousands of times.
_RECHECK: dict[tuple, tuple[int, ...]] = {}
_ALWAYS = ("always",)


def recheck(tags: tuple) -> tuple[int, ...]:
    """Rule 1: the places in ``INCREMENTAL`` of the properties that new records with these
    tags (their ``record_tags``, one after another) may change."""
    found = _RECHECK.get(tags)
    if found is None:
        touched = set(tags)
        found = _RECHECK[tags] = tuple(j for j, (reads, _) in enumerate(_INCREMENTAL) if not reads.isdisjoint(touched))
    return found


class Monitor:
    """Namespace of the monitor state's transitions (Rule 4: the state is a plain tuple,
    one tuple of unclassified violations per ``INCREMENTAL`` property)."""

    @staticmethod
    def of(ev: Evidence) -> tuple:
        """The monitor state of a whole history."""
        return tuple(tuple(check(ev)) for _, check in _INCREMENTAL)

    @staticmethod
    def grown(state: tuple, tags: tuple, evidence: Callable[[], Evidence]) -> tuple:
        """Rule 1: the state after new records with these ``tags``; ``evidence()`` gives the
        evidence of the whole new history, asked for only if a property is re-checked."""
        again = recheck(tags)
        if not again:
            return state
        ev = evidence()
        out = list(state)
        for j in again:
            out[j] = tuple(_INCREMENTAL[j][1](ev))
        return tuple(out)

    @staticmethod
    def violations(state: tuple, kinds: tuple[str, ...], settled: bool, evidence: Callable[[], Evidence]) -> list:
        """Rule 2: what ``violations_of`` gives on the whole history."""
        if kinds == _ALWAYS and not any(state):
            return []  # the safety properties hold: nothing to classify (most states)
        return _check(evidence(), kinds, settled, state)[0]


# ``PROPERTIES`` as ``_check`` reads each row: (name, kind, whether it is incremental,
# whether it waits for quiescence, check), read once instead of five attributes a row.
_ROWS = tuple((p.name, p.kind, p.reads is not None, p.kind == "eventually" and p.needs_quiescence, p.check)
              for p in PROPERTIES)


def _check(ev: Evidence, kinds: tuple[str, ...], settled: bool, known: tuple | None = None) -> tuple[list, list]:
    """Every property of ``kinds`` on ``ev``: the classified violations and the names of
    the sometimes-properties never reached. ``known``: the incremental properties'
    unclassified violations (a monitor's state), taken instead of checking them."""
    violations: list[Violation] = []
    unreached: list[str] = []
    at = 0  # the next incremental property's place in ``known``
    for name, kind, incremental, waits, check in _ROWS:
        if incremental:
            at += 1
        if kind not in kinds:
            continue
        if waits and not settled:
            continue
        found = known[at - 1] if known is not None and incremental else check(ev)
        if kind == "sometimes":
            if found:
                unreached.append(name)
            continue
        for v in found:
            violations.append(classify(v, ev))
    return violations, unreached
