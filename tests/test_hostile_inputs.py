"""Issue 32's table of hostile inputs: every ``tests/hostile_cases_*.py`` module's
``CASES``, each run by ``tests/hostile.py`` ``run_case`` (no harness error, no hang, bad
input in one line that changes nothing, no file outside the declared outputs touched).

The older table (tests/test_bad_input.py) stays as it is; this one holds the inputs that
issue 32 found, written from its classes (outputs, unbounded sizes, signals, silent
accepts, documented commands) and never before in a test.
"""

from __future__ import annotations

import importlib
from pathlib import Path

import pytest

from hostile import CLASSES, run_case

HERE = Path(__file__).resolve().parent


def _cases():
    cases = []
    for path in sorted(HERE.glob("hostile_cases_*.py")):
        cases.extend(importlib.import_module(path.stem).CASES)
    return cases


CASES = _cases()


def test_the_table_has_at_least_100_inputs_with_unique_ids():
    ids = [c.id for c in CASES]
    assert len(ids) == len(set(ids)), [i for i in ids if ids.count(i) > 1]
    assert len(CASES) >= 100, len(CASES)


def test_every_class_of_the_issue_has_cases():
    seen = {c.cls for c in CASES}
    assert {"output", "unbounded", "silent"} <= seen, seen


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_hostile_input(case, tmp_path, monkeypatch):
    assert case.cls in CLASSES
    run_case(case, tmp_path, monkeypatch)
