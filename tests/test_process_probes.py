"""Probes that read the agent as a user would (issue 34): the process list (docs/contract.md
A4.9) and its lazy reaping (A4.4), the `list` route of a crafted request, what
`[expect.<variant>.requests]` may say about an answer (sim/world/answers.py), the
`records_at_end` expectation, and the agent's end state in `run --json`.

Each test states the Go fact it holds the model to; the scenario tests at the end break
the model's reaping rule on purpose and check that scenarios/us06_process_list_reaping.toml
then fails."""

from __future__ import annotations

import copy
import pathlib
import tomllib

import pytest

from toolcall_sim.model import agent
from toolcall_sim.model.core import json_body
from toolcall_sim.reports.run import run_json
from toolcall_sim.world.run import run_scenario
from toolcall_sim.world.scenario import ScenarioError, from_dict

from agent_harness import CHAT, OTHER_CHAT, AgentHarness

ROOT = pathlib.Path(__file__).resolve().parent.parent
SCENARIO = ROOT / "scenarios" / "us06_process_list_reaping.toml"
MIN = 60_000


def _plain(h: AgentHarness, command: str, *, chat=CHAT, body=None) -> str:
    """A start without tool call headers (today's chatd): the agent names the process."""
    body = body or json_body({"command": command})
    return h.json(h.request("POST", agent.START_PATH, body=body, chat=chat))["id"]


def _rows(h: AgentHarness, chat=CHAT) -> list[dict]:
    return h.json(h.request("GET", agent.LIST_PATH, chat=chat))["processes"]


# -- the list answer (A4.9) ----------------------------------------------------------------

def test_list_rows_are_process_info_without_output():
    """handleListProcesses writes workspacesdk.ProcessInfo rows: id, command, workdir,
    background, running, exit_code and exited_at_unix only once exited (omitempty), the
    instants in Unix seconds, and never the output (only the output route carries it). A
    killed process reads exit code -1."""
    h = AgentHarness()
    running = _plain(h, "echo hi; sleep 100")
    done = _plain(h, "echo ok; exit 3", body=json_body({"command": "echo ok; exit 3", "workdir": "/home/coder"}))
    killed = _plain(h, "sleep 50")
    h.advance(1_500)
    h.signal(killed)
    rows = {r["id"]: r for r in _rows(h)}
    assert rows[running] == {"id": running, "command": "echo hi; sleep 100", "workdir": "/home/coder",
                             "background": False, "running": True, "started_at_unix": 3600}
    assert rows[done] == {"id": done, "command": "echo ok; exit 3", "workdir": "/home/coder", "background": False,
                          "running": False, "exit_code": 3, "started_at_unix": 3600, "exited_at_unix": 3600}
    assert rows[killed]["exit_code"] == -1 and rows[killed]["exited_at_unix"] == 3601
    assert not any("output" in r for r in rows.values())


def test_list_sorts_running_first_newest_first_and_caps_at_ten():
    """handleListProcesses: running processes first, then by start second, newest first;
    at most maxListProcesses (10) rows, so the oldest exited ones drop from the answer
    (they stay in the manager)."""
    h = AgentHarness()
    exited = []
    for i in range(6):
        exited.append(_plain(h, f"echo {i}"))
        h.advance(1_000)
    running = []
    for i in range(6):
        running.append(_plain(h, f"echo r{i}; sleep 600"))
        h.advance(1_000)
    ids = [r["id"] for r in _rows(h)]
    assert ids == running[::-1] + exited[::-1][:4]
    assert len(h.state.processes) == 12


def test_list_with_a_chat_sees_its_own_and_without_sees_all():
    """manager.list: a chat context keeps that chat's processes only (not chat-less ones);
    no chat context lists every process."""
    h = AgentHarness()
    mine, theirs, nobody = _plain(h, "sleep 9"), _plain(h, "sleep 9", chat=OTHER_CHAT), _plain(h, "sleep 9", chat=None)
    assert {r["id"] for r in _rows(h, CHAT)} == {mine}
    assert {r["id"] for r in _rows(h, OTHER_CHAT)} == {theirs}
    assert {r["id"] for r in _rows(h, None)} == {mine, theirs, nobody}


# -- reaping (A4.4) ------------------------------------------------------------------------

def test_reaping_counts_from_the_exit_second():
    """manager.list compares against the exit instant in whole Unix seconds (the exit
    goroutine stores clock.Now().Unix()): a process that exits at 3600.9 s is reaped once
    more than 5 min have passed since 3600 s, 0.9 s before 5 min after its exact exit."""
    h = AgentHarness()
    pid = _plain(h, "sleep 0.9")
    h.advance(900)
    assert h.process(pid).exited_at_ms == HOUR_PLUS(900)
    h.advance(5 * MIN - 900)  # exactly 5 min after the exit second: kept
    assert pid in [r["id"] for r in _rows(h)]
    h.advance(1)  # 5 min and 1 ms after the exit second, 0.899 s before exit + 5 min
    assert pid not in [r["id"] for r in _rows(h)]


