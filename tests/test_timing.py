"""Timing: chatd's and chattool's durations as one value, the reference by default and a
small order-preserving set for exhaustive exploration (model/timing.py).

Checked here: the defaults are the reference constants; ``Timing.small()`` keeps every
ordering the reference relies on (the table ``ORDERINGS`` with its reasons) and the order
of every pair of real durations; the timing reaches every timer chatd and chattool arm and
every text that prints a duration; and a whole world (toolcall_sim.model.system, no simpy) still runs a
tool call to exactly one process and one committed result at small timing and at the
reference timing, for the contract and for today.
"""

from __future__ import annotations

import json
from dataclasses import fields, replace

import pytest

from toolcall_sim.model import agent, chatd, chattool, system
from toolcall_sim.model.core import Response, SetTimer, TransportError
from toolcall_sim.model.timing import DEFAULT_TIMING, ORDERINGS, Timing

SMALL = Timing.small()
CHAT = "6f1c0b9e-2d4a-4c1e-9a57-0b8e2f6d3c11"

# field -> the module constant that names its reference value (Rule 1 of model/timing.py).
REFERENCE = {
    "task_timeout_ms": (chatd, "TASK_TIMEOUT_MS", 15 * 60_000),
    "task_retry_initial_backoff_ms": (chatd, "TASK_RETRY_INITIAL_BACKOFF_MS", 100),
    "task_retry_max_backoff_ms": (chatd, "TASK_RETRY_MAX_BACKOFF_MS", 5_000),
    "acquisition_interval_ms": (chatd, "ACQUISITION_INTERVAL_MS", 30_000),
    "runner_sync_interval_ms": (chatd, "RUNNER_SYNC_INTERVAL_MS", 15_000),
    "heartbeat_interval_ms": (chatd, "HEARTBEAT_INTERVAL_MS", 9_000),
    "heartbeat_stale_ms": (chatd, "HEARTBEAT_STALE_MS", 30_000),
    "dial_timeout_ms": (chatd, "DIAL_TIMEOUT_MS", 30_000),
    "default_gen_time_ms": (chatd, "DEFAULT_GEN_TIME_MS", 2_000),
    "agent_answer_timeout_ms": (chattool, "AGENT_ANSWER_TIMEOUT_MS", 60_000),
    "execute_default_timeout_ms": (chattool, "EXECUTE_DEFAULT_TIMEOUT_MS", 10_000),
    "snapshot_timeout_ms": (chattool, "SNAPSHOT_TIMEOUT_MS", 30_000),
    "agent_output_wait_cap_ms": (chattool, "AGENT_OUTPUT_WAIT_CAP_MS", 300_000),
}
# The agent's durations live in AgentRules; Timing mirrors them.
AGENT_MIRROR = {
    "agent_age_margin_ms": "age_margin_ms",
    "agent_output_wait_cap_ms": "output_wait_cap_ms",
    "agent_exited_reap_after_ms": "exited_reap_after_ms",
}


# ---------------------------------------------------------------------------
# (a) the defaults are the reference
# ---------------------------------------------------------------------------


def test_every_field_is_an_integer_ms_duration_and_accounted_for():
    names = [f.name for f in fields(Timing)]
    assert all(n.endswith("_ms") for n in names)
    assert set(names) == set(REFERENCE) | set(AGENT_MIRROR)
    for timing in (DEFAULT_TIMING, SMALL):
        assert all(type(getattr(timing, n)) is int and getattr(timing, n) > 0 for n in names)


@pytest.mark.parametrize("name", sorted(REFERENCE))
def test_default_equals_reference_constant(name):
    module, const, real_ms = REFERENCE[name]
    assert getattr(Timing(), name) == getattr(module, const) == real_ms


def test_default_mirrors_the_agents_rules():
    rules = agent.AgentRules()
    for mine, theirs in AGENT_MIRROR.items():
        assert getattr(DEFAULT_TIMING, mine) == getattr(rules, theirs)
    assert DEFAULT_TIMING.agent_rules(rules) == rules


def test_variants_use_the_default_timing_and_replace_gives_a_scaled_variant():
    assert chatd.CONTRACT.timing == chatd.TODAY.timing == DEFAULT_TIMING
    scaled = replace(chatd.CONTRACT, timing=SMALL)
    assert scaled.timing == SMALL and replace(scaled, timing=DEFAULT_TIMING) == chatd.CONTRACT
    assert chattool.NO_ANSWER_REASON == chattool.no_answer_reason(DEFAULT_TIMING.agent_answer_timeout_ms)


