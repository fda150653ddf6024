"""Rows of the hostile-input table (tests/hostile.py) of issue 32's class "docs":
documented commands do what the docs (README.md, docs/pages/) and ``--help`` say, exit code for exit code, and
the refusals the docs promise are one line, exit 2."""

from pathlib import Path

from hostile import Case

SWARM_FIND = "swarm-7-contract+records-lost-on-new-message"


def _has(*names: str):
    """Rule 5: the run wrote these files (below the case's folder)."""

    def check(tmp: Path) -> None:
        missing = [n for n in names if not (tmp / n).is_file()]
        assert not missing, f"not written: {missing}"

    return check


CASES = [
    # The docs' first race and reading a report: shipped scenarios by name, each exit 0.
    Case("docs: run a shipped story by name under today", ("run", "us10_interrupt_before_start_arrives",
                                                            "--variant", "today"), "docs", expect=0),
    Case("docs: run the known finding's scenario under the contract",
         ("run", "finding_slow_spawn_timed_out", "--variant", "contract"), "docs", expect=0),
    Case("docs: run a residual risk's scenario under the contract",
         ("run", "rr_delayed_retry_across_restart", "--variant", "contract"), "docs", expect=0),
    # A scenario whose expectations are pinned to its seed (seeds = "pinned") passes there.
    Case("docs: a pinned scenario passes at its own seed", ("run", "rr_delayed_cancel_after_restart"), "docs",
         expect=0),
    Case("docs: a pinned scenario passes at its seed given", ("run", "triggers_on_commit_and_response",
                                                               "--seed", "12"), "docs", expect=0),
    Case("docs: list prints the vocabulary", ("list",), "docs", expect=0),
    Case("docs: run --help", ("run", "--help"), "docs", expect=0),
    # The docs' exploring tutorial: the documented exit 1, files written.
    Case("docs: explore today finds at_most_once", ("explore", "--world", "default", "--variant", "today",
                                                    "--property", "at_most_once", "--out", "{tmp}/out"),
         "docs", expect=1, writes=("out",), check=_has("out/today-at_most_once.json")),
    Case("docs: swarm seed 7 under a planted bug exits 1 with its files",
         ("swarm", "--seeds", "1", "--first-seed", "7", "--variant", "contract+records-lost-on-new-message",
          "--out", "{tmp}/out"), "docs", expect=1, writes=("out",),
         check=_has(f"out/{SWARM_FIND}.toml", f"out/{SWARM_FIND}.json")),
    Case("docs: swarm under the contract exits 0", ("swarm", "--seeds", "3", "--quiet", "--out", "{tmp}/out"),
         "docs", expect=0, writes=("out",)),
    # Refusals the help texts document.
    Case("docs: run --until past the 168h cap", ("run", "smoke_retry", "--until", "169h"), "docs",
         needle="168h"),
    Case("docs: run --variant unknown", ("run", "smoke_retry", "--variant", "tomorrow"), "docs", needle="tomorrow"),
    Case("docs: explore --world not among the choices", ("explore", "--world", "nope"), "docs", needle="nope"),
    Case("docs: replay a file that does not exist", ("replay", "{tmp}/nothing.json"), "docs",
         needle="nothing.json"),
]
