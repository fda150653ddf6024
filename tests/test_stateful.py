"""Hypothesis drives the same world: the contract keeps every safety property, today's
behaviour fails one, and the shrunk failure replays from its counterexample file.

Profiles: HYPOTHESIS_PROFILE=ci (the default here) or long."""

from __future__ import annotations

import os

import pytest
from hypothesis import settings
from hypothesis.stateful import run_state_machine_as_test

from sim import counterexample as cx
from sim.stateful import machine_for

settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))


TestContract = machine_for("contract").TestCase


def test_today_fails_and_the_shrunk_failure_replays(tmp_path):
    """Under today hypothesis finds a violated safety property; the counterexample it
    wrote replays through the pure model and reproduces with the same trace hash."""
    machine = machine_for("today", out=tmp_path)
    with pytest.raises(AssertionError):
        run_state_machine_as_test(machine, settings=settings(max_examples=200, stateful_step_count=40,
                                                             deadline=None, database=None))
    files = sorted(tmp_path.glob("*.json"))
    assert files
    for f in files:
        r = cx.replay(f)
        assert r.reproduced and r.trace_sha256 == r.expected_sha256
