"""One import package, installable anywhere (issue 33): pyproject.toml maps the
checkout's folders into ``toolcall_sim`` (sim/ its root; model/, reports/, scenarios/ its
subpackages) and lists every package; the wheel holds ``toolcall_sim`` alone and, installed
non-editable into a venv, gives the checkout's trace hashes (.ci/wheel, which the GitHub
workflow's wheel job runs in a fresh venv)."""

from __future__ import annotations

import pathlib
import subprocess
import tomllib

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
FOLDERS = {"sim": "toolcall_sim", "model": "toolcall_sim.model", "reports": "toolcall_sim.reports",
           "scenarios": "toolcall_sim.scenarios"}


def setuptools_table() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]


def test_every_folder_is_mapped_into_toolcall_sim():
    assert setuptools_table()["package-dir"] == {name: folder for folder, name in FOLDERS.items()}


def test_every_package_of_the_checkout_is_listed_and_nothing_else():
    found = set()
    for folder, name in FOLDERS.items():
        for init in (ROOT / folder).rglob("__init__.py"):
            if "__pycache__" not in init.parts:
                rel = init.parent.relative_to(ROOT / folder).parts
                found.add(".".join([name, *rel]))
    assert set(setuptools_table()["packages"]) == found


def test_the_installed_names_are_ours_only():
    """What an installed project puts at the top of site-packages is ``toolcall_sim``;
    the script, ``python -m`` and the pytest plugin all go through it."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert project["scripts"] == {"toolcall-sim": "toolcall_sim.cli.launch:main"}
    assert project["entry-points"]["pytest11"] == {"toolcall_sim": "toolcall_sim.pytest_plugin"}
    assert (ROOT / "sim" / "__main__.py").exists()


@pytest.mark.slow
def test_the_wheel_installs_toolcall_sim_alone_and_gives_the_same_hashes():
    try:
        import build  # noqa: F401
    except ImportError:
        pytest.fail('the wheel is built with `build`, one of the ci extras: pip install -e ".[ci]"')
    done = subprocess.run(["bash", str(ROOT / ".ci" / "wheel")], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "installs toolcall_sim alone; 5 trace hashes equal the checkout's" in done.stdout
