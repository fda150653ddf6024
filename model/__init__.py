"""The pure model of the CODAGT-757 contract (the state machines every driver applies).

Plain Python, run as source: the Cython build it once had gave the explorer 1.14x and
the swarm 1.10x (docs/performance.md, "The model compiled, and why it no longer is"),
far below the 1.5x issue 33 asked of a compiler in the install, and was removed.

The one check here reads the folder, once, at import: a checkout built by that older
install still holds compiled modules (``*.so``) beside the sources, and Python imports
a compiled module ahead of its source, so stale code would run in silence. Their
presence is an ImportError that says how to remove them.
"""

from __future__ import annotations


def _refuse_leftover_binaries() -> None:
    import os
    from importlib.machinery import EXTENSION_SUFFIXES

    here = os.path.dirname(os.path.abspath(__file__))
    for folder, _dirs, files in os.walk(here):
        for name in files:
            if any(name.endswith(suffix) for suffix in EXTENSION_SUFFIXES):
                raise ImportError(f"{os.path.join(folder, name)}: a compiled module left by an older install of "
                                  f"toolcall-sim, which Python would run instead of its source; remove them with "
                                  f"find {here} -name '*.so' -delete")


_refuse_leftover_binaries()
