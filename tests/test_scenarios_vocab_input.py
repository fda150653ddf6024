"""Nothing accepted in silence (issue 12, the loader's part): a value the run would not
use is one line naming file, field and reason, exit 2, no traceback."""

from __future__ import annotations

import textwrap

import pytest

from toolcall_sim.cli.main import main

GOOD = """
name = "ok"
until = "10m"
[[turns]]
chat = "chat-1"
tool_calls = [ { id = "toolu_01", tool = "execute", command = "true", runs_for = "1s" },
               { id = "toolu_02", tool = "edit_files", path = "/a", edits = [ { search = "a", replace = "b" } ] } ]
"""

BAD = [
    ("fault for a chat that does not exist", GOOD + '[[faults]]\nat = "1s"\nkind = "interrupt"\nchat = "chat-9"\n',
     "faults[0].chat: no such chat 'chat-9' (chats: chat-1)"),
    ("fault after until", GOOD + '[[faults]]\nat = "11m"\nkind = "agent_restart"\n',
     "faults[0].at: 11m is not before until (10m)"),
    ("fault offset past until", GOOD + '[[faults]]\nat = "9m"\noffset = "2m"\nkind = "agent_restart"\n',
     "faults[0].at: 11m is not before until"),
    ("clock for a node that does not exist", GOOD + '[clocks.moon]\noffset = "1s"\n', "clocks.moon: no such node"),
    ("unknown result kind", GOOD + '[expect.contract]\ntoolu_01 = { results = ["exploded"] }\n',
     "expect.contract.toolu_01.results: unknown result kind 'exploded'"),
    ("unknown result kind in result", GOOD + '[expect.contract]\ntoolu_01 = { result = { kind = "exploded" } }\n',
     "expect.contract.toolu_01.result.kind: unknown result kind 'exploded'"),
    ("unknown result field", GOOD + '[expect.contract]\ntoolu_01 = { result = { colour = "red" } }\n',
     "expect.contract.toolu_01.result.colour: unknown key"),
    ("zero timeout", GOOD.replace('runs_for = "1s"', 'runs_for = "1s", timeout = "0s"'),
     "turns[0].tool_calls[0].timeout: must be longer than 0s"),
    ("key the tool does not use", GOOD.replace('path = "/a"', 'path = "/a", timeout = "1s"'),
     "turns[0].tool_calls[1].timeout: not used by a edit_files tool call"),
    ("until 0s", GOOD.replace('until = "10m"', 'until = "0s"'), "until: must be longer than 0s"),
    ("until above the cap", GOOD.replace('until = "10m"', 'until = "2000000h"'), "until: 2000000h is longer than the cap"),
    ("replica that does not exist", GOOD + '[[faults]]\nat = "1s"\nkind = "replica_crash"\nreplica = "replica-3"\n',
     "faults[0].replica: no such replica 'replica-3'"),
    ("partition with a node that does not exist", GOOD + '[[faults]]\nat = "1s"\nkind = "partition"\nbetween = ["agent", "moon"]\n',
     "faults[0].between: no such node 'moon'"),
    ("direction in when", GOOD + '[[faults]]\nkind = "agent_restart"\nwhen = { event = "response_sent", direction = "response" }\n',
     "faults[0].when.direction: unknown key"),
    ("route of a commit event", GOOD + '[[faults]]\nkind = "agent_restart"\nwhen = { event = "result_committed", route = "start", tool_call = "toolu_02" }\n',
     "faults[0].when.route: a result_committed event is on the tool call's own route (edit)"),
    ("process_started of an edit", GOOD + '[[faults]]\nkind = "agent_restart"\nwhen = { event = "process_started", tool_call = "toolu_02" }\n',
     "faults[0].when.tool_call: toolu_02 is not an execute call"),
    ("unknown expectation variant", GOOD + '[expect.tomorrow]\nviolations = []\n', "expect.tomorrow: unknown variant 'tomorrow'"),
    ("unknown property", GOOD + '[expect.contract]\nviolations = ["at_most_twice"]\n', "unknown property 'at_most_twice'"),
    ("unknown sometimes-property", GOOD + '[expect.contract]\nsometimes = ["at_most_once"]\n', "unknown sometimes-property 'at_most_once'"),
    ("unknown residual risk", GOOD + '[expect.contract]\nresidual_risks = ["bad_luck"]\n', "unknown residual risk 'bad_luck'"),
    ("expectation on a request no fault sends", GOOD + '[expect.contract]\nrequests = { forged = 400 }\n',
     "expect.contract.requests.forged: no request fault has that name"),
    ("request route of another tool", GOOD + '[[faults]]\nat = "1s"\nkind = "request"\nname = "x"\nroute = "write"\ntool_call = "toolu_02"\n',
     "faults[0].route: toolu_02 is a edit_files call"),
    ("process signal of a file call", GOOD + '[[faults]]\nat = "1s"\nkind = "request"\nname = "x"\nroute = "signal"\ntool_call = "toolu_02"\n',
     "faults[0].route: toolu_02 is a edit_files call: only an execute call has a process to read or signal"),
    ("message fault with a time", GOOD + '[[faults]]\nat = "1s"\nkind = "lose"\nmessage = { route = "start" }\n',
     "faults[0].at: unknown key"),
    ("takeover in a one-replica world", GOOD + '[world]\nreplicas = 1\n[[faults]]\nat = "1s"\nkind = "takeover"\nto = "replica-1"\n',
     "faults[0]: an immediate takeover needs at least two replicas"),
    ("timing key of 0s", GOOD + '[world]\nattempt_timeout = "0s"\n', "world.attempt_timeout: must be longer than 0s"),
    ("negative drift that stops the clock", GOOD + '[clocks.agent]\ndrift_ppm = -1000000\n', "clocks.agent.drift_ppm: must be above -1000000"),
    ("link between unknown nodes", GOOD + '[network.links."agent->moon"]\nloss = 0.5\n', "network.links.agent->moon: name a link"),
    ("delay by nothing", GOOD + '[[faults]]\nkind = "delay"\nmessage = { route = "start" }\nby = "0s"\n',
     "faults[0].by: must be longer than 0s"),
    ("outage of nothing", GOOD + '[[faults]]\nat = "1s"\nkind = "db_outage"\nduration = "0s"\n',
     "faults[0].duration: must be longer than 0s (omit it"),
    ("clock step of nothing", GOOD + '[clocks.agent]\nsteps = [ { at = "1m", by = "0s" } ]\n', "clocks.agent.steps[0].by: must be longer than 0s"),
    ("link loss above 1", GOOD + '[network.links."agent->replica-1"]\nloss = 1.5\n', "network.links.agent->replica-1.loss: must be between 0 and 1"),
    ("world loss below 0", GOOD + '[network]\nloss = -0.1\n', "network.loss: must be between 0 and 1"),
    ("unknown workspace state", GOOD + '[world]\nworkspace = "hibernating"\n',
     "world.workspace: unknown state 'hibernating' (known: running, none, stopped, deleted)"),
    ("a chat that loses its workspace mid-run", GOOD + '[[faults]]\nat = "1s"\nkind = "workspace"\nstate = "none"\n',
     "faults[0].state: a chat keeps its workspace while a world runs"),
    ("unknown workspace fault state", GOOD + '[[faults]]\nat = "1s"\nkind = "workspace"\nstate = "paused"\n',
     "faults[0].state: unknown state 'paused' (known: running, stopped, deleted)"),
    ("workspace fault without a state", GOOD + '[[faults]]\nat = "1s"\nkind = "workspace"\n',
     "faults[0].state: missing (a workspace fault needs it)"),
    ("kill_fails not a boolean", GOOD.replace('runs_for = "1s" }', 'runs_for = "1s", kill_fails = "yes" }'),
     "turns[0].tool_calls[0].kill_fails"),
    ("kill_fails on an edit", GOOD.replace('path = "/a"', 'path = "/a", kill_fails = true'),
     "turns[0].tool_calls[1].kill_fails: not used by a edit_files tool call"),
    ("two scripts for one command", GOOD + '[[turns]]\nchat = "chat-1"\ntool_calls = [ { id = "toolu_03", '
     'tool = "execute", command = "true", runs_for = "1s", kill_fails = true } ]\n',
     "turns[1].tool_calls[0].kill_fails: toolu_01 runs the same command 'true' with another kill_fails"),
]


