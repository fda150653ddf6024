"""The explorer's reductions keep what it finds: merging states whose histories differ only
in order (Rule 5 of model/explore.py) finds the same violations, with counterexamples
just as short, as the exact search, while visiting fewer states."""

from __future__ import annotations

import pytest

from toolcall_sim.model import explore as ex
from toolcall_sim.model import worlds

NONE = dict(agent_restarts=0, ownership_changes=0, interrupts=0, lost_responses=0, task_retries=0)

# Worlds where something is found (planted bugs, and the contract's cancel within the
# margin after an agent start), and one where nothing is.
CASES = [
    ("contract+run-before-record", dict(ownership_changes=1)),
    ("contract+cancel-without-marker", dict(interrupts=1)),
    ("contract+stop-rule-inclusive", dict(interrupts=1)),
    ("contract+records-lost-on-new-message", dict(task_retries=1)),
    ("contract+interrupt-drops-not-run", dict(interrupts=1)),
    ("contract", dict(agent_restarts=1, interrupts=1)),
    ("contract", dict(agent_restarts=1, lost_responses=1, task_retries=1)),
]


def _found(result) -> dict:
    return {(v.property, v.residual_risk): len(v.path) for v in result.violations}


@pytest.mark.slow
@pytest.mark.parametrize("variant,budgets", CASES, ids=[f"{v}-{'-'.join(b)}" for v, b in CASES])
def test_merging_reordered_histories_finds_the_same(variant, budgets):
    world = worlds.default(variant)
    exact = ex.explore(world, ex.Bounds(merge_reordered=False, **{**NONE, **budgets}))
    merged = ex.explore(world, ex.Bounds(merge_reordered=True, **{**NONE, **budgets}))
    assert exact.exhausted and merged.exhausted
    assert _found(merged) == _found(exact)
    assert merged.states < exact.states
