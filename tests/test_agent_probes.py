"""The agent side's rule coverage probes (issue 35): each probe of A2.5, A2.7, A4.1, A4.3,
A4.4, A4.5, A4.6 and A4.9 is emitted by the branch it names, in a small hand-built model
step, and only there; and the shipped scenarios reach every agent-side probe that
model/probes.py does not list as unreachable.

The steps run the model's own agent through tests/agent_harness.py; ``ProbeHarness``
only keeps the ``Probe`` effects each step returned, which the harness ignores."""

from __future__ import annotations

import pytest

from toolcall_sim.model import agent, probes
from toolcall_sim.model.core import Probe, json_body
from toolcall_sim.model.identity import tool_call_uuid

from agent_harness import CHAT, OTHER_CHAT, AgentHarness

MIN = 60_000
SLEEP = json_body({"command": "sleep 600"})


class ProbeHarness(AgentHarness):
    """``AgentHarness`` that also keeps every probe ID the agent's steps returned."""

    def __init__(self, *args, **kw):
        self.probes: list[str] = []
        super().__init__(*args, **kw)

    def _absorb(self, step):
        self.probes.extend(e.rule for e in step[1] if isinstance(e, Probe))
        super()._absorb(step)

    def taken(self, fn) -> list[str]:
        """The probes of what ``fn`` does (the steps it drives)."""
        before = len(self.probes)
        fn()
        return self.probes[before:]


def _plain_start(h: ProbeHarness, command: str, *, chat=CHAT, run=True) -> str:
    """A start without tool call headers (today's chatd, an old agent)."""
    return h.request("POST", agent.START_PATH, body=json_body({"command": command}), chat=chat, run=run)


# -- A2.5 a handler that panics ----------------------------------------------------------

def test_panic_before_effects_answers_the_creator_with_the_recovery_500():
    h = ProbeHarness()
    rid = h.start(run=False)
    taken = h.taken(lambda: h.run_handlers(panic=True))
    assert taken == ["A2.5.before-effects", "A2.5.recovery-500"]
    assert h.status(rid) == 500 and h.run_age(rid) is None


def test_panic_answers_a_waiter_and_later_requests_with_the_recorded_500():
    h = ProbeHarness()
    h.start(run=False)
    waiter = h.start(run=False)
    taken = h.taken(lambda: h.run_handlers(panic=True))
    assert "A2.5.waiter-recorded-500" in taken and h.run_age(waiter) is not None
    later = None

    def repeat():
        nonlocal later
        later = h.start()

    assert h.taken(repeat) == ["A2.5.later-recorded-500", "A2.4.replay-recorded"]
    assert h.answer(later).body == agent.PANIC_RECORDED.body and h.status(later) == 500


def test_a_done_record_of_another_500_is_no_panic_replay():
    """``A2.5.later-recorded-500`` counts the handler-failed 500 only, not any recorded 500."""
    h = ProbeHarness()
    body = json_body({"command": "true", "workdir": "/nowhere"})
    h.start(body=body)
    assert h.taken(lambda: h.start(body=body)) == ["A2.4.replay-recorded"]


def test_panic_after_the_spawn_leaves_the_process_running():
    h = ProbeHarness()
    h.start(command="sleep 600", run=False)
    (name,) = [n for n in h.timers if n.startswith("handler:")]
    del h.timers[name]
    taken = h.taken(lambda: h._absorb(agent.on_handler_done(h.state, name.split(":", 1)[1], h.now_ms,
                                                            panic=True, after_effects=True)))
    assert taken[-2:] == ["A2.5.after-spawn", "A2.5.recovery-500"] and "A4.1.tool-call-id" in taken
    assert h.starts() == 1


def test_panic_without_tool_call_headers_records_nothing():
    h = ProbeHarness()
    rid = _plain_start(h, "true", run=False)
    assert h.taken(lambda: h.run_handlers(panic=True)) == ["A2.5.before-effects", "A2.5.recovery-no-record"]
    assert h.status(rid) == 500 and h.state.chats == agent.EMPTY


# -- A2.7 a pending record dropped by a newer message --------------------------------------

def test_a_newer_message_drops_a_pending_record_and_the_run_publishes_into_nothing():
    h = ProbeHarness()
    old = h.start(m=1, call="a", run=False)
    assert "A2.7.drop-pending" in h.taken(lambda: h.start(m=2, call="b", run=False))
    taken = h.taken(h.run_handlers)
    assert taken.count("A2.7.publish-dropped") == 1
    assert h.status(old) == 200 and not h.current(m=1, call="a") and h.current(m=2, call="b")


