"""The pure model of the CODAGT-757 contract (the state machines every driver applies).

Loading (setup.py says how the package is built): each module of ``model/`` runs either
as its source or compiled by Cython from that source, the same code either way. This file
is the one place in ``model/`` that reads files, and only to decide which of the two
Python imports: a compiled module is loaded while the SHA-256 of its source is still the
one the build recorded in ``_native.json``; a module whose source changed since (edited in
a checkout installed with ``pip install -e .``), one with no record, and every module when
``TOOLCALL_SIM_PURE`` is ``1``, are loaded from source. ``LOADED`` says, per module, which
it was (``toolcall-sim bench`` prints it). The variable is strict, as TOOLCALL_SIM_PROGRESS is:
unset, empty, ``0`` or ``1``; any other value (``yes``, ``true``, a typo) loads from source
here (an import cannot refuse) and the command line refuses it with one line
(``pure_env_error``, read by ``sim.cli.main``), so no value is accepted in silence.
"""

from __future__ import annotations

import sys
from importlib import machinery, util

LOADED: dict[str, str] = {}  # module name -> "compiled" | "source" (stale, unrecorded or pure)


class _CompiledWhileFresh:
    """A meta path finder ahead of Python's own: for a module of this package that has a
    compiled file beside its source, the compiled one if it is fresh, else the source."""

    def __init__(self, recorded: dict[str, str], pure: bool):
        self.recorded, self.pure = recorded, pure

    def find_spec(self, fullname, path=None, target=None):
        if not fullname.startswith(__name__ + "."):
            return None
        spec = machinery.PathFinder.find_spec(fullname, path)
        if spec is None or spec.submodule_search_locations is not None:
            return spec  # not found, or a package: its __init__.py is never compiled
        if not isinstance(spec.loader, machinery.ExtensionFileLoader):
            LOADED[fullname] = "source"
            return spec
        folder, _ = spec.origin.rsplit("/", 1)
        source = f"{folder}/{fullname.rsplit('.', 1)[1]}.py"
        digest = _digest(source)
        if digest is None:  # a binary left behind by a module since removed
            raise ModuleNotFoundError(f"No module named {fullname!r} (only a compiled file of it: {spec.origin})",
                                      name=fullname)
        if not self.pure and self.recorded.get(fullname) == digest:
            LOADED[fullname] = "compiled"
            return spec
        LOADED[fullname] = "source"
        return util.spec_from_file_location(fullname, source)


PURE_ENV = "TOOLCALL_SIM_PURE"
PURE_VALUES = ("", "0", "1")  # unset or empty: compiled when fresh; 1: every module from source


def pure_env_error() -> str | None:
    """The one line that refuses ``TOOLCALL_SIM_PURE`` when it holds no value of
    ``PURE_VALUES``, else None."""
    import os

    value = os.environ.get(PURE_ENV, "")
    if value in PURE_VALUES:
        return None
    return f"{PURE_ENV}={value!r}: must be 0 or 1 (or unset)"


def _digest(path: str) -> str | None:
    import hashlib

    try:
        with open(path, "rb") as f:
            return hashlib.sha256(f.read()).hexdigest()
    except OSError:
        return None


def _install() -> None:
    import json
    import os

    try:
        with open(os.path.join(os.path.dirname(__file__), "_native.json"), encoding="utf-8") as f:
            recorded = json.load(f)
    except (OSError, ValueError):
        recorded = {}
    if not any(isinstance(f, _CompiledWhileFresh) for f in sys.meta_path):
        # As setup.py reads it: anything but unset, empty or 0 builds and loads no
        # compiled module (an unknown value too, which sim.cli then refuses).
        pure = os.environ.get(PURE_ENV, "") not in ("", "0")
        sys.meta_path.insert(0, _CompiledWhileFresh(recorded, pure))


_install()
