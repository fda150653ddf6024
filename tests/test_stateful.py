"""Hypothesis drives the same world: the contract keeps every safety property, today's
behaviour fails one, and the shrunk failure replays from its counterexample file.

Profiles: HYPOTHESIS_PROFILE=ci (the default here) or long."""

from __future__ import annotations

import os

import pytest

from hypothesis import settings

from sim import counterexample as cx
from sim.cli import main
from sim.stateful import machine_for

settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))


TestContract = machine_for("contract").TestCase


@pytest.mark.slow
def test_today_fails_and_the_shrunk_failure_replays(tmp_path, capsys):
    """`toolcall-sim search` under today: hypothesis finds a violated safety property,
    prints the shrunk program as a story of action labels, and writes one counterexample
    that replays through the pure model with the same trace hash."""
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
