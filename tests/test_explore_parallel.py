"""The fast explorer finds what the plain one finds.

Two things stand between the explorer of issue 14 and ``system.apply`` step by step: the
transition memo (model/explore.py Rule 7), which replays a cached step's edits onto another
state with the same footprint, and the parallel driver (sim/drivers/explore_parallel.py), which
numbers states in the one-process order while workers expand them. Each gets a test
against the thing it replaces: with ``CHECK_MEMO`` every cached step is also applied for
real and compared field by field, and a parallel search must give the one-process result
state for state: the same counts, depth and counterexamples, action for action.
"""

from __future__ import annotations

import json

import pytest

from toolcall_sim.model import explore as ex
from toolcall_sim.model import explore_context, explore_replay
from toolcall_sim.model import worlds
from toolcall_sim.drivers import explore_parallel as xp
from toolcall_sim.cli.main import main

from check_memo import CHECKED_GROUP, checked_searches

XDIST_GROUP = CHECKED_GROUP  # the checked searches, shared with tests/test_monitor.py

NONE = dict(agent_restarts=0, ownership_changes=0, interrupts=0, lost_responses=0, task_retries=0)


def _summary(result) -> tuple:
    found = sorted((v.property, v.residual_risk or "", tuple(a.label() for a in v.path), v.detail)
                   for v in result.violations)
    return result.states, result.transitions, result.depth, result.exhausted, found


@pytest.fixture
def checked_memo(monkeypatch):
    monkeypatch.setattr(explore_context, "CHECK_MEMO", True)


# Worlds and variants whose searches take every kind of step the memo caches: agent and
# chatd deliveries, lost answers, agent and replica timers, restarts, interrupts and
# takeovers, with findings (today, planted bugs) and without (contract).
MEMO_CASES = [
    ("default", "contract", 0, 2_500),
    ("default", "today", 0, 2_500),
    ("default", "contract", 1, 2_500),
    ("two-chats", "contract+pid-from-command", 1, 2_000),
    ("late-pubsub", "contract+commit-without-fences", 0, 2_000),
    ("two-messages", "contract+no-age-margin", 1, 2_000),
]


@pytest.fixture(scope="module")
def checked_cases():
    """The cases searched once with ``CHECK_MEMO`` on, both checks at work in the same
    searches (every cached step applied for real and compared, every memoized expansion
    computed again and compared): which footprints were replayed from the step memo, and
    how many expansions came from the expansion memo. One pass serves the two tests below
    (each check raises on its own first difference, whichever test is reading), and
    tests/test_monitor.py's verdict tests, which search three of these cases too
    (tests/check_memo.py ``checked_searches``, one xdist group)."""
    seen, checked, memo = set(), [], []
    for (world, variant, _, _), case in zip(MEMO_CASES, checked_searches(MEMO_CASES)):
        seen |= case.replayed
        checked.extend(case.expansions)
        memo.append((world, variant, case.memo_hits, case.memo_misses))
    return seen, checked, memo


def test_every_memoized_step_equals_the_real_one(checked_cases):
    """``Context._check`` raises on the first cached step whose system, timers, messages,
    open requests or ghost records differ from ``system.apply``'s; and between them the
    cases replay cached steps of every footprint ``Context._memo_key`` knows."""
    seen, _, memo = checked_cases
    for world, variant, hits, misses in memo:
        assert hits > misses > 0, (world, variant)
    assert seen >= {"agent", "chatd", "lose", "agent-timer", "chatd-timer", "restart", "chatd-fault", "tick"}


def test_the_memo_check_fires_on_a_footprint_that_misses_a_read(checked_memo, monkeypatch):
    """A checker that cannot fire is worse than none: drop the agent from the key of its
    own deliveries and the check must catch the first wrong replay."""
    real = ex.Context._memo_key

    def blind(self, s, action):
        key, footprint = real(self, s, action)
        if key is not None and key[0] == "agent":
            key = key[:3] + key[4:]  # the agent's state no longer decides what a delivery does
        return key, footprint
    monkeypatch.setattr(ex.Context, "_memo_key", blind)
    with pytest.raises(AssertionError, match="memo differs"):
        ex.explore(worlds.default("contract"), ex.Bounds(), max_states=5_000)


