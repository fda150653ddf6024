"""The agent's process side (docs/contract.md A4.1, A4.9; agentproc's headtail.go) at edges
the mutation run of model/agent/processes.py (issue 35) found no test pinning: output that
exactly fills the head, bytes that are not UTF-8 in output, a stale exit timer after a kill,
the list's order inside one start second, and the model's tiny shell for commands no
scenario names."""

from __future__ import annotations

from agent_harness import AgentHarness
from toolcall_sim.model import agent
from toolcall_sim.model.agent.processes import MAX_HEAD_BYTES, head_tail_output, parse_script


def test_output_that_exactly_fills_the_head_comes_back_whole():
    """HeadTailBuffer: output of at most the head's 16 KiB is whole, with no truncation
    info; one byte more is cut head/tail with the info."""
    lines = ("x" * 1023 + "\n") * (MAX_HEAD_BYTES // 1024)
    assert len(lines.encode()) == MAX_HEAD_BYTES
    assert head_tail_output(lines) == (lines, None)
    text, info = head_tail_output(lines + "y")
    assert info is not None and info["original_bytes"] == MAX_HEAD_BYTES + 1
    assert (info["omitted_bytes"], text) == (0, lines + "\ny")  # nothing omitted: joined by a newline


def test_output_bytes_that_are_not_utf8_read_as_replacement_characters():
    """Go's JSON encoder writes each byte of invalid UTF-8 as U+FFFD, the lowest (0x80)
    and the highest (0xff) alike; valid text around them is kept."""
    raw = b"a\x80b\xffc\xc3\xa9".decode("utf-8", errors="surrogateescape")
    assert head_tail_output(raw) == ("a\ufffdb\ufffdc\u00e9", None)


def test_an_exit_timer_after_a_kill_changes_nothing():
    """A killed process keeps exit code -1 and its kill instant: an exit timer that fires
    anyway (it was due in the same instant) does not exit it again."""
    h = AgentHarness()
    pid = h.json(h.start(1, "call", command="echo hi; sleep 10; echo bye"))["id"]
    h.signal(pid)
    killed = h.process(pid)
    assert (killed.running, killed.exit_code) == (False, -1)
    h._absorb(agent.on_timer(h.state, f"exit:{pid}", h.now_ms + 10_000))
    assert h.process(pid) == killed


def test_list_orders_starts_inside_one_second_by_their_exact_instant():
    """A4.9: running first, then the newest start second; inside one second (Go's order
    there is map order) the model puts the later exact instant first, so a run repeats."""
    h = AgentHarness()
    early = h.json(h.start(1, "a", command="sleep 60"))["id"]
    h.advance(300)
    late = h.json(h.start(1, "b", command="sleep 60"))["id"]
    assert h.list() == [late, early]


def test_the_tiny_shell():
    """parse_script, the model's shell for commands no scenario names: true exits 0, false
    1, an unknown word 0, exit K with K; empty parts between ';' are skipped, not the end."""
    assert parse_script("true").exit_code == 0
    assert parse_script("false").exit_code == 1
    assert parse_script("ls -la").exit_code == 0 and parse_script("cat file").exit_code == 0
    assert parse_script("true; exit 3").exit_code == 3
    assert parse_script("exit 3; false").exit_code == 3 and parse_script("exit 3; echo x").output_at_start == ""
    script = parse_script("echo a;; echo b; sleep 2; echo c")
    assert (script.output_at_start, script.output_at_exit, script.runs_for_ms) == ("a\nb\n", "c\n", 2000)


def test_one_omitted_byte_is_named_in_the_joint():
    """HeadTailBuffer: head and tail with bytes omitted between them are joined by the
    omission marker, also when a single byte is omitted."""
    text, info = head_tail_output("x" * (2 * MAX_HEAD_BYTES + 1))
    assert info["omitted_bytes"] == 1 and "\n\n... [omitted 1 bytes] ...\n\n" in text
    assert head_tail_output("x" * 60_000)[1]["omitted_bytes"] == 60_000 - 2 * MAX_HEAD_BYTES


def test_a_start_without_a_command_is_a_400():
    """agentproc handleStartProcess: an empty command is a 400 "Command is required."."""
    h = AgentHarness()
    rid = h.start(1, "call", command="")
    assert (h.status(rid), h.json(rid)["message"]) == (400, "Command is required.")
    assert h.starts() == 0


def test_cancel_reports_the_run_age_since_the_start():
    """A4.3: the cancel answer's run age is the time since the process started (the
    request's arrival), also when that is longer than the agent had been up at the start."""
    h = AgentHarness()  # up 1 h
    h.start(1, "call", command="sleep 36000")
    h.advance(5_400_000)  # 1.5 h later
    value = h.cancel_value(h.cancel(1, "call", threshold_ms=0))
    assert value["process"]["run_age_ms"] == 5_400_000 and value["process"]["running"] is True
