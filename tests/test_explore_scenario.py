"""``toolcall-sim explore SCENARIO.toml`` (sim/world/explore_scenario.py,
sim/cli/explore_scenario.py): the scenario's world on the explorer's clock, its
faults as budgets (anywhere, or at their trigger), every part the explorer cannot honour refused in one line (exit 2),
the small worlds as scenario files, counterexamples that replay, expectations checked
against the whole search. Every search here is small (seconds)."""

from __future__ import annotations

import copy
import json
from dataclasses import replace
from fractions import Fraction
from pathlib import Path

import pytest

from toolcall_sim.cli.main import main
from toolcall_sim.drivers import counterexample as cx
from toolcall_sim.model import explore as ex
from toolcall_sim.model import worlds
from toolcall_sim.world import explore_scenario as es
from toolcall_sim.world.scenario import ScenarioError, from_dict, load

ROOT = Path(__file__).resolve().parent.parent
EXPLORE = ROOT / "scenarios" / "explore"
SMALL_WORLDS = {"default": "explore_default", "two-chats": "explore_two_chats",
                "two-messages": "explore_two_messages", "late-pubsub": "explore_late_pubsub"}

# A scenario on the reference clock (15 min attempts: 1 small ms = 1m30s).
BASE = {
    "name": "explore-base", "until": "40m",
    "turns": [{"chat": "chat-1", "tool_calls": [
        {"id": "toolu_01", "tool": "execute", "command": "make build", "runs_for": "20m", "timeout": "30m"}]}],
}


def scenario(**changes) -> dict:
    data = copy.deepcopy(BASE)
    for key, value in changes.items():
        if key == "world":
            data.setdefault("world", {}).update(value)
        else:
            data[key] = value
    return data


def built(data: dict, variant: str = "contract", **kw) -> es.Explorable:
    return es.build(from_dict(data, "t.toml"), variant, **kw)


def refusal(data: dict, **kw) -> str:
    with pytest.raises(ScenarioError) as err:
        built(data, **kw)
    text = str(err.value)
    assert "\n" not in text
    return text


# --- the clock ---------------------------------------------------------------


def test_one_ratio_puts_the_scenario_on_the_explorers_clock():
    """Rule 2: R = attempt timeout / 10; each written duration rounds to small ms, a
    positive one to at least 1; keys left unset keep the explorer's values."""
    e = built(BASE)
    assert e.ratio == Fraction(90_000)
    assert e.config.chatd_rules.timing.task_timeout_ms == 10
    assert e.config.chatd_rules.timing.agent_answer_timeout_ms == 4  # the explorer's (Timing.explorer())
    script = e.config.agent_config.scripts["make build"]
    assert script.runs_for_ms == 13  # 20m / 1m30s = 13.3
    assert '"timeout":"20ms"' in e.config.chats[0].turns[0][0].args_json  # 30m -> 20 small ms
    assert e.bounds.horizon_ms == 27 + 8  # until 40m -> 27, moved by the chats' start (Rule 4)
    assert e.config.chats[0].start_at_ms == 8  # 4 age margins after the agent's boot
    assert any("1 small ms = 1m30s" in line for line in e.lines)
    assert es.small(1, Fraction(90_000)) == 1 and es.small(0, Fraction(90_000)) == 0


def test_a_scenarios_own_attempt_timeout_sets_the_ratio():
    e = built(scenario(world={"attempt_timeout": "20s", "agent_answer_timeout": "8s"},
                       turns=[{"chat": "chat-1", "tool_calls": [{"id": "toolu_01", "tool": "execute",
                                                                  "command": "x", "runs_for": "30s", "timeout": "12s"}]}]))
    assert e.ratio == Fraction(2_000)
    timing = e.config.chatd_rules.timing
    assert (timing.task_timeout_ms, timing.agent_answer_timeout_ms) == (10, 4)
    assert e.config.agent_config.scripts["x"].runs_for_ms == 15