@pytest.mark.parametrize("source,reason", [(s, r) for _, s, r in BAD], ids=[n for n, _, _ in BAD])
def test_value_the_run_would_not_use_is_one_line_exit_2(source, reason, tmp_path, capsys):
    path = tmp_path / "bad.toml"
    path.write_text(textwrap.dedent(source))
    assert main(["run", str(path)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "Traceback" not in err
    assert str(path) in err and reason in err, err


@pytest.mark.parametrize("until,reason", [
    ("0s", "--until: must be longer than 0s"),
    ("2000000h", "--until: 2000000h is longer than the cap of 168h"),
    ("30s", "--until: 30s ends the run before faults[0] (agent_restart at 1m) would fire"),
])
def test_run_until_is_bounded(until, reason, tmp_path, capsys):
    """`run --until` refuses a run of nothing, one of minutes of real time, and one that
    ends before a timed fault would fire: one line, exit 2."""
    path = tmp_path / "ok.toml"
    path.write_text(GOOD + '[[faults]]\nat = "1m"\nkind = "agent_restart"\n')
    assert main(["run", str(path), "--until", until]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and reason in err, err


def test_negative_offset_is_accepted(tmp_path, capsys):
    path = tmp_path / "ok.toml"
    path.write_text(GOOD + '[clocks.agent]\noffset = "-2h"\ndrift_ppm = -300\n')
    assert main(["run", str(path)]) == 0
