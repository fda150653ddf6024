"""The record store: the input hash, the lookup every tool call request and cancel shares,
and inserting and filling in records (docs/contract.md A2.2 to A2.4, A2.6).

Theory of operation
-------------------
Per chat the store keeps the latest message ID it has seen and that message's records;
there is no time-based expiry in Rev C. ``lookup`` gives the verdict of rule 1 in the
package docstring: ``stale`` (an older message, checked before the age rule), ``found``
(a record of this message: a canceled marker, a pending run or a recorded answer),
``not_provable`` (no record, and the agent may have restarted since chatd measured the
age) or ``new``. Only a proven-new call or a cancel marker inserts a record; a newer
message replaces the chat's records, so older messages' records drop (section 2.4 step
5). Which records a new record keeps is ``AgentRules.records_kept_on_insert``, so a
planted bug that loses them is an override there, not a branch here.
"""

from __future__ import annotations

import hashlib

from ..core import Request, replace
from ..identity import AGENT_STARTED_AFTER_TOOL_CALL, STALE_TOOL_CALL, Key
from .state import AgentState, Record


def input_hash(req: Request) -> str:
    """SHA-256 over method, path, raw query and body, each prefixed by its length as an
    8-byte big-endian integer (section 2.6). Headers are not part of it. (Each distinct
    input is hashed once: a request is hashed when it arrives and again when its run
    publishes, and retries repeat it; at most 1,024 are kept.)"""
    key = (req.method, req.path, req.query, req.body)
    digest = _INPUT_HASHES.get(key)
    if digest is None:
        h = hashlib.sha256()
        for part in (req.method.encode(), req.path.encode(), req.query.encode(), req.body):
            h.update(len(part).to_bytes(8, "big"))
            h.update(part)
        digest = h.hexdigest()
        if len(_INPUT_HASHES) >= 1024:
            _INPUT_HASHES.clear()
        _INPUT_HASHES[key] = digest
    return digest


_INPUT_HASHES: dict[tuple, str] = {}  # (method, path, query, body) -> ``input_hash``


# The lookup verdicts that refuse a request before anything else is looked at (rule 1).
REFUSAL_FOR_VERDICT = {"stale": STALE_TOOL_CALL, "not_provable": AGENT_STARTED_AFTER_TOOL_CALL}


def current(state: AgentState, key: Key) -> bool:
    """``Store.Current``: the key is in its chat's latest message and has a record
    (pending, done or a canceled marker)."""
    chat = state.chats.get(key.chat_id)
    return chat is not None and chat.latest_message_id == key.message_id and key.tool_call_id in chat.records


def dropped_pending(before: AgentState, after: AgentState, chat_id: str) -> bool:
    """A2.7 (for a probe only): the insert that made ``after`` from ``before`` raised the
    chat's latest message while ``before`` held a pending run's record of the older one,
    which the newer message dropped."""
    old, new = before.chats.get(chat_id), after.chats.get(chat_id)
    return (old is not None and new is not None and new.latest_message_id > old.latest_message_id
            and any(r.recorded is None for r in old.records.values()))


def dropped_by_newer(state: AgentState, key: Key) -> bool:
    """A2.7 (for a probe only): a newer message of the key's chat has replaced its records,
    so a run of ``key`` publishes into nothing (``_set_record`` leaves the store as is)."""
    chat = state.chats.get(key.chat_id)
    return chat is not None and chat.latest_message_id > key.message_id


def uptime_ms(state: AgentState, now_ms: int) -> int:
    return now_ms - state.started_at_ms


def lookup(state: AgentState, key: Key, age_ms: int, now_ms: int, req: Request | None = None) -> tuple[str, Record | None]:
    """Returns (verdict, record): verdict is ``stale``, ``found``, ``not_provable`` or
    ``new``. Stale comes first; a found record ignores the age; with no record the rules'
    ``proven_new`` decides (Rev C: refused iff ``uptime - margin <= age`` with a negative
    age counted as 0; the no-age-margin bug sets the margin to 0, and the design variants
    of model/agent/designs.py decide otherwise)."""
    chat = state.chats.get(key.chat_id)
    if chat is not None:
        if key.message_id < chat.latest_message_id:
            return "stale", None
        if key.message_id == chat.latest_message_id and key.tool_call_id in chat.records:
            return "found", chat.records[key.tool_call_id]
    proven = state.config.rules.proven_new(state, req, age_ms, now_ms)  # a hook, not a branch on a knob
    return ("new" if proven else "not_provable"), None


def _insert(state: AgentState, key: Key, record: Record) -> AgentState:
    """Insert a record beside the records ``AgentRules.records_kept_on_insert`` keeps: a
    newer message (or an unknown chat) replaces the chat's state, which drops every older
    message's records (section 2.4 step 5)."""
    chat = state.chats.get(key.chat_id)
    if chat is not None and key.message_id < chat.latest_message_id:
        return state  # only reachable from a planted bug that records late
    chat = state.config.rules.records_kept_on_insert(chat, key.message_id)
    chat = replace(chat, records=chat.records.set(key.tool_call_id, record))
    return replace(state, chats=state.chats.set(key.chat_id, chat))


def _set_record(state: AgentState, key: Key, record: Record) -> AgentState:
    """Update a record in place if its chat still holds it for that message."""
    chat = state.chats.get(key.chat_id)
    if chat is None or chat.latest_message_id != key.message_id or key.tool_call_id not in chat.records:
        return state
    chat = replace(chat, records=chat.records.set(key.tool_call_id, record))
    return replace(state, chats=state.chats.set(key.chat_id, chat))
