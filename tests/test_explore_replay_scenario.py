"""A counterexample of ``toolcall-sim explore`` as a scenario ``run`` replays (issue 36):
``[replay]`` (sim/world/scenario_replay.py), written beside each counterexample file by
``explore SCENARIO.toml``, ``explore --world`` and the tour; ``run`` of it shows the same
violation at the same steps, deterministically; a step that does not fit, and every key a
replay cannot honour, is one line, exit 2. Every search here is small (seconds)."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

import pytest

from tests.test_explore_scenario import run  # (main(argv) -> exit code, stdout, stderr)
from toolcall_sim.drivers import counterexample as cx
from toolcall_sim.model import system as msys
from toolcall_sim.world import replay_world, replay_write
from toolcall_sim.world import scenario_replay as sr
from toolcall_sim.world.run import run_scenario
from toolcall_sim.world.scenario import ScenarioError, from_dict, load


def explored(argv: list[str], out: Path, capsys) -> list[dict]:
    """``explore ARGV --json --out OUT``: its violation rows."""
    code, text, err = run(["explore", *argv, "--out", str(out), "--json", "--quiet"], capsys)
    assert code in (0, 1), err
    return json.loads(text)["violations"]


def replays_the_same(row: dict, variant: str, capsys) -> str:
    """The row's scenario file: ``run`` of it exits 0 with the row's property violated,
    and its steps are the counterexample's actions, in order."""
    toml = Path(row["scenario"])
    assert toml.with_suffix(".json") == Path(row["counterexample"])
    code, text, err = run(["run", str(toml)], capsys)
    assert code == 0, text + err
    assert "expectations met" in text
    assert f"VIOLATION {row['property']} " in text or f"({row['property']})" in text
    scenario = load(toml)
    _, actions, _ = cx.load_any(row["counterexample"])
    assert list(scenario.replay.steps) == actions
    assert [a.label() for a in scenario.replay.steps] == row["actions"]
    expected = scenario.expectation(variant)
    assert row["property"] in expected.violations or row["residual_risk"] in expected.residual_risks
    return toml.read_text()


@pytest.mark.parametrize("second", ["background", "edit"])
def test_the_default_world_under_today(tmp_path, capsys, second):
    """``explore --world default``: the scenario names the small world (and its second
    call), its until is the search's horizon, and ``run`` shows the violation."""
    rows = explored(["--world", "default", "--second", second, "--variant", "today", "--stop-at-first"], tmp_path,
                    capsys)
    assert rows and all(r["scenario"] for r in rows)
    for row in rows:
        text = replays_the_same(row, "today", capsys)
        data = tomllib.loads(text)
        assert data["replay"]["world"] == "default" and data["until"] == "30s"
        assert data["replay"].get("second", "background") == second
        assert "turns" not in data and "world" not in data
        assert text.startswith(sr.MARKER)


def test_the_tour(tmp_path, capsys):
    """``explore`` without ``--world``: each property's first counterexample has its
    scenario too, in the stage's world."""
    rows = explored(["--variant", "today", "--max-states", "1000"], tmp_path, capsys)
    assert rows
    for row in rows:
        data = tomllib.loads(replays_the_same(row, "today", capsys))
        assert Path(row["scenario"]).name.startswith(data["replay"]["world"] + "-")


def test_a_shipped_scenario_under_today(tmp_path, capsys):
    """lost_start_answer under today: both of its violations, each as a scenario that
    keeps the file's turns and until, with [expect.today] what the replay shows."""
    rows = explored(["lost_start_answer", "--variant", "today"], tmp_path, capsys)
    assert sorted(r["property"] for r in rows) == ["at_most_once", "retry_changes_nothing"]
    for row in rows:
        data = tomllib.loads(replays_the_same(row, "today", capsys))
        assert data["until"] == "30m" and data["turns"][0]["tool_calls"][0]["id"] == "toolu_01"
        assert data["expect"] == {"today": {"violations": ["at_most_once", "retry_changes_nothing"],
                                            "residual_risks": []}}
        assert "faults" not in data and "seed" not in data and "network" not in data


