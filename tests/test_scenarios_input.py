"""Bad scenario input gives one line naming the file, the field and the reason, exit
status 2, and no traceback."""

from __future__ import annotations

import textwrap

import pytest

from toolcall_sim.cli.main import main
from toolcall_sim.world.scenario import ScenarioError, load, parse_duration

GOOD = """
name = "ok"
until = "1m"
[[turns]]
chat = "chat-1"
tool_calls = [ { id = "toolu_01", tool = "execute", command = "true", runs_for = "1s" } ]
"""

BAD = [
    ("syntax", 'name = "x\n', "syntax"),
    ("unknown top-level key", GOOD + 'colour = "blue"\n', "colour: unknown key"),
    ("unknown nested key", GOOD.replace('runs_for = "1s"', 'runs_for = "1s", sped = 2'), "turns[0].tool_calls[0].sped: unknown key"),
    ("wrong type", GOOD.replace('until = "1m"', "until = 60"), "until: expected a duration"),
    ("wrong type int", GOOD + "[world]\nreplicas = \"two\"\n", "world.replicas: expected an integer"),
    ("negative duration", GOOD.replace('runs_for = "1s"', 'runs_for = "-1s"'), "turns[0].tool_calls[0].runs_for: duration must not be negative"),
    ("not a duration", GOOD.replace('until = "1m"', 'until = "soon"'), "until: not a duration"),
    ("unknown fault kind", GOOD + '[[faults]]\nat = "1s"\nkind = "agent_reboot"\n', "faults[0].kind: unknown fault kind 'agent_reboot'"),
    ("fault without time or event", GOOD + '[[faults]]\nkind = "agent_restart"\n', "faults[0]: give exactly one of"),
    ("expectation names a missing tool call", GOOD + "[expect.contract]\ntoolu_99 = { process_starts = 1 }\n", "expect.contract.toolu_99: names a tool call that does not exist"),
    ("event trigger names a missing tool call", GOOD + '[[faults]]\nkind = "agent_restart"\nwhen = { event = "request_sent", route = "start", tool_call = "nope" }\n', "faults[0].when.tool_call"),
    ("unknown tool", GOOD.replace('tool = "execute"', 'tool = "browse"'), "turns[0].tool_calls[0].tool: unknown tool"),
    ("duplicate tool call id", GOOD.replace("tool_calls = [ {", 'tool_calls = [ { id = "toolu_01", command = "a" }, {'), "duplicate tool call id"),
]


@pytest.mark.parametrize("source,reason", [(s, r) for _, s, r in BAD], ids=[n for n, _, _ in BAD])
def test_bad_scenario_is_one_line_exit_2(source, reason, tmp_path, capsys):
    """Each malformed input: exit 2, one stderr line naming file, field and reason."""
    path = tmp_path / "bad.toml"
    path.write_text(textwrap.dedent(source))
    assert main(["run", str(path)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "Traceback" not in err
    assert str(path) in err and reason in err


def test_missing_file_is_exit_2(tmp_path, capsys):
    """A scenario path that does not exist is bad input too."""
    assert main(["run", str(tmp_path / "nope.toml")]) == 2
    assert "cannot read" in capsys.readouterr().err


def test_unknown_variant_is_exit_2(tmp_path, capsys):
    """--variant must name a known variant."""
    path = tmp_path / "ok.toml"
    path.write_text(GOOD)
    assert main(["run", str(path), "--variant", "tomorrow"]) == 2
    assert "unknown variant 'tomorrow'" in capsys.readouterr().err


def test_bad_command_line_is_exit_2(capsys):
    """A malformed --until is bad input."""
    assert main(["run", "codagt757_incident", "--until=-3h"]) == 2
    assert "--until: duration must not be negative" in capsys.readouterr().err


@pytest.mark.parametrize("text,ms", [("250ms", 250), ("2s", 2000), ("15m", 900_000), ("9h", 32_400_000), ("1h30m", 5_400_000), ("0", 0), ("1.5s", 1500)])
def test_parse_duration(text, ms):
    """Durations carry units and become integer milliseconds."""
    assert parse_duration(text, "x") == ms


def test_every_shipped_scenario_loads():
    """Every file in scenarios/ validates."""
    import pathlib

    files = sorted((pathlib.Path(__file__).parent.parent / "scenarios").glob("*.toml"))
    assert files
    for f in files:
        load(f)


def test_scenario_error_is_exception_with_one_line():
    """ScenarioError messages never span lines (the CLI prints them as they are)."""
    with pytest.raises(ScenarioError) as err:
        parse_duration("-1s", "faults[0].at")
    assert "\n" not in str(err.value)
