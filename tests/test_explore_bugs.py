"""Every planted bug is found by the exhaustive explorer in a world small enough for CI:
its property fails as a new finding (not a residual risk), the shortest counterexample
replays through the model to the same trace hash, and the same world with the same
budgets under the plain contract is exhausted with no new finding."""

from __future__ import annotations

import functools
import json
from pathlib import Path

import pytest

from toolcall_sim.model import explore as ex
from toolcall_sim.model import planted_bugs, worlds
from toolcall_sim.model import properties as props
from toolcall_sim.model.timing import Timing
from toolcall_sim.drivers import counterexample as cx
from toolcall_sim.cli.main import main

NONE = dict(agent_restarts=0, ownership_changes=0, interrupts=0, lost_responses=0, task_retries=0)
MAX_STATES = 20_000  # far above every world below: reaching it fails the exhaustion check

# bug -> (world, budgets): the smallest world and the fewest faults that find it.
WHERE = {
    # The new owner's start reaches the agent while the first owner's start is still in
    # its handler: without the record inserted first, both run.
    "run-before-record": ("default", dict(ownership_changes=1)),
    # The new owner's edit, sent as the tool call is created (age 0), waits its 1 ms in
    # flight across an agent restart: 1 ms of uptime is more than its age, so without the
    # margin the new agent applies it again; with the 2 ms margin it refuses.
    "no-age-margin": ("two-messages", dict(agent_restarts=1, ownership_changes=1)),
    # The interrupt's cancel overtakes the start, which waits its 1 ms in flight.
    "cancel-without-marker": ("default", dict(interrupts=1)),
    "cancel-without-marker-truth": ("default", dict(interrupts=1)),
    "interrupt-without-cancel": ("default", dict(interrupts=1)),
    "interrupt-drops-not-run": ("default", dict(interrupts=1)),
    # The interrupt strikes as the foreground call's 8 ms deadline passes.
    "stop-rule-inclusive": ("default", dict(interrupts=1)),
    "background-stopped-on-interrupt": ("default", dict(interrupts=1)),
    "records-lost-on-new-message": ("default", dict(task_retries=1)),
    # Needs another chat running the same command.
    "pid-from-command": ("two-chats", dict(interrupts=1)),
    # Needs an old owner that has not yet heard of the takeover when its answer arrives.
    "commit-without-owner-fence": ("late-pubsub", dict(ownership_changes=1)),
    "commit-without-fences": ("late-pubsub", dict(ownership_changes=1)),
    # The foreground call's read outlives the 10 ms attempt: the timed-out attempt's
    # batch goes on and commits after the retry began attempt 2.
    "commit-without-attempt-fence": ("default", dict(task_retries=1)),
    # Needs an interrupt while the model writes its next message, all calls resolved.
    "interrupt-answers-resolved-calls": ("two-messages", dict(interrupts=1)),
    # The cancel's answer is lost and chatd waits for it with no bound: only the attempt
    # timeout (10 ms) ends the wait, and the retried cancel finishes the interrupt 11 ms
    # after it began, past the 10 ms bound (dial 3 + answer 4 + slack 3 on the explorer's
    # clock). The contract ends the lost cancel with unknown after its 4 ms answer timeout.
    "no-agent-answer-timeout": ("two-messages", dict(interrupts=1, lost_responses=1, task_retries=1)),
}


def bounds(**budgets) -> ex.Bounds:
    """Messages may wait 1 ms in flight (below the 2 ms age margin, so the contract's
    assumption holds): the age and cancel races above need a request that waits."""
    return ex.Bounds(max_in_flight_ms=1, **{**NONE, **budgets})


@functools.lru_cache(maxsize=None)
def _contract_run(world: str, budgets: tuple) -> ex.Result:
    """The plain contract in a bug's world (shared by the bugs of that world)."""
    return ex.explore(worlds.build(world, "contract"), bounds(**dict(budgets)), max_states=MAX_STATES)


def test_every_planted_bug_has_a_world():
    assert sorted(WHERE) == sorted(m.name for m in planted_bugs.PLANTED_BUGS)


