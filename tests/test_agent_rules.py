"""The agent's rules object: Rev C's hooks, the planted bugs that override them, how bugs
combine, and that the handlers branch on the rules only for the real version difference
(model/agent/rules.py, model/agent/planted.py)."""

from __future__ import annotations

import ast
import pathlib
from dataclasses import fields, replace

import pytest

from toolcall_sim.model import agent, planted_bugs
from toolcall_sim.model.agent import planted
from toolcall_sim.model.identity import Key
from toolcall_sim.world.run import run_scenario
from toolcall_sim.world.scenario import load

AGENT_DIR = pathlib.Path(__file__).resolve().parent.parent / "model" / "agent"
SCENARIOS = pathlib.Path(__file__).resolve().parent.parent / "scenarios"
CHAT = "11111111-1111-4111-8111-111111111111"
OTHER_CHAT = "22222222-2222-4222-8222-222222222222"
REV_C = agent.AgentRules()


def test_stop_rule_is_strict_and_the_planted_bug_is_inclusive():
    """Section 4.2: kill while run age < threshold; stop-rule-inclusive also at ==."""
    bug = planted.StopRuleInclusive()
    assert [REV_C.stop_below(age, 5) for age in (4, 5, 6)] == [True, False, False]
    assert [bug.stop_below(age, 5) for age in (4, 5, 6)] == [True, True, False]


def test_chat_isolation_and_the_planted_bug_that_ignores_it():
    """api.go: refused only when the request has a chat and the process another, non-empty
    one; pid-from-command looks processes up without the chat."""
    assert REV_C.process_visible(CHAT, OTHER_CHAT) is False
    assert (REV_C.process_visible(None, OTHER_CHAT), REV_C.process_visible(CHAT, ""),
            REV_C.process_visible(CHAT, CHAT)) == (True, True, True)
    assert planted.PidFromCommand().process_visible(CHAT, OTHER_CHAT) is True


def test_process_ids_are_tool_call_uuids_unless_planted_from_the_command():
    """A tool call's process is named by its UUID, so two chats never share one; the
    planted bug names it by the command, so two chats running one command collide."""
    mine, theirs = Key(CHAT, 1, "toolu_01"), Key(OTHER_CHAT, 1, "toolu_01")
    assert (REV_C.pid_for(mine, "sleep 9"), REV_C.pid_for(theirs, "sleep 9")) == (mine.uuid, theirs.uuid)
    bug = planted.PidFromCommand()
    assert bug.pid_for(mine, "sleep 9") == bug.pid_for(theirs, "sleep 9") != mine.uuid
    started = agent.Recorded(200, agent.JSON, b'{"id": "proc-x", "started": true}')
    assert (REV_C.pid_to_stop(mine, started), bug.pid_to_stop(mine, started)) == (mine.uuid, "proc-x")
    assert bug.pid_to_stop(mine, agent.Recorded(500, agent.JSON, b"not json")) == mine.uuid


def test_records_kept_on_insert():
    """Section 2.4 step 5: a newer message starts afresh, the same message keeps its
    records; records-lost-on-new-message starts afresh every time."""
    chat = agent.ChatRecords(3, agent.FMap([("toolu_01", "record")]))
    assert REV_C.records_kept_on_insert(chat, 3) is chat
    assert REV_C.records_kept_on_insert(chat, 4) == agent.ChatRecords(4)
    assert REV_C.records_kept_on_insert(None, 1) == agent.ChatRecords(1)
    assert planted.RecordsLostOnNewMessage().records_kept_on_insert(chat, 3) == agent.ChatRecords(3)


def test_record_order_and_the_planted_bug_that_runs_first():
    """A1: Rev C records a call when it is proven new; run-before-record records nothing
    then and inserts the record only when the run publishes."""
    key = Key(CHAT, 1, "toolu_01")
    state = agent.boot(agent.AgentConfig(), 0)
    pending = agent.Record("hash", False, 0, "req-1", None)
    assert agent.current(REV_C.record_when_proven_new(state, key, pending), key)
    bug = planted.RunBeforeRecord()
    assert bug.record_when_proven_new(state, key, pending) is state
    assert REV_C.record_when_published(state, key, pending) is state  # nothing to fill in
    assert agent.current(bug.record_when_published(state, key, pending), key)


