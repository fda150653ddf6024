"""How every JSON document of the command line is printed.

One function, so that ``--json`` of run, explore and replay are formatted alike: two
spaces of indent and sorted keys (so equal documents are equal bytes), one trailing
newline (so the output is a well-formed text file and one object per run).
"""

from __future__ import annotations

import json


def json_text(doc: dict) -> str:
    """``doc`` as the command line prints it with ``--json``."""
    return json.dumps(doc, indent=2, sort_keys=True) + "\n"
