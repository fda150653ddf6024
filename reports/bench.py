"""``toolcall-sim bench``'s text: issue 14's table as measured in this run.

Theory of operation
-------------------
sim/ci/bench.py measures and returns plain values, one dict per row of the issue's table,
each with its baseline, ratio and goals (``met`` is true, false, or None when the run
cannot judge it, e.g. the time to exhaust a space of which --quick explores a prefix).
This module writes what a user reads: the ``--help`` description, the progress line on
stderr, and per row what was measured, the baseline, the ratio and each goal beside it.
The JSON is the measurements' own dict (reports/json_text.py prints it).
"""

from __future__ import annotations

DESCRIPTION = """\
Measure each row of issue 14's table with its baseline in the same run and print the
ratio and the goal beside it: the explorer over the default world (against a plain Python
BFS over a counter system), the 1 s world (seconds and bytes per state), every planted
bug with every budget at 1 (seconds to its first counterexample), the 9 h incident
simulation (against a raw simpy loop) and the swarm (against a toy control-plane
simulation in simpy; and --workers 2 against 1). Issue 36's rows: reduction (every
small world with three replicas, every budget at 1, at 0 s and 1 s in flight: states of
the unreduced search, symmetry alone and both reductions (symmetry and partial order),
their ratios, seconds (and CPU seconds, which say how much of a shared machine each
search had) and bytes per state each) and largest_world (a ladder of ever larger variants of issue 36's goal
world, up to the goal and one rung beyond it, each stopped after 10 minutes: the
largest exhausted, and how far the next got).
--rows picks rows (e.g. --rows reduction,largest_world).

The explorer rows run each search with 1 process and with 2 (--workers 2: the same
search, state for state) and show both; the faster decides the goal. The default and
1s worlds' searches each run alone in a fresh process. Beside the default world, not
judged, its ceiling: the same search again with every expansion already in memory,
what the search's own bookkeeping allows with the model's steps free. The full bench
exhausts the --max-in-flight 1s world twice (329,000 states) and runs all 15 planted
bugs twice: 1.5-3 minutes, by how fast the host is; issue 36's two rows add up to
5 minutes a reduction search and 10 a ladder rung (--rows leaves them out). --quick
measures prefixes, three bugs and the smallest world's reduction (10-30 s); its bytes
per state are those of a prefix, whose frontier (whole states, not yet only keys) is a
larger part.
Figures are wall-clock on whatever else the machine is doing: read the ratios. Exit
status 0 unless the bench itself failed; a goal not met is reported, not an error."""

_TITLES = {
    "baseline": "baseline: plain BFS over a counter system",
    "explorer_default": "explorer, default world",
    "explorer_1s": "explorer, --max-in-flight 1s",
    "planted_bugs": "planted bugs, every budget at 1",
    "incident": "9 h incident simulation",
    "swarm": "swarm",
    "reduction": "reduction, three replicas, every budget at 1",
    "largest_world": "largest world exhausted (issue 36's goal world ladder)",
}


def progress_line(row: str) -> str:
    """The stderr line as a row starts."""
    return f"  ... bench: {_TITLES.get(row, row)}\n"


def _rate(x: float) -> str:
    return f"{x / 1000:.1f} k" if x >= 1000 else f"{x:.1f}"


def _goals(row: dict) -> str:
    said = {True: "met", False: "NOT met", None: "not judged here"}
    return "; ".join(f"{g['goal']}: {said[g['met']]}" for g in row["goals"])


def _extent(row: dict) -> str:
    if row["exhausted"]:
        return "exhausted"
    return f"a prefix of {row['max_states']:,} states" if row["max_states"] else "not exhausted"


def _processes(n: int) -> str:
    return f"{n} process" + ("es" if n != 1 else "")