def HOUR_PLUS(ms: int) -> int:  # noqa: N802 - reads as the instant it names
    return 3_600_000 + ms


def test_a_list_reaps_every_chat_and_notes_each_reap():
    """manager.list reaps before it filters by chat: another chat's list reaps this chat's
    old process too. Each reap is a ``process_reaped`` note naming the process, its chat
    and exit code (what run --json reports as reaped)."""
    h = AgentHarness()
    pid = _plain(h, "exit 2")
    h.advance(6 * MIN)
    assert _rows(h, OTHER_CHAT) == []
    assert pid not in h.state.processes
    (reaped,) = [n for n in h.notes if n.kind == "process_reaped"]
    assert dict(reaped.fields) == {"pid": pid, "chat_id": CHAT, "exit_code": 2, "incarnation": 1}


def test_current_key_keeps_until_a_newer_message_inserts_a_record():
    """Rev C (TestToolCallProcessReaping, the WithToolCallStore comment): an exited tool
    call process is kept while its record is current, however long ago it exited; a newer
    message of the same chat makes it reapable by the 5-minute rule, another chat's newer
    message does not."""
    h = AgentHarness()
    pid = h.json(h.start(1, "call", command="true"))["id"]
    h.advance(60 * MIN)
    assert _rows(h) and _rows(h)[0]["id"] == pid
    h.start(2, "other", command="sleep 1", chat=OTHER_CHAT)  # another chat's message 2
    assert pid in [r["id"] for r in _rows(h)]
    h.start(2, "call", command="sleep 600")
    assert pid not in [r["id"] for r in _rows(h, None)]


def test_old_agent_and_headerless_starts_keep_nothing():
    """Before the contract (agentproc manager.list without the tool call store; an old
    agent ignores the headers): no process has a key, so every exited process goes once 5
    min have passed since its exit second, even the latest message's."""
    h = AgentHarness(config=agent.AgentConfig(rules=agent.OLD_AGENT))
    pid = h.json(h.start(1, "call", command="true"))["id"]
    h.advance(5 * MIN + 1)
    assert pid not in [r["id"] for r in _rows(h)]


# -- the scenario: the list route, the answer fields, records_at_end, run --json ----------

def _data() -> dict:
    with SCENARIO.open("rb") as f:
        return tomllib.load(f)


@pytest.mark.parametrize("variant", ["contract", "today"])
def test_scenario_meets_its_expectations(variant):
    assert run_scenario(from_dict(_data()), variant).expectation_failures() == []


def test_scenario_fails_when_current_processes_are_reaped(monkeypatch):
    """Break Rev C's exception (an exited process of a current record is reaped like any
    other): the lists that show the latest message's process past 5 min fail, and so does
    the output read of it."""
    monkeypatch.setattr(agent.AgentRules, "kept_when_exited", lambda self, state, proc: False)
    failures = run_scenario(from_dict(_data()), "contract").expectation_failures()
    assert "requests.list_while_current.processes: expected [toolu_01], got []" in failures
    assert "requests.list_latest_kept.processes: expected [toolu_02], got []" in failures
    assert any(f.startswith("requests.output_while_current: expected status 200, got 404") for f in failures)


def test_scenario_fails_when_nothing_is_reaped(monkeypatch):
    """Break the 5-minute rule (nothing is ever reaped): the list after the next message
    still shows the first message's process, and the output read still finds it."""
    monkeypatch.setattr(agent.AgentRules, "kept_when_exited", lambda self, state, proc: True)
    failures = run_scenario(from_dict(_data()), "contract").expectation_failures()
    assert "requests.list_after_next_message.processes: expected [toolu_02], got [toolu_01, toolu_02]" in failures
    assert "requests.output_after_reap: expected status 404, got 200" in failures


def test_scenario_fails_when_the_list_ignores_the_chat(monkeypatch):
    """Break the chat filter of the list (every list sees all): chat-2's list shows
    chat-1's process."""
    real = agent.processes._list

    def unfiltered(state, req, now_ms):
        return real(state, agent.Request(req.req_id, req.src, req.method, req.path, req.query, (), req.body), now_ms)

    monkeypatch.setattr(agent.routes, "_list", unfiltered)
    failures = run_scenario(from_dict(_data()), "contract").expectation_failures()
    assert "requests.list_chat_2.processes: expected [toolu_03], got [toolu_02, toolu_03]" in failures


def test_answer_fields_say_what_differs():
    """Each answer field, when the answer shows otherwise, is one line naming the request,
    the field, what was expected and what the answer shows."""
    data = _data()
    data["expect"]["contract"]["requests"].update({
        "list_while_current": {"processes": ["toolu_01"], "exited": {"toolu_01": 2}},
        "output_while_current": {"running": True, "output": "nope"},
        "output_after_reap": {"status": 404, "running": False},
    })
    data["expect"]["contract"]["records_at_end"] = {"chat-1": 2}
    failures = run_scenario(from_dict(data), "contract").expectation_failures()
    assert "requests.list_while_current.exited: expected { toolu_01 = 2 }, got { toolu_01 = 0 }" in failures
    assert "requests.output_while_current.running: expected true, got false" in failures
    assert "requests.output_while_current.output: expected it to contain 'nope', got 'built\\n'" in failures
    assert any(f.startswith("requests.output_after_reap.running: the answer (404 ") for f in failures)
    assert "records_at_end.chat-1: expected 2, got 1" in failures


