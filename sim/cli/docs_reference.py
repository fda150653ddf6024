"""The reference part of the documentation site, generated from the code.

Theory of operation
-------------------
The documentation site (docs/mkdocs.yml) has four parts; its reference is not written by
hand but read from the tables the code runs on, at build time, by the MkDocs hook
docs/hooks.py, so it can never go stale and is never committed:

- ``reference/commands.md``: every subcommand's ``--help``, from the argparse parser
  (``toolcall_sim.cli.main.parser``);
- ``reference/exit-codes.md``: the exit codes of the command line's docstring, which is
  also ``toolcall-sim --help``;
- ``reference/vocabulary.md``: every word a scenario file may use (model/vocabulary.py);
- ``reference/properties.md``, ``reference/variants.md`` (the chatd variants, the
  designs of model/designs.py and the planted bugs of model/planted_bugs.py) and
  ``reference/residual-risks.md`` (model/properties/risks.py and the classifier table
  that recognises each class);
- ``reference/sweep-parameters.md``: the parameters a risk sweep may set (sim/ci/sweep.py).

Rule 1. A page is a pure function of the code: the same bytes in any process, under any
        ``PYTHONHASHSEED`` and any terminal width (``--help`` is formatted at a fixed 80
        columns, not the terminal's), so a test compares two processes.
Rule 2. Only tables and docstrings are read, never the file system or the clock.

The module lives in sim/cli/ because it reads the command line's parser (tests/test_layers.py:
reports/ may import only the model and itself). ``python -m toolcall_sim.cli.docs_reference
DIR`` writes the pages into DIR, to read them without building the site.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
from contextlib import contextmanager
from pathlib import Path

HELP_COLUMNS = "80"


def _cell(text: object) -> str:
    """One Markdown table cell: no line breaks, pipes escaped."""
    return " ".join(str(text).split()).replace("|", "\\|")


def _table(head: tuple[str, ...], rows: list[tuple[object, ...]]) -> list[str]:
    out = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    out += ["| " + " | ".join(_cell(c) for c in row) + " |" for row in rows]
    return out + [""]


def _code(text: object) -> str:
    return f"`{text}`"


def _page(title: str, intro: str, body: list[str]) -> str:
    lines = [f"# {title}", "", "<!-- generated from the code by sim/cli/docs_reference.py at build time -->", "",
             intro, "", *body]
    return "\n".join(lines).rstrip("\n") + "\n"


@contextmanager
def _fixed_columns():
    """argparse wraps ``--help`` to the terminal (``COLUMNS``); the page must not depend on it."""
    before = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = HELP_COLUMNS
    try:
        yield
    finally:
        if before is None:
            del os.environ["COLUMNS"]
        else:
            os.environ["COLUMNS"] = before


def _subcommands(top: argparse.ArgumentParser) -> list[tuple[str, str, argparse.ArgumentParser]]:
    """(name, one-line help, parser) of each subcommand, in the order ``--help`` lists them."""
    for action in top._actions:
        if isinstance(action, argparse._SubParsersAction):
            helps = {a.dest: a.help for a in action._choices_actions}
            return [(name, helps.get(name) or "", sub) for name, sub in action.choices.items()]
    raise AssertionError("the command line has no subcommands")


def commands_page() -> str:
    from toolcall_sim.cli.main import parser

    with _fixed_columns():
        top = parser()
        subs = _subcommands(top)
        body = ["Each subcommand's `--help`, exactly as `toolcall-sim COMMAND --help` prints it (at 80 columns).", ""]
        body += _table(("command", "what it does"), [(f"[`{n}`](#{n})", h) for n, h, _ in subs])
        body += ["## toolcall-sim", "", "```text", top.format_help().rstrip(), "```", ""]
        for name, help_text, sub in subs:
            body += [f"## {name}", "", help_text[:1].upper() + help_text[1:] + ".", "", "```text",
                     sub.format_help().rstrip(), "```", ""]
    return _page("Commands", "The command line is `toolcall-sim` (or `python -m toolcall_sim`). Every flag says "
                 "what it does; a flag or value the command would not use is one line on stderr and exit 2.", body)


def exit_codes() -> list[tuple[int, str]]:
    """(code, meaning) of the exit-code list in sim/cli/main.py's docstring."""
    from toolcall_sim.cli import main

    block = main.__doc__.split("Exit codes mean one thing each:", 1)[1].split("\n\n", 1)[0]
    codes: list[tuple[int, str]] = []
    for line in block.strip("\n").splitlines():
        m = re.match(r"\s+(\d+)\s+(.*)", line)
        if m and len(line) - len(line.lstrip()) <= 2:
            codes.append((int(m.group(1)), m.group(2)))
        else:
            codes[-1] = (codes[-1][0], codes[-1][1] + " " + line.strip())
    return codes