def _explorer_default(row: dict) -> list[str]:
    each = ", ".join(f"{_rate(r['states_per_s'])}/s with {_processes(r['workers'])}" for r in row["by_workers"])
    return [f"  measured  {_rate(row['states_per_s'])} distinct states/s ({row['states']:,} states in "
            f"{row['seconds']:.2f} s with {_processes(row['workers'])}, {_extent(row)}; {each})",
            f"  ceiling   the same search again, every expansion already in memory: "
            f"{_rate(row['ceiling_states_per_s'])} states/s ({row['ceiling_ratio']:.3g}x of the BFS; "
            f"the search's own work without the model's steps, not judged)",
            f"  baseline  plain Python BFS with hashing: {_rate(row['baseline_states_per_s'])} states/s",
            f"  ratio     {row['ratio']:.3g}x"]


def _explorer_1s(row: dict) -> list[str]:
    return [f"  measured  {row['states']:,} states in {row['seconds']:.1f} s ({_extent(row)}, "
            f"{_processes(row['workers'])}; {row['seconds_1_worker']:.1f} s with 1), {_rate(row['states_per_s'])} "
            f"states/s, {row['bytes_per_state']:,.0f} bytes per state ({row['memory_method']})",
            f"  baseline  plain Python BFS with hashing: {_rate(row['baseline_states_per_s'])} states/s",
            f"  ratio     {row['ratio']:.3g}x"]


def _planted_bugs(row: dict, mode: str) -> list[str]:
    lines = [f"  measured  {len(row['bugs'])} bug(s){'' if row['every_bug'] else ' (not all of them: ' + mode + ')'}, "
             f"slowest {row['slowest_seconds']:.1f} s; {_rate(row['states_per_s'])} states/s over all"]
    for b in row["bugs"]:
        each = "/".join(f"{x:.2f}" for x in b["seconds_by_workers"])
        lines.append(f"    {b['bug']:<34} {b['seconds']:7.2f} s {b['states']:>8,} states  {b['world']:<13} "
                     f"{b['property'] if b['found'] else 'NOT FOUND: ' + b['property']}  ({each} s with 1/2 "
                     "processes)")
    lines += [f"  baseline  plain Python BFS with hashing: {_rate(row['baseline_states_per_s'])} states/s",
              f"  ratio     {row['ratio']:.3g}x"]
    return lines


def _incident(row: dict) -> list[str]:
    return [f"  measured  {row['seconds']:.3f} s for {row['simulated_hours']:g} simulated hours of {row['scenario']} "
            f"under {row['variant']}: {row['steps']:,} model steps ({_rate(row['steps_per_s'])}/s; fastest of "
            f"{row['repeats']} runs, as is the baseline's)",
            f"  baseline  raw simpy loop of {row['steps']:,} timeouts: {row['baseline_seconds']:.3f} s "
            f"({_rate(row['baseline_events_per_s'])} events/s)",
            f"  ratio     {row['ratio']:.3g}x (our steps/s over raw simpy's events/s)"]


_STARTED = {"fork": "forked", "spawn": "spawned", "forkserver": "forkserver"}


def _swarm(row: dict) -> list[str]:
    return [f"  measured  {row['per_core_per_s']:.1f} whole simulations/s per core ({row['seeds']} seeds under "
            f"{row['variant']} in {row['seconds']:.2f} s"
            f"{', fastest of ' + str(row['repeats']) + ' passes' if row['repeats'] > 1 else ''})",
            f"            --workers 2: {row['speedup_2_workers']:.2f}x ({row['workers_seeds']:,} seeds: "
            f"{row['workers1_seconds']:.2f} s -> {row['workers2_seconds']:.2f} s"
            f"{', fastest of ' + str(row['workers_repeats']) if row['workers_repeats'] > 1 else ''}, "
            f"{_STARTED.get(row['workers_start_method'], row['workers_start_method'])} workers, their start-up "
            f"included; load average {row['workers_load_average_1m']} before)",
            f"  baseline  toy control-plane simulation in simpy: {_rate(row['baseline_toy_per_s'])}/s "
            f"({row['baseline_toy_runs']} runs{', fastest of ' + str(row['repeats']) + ' passes' if row['repeats'] > 1 else ''})",
            f"  ratio     {row['ratio']:.3g}x"]


