"""``toolcall-sim list``: the shipped scenarios, then every word a scenario file may use
and what runs (variants, properties, planted bugs, residual risks).

Theory of operation
-------------------
This command only reads the shipped scenarios from disk (a scenario that does not load is
listed with the reason, not skipped: ``list`` is where a broken file is seen first); the
rest comes from the model's tables and is rendered by ``toolcall_sim.reports.listing``.
"""

from __future__ import annotations

from toolcall_sim.reports.listing import listing

from toolcall_sim.world.scenario import ScenarioError, load
from toolcall_sim.world.inputs import EXIT_OK, SCENARIO_DIR

NAME = "list"
HELP = "list scenarios, variants, fault kinds and properties"


def add_arguments(parser) -> None:  # noqa: ARG001 - list takes no flags of its own
    pass


def main(args, out) -> int:  # noqa: ARG001 - args: no flags
    scenarios = []
    for path in sorted(SCENARIO_DIR.glob("*.toml")):
        try:
            scenarios.append((path.stem, load(path).summary, None))
        except ScenarioError as err:
            scenarios.append((path.stem, None, err))
    out.write(listing(scenarios))
    return EXIT_OK
