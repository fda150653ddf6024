"""Ground truth and notes are one effect class on two channels (model/core.py
``TraceRecord``): ``truth(...)`` and ``note(...)`` build them, ``Truth``/``Note`` tell them
apart, and the world files each under its own record kind."""

from __future__ import annotations

from toolcall_sim.model import system as msys
from toolcall_sim.model import worlds
from toolcall_sim.model.core import NOTE, TRUTH, Note, TraceRecord, Truth, note, truth


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
    from toolcall_sim.model import explore as ex

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


def test_handwritten_inits_of_frozen_dataclasses_match_their_fields():
    """The machinery's hot frozen dataclasses (model/core.py's wire messages and effects,
    model/system.py's envelopes and steps) define their own ``__init__`` (fields written
    straight into the instance dict, model/core.py ``SetTimer.__init__``): each takes
    exactly the fields, in order, with the fields' defaults, and builds the instance the
    generated one would (every field set, in order), so a field added without its
    parameter fails here. The protocol modules' dataclasses have the generated ``__init__``
    (tests/test_model_plain.py)."""
    import dataclasses
    import inspect

    from toolcall_sim.model.core import CancelTimer, Publish, Reply, Request, Response, Send, SetTimer

    hot_states = (Request, Response, Send, Reply, Publish)
    for cls in (SetTimer, CancelTimer, TraceRecord, msys.Envelope, msys.Timer, msys.Step, msys.Deliver, msys.Drop,
                msys.Fire, msys.Idle) + hot_states:
        fields = dataclasses.fields(cls)
        params = list(inspect.signature(cls.__init__).parameters.values())[1:]
        assert [p.name for p in params] == [f.name for f in fields], cls.__name__
        for p, f in zip(params, fields):
            default = f.default if f.default is not dataclasses.MISSING else inspect.Parameter.empty
            assert p.default == default, (cls.__name__, f.name)
        values = [f"v{i}" for i in range(len(fields))]
        built = cls(*values)
        assert list(built.__dict__) == [f.name for f in fields]
        assert [getattr(built, f.name) for f in fields] == values
        assert built == cls(*values) and hash(built) == hash(cls(*values))
        try:
            setattr(built, fields[0].name, "other")
        except dataclasses.FrozenInstanceError:
            pass
        else:
            raise AssertionError(f"{cls.__name__} is no longer frozen")


def test_fmap_edited_equals_the_edits_one_at_a_time():
    """``FMap.edited`` (a step's timer edits put into one new table) gives the map that
    setting and removing the keys one at a time gives: the same sorted pairs and the
    same lookups, for additions, replacements, removals (of present and absent keys)
    and a key set and then removed or removed and then set."""
    import random

    from toolcall_sim.model.core import EMPTY, REMOVED, FMap

    rng = random.Random(7)
    keys = [("agent", f"t{i}") for i in range(6)] + [("replica-1", n) for n in ("acquire", "heartbeat", "sync/c")]
    for _ in range(400):
        start = FMap({k: rng.randrange(100) for k in rng.sample(keys, rng.randrange(len(keys) + 1))})
        one_at_a_time, edits = start, {}
        for _ in range(rng.randrange(1, 8)):
            key = rng.choice(keys)
            if rng.random() < 0.4:
                one_at_a_time = one_at_a_time.remove(key)
                edits[key] = REMOVED
            else:
                value = rng.randrange(100)
                one_at_a_time = one_at_a_time.set(key, value)
                edits[key] = value
        got = start.edited(edits)
        assert got.items() == one_at_a_time.items()
        assert dict(got._index) == dict(one_at_a_time._index)
        assert got == one_at_a_time and list(got) == sorted(got)
    assert EMPTY.edited({("a", "b"): REMOVED}) == EMPTY
