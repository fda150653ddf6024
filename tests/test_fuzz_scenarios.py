"""A grammar-based fuzzer for scenario files (issue 32, "Fuzzed, not listed").

Hypothesis BUILDS scenario dicts from model/vocabulary.py (worlds from ``WORLD_KEYS``,
turns of tool calls of ``TOOLS``, faults of ``FAULTS`` at a time or on a
``TRIGGER_EVENTS`` event, expectations of ``EXPECT_CALL_KEYS`` and ``EXPECT_TOP_KEYS``),
then MUTATES them: a value of the wrong type, out of range or huge, a key dropped or
added, a value nested deep, text with control characters; and mutates the TOML bytes
too (odd bytes put in, the file cut short, brackets piled up). Each example is written
to a file in a fresh folder and run in this process as ``toolcall-sim run FILE``:

Rule 1. The exit code is 0, 1 or 2: never 70 (a harness error), never a traceback.
Rule 2. Exit 2 is exactly one line on stderr, with no raw control character in it.
Rule 3. Nothing hangs: a SIGALRM watchdog stops an example after ``WATCHDOG_S`` (far above
        what a refusal or a run of these small worlds takes; a bound, not a speed test).
Rule 4. No file of the folder changes, and nothing new appears in it (``run`` without
        output flags writes nothing).

The budget is fixed and the draws derandomized (the same examples every run, no example
database), ``EXAMPLES`` in all, about 10-20 s of one core.
"""

from __future__ import annotations

import io
import math
import os
import re
import sys
import tempfile
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hostile import Hang, snapshot, watchdog

from toolcall_sim.model import vocabulary as voc
from toolcall_sim.world.scenario_spec import ROUTE_OF_TOOL
from toolcall_sim.world.scenario_toml import to_toml

WATCHDOG_S = 60
TREE_EXAMPLES = 400  # built and mutated as dicts
BYTES_EXAMPLES = 200  # built, written, and mutated as bytes
VALID_EXAMPLES = 100  # built and run unmutated: they must load (exit 0 or 1, never 2)
FUZZ = settings(deadline=None, derandomize=True, database=None, print_blob=True,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much])

# What the examples found, for the report the suite prints with -s (and the lead).
SEEN: dict[str, dict[int, int]] = {}
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")

# -- building: a scenario from the vocabulary ------------------------------------------------

CHATS = ("chat-1", "chat-2")
durations = st.sampled_from(("1s", "2s", "5s", "30s", "250ms", "1m"))


@st.composite
def tool_call(draw, call_id: str) -> dict:
    """A tool call of any tool (the first of a scenario an execute: faults name one)."""
    tool = "execute" if call_id == "toolu_01" else draw(st.sampled_from(voc.TOOLS))
    call = {"id": call_id, "tool": tool}
    if tool == "execute":
        # Each call its own command (as the swarm draws them): the world runs one script
        # per command, so two calls of one command with other scripts are refused.
        base, amp = draw(st.sampled_from((("make", ""), ("go test ./...", ""), ("sleep 5", ""), ("true", " &"))))
        call["command"] = f"{base} --id={call_id}{amp}"
        call["runs_for"] = draw(durations)
        if draw(st.booleans()):
            call["timeout"] = draw(st.sampled_from(("10s", "1m", "2h")))
        if draw(st.booleans()):
            call["exit_code"] = draw(st.integers(voc.EXIT_CODE_MIN, voc.EXIT_CODE_MAX))
        if draw(st.booleans()):
            call["background"] = draw(st.booleans())
    elif tool == "edit_files":
        call["path"] = "/src/a.go"
        call["edits"] = [{"search": "x = 1", "replace": "x = 2"}]
    else:
        call["path"] = "/src/b.go"
        call["content"] = draw(st.sampled_from(("", "y = 2\n", "tab\there\n")))
    return call