def _bent_delta(monkeypatch, **bent):
    """Every delta the memo stores, with the named flags negated (``Context._delta``)."""
    import dataclasses
    real = ex.Context._delta

    def bend(self, *args):
        delta = real(self, *args)
        if delta is None:
            return None
        return dataclasses.replace(delta, **{name: not getattr(delta, name) for name in bent})
    monkeypatch.setattr(ex.Context, "_delta", bend)


@pytest.mark.parametrize("flag,message", [
    ("quiet", "memo differs in its no-op test"),
    ("to_chatd", "memo differs in whether it sends to chatd"),
])
def test_the_memo_check_fires_on_a_wrong_delta_flag(flag, message, checked_memo, monkeypatch):
    """A checker that cannot fire is worse than none: the flags a delta computes once
    (Rule 6's no-op test of a delivery to chatd, whether a step sends to chatd) are
    what settling trusts, so a wrong one must be caught."""
    _bent_delta(monkeypatch, **{flag: True})
    with pytest.raises(AssertionError, match=message):
        ex.explore(worlds.default("contract"), ex.Bounds(), max_states=3_000)


def test_the_memo_check_fires_on_a_wrong_timer_transition(checked_memo, monkeypatch):
    """A replayed step's timer table takes its handle from the old table's through the
    delta (``_Delta.timers_after``); a transition that keeps the old handle must be
    caught."""
    def keep_old(self, before, after, delta):
        memo = before.timers._fp
        if memo is not None and memo[0] is self.token and after.timers is not before.timers:
            delta.__dict__.setdefault("timers_after", {})
            if delta.timers_after is None:
                delta.__dict__["timers_after"] = {}
            delta.timers_after[memo[1]] = memo[1]
    monkeypatch.setattr(ex.Context, "_timers_after", keep_old)
    with pytest.raises(AssertionError, match="memo differs in the timers' handle"):
        ex.explore(worlds.default("contract"), ex.Bounds(), max_states=3_000)


def test_the_memo_check_fires_on_a_wrong_settled_delivery(checked_memo, monkeypatch):
    """A no-op delivery that settling finds is replayed by ``_settled``, which keeps the
    state's own node objects; one that left the message in flight must be caught."""
    real = explore_context._settled

    def keeps_the_message(s, seq, d):
        out = real(s, seq, d)
        out.__dict__["in_flight"] = s.in_flight
        return out
    monkeypatch.setattr(explore_context, "_settled", keeps_the_message)
    with pytest.raises(AssertionError, match="memo differs in in_flight"):
        ex.explore(worlds.default("contract"), ex.Bounds(), max_states=3_000)


def test_the_memo_check_fires_on_a_wrong_ghost_record_handle(checked_memo, monkeypatch):
    """A flat ghost record finds its handle by its typed fields (``Context.ghost_of``);
    a memo key that leaves out the values makes different records one, which the
    check against the record's JSON text must catch."""
    monkeypatch.setattr(explore_context, "_flat", lambda rec: tuple(rec))
    with pytest.raises(AssertionError, match="ghost record memo differs"):
        ex.explore(worlds.default("contract"), ex.Bounds(), max_states=3_000)


