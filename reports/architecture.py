"""Draws docs/architecture.svg: which module of model/ and sim/ imports which.

Theory of operation
-------------------
The picture is derived, never drawn by hand, so it cannot drift from the code: the
script parses every ``.py`` file under ``model/`` and ``sim/`` with ``ast`` (nothing is
imported or run), resolves relative imports, and keeps the edges between modules of the
two packages (a package's ``__init__`` stands for the package). Modules are placed in
layers by their depth in the import graph: a module sits one layer right of the deepest
module it imports, so the pure core (``toolcall_sim.model.core``) is at the left and the command
line at the right; within a layer modules are sorted by name. The node states that
``toolcall_sim.model.system.apply`` threads through a step (the frozen ``*State``, ``System`` and
``Db`` classes, found the same way) are listed in a box beside the graph.

The output is byte-identical from run to run and machine to machine with the same
matplotlib: no random layout, a fixed SVG hash salt, and no date in the metadata.

    python -m toolcall_sim.reports.architecture              # writes docs/architecture.svg
    python -m toolcall_sim.reports.architecture OUT.svg      # writes elsewhere (tests use this)
"""

from __future__ import annotations

import ast
import pathlib
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
# A checkout's folders and the import package each is installed as (pyproject.toml's
# package-dir): sim/ is the root of ``toolcall_sim``, the others its subpackages.
FOLDERS = {"sim": "toolcall_sim", "model": "toolcall_sim.model", "reports": "toolcall_sim.reports",
           "scenarios": "toolcall_sim.scenarios"}
PACKAGES = ("model", "sim")  # what the picture draws; the layer tests read reports/ too
DEFAULT_OUT = ROOT / "docs" / "architecture.svg"
# Classes a step carries from one state to the next, by name: what the state box lists.
STATE_CLASS_SUFFIXES = ("State", "System", "Db", "Chat", "Runner", "Task")


def module_name(path: pathlib.Path, root: pathlib.Path = ROOT) -> str:
    """The installed name of a checkout's file: sim/world/run.py is ``toolcall_sim.world.run``."""
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join([FOLDERS[parts[0]], *parts[1:]])


def _resolve(current: str, is_package: bool, node: ast.ImportFrom, known) -> list[str]:
    """Absolute module names an ``import``-from statement imports: each imported name
    that is a module (``from . import agent``), else the module it is taken from."""
    if node.level:
        base = current.split(".")
        if not is_package:
            base = base[:-1]
        base = base[: len(base) - (node.level - 1)]
        prefix = ".".join(base + ([node.module] if node.module else []))
    else:
        prefix = node.module or ""
    return [f"{prefix}.{a.name}" if f"{prefix}.{a.name}" in known else prefix for a in node.names]


def import_graph(root: pathlib.Path = ROOT, packages: tuple[str, ...] = PACKAGES
                 ) -> tuple[dict[str, set[str]], dict[str, list[str]]]:
    """(module -> modules of the folders ``packages`` it imports, module -> state classes)."""
    files = sorted(p for pkg in packages for p in (root / pkg).rglob("*.py"))
    names = {module_name(p, root): p for p in files}
    edges: dict[str, set[str]] = {name: set() for name in names}
    states: dict[str, list[str]] = {}
    for name, path in names.items():
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        is_package = path.name == "__init__.py"
        for node in ast.walk(tree):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                targets = _resolve(name, is_package, node, names)
            for target in targets:
                # The longest known module that the target names (``toolcall_sim.model.core.Truth`` is
                # ``toolcall_sim.model.core``).
                while target and target not in names:
                    target = target.rpartition(".")[0]
                if target and target != name:
                    edges[name].add(target)
        found = [n.name for n in tree.body if isinstance(n, ast.ClassDef) and n.name.endswith(STATE_CLASS_SUFFIXES)]
        if found:
            states[name] = found
    return edges, states


def layers(edges: dict[str, set[str]]) -> dict[str, int]:
    """Depth of each module: 0 imports nothing of ours, else 1 + the deepest import.
    Import cycles (a package and its submodules) count each module once."""
    depth: dict[str, int] = {}

    def visit(name: str, stack: tuple[str, ...]) -> int:
        if name in depth:
            return depth[name]
        below = [visit(t, stack + (name,)) for t in sorted(edges[name]) if t not in stack]
        depth[name] = 1 + max(below) if below else 0
        return depth[name]

    for name in sorted(edges):
        visit(name, ())
    return depth


def draw(out: pathlib.Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import networkx as nx

    matplotlib.rcParams["svg.hashsalt"] = "toolcall-sim"
    edges, states = import_graph()
    depth = layers(edges)
    graph = nx.DiGraph()
    for name in sorted(edges):
        graph.add_node(name)
    for name in sorted(edges):
        for target in sorted(edges[name]):
            graph.add_edge(name, target)
    rows: dict[int, list[str]] = {}
    for name in sorted(edges):
        rows.setdefault(depth[name], []).append(name)
    # Layers run left to right (imported modules on the left); a layer's modules stack.
    pos = {}
    for level, names in rows.items():
        for i, name in enumerate(names):
            pos[name] = (level * 2.0, (i - (len(names) - 1) / 2) * 1.4)
    colors = ["#cfe3f7" if n.startswith("toolcall_sim.model") else "#f7e1c8" for n in graph.nodes]
    labels = {n: n.removeprefix("toolcall_sim.") for n in graph.nodes}
    fig, ax = plt.subplots(figsize=(26, 9))
    nx.draw_networkx_edges(graph, pos, ax=ax, edge_color="#9a9a9a", arrows=True, arrowsize=8, width=0.6,
                           node_size=3600, connectionstyle="arc3,rad=0.04")
    nx.draw_networkx_nodes(graph, pos, ax=ax, node_color=colors, node_size=3600, node_shape="s",
                           edgecolors="#555555", linewidths=0.6)
    nx.draw_networkx_labels(graph, pos, labels=labels, ax=ax, font_size=7)
    text = "States a step threads through apply:\n" + "\n".join(
        f"{name}: {', '.join(found)}" for name, found in sorted(states.items()))
    ax.text(0.995, 0.98, text, transform=ax.transAxes, va="top", ha="right", fontsize=7, family="monospace",
            bbox={"facecolor": "white", "edgecolor": "#999999"})
    ax.set_title("toolcall-sim: imports between modules (blue: model/, pure; orange: sim/, drivers); "
                 "an arrow points to the module imported", fontsize=10)
    ax.axis("off")
    fig.tight_layout()
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, format="svg", metadata={"Date": None})
    plt.close(fig)


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    usage = "usage: python -m toolcall_sim.reports.architecture [OUT.svg]"
    if args in (["-h"], ["--help"]):
        print(usage + "\n\nDraw the module map (default docs/architecture.svg).")
        return 0
    # An option is never a file name: without this, "--help" or a typo'd flag became the
    # name of the SVG written.
    if len(args) > 1 or (args and (args[0].startswith("-") or not args[0].endswith(".svg"))):
        print(usage, file=sys.stderr)
        return 2
    out = pathlib.Path(args[0]) if args else DEFAULT_OUT
    draw(out)
    print(out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