def _search(m: dict) -> str:
    extent = "exhausted" if m["exhausted"] else "at the cap"
    return (f"{m['states']:>9,} states {m['seconds']:7.1f} s ({m['cpu_seconds']:.1f} s CPU) "
            f"{m['bytes_per_state']:>7,.0f} B/state ({extent})")


def _reduction(row: dict) -> list[str]:
    caps = f"{row['cap_s']:g} s" + (f" or {row['max_states']:,} states" if row["max_states"] else "")
    ratio = f"{row['states_ratio']:.3g}x fewer states" if row["states_ratio"] else "no pair exhausted"
    lines = [f"  measured  {ratio} over the {row['exhausted_pairs']} of {len(row['searches'])} pairs both "
             f"exhausted; each search alone, capped at {caps}; bytes: {row['memory_method']}",
             f"            by: {', '.join(row['reductions'])}"]
    for r in row["searches"]:
        each = (f"{r['states_ratio']:.3g}x states, {r['seconds_ratio']:.3g}x time" if r["states_ratio"]
                else "no ratio: not both exhausted")
        por = (f"; partial order {r['partial_order_ratio']:.3g}x states over symmetry alone"
               if r.get("partial_order_ratio") else "")
        lines += [f"    {r['world']:<13} {r['max_in_flight_ms']} s in flight: {each}{por}",
                  f"      unreduced {_search(r['unreduced'])}",
                  f"      symmetry  {_search(r['symmetry'])}",
                  f"      reduced   {_search(r['reduced'])}"]
    lines += [f"  baseline  plain Python BFS with hashing: {_rate(row['baseline_states_per_s'])} states/s "
              f"(the reduced searches exhausted: {_rate(row['states_per_s'])} states/s)",
              f"  ratio     {row['ratio']:.3g}x"]
    return lines


def _largest_world(row: dict) -> list[str]:
    caps = f"{row['cap_s']:g} s" + (f" or {row['max_states']:,} states" if row["max_states"] else "")
    lines = [f"  measured  world {row['world']}, each rung alone with {_processes(row['workers'])}, capped at {caps}; "
             f"load average {row['load_average_1m']} before; bytes: {row['memory_method']}"]
    for r in row["rungs"]:
        lines.append(f"    {_search(r)}  {r['rung']}")
    largest, beyond = row["largest"], row["not_exhausted"]
    lines.append("  largest   " + (f"{largest['rung']}: {largest['states']:,} states in {largest['seconds']:.1f} s"
                                   if largest else "no rung exhausted"))
    if beyond:
        lines.append(f"  stopped   {beyond['rung']}: {beyond['states']:,} states at the cap ({beyond['seconds']:.1f} s)")
    lines += [f"  baseline  plain Python BFS with hashing: {_rate(row['baseline_states_per_s'])} states/s "
              f"(the largest rung: {_rate(row['states_per_s'])} states/s)",
              f"  ratio     {row['ratio']:.3g}x"]
    return lines


_ROWS = {"explorer_default": _explorer_default, "explorer_1s": _explorer_1s, "planted_bugs": _planted_bugs,
         "incident": _incident, "swarm": _swarm, "reduction": _reduction, "largest_world": _largest_world}


def text(doc: dict) -> str:
    """The whole bench as a user reads it."""
    m = doc["machine"]
    b = doc["baseline_bfs"]
    lines = [f"toolcall-sim bench ({doc['mode']}): {m['cpus']} CPUs, {m['implementation']} {m['python']}, "
             f"load average {m['load_average_1m']} at the start; wall-clock figures, every baseline run in this "
             "bench",
             f"baseline BFS: {b['states']:,} states in {b['seconds']:.2f} s ({_rate(b['states_per_s'])} states/s)"]
    met = 0
    goals = 0
    for row in doc["rows"]:
        rendered = _planted_bugs(row, doc["mode"]) if row["name"] == "planted_bugs" else _ROWS[row["name"]](row)
        lines += ["", _TITLES[row["name"]]] + rendered + [f"  goal      {_goals(row)}"]
        goals += len(row["goals"])
        met += sum(1 for g in row["goals"] if g["met"])
    lines += ["", f"{met} of {goals} goals met"]
    return "\n".join(lines) + "\n"