def exit_codes_page() -> str:
    from toolcall_sim.cli import main

    outputs = main.__doc__.split("Exit codes mean one thing each:", 1)[1].split("\n\n", 1)[1]
    body = _table(("exit", "meaning"), [(c, m) for c, m in exit_codes()])
    body += ["## Outputs", "", " ".join(outputs.split()), "",
             "Every output file is written whole or not at all, with your umask, and only over a regular file or a "
             "new name (a symlink's target is written; a device, FIFO, socket or folder is refused). A report folder "
             "(`check --out`, `--report DIR`) is replaced only when it is new, empty or an earlier report (it holds "
             "`.toolcall-sim-report`), never `.`, `/`, your home or a folder of your files. A full disk or an "
             "unwritable path is one line and exit 2, checked before the run where possible (sim/io/output.py); "
             "nothing earlier is lost, and a counterexample's `.toml` and `.json` are written together or not at all. "
             "Where a command writes is named in its `--help` and in its first line.", "",
             "## Interrupting a command", "",
             "Ctrl-C and SIGTERM (`kill PID`) are one rule (sim/io/interrupt.py): the command prints its summary so "
             "far, keeps every finished file and exits 130. A Ctrl-C while the command is still starting prints "
             "`toolcall-sim: interrupted while starting`. With `--workers` or `--cluster local`, workers get a second "
             "to finish their seed and are then ended, and a worker dies with its command even when that is killed "
             "outright: no command leaves a process behind."]
    return _page("Exit codes and outputs", "Every command keeps one contract for its exit status "
                 "(the list is the docstring of sim/cli/main.py, which is also `toolcall-sim --help`).", body)