@st.composite
def fault(draw, ids: list[str], executes: list[str], chats: list[str], replicas: int, routes: dict) -> dict:
    kinds = sorted(k for k in voc.FAULTS if replicas >= 2 or k != "takeover")
    kind = draw(st.sampled_from(kinds))
    spec = voc.FAULTS[kind]
    f: dict = {"kind": kind}
    for key, value in spec.example:
        f[key] = value
    for key in ("chat", "as_chat"):
        if key in f:
            f[key] = draw(st.sampled_from(chats))
    if "tool_call" in f:
        f["tool_call"] = draw(st.sampled_from(executes))
    if isinstance(f.get("message"), dict):
        call = draw(st.sampled_from(ids))
        f["message"] = {**f["message"], "tool_call": call, "route": routes[call], "nth": draw(st.integers(1, 3))}
    if kind == "replica_crash":
        f["replica"] = f"replica-{draw(st.integers(1, replicas))}"
    if kind == "takeover":  # (needs two replicas: the scenario draws it only with two)
        f["to"] = f"replica-{draw(st.integers(1, replicas))}"
    if spec.shape != "message":
        if draw(st.booleans()):
            f["at"] = draw(st.sampled_from(("1s", "3s", "10s", "30s")))
        else:
            event = draw(st.sampled_from(sorted(voc.TRIGGER_EVENTS)))
            named = executes if event == "process_started" else ids  # (only an execute starts a process)
            f["when"] = {"event": event, "tool_call": draw(st.sampled_from(named)), "nth": draw(st.integers(1, 2))}
    return f


@st.composite
def scenario(draw) -> dict:
    replicas = draw(st.integers(1, 3))
    world: dict = {"replicas": replicas}
    for key in draw(st.lists(st.sampled_from(sorted(voc.WORLD_KEYS)), max_size=3, unique=True)):
        if key not in ("replicas", "replica_variants"):
            world[key] = voc.WORLD_KEYS[key].example
    turns, ids = [], []
    for t in range(draw(st.integers(1, 3))):
        calls = []
        for _ in range(draw(st.integers(1, 2))):
            ids.append(f"toolu_{len(ids) + 1:02d}")
            calls.append(draw(tool_call(ids[-1])))
        turns.append({"chat": draw(st.sampled_from(CHATS)), "tool_calls": calls})
    chats = list(dict.fromkeys(t["chat"] for t in turns))
    data = {"name": "fuzz", "seed": draw(st.integers(voc.SEED_MIN, 10**6)),
            "until": draw(st.sampled_from(("1m", "2m", "5m"))), "world": world, "turns": turns}
    executes = [c["id"] for t in turns for c in t["tool_calls"] if c["tool"] == "execute"]
    routes = {c["id"]: ROUTE_OF_TOOL[c["tool"]] for t in turns for c in t["tool_calls"]}
    faults = draw(st.lists(fault(ids, executes, chats, replicas, routes), max_size=3))
    for i, f in enumerate(faults):
        if f["kind"] == "request":
            f["name"] = f"request-{i}"  # (request names are unique)
    if faults:
        data["faults"] = faults
    if draw(st.booleans()):
        call = draw(st.sampled_from(ids))
        counts = ("process_starts", "processes_killed") if routes[call] == "start" else ("edits_applied",)
        wanted = {k: draw(st.integers(0, 2)) for k in draw(st.lists(st.sampled_from(counts), max_size=2, unique=True))}
        data["expect"] = {draw(st.sampled_from(("contract", "today"))): {call: wanted, "violations": []}}
    return data


# -- mutating: wrong types, ranges, keys, nesting, text -----------------------------------------

HOSTILE_VALUES = st.one_of(
    st.sampled_from([None, True, -1, 0, 2**64, -(2**63) - 1, 10**30, math.nan, math.inf, -math.inf, 1.5, "",
                     "-1s", "1e9h", "9999999999h", "0s", "\x00", "\x1b[2J", "a\nb", "replica-0", "chat-99",
                     "toolu_99", [], {}, [[[[]]]], {"a": {"b": {}}}, "x" * 5000, 2**63, 256, -2]),
    st.integers(), st.text(max_size=20), st.floats(allow_nan=False),
)


def _paths(value, prefix=()):
    """Every (path, value) of the nested dict/list ``value`` (paths as key/index tuples)."""
    yield prefix, value
    if isinstance(value, dict):
        for k, v in value.items():
            yield from _paths(v, prefix + (k,))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield from _paths(v, prefix + (i,))


def _set(root, path, value):
    node = root
    for p in path[:-1]:
        node = node[p]
    node[path[-1]] = value


def _delete(root, path):
    node = root
    for p in path[:-1]:
        node = node[p]
    del node[path[-1]]


def _deep(depth: int):
    value: object = 1
    for i in range(depth):
        value = [value] if i % 2 else {"a": value}
    return value