@pytest.mark.parametrize("name,variant,prop", [
    ("bug_stale_attempt_commit", "contract+commit-without-attempt-fence", "fenced_commits"),
    ("us10_interrupt_before_start_arrives", "contract+interrupt-drops-not-run", "one_result_eventually"),
], ids=["fenced-commits", "eventually-property"])
def test_a_planted_bug(tmp_path, capsys, name, variant, prop):
    """A planted bug's counterexample (a variant the expectation's key must quote; an
    eventually-property, judged once the replayed run has quiesced)."""
    rows = explored([name, "--variant", variant], tmp_path, capsys)
    assert [r["property"] for r in rows] == [prop]
    text = replays_the_same(rows[0], variant, capsys)
    assert f'[expect."{variant}"]' in text


def test_a_search_with_its_own_horizon_writes_an_until_that_gives_it(tmp_path, capsys):
    """``--horizon``: the file's until is the one whose horizon (after the chats' start)
    is the search's, so every step lies within it."""
    rows = explored(["lost_start_answer", "--variant", "today", "--horizon", "45m",
                     "--property", "at_most_once"], tmp_path, capsys)
    row = next(r for r in rows if r["property"] == "at_most_once")
    replays_the_same(row, "today", capsys)
    doc = json.loads(Path(row["counterexample"]).read_text())
    scenario = load(row["scenario"])
    assert replay_world.world_of(scenario, "today")[1] == doc["world"]["bounds"]["horizon_ms"] == 30


def test_runs_are_deterministic(tmp_path, capsys):
    """Two explores write the same bytes; two runs of the file give the same trace, in
    two processes too (``run --check-determinism``)."""
    a = explored(["lost_start_answer", "--variant", "today"], tmp_path / "a", capsys)
    b = explored(["lost_start_answer", "--variant", "today"], tmp_path / "b", capsys)
    for x, y in zip(a, b):
        assert Path(x["scenario"]).read_bytes() == Path(y["scenario"]).read_bytes()
    scenario = load(a[0]["scenario"])
    assert run_scenario(scenario).trace_bytes == run_scenario(scenario).trace_bytes
    code, text, err = run(["run", a[0]["scenario"], "--check-determinism"], capsys)
    assert code == 0 and "identical in two processes" in text, text + err


def test_a_replayed_runs_trace_replays(tmp_path, capsys):
    """``run --trace`` of a replay scenario: ``replay`` finds the scenario by content and
    rebuilds the same trace (the world is the replay's, built by run.build)."""
    rows = explored(["--world", "default", "--variant", "today", "--stop-at-first"], tmp_path, capsys)
    trace = tmp_path / "t.jsonl"
    assert run(["run", rows[0]["scenario"], "--trace", str(trace)], capsys)[0] == 0
    replayed = cx.replay(trace, rows[0]["scenario"])
    assert replayed.outcome == "reproduced" and replayed.trace_sha256 == replayed.expected_sha256


# --- what is refused ---------------------------------------------------------

STEPS = [{"at_ms": 8, "do": "timer", "node": "world", "name": "user_message:6c1e0a8e-2f7b-5c38-9a0c-1d2e3f405162"},
         {"at_ms": 10, "do": "timer", "node": "replica-1", "name": "replica-1-w1/t2/a1/gen"}]
NAMED = {"name": "r", "until": "30s", "replay": {"world": "default", "steps": STEPS}}


def refused(data: dict) -> str:
    with pytest.raises(ScenarioError) as err:
        run_scenario(from_dict(data, "r.toml"), "today")
    text = str(err.value)
    assert "\n" not in text
    return text


def with_replay(**changes) -> dict:
    data = json.loads(json.dumps(NAMED))
    data["replay"].update(changes)
    return data


def test_a_named_world_replay_runs():
    result = run_scenario(from_dict(NAMED, "r.toml"), "today")
    assert result.until_ms == 10 and result.world.system.now_ms == 10
    assert [a for a in result.world.actions] == list(from_dict(NAMED, "r.toml").replay.steps)


