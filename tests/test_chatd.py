"""chatd replicas, runners, tasks and the database, driven without simpy.

``World`` runs one or two replicas against a scripted stub agent (``FakeAgent``) through
``toolcall_sim.model.system.apply``, the one interpreter of effects every driver uses (the stub is
plugged in as ``WorldConfig.agent_impl``); the test world only chooses the actions:
messages are delivered at once in FIFO order, timers fire in (due, set order) order. Every
node has its own clock offset and the database clock another one, so any comparison of
clocks across nodes would show up as a wrong age. The stub agent, not model/agent/,
answers here so that each test controls exactly when a process exits and which answers
are held back or lost.

Ported from docs/contract.md C7 (each test names the Go test it mirrors): the
task, fence and retry-wrapper halves of items 5, 16, 25-31 and 36-41. The map of all 41
groups to their tests, and the task-level ports of 3, 28, 29, 32-35 and 38-41 that needed
file tools, a lost request or a planted comparison, are in tests/test_chatd_groups.py;
items 1-24 and the per-call halves of 25-35 are in tests/test_chattool.py. What the model
abstracts (the message part buffer, billing, LLM retries, panics) is listed there; for
each, the group's tool-call behaviour is still tested.
"""

from __future__ import annotations

import base64
import json
from dataclasses import replace
from functools import partial

import pytest

from collections.abc import MutableMapping

from toolcall_sim.model import chatd, chatd_db, chattool
from toolcall_sim.model import system as msys
from toolcall_sim.model.core import (
    EMPTY, FMap, Note, Publish, Reply, Request, Response, Send, SetTimer, TransportError, Truth,
    header_value, json_body,
)
from toolcall_sim.model.identity import (
    CHAT_ID_HEADER, RUN_AGE_MS_HEADER,
    parse_tool_call_headers, tool_call_uuid,
)

CHAT = "6f1c0b9e-2d4a-4c1e-9a57-0b8e2f6d3c11"
MIN = 60_000
HOUR = 60 * MIN

START = "/api/v0/processes/start"
EDIT = "/api/v0/edit-files"
WRITE = "/api/v0/write-file"


def execute(pid: str, command: str, timeout: str | None = None, background: bool = False) -> chattool.ToolCall:
    args: dict = {"command": command}
    if timeout is not None:
        args["timeout"] = timeout
    if background:
        args["run_in_background"] = True
    return chattool.ToolCall(pid, "execute", json.dumps(args))


FG_20M = execute("toolu_fg", "sleep 1200", "20m")
FG_2H = execute("toolu_fg", "sleep 7200", "2h")
BG = execute("toolu_bg", "serve", background=True)


# ---------------------------------------------------------------------------
# Scripted stub agent
# ---------------------------------------------------------------------------


class FakeAgent:
    """A scripted stub workspace agent (design B, Rev C, reduced to what chatd observes),
    plugged into toolcall_sim.model.system as ``WorldConfig.agent_impl``: the system delivers each
    request to ``on_request`` and interprets the replies like model/agent/ does.

    With tool call headers a start is recorded by tool call UUID: the process ID is the
    UUID, and a repeated start replays the recorded answer with the run age. Without
    headers it picks ``proc-1-<n>``. Blocking output reads are held until ``exit`` (or a
    kill). Cancels follow the stop rule. Edits and writes with headers are applied once
    and recorded (the edit's answer lists ``edit_diff``); a repeat replays the record, a
    cancel answers with it. Knobs: ``old`` ignores headers and has no cancel route (404);
    ``hold_starts`` / ``hold_files`` / ``hold_cancels`` keep those answers until
    ``release``; a request whose path contains one of ``lost`` never reaches the agent
    (it is still on the wire when the cancel arrives).
    """

    def __init__(self, old: bool = False):
        self.old = old
        self.hold_starts = False
        self.hold_files = False
        self.hold_cancels = False
        self.lost: set[str] = set()
        self.edit_diff = "-a\n+b"
        self.applied: list[str] = []  # ground truth: every edit or write applied, in order
        self.n = 0
        self.procs: dict[str, dict] = {}
        self.records: dict[str, dict] = {}  # uuid -> {"pid", "created_ms", "body"}
        self.canceled_markers: set[str] = set()
        self.waits: list[Request] = []  # held blocking output reads
        self.held: list[tuple[Request, Response]] = []  # answers kept back
        self.started: list[str] = []  # ground truth: every process start, in order

    # -- requests -------------------------------------------------------------
    def handle(self, req: Request, now: int) -> list[tuple[str, Response]]:
        if any(part in req.path for part in self.lost):
            return []
        if req.path in (EDIT, WRITE):
            return self._file(req, now)
        if req.path == START:
            return self._start(req, now)
        if req.path.endswith("/output"):
            pid = req.path.split("/")[4]
            proc = self.procs.get(pid)
            if proc is None:
                return [(req.src, self._json(req, 404, {"message": "not found"}))]
            if proc["running"] and "wait=true" in req.query:
                self.waits.append(req)
                return []
            return [(req.src, self._output(req, proc))]
        if "/tool-calls/" in req.path:
            return self._cancel(req, now)
        return [(req.src, self._json(req, 404, {"message": "no route"}))]

    def _json(self, req: Request, status: int, value, headers=()) -> Response:
        return Response(req.req_id, status, "application/json", json_body(value), tuple(headers))

    def _output(self, req: Request, proc: dict) -> Response:
        value = {"running": proc["running"], "exit_code": proc["exit_code"], "output": proc["output"]}
        return self._json(req, 200, value)

    def _start(self, req: Request, now: int) -> list[tuple[str, Response]]:
        hdr = None if self.old else parse_tool_call_headers(req.headers)
        body = req.json()
        if hdr is not None:
            uuid = tool_call_uuid(header_value(req.headers, CHAT_ID_HEADER), hdr.message_id, hdr.tool_call_id)
            if uuid in self.canceled_markers:
                return [(req.src, self._json(req, 409, {"code": "tool_call_canceled", "message": "canceled"}))]
            rec = self.records.get(uuid)
            if rec is not None:
                resp = self._json(req, 200, {"id": rec["pid"], "started": True},
                                  [(RUN_AGE_MS_HEADER, str(now - rec["created_ms"]))])
                return self._maybe_hold(req, resp, self.hold_starts)
            pid = uuid
            self.records[uuid] = {"pid": pid, "created_ms": now, "body": json_body({"id": pid, "started": True})}
            extra = [(RUN_AGE_MS_HEADER, "0")]
        else:
            self.n += 1
            pid = f"proc-1-{self.n}"
            extra = []
        self.procs[pid] = {"running": True, "exit_code": None, "output": "", "canceled": False,
                           "started_ms": now, "background": body["background"]}
        self.started.append(pid)
        resp = self._json(req, 200, {"id": pid, "started": True}, extra)
        return self._maybe_hold(req, resp, self.hold_starts)

    def _file(self, req: Request, now: int) -> list[tuple[str, Response]]:
        hdr = None if self.old else parse_tool_call_headers(req.headers)
        if req.path == EDIT:
            files = [{"path": f["path"], "diff": self.edit_diff} for f in req.json()["files"]]
            body = json_body({"files": files})
        else:
            body = json_body({})
        if hdr is None:
            self.applied.append(req.path)
            return self._maybe_hold(req, Response(req.req_id, 200, "application/json", body), self.hold_files)
        uuid = tool_call_uuid(header_value(req.headers, CHAT_ID_HEADER), hdr.message_id, hdr.tool_call_id)
        if uuid in self.canceled_markers:
            return [(req.src, self._json(req, 409, {"code": "tool_call_canceled", "message": "canceled"}))]
        rec = self.records.get(uuid)
        if rec is None:
            rec = self.records[uuid] = {"pid": None, "created_ms": now, "body": body}
            self.applied.append(req.path)
        resp = Response(req.req_id, 200, "application/json", rec["body"],
                        ((RUN_AGE_MS_HEADER, str(now - rec["created_ms"])),))
        return self._maybe_hold(req, resp, self.hold_files)

    def _maybe_hold(self, req, resp, hold: bool):
        if hold:
            self.held.append((req, resp))
            return []
        return [(req.src, resp)]

    def _cancel(self, req: Request, now: int) -> list[tuple[str, Response]]:
        if self.old:
            return [(req.src, Response(req.req_id, 404, "text/plain", b"404 page not found"))]
        uuid = req.path.split("/")[4]
        stop_ms = req.json()["stop_if_run_age_below_ms"]
        rec = self.records.get(uuid)
        out: list[tuple[str, Response]] = []
        if rec is None:
            self.canceled_markers.add(uuid)
            resp = self._json(req, 200, {"started": False})
        elif rec["pid"] is None:  # an edit or write: the recorded answer, never stopped
            run_age = now - rec["created_ms"]
            resp = self._json(req, 200, {
                "started": True, "status_code": 200, "content_type": "application/json",
                "body": base64.b64encode(rec["body"]).decode(),
            }, [(RUN_AGE_MS_HEADER, str(run_age))])
        else:
            proc = self.procs[rec["pid"]]
            run_age = now - rec["created_ms"]
            if proc["running"] and run_age < stop_ms:
                proc.update(running=False, canceled=True, exit_code=-1, output=proc["output"] + "partial")
                out += self._wake(rec["pid"])
            resp = self._json(req, 200, {
                "started": True, "status_code": 200, "content_type": "application/json",
                "body": base64.b64encode(rec["body"]).decode(),
                "process": {"running": proc["running"], "canceled": proc["canceled"], "output": proc["output"],
                            "exit_code": proc["exit_code"], "run_age_ms": run_age},
            }, [(RUN_AGE_MS_HEADER, str(run_age))])
        return self._maybe_hold(req, resp, self.hold_cancels) + out

    def _wake(self, pid: str) -> list[tuple[str, Response]]:
        out, keep = [], []
        for w in self.waits:
            if w.path.split("/")[4] == pid:
                out.append((w.src, self._output(w, self.procs[pid])))
            else:
                keep.append(w)
        self.waits = keep
        return out

    # -- the agent API toolcall_sim.model.system calls (WorldConfig.agent_impl) ---------------
    # The stub is its own state: toolcall_sim.model.system stores it as the agent's state and hands it
    # back to each handler, which answers through ``handle``.
    files = EMPTY  # the disk toolcall_sim.model.system keeps while the agent is down (none here)

    def boot(self, config, now_ms: int, files=EMPTY, incarnation: int = 1) -> "FakeAgent":
        return self

    def shutdown(self, state, now_ms: int):
        return self, []

    def on_request(self, state, req: Request, now_ms: int):
        return self, [Reply(dst, resp) for dst, resp in self.handle(req, now_ms)]

    def on_timer(self, state, name: str, now_ms: int):
        return self, []

    # -- test controls ----------------------------------------------------------
    def exit(self, pid: str, code: int = 0, output: str = "done") -> list[tuple[str, Response]]:
        self.procs[pid].update(running=False, exit_code=code, output=output)
        return self._wake(pid)

    def release(self) -> list[tuple[str, Response]]:
        out = [(req.src, resp) for req, resp in self.held]
        self.held = []
        return out