def test_cancel_marker_and_the_planted_bug_without_it():
    """US10: a cancel of a call never received leaves a canceled marker; the planted bug
    leaves nothing."""
    key = Key(CHAT, 1, "toolu_01")
    state = agent.boot(agent.AgentConfig(), 0)
    marked, effects = REV_C.mark_canceled(state, key, 5)
    assert marked.chats[CHAT].records["toolu_01"].canceled and len(effects) == 1
    assert planted.CancelWithoutMarker().mark_canceled(state, key, 5) == (state, [])


def test_rules_fields_are_values_not_bug_switches():
    """A field is the name, the real version difference, or a duration; a planted bug is
    a hook override, never a field the handlers branch on."""
    names = [f.name for f in fields(agent.AgentRules)]
    assert all(n in ("name", "understands_tool_calls") or n.endswith("_ms") for n in names), names


def test_with_bugs_keeps_the_values_and_combines_bugs():
    """A bug applies on top of any rules value (an old agent with a scenario's margin),
    several bugs combine into one class, and rules resolved twice compare equal."""
    base = replace(agent.OLD_AGENT, age_margin_ms=7)
    bugged = agent.with_bugs(base, (planted.StopRuleInclusive,))
    assert isinstance(bugged, planted.StopRuleInclusive)
    assert [getattr(bugged, f.name) for f in fields(bugged)] == [getattr(base, f.name) for f in fields(base)]
    assert agent.with_bugs(base, ()) is base
    assert type(agent.with_bugs(bugged, (planted.StopRuleInclusive,))) is type(bugged)

    variant = "contract+stop-rule-inclusive+pid-from-command"
    _, both = planted_bugs.resolve(variant)
    assert both.name == "rev-c+stop-rule-inclusive+pid-from-command"
    assert both.stop_below(5, 5) and both.process_visible(CHAT, OTHER_CHAT)
    again = planted_bugs.resolve(variant)[1]
    assert again == both and repr(again) == repr(both)
    assert planted_bugs.resolve("contract")[1] == REV_C


@pytest.mark.parametrize("bug", [b for b in planted_bugs.PLANTED_BUGS if b.agent_hooks], ids=lambda b: b.name)
def test_each_agent_bug_overrides_only_hooks(bug):
    """An agent bug's class defines nothing but overrides of AgentRules hooks."""
    for cls in bug.agent_hooks:
        own = {n for n, v in vars(cls).items() if callable(v)}
        hooks = {n for n, v in vars(agent.AgentRules).items() if callable(v) and not n.startswith("_")}
        assert own and own <= hooks, (cls.__name__, own - hooks)


def _is_rules(node: ast.expr) -> bool:
    return (isinstance(node, ast.Name) and node.id == "rules") or (isinstance(node, ast.Attribute) and node.attr == "rules")


