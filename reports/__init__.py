"""Everything a user reads: the text and JSON the command line prints. Renders, never decides.

Theory of operation
-------------------
The drivers (``sim/commands/*``, ``sim/swarm.py``) run the model and hand this package
plain data: a run's result, an exploration's summary, a replay's outcome, the tables of
the vocabulary. Each module here turns one command's data into the text a person reads
and the JSON a machine reads, and nothing else: no module here runs the model, reads a
scenario file or chooses an exit code. One home for output means the next formats
(Markdown, HTML, JUnit, plots for CI) are new modules beside these, not edits scattered
through the drivers.

Modules: ``run`` (the story of a run, its JSON shape, the determinism check's lines),
``explore`` (the exploration summary and its JSON shape), ``replay`` (a replay's verdict
and its JSON shape), ``listing`` (``toolcall-sim list``), ``swarm`` (the swarm summary),
``json_text`` (how every JSON document is printed); ``architecture`` draws the picture of
docs/architecture.md from the import graph. The folder ``reports/out/`` below this one is where the command line
writes files by default when run from the repository (sim/output.py); it is not versioned.

This module imports nothing: importing a report costs only that report.
"""
