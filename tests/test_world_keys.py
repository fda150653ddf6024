"""Every [world] timing key reaches the one Timing the replicas and their tool layer
read (model/vocabulary.py Rule 3), shown by what each does to a run: the interval of a
loop, the length of a wait, the number of attempts."""

from __future__ import annotations

import copy

from toolcall_sim.world.build import world_timing
from toolcall_sim.world.run import run_scenario
from toolcall_sim.world.scenario import from_dict

ONE_CALL = {"name": "keys", "seed": 757, "until": "15m", "turns": [{"chat": "chat-1", "tool_calls": [
    {"id": "toolu_01", "tool": "execute", "command": "make test", "runs_for": "12h", "timeout": "10h"}]}]}


def _run(world: dict, variant: str = "contract", faults=(), until: str | None = None, data=ONE_CALL,
         idle: str | None = None):
    data = copy.deepcopy(data)
    data["world"] = world
    data["faults"] = list(faults)
    if until:
        data["until"] = until
    return run_scenario(from_dict(data), variant, idle=idle)


def _fired(run, node: str, name_part: str) -> list[int]:
    return [r["t_ms"] for r in run.world.trace
            if r.get("kind") == "timer" and r.get("node") == node and name_part in r.get("name", "")]


def _starts(run) -> list[int]:
    return [r["t_ms"] for r in run.world.trace if r.get("truth") == "process_started"]


def test_attempt_timeout_5m_under_today_gives_three_starts_in_15_minutes():
    """The incident's shape sped up: under today each attempt that times out starts the
    command again; with a 5 min attempt timeout that is three starts in 15 minutes
    (one under the contract, and one under today with the default 15 min)."""
    assert len(_starts(_run({"attempt_timeout": "5m"}, "today"))) == 3
    assert len(_starts(_run({}, "today"))) == 1
    assert len(_starts(_run({"attempt_timeout": "5m"}, "contract"))) == 1


def test_heartbeat_interval_sets_the_heartbeat_loop():
    run = _run({"heartbeat_interval": "3s"}, until="1m", idle="stepwise")  # every firing recorded
    fires = _fired(run, "replica-1", "heartbeat")
    assert {b - a for a, b in zip(fires, fires[1:])} == {3_000}


def test_acquisition_interval_sets_the_acquisition_loop():
    run = _run({"acquisition_interval": "5s"}, until="1m", idle="stepwise")  # every firing recorded
    fires = _fired(run, "replica-1", "acquire")
    assert {b - a for a, b in zip(fires, fires[1:])} == {5_000}


def test_dial_timeout_ends_the_wait_for_a_late_agent():
    """The agent boots at 40 s: the first dial ends after the dial timeout, 30 s by
    default, 5 s with the key."""
    for value, ms in (("5s", 5_000), (None, 30_000)):
        world = {"agent_boot_at": "40s"} | ({"dial_timeout": value} if value else {})
        run = _run(world, until="2m")
        sends = [r["t_ms"] for r in run.world.trace if r.get("kind") == "send" and r.get("route") == "dial"]
        fires = _fired(run, "replica-1", "/dial") + _fired(run, "replica-2", "/dial")
        assert fires and fires[0] - sends[0] == ms


def test_heartbeat_stale_sets_when_another_replica_takes_over():
    """After the owner's heartbeats stop, the chat changes owner once its heartbeat is
    stale: sooner with a 10 s stale window than with 30 s."""
    def takeover_ms(world):
        run = _run(world, faults=[{"kind": "ownership_change", "at": "20s"}], until="5m")
        acquired = [r["t_ms"] for r in run.world.trace if r.get("note") == "acquired"]
        return acquired[1] - 20_000
    fast, slow = takeover_ms({"heartbeat_stale": "10s", "acquisition_interval": "5s"}), \
        takeover_ms({"acquisition_interval": "5s"})
    assert fast <= 10_000 + 5_000 + 9_000 < slow


def test_agent_answer_timeout_bounds_a_start_the_agent_never_answers():
    """A partition swallows the start: chatd gives up on it after the agent answer
    timeout (5 s with the key, 1 min by default) and commits unknown."""
    data = copy.deepcopy(ONE_CALL)
    data["turns"][0]["tool_calls"][0].update(runs_for="10m", timeout="5m")
    faults = [{"kind": "lose", "message": {"route": "start", "tool_call": "toolu_01", "direction": "response"}}]

    def first_result_ms(world):
        run = _run(world, faults=faults, data=data, until="5m")
        return next(r["t_ms"] for r in run.world.trace if r.get("truth") == "result_committed")
    fast, slow = first_result_ms({"agent_answer_timeout": "5s"}), first_result_ms({})
    assert fast < 10_000 and 60_000 <= slow < 70_000


def test_world_timing_is_the_default_without_keys():
    """No timing key: the reference Timing itself (its defaults are the reference)."""
    from toolcall_sim.model.timing import DEFAULT_TIMING

    assert world_timing(from_dict(ONE_CALL)) is DEFAULT_TIMING
    assert world_timing(from_dict({**ONE_CALL, "world": {"attempt_timeout": "5m"}})).task_timeout_ms == 300_000