def test_a_replayed_steps_table_edits_are_the_steps_own():
    """``explore_replay.edited`` makes in one copy the table that ``FMap.set`` and ``remove`` make one
    edit at a time, and returns the same object when nothing changed."""
    from toolcall_sim.model.core import FMap
    from toolcall_sim.model.system import Timer

    def t(node, name, due):
        return Timer(node, name, due, due * 10)
    table = FMap({("agent", "a"): t("agent", "a", 1), ("replica-1", "b"): t("replica-1", "b", 2),
                  ("replica-1", "c"): t("replica-1", "c", 3)})

    def stepwise(m, ops):
        for op in ops:
            if op[0] in ("timer_set", "open_set"):
                m = m.set(op[1], op[2])
            elif op[0] == "timers_of_node_cancel":
                m = FMap((k, v) for k, v in m.items() if v.node != op[1])
            else:
                m = m.remove(op[1])
        return m
    cases = [
        (("timer_cancel", ("agent", "zz")),),
        (("timer_cancel", ("agent", "a")), ("timer_set", ("agent", "a"), t("agent", "a", 7))),
        (("timer_set", ("replica-1", "a0"), t("replica-1", "a0", 4)), ("timer_cancel", ("replica-1", "c"))),
        (("timer_cancel", ("x", "y")), ("timers_of_node_cancel", "replica-1"), ("timer_set", ("z", "z"), t("z", "z", 5))),
        (("open_remove", ("agent", "b")), ("open_set", ("agent", "b"), t("agent", "b", 6))),
    ]
    for ops in cases:
        got, want = explore_replay.edited(table, ops), stepwise(table, ops)
        assert got.items() == want.items() and dict(got._index) == dict(want._index)
        assert (got is table) == (want is table)
    assert explore_replay.edited(table, cases[0]) is table


def test_every_memoized_expansion_equals_the_real_one(checked_cases):
    """Rule 10: with ``CHECK_MEMO`` every expansion taken from the memo is computed again
    and compared (``Search._check_expansion``); the cases take hundreds from it."""
    _, checked, _ = checked_cases
    assert len(checked) > 200


def test_the_expansion_check_fires_on_a_key_that_leaves_out_the_budgets(checked_memo, monkeypatch):
    """A checker that cannot fire is worse than none: states that differ only in the
    budgets spent have different actions, so an expansion key without them must be
    caught."""
    real = ex.Context.system_key

    def blind(self, s, used, *parent):
        sk, xk = real(self, s, used, *parent)
        return sk, xk[:10] + ((),) + xk[11:]  # the budgets no longer decide the expansion
    monkeypatch.setattr(ex.Context, "system_key", blind)
    with pytest.raises(AssertionError, match="expansion memo differs"):
        ex.explore(worlds.default("contract"), ex.Bounds(), max_states=5_000)


@pytest.mark.parametrize("world,variant,in_flight_ms,states", MEMO_CASES,
                         ids=[f"{w}-{v}-{f}" for w, v, f, _ in MEMO_CASES])
def test_the_expansion_memo_changes_no_result(world, variant, in_flight_ms, states, monkeypatch):
    """Rule 10 only saves time: without the memo (as with ``keep_edges``) the search
    numbers the same states in the same order and finds the same counterexamples."""
    config, bounds = worlds.build(world, variant), ex.Bounds(max_in_flight_ms=in_flight_ms)
    memo = ex.explore(config, bounds, max_states=states)
    real_init = ex.Search.__init__

    def without_memo(self, *args, **kwargs):
        real_init(self, *args, **kwargs)
        self.expansions = None
    monkeypatch.setattr(ex.Search, "__init__", without_memo)
    plain = ex.explore(config, bounds, max_states=states)
    assert _summary(memo) == _summary(plain)
    assert memo.states_per_depth == plain.states_per_depth


PARALLEL_CASES = [
    # Small searches (a few thousand states each): the driver's rounds, merges, cuts and
    # findings are all exercised; the speed is the bench's business.
    ("default", "today", ex.Bounds(**{**NONE, "agent_restarts": 1, "interrupts": 1}), {}),
    ("default", "contract", ex.Bounds(**{**NONE, "agent_restarts": 1, "interrupts": 1}), {}),
    ("default", "contract+stop-rule-inclusive", ex.Bounds(**{**NONE, "interrupts": 1}), {}),
    ("two-messages", "contract+no-age-margin", ex.Bounds(max_in_flight_ms=1, **{**NONE, "lost_responses": 1}), {}),
    ("default", "contract", ex.Bounds(), {"max_states": 2_500}),
]


