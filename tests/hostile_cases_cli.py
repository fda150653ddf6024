"""Rows of the hostile-input table (tests/hostile.py) for the command line: flags, seeds,
counterexample and trace files, variants, environment variables (issue 32, classes
"unbounded" and "silent").

Every size flag has a floor and a cap (sim/world/inputs.py), every seed flag the one
range of model/vocabulary.py; JSON the command line reads is strict (sim/io/json_input.py);
a counterexample or trace edited by hand never passes as "not reproduced"
(sim/drivers/counterexample.py). The counterexample and trace rows start from real files, made by
``setup`` in the case's folder, then edited as a user would.
"""

from __future__ import annotations

import io
import json
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

from hostile import Case

GOOD = b"""name = "ok"
until = "1m"
[[turns]]
chat = "chat-1"
tool_calls = [ { id = "toolu_01", tool = "execute", command = "true", runs_for = "1s" } ]
"""
HUGE = "1" + "0" * 40
PAST_SEED = str(2**63)  # one past model/vocabulary.py SEED_MAX
LAST_SEED = str(2**63 - 1)
DEEP = b"[" * 5000 + b"]" * 5000
O = ("--out", "{tmp}/o")  # an output folder the case may write (none of these rows does)


def _quiet_main(argv: list[str]) -> int:
    from toolcall_sim.cli.main import main

    with redirect_stdout(io.StringIO()), redirect_stderr(io.StringIO()):
        return main(argv)


def _counterexample(tmp: Path) -> dict:
    """A real counterexample (explore's shortest at_most_once under today) as JSON."""
    _quiet_main(["explore", "--world", "default", "--variant", "today", "--property", "at_most_once",
                 "--out", str(tmp / "made"), "--quiet"])
    path = sorted((tmp / "made").glob("*at_most_once*.json"))[0]
    doc = json.loads(path.read_text())
    for p in (tmp / "made").iterdir():
        p.unlink()
    (tmp / "made").rmdir()
    return doc


def _cx(edit=None, text=None):
    """setup: ``c.json``, a real counterexample, edited by ``edit(doc)`` (or written as
    ``text(doc)``)."""
    def setup(tmp: Path) -> None:
        doc = _counterexample(tmp)
        if edit is not None:
            edit(doc)
        (tmp / "c.json").write_text(text(doc) if text is not None else json.dumps(doc, indent=1))
    return setup


def _trace(edit=None, variant: str = "today"):
    """setup: ``t.jsonl``, the trace of the incident scenario (a real run, with the
    violation under today), its lines edited by ``edit(lines)``."""
    def setup(tmp: Path) -> None:
        _quiet_main(["run", "codagt757_incident", "--variant", variant, "--trace", str(tmp / "t.jsonl")])
        lines = (tmp / "t.jsonl").read_text().splitlines()
        (tmp / "t.jsonl").write_text("\n".join(edit(lines) if edit is not None else lines) + "\n")
    return setup


def _drop_actions(lines):
    return [line for line in lines if '"kind":"action"' not in line]


def _relabel_first_action(lines):
    i = next(i for i, line in enumerate(lines) if '"kind":"action"' in line)
    rec = json.loads(lines[i])
    rec["label"] = "tick"
    return lines[:i] + [json.dumps(rec, sort_keys=True, separators=(",", ":"))] + lines[i + 1:]


def _set(key, value):
    def edit(doc):
        doc[key] = value
    return edit


def _drop_last_action(doc):
    doc["actions"].pop()


REPLAY_C = ("replay", "{tmp}/c.json")
REPLAY_T = ("replay", "{tmp}/t.jsonl")