def test_run_json_reads_the_agent_as_a_user_would():
    """run --json's ``agent``: per chat the records held (count, by route, by state, each),
    and this boot's processes held or reaped, with chat, tool call and exit code."""
    contract = run_json(run_scenario(from_dict(_data()), "contract"))["agent"]
    assert contract["up"] and contract["incarnation"] == 1
    chats = {c["chat"]: c for c in contract["chats"]}
    assert chats["chat-1"]["records"] == 1 and chats["chat-1"]["by_route"] == {"start": 1}
    assert chats["chat-1"]["by_state"] == {"recorded": 1}
    assert [(r["tool_call"], r["status"]) for r in chats["chat-1"]["held"]] == [("toolu_02", 200)]
    procs = {p["tool_call"]: p for p in contract["processes"]}
    assert procs["toolu_01"]["reaped"] and procs["toolu_01"]["exit_code"] == 0 and procs["toolu_01"]["chat"] == "chat-1"
    assert not procs["toolu_02"]["reaped"] and not procs["toolu_02"]["running"] and procs["toolu_02"]["exit_code"] == 1
    assert procs["toolu_03"]["running"] and procs["toolu_03"]["chat"] == "chat-2"
    assert not procs["toolu_02"]["reaped_at_next_list"]  # its record is current
    today = run_json(run_scenario(from_dict(_data()), "today"))["agent"]
    assert [c["records"] for c in today["chats"]] == [0, 0]
    assert {p["tool_call"]: p["reaped"] for p in today["processes"]} == {"toolu_01": True, "toolu_02": True,
                                                                          "toolu_03": False}


def test_run_json_of_a_down_agent():
    data = _data()
    data["faults"].append({"kind": "agent_shutdown", "at": "19m"})
    doc = run_json(run_scenario(from_dict(data), "contract"))["agent"]
    assert doc == {"up": False, "incarnation": None, "chats": [], "processes": []}


# -- what the loader refuses ---------------------------------------------------------------

def _refused(change) -> str:
    data = copy.deepcopy(_data())
    change(data)
    with pytest.raises(ScenarioError) as err:
        from_dict(data)
    return str(err.value)


def _req(data, name):
    return next(f for f in data["faults"] if f.get("name") == name)


@pytest.mark.parametrize("change,words", [
    (lambda d: _req(d, "list_chat_2").update(tool_call="toolu_03"), "a list names no tool call"),
    (lambda d: d["expect"]["contract"]["requests"].update(list_chat_2={"running": True}),
     "a list answer has no running (only a output answer has)"),
    (lambda d: d["expect"]["contract"]["requests"].update(output_after_reap={"processes": []}),
     "a output answer has no processes (only a list answer has)"),
    (lambda d: d["expect"]["contract"]["requests"].update(list_chat_2={"processes": ["toolu_09"]}),
     "names a tool call that does not exist: 'toolu_09'"),
    (lambda d: d["expect"]["contract"]["requests"].update(list_chat_2={"processes": ["toolu_03"],
                                                                       "exited": {"toolu_01": 0}}),
     "toolu_01 exited but is not among the listed processes"),
    (lambda d: d["expect"]["contract"]["requests"].update(list_chat_2={"processes": ["toolu_03"] * 11}),
     "a list names at most 10"),
    (lambda d: d["expect"]["contract"]["requests"].update(output_after_reap={"running": True, "exit_code": 0}),
     "a running process has no exit code yet"),
    (lambda d: d["expect"]["contract"]["requests"].update(output_after_reap={}), "says nothing about the answer"),
    (lambda d: d["expect"]["contract"]["requests"].update(output_after_reap={"body": "x"}), "unknown key"),
    (lambda d: d["expect"]["contract"]["requests"].update(output_after_reap={"exit_code": 256}),
     "must be from -1 to 255"),
    (lambda d: d["expect"]["contract"].update(records_at_end={"chat-9": 0}), "no such chat 'chat-9'"),
    (lambda d: d["expect"]["contract"].update(records_at_end={"chat-1": -1}), "must be from 0"),
])
def test_loader_refuses_what_no_answer_could_show(change, words):
    assert words in _refused(change)


def test_a_file_call_has_no_process_to_list():
    data = copy.deepcopy(_data())
    data["turns"].append({"chat": "chat-2", "tool_calls": [{"id": "toolu_04", "tool": "write_file", "path": "/a",
                                                            "content": "x"}]})
    data["expect"]["contract"]["requests"]["list_chat_2"] = {"processes": ["toolu_04"]}
    with pytest.raises(ScenarioError, match="only an execute call starts a process"):
        from_dict(data)
