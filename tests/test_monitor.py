"""The explorer's monitors give the whole trace's verdict (model/properties/monitor.py).

A monitor re-runs a property only when a new record carries one of the tags the property
declares it reads (``Property.reads``, narrowed by ``Property.changed_by``), and the
explorer grows a state's monitor from its parent history's. Three tests stand behind
that: a monitor grown record by record over every hand-written trace of
tests/test_properties.py gives ``violations_of``'s verdict at every prefix; every state
of small searches gets from its monitor the whole ghost history's verdict
(``CHECK_MEMO``: ``Context.verdict`` compares them), and a declaration that leaves out a
record the check reads is caught there; and each declaration is what its check really
reads, recorded on an evidence that notes every attribute, mark kind and trace position
asked for.
"""

from __future__ import annotations

import pytest

from toolcall_sim.model import explore as ex
from toolcall_sim.model import explore_context
from toolcall_sim.model import properties as props
from toolcall_sim.model import worlds
from toolcall_sim.model.properties import monitor

import check_memo
import test_properties as tp

XDIST_GROUP = check_memo.CHECKED_GROUP  # the checked searches, shared with tests/test_explore_parallel.py

KINDS = (("always",), ("always", "eventually"), ("always", "eventually", "sometimes"))


def _traces():
    for name, (holds, fails) in tp.CASES.items():
        for trace in [holds, *fails]:
            yield name, trace


@pytest.mark.parametrize("status", ["waiting", "running"])
def test_a_monitor_grown_record_by_record_gives_the_whole_traces_verdict(status):
    """Every prefix of every hand-written trace: the same monitor state as judging the
    prefix whole, and the same violations (classified, in the same order, with the
    same evidence) as ``violations_of``; grown by several records at once too."""
    final = tp.final(status)
    settled = props.quiesced(final)
    checked = 0
    for name, trace in _traces():
        state = props.Monitor.of(props.Evidence([], final))
        for n, rec in enumerate(trace, 1):
            def evidence(n=n):
                return props.Evidence(trace[:n], final)
            state = props.Monitor.grown(state, props.record_tags(rec), evidence)
            assert state == props.Monitor.of(evidence()), (name, n)
            for kinds in KINDS:
                assert props.Monitor.violations(state, kinds, settled, evidence) == \
                    props.violations_of(trace[:n], final, kinds), (name, n, kinds)
                checked += 1
        for cut in range(len(trace) + 1):
            tags = tuple(t for rec in trace[cut:] for t in props.record_tags(rec))
            grown = props.Monitor.grown(props.Monitor.of(props.Evidence(trace[:cut], final)), tags,
                                        lambda: props.Evidence(trace, final))
            assert grown == props.Monitor.of(props.Evidence(trace, final)), (name, cut)
    assert checked > 150


def test_a_step_no_property_reads_needs_no_evidence():
    """Rule 1: records no incremental property reads (a start request sent, an agent's
    boot) leave the state as it was without building any evidence."""
    state = props.Monitor.of(props.Evidence(tp.CASES["at_most_once"][1][0], tp.final()))

    def no_evidence():
        raise AssertionError("evidence built")
    tags = props.record_tags(tp.sent(500)) + props.record_tags(tp.r(600, "agent", "agent_up", incarnation=2))
    assert props.Monitor.grown(state, tags, no_evidence) is state
    assert monitor.recheck(props.record_tags(tp.start(700))) != ()


# Worlds and variants whose searches reach many violations (today, planted bugs) and
# none (contract), with edits (two-messages, late-pubsub) and two chats.
SEARCHES = [
    ("default", "today", 1, 3_000),
    ("default", "contract", 1, 2_500),  # tests/test_explore_parallel.py's memo case too
    ("two-chats", "contract+pid-from-command", 1, 2_000),
    ("two-messages", "today", 1, 2_000),
    ("late-pubsub", "contract+commit-without-fences", 0, 2_000),
    ("default", "contract+commit-without-attempt-fence", 1, 2_000),
]


@pytest.fixture(scope="module")
def checked_searches():
    """The searches run once with ``CHECK_MEMO`` on, so ``Context.verdict`` compares every
    verdict its monitor gives with ``violations_of`` on the whole ghost history; with the
    verdicts compared and a sample of the ghost histories (for the ``reads`` test). Three
    of them are tests/test_explore_parallel.py's memo cases too, searched once for both
    modules (tests/check_memo.py ``checked_searches``, one xdist group)."""
    compared, histories = [], []
    for case in check_memo.checked_searches(SEARCHES):
        compared.extend(case.verdicts)
        histories.extend(case.histories)
    return compared, histories


@pytest.mark.slow  # the searches of its fixture: seconds
def test_every_explored_state_gets_the_whole_historys_verdict(checked_searches):
    compared, _ = checked_searches
    assert len(compared) > 3_000  # each verdict a search computes (the rest are memo hits)
    assert sum(compared) > 300  # with violations too, not only empty verdicts


