"""The chat database's edges, called directly (model/chatd_db.py; docs/contract.md C1.1,
C1.3, C2.2, C2.4, C3.7): each test builds the few rows it needs, runs one transaction or
helper and checks what the contract says the answer must be. The replica-level tests
(tests/test_chatd.py) reach these functions only on the paths a world takes; these pin
the branches those paths leave open: every part of every operation's fence, a fence
compared by value, per-chat message numbering, which results resolve a call, the end of
a turn after a text answer, the copy number of a duplicated provider ID, the heartbeat
cleanup's boundary and the refusals of archive.
"""

from __future__ import annotations

import pickle

import pytest

from toolcall_sim.model import chatd, chatd_db, chattool
from toolcall_sim.model.core import FMap, Probe, Publish, Truth, replace

CHAT = "3b9a4c55-7e21-4f0a-9c3d-5a6b7c8d9e01"
OWNER = ("w1", "w1/r1")
CALL_A = chattool.ToolCall("call_a", "execute", '{"command":"true"}')
CALL_B = chattool.ToolCall("call_b", "execute", '{"command":"false"}')
OK_RESULT = chattool.Result("completed", False, "ok")


def running_chat(turns=((CALL_A,),), db: chatd_db.Db | None = None) -> chatd_db.Db:
    """A chat with its first user message, owned by ``OWNER``."""
    db, _ = chatd_db.db_new_chat(db or chatd_db.db_empty(), CHAT, list(turns), 1_000, 0)
    db, _ = chatd_db.db_send_user_message(db, CHAT, "go", 10)
    db, _ = chatd_db.tx_acquire(db, db.chats[CHAT], *OWNER, 20)
    return db


def fence_of(chat: chatd_db.Chat) -> chatd_db.TaskFence:
    return chatd_db.TaskFence(chat.worker_id, chat.runner_id, chat.status, chat.history_version)


# ---------------------------------------------------------------------------
# C2.4: every read and write checks owner, status and history; the batch's commit and
# the turn's finish also the generation attempt
# ---------------------------------------------------------------------------

# op -> the status its task was started for, and whether the generation attempt is part
# of its fence (C2.4 ``requireGenerationAttempt``: the batch's commit and the finish of
# the turn it loaded, tests/test_chatd_today.py)
OPS = {
    "load_generation": (chatd.RUNNING, False),
    "begin_generation_attempt": (chatd.RUNNING, False),
    "commit_step": (chatd.RUNNING, True),
    "finish_turn": (chatd.RUNNING, True),
    "load_interrupt": (chatd.INTERRUPTING, False),
    "finish_interruption": (chatd.INTERRUPTING, False),
    "abandon": (chatd.RUNNING, False),
}


def test_the_fence_table_names_every_operation_tested_here():
    assert set(chatd_db.FENCES) == set(OPS)


@pytest.mark.parametrize("op", sorted(OPS))
def test_each_operation_is_fenced_by_owner_status_history_and_only_the_commits_by_attempt(op):
    """verifyTaskFence (C2.4): a task started for another owner, another status or an
    older history exits; the attempt is checked only where Go requires it."""
    status, attempt_checked = OPS[op]
    db = running_chat()
    if status == chatd.INTERRUPTING:
        db, _ = chatd_db.db_interrupt(db, CHAT, 30)
    db, chat, _ = chatd_db.tx_begin_generation_attempt(db, db.chats[CHAT], 40)
    fence, attempt = fence_of(chat), chat.generation_attempt
    rules = chatd.CONTRACT

    assert chatd_db.check_fence(db, CHAT, op, fence, rules, attempt) == (chatd_db.OK, chat)
    for other in (replace(fence, worker_id="w2"), replace(fence, runner_id="w1/r2")):
        assert chatd_db.check_fence(db, CHAT, op, other, rules, attempt)[0] == chatd_db.FENCED_OWNER
    other_status = chatd.RUNNING if status == chatd.INTERRUPTING else chatd.INTERRUPTING
    assert chatd_db.check_fence(db, CHAT, op, replace(fence, status=other_status), rules,
                                attempt)[0] == chatd_db.FENCED_STATUS
    assert chatd_db.check_fence(db, CHAT, op, replace(fence, history_version=chat.history_version - 1), rules,
                                attempt)[0] == chatd_db.FENCED_HISTORY
    # another attempt, older or newer than the row's: fenced out only where it is checked
    for other_attempt in (attempt - 1, attempt + 1):
        outcome = chatd_db.check_fence(db, CHAT, op, fence, rules, other_attempt)[0]
        assert outcome == (chatd_db.FENCED_ATTEMPT if attempt_checked else chatd_db.OK)


