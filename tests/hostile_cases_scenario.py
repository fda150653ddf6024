"""Rows of the hostile-input table (tests/hostile.py) for issue 32's scenario file: its
path (FIFOs, devices, sockets, huge files), its sizes (every cap of model/vocabulary.py),
and what it used to accept in silence (control characters, empty names, seeds out of
range, clock steps after ``until``, a fault that never fires, a scenario with nothing to
judge, expectations no run could meet, exit codes no process can have).

Each row writes a scenario into the case's folder (or makes a special file there) and
runs ``toolcall-sim run`` on it; a refusal is one line naming the field (``needle``).
"""

from __future__ import annotations

import os
import socket
from pathlib import Path

from hostile import Case

from toolcall_sim.model import vocabulary as voc

RUN = ("run", "{tmp}/s.toml")

HEAD = b'name = "ok"\nuntil = "1m"\n'
CALL = b'{ id = "toolu_01", tool = "execute", command = "true", runs_for = "1s" }'
TURN = b'[[turns]]\nchat = "chat-1"\ntool_calls = [ ' + CALL + b" ]\n"
GOOD = HEAD + TURN


def top(line: bytes) -> bytes:
    """GOOD with a top-level key (before the first table)."""
    return HEAD + line + TURN


def scenario(text: bytes) -> dict[str, bytes]:
    return {"s.toml": text}


def row(id_: str, text: bytes, needle: str | None, cls: str = "silent", expect: int = 2, argv=RUN) -> Case:
    """A scenario file ``text`` run as ``toolcall-sim run``: exit ``expect``."""
    return Case(id_, argv, cls, expect=expect, files=scenario(text), needle=needle)


def with_call(**fields: str) -> bytes:
    """GOOD with the tool call's fields replaced or added (TOML values as written)."""
    base = {"id": '"toolu_01"', "tool": '"execute"', "command": '"true"', "runs_for": '"1s"', **fields}
    return HEAD + b'[[turns]]\nchat = "chat-1"\ntool_calls = [ { ' + ", ".join(
        f"{k} = {v}" for k, v in base.items()).encode() + b" } ]\n"


def expect(line: str) -> bytes:
    return GOOD + b"[expect.contract]\n" + line.encode() + b"\n"


def calls(n: int, per_turn: int, chats: int = 1) -> bytes:
    """A scenario with ``n`` tool calls, ``per_turn`` a turn, over ``chats`` chats."""
    out = [HEAD]
    for t in range(0, n, per_turn):
        ids = ", ".join(f'{{ id = "t{i}", command = "c{i}" }}' for i in range(t, min(n, t + per_turn)))
        out.append(f'[[turns]]\nchat = "chat-{(t // per_turn) % chats}"\ntool_calls = [ {ids} ]\n'.encode())
    return b"".join(out)


def fifo(tmp: Path) -> None:
    os.mkfifo(tmp / "s.toml")


def unix_socket(tmp: Path) -> None:
    s = socket.socket(socket.AF_UNIX)
    try:
        s.bind(str(tmp / "s.toml"))
    finally:
        s.close()


def link_to(target: str):
    def setup(tmp: Path) -> None:
        os.symlink(target, tmp / "s.toml")
    return setup


def sparse(size: int):
    def setup(tmp: Path) -> None:
        with open(tmp / "s.toml", "wb") as f:
            f.truncate(size)
    return setup


def still_a_device(tmp: Path) -> None:  # noqa: ARG001
    assert Path("/dev/null").is_char_device() and Path("/dev/zero").is_char_device()