def test_the_verdict_check_fires_on_a_declaration_that_misses_a_read(monkeypatch):
    """A checker that cannot fire is worse than none: at_most_once declared to read no
    record keeps its first verdict for good, and the comparison must catch it."""
    monkeypatch.setattr(explore_context, "CHECK_MEMO", True)
    assert monitor.INCREMENTAL[0].name == "at_most_once"
    monkeypatch.setattr(monitor, "_INCREMENTAL", ((frozenset(), monitor._INCREMENTAL[0][1]),) + monitor._INCREMENTAL[1:])
    monkeypatch.setattr(monitor, "_RECHECK", {})
    with pytest.raises(AssertionError, match="monitor's verdict"):
        ex.explore(worlds.build("default", "today"), ex.Bounds(max_in_flight_ms=1), max_states=20_000)


# ---------------------------------------------------------------------------
# What each check really reads
# ---------------------------------------------------------------------------

END = ("end",)  # the trace's end or length: no incremental check may read it
EVERY = ("every mark",)  # ``Evidence.marks``: every note and truth
# The tags of the records that make each entry of an evidence index.
_ATTRIBUTE_TAGS = {
    "starts": {("truth", "process_started")},
    "edits": {("truth", "edit_applied")},
    "results": {("truth", "result_committed")},
    "results_of": {("truth", "result_committed")},
    "exits": {("truth", "process_exited")},
    "kills": {("truth", "process_killed")},
    "never_received": {("note", "cancel_never_received")},
    "pid_owner": {("truth", "process_started")},
    "pid_start": {("truth", "process_started")},
    "sends": {("kind", "send")},
    "received": {("truth", "request_received")},
    "agent_downs": {("kind", "agent_down")},
    "interrupts": {("note", "interrupt_requested")},
    "interruption_done": {("note", "interruption_finished")},
    "faults": {("kind", "fault")},
    "discarded": {("note", "message_edited")},
    "edits_of_chat": {("note", "message_edited")},
    "workspace_moves": {("kind", "workspace")},
    "marks": {EVERY},
}
# (``firsts`` and ``copied``: the committed calls, by UUID)
_NOT_RECORDS = {"trace", "marks_by", "calls", "firsts", "copied", "final", "ended", "running_at", "agent_age_ms",
                "attempt_of", "end_ms", "disk_at"}


class _Log(list):
    """The tags read, shared by the recording containers below."""


class _Trace(list):
    """A trace that notes a read of its end (a negative position, its length, iteration)."""

    def __init__(self, items, log):
        super().__init__(items)
        self.log = log

    def __getitem__(self, i):
        if isinstance(i, slice) or i < 0:
            self.log.append(END)
        return super().__getitem__(i)

    def __len__(self):
        self.log.append(END)
        return super().__len__()

    def __iter__(self):
        self.log.append(END)
        return super().__iter__()


class _Marks(dict):
    """``marks_by`` noting each kind of mark asked for."""

    def __init__(self, items, log):
        super().__init__(items)
        self.log = log

    def get(self, key, default=None):
        self.log.append(key)
        return super().get(key, default)

    def __getitem__(self, key):
        self.log.append(key)
        return super().__getitem__(key)

    def __iter__(self):
        self.log.append(EVERY)
        return super().__iter__()

    def items(self):
        self.log.append(EVERY)
        return super().items()

    def values(self):
        self.log.append(EVERY)
        return super().values()


class _Recording(props.Evidence):
    """An evidence that notes, as record tags, what a check asks of it."""

    def __init__(self, ev, log):  # noqa: super().__init__ is not called: a copy of ``ev``
        object.__setattr__(self, "_log", log)
        self.__dict__.update(ev.__dict__)
        self.__dict__["trace"] = _Trace(ev.trace, log)
        self.__dict__["marks_by"] = _Marks(ev.marks_by, log)

    def __getattribute__(self, name):
        if not name.startswith("_"):
            log = object.__getattribute__(self, "_log")
            if name in _ATTRIBUTE_TAGS:
                log.extend(_ATTRIBUTE_TAGS[name])
            elif name not in _NOT_RECORDS:
                log.append(("attribute", name))
        return object.__getattribute__(self, name)


def hand_written_samples() -> list:
    """The hand-written traces with their final states, and a file call's failed write."""
    samples = [(trace, tp.final()) for _, trace in _traces()]
    return samples + [(trace, tp.write_final()) for trace, _ in tp.FAILED_WRITE_CASES]


def reads_seen(samples) -> dict:
    """Every incremental check run on each sample's evidence, asserting it reads only
    records of the tags it declares; per property, the tags it read."""
    seen = {p.name: set() for p in monitor.INCREMENTAL}
    for trace, final in samples:
        ev = props.Evidence(trace, final)
        for prop in monitor.INCREMENTAL:
            log = _Log()
            prop.check(_Recording(ev, log))
            read = set(log)
            assert read <= prop.reads, (prop.name, read - prop.reads)
            seen[prop.name] |= read
    return seen