def test_scaling_that_collapses_an_ordered_pair_is_refused():
    """Rule 3: a 2 s command with a 1 m timeout would both become 1 small ms."""
    text = refusal(scenario(turns=[{"chat": "chat-1", "tool_calls": [
        {"id": "toolu_01", "tool": "execute", "command": "x", "runs_for": "2s", "timeout": "1m"}]}]))
    assert "timing" in text and "toolu_01.runs_for" in text and "toolu_01.timeout" in text and "1m30s" in text


def test_scaling_that_breaks_a_contract_ordering_is_refused():
    """Rule 3: the scenario's own keys must keep timing.ORDERINGS (answer < attempt)."""
    text = refusal(scenario(world={"attempt_timeout": "20s", "agent_answer_timeout": "30s"}))
    assert "timing" in text and "agent_answer_timeout_ms" in text


# --- faults and budgets ------------------------------------------------------


def test_each_fault_kind_becomes_its_budget_as_often_as_named():
    faults = [{"kind": "interrupt", "chat": "chat-1", "at": "1m"}, {"kind": "interrupt", "chat": "chat-1", "at": "2m"},
              {"kind": "takeover", "to": "replica-2", "at": "3m"}, {"kind": "agent_restart", "at": "4m"},
              {"kind": "ownership_change", "at": "5m"},
              {"kind": "lose", "message": {"route": "start", "tool_call": "toolu_01", "direction": "response"}}]
    b = built(scenario(faults=faults)).bounds
    assert (b.agent_restarts, b.ownership_changes, b.interrupts, b.lost_responses, b.task_retries) == (1, 2, 2, 1, 1)


def test_a_budget_flag_wins_and_says_so():
    e = built(scenario(faults=[{"kind": "interrupt", "at": "1m"}]), budgets={"interrupts": 3, "task_retries": 2})
    assert (e.bounds.interrupts, e.bounds.task_retries) == (3, 2)
    assert any("interrupts 3 (flag)" in line for line in e.lines)


def test_latency_becomes_the_in_flight_bound_unless_the_flag_says():
    slow = scenario(network={"latency": {"min": "0s", "max": "3m"}})
    assert built(slow).bounds.max_in_flight_ms == 2  # floor(3m / 1m30s)
    assert built(slow, max_in_flight_ms=0).bounds.max_in_flight_ms == 0


def test_a_delayed_request_widens_the_in_flight_bound():
    """Rule 6: a start delayed by 4m (plus the 40 ms latency) may be held 3 small ms, and
    so may any request; the line names the fault."""
    e = built(scenario(faults=[{"kind": "delay", "by": "4m", "message": {"route": "start", "tool_call": "toolu_01"}}]))
    assert e.bounds.max_in_flight_ms == 3
    assert any("faults[0] delays a request by 4m" in line for line in e.lines)


REFUSED = [
    ("delayed answer", {"faults": [{"kind": "delay", "by": "3m", "message": {"route": "start", "tool_call": "toolu_01",
                                                                             "direction": "response"}}]},
     "faults[0].message"),
    ("delay past the age margin", {"world": {"age_margin": "3m"}, "faults": [
        {"kind": "delay", "by": "3m10s", "message": {"route": "start", "tool_call": "toolu_01"}}]}, "faults[0].by"),
    ("clock", {"clocks": {"agent": {"offset": "-2h"}}}, "clocks.agent"),
    ("latency shape", {"network": {"latency": {"shape": "lognormal", "median": "20ms", "p99": "1s"}}},
     "network.latency.shape"),
    ("stalls", {"network": {"stalls": {"probability": 0.1, "min": "1s", "max": "2s"}}}, "network.stalls"),
    ("loss", {"network": {"loss": 0.1}}, "network.loss"),
    ("link", {"network": {"links": {"agent->replica-1": {"loss": 0.5}}}}, "network.links.agent->replica-1"),
    ("db outage", {"faults": [{"kind": "db_outage", "at": "1m"}]}, "a db_outage fault"),
    ("partition", {"faults": [{"kind": "partition", "between": ["agent", "replica-1"], "at": "1m"}]}, "partition"),
    ("restart downtime", {"faults": [{"kind": "agent_restart", "downtime": "5s", "at": "1m"}]}, "faults[0].downtime"),
    ("lost request", {"faults": [{"kind": "lose", "message": {"route": "start", "tool_call": "toolu_01"}}]},
     "faults[0].message"),
    ("named target of three", {"world": {"replicas": 3}, "faults": [{"kind": "takeover", "to": "replica-3", "at": "1m"}]},
     "faults[0].to"),
    ("worker loop", {"world": {"heartbeat_interval": "3s"}}, "world.heartbeat_interval"),
]