def test_agent_rules_replaces_only_durations():
    base = agent.OLD_AGENT
    scaled = SMALL.agent_rules(base)
    assert (scaled.age_margin_ms, scaled.output_wait_cap_ms, scaled.exited_reap_after_ms) == (2, 18, 18)
    assert replace(scaled, age_margin_ms=base.age_margin_ms, output_wait_cap_ms=base.output_wait_cap_ms,
                   exited_reap_after_ms=base.exited_reap_after_ms) == base


# ---------------------------------------------------------------------------
# (b) small() keeps the orderings
# ---------------------------------------------------------------------------

# The orderings the reference relies on, as pairs a < b with the reason. The same table
# (with sums and ties) is model/timing.py's ORDERINGS, which violations() checks; this one
# is spelled out so a reader sees each pair at once.
ORDER_PAIRS = [
    ("agent_age_margin_ms", "agent_answer_timeout_ms", "the age margin is a transit allowance, below every wait"),
    ("agent_age_margin_ms", "execute_default_timeout_ms", "the margin is far shorter than a command"),
    ("execute_default_timeout_ms", "agent_answer_timeout_ms",
     "a default foreground start ends at its execute deadline, not 'did not answer'"),
    ("agent_answer_timeout_ms", "agent_output_wait_cap_ms", "a read within the answer timeout is never capped"),
    ("agent_answer_timeout_ms", "task_timeout_ms", "a request's wait fits in one attempt"),
    ("snapshot_timeout_ms", "task_timeout_ms", "the snapshot fits in one attempt"),
    ("dial_timeout_ms", "task_timeout_ms", "the dial fits in one attempt"),
    ("agent_output_wait_cap_ms", "task_timeout_ms", "a long command re-reads within one attempt"),
    ("task_retry_initial_backoff_ms", "task_retry_max_backoff_ms", "the backoff doubles up to its cap"),
    ("task_retry_max_backoff_ms", "task_timeout_ms", "a retry waits less than an attempt lasts"),
    ("default_gen_time_ms", "task_timeout_ms", "a generation fits in its attempt"),
    ("heartbeat_interval_ms", "heartbeat_stale_ms", "a live worker never looks stale"),
    ("runner_sync_interval_ms", "heartbeat_stale_ms", "a runner notices its lost chat within a stale window"),
    ("heartbeat_interval_ms", "runner_sync_interval_ms", "as in reality: 9 s < 15 s"),
]


@pytest.mark.parametrize("a, b, why", ORDER_PAIRS, ids=[f"{a}<{b}" for a, b, _ in ORDER_PAIRS])
def test_small_keeps_pair_order(a, b, why):
    assert getattr(DEFAULT_TIMING, a) < getattr(DEFAULT_TIMING, b), why
    assert getattr(SMALL, a) < getattr(SMALL, b), why


@pytest.mark.parametrize("left, op, right, why", ORDERINGS, ids=[f"{lhs} {o} {r}" for lhs, o, r, _ in ORDERINGS])
def test_orderings_hold_at_reference_and_small(left, op, right, why):
    holds = {"<": lambda a, b: a < b, "<=": lambda a, b: a <= b, "==": lambda a, b: a == b}[op]
    for timing in (DEFAULT_TIMING, SMALL):
        assert holds(timing.value(left), timing.value(right)), why


def test_small_is_an_order_preserving_map_of_the_real_values():
    """Every pair of real durations compares the same way (ties included) at small
    timing, so nothing that comes first in a real run comes later in a small one."""
    names = [f.name for f in fields(Timing)]
    for a in names:
        for b in names:
            real = (getattr(DEFAULT_TIMING, a) > getattr(DEFAULT_TIMING, b)) - (
                getattr(DEFAULT_TIMING, a) < getattr(DEFAULT_TIMING, b))
            small = (getattr(SMALL, a) > getattr(SMALL, b)) - (getattr(SMALL, a) < getattr(SMALL, b))
            assert real == small, (a, b)


def test_violations_names_a_broken_ordering():
    broken = replace(SMALL, execute_default_timeout_ms=SMALL.agent_answer_timeout_ms + 1)
    found = broken.violations()
    assert any(v.startswith("execute_default_timeout_ms (18) < agent_answer_timeout_ms (17) fails") for v in found)
    assert Timing().violations() == [] and SMALL.violations() == []


