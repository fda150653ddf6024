"""The old import path of model/gocompat/decode.py (Go's encoding/json decoding, as the agent reads bodies).

Theory of operation
-------------------
The decoder moved beside the other Go standard-library twins in model/gocompat/ (issue
13); this module only re-exports its public names so that ``from model import gojson``
and ``from .gojson import ...`` keep working while other branches merge. New code
imports ``model.gocompat.decode``.
"""

from __future__ import annotations

from .gocompat.decode import *  # noqa: F401,F403 (re-exported; decode.__all__ lists them)
from .gocompat.decode import __all__  # noqa: F401