CASES = [
    # -- the path: refused before anything is read, never a hang -------------------------
    Case("scenario is a FIFO", RUN, "unbounded", setup=fifo, needle="FIFO", seconds=30),
    Case("scenario is /dev/zero", ("run", "/dev/zero"), "unbounded", needle="character device", seconds=30,
         check=still_a_device),
    Case("scenario is /dev/null", ("run", "/dev/null"), "unbounded", needle="character device", check=still_a_device),
    Case("scenario is a link to /dev/zero", RUN, "unbounded", setup=link_to("/dev/zero"), needle="character device",
         seconds=30, check=still_a_device),
    Case("scenario is a socket", RUN, "unbounded", setup=unix_socket, needle="socket"),
    Case("scenario is the root folder", ("run", "/"), "unbounded", needle="directory"),
    Case("scenario over 10 MB", RUN, "unbounded", setup=sparse(voc.MAX_SCENARIO_BYTES + 1), needle="cap of 10 MB"),
    Case("scenario a dangling link", RUN, "unbounded", setup=link_to("/nonexistent/s.toml"), needle="cannot read"),
    # -- nesting: counted before the TOML reader recurses ---------------------------------
    row("5000-deep arrays", GOOD + b"x = " + b"[" * 5000 + b"]" * 5000 + b"\n", "nest deeper", "unbounded"),
    row("5000-deep inline tables", GOOD + b"x = " + b"{a = " * 5000 + b"1" + b"}" * 5000 + b"\n", "nest deeper",
        "unbounded"),
    row("deep nesting inside world.files", GOOD + b"[world]\nfiles = { a = " + b"[" * 100 + b"]" * 100 + b" }\n",
        "nest deeper", "unbounded"),
    row("5000 dotted keys", GOOD + b"[world.files." + b".".join([b"a"] * 5000) + b"]\n", "world.files",
        "unbounded"),
    row("brackets in strings are no nesting", GOOD.replace(b'command = "true"', b'command = "' + b"[" * 100 + b'"'),
        None, "unbounded", expect=0),
    # -- every size has a cap ----------------------------------------------------------------
    row("100000 replicas", GOOD + b"[world]\nreplicas = 100000\n", "world.replicas", "unbounded"),
    row("101 replicas", GOOD + b"[world]\nreplicas = 101\n", "world.replicas", "unbounded"),
    row("1001 turns", HEAD + TURN.replace(b"toolu_01", b"t") + b'[[turns]]\ntool_calls = []\n' * 1000, "turns",
        "unbounded"),
    row("101 tool calls in one turn", calls(101, 101), "in one turn", "unbounded"),
    row("1001 tool calls in all", calls(1001, 100), "in all", "unbounded"),
    row("101 chats", calls(101, 1, chats=101), "chats", "unbounded"),
    row("1001 faults", GOOD + b'[[faults]]\nkind = "interrupt"\nat = "1s"\n' * 1001, "faults", "unbounded"),
    row("1001 clock steps", GOOD + b"[clocks.agent]\nsteps = [" + b'{ at = "1s", by = "1s" }, ' * 1001 + b"]\n",
        "steps", "unbounded"),
    row("10001 edits", HEAD + b'[[turns]]\ntool_calls = [ { id = "e", tool = "edit_files", path = "/a", edits = ['
        + b'{ search = "a", replace = "b" }, ' * 10001 + b"] } ]\n", "edits", "unbounded"),
    row("a command of 1000001 characters", with_call(command='"' + "x" * 1_000_001 + '"'), "characters",
        "unbounded"),
    # -- control characters and empty names -------------------------------------------------
    row("NUL in the scenario name", GOOD.replace(b'"ok"', b'"o\\u0000k"'), "name"),
    row("bell in a chat", GOOD.replace(b'chat = "chat-1"', b'chat = "chat\\u0007"'), "\\x07"),
    row("escape in a tool call id", with_call(id='"toolu\\u001b[2J"'), "\\x1b"),
    row("newline in a tool call id", with_call(id='"tool\\nu"'), "id"),
    row("C1 control in a path", HEAD + b'[[turns]]\ntool_calls = [ { id = "w", tool = "write_file", path = '
        b'"/a\\u009b", content = "x" } ]\n', "path"),
    row("escape in the summary", top(b'summary = "hi \\u001b[31m red"\n'), "summary"),
    row("bell in a command", with_call(command='"make\\u0007"'), "command"),
    row("DEL in a request name", GOOD + b'[[faults]]\nkind = "request"\nat = "1s"\nroute = "start"\nname = "a\\u007f"\n',
        "name"),
    row("newline in a header value", GOOD + b'[[faults]]\nkind = "request"\nat = "1s"\nroute = "start"\n'
        b'name = "r"\nheaders = { X-A = "1\\r\\nX-B: 2" }\n', "headers"),
    row("control character in an unknown key is escaped", top(b'"col\\u0007our" = 1\n'), "\\x07"),
    row("empty scenario name", GOOD.replace(b'"ok"', b'""'), "empty"),
    row("empty chat", GOOD.replace(b'chat = "chat-1"', b'chat = ""'), "empty"),
    row("empty tool call id", with_call(id='""'), "empty"),
    row("empty file path in world.files", GOOD + b'[world]\nfiles = { "" = "x" }\n', "empty"),
    row("empty variant", top(b'variant = ""\n'), "variant"),
    # -- seeds: one range everywhere -----------------------------------------------------------
    row("seed -1", top(b"seed = -1\n"), "seed"),
    row("seed 2**64", top(b"seed = 18446744073709551616\n"), "seed"),
    row("seed 2**63", top(b"seed = 9223372036854775808\n"), "seed"),
    row("seed 2**63 - 1 runs", top(b"seed = 9223372036854775807\n"), None, expect=0),
    # -- times after until -------------------------------------------------------------------------
    row("clock step after until", GOOD + b'[clocks.agent]\nsteps = [ { at = "2m", by = "1s" } ]\n', "never step"),
    row("clock step at until", GOOD + b'[clocks.agent]\nsteps = [ { at = "1m", by = "1s" } ]\n', "never step"),
    row("event fault's offset after until", GOOD + b'[[faults]]\nkind = "interrupt"\noffset = "5m"\n'
        b'when = { event = "process_started", tool_call = "toolu_01" }\n', "never fire"),
    # -- a fault that never fires fails the run (exit 1) ------------------------------------------
    row("trigger nth never reached", GOOD + b'[[faults]]\nkind = "interrupt"\n'
        b'when = { event = "process_started", tool_call = "toolu_01", nth = 5 }\n', None, expect=1),
    row("lose nth never reached", GOOD + b'[[faults]]\nkind = "lose"\n'
        b'message = { route = "start", tool_call = "toolu_01", nth = 1000000 }\n', None, expect=1),
    row("faults_never_fired names a fault that fires", GOOD + b'[[faults]]\nkind = "interrupt"\nat = "10s"\n'
        b"[expect.contract]\nfaults_never_fired = [0]\n", None, expect=1),
    row("faults_never_fired out of range", GOOD + b'[[faults]]\nkind = "interrupt"\nat = "10s"\n'
        b"[expect.contract]\nfaults_never_fired = [1]\n", "faults_never_fired"),
    Case("a shipped cancel loss under today still holds", ("run", "bug_lost_cancel", "--variant", "today"), "silent",
         expect=0),
    # -- nothing to judge --------------------------------------------------------------------------------
    row("no tool call at all", HEAD + b'[[turns]]\nchat = "chat-1"\ntool_calls = []\n', "no tool call"),
    row("no turns at all", HEAD + b"turns = []\n", "no tool call"),
    # -- expectations no run could meet: exit 2, not "not met" -------------------------------------------
    row("process_starts = -1", expect("toolu_01 = { process_starts = -1 }"), "process_starts"),
    row("edits_applied of an execute", expect("toolu_01 = { edits_applied = 1 }"), "edits_applied"),
    row("a file result kind for an execute", expect('toolu_01 = { results = ["applied"] }'), "applied"),
    row("a violation named twice", expect('violations = ["at_most_once", "at_most_once"]'), "twice"),
    row("committed_before not after committed_after",
        expect('toolu_01 = { result = { committed_after = "30s", committed_before = "30s" } }'), "committed_before"),
    row("committed_before 0s", expect('toolu_01 = { result = { committed_before = "0s" } }'), "committed_before"),
    row("result against results = []", expect('toolu_01 = { results = [], result = { kind = "completed" } }'),
        "never both"),
    row("result kind against results", expect('toolu_01 = { results = ["completed"], result = { kind = "failed" } }'),
        "never both"),
    row("expected exit code 256", expect("toolu_01 = { result = { exit_code = 256 } }"), "exit_code"),
    row("expected exit code past Go's int", expect("toolu_01 = { result = { exit_code = 9223372036854775808 } }"),
        "exit_code"),
    row("expected request status 999", GOOD + b'[[faults]]\nkind = "request"\nat = "1s"\nroute = "start"\n'
        b'name = "r"\n[expect.contract.requests]\nr = 999\n', "requests.r"),
    row("negative attempt", expect("toolu_01 = { result = { attempt = -1 } }"), "attempt"),
    # -- exit codes a process can have ------------------------------------------------------------------------
    row("tool call exit_code 256", with_call(exit_code="256"), "exit_code"),
    row("tool call exit_code -1", with_call(exit_code="-1"), "exit_code"),
    row("tool call exit_code past Go's int", with_call(exit_code="9223372036854775808"), "exit_code"),
    row("tool call exit_code 255 runs", with_call(exit_code="255"), None, expect=0),
]