def test_value_reads_sums_with_factors():
    assert DEFAULT_TIMING.value("dial_timeout_ms + 3*heartbeat_interval_ms") == 30_000 + 27_000


# ---------------------------------------------------------------------------
# The timing reaches every timer and text
# ---------------------------------------------------------------------------


def timers(effects) -> dict[str, int]:
    return {e.name: e.after_ms for e in effects if isinstance(e, SetTimer)}


def execute_call(provider_id: str, **args) -> chattool.ToolCall:
    return chattool.ToolCall(provider_id, "execute", json.dumps(args))


def test_replica_boot_arms_the_timings_loops():
    rules = replace(chatd.CONTRACT, timing=SMALL)
    _, eff = chatd.replica_boot("replica-1", 0, rules, 1)
    assert timers(eff) == {chatd.TIMER_ACQUIRE: 16, chatd.TIMER_HEARTBEAT: 5}
    rep, _ = chatd.replica_boot("replica-1", 0, rules, 1)
    for name, after in ((chatd.TIMER_ACQUIRE, 16), (chatd.TIMER_HEARTBEAT, 5)):
        _, _, eff = chatd.replica_on_timer(rep, chatd.db_empty(), name, 10, 10)
        assert timers(eff) == {name: after}


def test_chattool_arms_the_timings_answer_and_execute_default():
    ident = chattool.Identity(CHAT, 7, "toolu_1", chattool.ToolCallAge(0, 0))
    edit = chattool.ToolCall("toolu_1", "edit_files", json.dumps(
        {"files": [{"path": "/a", "edits": [{"search": "x", "replace": "y"}]}]}))
    cs, eff = chattool.begin_call(edit, ident, "replica-1", "p", CHAT, 0, timing=SMALL)
    assert list(timers(eff).values()) == [SMALL.agent_answer_timeout_ms]
    # A foreground execute without a timeout: only the execute default (6 < 17) bounds it.
    cs, eff = chattool.begin_call(execute_call("toolu_1", command="make"), ident, "replica-1", "p", CHAT, 0,
                                  timing=SMALL)
    assert list(timers(eff).values()) == [SMALL.execute_default_timeout_ms] and cs.timing == SMALL
    # The same call at the reference timing.
    _, eff = chattool.begin_call(execute_call("toolu_1", command="make"), ident, "replica-1", "p", CHAT, 0)
    assert list(timers(eff).values()) == [chattool.EXECUTE_DEFAULT_TIMEOUT_MS]


def test_answer_timeout_text_prints_the_configured_timeout():
    """Go formats ErrAgentAnswerTimeout from its constant, so a scaled build says its own
    timeout: 'did not answer within 17ms' at small timing, '1m0s' at the reference."""
    ident = chattool.Identity(CHAT, 7, "toolu_1", chattool.ToolCallAge(0, 0))
    write = chattool.ToolCall("toolu_1", "write_file", json.dumps({"path": "/a", "content": "x"}))
    for timing, text in ((SMALL, "17ms"), (DEFAULT_TIMING, "1m0s")):
        cs, eff = chattool.begin_call(write, ident, "replica-1", "p", CHAT, 0, timing=timing)
        (name, after), = timers(eff).items()
        done, _ = chattool.on_timer(cs, name, after)
        assert done.result.kind == "unknown" and done.result.reason == "no_answer"
        assert f"the workspace agent did not answer within {text}, so " in done.result.content


def test_snapshot_and_timed_out_text_follow_the_timing():
    ident = chattool.Identity(CHAT, 7, "toolu_1", chattool.ToolCallAge(0, 0))
    cs, eff = chattool.begin_call(execute_call("toolu_1", command="sleep 1"), ident, "replica-1", "p", CHAT, 0,
                                  timing=SMALL)
    start = next(e.request for e in eff if hasattr(e, "request"))
    cs, eff = chattool.on_answer(cs, Response(start.req_id, 200, "application/json",
                                              json.dumps({"id": ident.uuid, "started": True}).encode()), 1)
    deadline = cs.deadline_timer
    cs, eff = chattool.on_timer(cs, deadline, 6)
    assert timers(eff) == {cs.snapshot_timer: SMALL.snapshot_timeout_ms}
    snap = cs.pending_req_id
    cs, _ = chattool.on_answer(cs, Response(snap, 200, "application/json",
                                            json.dumps({"running": True, "output": ""}).encode()), 7)
    assert cs.result.kind == "timed_out" and "command timed out after 6ms" in cs.result.content