def test_a_cancel_of_a_newer_message_drops_a_pending_record_too():
    h = ProbeHarness()
    h.start(m=1, call="a", run=False)
    assert h.taken(lambda: h.cancel(m=2, call="b"))[:2] == ["A2.7.drop-pending", "A3.never-received"]


def test_no_drop_without_a_pending_record():
    h = ProbeHarness()
    h.start(m=1, call="a")  # published: a done record
    taken = h.taken(lambda: h.start(m=2, call="b"))
    assert "A2.7.drop-pending" not in taken and "A2.7.publish-dropped" not in taken


def test_a_second_call_of_the_same_message_drops_nothing():
    """A2.7 is about a newer message: a second call of the message a pending record
    belongs to keeps it, and its run publishes into its own record. Message 1000: IDs
    parsed from two requests' headers are equal, not the same object."""
    h = ProbeHarness()
    h.start(m=1000, call="a", run=False)
    assert "A2.7.drop-pending" not in h.taken(lambda: h.start(m=1000, call="b", run=False))
    assert "A2.7.publish-dropped" not in h.taken(h.run_handlers)
    assert h.current(m=1000, call="a") and h.current(m=1000, call="b")


# -- A4.1 start with a tool call -------------------------------------------------------------

@pytest.mark.parametrize("body,probe,status", [
    (json_body({"command": "true"}), "A4.1.tool-call-id", 200),
    (b"{", "A4.1.failed-bad-body", 400),
    (json_body({"command": ""}), "A4.1.failed-no-command", 400),
    (json_body({"command": "true", "workdir": "/nowhere"}), "A4.1.failed-workdir", 500),
])
def test_start_with_a_tool_call_takes_one_branch(body, probe, status):
    h = ProbeHarness()
    rid = None

    def go():
        nonlocal rid
        rid = h.start(body=body)

    taken = h.taken(go)
    assert probe in taken and h.status(rid) == status
    assert not ({"A4.1.tool-call-id", "A4.1.own-id", "A4.1.failed-bad-body", "A4.1.failed-no-command",
                 "A4.1.failed-workdir"} - {probe}) & set(taken)


def test_start_without_a_tool_call_gets_the_agents_own_id():
    h = ProbeHarness()
    assert "A4.1.own-id" in h.taken(lambda: _plain_start(h, "true"))


# -- A4.3 the cancel's threshold -------------------------------------------------------------

@pytest.mark.parametrize("raw,clamped", [(-5, True), (0, False), (600_000, False), (2**62, True)])
def test_a_threshold_out_of_range_is_clamped(raw, clamped):
    h = ProbeHarness()
    h.start(body=SLEEP)
    taken = h.taken(lambda: h.cancel(body=f'{{"stop_if_run_age_below_ms": {raw}}}'.encode()))
    assert ("A4.3.threshold-clamped" in taken) == clamped


def test_threshold_zero_never_compares_the_run_age():
    h = ProbeHarness()
    h.start(body=SLEEP)
    taken = h.taken(lambda: h.cancel(threshold_ms=0))
    assert taken[-3:] == ["A4.2.leave-running", "A4.3.threshold-zero", "A3.answered-recorded"]
    h2 = ProbeHarness()
    h2.start(body=SLEEP)
    h2.advance(2 * MIN)
    assert "A4.3.threshold-zero" not in h2.taken(lambda: h2.cancel(threshold_ms=MIN))  # left by its age
    h3 = ProbeHarness()
    h3.start(body=SLEEP)
    h3.advance(MIN)
    assert "A4.3.threshold-zero" not in h3.taken(lambda: h3.cancel(threshold_ms=1))  # the least non-zero: compared


# -- A4.4 reaping ------------------------------------------------------------------------------

def test_each_process_at_a_list_takes_one_reaping_branch():
    h = ProbeHarness()
    h.start(m=1, call="old", command="true")  # exits at once, keyed
    _plain_start(h, "true")  # exits at once, no key
    h.advance(6 * MIN)
    h.start(m=1, call="kept", command="true")  # same message: "old" stays current
    h.advance(1)  # "kept" exits
    assert sorted(h.taken(h.list)[:-1]) == ["A4.4.exited-recently", "A4.4.kept-current", "A4.4.reaped-no-key"]
    h.start(m=2, call="new", body=SLEEP)  # a newer message: "old" and "kept" are no longer current
    h.advance(6 * MIN)
    taken = h.taken(h.list)
    assert sorted(taken[:-1]) == ["A4.4.reaped-not-current", "A4.4.reaped-not-current", "A4.4.running"]


