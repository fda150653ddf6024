"""Imports run one way (issue 33): model <- io <- world <- backends <- drivers <- ci, drift <- cli
<- the package's top (the API, the pytest plugin, ``python -m toolcall_sim``); reports/
only renders (it imports the model's plain data and itself, never the world or a driver);
scenarios/ is data. The graph is the one docs/architecture.svg draws
(toolcall_sim/reports/architecture.py ``import_graph``: every import statement, read by
``ast``, lazy imports inside functions included, a package standing for its
``__init__``).

A module may import its own subpackage and any layer below; an import that runs against
the layers fails with the edge named, and so does a module in a subpackage the table does
not know (a new room gets a floor before it gets code)."""

from __future__ import annotations

import pathlib

import pytest

from toolcall_sim.reports.architecture import import_graph

ROOT = pathlib.Path(__file__).resolve().parent.parent
# Floor of each room of toolcall_sim; a module imports rooms on its floor or below.
FLOORS = {
    "scenarios": 0, "model": 0,
    "io": 1,
    "world": 2,
    "backends": 3,
    "drivers": 4,
    "ci": 5,
    "drift": 5,  # toolcall-sim drift (issue 38): reads a Go checkout; beside ci, a tool of the command line
    "cli": 6,
    "": 7,  # the package's own modules: __init__, __main__, api, api_results, pytest_plugin
}
TOP_MODULES = {"toolcall_sim", "toolcall_sim.__main__", "toolcall_sim.api", "toolcall_sim.api_results",
               "toolcall_sim.pytest_plugin"}


def room(module: str) -> str:
    if module in TOP_MODULES:
        return ""
    parts = module.split(".")
    assert parts[0] == "toolcall_sim" and len(parts) > 1, module
    return parts[1]


def against_the_layers(edges: dict[str, set[str]]) -> list[str]:
    bad = []
    for source, targets in sorted(edges.items()):
        here = room(source)
        for target in sorted(targets):
            there = room(target)
            if here == "reports":
                if there not in ("reports", "model"):
                    bad.append(f"{source} -> {target}: reports/ only renders (model data and itself)")
            elif there == "reports":
                continue  # anyone may hand data to a renderer
            elif here not in FLOORS:
                bad.append(f"{source}: in a room with no floor ({here!r}); add it to FLOORS")
            elif FLOORS[there] > FLOORS[here]:
                bad.append(f"{source} -> {target}: {here or 'top'} (floor {FLOORS[here]}) imports "
                           f"{there or 'top'} (floor {FLOORS[there]})")
    return bad


def graph():
    edges, _ = import_graph(packages=("model", "sim", "reports", "scenarios"))
    return edges


def test_every_import_runs_down_the_layers():
    assert against_the_layers(graph()) == []


def test_every_room_of_sim_has_a_floor():
    rooms = {p.parent.name for p in (ROOT / "sim").glob("*/__init__.py")}
    assert rooms == set(FLOORS) - {"", "model", "scenarios"}
    assert not [p.name for p in (ROOT / "sim").glob("*.py")
                if f"toolcall_sim.{p.stem}" not in TOP_MODULES | {"toolcall_sim.__init__"}]


@pytest.mark.parametrize("edge,why", [
    ({"toolcall_sim.world.run": {"toolcall_sim.drivers.swarm"}}, "world (floor 2) imports drivers (floor 4)"),
    ({"toolcall_sim.model.system": {"toolcall_sim.world.run"}}, "model (floor 0) imports world (floor 2)"),
    ({"toolcall_sim.reports.run": {"toolcall_sim.world.run"}}, "reports/ only renders"),
    ({"toolcall_sim.garden.x": {"toolcall_sim.model.core"}}, "a room with no floor"),
])
def test_the_layer_check_can_fail(edge, why):
    found = against_the_layers(edge)
    assert found and why in found[0]
