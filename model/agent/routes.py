"""The agent's entry points: a request arrives, a timer fires, a caller stops waiting
(the routes of docs/contract.md A1.4, A4.1, A4.6).

Theory of operation
-------------------
``on_request`` picks the handler by method and path, first match wins: start, edit and
write go through the tool call middleware (middleware.py); cancel to the cancel handler
(cancel.py); output, signal and list to the process side (processes.py); anything else
is Go's 404. The one real version difference lives here: an old agent (US8) has no
middleware, so every start, edit and write runs and picks its own ID, and it has no
cancel route. Timers name what they end: ``handler:<run>`` publishes a run,
``exit:<pid>`` ends a process, ``outwait:<req>`` ends a blocking output read at its cap.
"""

from __future__ import annotations

from ..core import CancelTimer, Reply, Request, Response, note, replace
from .cancel import _cancel
from .middleware import _begin_run, _middleware, on_handler_done
from .processes import _list, _output, _output_reply, _process_exit, _signal
from .state import AgentState, Effects
from .wire import _CANCEL_RE, _OUTPUT_RE, _SIGNAL_RE, LIST_PATH, MIDDLEWARE_ROUTES


def on_request(state: AgentState, req: Request, now_ms: int) -> tuple[AgentState, Effects]:
    """A request arrives at the agent. The clock is read on arrival, before the body
    (C1): ``now_ms`` is that reading."""
    route = MIDDLEWARE_ROUTES.get((req.method, req.path))
    old = not state.config.rules.understands_tool_calls
    if route is not None and old:
        # An old agent has no middleware: every request runs and picks its own ID.
        return _begin_run(state, req, route, None, now_ms)
    if route is not None:
        return _middleware(state, req, route, now_ms)
    if req.method == "POST" and not old and (m := _CANCEL_RE.match(req.path)):
        return _cancel(state, req, m.group(1), now_ms)
    if req.method == "GET" and (m := _OUTPUT_RE.match(req.path)):
        return _output(state, req, m.group(1), now_ms)
    if req.method == "POST" and (m := _SIGNAL_RE.match(req.path)):
        return _signal(state, req, m.group(1), now_ms)
    if req.method == "GET" and req.path == LIST_PATH:
        return _list(state, req, now_ms)
    return state, [Reply(req.src, Response(req.req_id, 404, "text/plain; charset=utf-8", b"404 page not found\n"))]


def on_client_gone(state: AgentState, req_id: str, now_ms: int) -> tuple[AgentState, Effects]:
    """The caller stopped waiting for ``req_id`` (its context ended). A waiter writes
    nothing and is forgotten; a run it created still runs (rule 7)."""
    waiter = state.waiters.get(req_id)
    if waiter is None:
        return state, []
    effects: Effects = [note("client_gone", req=req_id)]
    if waiter.kind == "output":
        effects.append(CancelTimer(f"outwait:{req_id}"))
    return replace(state, waiters=state.waiters.remove(req_id)), effects


def on_timer(state: AgentState, name: str, now_ms: int) -> tuple[AgentState, Effects]:
    kind, _, ident = name.partition(":")
    if kind == "handler":
        return on_handler_done(state, ident, now_ms)
    if kind == "exit":
        return _process_exit(state, ident, now_ms)
    if kind == "outwait":
        waiter = state.waiters.get(ident)
        if waiter is None:
            return state, []
        state = replace(state, waiters=state.waiters.remove(ident))
        return state, [_output_reply(waiter.request, state.processes[waiter.target])]
    return state, []