def test_reaped_now_agrees_with_the_probe():
    h = ProbeHarness()
    h.start(m=1, call="a", command="true")
    h.start(m=2, call="b", command="true")
    h.advance(6 * MIN)
    (proc,) = [p for p in h.state.processes.values() if p.key.tool_call_id == "a"]
    assert agent.reaped_now(h.state, proc, h.now_ms)
    assert "A4.4.reaped-not-current" in h.taken(h.list)


# -- A4.5 agent restart ------------------------------------------------------------------------

def test_shutdown_loses_records_processes_requests_and_runs():
    h = ProbeHarness()
    h.start(m=1, call="run", body=SLEEP)  # a running process and a record
    h.start(m=1, call="done", command="true")
    h.advance(1)  # "done" exits
    h.output(tool_call_uuid(CHAT, 1, "run"), wait=True)  # a blocking output read
    h.start(m=1, call="pending", run=False)  # a pending run, and its creator waiting
    taken = h.taken(h.shutdown)
    assert sorted(set(taken)) == ["A4.5.exited-process-lost", "A4.5.process-killed", "A4.5.records-lost",
                                  "A4.5.request-broken", "A4.5.run-lost"]
    assert taken.count("A4.5.records-lost") == 1  # one chat
    assert taken.count("A4.5.request-broken") == 2  # the pending start's creator and the output read


def test_shutdown_of_an_idle_agent_takes_no_branch():
    h = ProbeHarness()
    assert h.taken(h.shutdown) == []


# -- A4.6 files --------------------------------------------------------------------------------

FILES = agent.FMap([("/src/a.go", "x = 1\n"), ("/src/b.go", "y = 1\ny = 1\n")])


def _edit(h: ProbeHarness, body: bytes, call: str) -> str:
    return h.request("POST", agent.EDIT_PATH, body=body, m=1, call=call)


def _one_file(path: str, *edits: tuple[str, str]) -> bytes:
    return json_body({"files": [{"path": path, "edits": [{"search": s, "replace": r} for s, r in edits]}]})


@pytest.mark.parametrize("body,probe,status", [
    (_one_file("/src/a.go", ("1", "2")), "A4.6.edit-applied", 200),
    (_one_file("/src/nope.go", ("1", "2")), "A4.6.edit-missing-file", 404),
    (b"[", "A4.6.edit-bad-body", 400),
    (json_body({"files": []}), "A4.6.edit-no-files", 400),
    (_one_file("", ("1", "2")), "A4.6.edit-no-path", 400),
    (_one_file("src/a.go", ("1", "2")), "A4.6.edit-not-absolute", 400),
    (_one_file("/src/a.go"), "A4.6.edit-no-edits", 400),
    (_one_file("/src", ("1", "2")), "A4.6.edit-directory", 400),
    (_one_file("/src/a.go", ("z", "2")), "A4.6.edit-not-found", 400),
    (_one_file("/src/b.go", ("y = 1", "y = 2")), "A4.6.edit-ambiguous", 400),
])
def test_an_edit_takes_one_branch(body, probe, status):
    h = ProbeHarness(files=FILES)
    rid = None

    def go():
        nonlocal rid
        rid = _edit(h, body, "e")

    taken = [p for p in h.taken(go) if p.startswith("A4.6.")]
    assert taken == [probe] and h.status(rid) == status


def test_an_edit_whose_later_file_fails_writes_none_and_says_so():
    h = ProbeHarness(files=FILES)
    good = {"path": "/src/a.go", "edits": [{"search": "1", "replace": "2"}]}
    body = json_body({"files": [good, {"path": "/src/nope.go", "edits": [{"search": "1", "replace": "2"}]}]})
    taken = [p for p in h.taken(lambda: _edit(h, body, "e")) if p.startswith("A4.6.")]
    assert taken == ["A4.6.edit-missing-file", "A4.6.edit-none-written"]
    assert h.edits() == 0 and h.state.files["/src/a.go"] == "x = 1\n"


