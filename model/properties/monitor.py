"""Monitors: the properties' verdicts kept up to date as a trace grows, instead of
judged anew over the whole trace each time.

Theory of operation
-------------------
The explorer (model/explore.py Rule 3) checks the safety properties on every new state,
and a state's ghost history is its parent's followed by the few records of one step
(issue 14: re-judging each whole history was a fifth of the search). A ``Monitor`` is
the verdict state of one history: its evidence (``Evidence``, whose index is a left
fold over the records, so ``Evidence.extended`` files only the new ones) and, for each
incremental property (one that declares ``Property.reads``), its violations before
classification.

Rule 1. ``extended`` makes a longer history's monitor from a shorter one's: it files the
        new records and runs again only the checks that read one of their tags
        (``evidence.record_tags``); every other incremental property keeps the
        violations it had, because its check reads nothing but the records it declares
        and records before them (``Property.reads``), which the new records leave as
        they were.
Rule 2. ``violations`` is ``_check``, the one evaluation every driver runs (the simulated
        world's ``evaluate`` and ``violations_of`` call it on evidence of the whole
        trace): it takes the incremental properties' violations from the monitor,
        checks the others (the eventually-properties read the trace's end) and
        classifies every violation anew, since a classifier reads records the property
        does not (a later cancel's mark, say).
Rule 3. There is one definition of each property, its check; a monitor only decides
        when to run it again. A monitor belongs to one set of committed calls (the index
        files records by call): a caller whose calls change starts a new monitor.
        Evidence reads of its final state only the configuration (classify.py, the
        interrupt bound), which a whole search shares.

tests/test_explore.py compares the monitors' verdicts with ``violations_of`` on every
state of small searches; tests/test_properties.py checks each ``reads`` against what its
check really reads.
"""

from __future__ import annotations

from .checks import PROPERTIES
from .classify import classify
from .evidence import Evidence, Violation, record_tags

# The incremental properties (Rule 1), in ``PROPERTIES`` order: a monitor keeps one
# tuple of violations for each.
INCREMENTAL = tuple(p for p in PROPERTIES if p.reads is not None)
_INCREMENTAL_CHECKS = tuple((p.reads, p.check) for p in INCREMENTAL)


class Monitor:
    """The verdict state of one history: its evidence and the unclassified violations of
    each incremental property (``INCREMENTAL`` order). Never changed once made."""

    __slots__ = ("ev", "raw")

    def __init__(self, ev: Evidence, raw: tuple):
        self.ev = ev
        self.raw = raw

    @classmethod
    def of(cls, trace: list[dict], final, calls: list | None = None) -> "Monitor":
        """The monitor of a whole trace."""
        ev = Evidence(trace, final, calls)
        return cls(ev, tuple(tuple(check(ev)) for _, check in _INCREMENTAL_CHECKS))

    def extended(self, records: list[dict], final=None) -> "Monitor":
        """Rule 1: the monitor of this history followed by ``records``."""
        if not records:
            return self
        ev = self.ev.extended(records, final)
        touched = set()
        for rec in records:
            touched.update(record_tags(rec))
        raw = tuple(old if reads.isdisjoint(touched) else tuple(check(ev))
                    for (reads, check), old in zip(_INCREMENTAL_CHECKS, self.raw))
        return Monitor(ev, raw)

    def violations(self, kinds: tuple[str, ...], settled: bool) -> list:
        """Rule 2: what ``violations_of`` gives on the whole history."""
        return _check(self.ev, kinds, settled, self.raw)[0]


def _check(ev: Evidence, kinds: tuple[str, ...], settled: bool, known: tuple | None = None) -> tuple[list, list]:
    """Every property of ``kinds`` on ``ev``: the classified violations and the names of
    the sometimes-properties never reached. ``known``: the incremental properties'
    unclassified violations (a monitor's), taken instead of checking them."""
    violations: list[Violation] = []
    unreached: list[str] = []
    at = 0  # the next incremental property's place in ``known``
    for prop in PROPERTIES:
        incremental = prop.reads is not None
        if incremental:
            at += 1
        if prop.kind not in kinds:
            continue
        if prop.kind == "eventually" and prop.needs_quiescence and not settled:
            continue
        found = known[at - 1] if known is not None and incremental else prop.check(ev)
        if prop.kind == "sometimes":
            if found:
                unreached.append(prop.name)
            continue
        for v in found:
            violations.append(classify(v, ev))
    return violations, unreached
