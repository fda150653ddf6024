"""A table of malformed inputs, each fed to the command line: exit 2, exactly one line on
stderr, no traceback (issue 12, "Exit codes mean one thing" and "Nothing accepted in
silence").

Each case names the files it needs (written into a fresh folder) and the arguments
(``{tmp}`` is that folder); the scenario loader's own refusals (model/vocabulary.py) are in
the table too.

Every explore, swarm and search case would run for seconds or minutes if its flag were
not checked up front, so the table also shows that bad flags are found before any work.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from toolcall_sim.cli.main import main

ROOT = Path(__file__).resolve().parent.parent

GOOD = """name = "ok"
until = "1m"
[[turns]]
chat = "chat-1"
tool_calls = [ { id = "toolu_01", tool = "execute", command = "true", runs_for = "1s" } ]
"""

GOOD_CX = {
    "format": "toolcall-sim/counterexample/1", "driver": "explore", "property": "at_most_once",
    "residual_risk": None, "detail": "", "trace_sha256": "0" * 64, "steps": 0,
    "world": {"kind": "explore", "name": "default", "variant": "contract", "second": "background"},
    "actions": [],
}


def cx(**changes) -> bytes:
    return json.dumps({**GOOD_CX, **changes}).encode()


def world(**changes) -> bytes:
    return cx(world={**GOOD_CX["world"], **changes})



# (id, files {name: bytes}, argv)
CASES = [
    # -- scenario files -------------------------------------------------------------------
    ("binary scenario", {"s.toml": bytes(range(256))}, ["run", "{tmp}/s.toml"]),
    ("latin-1 scenario", {"s.toml": GOOD.replace('"ok"', '"caf\xe9"').encode("latin-1")}, ["run", "{tmp}/s.toml"]),
    ("utf-16 scenario", {"s.toml": GOOD.encode("utf-16")}, ["run", "{tmp}/s.toml"]),
    ("empty scenario", {"s.toml": b""}, ["run", "{tmp}/s.toml"]),
    ("toml syntax", {"s.toml": b'name = "x\n'}, ["run", "{tmp}/s.toml"]),
    ("scenario is a folder", {"d/x": b""}, ["run", "{tmp}/d"]),
    ("scenario missing", {}, ["run", "{tmp}/nope.toml"]),
    ("scenario path with NUL", {}, ["run", "a\x00b.toml"]),
    ("unknown top key", {"s.toml": (GOOD + 'colour = "blue"\n').encode()}, ["run", "{tmp}/s.toml"]),
    ("name missing", {"s.toml": GOOD.replace('name = "ok"\n', "").encode()}, ["run", "{tmp}/s.toml"]),
    ("turns not a list", {"s.toml": b'name = "x"\nturns = 3\n'}, ["run", "{tmp}/s.toml"]),
    ("until not a duration", {"s.toml": GOOD.replace('"1m"', '"soon"').encode()}, ["run", "{tmp}/s.toml"]),
    ("until negative", {"s.toml": GOOD.replace('"1m"', '"-1m"').encode()}, ["run", "{tmp}/s.toml"]),
    ("seed a string", {"s.toml": (GOOD + 'seed = "one"\n').encode()}, ["run", "{tmp}/s.toml"]),
    ("unknown tool", {"s.toml": GOOD.replace('"execute"', '"browse"').encode()}, ["run", "{tmp}/s.toml"]),
    ("unknown agent", {"s.toml": (GOOD + '[world]\nagent = "rev-z"\n').encode()}, ["run", "{tmp}/s.toml"]),
    ("replica variant of a missing replica",
     {"s.toml": (GOOD + '[world]\nreplica_variants = { replica-9 = "today" }\n').encode()}, ["run", "{tmp}/s.toml"]),
    ("fault for a chat that does not exist",
                 {"s.toml": (GOOD + '[[faults]]\nat = "1s"\nkind = "interrupt"\nchat = "chat-9"\n').encode()},
                 ["run", "{tmp}/s.toml"]),
    ("fault after until",
                 {"s.toml": (GOOD + '[[faults]]\nat = "2m"\nkind = "agent_restart"\n').encode()},
                 ["run", "{tmp}/s.toml"]),
    ("clock of a node that does not exist",
                 {"s.toml": (GOOD + '[clocks.moon]\noffset = "1s"\n').encode()}, ["run", "{tmp}/s.toml"]),
    ("unknown result kind in an expectation",
                 {"s.toml": (GOOD + '[expect.contract]\ntoolu_01 = { results = ["exploded"] }\n').encode()},
                 ["run", "{tmp}/s.toml"]),
    ("timeout 0s", {"s.toml": GOOD.replace('runs_for = "1s"', 'runs_for = "1s", timeout = "0s"').encode()},
                 ["run", "{tmp}/s.toml"]),
    # -- run flags ------------------------------------------------------------------------
    ("run --variant empty", {"s.toml": GOOD.encode()}, ["run", "{tmp}/s.toml", "--variant", ""]),
    ("run --variant blank", {"s.toml": GOOD.encode()}, ["run", "{tmp}/s.toml", "--variant", "  "]),
    ("run --variant unknown", {"s.toml": GOOD.encode()}, ["run", "{tmp}/s.toml", "--variant", "tomorrow"]),
    ("run --variant unknown bug", {"s.toml": GOOD.encode()}, ["run", "{tmp}/s.toml", "--variant", "contract+nope"]),
    ("run --seed not a number", {"s.toml": GOOD.encode()}, ["run", "{tmp}/s.toml", "--seed", "one"]),
    ("run --until not a duration", {"s.toml": GOOD.encode()}, ["run", "{tmp}/s.toml", "--until", "soon"]),
    ("run --until negative", {"s.toml": GOOD.encode()}, ["run", "{tmp}/s.toml", "--until", "-1s"]),
    ("run --until 0s", {"s.toml": GOOD.encode()}, ["run", "{tmp}/s.toml", "--until", "0s"]),
    # Capped by the loader (168h of simulated time), not simulated for minutes.
    ("run --until 2000000h", {"s.toml": GOOD.encode()}, ["run", "{tmp}/s.toml", "--until", "2000000h"]),
    ("run --trace into a folder", {"s.toml": GOOD.encode(), "d/x": b""}, ["run", "{tmp}/s.toml", "--trace", "{tmp}/d"]),
    ("run --trace into a missing folder", {"s.toml": GOOD.encode()},
     ["run", "{tmp}/s.toml", "--trace", "{tmp}/no/such/t.jsonl"]),
    ("run --trace empty", {"s.toml": GOOD.encode()}, ["run", "{tmp}/s.toml", "--trace", ""]),
    ("run unknown flag", {"s.toml": GOOD.encode()}, ["run", "{tmp}/s.toml", "--frobnicate"]),
    ("run without a scenario", {}, ["run"]),
    ("unknown command", {}, ["frobnicate"]),
    ("no command", {}, []),
    # -- explore --------------------------------------------------------------------------
    ("explore --max-states 0", {}, ["explore", "--max-states", "0", "--out", "{tmp}/o"]),
    ("explore --max-states negative", {}, ["explore", "--max-states", "-5", "--out", "{tmp}/o"]),
    ("explore --max-states not a number", {}, ["explore", "--max-states", "many", "--out", "{tmp}/o"]),
    ("explore --agent-restarts negative", {}, ["explore", "--agent-restarts", "-1", "--out", "{tmp}/o"]),
    ("explore --ownership-changes negative", {}, ["explore", "--ownership-changes", "-1", "--out", "{tmp}/o"]),
    ("explore --interrupts negative", {}, ["explore", "--interrupts", "-2", "--out", "{tmp}/o"]),
    ("explore --lost-responses negative", {}, ["explore", "--lost-responses", "-1", "--out", "{tmp}/o"]),
    ("explore --task-retries negative", {}, ["explore", "--task-retries", "-1", "--out", "{tmp}/o"]),
    ("explore --world default --agent-restarts negative", {},
     ["explore", "--world", "default", "--agent-restarts", "-1", "--out", "{tmp}/o"]),
    ("explore --horizon 0s", {}, ["explore", "--horizon", "0s", "--out", "{tmp}/o"]),
    ("explore --horizon below the explorer's tick", {}, ["explore", "--horizon", "500ms", "--out", "{tmp}/o"]),
    ("explore --horizon not a duration", {}, ["explore", "--horizon", "long", "--out", "{tmp}/o"]),
    ("explore --max-in-flight not a duration", {}, ["explore", "--max-in-flight", "x", "--out", "{tmp}/o"]),
    ("explore --max-in-flight negative", {}, ["explore", "--max-in-flight", "-1s", "--out", "{tmp}/o"]),
    ("explore --variant empty", {}, ["explore", "--variant", "", "--out", "{tmp}/o"]),
    ("explore --variant unknown", {}, ["explore", "--variant", "tomorrow", "--out", "{tmp}/o"]),
    ("explore --world unknown", {}, ["explore", "--world", "mars", "--out", "{tmp}/o"]),
    ("explore --second unknown", {}, ["explore", "--second", "third", "--out", "{tmp}/o"]),
    ("explore --out an existing file", {"f": b"x"}, ["explore", "--out", "{tmp}/f"]),
    ("explore --out below a file", {"f": b"x"}, ["explore", "--out", "{tmp}/f/sub"]),
    ("explore --graph into a missing folder", {}, ["explore", "--graph", "{tmp}/no/g.dot", "--out", "{tmp}/o"]),
    ("explore --graph a folder", {"d/x": b""}, ["explore", "--graph", "{tmp}/d", "--out", "{tmp}/o"]),
    ("explore --property unknown", {}, ["explore", "--property", "no_such", "--out", "{tmp}/o"]),
    # -- replay ---------------------------------------------------------------------------
    ("replay missing file", {}, ["replay", "{tmp}/nope.json"]),
    ("replay a folder", {"d/x": b""}, ["replay", "{tmp}/d"]),
    ("replay empty file", {"e.json": b""}, ["replay", "{tmp}/e.json"]),
    ("replay []", {"c.json": b"[]"}, ["replay", "{tmp}/c.json"]),
    ("replay an int", {"c.json": b"42"}, ["replay", "{tmp}/c.json"]),
    ("replay a string", {"c.json": b'"world"'}, ["replay", "{tmp}/c.json"]),
    ("replay null", {"c.json": b"null"}, ["replay", "{tmp}/c.json"]),
    ("replay binary junk", {"c.json": bytes(range(256)) * 4}, ["replay", "{tmp}/c.json"]),
    ("replay latin-1 junk", {"c.json": '{"caf\xe9": 1}'.encode("latin-1")}, ["replay", "{tmp}/c.json"]),
    ("replay an object that is neither", {"c.json": b'{"a": 1}'}, ["replay", "{tmp}/c.json"]),
    ("replay wrong format", {"c.json": cx(format="other/1")}, ["replay", "{tmp}/c.json"]),
    ("replay string world", {"c.json": cx(world="default")}, ["replay", "{tmp}/c.json"]),
    ("replay world of unknown kind", {"c.json": world(kind="planet")}, ["replay", "{tmp}/c.json"]),
    ("replay world of unknown name", {"c.json": world(name="mars")}, ["replay", "{tmp}/c.json"]),
    ("replay world of unknown variant", {"c.json": world(variant="tomorrow")}, ["replay", "{tmp}/c.json"]),
    ("replay world of empty variant", {"c.json": world(variant="")}, ["replay", "{tmp}/c.json"]),
    ("replay world of unknown second", {"c.json": world(second=3)}, ["replay", "{tmp}/c.json"]),
    ("replay scenario world with nothing", {"c.json": cx(world={"kind": "scenario"})}, ["replay", "{tmp}/c.json"]),
    ("replay scenario world with a bad scenario",
     {"c.json": cx(world={"kind": "scenario", "scenario": {"name": 3}})}, ["replay", "{tmp}/c.json"]),
    ("replay actions not a list", {"c.json": cx(actions={"a": 1})}, ["replay", "{tmp}/c.json"]),
    ("replay an int action", {"c.json": cx(actions=[42])}, ["replay", "{tmp}/c.json"]),
    ("replay an unknown action", {"c.json": cx(actions=[{"action": "teleport", "at_ms": 0}])},
     ["replay", "{tmp}/c.json"]),
    ("replay an action without time", {"c.json": cx(actions=[{"action": "tick"}])}, ["replay", "{tmp}/c.json"]),
    ("replay an action at a string time", {"c.json": cx(actions=[{"action": "tick", "at_ms": "x"}])},
     ["replay", "{tmp}/c.json"]),
    ("replay a fault without its kind", {"c.json": cx(actions=[{"action": "fault", "at_ms": 0}])},
     ["replay", "{tmp}/c.json"]),
    ("replay an action with a stray field", {"c.json": cx(actions=[{"action": "tick", "at_ms": 0, "x": 1}])},
     ["replay", "{tmp}/c.json"]),
    ("replay property not a string", {"c.json": cx(property=7)}, ["replay", "{tmp}/c.json"]),
    ("replay trace with a non-object line", {"t.jsonl": b'{"kind": "header"}\n[1]\n'}, ["replay", "{tmp}/t.jsonl"]),
    ("replay trace with a non-JSON line", {"t.jsonl": b'{"kind": "header"}\nnot json\n'}, ["replay", "{tmp}/t.jsonl"]),
    ("replay trace without a header", {"t.jsonl": b'{"kind": "action"}\n{"kind": "note"}\n'},
     ["replay", "{tmp}/t.jsonl"]),
    ("replay trace of an unknown scenario",
     {"t.jsonl": b'{"kind":"header","scenario":"ghost","scenario_sha256":"ab","variant":"contract","t_ms":0}\n'},
     ["replay", "{tmp}/t.jsonl"]),
    ("replay --scenario missing", {"c.json": cx()}, ["replay", "{tmp}/c.json", "--scenario", "{tmp}/nope.toml"]),
    ("replay --scenario for an explorer world", {"c.json": cx(), "s.toml": GOOD.encode()},
     ["replay", "{tmp}/c.json", "--scenario", "{tmp}/s.toml"]),
    # -- swarm ----------------------------------------------------------------------------
    ("swarm --seeds 0", {}, ["swarm", "--seeds", "0", "--out", "{tmp}/o"]),
    ("swarm --seeds negative", {}, ["swarm", "--seeds", "-3", "--out", "{tmp}/o"]),
    ("swarm --seeds not a number", {}, ["swarm", "--seeds", "ten", "--out", "{tmp}/o"]),
    ("swarm without --seeds", {}, ["swarm", "--out", "{tmp}/o"]),
    ("swarm --workers 0", {}, ["swarm", "--seeds", "1", "--workers", "0", "--out", "{tmp}/o"]),
    ("swarm --first-seed negative", {}, ["swarm", "--seeds", "1", "--first-seed", "-1", "--out", "{tmp}/o"]),
    ("swarm --variant empty", {}, ["swarm", "--seeds", "1", "--variant", "", "--out", "{tmp}/o"]),
    ("swarm --variant unknown", {}, ["swarm", "--seeds", "1", "--variant", "tomorrow", "--out", "{tmp}/o"]),
    ("swarm --out an existing file", {"f": b"x"}, ["swarm", "--seeds", "1", "--out", "{tmp}/f"]),
    # -- search ---------------------------------------------------------------------------
    ("search --examples 0", {}, ["search", "--examples", "0", "--out", "{tmp}/o"]),
    ("search --steps 0", {}, ["search", "--steps", "0", "--out", "{tmp}/o"]),
    ("search --variant empty", {}, ["search", "--variant", "", "--out", "{tmp}/o"]),
    ("search --out an existing file", {"f": b"x"}, ["search", "--out", "{tmp}/f"]),
]


def _id(case) -> str:
    return case.values[0] if hasattr(case, "values") else case[0]


def _run(tmp_path: Path, files: dict, argv: list[str], capsys) -> tuple[int, str]:
    for name, data in files.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    args = [a.replace("{tmp}", str(tmp_path)) for a in argv]
    try:
        code = main(args)
    except SystemExit as exit_:  # argparse's own errors
        code = exit_.code
    return code, capsys.readouterr().err


def test_the_table_is_large_enough():
    assert len(CASES) >= 60


@pytest.mark.parametrize("name,files,argv", CASES, ids=[_id(c) for c in CASES])
def test_bad_input_is_one_line_exit_2(name, files, argv, tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)  # nothing may land in the checkout even when a case slips
    code, err = _run(tmp_path, files, argv, capsys)
    assert code == 2, f"{name}: exit {code}, stderr {err!r}"
    assert "Traceback" not in err
    assert len(err.strip().splitlines()) == 1, err
    assert not (tmp_path / "reports").exists()


@pytest.mark.parametrize("data", [bytes(range(256)), "name = 'caf\xe9'\n".encode("latin-1")], ids=["binary", "latin-1"])
def test_unreadable_scenario_in_a_real_process(data, tmp_path):
    """The same through the installed entry point's module, in its own process: what a
    user sees (stderr is one line, no traceback)."""
    (tmp_path / "s.toml").write_bytes(data)
    proc = subprocess.run([sys.executable, "-m", "toolcall_sim", "run", str(tmp_path / "s.toml")], capture_output=True,
                          cwd=ROOT, check=False)
    err = proc.stderr.decode()
    assert proc.returncode == 2 and "Traceback" not in err and len(err.strip().splitlines()) == 1, err


def test_harness_error_is_one_line_with_a_pointer_to_debug(monkeypatch, capsys):
    """An exception the harness did not expect: one line, exit 70, and --debug shows the
    traceback (the exception propagates)."""
    from toolcall_sim.cli.commands import incident

    def boom(args, out):
        raise RuntimeError("the model fell over\non two lines")
    monkeypatch.setattr(incident, "main", boom)
    assert main(["incident"]) == 70
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "--debug" in err and "RuntimeError" in err
    with pytest.raises(RuntimeError):
        main(["--debug", "incident"])
    with pytest.raises(RuntimeError):
        main(["incident", "--debug"])
