"""The agent's process side (docs/contract.md A4.1, A4.9; agentproc's headtail.go) at edges
the mutation run of model/agent/processes.py (issue 35) found no test pinning: output that
exactly fills the head, bytes that are not UTF-8 in output, a stale exit timer after a kill,
the list's order inside one start second and before the epoch, its chat filter and reaping,
a line of exactly the line limit, the agent's own process IDs and working directory, output
waiters, a 1 ms stop threshold, and the model's tiny shell for commands no scenario names."""

from __future__ import annotations

from agent_harness import AgentHarness
from toolcall_sim.model import agent
from toolcall_sim.model.agent.processes import (
    LINE_TRUNCATION_SUFFIX,
    MAX_HEAD_BYTES,
    MAX_LINE_LENGTH,
    head_tail_output,
    parse_script,
)


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
    # IDs the agent counts (proc-1-1, proc-1-2) rise with the start, so an ID tie-break
    # alone would put the later start last
    h = AgentHarness()
    first = h.json(h.start(None, command="sleep 60"))["id"]
    h.advance(300)
    second = h.json(h.start(None, command="sleep 60"))["id"]
    assert h.list() == [second, first]


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


def test_the_tiny_shell_reads_words_as_sh_does():
    """parse_script: a command it does not know (``cat``, ``touch``) writes nothing, runs no
    time and exits 0; ``false`` fails also after ';' and with arguments (false ignores
    them), ``true false`` is true with an argument; a bare ``sleep`` runs no time and a bare
    ``exit`` keeps the last status, as sh's ``exit`` does."""
    cat = parse_script("cat file")
    assert (cat.output_at_start, cat.output_at_exit, cat.runs_for_ms, cat.exit_code) == ("", "", 0, 0)
    assert parse_script("touch 5").runs_for_ms == 0
    assert parse_script("true; false").exit_code == 1
    assert parse_script("false 1").exit_code == 1 and parse_script("true false").exit_code == 0
    assert parse_script("sleep").runs_for_ms == 0 and parse_script("echo a; sleep").output_at_start == "a\n"
    assert parse_script("exit").exit_code == 0 and parse_script("false; exit").exit_code == 1


def test_processes_started_without_a_tool_call_are_numbered_per_incarnation():
    """docs/interfaces.md: without tool call headers the agent names the process
    ``proc-<incarnation>-<n>``, n counting this incarnation's such starts from 1 (the real
    agent draws a random UUID; a run's trace names the model's IDs)."""
    h = AgentHarness()
    assert [h.json(h.start(None, command="true"))["id"] for _ in range(3)] == ["proc-1-1", "proc-1-2", "proc-1-3"]


def test_a_start_without_a_workdir_runs_in_the_first_configured_directory():
    """A4.9, manager.resolveWorkDir: no workdir in the request means the agent's configured
    directory, the first of the model's existing ones; a named one is kept."""
    h = AgentHarness(config=agent.AgentConfig(dirs=("/home/coder", "/srv/app")))
    h.start(None, command="sleep 60")
    h.advance(1000)
    h.start(None, body=b'{"command": "sleep 60", "workdir": "/srv/app"}')
    rows = h.json(h.request("GET", agent.LIST_PATH))["processes"]
    assert [row["workdir"] for row in rows] == ["/srv/app", "/home/coder"]


def test_an_exit_answers_only_the_output_waiters_of_its_own_process():
    """A ``?wait=true`` output read of a running process is answered when that process
    exits, not when another one does."""
    h = AgentHarness()
    slow = h.json(h.start(None, command="echo slow; sleep 60; echo done"))["id"]
    h.start(None, command="sleep 1; echo quick")
    rid = h.output(slow, wait=True)
    h.advance(1000)  # the other process exits
    assert h.answer(rid) is None
    h.advance(59_000)
    assert h.json(rid) == {"running": False, "exit_code": 0, "output": "slow\ndone\n"}


def test_a_chat_header_in_upper_case_lists_the_same_chats_processes():
    """A4.9: the list keeps the processes of the request's chat; the chat header is a UUID,
    so its upper-case spelling names the same chat (the chat middleware parses it)."""
    chat = "abcdef01-2345-4678-89ab-cdef01234567"
    h = AgentHarness()
    pid = h.json(h.start(None, command="sleep 60", chat=chat))["id"]
    assert h.list(chat=chat.upper()) == [pid]


def test_a_line_of_exactly_the_line_limit_is_kept_whole():
    """headtail.go truncateLines: only a line longer than MaxLineLength (2048 bytes) is cut,
    to its first bytes and the suffix."""
    line = "x" * MAX_LINE_LENGTH
    assert head_tail_output(line + "\nshort") == (line + "\nshort", None)
    cut = "y" * (MAX_LINE_LENGTH - len(LINE_TRUNCATION_SUFFIX)) + LINE_TRUNCATION_SUFFIX
    assert head_tail_output("y" * (MAX_LINE_LENGTH + 1) + "\nshort") == (cut + "\nshort", None)


def test_a_one_ms_threshold_stops_a_process_of_run_age_zero():
    """A4.2: a cancel kills a running process whose run age is below the threshold; a
    cancel in the instant of the start sees run age 0, below 1 ms."""
    h = AgentHarness()
    h.start(1, "call", command="sleep 60")
    value = h.cancel_value(h.cancel(1, "call", threshold_ms=1))
    assert value["process"]["run_age_ms"] == 0
    assert (value["process"]["running"], value["process"]["canceled"]) == (False, True)


def test_a_list_reaps_every_old_process_and_keeps_the_others():
    """A4.4: a list reaps each exited process past the reap age (a note each) and keeps
    every other one, also those after a reaped one."""
    h = AgentHarness()
    old = [h.json(h.start(None, command="true"))["id"] for _ in range(2)]
    running = h.json(h.start(None, command="sleep 3600"))["id"]
    h.advance(302_000)
    assert h.list() == [running] and list(h.state.processes) == [running]
    assert [n.get("pid") for n in h.notes if n.kind == "process_reaped"] == old


def test_list_orders_start_seconds_before_the_epoch_newest_first():
    """A4.9: newest start second first, also for an agent clock that reads before the Unix
    epoch (a clock offset; Go's Unix() floors there too): second 0 before second -2."""
    h = AgentHarness()
    h.state, h.now_ms = agent.boot(agent.AgentConfig(), -2000), -1500
    before = h.json(h.start(None, command="sleep 60"))["id"]
    h.advance(2000)
    after = h.json(h.start(None, command="sleep 60"))["id"]
    assert h.list() == [after, before]
