"""One vocabulary (model/vocabulary.py), every word live: each fault kind, trigger event
and ``[world]`` key that ``toolcall-sim list`` offers is accepted by the loader and
changes what a run does; ``list`` and scenarios/README.md say exactly what the loader
accepts. A word that is accepted and then ignored fails here."""

from __future__ import annotations

import copy
import io
import json
import pathlib
import re

import pytest

from toolcall_sim.model import system as msys
from toolcall_sim.model import vocabulary as voc
from toolcall_sim.cli.commands import list as list_command
from toolcall_sim.world.run import run_scenario
from toolcall_sim.world.scenario import from_dict

ROOT = pathlib.Path(__file__).resolve().parent.parent

# A small world in which every word has something to act on: a long command and an edit
# in one batch of chat-1, a short command in chat-2. No workspace files: the edit fails
# with 404 until the ``files`` key creates its file.
BASE = {
    "name": "vocabulary-base", "until": "20m", "seed": 3,
    "turns": [
        {"chat": "chat-1", "tool_calls": [
            {"id": "toolu_01", "tool": "execute", "command": "make build", "runs_for": "2m", "timeout": "5m"},
            {"id": "toolu_02", "tool": "edit_files", "path": "/src/a.go", "edits": [{"search": "x = 0", "replace": "x = 2"}]},
        ]},
        {"chat": "chat-2", "tool_calls": [{"id": "toolu_03", "tool": "execute", "command": "go test", "runs_for": "10s"}]},
    ],
}

# Words that act only on something else: the setting (world keys, earlier faults) in
# which the example makes a difference. The comparison is setting vs setting + word.
SETTINGS = {
    "age_margin": {"world": {"agent_boot_at": "1s"}},  # the first call looks older than the agent only with a margin
    "dial_timeout": {"world": {"agent_boot_at": "40s"}},  # the first dial waits for an agent that is not up
    "heartbeat_stale": {"faults": [{"kind": "ownership_change", "chat": "chat-1", "at": "65s"}]},
    "heal": {"faults": [{"kind": "partition", "between": ["agent", "replica-1"], "at": "60s"},
                        {"kind": "partition", "between": ["agent", "replica-2"], "at": "60s"}]},
}
# Records that name the word itself rather than what the world did about it.
NOISE = ("header", "action", "fault", "fault_skipped")


def _with(data: dict, setting: dict) -> dict:
    data = copy.deepcopy(data)
    data.setdefault("world", {}).update(copy.deepcopy(setting.get("world", {})))
    data["faults"] = copy.deepcopy(setting.get("faults", [])) + data.get("faults", [])
    return data


def behaviour(data: dict, variant: str = "contract") -> list[str]:
    run = run_scenario(from_dict(data), variant)
    return [json.dumps(r, sort_keys=True) for r in run.world.trace if r.get("kind") not in NOISE]


@pytest.mark.parametrize("key", list(voc.WORLD_KEYS), ids=str)
def test_every_world_key_is_accepted_and_changes_the_run(key):
    """Each [world] key of the vocabulary, set to its example value, is accepted and
    changes what happens (not just the trace's header)."""
    setting = SETTINGS.get(key, {})
    base = _with(BASE, setting)
    changed = _with(BASE, setting)
    changed["world"][key] = voc.WORLD_KEYS[key].example
    assert behaviour(changed) != behaviour(base)


@pytest.mark.parametrize("kind", list(voc.FAULTS), ids=str)
def test_every_fault_kind_is_accepted_and_changes_the_run(kind):
    """Each fault kind, with its example fields, is accepted, is not skipped and changes
    what happens."""
    spec = voc.FAULTS[kind]
    setting = SETTINGS.get(kind, {})
    fault = {"kind": kind, **{k: copy.deepcopy(v) for k, v in spec.example}}
    if spec.shape != "message":
        fault["at"] = "65s"
    changed = _with(BASE, setting)
    changed["faults"].append(fault)
    run = run_scenario(from_dict(changed), "contract")
    assert not [r for r in run.world.trace if r.get("kind") == "fault_skipped"]
    assert behaviour(changed) != behaviour(_with(BASE, setting))


_TRIGGERS = {
    "request_sent": {"route": "start"},
    "request_delivered": {"route": "start"},
    "response_sent": {"route": "start"},
    "response_delivered": {"route": "start"},
    "process_started": {},
    "result_committed": {},
    "message_committed": {},
}


def test_every_trigger_event_has_a_case():
    assert set(_TRIGGERS) == set(voc.TRIGGER_EVENTS)


@pytest.mark.parametrize("event", list(voc.TRIGGER_EVENTS), ids=str)
def test_every_trigger_event_fires(event):
    """A fault waiting for each event of the vocabulary fires (once, after the event),
    and changes the run."""
    data = copy.deepcopy(BASE)
    when = {"event": event, "tool_call": "toolu_03", **_TRIGGERS[event]}
    data["faults"] = [{"kind": "agent_restart", "when": when, "offset": "1ms"}]
    run = run_scenario(from_dict(data), "contract")
    fired = [r for r in run.world.trace if r.get("kind") == "fault"]
    assert len(fired) == 1
    assert behaviour(data) != behaviour(BASE)


