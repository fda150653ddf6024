"""The agent's routing (model/agent/routes.py; docs/contract.md A1.4, A4.1, A4.6, A4.7):
which handler a request reaches by method and path, what an old agent does with tool call
headers, and which timers and departures act on what. Found unpinned by the mutation run
of routes.py (issue 35): each test asserts the route table, never a mutant's text.

The model answers a request no route takes with Go's 404. A registered path under another
method is a 405 in a chi router; the tests accept either, since chatd never sends one and
the model does not tell them apart (docs/contract.md A4.7).
"""

from __future__ import annotations

import pytest

from agent_harness import CHAT, AgentHarness
from toolcall_sim.model import agent
from toolcall_sim.model.core import CancelTimer, Request, json_body, replace
from toolcall_sim.model.identity import set_tool_call_headers, tool_call_uuid


def _runtime(text: str) -> str:
    """An equal string that is not the model's literal (as a method or path read off the
    wire is): routing must compare by value."""
    return "".join(list(text))


def _unrouted(h: AgentHarness, rid: str, before) -> None:
    # the router answers before any middleware or handler runs: no record, no process, no
    # timer, nothing of the agent changes (docs/contract.md A4.7)
    assert h.status(rid) in (404, 405)
    assert h.state == before


def test_an_old_agent_runs_every_start_even_with_tool_call_headers():
    """US8: an agent without the middleware ignores the headers: the same tool call's
    start runs twice, each with its own process, and nothing is recorded or replayed."""
    h = AgentHarness(config=agent.AgentConfig(rules=agent.OLD_AGENT))
    first = h.json(h.start(1, "call", command="sleep 60"))["id"]
    second = h.json(h.start(1, "call", command="sleep 60"))["id"]
    assert first != second and len(h.state.processes) == 2


def test_a_new_agent_runs_a_repeated_start_once():
    h = AgentHarness()
    first = h.json(h.start(1, "call", command="sleep 60"))["id"]
    assert h.json(h.start(1, "call", command="sleep 60"))["id"] == first and len(h.state.processes) == 1


@pytest.mark.parametrize("method", ["GET", "PUT", "DELETE", "PATCH"])
def test_only_post_reaches_the_cancel_route(method):
    h = AgentHarness()
    h.start(1, "call", command="sleep 60")
    before = h.state
    rid = h.request(method, f"/api/v0/tool-calls/{tool_call_uuid(CHAT, 1, 'call')}/cancel",
                    body=json_body({"stop_if_run_age_below_ms": 0}), m=1, call="call")
    _unrouted(h, rid, before)
    assert all(p.running for p in h.state.processes.values())


@pytest.mark.parametrize("method", ["POST", "PUT", "DELETE", "HEAD"])
def test_only_get_reaches_the_output_route(method):
    h = AgentHarness()
    pid = h.json(h.start(None, command="sleep 60"))["id"]
    before = h.state
    _unrouted(h, h.request(method, f"/api/v0/processes/{pid}/output", chat=CHAT), before)


@pytest.mark.parametrize("method", ["GET", "PUT", "DELETE", "PATCH"])
def test_only_post_reaches_the_signal_route(method):
    h = AgentHarness()
    pid = h.json(h.start(None, command="sleep 60"))["id"]
    before = h.state
    rid = h.request(method, f"/api/v0/processes/{pid}/signal", body=json_body({"signal": "kill"}), chat=CHAT)
    _unrouted(h, rid, before)
    assert h.state.processes[pid].running


@pytest.mark.parametrize("method", ["POST", "PUT", "DELETE", "HEAD"])
def test_only_get_reaches_the_list_route(method):
    h = AgentHarness()
    h.start(None, command="sleep 60")
    _unrouted(h, h.request(method, agent.LIST_PATH), h.state)


def test_a_get_of_an_unknown_path_is_not_the_list():
    h = AgentHarness()
    h.start(None, command="sleep 60")
    for path in ("/api/v0/processes", "/api/v0/processes/listing", "/"):
        _unrouted(h, h.request("GET", path), h.state)


def test_routes_compare_methods_and_paths_by_value():
    """A method and path equal to the route's, as decoded from a request, reach it."""
    h = AgentHarness()
    pid = h.json(h.start(None, command="sleep 60"))["id"]

    def send(method: str, path: str, body: bytes = b"", headers=()) -> str:
        h.counter += 1
        req = Request(f"r{h.counter}", "chatd", _runtime(method), _runtime(path), "",
                      (("Coder-Chat-Id", CHAT), *headers), body)
        return h.send(req)

    assert h.json(send("GET", f"/api/v0/processes/{pid}/output"))["running"] is True
    assert [row["id"] for row in h.json(send("GET", agent.LIST_PATH))["processes"]] == [pid]
    assert h.status(send("POST", f"/api/v0/processes/{pid}/signal", json_body({"signal": "kill"}))) == 200
    assert not h.state.processes[pid].running
    h.start(1, "call", command="sleep 60")
    cancel = send("POST", f"/api/v0/tool-calls/{tool_call_uuid(CHAT, 1, 'call')}/cancel",
                  json_body({"stop_if_run_age_below_ms": 60_000}), set_tool_call_headers((), 1, "call", 0))
    assert h.status(cancel) == 200 and not any(p.running for p in h.state.processes.values())


def test_a_caller_gone_from_an_output_wait_ends_its_cap_timer_and_no_other_waiter_has_one():
    """on_client_gone: a blocking output read's waiter ends its ``outwait`` timer; a
    replay or cancel waiter has no timer to end, and is only forgotten."""
    h = AgentHarness()
    pid = h.json(h.start(None, command="sleep 60"))["id"]
    rid = h.output(pid, wait=True)
    state, effects = agent.on_client_gone(h.state, rid, h.now_ms)
    assert CancelTimer(f"outwait:{rid}") in effects and rid not in state.waiters
    for kind in ("replay", "cancel"):
        held = replace(h.state, waiters=h.state.waiters.set("w1", agent.Waiter(h.requests[rid], kind, "run-x", None)))
        state, effects = agent.on_client_gone(held, "w1", h.now_ms)
        assert not any(isinstance(e, CancelTimer) for e in effects) and "w1" not in state.waiters


@pytest.mark.parametrize("name", ["", "a:x", "cancel:x", "zzz:x", "exits:x", "outwaits:x"])
def test_a_timer_of_no_known_kind_does_nothing(name):
    """Timers name what they end (handler, exit, outwait); any other name is no step of
    the agent, even when its suffix names a live process or waiter."""
    h = AgentHarness()
    pid = h.json(h.start(None, command="sleep 60"))["id"]
    rid = h.output(pid, wait=True)
    for suffix in (pid, rid):
        timer = name.replace("x", suffix) if name else ""
        state, effects = agent.on_timer(h.state, timer, h.now_ms)
        assert state is h.state and effects == []
