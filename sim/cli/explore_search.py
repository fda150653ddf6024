"""The search behind ``toolcall-sim explore``, shared by a named world and a scenario file.

Theory of operation
-------------------
``explore --world NAME`` (sim/cli/commands/explore.py) and ``explore SCENARIO.toml``
(sim/cli/explore_scenario.py) build different worlds and then do the same things, here
once: check the integer flags (``check_sizes``), the stopping rule (``stop_rule``) and
the reductions (``reductions``, ``reduction_flag``),
run the search with its progress bar and Ctrl-C recorded, not raised (``search``), save
each violation's shortest path as a counterexample and as a scenario ``run`` replays
(``save_counterexamples``, ``save_one``: the tour's too) and draw the state graph
(``write_graph``).
"""

from __future__ import annotations

import json
import time

from toolcall_sim.io.output import sigint_flag, write_atomic, write_together
from toolcall_sim.io.progress import Progress
from toolcall_sim.reports import explore as report
from toolcall_sim.world.inputs import MAX_FAULT_BUDGET, MAX_STATES, MAX_WORKERS, check_range
from toolcall_sim.world.scenario import ScenarioError

PROGRESS_STATES = 5_000  # states between progress lines of explore (TOOLCALL_SIM_PROGRESS=lines)


def search(args, variant: str, config, bounds, max_states: int, stop_on):
    """One search as the flags ask (``--workers``, ``--graph``, the progress bar), with
    Ctrl-C recorded, not raised: (result, interrupted, seconds). Wall-clock time is read
    here only to report speed; it never enters a run."""
    from toolcall_sim.model import explore as ex

    bar = Progress.for_command(args, f"explore {variant}", max_states, unit="states", every=PROGRESS_STATES,
                               line=lambda states, _total, _what: report.progress_line(states))
    started = time.perf_counter()
    with sigint_flag() as interrupted, bar as show:

        def progress(states: int) -> bool:
            show(states)
            return interrupted()
        if args.workers > 1:
            from toolcall_sim.drivers.explore_parallel import explore as explore_parallel

            result = explore_parallel(config, bounds, max_states=max_states, stop_on=stop_on,
                                      on_progress=progress, workers=args.workers)
        else:
            result = ex.explore(config, bounds, max_states=max_states, keep_edges=bool(args.graph),
                                stop_on=stop_on, on_progress=progress)
        was_interrupted = interrupted()
        if not was_interrupted:
            show.finish()
    return result, was_interrupted, max(time.perf_counter() - started, 1e-9)

def save_counterexamples(result, out_dir, prefix: str, variant: str, world: dict) -> list[dict]:
    """Each violation's shortest path as a counterexample file in ``out_dir``, named
    ``<prefix><variant>-<property>[-<risk>].json``, and its scenario beside it
    (``save_one``); their JSON rows."""
    violations = []
    for v in sorted(result.violations, key=lambda v: (v.property, v.residual_risk or "")):
        name = v.property + (f"-{v.residual_risk}" if v.residual_risk else "")
        violations.append(save_one(out_dir / f"{prefix}{variant.replace('+', '_')}-{name}.json", world, v))
    return violations

def save_one(path, world: dict, v) -> dict:
    """Violation ``v``'s path as the counterexample file ``path`` (``replay`` reads it) and,
    next to it as ``.toml``, the scenario ``run`` replays (sim/world/replay_write.py),
    written together or not at all (sim/io/output.py Rule 1); its JSON row. A ``.toml``
    there that explore did not write (its first line is not ``MARKER``) is never
    replaced: the counterexample file is written alone, and the row says why, as it does
    for a path no scenario file can tell."""
    from pathlib import Path

    from toolcall_sim.drivers import counterexample as cx
    from toolcall_sim.world import replay_write as sr

    path = Path(path)
    text = cx.actions_document(world, v.property, v.residual_risk, v.path, "explore", v.detail)
    toml_path = path.with_suffix(".toml")
    ours = _ours_or_absent(toml_path)
    try:
        if not ours:
            raise sr.NotWritten(f"{toml_path} is there and explore did not write it (move it, or give another --out)")
        scenario = sr.document(world, v.property, v.residual_risk, v.detail, v.path)
    except Exception as err:
        write_atomic(path, text)  # (the search's finding is kept whatever the scenario's fate)
        if ours and toml_path.exists():
            toml_path.unlink()  # an earlier search's scenario would no longer match this counterexample
        if not isinstance(err, sr.NotWritten):
            raise
        return report.violation_json(v, str(path), not_written=str(err))
    write_together({path: text, toml_path: scenario})
    return report.violation_json(v, str(path), str(toml_path))