@pytest.mark.parametrize("world,variant,bounds,limits", PARALLEL_CASES,
                         ids=[f"{w}-{v}-{i}" for i, (w, v, _, _) in enumerate(PARALLEL_CASES)])
def test_parallel_search_gives_the_one_process_result(world, variant, bounds, limits):
    config = worlds.build(world, variant)
    one = ex.explore(config, bounds, **limits)
    two = xp.explore(config, bounds, workers=2, head_start=2, **limits)
    three = xp.explore(config, bounds, workers=3, head_start=5, **limits)
    assert _summary(two) == _summary(one) == _summary(three)


def test_parallel_search_stops_where_the_one_process_search_stops():
    """``stop_on`` cuts at the same event: the first counterexample it accepts, with
    whatever the one-process search had found before it."""
    config = worlds.default("today")
    bounds = ex.Bounds(**{**NONE, "agent_restarts": 1, "interrupts": 1})

    def first(found):
        return True
    one = ex.explore(config, bounds, stop_on=first)
    two = xp.explore(config, bounds, stop_on=first, workers=2, head_start=2)
    assert not one.exhausted and one.violations
    assert _summary(two) == _summary(one)


def test_explore_cli_runs_with_workers(tmp_path, capsys):
    args = ["explore", "--world", "default", "--variant", "today", "--json", "--out", str(tmp_path), "--agent-restarts", "0",
            "--ownership-changes", "0", "--lost-responses", "0", "--task-retries", "0"]
    assert main(args) == 1
    one = capsys.readouterr().out
    assert main(args + ["--workers", "2"]) == 1
    two = capsys.readouterr().out
    a, b = json.loads(one), json.loads(two)
    # 63 states end within this process's head start: no worker was forked, and the JSON
    # says so (issue 32: the processes really used, not the flag).
    assert b["workers"] == 1
    for doc in (a, b):
        doc.pop("states_per_s")
        doc.pop("workers")
    assert a == b


def test_explore_reports_the_processes_it_forked(tmp_path, capsys):
    args = ["explore", "--world", "default", "--variant", "today", "--json", "--out", str(tmp_path),
            "--max-states", "3000", "--workers", "2"]
    main(args)
    assert json.loads(capsys.readouterr().out)["workers"] == 2


@pytest.mark.parametrize("flags,message", [
    (["--workers", "0"], "--workers: must be at least 1"),
    (["--workers", "10000"], "--workers: must be at most 256"),
    (["--workers", "2", "--graph", "g.graphml"], "--graph: the state graph is drawn by one process"),
])
def test_explore_refuses_bad_worker_flags(flags, message, tmp_path, capsys):
    assert main(["explore", "--world", "default", "--out", str(tmp_path)] + flags) == 2
    assert message in capsys.readouterr().err


def test_cached_digest_text_is_the_digest_text():
    """The parallel driver digests a child's key from ``digest_text_of`` (the small parts'
    texts kept): it must give ``digest_text``'s bytes, for the keys of a real search and
    for parts that Python equates across types (``1``, ``True``, ``1.0``)."""
    from toolcall_sim.model.interning import Interner, digest_text, digest_text_of

    search = ex.Search(worlds.default("contract"), ex.Bounds(), max_states=300, digests=True)
    search.run()
    keys = [entry[4] for found in list(search.expansions.values()) for entry in found[1]]
    handle = Interner(digests=True).key_of(("x",))
    keys += [(1, True, 1.0, handle), (True, 1, handle, (1,), 1.0)]
    texts: dict = {}
    assert len(keys) > 100
    for key in keys + keys:
        assert digest_text_of(key, texts) == digest_text(key)