@pytest.mark.parametrize("name,changes,named", REFUSED, ids=[c[0] for c in REFUSED])
def test_what_the_explorer_cannot_honour_is_refused_by_name(name, changes, named):
    assert named in refusal(scenario(**changes))


# --- faults at their trigger (Rule 8) -----------------------------------------


def searched(data: dict, variant: str, mode: str, **kw):
    e = built(data, variant, faults_mode=mode)
    return e, ex.explore(e.config, e.bounds, max_states=20_000, **kw)


def test_each_trigger_becomes_its_window():
    """Rule 8: a time on the small clock after the chats' start shift (8), a sent
    message in flight, a process running, a commit made, a lost answer's own message;
    a fault's chat and a takeover's target restrict it; the budgets line names each."""
    faults = [{"kind": "interrupt", "chat": "chat-1", "at": "3m"},
              {"kind": "takeover", "to": "replica-2", "when": {"event": "result_committed", "tool_call": "toolu_01"}},
              {"kind": "agent_restart", "when": {"event": "process_started", "tool_call": "toolu_01"}},
              {"kind": "interrupt", "when": {"event": "request_sent", "route": "start", "tool_call": "toolu_01"},
               "offset": "10s"},
              {"kind": "lose", "message": {"route": "start", "tool_call": "toolu_01", "direction": "response"}}]
    e = built(scenario(faults=faults), faults_mode="at-trigger")
    chat = e.config.chats[0].chat_id
    assert e.bounds.fault_windows == (
        ("interrupts", ("after", 2 + 8), chat, ""), ("ownership_changes", ("result", "toolu_01"), "", "replica-2"),
        ("agent_restarts", ("process", "toolu_01"), "", ""),
        ("interrupts", ("message", "request", "start", "toolu_01"), "", ""),  # 10s: below half a small ms
        ("lost_responses", ("message", "response", "start", "toolu_01"), "", ""))
    assert (e.bounds.interrupts, e.bounds.ownership_changes) == (2, 1)
    line = next(line for line in e.lines if line.startswith("budgets:"))
    assert "each only at its trigger: interrupts from 10 small ms on (chat chat-1) (faults[0])" in line
    assert "lost_responses while a start response of toolu_01 is in flight (faults[4])" in line
    assert built(scenario(faults=faults)).bounds.fault_windows == ()  # anywhere: today's search


def test_a_fault_at_its_trigger_finds_what_anywhere_finds_in_fewer_states():
    """A takeover while the command runs, held to 3m: under today the retry runs the
    command again (the violations anywhere finds too), in about half the states."""
    data = scenario(faults=[{"kind": "takeover", "to": "replica-2", "at": "3m"}])
    _, anywhere = searched(data, "today", "anywhere")
    _, at_trigger = searched(data, "today", "at-trigger")
    assert anywhere.exhausted and at_trigger.exhausted and at_trigger.states < anywhere.states
    found = sorted(f.property for f in at_trigger.violations)
    assert found == sorted(f.property for f in anywhere.violations) == ["at_most_once", "retry_changes_nothing"]