def rules_branches(source: str) -> list[str]:
    """Every ``if``, conditional expression or ``while`` whose test reads
    ``rules.<attr>`` (or ``<...>.rules.<attr>``), as 'line attr'."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, (ast.If, ast.IfExp, ast.While)):
            for sub in ast.walk(node.test):
                if isinstance(sub, ast.Attribute) and _is_rules(sub.value):
                    found.append(f"{node.lineno} {sub.attr}")
    return found


@pytest.mark.parametrize("path", sorted(AGENT_DIR.glob("*.py")), ids=lambda p: p.name)
def test_agent_branches_only_on_the_real_version_difference(path):
    """The handlers follow the rules' hooks; an ``if`` on the rules reads only the real
    version difference (Rev C or an old agent)."""
    branches = [b for b in rules_branches(path.read_text()) if not b.endswith(" understands_tool_calls")]
    assert branches == []


def test_rules_branch_check_catches_a_bug_switch():
    """The check above fails on a handler that branches on a bug switch."""
    source = "def f(state):\n    if state.config.rules.pid_from_command:\n        return 1\n"
    assert rules_branches(source) == ["2 pid_from_command"]
    assert rules_branches("x = a if rules.stop_rule_inclusive else b\n") == ["1 stop_rule_inclusive"]
    assert rules_branches("x = a if cfg.rules.age_margin_ms else b\n") == ["1 age_margin_ms"]
    assert rules_branches("x = cfg.rules.age_margin_ms\n") == []

# The trace of every agent planted bug in its scenario, and of three bugs together, as
# they were before the bugs became hook overrides (model/agent.py's knobs, commit
# 03d2845): the overrides are the same bugs. Each entry pins the stepwise world's trace
# (``WorldOptions.idle = "stepwise"``: every loop firing its own step, the hashes from
# before idle loop firings were batched) and the default batched world's. A change that
# means to move one re-pins it with the hash that ``python -m toolcall_sim run
# scenarios/<scenario>.toml --variant <variant>`` prints last (run_scenario(...,
# idle="stepwise") for the first), and says why in its commit.
BUG_TRACES = [
    ("bug_delayed_retry_across_restart", "contract+no-age-margin",
     "d5be7b80e14308e0e86f68227235bac9d18053c14b757a4e67df4c7fbafce9a1",
     "cc7dfee242bbcd657b7c06a7e4ad45c6a89cbc2a57e9a004d25a5035e92b4bfe"),
    ("bug_interrupt_at_deadline", "contract+stop-rule-inclusive",
     "0f1deb3c272c76f1eb210080cfb1016a646596a5f405ea8015f6888f0814f6da",
     "ada72cfe527700f72c3d78045ccdc7158a2d4a245f53e1d76aafefc579f886c7"),
    ("bug_slow_spawn_retry", "contract+run-before-record",
     "1f4c91e61e3aeb7c74af7967d9bfc65a6f8fa7a9ef1f3d17c65af1046f53a301",
     "14f64be803a68aa8e5dd24cc45c067055743eeaa3609cfd700401b169d000680"),
    ("us04_retry_changes_nothing", "contract+records-lost-on-new-message",
     "f845fbf75b66440a7e82292776d388c0cc7eec84ea7ace2bf5fe0cc9b558bcc3",
     "53aa484c10c3678167de5657a4a2100619d4c2a7791400263ae2d9a373d98472"),
    ("us09_chat_isolation", "contract+pid-from-command",
     "4d018b9bb38da1becee07c31580399044030ad94c046366e6a7a90571e262541",
     "860dcf894a13ae9af13f12623039aa23c94ef6761ff0e8835c465383fe098b90"),
    ("us09_chat_isolation", "contract+pid-from-command+stop-rule-inclusive+run-before-record",
     "f347651e524ce58563a7d417fd5a92104e5d1f1e42afdf3a8f26e6422af39f0f",
     "532a469063a53a087c3ac3446c02614044f10f27524b95da9bc5f5cb2755d343"),
    ("us10_interrupt_before_start_arrives", "contract+cancel-without-marker",
     "4be394dc4c97fd0223e90cbaf3de55d532288f0d5e54ae665becf59e9cfee813",
     "45af017a80084485007053774c19a8c56631e353a4c44a07e21d07c573852f64"),
    ("us10_interrupt_before_start_arrives", "contract+cancel-without-marker-truth",
     "45822a978f3acd78bee003e9447d8e914748cd1855dce8617e9bc9c1da12b93d",
     "20b57031f4236631b59de227c0e72c33d3f09f0b5b616880eb36b565552e0687"),
]


@pytest.mark.parametrize("scenario,variant,stepwise_sha256,sha256", BUG_TRACES,
                         ids=[f"{s}/{v}" for s, v, _, _ in BUG_TRACES])
def test_agent_bug_traces_are_pinned(scenario, variant, stepwise_sha256, sha256):
    """Each agent planted bug behaves, step for step, as it did as a knob."""
    stepwise = run_scenario(load(SCENARIOS / f"{scenario}.toml"), variant, idle="stepwise")
    assert stepwise.trace_sha256 == stepwise_sha256
    result = run_scenario(load(SCENARIOS / f"{scenario}.toml"), variant)
    assert result.trace_sha256 == sha256
