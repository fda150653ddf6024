"""Partial-order reduction is sound (model/explore_por.py).

The reduced search takes, where it can, one delivery to the agent alone, having checked
that every other order reaches the same stories (a persistent set). Checked here: on
every small world and under every planted bug the reduced search finds the same
properties violated as the search without it (the counterexamples may differ, so depths
are not compared); the pairs it assumes commute by their footprints do commute, step by
step, under ``CHECK_MEMO``; and the parallel driver takes the same decisions (Rule 5 of
the module, explore.py Rule 9)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from toolcall_sim.drivers import explore_parallel
from toolcall_sim.model import explore as ex
from toolcall_sim.model import explore_context, planted_bugs, worlds
from toolcall_sim.model import system as msys

from tests.test_explore_bugs import WHERE, bounds


def found(result: ex.Result) -> list:
    return sorted((v.property, v.residual_risk) for v in result.violations)


def both(config, b: ex.Bounds, max_states: int = 200_000) -> tuple[ex.Result, ex.Result]:
    """The search without partial-order reduction and with it (symmetry on in both)."""
    full = ex.explore(config, replace(b, partial_order=False), max_states=max_states)
    reduced = ex.explore(config, replace(b, partial_order=True), max_states=max_states)
    assert full.exhausted and reduced.exhausted
    return full, reduced


@pytest.mark.parametrize("name", worlds.small_names())
def test_every_small_world_finds_the_same_violations_reduced(name):
    """Today (many findings) and the contract at 1 ms in flight, each budget at 1: the
    same properties and residual risks, in fewer states."""
    budgets = dict(ownership_changes=1) if name != "two-chats" else dict(ownership_changes=1, interrupts=0)
    for variant in ("today", "contract"):
        full, reduced = both(worlds.build(name, variant), bounds(**budgets))
        assert found(reduced) == found(full), variant
        assert reduced.states < full.states, variant


@pytest.mark.parametrize("mutant", planted_bugs.PLANTED_BUGS, ids=lambda m: m.name)
def test_every_planted_bug_is_found_reduced_as_unreduced(mutant):
    """Each planted bug needs its own interleaving (run-before-record: the new owner's
    start reaches the agent while the first owner's start is still in its handler), and
    the reduced search finds it as the full one does."""
    world, budgets = WHERE[mutant.name]
    full, reduced = both(worlds.build(world, f"contract+{mutant.name}"), bounds(**budgets))
    assert found(reduced) == found(full)
    assert mutant.caught_by in {p for p, _ in found(reduced)}


def test_the_default_world_in_numbers():
    """The default world at 0 s in flight, every budget at 1: 37,502 states without the
    reduction, 14,170 with it (and the same two residual risks)."""
    full, reduced = both(worlds.build("default", "contract"), ex.Bounds())
    assert (full.states, reduced.states) == (PINNED_UNREDUCED, PINNED_REDUCED)
    assert found(reduced) == found(full)


@pytest.mark.parametrize("name", ["two-messages", "late-pubsub"])
def test_footprint_pairs_commute_step_by_step(name, monkeypatch):
    """Rule 2's shortcut: a step of chatd's side is taken to commute with a delivery to
    the agent; ``CHECK_MEMO`` runs both orders of every such pair the search meets and
    fails the search on the first that differs."""
    monkeypatch.setattr(explore_context, "CHECK_MEMO", True)
    full, reduced = both(worlds.build(name, "today"), bounds(ownership_changes=1, agent_restarts=1))
    assert found(reduced) == found(full)


def test_a_reduced_state_takes_one_delivery_to_the_agent():
    """What the reduction leaves: in a reduced state one delivery, to the agent; and
    ``--no-reduction``'s bounds list every enabled action."""
    config = worlds.build("default", "contract")
    search = ex.Search(config, ex.Bounds(), 100_000, False, None)
    node = search.ctx.initial_node(config)
    reduced = 0
    for _ in range(60):
        every = ex.enabled(node, ex.Bounds())
        chosen = search.choices(node)
        if not every:
            break
        if len(chosen) < len(every):
            reduced += 1
            (only,) = chosen
            env = next(e for e in node.system.in_flight if e.seq == only.seq)
            assert type(only) is msys.Deliver and env.dst == msys.AGENT
        node, _ = search.ctx.step(node, every[0])  # walk on by the first choice
    assert reduced


def test_the_parallel_search_takes_the_same_decisions():
    """Rule 5: a state's reduction depends on its system and budgets only, so two worker
    processes number the same states as one process (explore.py Rule 9)."""
    config = worlds.build("two-messages", "today")
    b = bounds(ownership_changes=1, agent_restarts=1)
    one = ex.explore(config, b, max_states=200_000)
    two = explore_parallel.explore(config, b, max_states=200_000, workers=2, head_start=50)
    assert (two.states, two.transitions, found(two)) == (one.states, one.transitions, found(one))


def test_the_reduction_flag_chooses_the_reductions(tmp_path, capsys):
    """``explore --reduction`` picks the reductions (model/explore_actions.py
    ``REDUCTIONS``): symmetry alone takes every order of independent steps (the pinned
    37,502 states of the default world), all of them the pinned 14,170; the summary and
    the report's repeated command say which; ``--no-reduction`` is ``--reduction none``
    and the two together are refused in one line with exit 2."""
    import json

    from toolcall_sim.cli.main import main

    def explore(*flags):
        code = main(["explore", "--world", "default", "--json", "--quiet", "--out", str(tmp_path / "cx"), *flags])
        return code, json.loads(capsys.readouterr().out)

    states = {}
    for choice in ("all", "symmetry", "none"):
        code, doc = explore("--reduction", choice)
        assert code == 0
        assert (doc["bounds"]["symmetry"], doc["bounds"]["partial_order"]) == ex.REDUCTIONS[choice]
        states[choice] = doc["states"]
    assert states == {"all": PINNED_REDUCED, "symmetry": PINNED_UNREDUCED, "none": PINNED_UNREDUCED}
    assert explore("--no-reduction")[1]["bounds"]["symmetry"] is False
    argv = ["explore", "--world", "default", "--reduction", "symmetry", "--max-states", "300", "--quiet",
            "--out", str(tmp_path / "cx"), "--report", str(tmp_path / "r")]
    assert main(argv) == 0
    assert "symmetry only: every order of independent steps (--reduction symmetry)" in capsys.readouterr().out
    (e,) = json.loads((tmp_path / "r" / "report.json").read_text())["explore"]
    assert e["reproduce"][0].endswith(" --reduction symmetry")
    try:  # (argparse refuses with SystemExit)
        code = main(["explore", "--world", "default", "--reduction", "all", "--no-reduction"])
    except SystemExit as exit_:
        code = exit_.code
    assert code == 2
    assert "not allowed with argument --reduction" in capsys.readouterr().err


PINNED_REDUCED, PINNED_UNREDUCED = 14_170, 37_502  # test_the_default_world_in_numbers's