# ---------------------------------------------------------------------------
# The world: toolcall_sim.model.system with the stub agent
# ---------------------------------------------------------------------------

CLOCK_OFFSETS = {"replica-1": 1_000_000, "replica-2": 55_555_000}
DB_OFFSET_MS = 1_700_000_000_000
_RENAMED = {"result_kind": "kind", "at_t_ms": "t_ms", "at_node": "node", "at_clock_ms": "clock_ms"}
_RECORD_KEYS = ("t_ms", "node", "clock_ms", "kind", "note", "truth")


class _Replicas(MutableMapping):
    """``w.reps``: the live replicas of the system (a crashed one is absent); assigning
    replaces a replica's state in the system, as a test that drives a handler directly does."""

    def __init__(self, world: "World"):
        self.w = world

    def __getitem__(self, name):
        rep = self.w.s.replicas.get(name)
        if rep is None:
            raise KeyError(name)
        return rep

    def __setitem__(self, name, rep):
        self.w.s = replace(self.w.s, replicas=self.w.s.replicas.set(name, rep))

    def __delitem__(self, name):
        raise TypeError("crash a replica with World.crash")

    def __iter__(self):
        return iter([n for n, rep in self.w.s.replicas.items() if rep is not None])

    def __len__(self):
        return len(list(iter(self)))


class _Timers:
    """``w.timers``: the armed timers as ``(node, name)`` keys; ``pop`` disarms one (a test
    standing for a stuck runner loop)."""

    def __init__(self, world: "World"):
        self.w = world

    def __iter__(self):
        return iter(list(self.w.s.timers))

    def __contains__(self, key):
        return key in self.w.s.timers

    def pop(self, key, *default):
        timer = self.w.s.timers.get(key)
        if timer is None:
            if default:
                return default[0]
            raise KeyError(key)
        self.w.s = replace(self.w.s, timers=self.w.s.timers.remove(key))
        return timer


