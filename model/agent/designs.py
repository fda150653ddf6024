"""The agent's half of the design variants (model/designs.py): each a subclass of
``AgentRules`` that overrides the hook of the one rule the design changes, like the
planted bugs of planted.py, so the handlers keep reading as Rev C.

Theory of operation
-------------------
Rev C decides a call it has no record of with the age rule (``AgentRules.proven_new``)
and keeps records only for each chat's latest message (``records_kept_on_insert``). The
alternatives of docs/contract.md D3 (the rejected designs) and D7 change exactly
one of those two rules:

- ``FreshStart`` (#27369-#27372, a key kept beside agent-picked process IDs): no record means
  run, whatever the agent's uptime, so after an agent restart (or an eviction, which A7
  says must count as one) a later attempt starts the command again.
- ``RememberAll`` (an earlier revision): nothing is dropped when a newer message arrives,
  so the records held grow with every tool call (the design's stated cost). The older
  messages' records stay in the chat under ``\0<message id>/<provider ID>`` keys, which no
  current call can look up (a request for an older message is still ``stale_tool_call``
  first, as in Rev C); they are only held.
- ``IncarnationToken`` (D7, the fix of the age check's residual risk, rejected
  for its cost): chatd stores the agent incarnation it dialed, durably and per tool call,
  before the first request, and sends it on every request (``INCARNATION_HEADER``); the
  agent runs an unrecorded call only when the token names itself and refuses every other
  token as ``agent_started_after_tool_call``. No clock is read, so a request delayed past
  the 2 s margin cannot run twice. A request without the header falls back to the age
  rule (an old coderd).
"""

from __future__ import annotations

from ..core import Request, header_value, replace
from ..identity import AGENT_INCARNATION_HEADER as INCARNATION_HEADER
from .rules import AgentRules
from .state import AgentState, ChatRecords

# Remember-all's older records are held under keys no provider tool call ID can be (a
# header value never holds a NUL byte).
HELD_PREFIX = "\0"


class FreshStart(AgentRules):
    """fresh-start: a call the agent has no record of always runs (no age rule)."""

    def proven_new(self, state: AgentState, req: Request | None, age_ms: int, now_ms: int) -> bool:
        return True


class RememberAll(AgentRules):
    """remember-all: a newer message keeps the older messages' records (held, never
    looked up again: requests for them are stale first)."""

    def records_kept_on_insert(self, chat: ChatRecords | None, message_id: int) -> ChatRecords:
        if chat is None:
            return ChatRecords(latest_message_id=message_id)
        if message_id <= chat.latest_message_id:
            return chat
        kept = chat.records
        for provider_id, record in chat.records.items():
            if provider_id.startswith(HELD_PREFIX):
                continue  # already an older message's record
            kept = kept.remove(provider_id).set(f"{HELD_PREFIX}{chat.latest_message_id}/{provider_id}", record)
        return replace(chat, latest_message_id=message_id, records=kept)


class IncarnationToken(AgentRules):
    """incarnation-token: an unrecorded call runs iff the request's token is this agent's
    incarnation; without a token, Rev C's age rule."""

    def proven_new(self, state: AgentState, req: Request | None, age_ms: int, now_ms: int) -> bool:
        token = header_value(req.headers, INCARNATION_HEADER) if req is not None else None
        if token is None:
            return super().proven_new(state, req, age_ms, now_ms)
        return token == str(state.incarnation)


def records_held(state: AgentState | None) -> int:
    """How many tool call records (results, pending runs and canceled markers) the agent
    holds in memory: the remember-all design's cost (``toolcall-sim compare``)."""
    if state is None:
        return 0
    return sum(len(chat.records) for chat in state.chats.values())
