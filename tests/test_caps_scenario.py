"""The scenario at every cap at once (tests/caps_scenario.py) is one the loader accepts,
and one more replica, chat, tool call or fault is refused in one line (issue 32: the
figure scenarios/README.md gives for the largest scenario is for an allowed one)."""

from __future__ import annotations

import tomllib

import pytest

from caps_scenario import caps_scenario
from toolcall_sim.model import vocabulary as voc
from toolcall_sim.world.scenario import ScenarioError, from_dict


def load_scenario_text(text):
    return from_dict(tomllib.loads(text), "caps.toml")


def test_the_scenario_at_every_cap_loads():
    scenario = load_scenario_text(caps_scenario())
    assert len(scenario.turns) == voc.MAX_TURNS
    assert sum(len(t.tool_calls) for t in scenario.turns) == voc.MAX_TOOL_CALLS
    assert len(scenario.faults) == voc.MAX_FAULTS


@pytest.mark.parametrize("over,field", [
    (dict(replicas=voc.MAX_REPLICAS + 1), "replicas"),
    (dict(restarts=voc.MAX_FAULTS + 1), "faults"),
    (dict(chats=voc.MAX_CHATS + 1, turns=voc.MAX_CHATS + 1, tool_calls=voc.MAX_CHATS + 1), "chat"),
    (dict(chats=1, turns=voc.MAX_TURNS + 1, tool_calls=voc.MAX_TURNS + 1), "turns"),
    (dict(chats=1, turns=1, tool_calls=voc.MAX_TOOL_CALLS_PER_TURN + 1), "tool_calls"),
])
def test_one_more_than_a_cap_is_refused(over, field):
    with pytest.raises(ScenarioError, match=field):
        load_scenario_text(caps_scenario(**over))