class World:
    """Replicas + database + the stub agent, run by ``toolcall_sim.model.system.apply``.

    The system interprets every effect (one interpreter for the whole project); this class
    only chooses the actions, the way the explorer does: every message in flight is
    delivered at once, oldest first (``settle``), and timers fire in (due, arming) order
    (``run``). Every node has its own clock offset and the database clock another one, so
    any comparison of clocks across nodes would show up as a wrong age. ``dial``: 200 (the
    system's answer), None (never answered: the dial is lost), "transport" (a
    TransportError) or another status (no agent / no workspace), both answered in the
    agent's place. ``deaf`` replicas lose every pubsub event. ``log`` lists the effects that
    tests read, rebuilt from the trace: ``(t, node, Send | Publish | Note | Truth)``."""

    def __init__(self, rules="contract", replicas=("replica-1",), agent: FakeAgent | None = None):
        self.agent = agent or FakeAgent()
        clocks = {name: msys.ClockSpec(offset_ms=off) for name, off in CLOCK_OFFSETS.items()}
        clocks[msys.DB] = msys.ClockSpec(offset_ms=DB_OFFSET_MS)
        config = msys.WorldConfig(replicas=tuple(replicas), chatd_rules=(chatd.VARIANTS[rules] if isinstance(rules, str) else rules),
                                  clocks=FMap(clocks), agent_impl=self.agent)
        self.log: list[tuple[int, str, object]] = []
        self.dial = 200
        self.deaf: set[str] = set()
        self.s = msys.System(config=config)  # replaced at once by the initial step
        step = msys.initial(config)
        self.s = step.system
        self._log(step, msys.WORLD, frozenset())
        self.reps = _Replicas(self)
        self.timers = _Timers(self)

    # state
    @property
    def t(self) -> int:
        return self.s.now_ms

    @property
    def db(self):
        return self.s.db

    @db.setter
    def db(self, db):
        self.s = replace(self.s, db=db)

    def clock(self, node: str) -> int:
        return self.s.config.clock(node).read(self.t)

    def db_now(self) -> int:
        return self.clock(msys.DB)

    # steps
    def _log(self, step: msys.Step, node: str, before: frozenset):
        """Append the step's effects: sends with their requests, publishes once each (by
        the node that handled the step), and notes and truths from their records."""
        in_flight = {env.seq: env for env in step.system.in_flight}
        for rec in step.records:
            if rec["kind"] == "send":
                env = in_flight[rec["seq"]]
                self.log.append((rec["t_ms"], rec["node"], Send(env.dst, env.payload)))
            elif rec["kind"] in ("note", "truth"):
                fields = {_RENAMED.get(k, k): v for k, v in rec.items() if k not in _RECORD_KEYS}
                cls = Note if rec["kind"] == "note" else Truth
                self.log.append((rec["t_ms"], rec["node"], cls(rec[rec["kind"]], tuple(sorted(fields.items())))))
        published = []
        for env in step.system.in_flight:
            if env.seq not in before and isinstance(env.payload, Publish) and \
                    not any(p is env.payload for p in published):
                published.append(env.payload)
        self.log += [(step.system.now_ms, node, p) for p in published]
        self.s = step.system

    def _apply(self, action, node: str):
        before = frozenset(env.seq for env in self.s.in_flight)
        self._log(msys.apply(self.s, action), node, before)

    def _by_hand(self, node: str, act):
        """A step the world has no action for (a user's request, a test driving a handler):
        ``act(builder)`` runs on the system's own builder, so its effects are interpreted
        by toolcall_sim.model.system like any other."""
        before = frozenset(env.seq for env in self.s.in_flight)
        b = msys._Builder(self.s, None)
        act(b)
        b.flush_publishes()
        self._log(b.finish(), node, before)  # (the builder's timer edits go into the table there)

    def _dial_answer(self, req: Request):
        if self.dial == "transport":
            return TransportError(req.req_id, "no route to host")
        return Response(req.req_id, self.dial)

    def settle(self):
        while self.s.in_flight:
            env = min(self.s.in_flight, key=lambda e: e.seq)
            dial = env.dst == msys.AGENT and env.route == "dial" and self.dial != 200
            if dial or (isinstance(env.payload, Publish) and env.dst in self.deaf):
                self._apply(msys.Drop(self.t, env.seq, env.what), env.dst)
                if dial and self.dial is not None:
                    self.deliver([(env.src, self._dial_answer(env.payload))], settle=False)
            else:
                self._apply(msys.Deliver(self.t, env.seq, env.what), env.dst)

    def run(self, until: int):
        self.settle()
        while True:
            due = sorted((t.due_ms, t.seq, k) for k, t in self.s.timers.items() if t.due_ms <= until)
            if not due:
                break
            d, _, (node, name) = due[0]
            self._apply(msys.Fire(max(self.t, d), node, name), node)
            self.settle()
        if until > self.t:
            self._apply(msys.Tick(until), msys.WORLD)

    def advance(self, ms: int):
        self.run(self.t + ms)

    # nodes
    def boot(self, name: str, rules=None):
        if rules is not None:
            config = self.s.config
            rules = (chatd.VARIANTS[rules] if isinstance(rules, str) else rules)
            self.s = replace(self.s, config=replace(config, replica_rules=config.replica_rules.set(name, rules)))
        self._by_hand(name, lambda b: msys._boot_replica(b, name))

    def crash(self, name: str):
        self._by_hand(name, lambda b: msys._crash_replica(b, name))

    def pause_heartbeats(self, name: str, paused: bool = True):
        self.reps[name] = chatd.replica_pause_heartbeats(self.reps[name], paused)

    def absorb(self, node: str, effects):
        """Effects a test got by calling a handler itself, interpreted by the system."""
        self._by_hand(node, lambda b: b.absorb(node, effects))

    def step(self, name: str, fn, *args):
        self._by_hand(name, lambda b: b.replica_step(name, fn, *args))

    def user(self, fn, *args):
        self._by_hand(msys.DB, lambda b: b.db_step(fn, *args))
        self.settle()

    def deliver(self, answers, settle: bool = True):
        """Put the stub agent's answers (from ``exit``, ``release``) on the wire."""
        def put(b):
            for dst, resp in answers:
                b.reply(msys.AGENT, dst, resp)
        self._by_hand(msys.AGENT, put)
        if settle:
            self.settle()

    # queries
    def chat(self) -> chatd.Chat:
        return self.db.chats[CHAT]

    def effects(self, cls, node=None):
        return [(t, n, e) for t, n, e in self.log if isinstance(e, cls) and (node is None or n == node)]

    def requests(self, path_part: str = "", node=None, method=None):
        return [(t, n, e.request) for t, n, e in self.effects(Send, node)
                if path_part in e.request.path and (method is None or e.request.method == method)]

    def mark(self) -> int:
        """A point in the log; ``dials(after=mark)`` counts only what came later."""
        return len(self.log)

    def dials(self, node=None, after=0):
        return [(t, n, e.request) for t, n, e in self.log[after:]
                if isinstance(e, Send) and e.request.method == "DIAL" and (node is None or n == node)]

    def starts(self, node=None):
        return self.requests(START, node)

    def cancels(self, node=None):
        return self.requests("/tool-calls/", node)

    def committed(self):
        return [e for _, _, e in self.effects(Truth) if e.kind == "result_committed"]

    def notes(self, kind, node=None):
        return [e for _, _, e in self.effects(Note, node) if e.kind == kind]


def new_world(turns, rules="contract", replicas=("replica-1",), agent=None, gen_time_ms=2_000,
              context_limit_tokens=0) -> World:
    """A world with one idle chat scripted with ``turns``; ``context_limit_tokens`` is its
    model's context window (0: unknown)."""
    w = World(rules, replicas, agent)
    w.user(partial(chatd.db_new_chat, context_limit_tokens=context_limit_tokens), CHAT, turns, gen_time_ms)
    return w


def start_turn(w: World, until_batch: bool = True):
    """User message at t=0; run until the batch's calls have been begun (gen time 2 s)."""
    w.user(chatd.db_send_user_message, CHAT, "go")
    if until_batch:
        w.run(w.t + 2_000)


def uuid_of(w: World, provider_id: str) -> str:
    msg = chatd_db.last_assistant(w.chat())
    return tool_call_uuid(CHAT, msg.id, provider_id)