def test_a_fault_at_its_trigger_makes_a_narrower_claim():
    """An agent restart at 35m, after the command's result is committed: anywhere it may
    also strike while the command runs, which makes the result untruthful even under the
    contract; held to its time it finds nothing."""
    data = scenario(faults=[{"kind": "agent_restart", "at": "35m"}])
    _, anywhere = searched(data, "contract", "anywhere")
    _, at_trigger = searched(data, "contract", "at-trigger")
    assert at_trigger.exhausted and at_trigger.states < anywhere.states
    assert "truthful_result" in {f.property for f in anywhere.violations}
    assert at_trigger.violations == []


TWO_CALLS = [{"chat": "chat-1", "tool_calls": [
    {"id": "toolu_01", "tool": "execute", "command": "make build", "runs_for": "20m", "timeout": "30m"},
    {"id": "toolu_02", "tool": "write_file", "path": "/w/a.txt", "content": "x"}]}]


def test_a_lose_at_its_trigger_drops_only_its_answer():
    data = scenario(turns=TWO_CALLS, faults=[{"kind": "lose", "message": {"route": "write", "tool_call": "toolu_02",
                                                                          "direction": "response"}}])
    losses = {}
    for mode in ("anywhere", "at-trigger"):
        _, result = searched(data, "today", mode, keep_edges=True)
        losses[mode] = {label.split()[3] for _, _, label in result.edges if label.startswith("lose ")}
    assert losses == {"anywhere": {"toolu_01", "toolu_02"}, "at-trigger": {"toolu_02"}}


def test_windows_read_only_the_system_state_so_the_memos_agree():
    """model/explore.py Rule 10: with ``CHECK_MEMO`` every reused expansion and step is
    computed again and compared, so a window that read the ghost history would fail."""
    from toolcall_sim.model import explore_context

    data = scenario(turns=TWO_CALLS, faults=[
        {"kind": "interrupt", "when": {"event": "process_started", "tool_call": "toolu_01"}},
        {"kind": "lose", "message": {"route": "start", "tool_call": "toolu_01", "direction": "response"}}])
    _, plain = searched(data, "today", "at-trigger")
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(explore_context, "CHECK_MEMO", True)
        _, checked = searched(data, "today", "at-trigger")
    assert checked.exhausted and (checked.states, checked.transitions) == (plain.states, plain.transitions)


AT_TRIGGER_REFUSED = [
    ("nth", {"kind": "interrupt", "when": {"event": "request_sent", "route": "start", "tool_call": "toolu_01", "nth": 2}},
     "faults[0].when.nth"),
    ("offset", {"kind": "interrupt", "when": {"event": "process_started", "tool_call": "toolu_01"}, "offset": "5m"},
     "faults[0].offset"),
    ("delivered", {"kind": "interrupt", "when": {"event": "request_delivered", "route": "start", "tool_call": "toolu_01"}},
     "faults[0].when"),
    ("any tool call", {"kind": "interrupt", "when": {"event": "result_committed"}}, "faults[0].when"),
    ("nth answer", {"kind": "lose", "message": {"route": "start", "tool_call": "toolu_01", "direction": "response",
                                                "nth": 2}}, "faults[0].message.nth"),
]


@pytest.mark.parametrize("name,fault,named", AT_TRIGGER_REFUSED, ids=[c[0] for c in AT_TRIGGER_REFUSED])
def test_a_trigger_with_no_window_is_refused(name, fault, named):
    text = refusal(scenario(faults=[fault]), faults_mode="at-trigger")
    assert f"--faults at-trigger: {named}" in text
    built(scenario(faults=[fault]))  # anywhere, the same fault is a budget


