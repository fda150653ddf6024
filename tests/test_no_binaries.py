"""model/ runs as source only (issue 33: no compiler in the install): a compiled module
an older install left beside the sources, which Python would import ahead of its source,
makes importing the model fail with one line that says how to remove it."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tomllib
from importlib.machinery import EXTENSION_SUFFIXES
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_a_leftover_compiled_module_is_refused(tmp_path):
    shutil.copytree(ROOT / "model", tmp_path / "model", ignore=shutil.ignore_patterns("__pycache__"))
    (tmp_path / "model" / f"identity{EXTENSION_SUFFIXES[0]}").write_bytes(b"stale")
    proc = subprocess.run([sys.executable, "-c", "import model"], cwd=tmp_path, capture_output=True, text=True,
                          env=dict(os.environ, PYTHONPATH=str(tmp_path)), check=False)
    assert proc.returncode != 0
    assert "a compiled module left by an older install" in proc.stderr and "-delete" in proc.stderr


def test_the_install_builds_nothing():
    requires = tomllib.loads((ROOT / "pyproject.toml").read_text())["build-system"]["requires"]
    assert not [r for r in requires if not r.startswith("setuptools")], requires
    assert not (ROOT / "setup.py").exists()