@pytest.mark.parametrize("mutant", planted_bugs.PLANTED_BUGS, ids=lambda m: m.name)
def test_explorer_finds_planted_bug(mutant, tmp_path):
    world, budgets = WHERE[mutant.name]
    variant = f"contract+{mutant.name}"
    config = worlds.build(world, variant)
    b = bounds(**budgets)
    r = ex.explore(config, b, max_states=MAX_STATES, stop_on=lambda f: f.property == mutant.caught_by)
    (found,) = [v for v in r.violations if v.property == mutant.caught_by]
    assert found.residual_risk is None, found.detail

    path = cx.save_actions(tmp_path / f"{mutant.name}.json", cx.explore_world(world, variant, b), found.property,
                           found.residual_risk, found.path, "explore")
    replayed = cx.replay(path)
    assert replayed.reproduced and replayed.mismatch is None
    assert replayed.trace_sha256 == replayed.expected_sha256

    clean = _contract_run(world, tuple(sorted(budgets.items())))
    assert clean.exhausted
    assert [(v.property, v.detail) for v in clean.violations if v.residual_risk is None] == []


def test_interrupt_bound_follows_the_world_clock():
    """interrupt_finishes allows the interrupt task the rule's dial + answer timeout of the
    world's clock, no slack (issue 34): 90 s on the reference clock, 7 small ms on the
    explorer's; a planted bug that removes
    chatd's answer timeout does not move it, because the world keeps its clock from
    before the bug (``WorldConfig.reference_timing``) and the checker reads that."""
    from toolcall_sim.world.run import build
    from toolcall_sim.world.scenario import load

    assert props.interrupt_bound_ms(Timing()) == 90_000
    assert props.interrupt_bound_ms(Timing.explorer()) == 7
    scenario = load(Path(__file__).resolve().parent.parent / "scenarios" / "bug_lost_cancel.toml")
    real, _ = build(scenario, "contract+no-agent-answer-timeout")
    assert real.chatd_rules.timing.agent_answer_timeout_ms == 10**12
    assert props.interrupt_bound_ms(real.timing_before_bugs()) == 90_000
    small = worlds.build("default", "contract+no-agent-answer-timeout")
    assert small.chatd_rules.timing.agent_answer_timeout_ms == 10**12
    assert props.interrupt_bound_ms(small.timing_before_bugs()) == 7


def test_counterexample_names_its_world(tmp_path, capsys):
    """`explore --world` records the world's name in the counterexample, and `replay`
    rebuilds that world; a file that names no world is of the default world."""
    code = main(["explore", "--world", "two-messages", "--variant", "contract+interrupt-answers-resolved-calls",
                 "--agent-restarts", "0", "--ownership-changes", "0", "--lost-responses", "0",
                 "--task-retries", "0", "--json", "--out", str(tmp_path)])
    doc = json.loads(capsys.readouterr().out)
    assert code == 1 and doc["world"] == "two-messages"
    (v,) = [v for v in doc["violations"] if v["property"] == "one_result"]
    assert json.loads(open(v["counterexample"]).read())["world"]["name"] == "two-messages"
    assert main(["replay", v["counterexample"]]) == 1
    assert cx.world_of({"kind": "explore", "variant": "contract"}) == worlds.default("contract")
    with pytest.raises(cx.BadInput):
        cx.world_of({"kind": "explore", "name": "three-chats"})


def _interrupt_violations(answer_timeout_ms: int) -> list:
    """bug_lost_cancel (the cancel is lost, so the interrupt ends at chatd's answer
    timeout) on a chatd whose answer timeout is ``answer_timeout_ms`` while the world's
    rule stays the reference 1 minute."""
    import dataclasses

    from toolcall_sim.world.run import build
    from toolcall_sim.world.scenario import load
    from toolcall_sim.world.simulation import Simulation

    scenario = load(Path(__file__).resolve().parent.parent / "scenarios" / "bug_lost_cancel.toml")
    config, options = build(scenario, "contract")
    rule = config.chatd_rules.timing
    slow = dataclasses.replace(rule, agent_answer_timeout_ms=answer_timeout_ms)
    config = dataclasses.replace(config, chatd_rules=dataclasses.replace(config.chatd_rules, timing=slow),
                                 reference_timing=rule)
    world = Simulation(config, scenario.seed, options, None)
    world.run(scenario.until_ms)
    return [v for v in props.evaluate(world.trace, world.system).violations if v.property == "interrupt_finishes"]