def test_a_named_target_of_three_is_honoured_at_its_trigger():
    e = built(scenario(world={"replicas": 3}, faults=[{"kind": "takeover", "to": "replica-3", "at": "1m"}]),
              faults_mode="at-trigger")
    assert e.bounds.fault_windows[0][3] == "replica-3" and e.bounds.pinned_replicas == ("replica-3",)


def test_a_named_target_is_honoured_when_it_is_the_only_other_replica():
    b = built(scenario(faults=[{"kind": "takeover", "to": "replica-2", "at": "1m"}])).bounds
    assert b.ownership_changes == 1


def test_a_replica_the_expectations_name_is_kept_apart_by_symmetry():
    """model/explore_symmetry.py Rule 1: a result expected from replica-3 keeps replica-3
    out of the untouched replicas' class, so its stories are not folded into replica-2's."""
    data = scenario(world={"replicas": 3},
                    expect={"contract": {"toolu_01": {"result": {"kind": "completed", "replica": "replica-3"}}}})
    e = built(data)
    assert e.bounds.pinned_replicas == ("replica-3",) and e.bounds.symmetry
    assert any("replica-3 named by the scenario" in line for line in e.lines)
    assert built(scenario(world={"replicas": 3})).bounds.pinned_replicas == ()
    unreduced = built(data, reduction="none").bounds  # --no-reduction: neither reduction
    assert not unreduced.symmetry and not unreduced.partial_order
    symmetric = built(data, reduction="symmetry").bounds
    assert symmetric.symmetry and not symmetric.partial_order


# --- the small worlds as files -----------------------------------------------


@pytest.mark.parametrize("name", list(SMALL_WORLDS), ids=str)
def test_the_small_world_files_build_the_small_worlds(name):
    """Each file builds its world: the same config but the chat IDs and the arguments'
    JSON spacing, and the same states under the same (trimmed) bounds."""
    e = es.build(load(EXPLORE / f"{SMALL_WORLDS[name]}.toml"), "contract")
    world = worlds.build(name, "contract")
    for field in world.__dataclass_fields__:
        if field != "chats":
            assert getattr(e.config, field) == getattr(world, field), field
    assert [(c.gen_time_ms, c.start_at_ms, [[t.provider_id for t in turn] for turn in c.turns]) for c in e.config.chats] \
        == [(c.gen_time_ms, c.start_at_ms, [[t.provider_id for t in turn] for turn in c.turns]) for c in world.chats]
    assert e.bounds == ex.Bounds()  # the explorer's default bounds: one of each fault, 30 s, 0 s in flight
    trimmed = replace(e.bounds, agent_restarts=0, ownership_changes=0, lost_responses=0)
    mine, theirs = ex.explore(e.config, trimmed, max_states=20_000), ex.explore(world, trimmed, max_states=20_000)
    assert mine.exhausted and (mine.states, mine.transitions) == (theirs.states, theirs.transitions)


def test_the_default_world_file_has_the_pinned_state_count():
    from tests.test_explore import PINNED_DEFAULT_STATES

    e = es.build(load(EXPLORE / "explore_default.toml"), "contract")
    result = ex.explore(e.config, e.bounds, max_states=100_000)
    assert result.exhausted and result.states == PINNED_DEFAULT_STATES


# --- the command -------------------------------------------------------------


def run(argv: list[str], capsys) -> tuple[int, str, str]:
    try:
        code = main(argv)
    except SystemExit as exit_:
        code = exit_.code
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_a_planted_bugs_counterexample_replays(tmp_path, capsys, monkeypatch):
    """bug_stale_attempt_commit under today: the search finds what its expectation names
    (exit 0), and each counterexample, whose world embeds the scenario, replays from
    another folder."""
    monkeypatch.chdir(tmp_path)
    code, out, _ = run(["explore", str(ROOT / "scenarios" / "bug_stale_attempt_commit.toml"), "--variant", "today",
                        "--out", str(tmp_path / "o"), "--json", "--quiet"], capsys)
    doc = json.loads(out)
    assert code == 0 and doc["exhausted"] and doc["expectations"]["mismatches"] == []
    assert doc["expectations"]["violations"] == ["at_most_once", "retry_changes_nothing"]
    for v in doc["violations"]:
        world = json.loads(Path(v["counterexample"]).read_text())["world"]
        assert world["kind"] == "explore-scenario" and world["scenario"]["name"] == "bug-stale-attempt-commit"
        replayed = cx.replay(v["counterexample"])
        assert replayed.reproduced and replayed.trace_sha256 == replayed.expected_sha256
        code, out, _ = run(["replay", v["counterexample"]], capsys)
        assert code == 1 and "REPRODUCED" in out


