"""Ground truth and notes are one effect class on two channels (model/core.py
``TraceRecord``): ``truth(...)`` and ``note(...)`` build them, ``Truth``/``Note`` tell them
apart, and the world files each under its own record kind."""

from __future__ import annotations

from model import system as msys
from model import worlds
from model.core import NOTE, TRUTH, Note, TraceRecord, Truth, note, truth


def test_truth_and_note_are_one_class_told_apart_by_channel():
    t = truth("process_started", pid="7", chat_id="c")
    n = note("replayed", uuid="u")
    assert type(t) is type(n) is TraceRecord
    assert (t.channel, n.channel) == (TRUTH, NOTE)
    assert isinstance(t, Truth) and not isinstance(t, Note)
    assert isinstance(n, Note) and not isinstance(n, Truth)
    assert not isinstance("process_started", Truth)
    # fields are sorted pairs, so equal records built in any keyword order are equal
    assert t == truth("process_started", chat_id="c", pid="7") and t.get("pid") == "7"
    assert Truth("process_started", t.fields) == t and Note("replayed", n.fields) == n


def test_the_world_files_truths_and_notes_under_their_own_record_kinds():
    """A run's trace holds ``{"kind": "truth", "truth": ...}`` and ``{"kind": "note",
    "note": ...}`` records, never one under the other's key."""
    from model import explore as ex

    node = ex.initial_node(worlds.build("two-messages"))
    seen = set()
    for _ in range(60):
        actions = ex.enabled(node, ex.Bounds())
        if not actions:
            break
        records = msys.apply(node.system, actions[0]).records
        node, _ = ex.step(node, actions[0])
        for rec in records:
            if rec.get("kind") in (TRUTH, NOTE):
                seen.add(rec["kind"])
                assert rec[rec["kind"]] and ({TRUTH, NOTE} - {rec["kind"]}).isdisjoint(rec)
    assert seen == {TRUTH, NOTE}