# ---------------------------------------------------------------------------
# Done-when (a): a task retry after 15 minutes
# ---------------------------------------------------------------------------


def test_today_task_retry_starts_a_second_process_without_headers():
    """today: the 15-minute attempt timeout retries the batch, and the agent (no tool call
    headers) starts a second process for the same tool call."""
    w = new_world([(FG_20M,)], rules="today")
    start_turn(w)
    assert len(w.starts()) == 1 and w.agent.started == ["proc-1-1"]
    w.run(2_000 + 15 * MIN + 100)
    starts = w.starts()
    assert len(starts) == 2
    for _, _, req in starts:
        assert parse_tool_call_headers(req.headers) is None
        assert header_value(req.headers, CHAT_ID_HEADER) == CHAT
    assert w.agent.started == ["proc-1-1", "proc-1-2"]
    assert w.agent.procs["proc-1-1"]["running"]  # the orphan keeps running
    assert [n.get("why") for n in w.notes("task_retry")] == ["timeout"]
    assert w.committed() == []


def test_today_incident_36_starts_in_9_hours():
    """today: one new process per 15-minute attempt, no retry limit (docs/contract.md C6)."""
    w = new_world([(FG_20M,)], rules="today")
    start_turn(w)
    w.run(9 * HOUR)
    assert len(w.agent.started) == 36
    assert len(set(w.agent.started)) == 36
    backoffs = [n.get("backoff_ms") for n in w.notes("task_retry")]
    assert backoffs[:7] == [100, 200, 400, 800, 1600, 3200, 5000] and set(backoffs[6:]) == {5000}


def test_contract_task_retry_replays_start_and_waits_only_the_rest():
    """[7.5] contract: the retry sends the same start with the same tool call headers and a
    larger age, gets the recorded start back and waits only for what is left of the
    timeout (TestExecuteLocalTools_ExecuteTaskRetry)."""
    w = new_world([(FG_20M,)])
    start_turn(w)
    t_first = w.starts()[0][0]
    w.run(t_first + 15 * MIN + 100)
    (t1, _, r1), (t2, _, r2) = w.starts()
    h1, h2 = parse_tool_call_headers(r1.headers), parse_tool_call_headers(r2.headers)
    assert (h1.message_id, h1.tool_call_id) == (h2.message_id, h2.tool_call_id)
    assert h1.message_id == chatd_db.last_assistant(w.chat()).id and h1.tool_call_id == "toolu_fg"
    assert r1.body == r2.body
    assert h2.age_ms - h1.age_ms == t2 - t1 == 15 * MIN + 100
    uuid = uuid_of(w, "toolu_fg")
    assert w.agent.started == [uuid]  # one process, ID = tool call UUID
    attach = [n for n in w.notes("chattool_attach")]
    assert [n.get("run_age_ms") for n in attach] == [0, 15 * MIN + 100]
    assert attach[1].get("remaining_ms") == 5 * MIN - 100
    # The process exits 3 minutes later: the real result of the first attempt's process.
    w.run(t2 + 3 * MIN)
    w.deliver(w.agent.exit(uuid, 0, "built"))
    (res,) = w.committed()
    assert res.get("kind") == "completed" and res.get("attempt") == 2 and res.get("uuid") == uuid
    assert chatd_db.unresolved_calls(w.chat())[1] == ()
    tool_msg = [m for m in w.chat().messages if m.role == "tool"][0]
    assert tool_msg.result.wall_duration_ms >= 15 * MIN + 100
    assert json.loads(tool_msg.result.content)["output"] == "built"


def test_contract_retry_timeout_deadline_is_the_first_start_plus_timeout():
    """contract: the timeout is not restarted by a retry: with no exit the timed-out result
    is committed 20 minutes after the first start, not 15 + 20."""
    w = new_world([(FG_20M,)])
    start_turn(w)
    t_first = w.starts()[0][0]
    w.run(t_first + 25 * MIN)
    (res,) = w.committed()
    assert res.get("kind") == "timed_out" and res.get("process_id") == res.get("uuid")  # background_process_id
    assert res.get("at_db_ms") - DB_OFFSET_MS == t_first + 20 * MIN
    assert len(w.agent.started) == 1


# ---------------------------------------------------------------------------
# Done-when (b): ownership change
# ---------------------------------------------------------------------------


def _take_over(rules: str):
    """replica-1 owns the chat and runs the batch; its heartbeats stop; replica-2 acquires."""
    w = new_world([(FG_20M,)], rules=rules, replicas=("replica-1", "replica-2"))
    start_turn(w)
    assert w.chat().worker_id == w.reps["replica-1"].worker_id
    w.pause_heartbeats("replica-1")
    w.run(w.t + 70_000)
    return w


@pytest.mark.parametrize("rules", ["today", "contract"])
def test_ownership_change_new_owner_sends_the_same_request(rules):
    """An ownership change: the old runner drops its task and sends nothing more (C4); the
    new owner sends the start again: today a second process, under the contract the same
    identity with a larger age and a replayed answer (docs/contract.md C2.3, C4.4)."""
    w = _take_over(rules)
    assert w.chat().worker_id == w.reps["replica-2"].worker_id
    dropped = w.notes("runner_dropped", "replica-1")
    assert [n.get("reason") for n in dropped] == ["owner_changed"]
    starts = w.starts()
    assert [n for _, n, _ in starts] == ["replica-1", "replica-2"]
    t_drop = next(t for t, n, e in w.effects(Note, "replica-1") if e.kind == "runner_dropped")
    assert not [x for x in w.requests(node="replica-1") if x[0] > t_drop]
    assert not [x for x in w.cancels()]  # never a cancel because of an ownership change
    if rules == "today":
        assert w.agent.started == ["proc-1-1", "proc-1-2"]
        return
    (t1, _, r1), (t2, _, r2) = starts
    h1, h2 = parse_tool_call_headers(r1.headers), parse_tool_call_headers(r2.headers)
    assert (h1.message_id, h1.tool_call_id) == (h2.message_id, h2.tool_call_id)
    assert h2.age_ms - h1.age_ms == t2 - t1 > 30_000
    assert len(w.agent.started) == 1
    w.deliver(w.agent.exit(w.agent.started[0], 0))
    (res,) = w.committed()
    assert res.get("replica") == "replica-2" and res.get("kind") == "completed"


def test_replica_crash_takeover_after_stale_heartbeat_and_fresh_worker_id():
    """A crashed replica sends nothing; another takes over 30-60 s after the last heartbeat;
    a restarted replica has a new worker_id and owns nothing (2.2)."""
    w = new_world([(FG_20M,)], replicas=("replica-1", "replica-2"))
    start_turn(w)
    old_worker = w.reps["replica-1"].worker_id
    w.crash("replica-1")
    t_crash = w.t
    w.boot("replica-1")
    assert w.reps["replica-1"].worker_id != old_worker
    w.run(t_crash + 61_000)
    acquired = [(t, n) for t, n, e in w.effects(Note) if e.kind == "acquired" and t > t_crash]
    assert len(acquired) == 1
    t_acq, node = acquired[0]
    assert 30_000 <= t_acq - t_crash <= 60_000
    assert w.chat().runner_id.startswith(w.reps[node].worker_id)
    assert len(w.agent.started) == 1


