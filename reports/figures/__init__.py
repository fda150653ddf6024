"""Pictures of runs, counterexamples, explorations and swarms, as deterministic SVG text.

Theory of operation
-------------------
The drivers hand this package plain data (a trace as a list of records, the evidence
indexes of a violation, counts) and get back SVG text to write or to embed in a page;
nothing here runs the model or reads a file but ``__main__``'s own argument. The
pictures:

- ``sequence_svg(trace, title=, highlight=)``: the sequence diagram of one run or one
  counterexample (``sequence``), with the records that prove a violation highlighted;
- ``timeline_svg(trace, title=)``: one row per tool call: attempts, process lifetimes,
  cancels and committed results on a time axis (``timeline``);
- ``depth_svg(states_per_depth, violations, title=)``: an exploration's states per depth
  and the depth at which each violation was found (``charts``);
- ``swarm_svg(per_variant, unknown_share, title=)``: per variant, the count of each
  residual risk or finding and the share of unknown results (``charts``);
- ``risk.double_runs_svg(report)``, ``risk.unknown_share_svg(report)``: a risk sweep's
  rates with exact intervals against the in-flight delay's tail (the contract's age
  margin marked) or the restart rate (``risk``; imported by name, for reports/sweep.py).

Extra keyword arguments of the trace pictures: ``chat_names`` (chat UUID -> the
scenario's name, for labels; a trace names chats by UUID only), ``time_unit_ms`` (the
real ms one trace ms stands for: an explorer counterexample's time and node clocks count
``toolcall_sim.model.explore.Bounds().scale``; both are scaled, so a lane header names only a real
clock skew), and for ``sequence_svg`` ``gap_ms`` (idle gaps longer
than this are folded, default 5 s).

Every function draws inside ``_style.context()`` and saves through ``_style.to_svg``, so
the same input gives the same bytes in any process under any ``PYTHONHASHSEED``
(tests/test_figures.py). ``python -m toolcall_sim.reports.figures TRACE.jsonl OUT.svg [--timeline]``
draws one trace file for a person to look at.
"""

from __future__ import annotations

from .charts import depth_svg, swarm_svg
from .sequence import sequence_svg
from .timeline import timeline_svg

__all__ = ["sequence_svg", "timeline_svg", "depth_svg", "swarm_svg"]