def test_response_trigger_fires_after_its_request_and_message_commit_before_the_request():
    """The order the names promise: message_committed < request_sent < response_sent."""
    times = {}
    for event in ("message_committed", "request_sent", "response_sent"):
        data = copy.deepcopy(BASE)
        data["faults"] = [{"kind": "interrupt", "chat": "chat-2",
                           "when": {"event": event, "tool_call": "toolu_03", **_TRIGGERS[event]}}]
        run = run_scenario(from_dict(data), "contract")
        (fault,) = [r for r in run.world.trace if r.get("kind") == "fault"]
        times[event] = fault["t_ms"]
    assert times["message_committed"] < times["request_sent"] < times["response_sent"]


def test_model_fault_handlers_are_the_vocabulary():
    """toolcall_sim.model.system applies exactly the vocabulary's model fault kinds (model/faults.py)."""
    from toolcall_sim.model import faults

    assert set(faults.FAULT_HANDLERS) == set(voc.model_fault_kinds())


def test_list_names_every_residual_risk_and_known_finding():
    """`toolcall-sim list` names every class a violation can be reported under instead of
    as new: the documented residual risks and the known findings about the contract."""
    from toolcall_sim.model import properties as props

    out = io.StringIO()
    assert list_command.main(None, out) == 0
    text = out.getvalue()
    for name in (*props.RESIDUAL_RISKS, *props.KNOWN_FINDINGS):
        assert f"  {name} " in text, name
    assert "known findings" in text


def test_list_prints_every_word():
    """`toolcall-sim list` names every fault kind (with its fields), trigger event, world
    key, route, tool and result kind of the vocabulary."""
    out = io.StringIO()
    assert list_command.main(None, out) == 0
    text = out.getvalue()
    for f in voc.FAULTS.values():
        line = next(l for l in text.splitlines() if l.split() and l.split()[0] == f.name)
        for field in f.fields:
            assert field in line
    for word in (*voc.TRIGGER_EVENTS, *voc.WORLD_KEYS, *voc.ROUTES, *voc.REQUEST_ROUTES, *voc.TOOLS, *voc.RESULT_KINDS,
                 *voc.EXPECT_CALL_KEYS, *voc.EXPECT_RESULT_FIELDS, *voc.EXPECT_TOP_KEYS, *voc.EXPECT_ANSWER_FIELDS):
        assert re.search(rf"\b{word}\b", text), word


def _readme_table(heading: str, header: str) -> set[str]:
    """The first column of the table whose header row starts with ``header``, under a
    heading of scenarios/README.md."""
    text = (ROOT / "scenarios" / "README.md").read_text()
    section = text.split(heading, 1)[1].split("\n## ", 1)[0]
    table = section.split(header, 1)[1].split("\n\n", 1)[0]
    return {m.group(1) for m in re.finditer(r"^\| `([a-z_]+)`", table, re.M)}


def test_readme_documents_exactly_the_vocabulary():
    """scenarios/README.md's tables list exactly the world keys and fault kinds the
    loader accepts, and name every event, route and result kind."""
    assert _readme_table("## `[world]`", "| key |") == set(voc.WORLD_KEYS)
    assert _readme_table("## `[[faults]]`", "| kind |") == set(voc.FAULTS)
    assert _readme_table("## `[[faults]]`", "| event |") == set(voc.TRIGGER_EVENTS)
    assert _readme_table("## `[expect.<variant>]`", "| field | route |") == set(voc.EXPECT_ANSWER_FIELDS)
    text = (ROOT / "scenarios" / "README.md").read_text()
    for word in (*voc.TRIGGER_EVENTS, *voc.ROUTES, *voc.RESULT_KINDS, *voc.EXPECT_RESULT_FIELDS,
                 *voc.EXPECT_TOP_KEYS, *voc.EXPECT_CALL_KEYS):
        assert f"`{word}`" in text, word


def test_readme_names_exactly_the_unknown_reasons():
    """The unknown reasons scenarios/README.md lists for ``result.reason`` are the tool
    layer's (``voc.UNKNOWN_REASONS``), no more and no fewer."""
    text = (ROOT / "scenarios" / "README.md").read_text()
    listed = re.search(r"`result.reason` is the unknown reason \(([^)]*)\)", text)
    assert listed, "scenarios/README.md no longer lists the unknown reasons"
    assert [w.strip() for w in listed.group(1).split(",")] == list(voc.UNKNOWN_REASONS)

def test_swarm_and_explorer_draw_from_the_vocabulary():
    """Swarm toggles only vocabulary fault kinds and triggers on vocabulary events; the
    explorer's and the search's fault actions are model fault kinds."""
    from toolcall_sim.world import stories
    from toolcall_sim.drivers import swarm

    assert set(swarm.FAULT_KINDS) <= set(voc.FAULTS)
    assert set(stories._TRIGGER_EVENTS) <= set(voc.TRIGGER_EVENTS)
    assert {"agent_restart", "interrupt", "takeover"} <= set(voc.model_fault_kinds())


def test_an_unknown_model_fault_does_not_fit():
    """A replayed fault kind the vocabulary does not know is a replay mismatch, not a
    silent no-op."""
    step = msys.initial(msys.WorldConfig())
    with pytest.raises(msys.ReplayMismatch):
        msys.apply(step.system, msys.Fault(1, "meteor"))
