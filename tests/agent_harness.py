"""A tiny driver for the pure agent model, shaped like the Go tests' harness: a mock
clock already advanced by the agent's uptime, requests that return their answers, and
explicit control over when a pending handler run publishes.

The Go middleware and cancel tests (docs/contract.md A5.1, A5.2) mount the
middleware over a ``countingHandler`` and give the cancel handler a fake ``ProcessStopper``.
``CountingHandler`` and ``FakeStopper`` are those two test doubles: a test installs them
over the model's own handler dispatch (``toolcall_sim.model.agent.middleware._run_handler``) and
stopper (``toolcall_sim.model.agent.processes.stop_tool_call_process``) with pytest's ``monkeypatch``, so the middleware and
cancel code under test are the model's, unchanged."""

from __future__ import annotations

import json

from toolcall_sim.model import agent
from toolcall_sim.model.core import CancelTimer, Note, Reply, Request, Response, SetTimer, Truth, json_body
from toolcall_sim.model.identity import CHAT_ID_HEADER, Key, set_tool_call_headers, tool_call_uuid

CHAT = "11111111-1111-4111-8111-111111111111"
OTHER_CHAT = "22222222-2222-4222-8222-222222222222"
HOUR_MS = 3_600_000


TEXT_PLAIN = "text/plain; charset=utf-8"


class CountingHandler:
    """Go's ``countingHandler`` (middleware_test.go): answers ``status`` (201 unless set),
    Content-Type ``text/plain; charset=utf-8`` and body "<word> N" where N counts its runs.
    ``seen`` keeps, per run, the tool call key the handler saw (None without a tool call)
    and the body it read."""

    def __init__(self, status: int = 201, content_type: str = TEXT_PLAIN, word: str = "ran", body: bytes | None = None):
        self.status, self.content_type, self.word, self.body = status, content_type, word, body
        self.calls = 0
        self.seen: list[tuple[Key | None, bytes]] = []

    def __call__(self, state, kind, req, key, now_ms):
        self.calls += 1
        self.seen.append((key, req.body))
        body = self.body if self.body is not None else f"{self.word} {self.calls}".encode()
        return state, agent.Recorded(self.status, self.content_type, body), []


# The fake stopper's process state in cancel_test.go (section 5.2 preamble).
FAKE_PROCESS = {"running": False, "canceled": True, "output": "partial", "exit_code": 0, "run_age_ms": 1200}


class FakeStopper:
    """Go's fake ``ProcessStopper`` (cancel_test.go): records every call as (process ID,
    threshold in ms) and reports ``process`` (None: no process with that ID)."""

    def __init__(self, process: dict | None = FAKE_PROCESS, error: str = ""):
        self.process = process
        self.error = error  # non-empty: StopToolCallProcess returns this error
        self.calls: list[tuple[str, int]] = []

    def __call__(self, state, pid, threshold_ms, now_ms):
        self.calls.append((pid, threshold_ms))
        if self.error:
            return state, None, [], self.error
        return state, (dict(self.process) if self.process is not None else None), [], ""


