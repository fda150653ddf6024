"""``toolcall-sim incident``: the README's main job, the CODAGT-757 incident under today and
under the contract, then the same past the timeout.

Theory of operation
-------------------
Four runs of two shipped scenarios, each told as ``toolcall-sim run`` tells it, one blank
line between them. The exit code is 1 when any run misses its scenario's expectations: the
scenarios expect today's violations and the contract's absence of them, so 0 means the
incident reproduces under today and the contract prevents it.
"""

from __future__ import annotations

from toolcall_sim.reports.run import incident_part

from toolcall_sim.world.inputs import EXIT_OK, EXIT_VIOLATION, INCIDENT_SCENARIOS, load_scenario, resolve_scenario

NAME = "incident"
HELP = "replay the CODAGT-757 incident under today and under the contract"
VARIANTS = ("today", "contract")


def add_arguments(parser) -> None:  # noqa: ARG001 - incident takes no flags of its own
    pass


def main(args, out) -> int:  # noqa: ARG001 - args: no flags
    from toolcall_sim.world.run import run_scenario

    status = EXIT_OK
    for name in INCIDENT_SCENARIOS:
        scenario = load_scenario(resolve_scenario(name))
        for variant in VARIANTS:
            result = run_scenario(scenario, variant)
            out.write(incident_part(result))
            if result.expectation_failures():
                status = EXIT_VIOLATION
    return status