@st.composite
def mutated(draw) -> dict:
    import copy

    data = copy.deepcopy(draw(scenario()))
    for _ in range(draw(st.integers(1, 3))):
        paths = [p for p, _ in _paths(data) if p]
        path = draw(st.sampled_from(paths))
        how = draw(st.sampled_from(("value", "value", "delete", "extra", "deep", "control")))
        if how == "value":
            _set(data, path, draw(HOSTILE_VALUES))
        elif how == "delete":
            _delete(data, path)
        elif how == "extra":
            node = data
            for p in path[:-1]:
                node = node[p]
            if isinstance(node, dict):
                node[draw(st.sampled_from(("colour", "nth", "at", "id", "kind", "replicas", "\x07")))] = draw(HOSTILE_VALUES)
        elif how == "deep":
            _set(data, path, _deep(draw(st.sampled_from((5, 40, 200)))))
        else:
            _set(data, path, draw(st.text(alphabet=st.characters(max_codepoint=0x9f), min_size=1, max_size=8)))
    return data


def _toml(data: dict) -> bytes | None:
    """The dict as TOML, or None when it has no TOML form (a None value)."""
    try:
        return to_toml(data).encode("utf-8", "surrogatepass")
    except (TypeError, ValueError):
        return None


ODD_BYTES = st.sampled_from([b"\x00", b"\xff", b"\xfe\xff", b"\x1b[2J", b"\r", b"[" * 64, b"{a=" * 40, b'"', b"'''",
                             b"\\u0000", b"\n[[turns]]\n", b"= =", b"\t", b"\xe9"])


@st.composite
def mutated_bytes(draw) -> bytes:
    text = _toml(draw(scenario()))
    for _ in range(draw(st.integers(1, 3))):
        at = draw(st.integers(0, len(text)))
        how = draw(st.sampled_from(("insert", "cut", "replace")))
        if how == "insert":
            text = text[:at] + draw(ODD_BYTES) + text[at:]
        elif how == "cut":
            text = text[:at]
        else:
            text = text[:at] + draw(ODD_BYTES) + text[at + draw(st.integers(1, 8)):]
    return text


# -- running one example ----------------------------------------------------------------------------


def run_file(text: bytes, kind: str) -> int:
    """``toolcall-sim run FILE`` of ``text`` in a fresh folder, Rules 1-4; the exit code."""
    from toolcall_sim.cli.main import main

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "s.toml"
        path.write_bytes(text)
        before = snapshot(Path(tmp))
        out, err = io.StringIO(), io.StringIO()
        cwd = os.getcwd()
        os.chdir(tmp)
        try:
            with watchdog(WATCHDOG_S), redirect_stdout(out), redirect_stderr(err):
                try:
                    code = main(["run", str(path)])
                except SystemExit as exit_:
                    code = exit_.code if isinstance(exit_.code, int) else 2
        except Hang:
            raise AssertionError(f"still running after {WATCHDOG_S} s (a hang): {text[:300]!r}") from None
        finally:
            os.chdir(cwd)
        stderr = err.getvalue()
        assert code in (0, 1, 2), f"exit {code}: {stderr!r} for {text[:300]!r}"  # Rule 1
        assert "Traceback" not in stderr, stderr
        if code == 2:  # Rule 2
            lines = stderr.splitlines()
            assert len(lines) == 1, f"bad input must be one line, got {stderr!r} for {text[:300]!r}"
            assert not _CONTROL.search(lines[0]), f"raw control character in {lines[0]!r}"
        assert snapshot(Path(tmp)) == before, f"the run changed its folder for {text[:300]!r}"  # Rule 4
        SEEN.setdefault(kind, {}).setdefault(code, 0)
        SEEN[kind][code] += 1
        return code


@settings(FUZZ, max_examples=VALID_EXAMPLES)
@given(scenario())
def test_built_scenarios_load_and_run(data):
    """Built from the vocabulary and not mutated, every scenario is one the loader
    accepts: the fuzzer's grammar is the loader's."""
    text = _toml(data)
    assert run_file(text, "built") in (0, 1), text.decode()


@settings(FUZZ, max_examples=TREE_EXAMPLES)
@given(mutated())
def test_mutated_scenarios_never_crash_hang_or_write(data):
    text = _toml(data)
    if text is not None:
        run_file(text, "mutated")


@settings(FUZZ, max_examples=BYTES_EXAMPLES)
@given(mutated_bytes())
def test_mutated_bytes_never_crash_hang_or_write(text):
    run_file(text, "bytes")


def test_report_what_the_fuzzer_saw():
    """Prints how many examples ran and how they ended (``pytest -s``), by kind."""
    for kind, codes in sorted(SEEN.items()):
        print(f"fuzz {kind}: {sum(codes.values())} examples, exits {dict(sorted(codes.items()))}", file=sys.stderr)