def vocabulary_page() -> str:
    from toolcall_sim.model import vocabulary as v

    def fields(f) -> str:
        return ", ".join([f"`{n}`*" for n in f.required] + [f"`{n}`" for n in f.optional]) or "none"

    body = ["## `[world]` keys", ""]
    body += _table(("key", "type", "default", "meaning"),
                   [(_code(k.name), k.type, _code(k.default), k.meaning) for k in v.WORLD_KEYS.values()])
    body += ["## `[network] latency` shapes", ""]
    body += _table(("shape", "fields", "meaning"),
                   [(_code(s.name), ", ".join(map(_code, s.fields)), s.meaning) for s in v.LATENCY_SHAPES.values()])
    body += ["`[network] stalls = { " + ", ".join(v.STALL_FIELDS) + " }`: each message, with `probability`, takes "
             "an extra `min` to `max` on top of its latency (a GC pause, a TCP retransmit).", ""]
    body += ["## Fault kinds", "", "A field marked * is required. A `scheduled` fault fires `at` a time or `when` "
             "an event happens; a `message` fault acts on the messages its `message` table selects.", ""]
    body += _table(("kind", "shape", "fields", "meaning"),
                   [(_code(f.name), f.shape, fields(f), f.meaning) for f in v.FAULTS.values()])
    body += ["## Trigger events", "", "`when = { event, route, tool_call, nth }`.", ""]
    body += _table(("event", "messages it counts", "meaning"),
                   [(_code(e.name), e.direction, e.meaning) for e in v.TRIGGER_EVENTS.values()])
    body += ["## Words", ""]
    body += _table(("word", "values"), [
        ("routes", ", ".join(map(_code, v.ROUTES))),
        ("routes a crafted request may use", ", ".join(map(_code, v.REQUEST_ROUTES))),
        ("tools", ", ".join(map(_code, v.TOOLS))),
        ("result kinds", ", ".join(map(_code, v.RESULT_KINDS))),
        ("reasons of an unknown result", ", ".join(map(_code, v.UNKNOWN_REASONS))),
    ])
    body += ["## Expectations", "", "In `[expect.<variant>]`:", ""]
    body += _table(("key", "values"), [
        ("per tool call", ", ".join(map(_code, v.EXPECT_CALL_KEYS))),
        ("`result = { ... }`", ", ".join(map(_code, v.EXPECT_RESULT_FIELDS))),
        ("per variant", ", ".join(map(_code, v.EXPECT_TOP_KEYS))),
        ("`requests.<name> = { ... }`", ", ".join(map(_code, v.EXPECT_ANSWER_FIELDS))),
        ("`seeds`", ", ".join(map(_code, v.EXPECT_SEEDS))),
    ])
    body += ["## `[replay]` steps", "", "`[replay]` (`" + "`, `".join(v.REPLAY_KEYS) + "`) replays one path of "
             "`toolcall-sim explore`, one step a line: `{ at_ms = ..., do = ..., <fields> }`.", ""]
    body += _table(("`do`", "fields"), [(_code(do), ", ".join(map(_code, fields)) or "none")
                                         for do, fields in v.REPLAY_STEPS.items()]
                   + [(f"`fault = \"{k}\"`", ", ".join(map(_code, f)) or "none") for k, f in v.REPLAY_FAULTS.items()])
    caps = [(name, getattr(v, name)) for name in sorted(vars(v)) if name.startswith("MAX_")]
    body += ["## Caps", "", "What the loader accepts at most (a larger file is one line and exit 2).", ""]
    body += _table(("cap", "value"), [(_code(n), f"{c:,}") for n, c in caps])
    return _page("Scenario vocabulary", "Every word a scenario file may use, declared once in model/vocabulary.py "
                 "(`toolcall-sim list` prints the same tables). How a scenario file is written: "
                 "[Scenario files](scenario-files.md).", body)


def properties_page() -> str:
    from toolcall_sim.model import properties as props

    body = _table(("property", "kind", "user story", "statement"),
                  [(_code(p.name), p.kind, p.story, p.statement) for p in props.PROPERTIES])
    body += ["`always`: safety, checked on every prefix of a run. `eventually`: checked once the run has quiesced "
             "(no chat is still runnable). `sometimes`: reachability, reported as unreached, never as a violation, "
             "so a run that never exercised a path shows."]
    return _page("Properties", "Every run, exploration, search and swarm seed is checked against these "
                 "(model/properties/checks.py). A violation names the property, the tool call, the simulated time "
                 "and the trace records that prove it.", body)


# What each chatd variant is (model/chatd/rules.py ``VARIANTS``); a variant added there
# without its sentence here fails the build (KeyError), not silently.
_VARIANTS = {
    "contract": "chatd with the contract (design B): tool call headers, the agent answer timeout, interrupt cancels",
    "today": "chatd before the CODAGT-757 stack: no tool call headers, no agent answer timeout, no interrupt "
             "cancels, the \"timed out\" text from before docs/contract.md D-Q9 (c) (`ChatdRules` names the PR "
             "that brought each)",
}