def test_an_interrupt_past_the_rules_own_bound_fails():
    """Issue 34: an interrupt task that takes 100 s where the rule allows dial 30 s +
    answer timeout 1 m = 90 s fails interrupt_finishes (the bound once had 30 s of slack
    and let it pass); one that ends inside the bound (the answer timeout at 85 s) passes."""
    (v,) = _interrupt_violations(100_000)
    assert "took 100048 ms" in v.detail and "(bound: dial + agent answer timeout, 90000 ms)" in v.detail
    assert _interrupt_violations(85_000) == []


def test_an_interrupt_noticed_later_than_the_sync_interval_fails():
    """The notice bound of interrupt_finishes fires: with the rule's sync interval at 5 ms
    (the run itself keeps 15 s), the runner's notice through pubsub, some 11 ms after the
    request, is past it, and that is the one violation (the task's own bound holds)."""
    import dataclasses

    from toolcall_sim.world.run import build
    from toolcall_sim.world.scenario import load
    from toolcall_sim.world.simulation import Simulation

    scenario = load(Path(__file__).resolve().parent.parent / "scenarios" / "bug_lost_cancel.toml")
    config, options = build(scenario, "contract")
    rule = dataclasses.replace(config.chatd_rules.timing, runner_sync_interval_ms=5)
    world = Simulation(dataclasses.replace(config, reference_timing=rule), scenario.seed, options, None)
    world.run(scenario.until_ms)
    found = [v for v in props.evaluate(world.trace, world.system).violations if v.property == "interrupt_finishes"]
    (v,) = found
    assert " was noticed " in v.detail and "(bound: the runner's sync interval, 5 ms)" in v.detail, v.detail


def _unowned_interrupt(acquisition_bound_ms: int | None) -> list:
    """Swarm seed 60489 (issue 34): the chat's chat:ownership publish is lost, so no
    runner holds it when the user interrupts at 6.9 s; the replica acquires it at its
    30 s poll and notices the interrupt then, 23 s after the request. ``acquisition_bound_ms``
    replaces the rule's poll interval in the checker's reference timing (None: as run)."""
    import dataclasses

    from toolcall_sim.world.run import build
    from toolcall_sim.world.scenario import from_dict
    from toolcall_sim.world.simulation import Simulation

    scenario = from_dict({
        "name": "unowned-interrupt", "seed": 60489, "until": "8m37s500ms", "world": {"replicas": 1},
        "network": {"latency": {"min": "19ms", "max": "19ms"}, "loss": 0.0229},
        "turns": [{"chat": "chat-1", "tool_calls": [
            {"id": "toolu_05", "tool": "write_file", "path": "/home/coder/notes/note5.md", "content": "x\n"}]}],
        "faults": [{"kind": "interrupt", "chat": "chat-1", "at": "6s916ms"}],
    })
    config, options = build(scenario, "contract")
    if acquisition_bound_ms is not None:
        rule = dataclasses.replace(config.chatd_rules.timing, acquisition_interval_ms=acquisition_bound_ms)
        config = dataclasses.replace(config, reference_timing=rule)
    world = Simulation(config, scenario.seed, options, None)
    world.run(scenario.until_ms)
    assert [r["t_ms"] for r in world.trace if r.get("note") == "acquired"][0] == 30_000  # (the race happened)
    return [v for v in props.evaluate(world.trace, world.system).violations if v.property == "interrupt_finishes"]


def test_an_interrupt_of_an_unowned_chat_is_bound_by_the_acquisition_poll():
    """A chat no runner holds is noticed at the acquisition poll (30 s), not the runner's
    15 s sync: the 23 s notice passes; with the rule's poll at 20 s it fails, naming it."""
    assert _unowned_interrupt(None) == []
    (v,) = _unowned_interrupt(20_000)
    assert "(bound: the acquisition poll, 20000 ms)" in v.detail, v.detail