# ---------------------------------------------------------------------------
# Done-when (c): interrupt
# ---------------------------------------------------------------------------


def test_contract_interrupt_cancels_with_stop_ages_and_commits_cancel_results():
    """[7.29] contract: one dial, a cancel per execute call with stop age = the foreground timeout
    and 0 for background, sent in parallel; the cancel answers are committed and the chat
    goes back to waiting (TestInterruptTask_CancelsExecuteCallsInParallel, C5)."""
    wait = chattool.ToolCall("toolu_wait", "wait_agent", "{}")
    w = new_world([(FG_2H, BG, wait)])
    start_turn(w)
    # The background start answered at once, wait_agent finished; the batch waits for FG.
    w.advance(5_000)
    w.agent.hold_cancels = True
    m = w.mark()
    w.user(chatd.db_interrupt, CHAT)
    assert len(w.dials(after=m)) == 1
    cancels = w.cancels()
    assert len(cancels) == 2 and not w.committed()  # both in flight at once
    stops = {parse_tool_call_headers(r.headers).tool_call_id: r.json()["stop_if_run_age_below_ms"]
             for _, _, r in cancels}
    assert stops == {"toolu_fg": 2 * HOUR, "toolu_bg": 0}
    for _, _, r in cancels:
        assert r.path == f"/api/v0/tool-calls/{uuid_of(w, parse_tool_call_headers(r.headers).tool_call_id)}/cancel"
    w.deliver(w.agent.release())
    kinds = {c.get("provider_id"): c.get("kind") for c in w.committed()}
    assert kinds == {"toolu_fg": "canceled", "toolu_bg": "background_started", "toolu_wait": "interrupted_generic"}
    assert all(c.get("task") == "interrupt" for c in w.committed())
    assert w.chat().status == chatd.WAITING
    assert not w.agent.procs[uuid_of(w, "toolu_fg")]["running"]
    assert w.agent.procs[uuid_of(w, "toolu_bg")]["running"]  # US6


def test_today_interrupt_commits_generic_and_sends_nothing():
    """today: the interrupt commits the generic result for every unresolved call, with no
    dial and no cancel; the process keeps running."""
    w = new_world([(FG_2H, BG)], rules="today")
    start_turn(w)
    m = w.mark()
    w.user(chatd.db_interrupt, CHAT)
    assert w.dials(after=m) == [] and w.cancels() == []
    assert [c.get("kind") for c in w.committed()] == ["interrupted_generic"] * 2
    assert all(c.get("is_error") for c in w.committed())
    assert w.chat().status == chatd.WAITING
    assert all(p["running"] for p in w.agent.procs.values())


# ---------------------------------------------------------------------------
# docs/contract.md C7: interrupt task
# ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "case, dial, old, expect",
    [
        ("foreground canceled", 200, False, {"toolu_fg": "canceled", "toolu_bg": "background_started"}),
        ("old agent 404", 200, True, {"toolu_fg": "interrupted_generic", "toolu_bg": "interrupted_generic"}),
        ("no connection", "transport", False, {"toolu_fg": "unknown", "toolu_bg": "unknown"}),
        ("no agent", 404, False, {"toolu_fg": "interrupted_generic", "toolu_bg": "interrupted_generic"}),
    ],
)
def test_interrupt_task_execute_results(case, dial, old, expect):
    """[7.25] TestInterruptTask_ExecuteResults: after an ownership change (no buffer episode) the
    interrupt maps each answer or dial failure; exactly one dial."""
    w = new_world([(FG_2H, BG)], replicas=("replica-1", "replica-2"), agent=FakeAgent(old=old))
    start_turn(w)
    w.pause_heartbeats("replica-1")
    w.run(w.t + 70_000)
    assert w.chat().worker_id == w.reps["replica-2"].worker_id
    w.dial = dial
    m = w.mark()
    w.user(chatd.db_interrupt, CHAT)
    assert len(w.dials(after=m)) == 1
    got = {c.get("provider_id"): c.get("kind") for c in w.committed()}
    assert got == expect, case
    if case == "no connection":
        for c in w.committed():
            assert c.get("uuid") in next(m.result.content for m in w.chat().messages
                                         if m.role == "tool" and m.provider_id == c.get("provider_id"))
    assert w.chat().status == chatd.WAITING


@pytest.mark.parametrize(
    "calls",
    [
        (chattool.ToolCall("toolu_x", "execute", "{not json"),),
        (execute("toolu_x", "sleep 1", "soon"),),
        (chattool.ToolCall("toolu_x", "wait_agent", "{}"),),
        (execute("toolu_x", "sleep 1", "1m"), execute("toolu_x", "sleep 1", "2m")),
    ],
    ids=["unparsable", "invalid-timeout", "other-tool", "duplicate-id-different-stops"],
)
def test_interrupt_task_execute_calls_without_cancel(calls):
    """[7.26] TestInterruptTask_ExecuteCallsWithoutCancel: calls that get no cancel keep the generic
    result and the interrupt does not dial."""
    w = new_world([calls])
    w.dial = None  # the generation batch hangs on its dial, so the calls stay unresolved
    start_turn(w)
    assert w.committed() == []
    m = w.mark()
    w.user(chatd.db_interrupt, CHAT)
    assert w.dials(after=m) == [] and w.cancels() == []
    assert [c.get("kind") for c in w.committed()] == ["interrupted_generic"] * len(calls)
    assert w.chat().status == chatd.WAITING


def test_interrupt_task_duplicate_ids_cancel_once():
    """[7.27] TestInterruptTask_DuplicateIDsCancelOnce: two foreground calls sharing a provider ID
    get one cancel, and both get its result."""
    a = execute("toolu_dup", "sleep 100", "2h")
    w = new_world([(a, a)])
    start_turn(w)
    assert len(w.starts()) == 2 and len(w.agent.started) == 1  # the second start replays
    w.advance(2_000)
    w.user(chatd.db_interrupt, CHAT)
    assert len(w.cancels()) == 1
    tool_msgs = [m for m in w.chat().messages if m.role == "tool"]
    assert len(tool_msgs) == 2 and tool_msgs[0].result == tool_msgs[1].result
    assert tool_msgs[0].result.kind == "canceled"
    assert "canceled by the user after 2s." in tool_msgs[0].result.content


def test_interrupt_task_cancel_answer_is_the_only_result():
    """[7.28] TestInterruptTask_CancelIgnoresEpisodeBuffer (observable half): the canceled
    generation's late start answer is dropped; the cancel answer is the only commit."""
    w = new_world([(FG_2H,)])
    w.agent.hold_starts = True
    start_turn(w)
    assert len(w.starts()) == 1 and w.agent.held
    late = w.agent.release()
    w.user(chatd.db_interrupt, CHAT)
    assert [c.get("kind") for c in w.committed()] == ["canceled"]
    w.deliver(late)  # the aborted call's answer arrives after the interrupt
    assert len(w.notes("late_answer")) == 1
    assert len(w.committed()) == 1 and len(w.starts()) == 1


