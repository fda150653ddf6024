"""Everything a user reads: the text and JSON the command line prints. Renders, never decides.

Theory of operation
-------------------
The drivers (``sim/cli/commands/*``, ``sim/drivers/swarm.py``) run the model and hand this package
plain data: a run's result, an exploration's summary, a replay's outcome, the tables of
the vocabulary, a check suite's report. Each module here turns one command's data into the
text a person reads, the JSON a machine reads, or the pages and pictures CI publishes,
and nothing else: no module here runs the model, reads a scenario file or chooses an
exit code.

Modules: ``run`` (the story of a run, its JSON shape, the determinism check's lines),
``explore`` (the exploration summary and its JSON shape), ``replay`` (a replay's verdict
and its JSON shape), ``listing`` (``toolcall-sim list``), ``swarm`` (the swarm summary),
``bench`` (``toolcall-sim bench``'s table), ``scenario_test`` (the sentences of races run
as pytest tests), ``json_text`` (how every JSON document is printed). For
``toolcall-sim check`` and the ``--report DIR`` page of ``run``, ``explore`` and
``replay`` (one renderer for both: sim/ci/check.py hands over the same report document):
``check_markdown`` (``summary.md`` for a CI job summary, and the lines on a terminal),
``check_html`` (``index.html``: one self-contained page with every picture embedded),
``junit`` (``junit.xml``), and the package ``figures`` (matplotlib pictures as
deterministic SVG: sequence diagrams, per-call timelines, the explorer's states per depth,
the swarm's residual risks). ``architecture`` draws the picture of docs/architecture.md
from the import graph. The folder ``reports/out/`` below this one is where the command line
writes files by default when run from the repository (sim/io/output.py); it is not versioned.

This module imports nothing: importing a report costs only that report.
"""