def variants_page() -> str:
    from toolcall_sim.model import chatd, designs, planted_bugs

    body = ["## chatd variants", ""]
    body += _table(("variant", "what it is"), [(_code(n), _VARIANTS[n]) for n in sorted(chatd.VARIANTS)])
    body += ["## Designs", "", "The rejected designs and the incarnation-token fix, each a variant over the same "
             "model (model/designs.py); `toolcall-sim compare` runs them side by side.", ""]
    body += _table(("design", "base", "what it is", "what it models", "its flaw shows as"),
                   [(_code(d.name), _code(d.base), d.summary, d.models,
                     f"`{d.flaw}` in world `{d.flaw_world}`" if d.flaw else "a cost, or none the tools find")
                    for d in designs.DESIGNS])
    body += ["## Planted bugs", "", "Small, plausible mistakes in the contract's logic, each a changed knob of the "
             "rules the model reads (model/planted_bugs.py). Add one to any variant: `--variant contract+<bug>`, "
             "`fresh-start+no-age-margin`. Each names the property that must catch it and the scenario where it does.",
             ""]

    def knobs(b) -> str:
        parts = [f"chatd `{k}={val!r}`" for k, val in b.chatd] + [f"agent `{k}={val!r}`" for k, val in b.agent]
        parts += [f"timing `{k}={val!r}`" for k, val in b.timing] + [f"agent hook `{h.__name__}`" for h in b.agent_hooks]
        return ", ".join(parts)

    body += _table(("bug", "caught by", "in scenario", "what it breaks", "what it changes"),
                   [(_code(b.name), _code(b.caught_by), _code(b.scenario), b.summary, knobs(b))
                    for b in planted_bugs.PLANTED_BUGS])
    return _page("Variants, designs and planted bugs", "What `--variant` takes: a base variant or a design, then any "
                 "number of planted bugs, each at most once (`contract+no-age-margin`).", body)


def residual_risks_page() -> str:
    from toolcall_sim.model import properties as props

    covers: dict[str, list[str]] = {}
    for name, properties, _ in props.CLASSIFIERS:
        covers.setdefault(name, [])
        covers[name] += [p for p in properties if p not in covers[name]]
    body = ["## Residual risks", "", "The design's accepted costs (docs/contract.md D7). A violation one of them "
            "explains is printed as `RESIDUAL RISK <name> (<property>)`, never fails a run and is listed in reports.", ""]
    body += _table(("risk", "recognised in", "what it is"),
                   [(_code(n), ", ".join(map(_code, covers.get(n, []))), t) for n, t in props.RESIDUAL_RISKS.items()])
    body += ["## Known findings", "", "Real violations of the contract that stand after the fixes: a scenario "
             "expects each under `violations`, and a run prints it as `KNOWN FINDING <name> (<property>)` so a swarm "
             "or a search reports it as known instead of new.", ""]
    body += _table(("finding", "recognised in", "what it is"),
                   [(_code(n), ", ".join(map(_code, covers.get(n, []))), t) for n, t in props.KNOWN_FINDINGS.items()])
    body += ["A violation no row recognises is a new finding: `VIOLATION <property> ...`, exit 1 unless the "
             "scenario expects it (model/properties/classify.py)."]
    return _page("Residual risks and known findings", "The named classes a violation can belong to when it is not "
                 "a new finding (model/properties/risks.py).", body)


def sweep_parameters_page() -> str:
    from toolcall_sim.ci import sweep

    body = _table(("parameter", "type", "default", "meaning"),
                  [(_code(p.name), p.type, _code(p.default), p.meaning) for p in sweep.PARAMS.values()])
    return _page("Sweep parameters", "What a risk sweep (`toolcall-sim sweep`) may set under `[fixed]` or vary "
                 "under `[axes]` (sim/ci/sweep.py `PARAMS`); how to write one: "
                 "[Measure a residual risk](../how-to/risk-sweeps.md).", body)


def pages() -> dict[str, str]:
    """Site path -> Markdown of each generated page (Rule 1: the same bytes in any process)."""
    return {
        "reference/commands.md": commands_page(),
        "reference/exit-codes.md": exit_codes_page(),
        "reference/vocabulary.md": vocabulary_page(),
        "reference/properties.md": properties_page(),
        "reference/variants.md": variants_page(),
        "reference/residual-risks.md": residual_risks_page(),
        "reference/sweep-parameters.md": sweep_parameters_page(),
    }


def main(argv: list[str]) -> int:
    if len(argv) != 1 or argv[0].startswith("-"):
        print("usage: python -m toolcall_sim.cli.docs_reference DIR", file=sys.stderr)
        return 2
    for uri, text in pages().items():
        path = Path(argv[0]) / uri
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        print(path)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