def test_interrupt_task_cancel_bound_yields_unknown():
    """[7.30] TestInterruptTask_CancelBoundYieldsUnknown: a cancel never answered ends after 1 min
    with unknown "did not answer within 1m0s" naming the tool call UUID."""
    w = new_world([(FG_2H,)])
    start_turn(w)
    w.agent.hold_cancels = True
    t_int = w.t
    w.user(chatd.db_interrupt, CHAT)
    w.run(t_int + MIN - 1)
    assert w.committed() == []
    w.run(t_int + MIN)
    (res,) = w.committed()
    assert res.get("kind") == "unknown"
    content = [m for m in w.chat().messages if m.role == "tool"][0].result.content
    assert "did not answer within 1m0s" in content and uuid_of(w, "toolu_fg") in content
    assert w.chat().status == chatd.WAITING


def test_interrupt_task_parent_canceled_during_cancel_commits_nothing():
    """[7.31] TestInterruptTask_ParentCanceledDuringCancelCommitsNothing: the interrupt task's
    context ends mid-cancel (ownership moves): nothing is committed, the chat stays
    interrupting, and the new owner sends the cancel again."""
    w = new_world([(FG_2H,)], replicas=("replica-1", "replica-2"))
    start_turn(w)
    w.pause_heartbeats("replica-1")
    w.advance(20_000)
    w.agent.hold_cancels = True
    w.user(chatd.db_interrupt, CHAT)
    assert [n for _, n, _ in w.cancels()] == ["replica-1"]
    w.run(w.t + 40_000)  # replica-2 acquires while the cancel is unanswered
    assert w.chat().worker_id == w.reps["replica-2"].worker_id
    assert [n for _, n, _ in w.cancels()] == ["replica-1", "replica-2"]
    canceled = [e for _, n, e in w.effects(Note, "replica-1") if e.kind == "task_canceled"]
    assert canceled and canceled[-1].get("kind") == "interrupt"
    assert w.committed() == [] and w.chat().status == chatd.INTERRUPTING
    w.deliver(w.agent.release())  # replica-1's answer is late; replica-2's is committed
    assert [(c.get("replica"), c.get("kind")) for c in w.committed()] == [("replica-2", "canceled")]
    assert w.chat().status == chatd.WAITING


def test_interrupt_task_finish_interruption_only():
    """[7.41] TestInterruptTask_FinishInterruptionOnly: an interrupt while the model generates (no
    committed tool calls): no dial, no result, FinishInterruption -> waiting."""
    w = new_world([(FG_2H,)], gen_time_ms=10_000)
    start_turn(w, until_batch=False)
    w.advance(3_000)
    w.user(chatd.db_interrupt, CHAT)
    assert w.dials() == [] and w.committed() == []
    assert w.chat().status == chatd.WAITING
    assert [m.role for m in w.chat().messages] == ["user"]
    w.advance(20_000)  # the canceled generation never commits its assistant message
    assert [m.role for m in w.chat().messages] == ["user"]


def test_interrupt_with_queued_message_promotes_it():
    """SendMessage(interrupt) lands in I1; FinishInterruption promotes the queued message
    and the next turn starts (3.1)."""
    w = new_world([(FG_2H,)])
    start_turn(w)
    w.db, eff = chatd.db_send_user_message(w.db, CHAT, "stop that", w.db_now(), interrupt=True)
    assert w.db.chats[CHAT].status == chatd.INTERRUPTING and w.db.chats[CHAT].queue == ("stop that",)
    w.absorb("db", eff)
    w.settle()
    assert [c.get("kind") for c in w.committed()] == ["canceled"]
    assert w.chat().status == chatd.RUNNING and w.chat().queue == ()
    assert [m.role for m in w.chat().messages] == ["user", "assistant", "tool", "user"]
    assert w.chat().messages[-1].text == "stop that"


# ---------------------------------------------------------------------------
# Section 7: fences and ownership
# ---------------------------------------------------------------------------


def test_interrupt_task_stale_fence_exits():
    """[7.36] TestInterruptTask_StaleFenceExits: another worker took the chat after the interrupt;
    the old interrupt task's commit is fenced out: expected exit, nothing changes, no
    watch event, no retry."""
    w = new_world([(FG_2H,)], replicas=("replica-1", "replica-2"))
    start_turn(w)
    w.pause_heartbeats("replica-1")
    w.deaf.add("replica-1")
    w.agent.hold_cancels = True
    w.user(chatd.db_interrupt, CHAT)  # replica-1 is deaf: its 15 s sync starts the interrupt
    w.run(15_000)
    assert [n for _, n, _ in w.cancels()] == ["replica-1"]
    # replica-2 takes over (heartbeat 30 s stale, at its 60 s poll); replica-1's runner loop
    # is stuck (no sync), so it has not noticed when its cancel is answered.
    w.timers.pop(("replica-1", chatd.SYNC_PREFIX + CHAT))
    w.agent.hold_cancels = False
    w.run(60_000)
    assert len(w.notes("acquired", "replica-2")) == 1
    # replica-2 sent its cancel, committed, and abandoned the finished chat.
    assert [(c.get("replica"), c.get("kind")) for c in w.committed()] == [("replica-2", "canceled")]
    assert w.chat().status == chatd.WAITING
    before = w.db
    r1_answer = [(req.src, resp) for req, resp in w.agent.held if req.src == "replica-1"]
    n_pub = len(w.effects(Publish, "replica-1"))
    w.deliver(r1_answer)
    fenced = w.notes("fenced_out", "replica-1")
    assert [n.get("op") for n in fenced] == ["finish_interruption"] and fenced[0].get("outcome") == "fenced:owner"
    assert w.db == before and len(w.effects(Publish, "replica-1")) == n_pub
    assert [n.get("why") for n in w.notes("task_exit", "replica-1")] == ["exit:fenced:owner"]
    assert not w.notes("task_retry", "replica-1")


def test_abandon_after_turn_clears_owner():
    """[7.37] TestAbandonTask_AbandonOnly: a finished turn (waiting) is abandoned by its
    runner: owner columns and heartbeat cleared, runner dropped; the next message is
    acquired again through chat:ownership."""
    w = new_world([(FG_20M,)])
    start_turn(w)
    w.deliver(w.agent.exit(w.agent.started[0], 0))
    w.advance(3_000)
    chat = w.chat()
    assert chat.status == chatd.WAITING and chat.worker_id is None and chat.runner_id is None
    assert len(w.db.heartbeats) == 0 and len(w.reps["replica-1"].runners) == 0
    assert [m.role for m in chat.messages] == ["user", "assistant", "tool"]
    w.user(chatd.db_send_user_message, CHAT, "again")
    assert w.chat().worker_id == w.reps["replica-1"].worker_id
    assert w.chat().status == chatd.RUNNING


def _replica_with_abandon_task(chat_fields: dict):
    """A replica whose runner has an abandon task waiting for its backoff, and a DB chat."""
    rep, _ = chatd.replica_boot("replica-1", 0, "contract", 1)
    runner_id = f"{rep.worker_id}/r1"
    fence = chatd.TaskFence(rep.worker_id, runner_id, chatd.WAITING, 5)
    task = chatd.Task(f"{rep.worker_id}/t2", "abandon", CHAT, fence, attempts=1)
    runner = chatd.Runner(CHAT, runner_id, 7, 5, chatd.WAITING, task)
    rep = replace(rep, next_seq=3, runners=FMap({CHAT: runner}))
    chat = chatd.Chat(CHAT, **{"status": chatd.WAITING, "worker_id": rep.worker_id, "runner_id": runner_id,
                               "snapshot_version": 7, "history_version": 5, **chat_fields})
    return rep, chatd.Db(chats=FMap({CHAT: chat}))