CASES = [
    # -- unbounded: every size flag has a cap, every integer flag a floor ----------------
    Case("swarm --seeds above its cap", ("swarm", "--seeds", "100000000", *O), "unbounded", needle="at most"),
    Case("swarm --seeds 40 digits", ("swarm", "--seeds", HUGE, *O), "unbounded", needle="--seeds"),
    Case("swarm --workers 10000", ("swarm", "--seeds", "1", "--workers", "10000", *O), "unbounded",
         needle="--workers"),
    Case("explore --workers 10000", ("explore", "--world", "default", "--workers", "10000", *O), "unbounded",
         needle="--workers"),
    Case("explore tour --workers 10000", ("explore", "--workers", "10000", *O), "unbounded", needle="--workers"),
    Case("explore --max-states a trillion", ("explore", "--world", "default", "--max-states", "10" * 6, *O),
         "unbounded", needle="--max-states"),
    Case("explore --agent-restarts 1000", ("explore", "--world", "default", "--agent-restarts", "1000", *O),
         "unbounded", needle="--agent-restarts"),
    Case("explore --horizon a year", ("explore", "--world", "default", "--horizon", "8760h", *O), "unbounded",
         needle="--horizon"),
    Case("explore --max-in-flight a year", ("explore", "--world", "default", "--max-in-flight", "8760h", *O),
         "unbounded", needle="--max-in-flight"),
    Case("search --world --steps 10**9", ("search", "--world", "default", "--steps", "1000000000", *O), "unbounded",
         needle="--steps"),
    Case("search --examples 10**9", ("search", "--examples", "1000000000", *O), "unbounded", needle="--examples"),
    Case("search --shrink-runs 10**9", ("search", "--shrink-runs", "1000000000", *O), "unbounded",
         needle="--shrink-runs"),
    Case("search --shrink-runs negative", ("search", "--shrink-runs", "-1", *O), "unbounded",
         needle="--shrink-runs"),
    Case("sweep --seeds 10**9", ("sweep", "age_margin", "--seeds", "1000000000"), "unbounded", needle="--seeds"),
    Case("sweep --workers 100000", ("sweep", "age_margin", "--workers", "100000"), "unbounded", needle="--workers"),
    Case("compare --seeds 10**9", ("compare", "--seeds", "1000000000", *O), "unbounded", needle="--seeds"),
    Case("compare --workers 100000", ("compare", "--workers", "100000", *O), "unbounded", needle="--workers"),
    Case("check --workers 100000", ("check", "--workers", "100000", "--out", "{tmp}/o"), "unbounded",
         needle="--workers"),
    Case("bugs --budget explore=10**12", ("bugs", "--driver", "explore", "--budget", "1000000000000"), "unbounded",
         needle="at most"),
    Case("bugs --budget 40 digits", ("bugs", "--driver", "swarm", "--budget", f"swarm={HUGE}"), "unbounded",
         needle="--budget"),
    Case("run --until past the longest run", ("run", "{tmp}/s.toml", "--until", "1000h"), "unbounded",
         files={"s.toml": GOOD}, needle="--until"),
    # -- unbounded: nesting and numbers of JSON inputs ------------------------------------
    Case("replay 5000-deep arrays", ("replay", "{tmp}/c.json"), "unbounded", files={"c.json": DEEP},
         needle="nested deeper"),
    Case("replay 5000-deep objects", ("replay", "{tmp}/c.json"), "unbounded",
         files={"c.json": b'{"a":' * 5000 + b"1" + b"}" * 5000}, needle="nested deeper"),
    Case("replay a counterexample whose world nests 100 deep", REPLAY_C, "unbounded",
         setup=_cx(text=lambda d: json.dumps({**d, "detail": json.loads("[" * 100 + "]" * 100)})),
         needle="nested deeper"),
    Case("replay a trace line 5000 deep", REPLAY_T, "unbounded",
         files={"t.jsonl": b'{"kind":"header"}\n' + DEEP + b"\n"}, needle="nested deeper"),
    Case("replay steps NaN", REPLAY_C, "unbounded",
         setup=_cx(text=lambda d: json.dumps(d).replace('"steps": ', '"steps": NaN, "x": ', 1)), needle="NaN"),
    Case("replay at_ms Infinity", REPLAY_C, "unbounded",
         setup=_cx(text=lambda d: json.dumps(d).replace('"at_ms": ', '"at_ms": Infinity, "y": ', 1)),
         needle="Infinity"),
    Case("replay steps -Infinity", REPLAY_C, "unbounded",
         setup=_cx(text=lambda d: json.dumps(d).replace('"steps": ', '"steps": -Infinity, "x": ', 1)),
         needle="Infinity"),
    Case("check --baseline 5000 deep", ("check", "--baseline", "{tmp}/b.json", "--out", "{tmp}/o"), "unbounded",
         files={"b.json": DEEP}, needle="nested deeper"),
    Case("check --baseline with NaN", ("check", "--baseline", "{tmp}/b.json", "--out", "{tmp}/o"), "unbounded",
         files={"b.json": b'{"schema": NaN, "accepted": []}'}, needle="NaN"),
    # -- silent: seeds, one rule everywhere (model/vocabulary.py SEED_MIN..SEED_MAX) -------
    Case("run --seed 2**64", ("run", "{tmp}/s.toml", "--seed", str(2**64)), "silent", files={"s.toml": GOOD},
         needle="--seed"),
    Case("run --seed 2**63", ("run", "{tmp}/s.toml", "--seed", PAST_SEED), "silent", files={"s.toml": GOOD},
         needle="--seed"),
    Case("run --seed -1", ("run", "{tmp}/s.toml", "--seed", "-1"), "silent", files={"s.toml": GOOD},
         needle="--seed"),
    Case("run --seed the largest seed runs", ("run", "{tmp}/s.toml", "--seed", LAST_SEED), "silent", expect=0,
         files={"s.toml": GOOD}),
    Case("swarm --first-seed 2**63", ("swarm", "--seeds", "1", "--first-seed", PAST_SEED, *O), "silent",
         needle="--first-seed"),
    Case("swarm seeds past the largest seed", ("swarm", "--seeds", "2", "--first-seed", LAST_SEED, *O), "silent",
         needle="last seed"),
    Case("search --seed -1", ("search", "--seed", "-1", *O), "silent", needle="--seed"),
    Case("search --seed 2**64", ("search", "--seed", str(2**64), *O), "silent", needle="--seed"),
    Case("compare --first-seed 2**63", ("compare", "--first-seed", PAST_SEED, *O), "silent",
         needle="--first-seed"),
    # -- silent: flags that were ignored ----------------------------------------------------
    Case("run --until empty", ("run", "{tmp}/s.toml", "--until", ""), "silent", files={"s.toml": GOOD},
         needle="--until"),
    Case("run --variant=-- (argparse's empty list)", ("run", "{tmp}/s.toml", "--variant=--"), "silent",
         files={"s.toml": GOOD}, needle="--variant"),
    Case("compare --designs=--", ("compare", "--designs=--", *O), "silent", needle="--designs"),
    Case("bugs --driver=-- (a flag with choices)", ("bugs", "--driver=--"), "silent", needle="invalid choice"),
    Case("replay a path with a NUL byte", ("replay", "{tmp}/c\x00.json"), "silent", needle="cannot read"),
    # -- silent: variants and environment variables ----------------------------------------
    Case("run a variant with a planted bug twice", ("run", "{tmp}/s.toml", "--variant",
                                                     "contract+no-age-margin+no-age-margin"), "silent",
         files={"s.toml": GOOD}, needle="twice"),
    Case("swarm a variant with a planted bug twice", ("swarm", "--seeds", "1", "--variant",
                                                       "contract+pid-from-command+no-age-margin+pid-from-command", *O),
         "silent", needle="twice"),
    Case("explore a variant with a planted bug twice", ("explore", "--world", "default", "--variant",
                                                         "today+no-age-margin+no-age-margin", *O),
         "silent", needle="twice"),
    # -- silent: counterexamples and traces edited by hand ---------------------------------
    Case("replay an unedited counterexample reproduces", REPLAY_C, "silent", expect=1, setup=_cx()),
    Case("replay a counterexample with an action removed", REPLAY_C, "silent", setup=_cx(_drop_last_action),
         needle="steps"),
    Case("replay steps negative", REPLAY_C, "silent", setup=_cx(_set("steps", -1)), needle="steps"),
    Case("replay steps a string", REPLAY_C, "silent", setup=_cx(_set("steps", "12")), needle="steps"),
    Case("replay steps true", REPLAY_C, "silent", setup=_cx(_set("steps", True)), needle="steps"),
    Case("replay a counterexample with a key twice", REPLAY_C, "silent",
         setup=_cx(text=lambda d: json.dumps(d)[:-1] + ', "property": "one_result"}'), needle="twice"),
    Case("replay an action relabelled", REPLAY_C, "silent",
         setup=_cx(lambda d: d["actions"][0].update(label="tick")), needle="label"),
    Case("replay an unedited trace reproduces", REPLAY_T, "silent", expect=1, setup=_trace()),
    Case("replay a trace without its actions does not fit", REPLAY_T, "silent", expect=3,
         setup=_trace(_drop_actions)),
    Case("replay a trace without its actions, under the contract", REPLAY_T, "silent", expect=3,
         setup=_trace(_drop_actions, "contract")),
    Case("replay a trace with an action relabelled", REPLAY_T, "silent", setup=_trace(_relabel_first_action),
         needle="label"),
]
