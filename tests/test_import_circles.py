"""Import circles (issue 33: no circle anywhere, imports one way). The graph is the one
docs/architecture.svg draws (reports/architecture.py ``import_graph``: every import
statement of model/ and sim/, read by ``ast``, a package standing for its ``__init__``).

Today's circles are listed in ``KNOWN`` while issue 33's split of sim/ and the model's
seams removes them: a new circle, or a known one that took in another module, fails;
and a known circle that is gone fails too, so the list only ever shrinks (delete its
entry). When ``KNOWN`` is empty the test is the issue's "no circle anywhere"."""

from __future__ import annotations

import networkx as nx

from reports.architecture import import_graph

KNOWN = [
    # Type names under TYPE_CHECKING and the config beside the state it configures.
    {"model.agent.rules", "model.agent.state", "model.agent.store"},
    # system registers the fault and idle handlers that use its constants.
    {"model.faults", "model.idle", "model.system"},
]


def circles() -> list[set[str]]:
    edges, _ = import_graph()
    graph = nx.DiGraph((a, b) for a, targets in edges.items() for b in targets if a != b)
    return [set(c) for c in nx.strongly_connected_components(graph) if len(c) > 1]


def test_no_new_import_circle():
    for circle in circles():
        assert any(circle <= known for known in KNOWN), (
            f"a new import circle (or a known one grown): {sorted(circle)}; issue 33 asks for none")


def test_every_known_circle_still_exists():
    found = circles()
    for known in KNOWN:
        assert known in found, (f"{sorted(known)} is no longer one circle: delete or shrink its entry in "
                                "tests/test_import_circles.py KNOWN")