def test_each_incremental_property_reads_what_it_declares(checked_searches):
    """Run every incremental check on an evidence that records what it asks for, over the
    hand-written traces and a sample of explored ghost histories: it reads only records
    with the tags it declares (never the trace's end, never every mark), and over all of
    them every tag it declares (a declaration wider than the check only costs time, but
    one that names a record the check never reads is a mistake too)."""
    _, histories = checked_searches
    samples = hand_written_samples() + histories
    assert len(samples) > 500
    seen = reads_seen(samples)
    for prop in monitor.INCREMENTAL:
        unseen = prop.reads - seen[prop.name] - _NOT_REACHED.get(prop.name, set())
        assert not unseen, (prop.name, unseen)


# Declared reads no sample reaches: an unknown result of an edit that no gone agent can
# have received (its detail counts the edits applied) is in no hand-written trace and no
# sampled search.
_NOT_REACHED = {"unknown_only_when_unknowable": {("truth", "edit_applied")}}


def test_the_reads_check_fires_on_a_check_that_reads_the_end():
    """The recording sees a read of the trace's end, which no incremental check may make."""
    ev = props.Evidence(tp.CASES["one_result"][1][0], tp.final())
    log = _Log()
    _Recording(ev, log).end_ms()
    assert END in log


def test_changed_by_is_part_of_what_a_check_reads():
    """``Property.changed_by`` narrows ``reads``: a record the check does not read cannot
    change its violations, so naming one there would be a mistake."""
    narrowed = [p for p in monitor.INCREMENTAL if p.changed_by is not None]
    assert narrowed
    for prop in narrowed:
        assert prop.changed_by < prop.reads, prop.name


def test_the_verdict_check_fires_on_a_changed_by_that_misses_a_trigger(monkeypatch):
    """fenced_commits changed by nothing would keep its first verdict; the comparison of
    every verdict must catch that in a world whose replaced attempt commits."""
    monkeypatch.setattr(explore_context, "CHECK_MEMO", True)
    at = next(j for j, p in enumerate(monitor.INCREMENTAL) if p.name == "fenced_commits")
    wrong = list(monitor._INCREMENTAL)
    wrong[at] = (frozenset(), wrong[at][1])
    monkeypatch.setattr(monitor, "_INCREMENTAL", tuple(wrong))
    monkeypatch.setattr(monitor, "_RECHECK", {})
    with pytest.raises(AssertionError, match="monitor's verdict"):
        ex.explore(worlds.build("late-pubsub", "contract+commit-without-fences"), ex.Bounds(), max_states=5_000)


def test_an_all_clear_state_asked_for_safety_needs_no_evidence():
    """Rule 2: a state with no safety violation, asked for the safety properties alone,
    gives none without building the evidence (most states of a search), whichever
    tuple of kinds the caller built; asked for more kinds, it judges the evidence."""
    def no_evidence():
        raise AssertionError("evidence built for an all-clear state")
    clear = tuple(() for _ in monitor.INCREMENTAL)
    assert props.Monitor.violations(clear, ("always",), True, no_evidence) == []
    assert props.Monitor.violations(clear, tuple(["always"]), True, no_evidence) == []
    with pytest.raises(AssertionError, match="evidence built"):
        props.Monitor.violations(clear, ("always", "eventually"), True, no_evidence)


# A trace where at_most_once and interrupt_finishes fail, no call has a result, and one
# sometimes-property (retry_gets_recorded_start) is reached.
_JUDGED = sorted(tp.CASES["at_most_once"][1][0] + tp.CASES["interrupt_finishes"][1][0]
                 + [tp.note(300, "agent", "replayed", uuid=tp.U)], key=lambda r: r["t_ms"])
_SOMETIMES = [p.name for p in props.PROPERTIES if p.kind == "sometimes"]


@pytest.mark.parametrize("status", ["running", "waiting"])
def test_a_run_not_yet_quiesced_is_judged_on_every_property_but_the_waiting_ones(status):
    """Rule 1 of the properties: the safety properties hold on any prefix; of the
    eventually-properties one_result_eventually waits for quiescence and
    interrupt_finishes (its own time bound) does not; the sometimes-properties not
    reached are reported either way, in their table's order."""
    report = props.evaluate(_JUDGED, tp.final(status))
    found = {v.property for v in report.violations}
    assert {"at_most_once", "interrupt_finishes"} <= found
    assert ("one_result_eventually" in found) is (status == "waiting")
    assert report.unreached == [n for n in _SOMETIMES if n != "retry_gets_recorded_start"]
    assert len(_SOMETIMES) > 2


@pytest.mark.parametrize("kinds", [("sometimes",), ("eventually",), ("eventually", "sometimes"), ("always",)])
def test_each_kind_of_property_is_judged_alone(kinds):
    """``evaluate`` asked for some kinds judges every property of those kinds and no other."""
    report = props.evaluate(_JUDGED, tp.final(), kinds)
    found = {v.property for v in report.violations}
    expected = {"always": {"at_most_once"}, "eventually": {"one_result_eventually", "interrupt_finishes"}}
    assert found >= set().union(*(expected.get(k, set()) for k in kinds))
    assert {p.name for p in props.PROPERTIES if p.name in found and p.kind not in kinds} == set()
    assert report.unreached == ([n for n in _SOMETIMES if n != "retry_gets_recorded_start"]
                                if "sometimes" in kinds else [])
