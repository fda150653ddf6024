"""The agent's wire helpers (model/agent/wire.py) at the edges the mutation run of that
module found unpinned (issue 35): the decode memo's bound and its errors, an unparsable
chat header, reading a cancel answer back."""

from __future__ import annotations

import json

from agent_harness import AgentHarness
from toolcall_sim.model import agent
from toolcall_sim.model.agent.wire import START_REQUEST, BodyDecoder
from toolcall_sim.model.gocompat.decode import GoJSONError, decode


def test_the_decode_memo_stays_bounded_and_answers_as_a_fresh_decode():
    """The memo of a pure decode holds at most MAX_BODIES bodies however many it has seen,
    and every answer, remembered or not, is what decoding the body gives."""
    memo = BodyDecoder(START_REQUEST)
    for n in range(3 * BodyDecoder.MAX_BODIES + 7):
        body = json.dumps({"command": f"echo {n}"}).encode()
        assert memo(body) == decode(body, START_REQUEST)
        assert len(memo.answers) <= BodyDecoder.MAX_BODIES


def test_a_malformed_body_raises_its_decode_error_every_time():
    memo = BodyDecoder(START_REQUEST)
    texts = []
    for _ in range(2):  # decoded, then remembered
        try:
            memo(b'{"command": 7}')
        except GoJSONError as err:
            texts.append(str(err))
    try:
        decode(b'{"command": 7}', START_REQUEST)
    except GoJSONError as err:
        fresh = str(err)
    assert texts == [fresh, fresh] and "string" in fresh


def test_the_start_routes_400_carries_gos_decode_error_as_its_detail():
    h = AgentHarness()
    rid = h.start(1, "call", body=b'{"command": 7}')
    assert h.status(rid) == 400
    value = h.json(rid)
    assert value["message"] == agent.MSG_BAD_JSON and "string" in value["detail"] and value["detail"] != "None"


def test_an_unparsable_chat_header_is_no_chat():
    """agentchat: a chat header that is no UUID gives the request no chat context."""
    h = AgentHarness()
    pid = h.json(h.start(None, command="sleep 60", chat="11111111-2222-4333-8444-555555555555"))["id"]
    rows = h.json(h.request("GET", agent.LIST_PATH, chat="not-a-uuid"))["processes"]
    assert [row["id"] for row in rows] == [pid]  # no chat: every process, as with no header


def test_a_cancel_answers_body_that_is_no_base64_is_kept_as_text():
    """Reading a cancel answer back decodes its recorded body from strict base64 and
    leaves any other text as it is (invalid characters, or non-ASCII ones)."""
    for text in ("Zm9v!", "Zm9v\u00e9"):  # base64 only once the stray "!" is dropped: strict keeps it
        assert agent.decode_cancel_response(json.dumps({"body": text}).encode())["body"] == text
    assert agent.decode_cancel_response(b'{"body": "Zm9v"}')["body"] == b"foo"