@pytest.mark.parametrize("change,words", [
    ({"steps": [STEPS[0], {**STEPS[1], "name": "replica-1-w1/t9/a1/gen"}]},
     "replay.steps[1] (timer replica-1 replica-1-w1/t9/a1/gen): not enabled at 8 small ms: no such timer is armed"),
    ({"steps": [STEPS[0], {"at_ms": 8, "do": "deliver", "seq": 99, "msg": "start toolu_fg replica-1 -> agent"}]},
     "replay.steps[1] (deliver #99 start toolu_fg replica-1 -> agent): not enabled at 8 small ms: no message #99"),
    ({"steps": [STEPS[0], {**STEPS[1], "at_ms": 9}]}, "due at 10 ms, not 9 ms"),
    ({"steps": [STEPS[0], {**STEPS[1], "at_ms": 11}]}, "not enabled at 8 small ms: the timer is due at 10 ms, not 11"),
    ({"steps": [*STEPS, {"at_ms": 11, "do": "deliver", "seq": 10, "msg": "dial - replica-1 -> agent"}]},
     "replay.steps[2] (deliver #10 dial - replica-1 -> agent): not enabled at 10 small ms: a message moves at the "
     "current time, not at 11 ms"),
    ({"steps": [{"at_ms": 0, "do": "fault", "fault": "interrupt", "chat": STEPS[0]["name"].split(":")[1]}]},
     "not enabled at 0 small ms: the state offers fault agent_restart"),
    ({"steps": [{"at_ms": 1, "do": "tick"}]}, "replay.steps[0] (tick to 1 ms): not enabled at 0 small ms: the state "
                                              "offers no tick step"),
    ({"steps": [STEPS[0], {"at_ms": 8, "do": "fault", "fault": "takeover", "chat": "c", "to": "replica-9"}]},
     "the state offers fault agent_restart"),
    ({"steps": [{**STEPS[0], "at_ms": 31}]}, "at 31 small ms, after the horizon of 30"),
    ({"steps": [STEPS[1], STEPS[0]]}, "replay.steps[1].at_ms: 8 is before the step before it (10)"),
    ({"steps": [{**STEPS[0], "do": "idle"}]}, "replay.steps[0].do: expected one of deliver, lose, timer, fault, tick"),
    ({"steps": [{**STEPS[0], "do": ["timer"]}]}, "replay.steps[0].do: expected one of"),
    ({"steps": [{"at_ms": 8, "do": "fault", "fault": {"kind": "interrupt"}}]}, "replay.steps[0].fault: expected one of"),
    ({"steps": ["timer"]}, "replay.steps[0]: expected a table"),
    ({"steps": {"at_ms": 1}}, "replay.steps: expected a list"),
    ({"steps": [{**STEPS[0], "seq": 3}]}, "replay.steps[0].seq: unknown key"),
    ({"steps": [{"at_ms": 8, "do": "timer", "node": "world"}]}, "replay.steps[0].name: missing"),
    ({"steps": [{"at_ms": 8, "do": "fault", "fault": "replica_crash"}]}, "expected one of the explorer's faults"),
    ({"steps": [{"at_ms": 8, "do": "fault", "fault": "takeover", "chat": "c"}]}, "replay.steps[0].to: missing"),
    ({"steps": [{"at_ms": -1, "do": "tick"}]}, "replay.steps[0].at_ms: must be from 0"),
    ({"steps": []}, "replay.steps: no step"),
    ({"world": "nowhere"}, "replay.world: unknown small world 'nowhere'"),
    ({"second": "edit", "world": None}, "replay.world: expected a string"),
    ({"colour": "blue"}, "replay.colour: unknown key"),
], ids=["no-such-timer", "no-such-message", "timer-early", "timer-late", "message-late", "interrupt-idle-chat",
        "tick-nothing-in-flight", "takeover-nobody", "after-horizon", "backwards", "idle", "do-a-list", "fault-a-table",
        "step-a-string", "steps-a-table", "extra-field",
        "missing-field", "fault-kind", "fault-field", "negative", "empty", "world", "second", "unknown-key"])
def test_a_step_or_key_that_cannot_be_honoured_is_one_line(change, words):
    data = with_replay(**change)
    if change.get("world", "") is None:
        data["replay"]["world"] = None
    assert words in refused(data)


@pytest.mark.parametrize("key,value,words", [
    ("seed", 3, "seed: a scenario with [replay] replays its steps: a replayed run draws nothing"),
    ("faults", [{"kind": "interrupt", "at": "1s"}], "faults: a scenario with [replay] replays its steps"),
    ("network", {"loss": 0.1}, "network: a scenario with [replay]"),
    ("world", {"replicas": 3}, "world: replay.world names the small world 'default'"),
    ("turns", [{"chat": "chat-1", "tool_calls": [{"id": "t", "command": "x"}]}], "turns: replay.world names"),
])
def test_what_a_replay_does_not_use_is_refused(key, value, words):
    data = json.loads(json.dumps(NAMED))
    data[key] = value
    assert words in refused(data)