def test_the_fence_compares_history_versions_by_value():
    """A long-lived chat's versions are large ints; a fence that went through pickling
    (a state handed to another process) holds an equal but distinct one, and still
    matches the row."""
    db = running_chat()
    chat = replace(db.chats[CHAT], snapshot_version=10_000, history_version=10_000)
    db = replace(db, chats=db.chats.set(CHAT, chat))
    fence = pickle.loads(pickle.dumps(fence_of(chat)))
    assert fence.history_version == chat.history_version
    assert chatd_db.check_fence(db, CHAT, "load_generation", fence, chatd.CONTRACT)[0] == chatd_db.OK


# ---------------------------------------------------------------------------
# C1.1 rule 2: message IDs
# ---------------------------------------------------------------------------


def test_per_chat_message_ids_count_from_one():
    """A world numbering each chat's messages on its own starts every chat at 1 and goes
    up by one (Db.message_ids_per_chat)."""
    db = running_chat(db=replace(chatd_db.db_empty(), message_ids_per_chat=True))
    db, _ = chatd_db.tx_commit_assistant(db, db.chats[CHAT], (CALL_A,), 30)
    assert [m.id for m in db.chats[CHAT].messages] == [1, 2]


# ---------------------------------------------------------------------------
# C1.3 / rule 7: the unresolved calls and the action
# ---------------------------------------------------------------------------


def _history(*messages: chatd_db.Message) -> chatd_db.Chat:
    return chatd_db.Chat(CHAT, chatd.RUNNING, messages=tuple(
        replace(m, id=i) for i, m in enumerate(messages, start=1)))


def _user() -> chatd_db.Message:
    return chatd_db.Message(0, "user", 0, text="go")


def _assistant(*calls) -> chatd_db.Message:
    return chatd_db.Message(0, "assistant", 0, tool_calls=calls)


def _tool(provider_id: str) -> chatd_db.Message:
    return chatd_db.Message(0, "tool", 0, provider_id=provider_id, result=OK_RESULT)


def test_only_results_after_the_last_assistant_message_resolve_its_calls():
    """unresolvedToolCallsFromHistory reads the results after the last assistant message:
    an earlier step's result with the same provider ID (a model that reuses IDs across
    steps) answers that step, not this one."""
    chat = _history(_user(), _assistant(CALL_A), _tool("call_a"), _assistant(CALL_A, CALL_B))
    msg, calls = chatd_db.unresolved_calls(chat)
    assert msg.id == 4 and calls == (CALL_A, CALL_B)
    assert chatd_db.decide_generation_action(chat) == "execute_local_tools"


def test_no_assistant_message_leaves_nothing_unresolved():
    assert chatd_db.unresolved_calls(_history()) == (None, ())
    assert chatd_db.unresolved_calls(_history(_user())) == (None, ())


def test_a_text_answer_finishes_the_turn_even_with_script_left():
    """A step with no tool calls is the model's final answer: the turn ends, whatever the
    script still holds (decideGenerationAction, C1.3)."""
    chat = replace(_history(_user(), _assistant()), turns=((), (CALL_A,)))
    assert chatd_db.decide_generation_action(chat) == "finish_turn"
    # after answered calls the script's next answer is generated
    chat = replace(_history(_user(), _assistant(CALL_A, CALL_B), _tool("call_a"), _tool("call_b")),
                   turns=((CALL_A, CALL_B), ()))
    assert chatd_db.turn_index(chat) == 1
    assert chatd_db.decide_generation_action(chat) == "generate_assistant"


# ---------------------------------------------------------------------------
# C3.7: one result per copy of a shared provider ID, each saying its copy
# ---------------------------------------------------------------------------


def _committed(calls) -> list:
    db = running_chat(turns=(calls,))
    db, _ = chatd_db.tx_commit_assistant(db, db.chats[CHAT], calls, 30)
    chat = db.chats[CHAT]
    results = [(c.provider_id, OK_RESULT) for c in calls]
    _, eff = chatd_db.tx_commit_results(db, chat, chat.messages[-1].id, results, 40, "replica-1", 1,
                                        chat.generation_attempt)
    return [e for e in eff if isinstance(e, Truth) and e.kind == "result_committed"]


