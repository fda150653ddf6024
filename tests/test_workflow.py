"""The GitHub workflow (.github/workflows/invariants.yml, issue 15 "Around it") does what
the issue says: it installs with the README's command, runs ``toolcall-sim check`` so its
exit code decides the job, and then, whatever that was, appends ``summary.md`` to the job
summary, uploads the report folder and publishes ``junit.xml``, all from the folder the
check step wrote.

The file is read as YAML (PyYAML, a dependency for this test) and each promise is checked
on the parsed steps. The job summary step's shell is run here against a made-up report, so
its text is tested as a program, not as a string. The check step's command line is parsed
by the real ``toolcall-sim`` parser once the ``check`` command is there.
"""

from __future__ import annotations

import re
import shlex
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from toolcall_sim.cli import main as cli
from toolcall_sim.cli.commands import COMMANDS

ROOT = Path(__file__).resolve().parent.parent
WORKFLOW = ROOT / ".github" / "workflows" / "invariants.yml"
REPORT = "reports/out/check/ci"  # toolcall-sim check's default folder for the suite ci.toml
REPORT_FILES = ("summary.md", "index.html", "junit.xml", "report.json")


@pytest.fixture(scope="module")
def workflow() -> dict:
    return yaml.safe_load(WORKFLOW.read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def job(workflow) -> dict:
    assert list(workflow["jobs"]) == ["invariants", "wheel"]
    return workflow["jobs"]["invariants"]


def test_the_wheel_job_builds_and_runs_the_wheel_in_a_fresh_venv(workflow):
    """The wheel job (issue 33) runs .ci/wheel with a venv of its own (the test of
    tests/test_packaging.py runs the same script offline, beside this machine's packages)."""
    steps = workflow["jobs"]["wheel"]["steps"]
    run = [s for s in steps if s.get("run") == "bash .ci/wheel"]
    assert len(run) == 1 and run[0]["env"] == {"TOOLCALL_SIM_WHEEL_FRESH": "1"}
    assert any(s.get("run") == 'pip install -e ".[ci]"' for s in steps)


def _step(job: dict, uses: str | None = None, runs: str | None = None, starts: str | None = None) -> tuple[int, dict]:
    """The one step that uses the action ``uses``, or whose script holds ``runs``, or
    starts with ``starts``."""
    found = [(i, s) for i, s in enumerate(job["steps"])
             if (uses and s.get("uses", "").split("@")[0] == uses) or (runs and runs in s.get("run", ""))
             or (starts and s.get("run", "").lstrip().startswith(starts))]
    assert len(found) == 1, f"{uses or runs or starts}: {len(found)} steps"
    return found[0]


def readme_install_command() -> str:
    """The install command of the README's "On a fresh machine": the first ``pip install``
    of its code blocks, up to the ``&&`` that chains what runs after it."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    section = text.split("## On a fresh machine", 1)[1].split("\n## ", 1)[0]
    for line in section.splitlines():
        if line.strip().startswith("pip install"):
            return line.split("&&", 1)[0].strip()
    raise AssertionError("the README's 'On a fresh machine' shows no pip install command")


def test_runs_on_pull_requests_and_pushes_to_main(workflow):
    triggers = workflow.get("on", workflow.get(True))  # YAML 1.1 reads a bare `on` as true
    assert "pull_request" in triggers
    assert triggers["push"]["branches"] == ["main"]
    assert workflow["permissions"]["checks"] == "write"  # the JUnit check run


def test_checks_out_and_sets_up_python_311(job):
    checkout, _ = _step(job, uses="actions/checkout")
    setup, step = _step(job, uses="actions/setup-python")
    assert checkout < setup
    assert str(step["with"]["python-version"]) == "3.11"


def test_installs_with_the_readmes_command(job):
    command = readme_install_command()
    assert command == "pip install -e ."  # what the README says today; the step must follow it
    install, step = _step(job, starts="pip install")
    assert step["run"].strip() == command
    check, _ = _step(job, starts="toolcall-sim check")
    assert install < check


def test_the_check_step_decides_the_job(job):
    _, step = _step(job, starts="toolcall-sim check")
    assert "if" not in step and "continue-on-error" not in step  # its exit code is the job's
    argv = shlex.split(step["run"].replace('"$REPORT"', job["env"]["REPORT"]))
    assert argv[:2] == ["toolcall-sim", "check"]
    assert argv[argv.index("--workers") + 1] == "2"
    assert argv[argv.index("--out") + 1] == REPORT
    assert job["env"]["REPORT"] == REPORT


def test_the_report_steps_run_whatever_the_check_said(job):
    check, _ = _step(job, starts="toolcall-sim check")
    summary, summary_step = _step(job, runs="GITHUB_STEP_SUMMARY")
    upload, upload_step = _step(job, uses="actions/upload-artifact")
    junit, junit_step = _step(job, uses="mikepenz/action-junit-report")
    for index, step in ((summary, summary_step), (upload, upload_step), (junit, junit_step)):
        assert index > check and step["if"] == "always()"
    assert upload_step["with"]["path"].rstrip("/") == REPORT
    assert junit_step["with"]["report_paths"] == f"{REPORT}/junit.xml"
    assert junit_step["with"]["require_tests"] is True  # no JUnit file is not a green check
    assert "$REPORT/summary.md" in summary_step["run"]


def test_every_action_is_pinned_to_a_commit():
    uses = [line.strip() for line in WORKFLOW.read_text(encoding="utf-8").splitlines() if "uses:" in line]
    assert len(uses) == 6  # the invariants job 4, the wheel job 2
    for line in uses:
        assert re.fullmatch(r"uses: [\w.-]+/[\w.-]+@[0-9a-f]{40}  # v\d+(\.\d+)*", line), line


@pytest.mark.skipif(shutil.which("bash") is None, reason="no bash to run the step's script with")
@pytest.mark.parametrize("written", [True, False])
def test_the_summary_step_appends_summary_md(job, tmp_path, written):
    """The step's script, run as the runner would (bash -e), on a report that was written
    and on one that was not (the check crashed before writing)."""
    _, step = _step(job, runs="GITHUB_STEP_SUMMARY")
    report = tmp_path / REPORT
    report.mkdir(parents=True)
    table = "| property | contract |\n|---|---|\n| at_most_once | holds |\n"
    if written:
        (report / "summary.md").write_text(table, encoding="utf-8")
    job_summary = tmp_path / "step_summary.md"
    job_summary.write_text("earlier step\n", encoding="utf-8")
    proc = subprocess.run([shutil.which("bash"), "-e", "-c", step["run"]], cwd=tmp_path, capture_output=True,
                          text=True, check=False,
                          env={"REPORT": REPORT, "GITHUB_STEP_SUMMARY": str(job_summary), "PATH": "/usr/bin:/bin"})
    assert proc.returncode == 0, proc.stderr
    appended = job_summary.read_text(encoding="utf-8").removeprefix("earlier step\n")
    if written:
        assert appended == table
    else:
        assert "wrote no reports/out/check/ci/summary.md" in appended


def test_the_report_folder_is_named_as_the_issue_names_its_files():
    """The check step's folder and the files the issue lists: the upload takes the folder,
    the summary and JUnit steps name two of its files."""
    text = WORKFLOW.read_text(encoding="utf-8")
    for name in REPORT_FILES:
        assert name in text


@pytest.mark.skipif("check" not in {c.NAME for c in COMMANDS},
                    reason="toolcall-sim check is not in this tree yet (another branch builds it)")
def test_the_check_step_parses_as_a_command_line(job):
    _, step = _step(job, starts="toolcall-sim check")
    argv = shlex.split(step["run"].replace('"$REPORT"', REPORT))[1:]
    args = cli.parser().parse_args(argv)  # exits 2 on a flag the command does not have
    assert args.command == "check"