class AgentHarness:
    def __init__(self, uptime_ms: int = HOUR_MS, config: agent.AgentConfig | None = None, files=None):
        self.state = agent.boot(config or agent.AgentConfig(), 0, files or agent.EMPTY)
        self.now_ms = uptime_ms
        self.timers: dict[str, int] = {}
        self.answers: dict[str, object] = {}
        self.truths: list[Truth] = []
        self.notes: list[Note] = []
        self.counter = 0
        self.handler_runs = 0  # pending runs published by run_handlers (Go: handler calls)
        self.steps: dict[str, list] = {}  # request ID -> the effects of its arrival step
        self.requests: dict[str, Request] = {}  # request ID -> the request as the agent got it

    # -- effects -----------------------------------------------------------
    def _absorb(self, step):
        self.state, effects = step
        for eff in effects:
            if isinstance(eff, Reply):
                assert eff.answer.req_id not in self.answers, f"answered twice: {eff.answer.req_id}"
                self.answers[eff.answer.req_id] = eff.answer
            elif isinstance(eff, SetTimer):
                self.timers[eff.name] = self.now_ms + eff.after_ms
            elif isinstance(eff, CancelTimer):
                self.timers.pop(eff.name, None)
            elif isinstance(eff, Truth):
                self.truths.append(eff)
            elif isinstance(eff, Note):
                self.notes.append(eff)

    # -- requests ----------------------------------------------------------
    def request(
        self,
        method: str,
        path: str,
        *,
        query: str = "",
        body: bytes = b"",
        chat: str | None = CHAT,
        m: int | None = None,
        call: str | None = None,
        age_ms: int = 0,
        headers=(),
        run: bool = True,
    ) -> str:
        """Send one request; with ``run`` the handler of a new record runs at once."""
        self.counter += 1
        req_id = f"r{self.counter}"
        hdrs = tuple(headers)
        if chat is not None:
            hdrs += ((CHAT_ID_HEADER, chat),)
        if m is not None:
            hdrs = set_tool_call_headers(hdrs, m, call, age_ms)
        return self.send(Request(req_id, "chatd", method, path, query, hdrs, body), run=run)

    def send(self, req: Request, *, run: bool = True) -> str:
        """Deliver a request built elsewhere (by chatd's tool layer or the SDK twin)."""
        self.requests[req.req_id] = req
        step = agent.on_request(self.state, req, self.now_ms)
        self.steps[req.req_id] = list(step[1])
        self._absorb(step)
        if run:
            self.run_handlers()
        return req.req_id

    def start(self, m=1, call="call", *, command="true", background=False, run=True, **kw) -> str:
        body = json_body({"command": command, "background": background})
        return self.request("POST", agent.START_PATH, body=kw.pop("body", body), m=m, call=call, run=run, **kw)

    def cancel(self, m=1, call="call", threshold_ms=0, *, chat=CHAT, path_id=None, body=None, **kw) -> str:
        if path_id is None:
            path_id = tool_call_uuid(chat or CHAT, m, call) if m is not None else tool_call_uuid(CHAT, 1, "call")
        if body is None:
            body = json_body({"stop_if_run_age_below_ms": threshold_ms})
        return self.request("POST", f"/api/v0/tool-calls/{path_id}/cancel", body=body, chat=chat, m=m, call=call, **kw)

    def output(self, pid: str, *, wait=False, chat=CHAT) -> str:
        return self.request("GET", f"/api/v0/processes/{pid}/output", query="wait=true" if wait else "", chat=chat)

    def signal(self, pid: str, *, chat=CHAT) -> str:
        return self.request("POST", f"/api/v0/processes/{pid}/signal", body=json_body({"signal": "kill"}), chat=chat)

    def list(self, *, chat=CHAT) -> list[str]:
        rid = self.request("GET", agent.LIST_PATH, chat=chat)
        return [p["id"] for p in self.json(rid)["processes"]]

    # -- control -----------------------------------------------------------
    def run_handlers(self, panic: bool = False):
        for name in sorted(n for n in self.timers if n.startswith("handler:")):
            del self.timers[name]
            self.handler_runs += 1
            self._absorb(agent.on_handler_done(self.state, name.split(":", 1)[1], self.now_ms, panic=panic))

    def advance(self, ms: int):
        """Move the clock, firing due timers (process exits, output caps) in time order."""
        target = self.now_ms + ms
        while True:
            due = sorted((t, n) for n, t in self.timers.items() if t <= target)
            if not due:
                break
            t, name = due[0]
            del self.timers[name]
            self.now_ms = max(self.now_ms, t)
            self._absorb(agent.on_timer(self.state, name, self.now_ms))
        self.now_ms = target

    def gone(self, req_id: str):
        self._absorb(agent.on_client_gone(self.state, req_id, self.now_ms))

    def shutdown(self):
        self._absorb(agent.shutdown(self.state, self.now_ms))

    # -- reading -----------------------------------------------------------
    def answer(self, req_id: str) -> Response | None:
        return self.answers.get(req_id)

    def status(self, req_id: str) -> int | None:
        ans = self.answers.get(req_id)
        return ans.status if isinstance(ans, Response) else None

    def json(self, req_id: str):
        return json.loads(self.answers[req_id].body)

    def code(self, req_id: str) -> str | None:
        ans = self.answers[req_id]
        if ans.status != 409:
            return None
        return json.loads(ans.body).get("code")

    def cancel_value(self, req_id: str) -> dict:
        return agent.decode_cancel_response(self.answers[req_id].body)

    def run_age(self, req_id: str) -> str | None:
        ans = self.answers[req_id]
        for k, v in ans.headers:
            if k == "Coder-Tool-Call-Run-Age-Ms":
                return v
        return None

    def current(self, m=1, call="call", chat=CHAT) -> bool:
        return agent.current(self.state, Key(chat, m, call))

    def starts(self) -> int:
        return sum(1 for t in self.truths if t.kind == "process_started")

    def edits(self) -> int:
        return sum(1 for t in self.truths if t.kind == "edit_applied")

    def process(self, pid: str) -> agent.Process:
        return self.state.processes[pid]