def test_copies_of_a_shared_provider_id_are_numbered_from_zero():
    twin = chattool.ToolCall("call_a", "execute", '{"command":"true"}')
    records = _committed((CALL_A, CALL_B, twin))
    assert [(r.get("provider_id"), r.get("copy")) for r in records] == [("call_a", 0), ("call_b", None), ("call_a", 1)]


def test_a_provider_id_of_one_call_carries_no_copy():
    records = _committed((CALL_A,))
    assert len(records) == 1 and "copy" not in dict(records[0].fields)


# ---------------------------------------------------------------------------
# C2.2: heartbeat cleanup
# ---------------------------------------------------------------------------


def test_cleanup_deletes_rows_older_than_the_stale_limit_only():
    """The cleanup loop deletes heartbeats older than the limit; one exactly at it stays,
    as does every fresh one; with nothing to delete the database is unchanged."""
    stale_ms, now = 30_000, 100_000
    db = chatd_db.upsert_heartbeats(chatd_db.db_empty(), [(CHAT, "old")], now - stale_ms - 1)
    db = chatd_db.upsert_heartbeats(db, [(CHAT, "edge")], now - stale_ms)
    db = chatd_db.upsert_heartbeats(db, [(CHAT, "fresh")], now)
    cleaned = chatd_db.cleanup_heartbeats(db, now, stale_ms)
    assert sorted(r for _, r in cleaned.heartbeats) == ["edge", "fresh"]
    assert chatd_db.cleanup_heartbeats(cleaned, now, stale_ms) is cleaned


# ---------------------------------------------------------------------------
# Archive
# ---------------------------------------------------------------------------


def test_archive_refuses_an_unknown_chat_and_an_archived_one():
    db = running_chat()
    same, eff = chatd_db.db_archive(db, "no-such-chat", 30)
    assert same is db and (eff[0].kind, eff[0].get("reason")) == ("refused", "no_chat")
    archived, eff = chatd_db.db_archive(db, CHAT, 30)
    assert archived.chats[CHAT].status == chatd.ARCHIVED
    assert [p.channel for p in eff if isinstance(p, Publish)] == [chatd.CHANNEL_UPDATE]
    same, eff = chatd_db.db_archive(archived, CHAT, 40)
    assert same is archived and eff[0].get("reason") == "no_chat"


def test_a_turn_that_used_more_answers_than_the_script_holds_finishes():
    """The script is used up once the turn's answers reach its length; a history with more
    (a stale task's commit when a planted fence bug lets it through) finishes the turn too,
    never asks the script for an answer it does not have."""
    chat = replace(_history(_user(), _assistant(CALL_A), _tool("call_a"), _assistant(CALL_B), _tool("call_b")),
                   turns=((CALL_A,),))
    assert chatd_db.turn_index(chat) == 2
    assert chatd_db.decide_generation_action(chat) == "finish_turn"


# ---------------------------------------------------------------------------
# Rule 8: what a committed result records
# ---------------------------------------------------------------------------


def test_an_interrupt_commit_records_generation_attempt_zero():
    """The interrupt task's results are committed outside any generation attempt: their
    records say generation_attempt 0 and task interrupt (chatd_db rule 8), whatever
    attempt the generation had reached."""
    db = running_chat()
    db, chat, _ = chatd_db.tx_begin_generation_attempt(db, db.chats[CHAT], 30)
    db, _ = chatd_db.tx_commit_assistant(db, chat, (CALL_A,), 40)
    db, chat, _ = chatd_db.tx_begin_generation_attempt(db, db.chats[CHAT], 50)
    assert chat.generation_attempt == 1
    db, _ = chatd_db.db_interrupt(db, CHAT, 60)
    generic = chattool.Result("interrupted", True, "interrupted")
    _, eff = chatd_db.tx_finish_interruption(db, db.chats[CHAT], FMap(), generic, 70, "replica-1", 1)
    (record,) = [e for e in eff if isinstance(e, Truth) and e.kind == "result_committed"]
    assert (record.get("generation_attempt"), record.get("task"), record.get("kind")) == (0, "interrupt", "interrupted")


# ---------------------------------------------------------------------------
# The queue, the script cursor, the row lookup, the default window, the edit's probe
# ---------------------------------------------------------------------------