def test_an_edit_naming_a_file_twice_takes_the_duplicate_branch():
    h = ProbeHarness(files=FILES)
    good = {"path": "/src/a.go", "edits": [{"search": "1", "replace": "2"}]}
    taken = [p for p in h.taken(lambda: _edit(h, json_body({"files": [good, good]}), "e")) if p.startswith("A4.6.")]
    assert taken == ["A4.6.edit-duplicate", "A4.6.edit-none-written"]
    assert h.edits() == 0


@pytest.mark.parametrize("query,probe,status", [
    ("path=%2Fsrc%2Fb.go", "A4.6.write-applied", 200),
    ("", "A4.6.write-no-path", 400),  # model/probes.py UNREACHABLE: no world sends this
])
def test_a_write_takes_one_branch(query, probe, status):
    h = ProbeHarness()
    rid = None

    def go():
        nonlocal rid
        rid = h.request("POST", agent.WRITE_PATH, query=query, body=b"hello\n", m=1, call="w")

    assert [p for p in h.taken(go) if p.startswith("A4.6.")] == [probe] and h.status(rid) == status


# -- A4.9 listing processes ----------------------------------------------------------------------

def test_a_list_with_a_chat_and_one_without():
    h = ProbeHarness()
    _plain_start(h, "sleep 600")
    assert h.taken(lambda: h.list(chat=CHAT))[-1] == "A4.9.one-chat"
    assert h.taken(lambda: h.list(chat=None))[-1] == "A4.9.every-chat"


def test_a_list_of_more_than_ten_is_capped():
    h = ProbeHarness()
    for i in range(10):
        _plain_start(h, f"sleep {600 + i}")
    assert "A4.9.capped" not in h.taken(lambda: h.list(chat=OTHER_CHAT))
    assert "A4.9.capped" not in h.taken(h.list)
    _plain_start(h, "sleep 700")
    assert h.taken(h.list)[-1] == "A4.9.capped"


# -- the shipped scenarios reach them ------------------------------------------------------------

AGENT_RULES = ("A2.", "A3", "A4.")


def test_shipped_scenarios_reach_every_agent_probe_not_listed_unreachable():
    from toolcall_sim.drivers import coverage as cov

    counts = cov.Coverage()
    cov.run_scenarios(counts)
    table = cov.coverage_table(counts)
    agent_rows = [r for r in table["probes"] if r["probe"].startswith(AGENT_RULES)]
    assert agent_rows
    missing = [r["probe"] for r in agent_rows if not r["reached"] and r["unreachable"] is None]
    assert missing == []
    # What is listed unreachable is so: no shipped scenario reaches it.
    assert [r["probe"] for r in agent_rows if r["reached"] and r["unreachable"]] == []


def test_unreachable_agent_probes_are_declared_with_a_reason():
    for pid, why in probes.UNREACHABLE.items():
        if pid.startswith(AGENT_RULES):
            assert pid in probes.PROBES and why.strip()


# -- the kill_fails tool call field (vocabulary) ---------------------------------------------------

def test_kill_fails_changes_the_run_and_the_builder_writes_it():
    """``kill_fails = true`` is used by the run: the interrupt's cancel meets a process the
    agent cannot kill (A4.2.kill-fails, A3.stop-failed) and it runs on; without it the same
    world kills the process. The Python builder writes the same field."""
    from toolcall_sim.api import Scenario, interrupt
    from toolcall_sim.world.run import run_scenario

    def world(kill_fails):
        return (Scenario("kill fails").until("5m").chat("chat-1")
                .execute("toolu_01", "make test", runs_for="1h", timeout="2h", kill_fails=kill_fails)
                .fault(interrupt("chat-1", at="1m")))

    assert world(True).to_dict()["turns"][0]["tool_calls"][0]["kill_fails"] is True
    assert "kill_fails" not in world(None).to_dict()["turns"][0]["tool_calls"][0]
    rows = {}
    for kill_fails in (True, None):
        result = run_scenario(world(kill_fails).scenario, "contract")
        (row,) = result.tool_call_rows()
        rows[kill_fails] = (row["processes_killed"], row["processes_running_at_end"],
                            {p: n for p, n in result.world.probes.items() if p in ("A3.stop-failed", "A4.2.kill-fails")})
    assert rows[True] == (0, 1, {"A3.stop-failed": 1, "A4.2.kill-fails": 1})
    assert rows[None] == (1, 0, {})