def test_the_step_check_fires_on_children_taken_from_another_system_state(checked_memo, monkeypatch):
    """Rule 10's children per system state and action (``Search.successors``' ``steps``)
    are checked under ``CHECK_MEMO`` (``Search._check_step``): a key that keeps only the
    clock shares children between different system states, which must be caught."""
    monkeypatch.setattr(ex, "_without_budgets", lambda xkey: xkey[:1])
    with pytest.raises(AssertionError, match="expansion memo differs in its step"):
        ex.explore(worlds.default("contract"), ex.Bounds(), max_states=5_000)


def test_children_shared_across_budgets_change_no_result(monkeypatch):
    """The children taken from a state that differs only in the budgets spent are the
    ones the search computes without them: the same states, depths and findings, and the
    memo is used."""
    config, bounds = worlds.default("today"), ex.Bounds()
    taken = []
    real_check = ex.Search._check_step

    def count(self, node, action, entry):
        taken.append(action)
        return real_check(self, node, action, entry)
    monkeypatch.setattr(ex.Search, "_check_step", count)
    monkeypatch.setattr(explore_context, "CHECK_MEMO", True)
    shared = ex.explore(config, bounds, max_states=3_000)
    assert len(taken) > 100
    monkeypatch.setattr(ex, "_without_budgets", lambda xkey: object())  # never found again
    plain = ex.explore(config, bounds, max_states=3_000)
    assert _summary(shared) == _summary(plain)
    assert shared.states_per_depth == plain.states_per_depth


def test_the_verdict_check_fires_on_a_wrong_chats_handle(checked_memo, monkeypatch):
    """The explorer hands ``Context.verdict`` the chats' handle it read by the database's
    (``Context.chats_of``); under ``CHECK_MEMO`` a wrong one must be caught."""
    real = ex.Context.verdict

    def wrong(self, node, kinds, chats=None):
        return real(self, node, kinds, None if chats is None else self.interner.key_of(("not the chats",)))
    monkeypatch.setattr(ex.Context, "verdict", wrong)
    with pytest.raises(AssertionError, match="chats handle differs"):
        ex.explore(worlds.default("contract"), ex.Bounds(), max_states=500)


def test_the_quiescence_check_fires_on_a_wrong_database_fact(checked_memo, monkeypatch):
    """A listed state's quiescence is read by its database's handle (``Context.chats_of``);
    under ``CHECK_MEMO`` it is compared with ``Context.quiesced``, so a wrong fact is caught."""
    class Flipped(dict):
        def get(self, key, default=None):
            found = dict.get(self, key, default)
            if found is None:
                return found
            return (ex.ALWAYS if found[0] is ex.TERMINAL else ex.TERMINAL, found[1])
    real_init = ex.Context.__init__

    def init(self, *args, **kwargs):
        real_init(self, *args, **kwargs)
        self.chats_of = Flipped()
    monkeypatch.setattr(ex.Context, "__init__", init)
    with pytest.raises(AssertionError, match="differs in the state's quiescence"):
        ex.explore(worlds.default("contract"), ex.Bounds(), max_states=500)


def test_a_transition_memo_of_small_generations_changes_no_result(checked_memo, monkeypatch):
    """Rule 7's memo keeps two generations (``Context.MEMO_GENERATION``); only the 1 s
    world outgrows one at the real size, so here a generation of 40 keys turns over
    many times in a search with findings: every hit (old generation or new) is applied
    for real and compared (``CHECK_MEMO``), the result is the unbounded memo's, and the
    steps dropped with old generations are run again."""
    config, bounds = worlds.build("default", "today"), ex.Bounds(max_in_flight_ms=1)
    searches = {}
    for generation in (10 ** 9, 40):
        monkeypatch.setattr(ex.Context, "MEMO_GENERATION", generation)
        search = ex.Search(config, bounds, max_states=3_000)
        search.run()
        searches[generation] = search
    big, small = searches[10 ** 9], searches[40]
    assert len(big.ctx.memo) > 200 and not big.ctx.memo_old
    assert len(small.ctx.memo) <= 40 and small.ctx.memo_old
    assert _summary(small.finish()) == _summary(big.finish())
    assert small.ctx.misses > big.ctx.misses and small.ctx.hits > 0
