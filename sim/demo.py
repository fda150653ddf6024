"""A smoke demo: the same start request sent three times (first attempt, task retry after
the 15-minute attempt timeout, retry after an agent restart) against the pure agent model.
It prints what the agent decided each time; the full world replaces it later."""

from __future__ import annotations

from model import agent
from model.core import Reply, Request, Response, Truth, json_body
from model.identity import CHAT_ID_HEADER, parse_run_age_ms, read_tool_call_error, set_tool_call_headers

CHAT = "aaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee"
MIN_MS = 60_000


def _send(state, n, age_ms, now_ms, headers=True):
    hdrs = ((CHAT_ID_HEADER, CHAT),)
    if headers:
        hdrs = set_tool_call_headers(hdrs, 42, "toolu_01", age_ms)
    req = Request(f"r{n}", "replica-1", "POST", agent.START_PATH, "", hdrs, json_body({"command": "sleep 36000"}))
    state, effects = agent.on_request(state, req, now_ms)
    for name in [e.name for e in effects if getattr(e, "name", "").startswith("handler:")]:
        state, more = agent.on_timer(state, name, now_ms)
        effects += more
    answer = next(e.answer for e in effects if isinstance(e, Reply))
    starts = sum(1 for e in effects if isinstance(e, Truth) and e.kind == "process_started")
    return state, answer, starts


def _describe(answer: Response, starts: int) -> str:
    err = read_tool_call_error(answer.status, answer.body)
    if err:
        return f"409 {err.code} (processes started: {starts})"
    return f"{answer.status} id={answer.json()['id'][:13]}... run_age={parse_run_age_ms(answer.headers)}ms (processes started: {starts})"


def main(out) -> int:
    for variant, headers in (("today", False), ("contract", True)):
        state = agent.boot(agent.AgentConfig(), 0)
        now = 60 * MIN_MS  # the agent has been up for an hour
        out.write(f"variant {variant}:\n")
        state, ans, n = _send(state, 1, 5_000, now, headers)
        out.write(f"  attempt 1                    -> {_describe(ans, n)}\n")
        now += 15 * MIN_MS
        state, ans, n = _send(state, 2, 5_000 + 15 * MIN_MS, now, headers)
        out.write(f"  retry after 15m timeout      -> {_describe(ans, n)}\n")
        state, _ = agent.restart(state, now)
        now += 30_000
        state, ans, n = _send(state, 3, 5_000 + 15 * MIN_MS + 30_000, now, headers)
        out.write(f"  retry after an agent restart -> {_describe(ans, n)}\n")
    return 0
