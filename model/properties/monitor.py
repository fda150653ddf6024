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
_INCREMENTAL = tuple((p.reads, p.check, p.fold) for p in INCREMENTAL)
# The record tags of a step's new records -> the places in ``INCREMENTAL`` of the
# properties that read one of them: a few dozen kinds of step, each asked thousands of times.
_RECHECK: dict[tuple, tuple[int, ...]] = {}
_ALWAYS = ("always",)


class Monitor:
    """The verdict state of one history: its evidence, the unclassified violations of
    each incremental property (``INCREMENTAL`` order), and the fold state of each one
    that is a fold (``Property.fold``, else None). Never changed once made."""

    __slots__ = ("ev", "raw", "folds")

    def __init__(self, ev: Evidence, raw: tuple, folds: tuple):
        self.ev = ev
        self.raw = raw
        self.folds = folds

    @classmethod
    def of(cls, trace: list[dict], final, calls: list | None = None) -> "Monitor":
        """The monitor of a whole trace."""
        ev = Evidence(trace, final, calls)
        folds = tuple(fold().feed(ev, 0) if fold is not None else None for _, _, fold in _INCREMENTAL)
        raw = tuple(tuple(state.out) if state is not None else tuple(check(ev))
                    for (_, check, _), state in zip(_INCREMENTAL, folds))
        return cls(ev, raw, folds)

    def extended(self, records: list[dict], final=None, tags: tuple | None = None) -> "Monitor":
        """Rule 1: the monitor of this history followed by ``records``. ``tags``: their
        ``record_tags``, one after another, when the caller keeps them per record."""
        if not records:
            return self
        if tags is None:
            tags = ()
            for rec in records:
                tags += record_tags(rec)
        start = len(self.ev.trace)
        ev = self.ev.extended(records, final, tags)
        recheck = _RECHECK.get(tags)
        if recheck is None:
            touched = set(tags)
            recheck = _RECHECK[tags] = tuple(j for j, (reads, _, _) in enumerate(_INCREMENTAL)
                                             if not reads.isdisjoint(touched))
        if not recheck:
            return Monitor(ev, self.raw, self.folds)
        raw, folds = list(self.raw), self.folds
        for j in recheck:
            _, check, fold = _INCREMENTAL[j]
            if fold is None:
                raw[j] = tuple(check(ev))
            else:
                if folds is self.folds:
                    folds = list(folds)
                state = folds[j] = folds[j].copy().feed(ev, start)
                raw[j] = tuple(state.out)
        return Monitor(ev, tuple(raw), tuple(folds))

    def violations(self, kinds: tuple[str, ...], settled: bool) -> list:
        """Rule 2: what ``violations_of`` gives on the whole history."""
        if kinds == _ALWAYS and not any(self.raw):
            return []  # the safety properties hold: nothing to classify (most states)
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
