"""The one exception for bad input in a file or the environment (``ScenarioError``).

It lives at the bottom of the layers, beside the readers of input files, so that every
layer can raise it: the scenario loader (sim/world/scenario_spec.py re-exports it under
its old home), the progress mode read from the environment (sim/io/progress.py), the
cluster backends. The command line turns it into one line on stderr and exit 2
(sim/cli/main.py)."""


class ScenarioError(Exception):
    """One line: file, field and reason."""
