"""A race written as pytest tests: copy the part above the line into your own tests.

With toolcall-sim installed, its pytest plugin (sim/pytest_plugin.py) is on and lends
every test the ``toolcall_run`` fixture: nothing to configure, no conftest.py. A world is
built with sim/api.py in the words of a scenario file (scenarios/README.md) and checked
by the same loader; a failing assertion says what happened in the story's terms and
lists the command that runs the world again.
"""

from toolcall_sim.api import Scenario, interrupt, lose


def lost_start_answer() -> Scenario:
    """The agent starts ``make``, and its answer to the start never reaches chatd."""
    world = Scenario("lost start answer").chat("chat-1").execute("toolu_01", "make", runs_for="20m", timeout="30m")
    return world.fault(lose(route="start", tool_call="toolu_01", direction="response"))


def test_the_contract_starts_it_once_and_says_unknown(toolcall_run):
    result = toolcall_run(lost_start_answer(), variant="contract")
    assert result.call("toolu_01").process_starts == 1
    assert result.call("toolu_01").results == ["unknown"]  # after the 1-minute answer bound


def test_today_starts_it_again_on_the_retry(toolcall_run):
    result = toolcall_run(lost_start_answer(), variant="today", until="20m")
    assert result.call("toolu_01").process_starts == 2  # the attempt timed out at 15 min and retried
    result.assert_violations("at_most_once", "retry_changes_nothing")


def test_an_interrupt_while_chatd_waits_for_the_answer_stops_it(toolcall_run):
    world = lost_start_answer().fault(interrupt("chat-1", at="30s"))
    result = toolcall_run(world, variant="contract", until="10m")
    assert result.call("toolu_01").results == ["canceled"]
    result.call("toolu_01").assert_processes_running_at_end(0)
    result.assert_no_violations()


# ---------------------------------------------------------------------------------------
# Not part of the example: the example's own failure messages, checked by running a
# failing copy of it in a pytest of its own.

pytest_plugins = ["pytester"]


def test_a_failing_copy_fails_in_the_storys_words(pytester):
    import pathlib
    import re

    source = pathlib.Path(__file__).read_text().split("# ----------")[0]
    pytester.makepyfile(test_race=source + '''

def test_issue_example(toolcall_run):
    world = Scenario("lost start answer").chat("chat-1").execute("toolu_01", "make", runs_for="20m", timeout="30m")
    world = world.fault(lose(route="start", tool_call="toolu_01", direction="response"))
    result = toolcall_run(world, variant="contract")
    assert result.call("toolu_01").process_starts == 1
    assert result.call("toolu_01").results == ["completed"]


def test_today_once(toolcall_run):
    result = toolcall_run(lost_start_answer(), variant="today", until="20m")
    assert result.call("toolu_01").process_starts == 1
''')
    result = pytester.runpytest("-p", "no:cacheprovider", "-p", "no:benchmark")
    result.assert_outcomes(passed=3, failed=2)  # the example's three, the two above
    out = result.stdout.str()
    assert re.search(r"toolu_01 committed 1 result \(unknown \(\w+\) at [\d.]+ s by replica-\d\); "
                     r"expected \[completed\]", out), out
    assert re.search(r"toolu_01 started 2 processes \(at [\d.]+ s on agent incarnation 1, at 90[\d.]+ s on "
                     r"incarnation 1\); expected 1", out), out
    assert re.search(r"toolcall-sim run \S+/lost_start_answer\.toml --variant today --seed 1 --until 20m", out), out