def test_abandon_task_ownership_mismatch_requests_cleanup():
    """[7.37] TestAbandonTask_OwnershipMismatchRequestsCleanup: another owner -> no write, the
    runner is dropped."""
    rep, db = _replica_with_abandon_task({"worker_id": "other-w1", "runner_id": "other-w1/r9"})
    rep2, db2, eff = chatd.replica_on_timer(rep, db, f"{rep.worker_id}/t2/backoff", 0, 0)
    assert db2 == db and CHAT not in rep2.runners
    assert any(isinstance(e, Note) and e.kind == "runner_dropped" for e in eff)


def test_abandon_task_stale_status_fence_exits():
    """[7.37] TestAbandonTask_StaleStatusFenceExits: the status moved on -> expected exit, no
    write, no retry; the runner stays (its next event starts the right task)."""
    rep, db = _replica_with_abandon_task({"status": chatd.RUNNING})
    rep2, db2, eff = chatd.replica_on_timer(rep, db, f"{rep.worker_id}/t2/backoff", 0, 0)
    assert db2 == db and rep2.runners[CHAT].task is None
    assert [e.get("why") for e in eff if isinstance(e, Note) and e.kind == "task_exit"] == ["exit:fenced:status"]
    assert not any(isinstance(e, SetTimer) and e.name.endswith("/backoff") for e in eff)


def test_generation_stale_runner_write_after_reacquire_exits():
    """[7.38] TestGenerationTask_RecordRetryStateStaleFenceExits (via beginGenerationAttempt): a
    deaf old runner's retry after a re-acquire is fenced out and never changes the chat."""
    w = new_world([(FG_20M,)], replicas=("replica-1", "replica-2"))
    start_turn(w)
    w.deaf.add("replica-1")
    w.pause_heartbeats("replica-1")
    # replica-1's attempt times out at 15 min; before that replica-2 took the chat and
    # replica-1 did not hear it. Make replica-1's sync blind too by keeping it busy: we
    # cancel its sync timer (a stuck runner loop).
    w.timers.pop(("replica-1", chatd.SYNC_PREFIX + CHAT))
    w.run(w.t + 15 * MIN + 1_000)
    assert w.chat().worker_id == w.reps["replica-2"].worker_id
    fenced = w.notes("fenced_out", "replica-1")
    assert fenced and fenced[0].get("op") == "load_generation" and fenced[0].get("outcome") == "fenced:owner"
    assert [n.get("why") for n in w.notes("task_exit", "replica-1")] == ["exit:fenced:owner"]
    assert len(w.notes("task_retry", "replica-1")) == 1  # the timeout retried once, then exit


def test_stale_owner_commit_is_fenced_and_not_retried():
    """[7.39] TestRetryWrapper_ExpectedExitsDoNotRetry: a deaf old owner whose batch finishes after
    the takeover is refused at commit (fenced:owner) and does not retry."""
    w = new_world([(FG_20M,)], replicas=("replica-1", "replica-2"))
    start_turn(w)
    w.deaf.add("replica-1")
    w.pause_heartbeats("replica-1")
    w.timers.pop(("replica-1", chatd.SYNC_PREFIX + CHAT))
    w.run(w.t + 70_000)
    assert w.chat().worker_id == w.reps["replica-2"].worker_id
    pid = w.agent.started[0]
    w.deliver(w.agent.exit(pid, 0))
    commits = w.committed()
    assert [c.get("replica") for c in commits] == ["replica-2"]
    fenced = w.notes("fenced_out", "replica-1")
    assert [(n.get("op"), n.get("outcome")) for n in fenced] == [("commit_step", "fenced:owner")]
    assert not w.notes("task_retry", "replica-1")


# ---------------------------------------------------------------------------
# Section 7: retry wrapper
# ---------------------------------------------------------------------------


def test_retry_wrapper_db_errors_retry_with_backoff():
    """[7.39] TestRetryWrapper_UnexpectedErrorsRetry: a DB error at commit is retried after 100 ms,
    200 ms, ... doubling; the retry resends the same start (replayed) and commits once."""
    w = new_world([(FG_20M,)])
    start_turn(w)
    w.db = chatd.db_set_up(w.db, False)
    w.deliver(w.agent.exit(w.agent.started[0], 0))
    w.advance(1_600)
    retries = w.notes("task_retry")
    # Attempt 1 fails at its commit, attempts 2-5 at their first read (t+100, 300, 700, 1500).
    assert [n.get("why") for n in retries] == ["db_down"] * 5
    assert [n.get("backoff_ms") for n in retries] == [100, 200, 400, 800, 1600]
    w.db = chatd.db_set_up(w.db, True)
    w.advance(1_600)
    (res,) = w.committed()
    assert res.get("kind") == "completed" and res.get("attempt") == 6
    assert len(w.agent.started) == 1


def test_retry_wrapper_context_cancellation_does_not_retry():
    """[7.39] TestRetryWrapper_ContextCancellationDoesNotRetryOrLog: a task the runner cancels (the
    status changed) neither retries nor sends anything more."""
    w = new_world([(FG_20M,)], rules="today")
    start_turn(w)
    t_int = w.t
    w.user(chatd.db_interrupt, CHAT)
    w.run(t_int + 20 * MIN)
    assert [n.get("kind") for n in w.notes("task_canceled")] == ["generation"]
    assert not w.notes("task_retry")
    assert [x for x in w.requests() if x[0] > t_int] == []


def test_retry_wrapper_timed_out_attempt_is_retried_with_new_generation_attempt():
    """[7.40] TestRetryWrapper_TaskTimeoutDBQueryCancellationRetries: a timed-out attempt is
    always retried, and the retry raises generation_attempt (a new attempt fence)."""
    w = new_world([(FG_20M,)], rules="today")
    start_turn(w)
    ga1 = w.chat().generation_attempt
    w.run(w.t + 15 * MIN + 100)
    assert [n.get("why") for n in w.notes("task_retry")] == ["timeout"]
    assert w.chat().generation_attempt == ga1 + 1
    starts = [n for n in w.notes("batch_started")]
    assert [n.get("generation_attempt") for n in starts] == [ga1, ga1 + 1]


# ---------------------------------------------------------------------------
# Database rules
# ---------------------------------------------------------------------------


