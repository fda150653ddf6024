"""No import circle anywhere (issue 33). The graph is the one docs/architecture.svg draws
(toolcall_sim/reports/architecture.py ``import_graph``: every import statement of model/,
sim/, reports/ and scenarios/, read by ``ast``, lazy imports inside functions and
``TYPE_CHECKING`` blocks included, a package standing for its ``__init__``). A package
importing its own submodules (``model.agent`` re-exporting its parts) is no circle unless a
submodule imports the package back.

The last circles went with the split of sim/ into rooms (tests/test_layers.py) and two
seams in the model: model/builder.py holds the world's state and effect builder that
model/system.py's interpreter, model/faults.py and model/idle.py share, and
model/agent/state.py names ``AgentConfig`` in annotations only."""

from __future__ import annotations

import networkx as nx

from toolcall_sim.reports.architecture import import_graph


def circles(edges: dict[str, set[str]]) -> list[list[str]]:
    graph = nx.DiGraph((a, b) for a, targets in edges.items() for b in targets if a != b)
    return [sorted(c) for c in nx.strongly_connected_components(graph) if len(c) > 1]


def test_no_import_circle_anywhere():
    edges, _ = import_graph(packages=("model", "sim", "reports", "scenarios"))
    assert len(edges) > 100  # the walk read every module: not vacuous
    assert circles(edges) == []


def test_the_circle_check_can_fail():
    edges = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert circles(edges) == [["a", "b", "c"]]
