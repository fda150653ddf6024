"""The delivery of a publish its replica ignores, taken without the general step
(model/system.py ``_quiet_publish``, ``chatd.publish_changes_nothing``), is the general
step: the same new system field for field (the very same objects), the same records, no
timer armed. Checked on every publish delivery of swarm seeds, against ``apply`` with the
shortcut turned off, and the predicate against the handler's own answer."""

from __future__ import annotations

import pytest

import toolcall_sim.model.chatd as chatd
import toolcall_sim.model.system as msys
from toolcall_sim.model.core import Publish
from toolcall_sim.world.run import run_scenario
from toolcall_sim.world.scenario import from_dict
from toolcall_sim.world.stories import draw_scenario

SEEDS = range(1, 41)


def _publish_deliveries(variant: str) -> list[tuple]:
    """(system, action) of every Deliver of a publish the swarm seeds' runs apply."""
    seen = []
    original = msys.apply

    def recording(system, action, log=None, asked=None):
        if type(action) is msys.Deliver:
            env = msys._find(system, action.seq)
            if env is not None and type(env.payload) is Publish:
                seen.append((system, action))
        return original(system, action, log, asked)

    mp = pytest.MonkeyPatch()
    mp.setattr(msys, "apply", recording)
    try:
        import toolcall_sim.world.simulation as world
        mp.setattr(world.msys, "apply", recording)
        for seed in SEEDS:
            run_scenario(from_dict(draw_scenario(seed), "<swarm>"), variant, verdicts_only=True)
    finally:
        mp.undo()
    return seen


@pytest.mark.parametrize("variant", ["contract", "today"])
def test_quiet_publish_is_the_general_step(variant, monkeypatch):
    deliveries = _publish_deliveries(variant)
    quiet = [(s, a) for s, a in deliveries
             if not s.partitions and chatd.publish_changes_nothing(
                 s.replicas.get(msys._find(s, a.seq).dst), s.db, msys._find(s, a.seq).payload.channel,
                 msys._find(s, a.seq).payload.chat_id)]
    # Most publishes are quiet, and some are not: both paths are exercised.
    assert len(quiet) > len(deliveries) / 2 and len(quiet) < len(deliveries)
    fast = [msys.apply(s, a) for s, a in quiet]
    monkeypatch.setattr(chatd, "publish_changes_nothing", lambda rep, db, channel, chat_id: False)
    slow = [msys.apply(s, a) for s, a in quiet]
    for f, g in zip(fast, slow):
        assert list(f.system.__dict__) == list(g.system.__dict__)  # the same fields in the same order
        for name, value in f.system.__dict__.items():
            other = g.system.__dict__[name]
            assert value is other or value == other, name
        assert f.system == g.system
        assert f.records == g.records and [list(r) for r in f.records] == [list(r) for r in g.records]
        assert f.armed == g.armed == ()


def test_quiet_publish_predicate_matches_the_handler():
    """Whenever the predicate says so, the handler returns what it was given and no effect."""
    checked = 0
    for s, a in _publish_deliveries("contract"):
        env = msys._find(s, a.seq)
        rep = s.replicas.get(env.dst)
        if rep is None or not chatd.publish_changes_nothing(rep, s.db, env.payload.channel, env.payload.chat_id):
            continue
        out = chatd.replica_on_publish(rep, s.db, env.payload.channel, env.payload.chat_id, s.now_ms, s.now_ms)
        assert out[0] is rep and out[1] is s.db and out[2] == []
        checked += 1
    assert checked > 100


def test_predicate_cases():
    """The four quiet cases, and the four that are not."""
    s = msys.initial(_config(1)).system
    db = s.db
    name, rep = next((n, r) for n, r in s.replicas.items() if r is not None)
    assert chatd.publish_changes_nothing(None, db, chatd.CHANNEL_UPDATE, "c")
    assert chatd.publish_changes_nothing(rep, db, chatd.CHANNEL_UPDATE, "no-such-chat")
    assert not chatd.publish_changes_nothing(rep, db, chatd.CHANNEL_OWNERSHIP, "c")
    from toolcall_sim.model.core import replace
    paused = replace(rep, heartbeats_paused=True)
    assert chatd.publish_changes_nothing(paused, db, chatd.CHANNEL_OWNERSHIP, "c")
    from toolcall_sim.model.chatd.state import Runner
    chat_id, chat = next(iter(db.chats.items()))
    # A runner of a chat the database does not hold drops it: not quiet.
    running = replace(rep, runners=rep.runners.set("c", Runner("c", "r1")))
    assert not chatd.publish_changes_nothing(running, db, chatd.CHANNEL_UPDATE, "c")
    # A runner that has seen the chat's snapshot: quiet; one snapshot behind: it observes.
    seen = replace(rep, runners=rep.runners.set(chat_id, Runner(chat_id, "r1", seen_snapshot=chat.snapshot_version)))
    assert chatd.publish_changes_nothing(seen, db, chatd.CHANNEL_UPDATE, chat_id)
    behind = replace(rep, runners=rep.runners.set(chat_id, Runner(chat_id, "r1", seen_snapshot=chat.snapshot_version - 1)))
    assert not chatd.publish_changes_nothing(behind, db, chatd.CHANNEL_UPDATE, chat_id)
    # With the database down the runner writes its db_down note: not quiet.
    assert not chatd.publish_changes_nothing(seen, chatd.db_set_up(db, False), chatd.CHANNEL_UPDATE, chat_id)


def _config(seed: int):
    from toolcall_sim.world.run import build
    config, _ = build(from_dict(draw_scenario(seed), "<swarm>"), "contract")
    return config