def test_second_shapes_only_the_default_world():
    data = with_replay(world="two-chats", second="edit")
    assert "replay.second: shapes only the default world" in refused(data)
    assert from_dict(with_replay(second="edit"), "r.toml").replay.second == "edit"


def test_a_corrupted_step_in_a_written_file_is_refused_with_exit_2(tmp_path, capsys):
    rows = explored(["lost_start_answer", "--variant", "today"], tmp_path, capsys)
    toml = Path(rows[0]["scenario"])
    text = toml.read_text()
    bad = tmp_path / "bad.toml"
    bad.write_text(text.replace("seq = 21,", "seq = 22,", 1))
    code, out, err = run(["run", str(bad)], capsys)
    assert code == 2 and out == ""
    assert err.strip().endswith("replay.steps[12] (deliver #22 start toolu_01 replica-1 -> agent): not enabled at "
                                "10 small ms: no message #22 is in flight")
    for flags, words in ((["--seed", "2"], "--seed: "), (["--until", "1h"], "--until: ")):
        code, out, err = run(["run", str(toml), *flags], capsys)
        assert code == 2 and words in err and "draws nothing and ends at its last step" in err
    code, out, err = run(["explore", str(toml)], capsys)
    assert code == 2 and "[replay] tells one path of a search" in err


def test_a_toml_explore_did_not_write_is_never_replaced(tmp_path, capsys):
    """A file of the user's at the scenario's name stays as it was; the counterexample
    file is written alone and the row says why there is no scenario."""
    mine = tmp_path / "lost-start-answer-today-at_most_once.toml"
    mine.write_text("name = 'mine'\n")
    rows = explored(["lost_start_answer", "--variant", "today"], tmp_path, capsys)
    row = next(r for r in rows if r["property"] == "at_most_once")
    assert mine.read_text() == "name = 'mine'\n"
    assert row["scenario"] is None and "explore did not write it" in row["scenario_not_written"]
    assert Path(row["counterexample"]).exists()
    other = next(r for r in rows if r["property"] == "retry_changes_nothing")
    assert other["scenario"] is not None
    # One explore wrote is replaced by the next explore.
    again = explored(["lost_start_answer", "--variant", "today"], tmp_path, capsys)
    assert next(r for r in again if r["property"] == "retry_changes_nothing")["scenario"] == other["scenario"]


def test_the_text_summary_names_the_scenario_and_its_command(tmp_path, capsys):
    code, out, _ = run(["explore", "lost_start_answer", "--variant", "today", "--out", str(tmp_path)], capsys)
    toml = tmp_path / "lost-start-answer-today-at_most_once.toml"
    assert code == 0 and f"    scenario: {toml} (toolcall-sim run {toml})" in out


def test_step_lines_are_the_actions_json_words():
    """Each action the explorer takes has a step line that reads back as that action."""
    actions = [msys.Deliver(3, 7, "start t replica-1 -> agent"), msys.Drop(3, 9, "start t answer 200 agent -> replica-1"),
               msys.Fire(4, "agent", "exit:proc-1-1"), msys.Tick(5), msys.Fault(6, "agent_restart", ()),
               msys.Fault(6, "interrupt", (("chat", "c"),)), msys.Fault(7, "takeover", (("chat", "c"), ("to", "replica-2")))]
    data = {"name": "r", "replay": {"world": "default", "steps": [replay_write.step_line(a) for a in actions]}}
    assert list(from_dict(data, "r.toml").replay.steps) == actions
    with pytest.raises(replay_write.NotWritten):
        replay_write.step_line(msys.Idle(3, 2))


def test_a_scenario_explore_cannot_write_leaves_no_stale_one(tmp_path, capsys, monkeypatch):
    """When the path has no scenario file this time, one an earlier explore wrote at its
    name goes (it would tell another path than the counterexample beside it)."""
    stale = tmp_path / "lost-start-answer-today-at_most_once.toml"
    stale.write_text(sr.MARKER + ": an earlier search\nname = 'old'\n")

    def cannot(*_args):
        raise replay_write.NotWritten("not this time")
    monkeypatch.setattr(replay_write, "document", cannot)
    rows = explored(["lost_start_answer", "--variant", "today"], tmp_path, capsys)
    assert not stale.exists() and Path(rows[0]["counterexample"]).exists()
    assert [r["scenario_not_written"] for r in rows] == ["not this time"] * 2