def test_the_end_of_a_turn_promotes_the_oldest_queued_message_and_restarts_the_script():
    """FinishTurn promotes the queue's head (FIFO) into history as the next user turn,
    whose scripted answers start from the first (turn_index 0)."""
    db = running_chat(turns=((),))
    db, _ = chatd_db.db_send_user_message(db, CHAT, "second", 30)
    db, _ = chatd_db.db_send_user_message(db, CHAT, "third", 31)
    db, _ = chatd_db.tx_commit_assistant(db, db.chats[CHAT], (), 40)
    db, _ = chatd_db.tx_finish_turn(db, db.chats[CHAT], 50)
    chat = db.chats[CHAT]
    assert (chat.status, chat.messages[-1].role, chat.messages[-1].text, chat.queue) == (
        chatd.RUNNING, "user", "second", ("third",))
    assert chatd_db.turn_index(chat) == 0


def test_a_row_is_found_by_its_id_among_active_and_deleted_messages():
    """find_message compares IDs by value, in the active history and among the rows an
    edit soft-deleted (a stale task's commit still names its own call message)."""
    chat = replace(_history(_user(), _assistant(CALL_A)), deleted_messages=(
        chatd_db.Message(1000, "assistant", 0, tool_calls=(CALL_B,)),))
    chat = replace(chat, messages=tuple(replace(m, id=2000 + m.id) for m in chat.messages))
    assert chatd_db.find_message(chat, int("1000")).tool_calls == (CALL_B,)
    assert chatd_db.find_message(chat, int("2002")).tool_calls == (CALL_A,)
    assert chatd_db.find_message(chat, 1500) is None


def test_a_chat_created_without_a_context_window_gets_the_default_result_budget():
    """Most worlds name no context window: the chat's is unknown, so every result gets
    the default per-result budget (C1.3 step 6)."""
    db, _ = chatd_db.db_new_chat(chatd_db.db_empty(), CHAT, [], 1_000, 0)
    budget = chattool.tool_result_byte_budget(db.chats[CHAT].context_limit_tokens)
    assert budget == chattool.tool_result_byte_budget(0)


def test_only_an_edit_of_an_interrupting_chat_ends_an_interruption():
    db = running_chat()
    _, eff = chatd_db.db_edit_message(db, CHAT, 30)
    assert "C3.6.ends-interruption" not in [e.rule for e in eff if isinstance(e, Probe)]
    db, _ = chatd_db.db_interrupt(db, CHAT, 40)
    _, eff = chatd_db.db_edit_message(db, CHAT, 50)
    assert "C3.6.ends-interruption" in [e.rule for e in eff if isinstance(e, Probe)]


def test_the_fence_compares_generation_attempts_by_value():
    db = running_chat()
    chat = replace(db.chats[CHAT], generation_attempt=10_000)
    db = replace(db, chats=db.chats.set(CHAT, chat))
    attempt = pickle.loads(pickle.dumps(chat.generation_attempt))
    assert chatd_db.check_fence(db, CHAT, "commit_step", fence_of(chat), chatd.CONTRACT, attempt)[0] == chatd_db.OK


def test_message_ids_come_from_one_sequence_across_chats():
    """Real chatd numbers every chat's messages from one sequence (chatd_db rule 2)."""
    other = "7e6d5c4b-3a29-4817-b6f5-e4d3c2b1a090"
    db = running_chat()
    db, _ = chatd_db.db_new_chat(db, other, [], 1_000, 0)
    db, _ = chatd_db.db_send_user_message(db, other, "hi", 30)
    assert [m.id for m in db.chats[CHAT].messages] == [1] and [m.id for m in db.chats[other].messages] == [2]


def test_a_message_to_an_unknown_or_archived_chat_is_refused():
    db = running_chat()
    same, eff = chatd_db.db_send_user_message(db, "no-such-chat", "hi", 30)
    assert same is db and eff[0].get("reason") == "no_chat"
    archived, _ = chatd_db.db_archive(db, CHAT, 30)
    same, eff = chatd_db.db_send_user_message(archived, CHAT, "hi", 40)
    assert same is archived and eff[0].get("reason") == "no_chat"


def test_a_new_database_has_heard_of_no_agent_start():
    """The incarnation the agent last reported is 0 until a boot reports one (the world
    writes it at every boot): the incarnation-token design stores no token for a call
    before the agent has said which incarnation runs it (model/chatd/designs.py)."""
    assert chatd_db.db_empty().agent_incarnation == 0
    db, _ = chatd_db.db_new_chat(chatd_db.db_empty(), "c", [()], 1_000, 0)
    assert db.agent_incarnation == 0