def _ours_or_absent(path) -> bool:
    """Nothing is at ``path``, or a file whose first line says explore wrote it."""
    from toolcall_sim.world.scenario_replay import MARKER

    if not path.exists() and not path.is_symlink():
        return True
    try:
        with open(path, "rb") as f:
            return path.is_file() and f.readline(len(MARKER) + 1).decode("utf-8", "replace").startswith(MARKER)
    except OSError:
        return False

def reductions(args) -> dict:
    """``--reduction`` (or ``--no-reduction``) as the ``Bounds`` fields it sets."""
    from toolcall_sim.model.explore import REDUCTIONS

    symmetry, partial_order = REDUCTIONS[reduction_of(args)]
    return {"symmetry": symmetry, "partial_order": partial_order}


def reduction_flag(args) -> str:
    """The flag a repeated search needs to take the same reductions ("" for the default)."""
    which = reduction_of(args)
    return {"all": "", "none": " --no-reduction"}.get(which, f" --reduction {which}")


def reduction_of(args) -> str:
    """``--reduction``'s choice; "all" when neither it nor ``--no-reduction`` is given."""
    return args.reduction or "all"


def check_sizes(args, max_states: int) -> None:
    """The integer flags of one world and of the tour alike, each within its range
    (sim/world/inputs.py): the state cap, each fault budget (one per ``ex.BUDGETS``),
    the workers."""
    from toolcall_sim.model import explore as ex

    check_range(max_states, "--max-states", 1, MAX_STATES)
    for budget in ex.BUDGETS:
        check_range(getattr(args, budget), f"--{budget.replace('_', '-')}", 0, MAX_FAULT_BUDGET)
    check_range(args.workers, "--workers", 1, MAX_WORKERS)

def stop_rule(at_first: bool, wanted: list[str]):
    """When the search may stop early (None: never before it is exhausted). Breadth-first
    order makes every counterexample found so far a shortest one, so stopping loses none."""
    from toolcall_sim.model import properties as props

    unknown = [p for p in wanted if p not in {q.name for q in props.PROPERTIES}]
    if unknown:
        raise ScenarioError(f"--property: unknown property {unknown[0]!r} (toolcall-sim list shows them)")
    if at_first:
        return lambda found: True
    if not wanted:
        return None
    seen: set[str] = set()

    def every_wanted_found(found) -> bool:
        if found.property in wanted:
            seen.add(found.property)
        return seen == set(wanted)
    return every_wanted_found

def write_graph(edges, path: str) -> None:
    """The explored state graph: DOT for a ``.dot`` file, else GraphML (for networkx)."""
    import networkx as nx

    graph = nx.DiGraph()
    for a, b, label in edges:
        graph.add_edge(a[:12], b[:12], label=label)
    if path.endswith(".dot"):
        lines = ["digraph explore {"]
        for a, b, data in graph.edges(data=True):
            lines.append(f'  "{a}" -> "{b}" [label={json.dumps(data["label"])}];')
        lines.append("}")
        write_atomic(path, "\n".join(lines) + "\n")
    else:
        write_atomic(path, "".join(line + "\n" for line in nx.generate_graphml(graph)))
