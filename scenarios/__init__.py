"""Scenario files (TOML) that read like stories; see scenarios/README.md.

``SHIPPED_DIR`` is this folder wherever the package is installed (a checkout's
``scenarios/``, or ``toolcall_sim/scenarios/`` in site-packages): every module that
looks up a shipped scenario, suite or sweep starts from it, never from its own path."""

from pathlib import Path

SHIPPED_DIR = Path(__file__).resolve().parent