def test_turn_versions_ids_and_one_commit_per_batch():
    """Messages get increasing IDs and DB-clock created_at; inserts set history_version to
    the snapshot and reset generation_attempt; a batch of two commits once (1.1, 1.3)."""
    b = execute("toolu_b", "sleep 1", "1m")
    w = new_world([(FG_20M, b)])
    start_turn(w)
    chat = w.chat()
    assert [m.id for m in chat.messages] == [1, 2]
    assert chat.messages[1].created_at_ms == 2_000 + DB_OFFSET_MS
    assert chat.generation_attempt == 1 and chat.history_version < chat.snapshot_version
    for pid in list(w.agent.started):
        w.deliver(w.agent.exit(pid, 0))
    commits = w.committed()
    assert len(commits) == 2 and len({c.get("at_db_ms") for c in commits}) == 1
    assert [c.get("result_message_id") for c in commits] == [3, 4]
    # One transaction for both results: one snapshot bump, history = that snapshot, the
    # attempt reset. (The next generation then finishes the turn: one more snapshot.)
    (t_commit,) = {t for t, _, e in w.effects(Truth) if e.kind == "result_committed"}
    chat_after = w.chat()
    assert [m.role for m in chat_after.messages] == ["user", "assistant", "tool", "tool"]
    assert chat_after.status == chatd.WAITING
    assert chat_after.history_version == chat.snapshot_version + 1
    assert chat_after.snapshot_version == chat.snapshot_version + 3  # commit, finish, abandon


def test_result_committed_truth_fields():
    """Every committed tool result emits Truth(result_committed) with the fields checkers
    read (interfaces.md)."""
    w = new_world([(FG_20M,)])
    start_turn(w)
    w.deliver(w.agent.exit(w.agent.started[0], 3, "boom"))
    (res,) = w.committed()
    msg = chatd_db.last_assistant(w.chat())
    assert res.get("chat_id") == CHAT and res.get("message_id") == msg.id
    assert res.get("provider_id") == "toolu_fg" and res.get("uuid") == tool_call_uuid(CHAT, msg.id, "toolu_fg")
    assert res.get("kind") == "completed" and res.get("is_error") is False
    assert res.get("replica") == "replica-1" and res.get("attempt") == 1
    assert res.get("at_db_ms") >= DB_OFFSET_MS


def test_fence_table_checks():
    """The fence table: abandon checks the history version as Go's StartAbandon does
    (requireHistory); commit_step checks the attempt; planted fence switches turn a check
    off."""
    chat = chatd.Chat(CHAT, chatd.RUNNING, "w", "r", 9, 4, 2)
    db = chatd.Db(chats=FMap({CHAT: chat}))
    fence = chatd.TaskFence("w", "r", chatd.RUNNING, 3)
    c = chatd.CONTRACT
    assert chatd.check_fence(db, CHAT, "commit_step", fence, c, 2)[0] == "fenced:history"
    assert chatd.check_fence(db, CHAT, "abandon", fence, c)[0] == "fenced:history"
    assert chatd.check_fence(db, CHAT, "abandon", fence, chatd.TODAY)[0] == "fenced:history"
    ok_fence = replace(fence, history_version=4)
    assert chatd.check_fence(db, CHAT, "abandon", ok_fence, c)[0] == chatd.OK
    assert chatd.check_fence(db, CHAT, "commit_step", ok_fence, c, 1)[0] == "fenced:attempt"
    assert chatd.check_fence(db, CHAT, "commit_step", ok_fence, c, 2)[0] == chatd.OK
    assert chatd.check_fence(db, CHAT, "load_generation", replace(ok_fence, runner_id="x"), c)[0] == "fenced:owner"
    bug = replace(c, history_fence=False)
    assert chatd.check_fence(db, CHAT, "commit_step", fence, bug, 2)[0] == chatd.OK
    assert chatd.check_fence(chatd.db_set_up(db, False), CHAT, "commit_step", ok_fence, c, 2)[0] == chatd.DB_DOWN


def test_user_actions_refused_when_not_applicable():
    """Interrupt only from running; every user action is refused while the DB is down."""
    db, _ = chatd.db_new_chat(chatd.db_empty(), CHAT, [], 1_000, 0)
    db2, eff = chatd.db_interrupt(db, CHAT, 0)
    assert db2 == db and eff[0].kind == "refused"
    down = chatd.db_set_up(db, False)
    for fn, args in ((chatd.db_send_user_message, ("hi",)), (chatd.db_interrupt, ())):
        d, e = fn(down, CHAT, *args, 0)
        assert d == down and e[0].get("reason") == chatd.DB_DOWN
    db3, eff = chatd.db_send_user_message(db, CHAT, "hi", 5)
    assert db3.chats[CHAT].status == chatd.RUNNING
    assert [p.channel for p in eff if isinstance(p, Publish)] == ["chat:update", "chat:ownership"]


def test_scripted_model_runs_every_turn_then_finishes():
    """The scripted model answers turns in order; after the last results the next
    generation finishes the turn."""
    b = execute("toolu_b", "true", "1m")
    w = new_world([(FG_20M,), (b,)])
    start_turn(w)
    w.deliver(w.agent.exit(w.agent.started[0], 0))
    w.advance(2_000)
    assert len(w.agent.started) == 2
    w.deliver(w.agent.exit(w.agent.started[1], 0))
    w.advance(1_000)
    assert [m.role for m in w.chat().messages] == ["user", "assistant", "tool", "assistant", "tool"]
    assert w.chat().status == chatd.WAITING


def test_dial_failure_in_generation_commits_unknown_with_identity():
    """[7.16] TestExecuteToolCallNoConnection (task level): a generation dial that times out
    (30 s) gives each execute call the "earlier attempt may have started the command"
    unknown under the contract (4.2 step 1)."""
    w = new_world([(FG_20M,)])
    w.dial = None
    start_turn(w)
    w.advance(30_000)
    (res,) = w.committed()
    assert res.get("kind") == "unknown"
    assert "may have started the command" in [m for m in w.chat().messages if m.role == "tool"][0].result.content


# ---------------------------------------------------------------------------
# Purity and determinism
# ---------------------------------------------------------------------------

def _run_scenario():
    w = new_world([(FG_20M, BG)], replicas=("replica-1", "replica-2"))
    start_turn(w)
    w.pause_heartbeats("replica-1")
    w.run(w.t + 70_000)
    w.user(chatd.db_interrupt, CHAT)
    w.run(w.t + 5_000)
    return repr(w.log), w.db


def test_same_inputs_same_trace():
    """Two runs of one scenario produce identical effect logs and databases."""
    a, b = _run_scenario(), _run_scenario()
    assert a[0] == b[0] and a[1] == b[1]


def test_no_timer_leaks_after_a_finished_turn():
    """Once a turn is finished and abandoned, only the worker's two loop timers are armed:
    every task, attempt, dial, call and sync timer was canceled or fired."""
    w = new_world([(FG_20M, BG)])
    start_turn(w)
    w.deliver(w.agent.exit(uuid_of(w, "toolu_fg"), 0))
    w.advance(5_000)
    assert w.chat().status == chatd.WAITING
    assert sorted(name for node, name in w.timers) == ["acquire", "heartbeat"]


def test_states_are_hashable_and_comparable():
    """Replica and database states are frozen values an explorer can fingerprint."""
    w = new_world([(FG_2H, BG)])
    start_turn(w)
    w.agent.hold_cancels = True
    w.user(chatd.db_interrupt, CHAT)
    hash(w.db), hash(w.reps["replica-1"])
    assert w.reps["replica-1"].runners[CHAT].task.attempt.states[0] is not None
    assert w.db == replace(w.db)