def test_interrupt_stop_age_and_cancel_bound_follow_the_timing():
    call = execute_call("toolu_1", command="make")
    (pick,) = chattool.select_cancels([call], SMALL)
    assert pick.plan.stop_run_age_ms == SMALL.execute_default_timeout_ms
    assert chattool.interrupted_call(call).stop_run_age_ms == chattool.EXECUTE_DEFAULT_TIMEOUT_MS
    ident = chattool.Identity(CHAT, 7, "toolu_1", chattool.ToolCallAge(0, 0))
    cs, eff = chattool.begin_cancel(pick.call, pick.plan, ident, "replica-1", "p", CHAT, 0, timing=SMALL)
    assert list(timers(eff).values()) == [SMALL.agent_answer_timeout_ms]
    done, _ = chattool.on_answer(cs, TransportError(cs.pending_req_id, "connection reset"), 3)
    assert done.result.kind == "unknown"


# ---------------------------------------------------------------------------
# (c), (d) a whole world at small and at reference timing
# ---------------------------------------------------------------------------

LATENCY_MS = 1  # below the small age margin (2), as model/timing.py Rule 4 requires


def run_world(config: system.WorldConfig, until_ms: int, restart_before: str | None = None):
    """Drive toolcall_sim.model.system deterministically: every message arrives LATENCY_MS after it
    was sent, timers fire when due, the earliest event first (messages before timers,
    then by sequence number). ``restart_before`` restarts the agent just before the
    first message whose label starts with it arrives. Returns the final system, all
    records and the timers each step armed ((node, name), after ms)."""
    step = system.initial(config)
    s, records, armed = step.system, list(step.records), []
    while True:
        events = [(env.sent_at_ms + LATENCY_MS, 0, env.seq, env) for env in s.in_flight]
        events += [(t.due_ms, 1, t.seq, t) for t in s.timers.values()]
        if not events:
            break
        at, kind, _, what = min(events, key=lambda e: e[:3])
        if at > until_ms:
            break
        action = (system.Deliver(max(at, s.now_ms), what.seq, what.what) if kind == 0
                  else system.Fire(max(at, s.now_ms), what.node, what.name))
        if restart_before and kind == 0 and what.what.startswith(restart_before):
            restart_before = None
            step = system.apply(s, system.Fault(action.at_ms, "agent_restart"))
            s, records = step.system, records + list(step.records)
        before = {k: t.seq for k, t in s.timers.items()}
        step = system.apply(s, action)
        s = step.system
        records += step.records
        armed += [(k, t.due_ms - s.now_ms) for k, t in s.timers.items() if before.get(k) != t.seq]
    return s, records, armed


def world_config(rules: chatd.ChatdRules, timing: Timing, command: str) -> system.WorldConfig:
    call = execute_call("toolu_01", command=command)
    return system.WorldConfig(
        replicas=("replica-1", "replica-2"),
        chatd_rules=replace(rules, timing=timing),
        agent_config=agent.AgentConfig(rules=timing.agent_rules(agent.AgentRules())),
        chats=(system.ChatSpec("chat", CHAT, ((call,),), gen_time_ms=timing.default_gen_time_ms),),
    )


def truths(records, kind):
    return [r for r in records if r.get("kind") == "truth" and r.get("truth") == kind]


CASES = [
    # (rules, timing, command, until): the command runs half the execute default.
    pytest.param(chatd.CONTRACT, SMALL, "echo hi; sleep 0.003", 10 * SMALL.task_timeout_ms, id="contract-small"),
    pytest.param(chatd.TODAY, SMALL, "echo hi; sleep 0.003", 10 * SMALL.task_timeout_ms, id="today-small"),
    pytest.param(chatd.CONTRACT, DEFAULT_TIMING, "echo hi; sleep 5", 120_000, id="contract-reference"),
    pytest.param(chatd.TODAY, DEFAULT_TIMING, "echo hi; sleep 5", 120_000, id="today-reference"),
]