def test_an_expectation_mismatch_exits_1(tmp_path, capsys, monkeypatch):
    """explore_two_messages' today expectation is its timed run's; it names what the
    search finds, so it is met; dropping one name makes it a mismatch."""
    monkeypatch.chdir(tmp_path)
    text = (EXPLORE / "explore_two_messages.toml").read_text()
    met = tmp_path / "met.toml"
    met.write_text(text.replace('violations = ["at_most_once", "retry_changes_nothing"]',
                                'violations = ["at_most_once", "retry_changes_nothing", "truthful_result"]'))
    code, out, _ = run(["explore", str(met), "--variant", "today", "--out", str(tmp_path / "o"), "--quiet"], capsys)
    assert code == 0 and "expectations of today: met" in out
    assert "not checked by explore: <tool call> rows" in out
    code, out, _ = run(["explore", str(EXPLORE / "explore_two_messages.toml"), "--variant", "today",
                        "--out", str(tmp_path / "o"), "--quiet"], capsys)
    assert code == 1 and "MISMATCH" in out and "found truthful_result" in out


@pytest.mark.parametrize("argv,named", [
    (["--world", "default"], "--world"),
    (["--faults", "at-trigger", "--world", "default"], "--world"),
    (["--second", "edit"], "--second"),
], ids=["with --world", "at-trigger with --world", "--second"])
def test_bad_combinations_are_one_line_exit_2(argv, named, tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    code, _, err = run(["explore", str(ROOT / "scenarios" / "us01_ownership_change.toml"), *argv,
                        "--out", str(tmp_path / "o")], capsys)
    assert code == 2 and len(err.strip().splitlines()) == 1 and named in err


def test_a_trigger_the_state_cannot_show_is_one_line_exit_2(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    code, _, err = run(["explore", str(ROOT / "scenarios" / "bug_delayed_retry_across_restart.toml"),
                        "--faults", "at-trigger", "--out", str(tmp_path / "o")], capsys)
    assert code == 2 and len(err.strip().splitlines()) == 1 and "--faults at-trigger: faults[0].when.nth" in err


def test_windows_round_trip_in_a_counterexample_that_replays(tmp_path, capsys, monkeypatch):
    """us01_ownership_change at its trigger under today: the counterexample records the
    windows (as lists, read back as the same tuples) and the faults mode, and replays."""
    monkeypatch.chdir(tmp_path)
    code, out, _ = run(["explore", str(ROOT / "scenarios" / "us01_ownership_change.toml"), "--variant", "today",
                        "--faults", "at-trigger", "--out", str(tmp_path / "o"), "--json", "--quiet"], capsys)
    doc = json.loads(out)
    assert code == 0 and doc["exhausted"] and doc["violations"]
    expected = es.build(load(ROOT / "scenarios" / "us01_ownership_change.toml"), "today", "at-trigger").bounds
    for v in doc["violations"]:
        world = json.loads(Path(v["counterexample"]).read_text())["world"]
        assert world["faults"] == "at-trigger"
        windows = world["bounds"]["fault_windows"]
        assert windows and tuple((b, tuple(w), c, t) for b, w, c, t in windows) == expected.fault_windows
        replayed = cx.replay(v["counterexample"])
        assert replayed.reproduced and replayed.trace_sha256 == replayed.expected_sha256
        code, out, _ = run(["replay", v["counterexample"]], capsys)
        assert code == 1 and "REPRODUCED" in out


def test_a_refused_scenario_is_one_line_exit_2(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    code, _, err = run(["explore", str(ROOT / "scenarios" / "clock_skew_negative.toml"), "--out", str(tmp_path / "o")],
                       capsys)
    assert code == 2 and len(err.strip().splitlines()) == 1 and "clocks." in err


def test_report_writes_the_page_with_the_command_that_repeats_it(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    code, out, _ = run(["explore", "us01_ownership_change", "--variant", "today", "--out", str(tmp_path / "o"),
                        "--report", str(tmp_path / "r"), "--quiet"], capsys)
    assert code == 0 and "report:" in out
    doc = json.loads((tmp_path / "r" / "report.json").read_text())
    assert "toolcall-sim explore us01_ownership_change --variant today --max-states 200000" in json.dumps(doc)
    assert len(list((tmp_path / "r" / "counterexamples").glob("*.json"))) == 2


def test_the_table_command_writes_a_row_per_scenario_and_variant(capsys):
    """sim/ci/explore_table.py, the command the how-to's table comes from: one cell per
    variant, refusals with their line, searches with their states."""
    from toolcall_sim.ci import explore_table

    assert explore_table.main(["--only", "bug_stale_attempt_commit,clock_skew_negative", "--max-states", "1000"]) == 0
    out = capsys.readouterr().out
    assert "| `bug_stale_attempt_commit` | exhausted, " in out  # (its states: the search's, which reduction changes)
    assert "| `clock_skew_negative` | refused: clocks.agent:" in out
    assert "- today: 1 exhausted, 0 at the cap of 1,000 states, 1 refused" in out


THREE_REPLICAS = """
name = "three-replicas"
summary = "An ownership change among three replicas while an edit runs."
until = "20m"

[world]
replicas = 3

[[turns]]
chat = "chat-1"
tool_calls = [ { id = "toolu_01", tool = "edit_files", path = "/w/a.txt", edits = [ { search = "one", replace = "two" } ] } ]

[[faults]]
at = "1m"
kind = "ownership_change"
"""


def test_no_reduction_lets_every_replica_act_and_finds_the_same(tmp_path, capsys, monkeypatch):
    """``--no-reduction`` switches symmetry off (docs/pages/explanation/reduction.md): the
    two replicas that never acted may both take the chat over and hear every publish, so
    the search visits more states, and finds the same (nothing, under the contract); the
    summary and the report's command say it was unreduced."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "three.toml").write_text(THREE_REPLICAS)
    docs = {}
    for flags in ([], ["--no-reduction"]):
        code, out, _ = run(["explore", "three.toml", "--json", "--quiet", "--out", "o", *flags], capsys)
        assert code == 0
        docs[bool(flags)] = json.loads(out)
    assert docs[False]["bounds"]["symmetry"] and not docs[True]["bounds"]["symmetry"]
    assert docs[False]["states"] < docs[True]["states"]
    assert docs[False]["exhausted"] and docs[True]["exhausted"]
    assert [v["property"] for v in docs[False]["violations"]] == [v["property"] for v in docs[True]["violations"]]
    code, out, _ = run(["explore", "three.toml", "--no-reduction", "--quiet", "--out", "o", "--report", "r"], capsys)
    assert "no reduction: every replica acts (--no-reduction)" in out
    assert "three.toml --variant contract --max-states 200000 --no-reduction" in (tmp_path / "r" / "report.json").read_text()
    code, out, _ = run(["explore", "three.toml", "--stop-at-first", "--quiet", "--out", "o", "--report", "r"], capsys)
    assert "three.toml --variant contract --max-states 200000 --stop-at-first\"" in (tmp_path / "r" / "report.json").read_text()
