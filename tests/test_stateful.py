"""Hypothesis drives the same world: the contract keeps every safety property, today's
behaviour fails one, and the shrunk failure replays from its counterexample file.

Profiles: HYPOTHESIS_PROFILE=ci (the default here) or long."""

from __future__ import annotations

import os

import pytest

from hypothesis import settings

from toolcall_sim.drivers import counterexample as cx
from toolcall_sim.cli.main import main
from toolcall_sim.drivers.stateful import machine_for

settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))


TestContract = machine_for("contract").TestCase


@pytest.mark.slow
def test_today_fails_and_the_shrunk_failure_replays(tmp_path, capsys, monkeypatch):
    """`toolcall-sim search` under today: hypothesis finds a violated safety property,
    prints the shrunk program as a story of action labels, and writes one counterexample
    that replays through the pure model with the same trace hash.

    Shrinking is capped at 10 successful shrinks (hypothesis's ``MAX_SHRINKS``, 500 by
    default): this test is about a shrunk failure being printed and replaying, not about
    how far hypothesis shrinks. The derandomized run reaches the same 10-action program
    after its 10th shrink as without the cap (14 shrinks, 522 programs: 9.9 s against
    2.3 s here); `toolcall-sim search --world default` runs uncapped."""
    from hypothesis.internal.conjecture import engine

    monkeypatch.setattr(engine, "MAX_SHRINKS", 10)  # raises if hypothesis renames it
    # Programs of up to 13 actions, not the default 40: the failure shrinks to 9 or 10
    # actions, so 13 still holds it, and hypothesis (derandomized) finds and shrinks it in
    # about a third of the time 15 steps take (9 s against 28 s here: the longer programs
    # cost the shrinker).
    assert main(["search", "--world", "default", "--variant", "today", "--examples", "200", "--steps", "13",
                 "--out", str(tmp_path)]) == 1
    out = capsys.readouterr().out
    assert "VIOLATION" in out and "shrunk to" in out and "  1. " in out
    (file,) = sorted(tmp_path.glob("*.json"))
    r = cx.replay(file)
    assert r.reproduced and r.trace_sha256 == r.expected_sha256
    assert main(["search", "--variant", "today", "--examples", "0"]) == 2