@pytest.mark.parametrize("rules, timing, command, until_ms", CASES)
def test_world_completes_one_tool_call_with_one_process(rules, timing, command, until_ms):
    s, records, armed = run_world(world_config(rules, timing, command), until_ms)
    started = truths(records, "process_started")
    committed = truths(records, "result_committed")
    assert len(started) == 1, started
    assert [(r["provider_id"], r["result_kind"]) for r in committed] == [("toolu_01", "completed")]
    chat = s.db.chats[CHAT]
    assert chat.status == chatd.WAITING
    assert [m.role for m in chat.messages] == ["user", "assistant", "tool"]
    result = json.loads(chat.messages[2].result.content)
    assert result["exit_code"] == 0 and result["output"] == "hi\n"
    # Every duration chatd armed came from the timing, none from a reference constant.
    by_kind = {}
    for (node, name), after in armed:
        if node.startswith("replica-"):
            if name.startswith(chatd.SYNC_PREFIX):
                kind = "sync"
            else:  # <attempt>/timeout, <attempt>/c0:deadline2 -> timeout, deadline
                kind = name.rsplit("/", 1)[-1].split(":")[-1].rstrip("0123456789")
            by_kind.setdefault(kind, set()).add(after)
    assert by_kind["acquire"] == {timing.acquisition_interval_ms}
    assert by_kind["heartbeat"] == {timing.heartbeat_interval_ms}
    assert by_kind["sync"] == {timing.runner_sync_interval_ms}
    assert by_kind["timeout"] == {timing.task_timeout_ms}
    assert by_kind["dial"] == {timing.dial_timeout_ms}
    assert by_kind["gen"] == {timing.default_gen_time_ms}
    assert by_kind["deadline"] == {timing.execute_default_timeout_ms}


def test_small_world_times_out_a_command_past_the_execute_default():
    """At small timing a command longer than the execute default (6 ms) is reported
    timed out after 6ms, with its process left running, and still started once."""
    s, records, _ = run_world(world_config(chatd.CONTRACT, SMALL, "sleep 0.05"), 10 * SMALL.task_timeout_ms)
    assert len(truths(records, "process_started")) == 1
    (committed,) = truths(records, "result_committed")
    assert committed["result_kind"] == "timed_out"
    assert "command timed out after 6ms" in s.db.chats[CHAT].messages[2].result.content


@pytest.mark.parametrize("timing", [SMALL, DEFAULT_TIMING], ids=["small", "reference"])
def test_agent_restarted_before_the_start_arrives_is_refused_at_both_timings(timing):
    """The age rule still works at small timing: the agent restarts just before the
    start arrives, so the call is older than the agent and the start is refused; chatd
    commits unknown "agent restarted" and nothing runs. (The runs above show the other
    half: an agent booted with the chat takes the call as new, margin 2 <= gen time 2.)"""
    config = world_config(chatd.CONTRACT, timing, "echo hi")
    s, records, _ = run_world(config, 10 * timing.task_timeout_ms, restart_before="start toolu_01")
    assert truths(records, "process_started") == []
    (committed,) = truths(records, "result_committed")
    assert committed["result_kind"] == "unknown"
    assert s.db.chats[CHAT].messages[2].result.reason == "agent_restarted"


def test_world_keeps_its_clock_from_before_planted_bugs():
    """A world records chatd's timing before its variant's planted bugs
    (``WorldConfig.reference_timing``), so the checkers bound it by its own clock without
    knowing the bugs: a world with its own answer timeout keeps it under a bug that
    removes the answer timeout, and a world built by hand (no reference) is its own."""
    from toolcall_sim.world.run import build
    from toolcall_sim.world.scenario import from_dict

    data = {"name": "clock", "seed": 1, "until": "1m", "world": {"agent_answer_timeout": "5s"},
            "turns": [{"chat": "chat-1", "tool_calls": [{"id": "toolu_01", "tool": "execute", "command": "true"}]}]}
    config, _ = build(from_dict(data), "contract+no-agent-answer-timeout")
    assert config.chatd_rules.timing.agent_answer_timeout_ms == 10**12
    assert config.timing_before_bugs().agent_answer_timeout_ms == 5_000
    plain, _ = build(from_dict(data), "contract")
    assert plain.timing_before_bugs() == plain.chatd_rules.timing
    by_hand = world_config(chatd.CONTRACT, SMALL, "true")
    assert by_hand.reference_timing is None and by_hand.timing_before_bugs() == SMALL
