"""A swarm seed's set-up, written out for speed, gives what the general code gives: the
tool-call arguments ``toolcall_sim.world.build._args_json`` writes are ``json.dumps``'s text, the
durations ``format_duration`` remembers are the ones it computes and parses back, and a
seed's own generator (``toolcall_sim.world.stories._SeedRandom``) draws what ``random.Random`` draws."""

from __future__ import annotations

import json
import pathlib
import random

import pytest

from toolcall_sim.world import build as B
from toolcall_sim.world import scenario_spec, stories
from toolcall_sim.world.scenario import ToolCallSpec, format_duration, load, parse_duration
from toolcall_sim.world.scenario_drawn import from_drawn

SCENARIOS = sorted((pathlib.Path(__file__).resolve().parent.parent / "scenarios").rglob("*.toml"))


def _dumps_args(spec: ToolCallSpec) -> str:
    """The arguments as sim/world/build.py built them before ``_args_json``: a dict, dumped."""
    if spec.tool == "execute":
        args: dict = {"command": spec.command}
        if spec.timeout_ms is not None:
            args["timeout"] = format_duration(spec.timeout_ms)
        if spec.background:
            args["run_in_background"] = True
    elif spec.tool == "edit_files":
        args = {"files": [{"path": spec.path, "edits": [{"search": s, "replace": r} for s, r in spec.edits]}]}
    else:
        args = {"path": spec.path, "content": spec.content}
    return json.dumps(args, sort_keys=True, separators=(",", ":"))


def _calls():
    for path in SCENARIOS:
        try:
            scenario = load(path)
        except Exception:  # noqa: BLE001 - a file that does not load has no calls to compare
            continue
        for turn in scenario.turns:
            yield from turn.tool_calls
    for seed in range(1, 301):
        data = stories.draw_scenario(seed)
        for turn in from_drawn(data).turns:
            yield from turn.tool_calls
    odd = 'a "quoted" \\ path\t\n\u00e9\u4e2d\U0001f600\x00'
    yield ToolCallSpec("t1", "execute", command=odd, timeout_ms=90_061, background=True)
    yield ToolCallSpec("t2", "execute", command=odd)
    yield ToolCallSpec("t3", "edit_files", path=odd, edits=((odd, "x"), ("", odd)))
    yield ToolCallSpec("t4", "edit_files", path="/a", edits=())
    yield ToolCallSpec("t5", "write_file", path=odd, content=odd)


def test_args_json_is_the_dumped_dict():
    n = 0
    for spec in _calls():
        assert B._args_json(spec) == _dumps_args(spec), spec
        n += 1
    assert n > 1000


def _format_computed(ms) -> str:
    """``format_duration`` without its memo."""
    if ms == 0:
        return "0s"
    out = ""
    for unit, size in (("h", 3_600_000), ("m", 60_000), ("s", 1_000), ("ms", 1)):
        if ms >= size:
            out += f"{ms // size}{unit}"
            ms %= size
    return out


@pytest.mark.parametrize("ms", [0, 1, 999, 1_000, 59_999, 60_000, 3_600_000, 5_400_001, 2**40, -1, -60_000,
                                1.5, 0.0, 2_000.0, True, False])
def test_format_duration_is_computed_with_or_without_its_memo(ms):
    for _ in range(2):  # the first call may fill the memo, the second may read it
        assert format_duration(ms) == _format_computed(ms)
        assert type(format_duration(ms)) is str


def test_written_durations_parse_back_to_their_values():
    rng = random.Random(7)
    values = [rng.randint(0, 10 * 3_600_000) for _ in range(3000)] + list(range(0, 2000, 7))
    for ms in values:
        format_duration(ms)
    for text, ms in list(scenario_spec.WRITTEN_MS.items()):
        assert parse_duration(text, "d") == ms
        assert format_duration(ms) == text
    assert len(scenario_spec.WRITTEN_MS) <= scenario_spec._WRITTEN_MAX


def test_seed_generator_draws_as_random():
    for seed in ("swarm:1", "swarm:77", "x"):
        ours, ref = stories._SeedRandom(seed), random.Random(seed)
        for i in range(2000):
            a = i % 37 - 3
            b = a + (i * 7919) % (1 << (i % 70))
            assert ours.randint(a, b) == ref.randint(a, b)
            seq = tuple(range(1 + i % 13))
            assert ours.choice(seq) == ref.choice(seq)
            assert ours.random() == ref.random()
        with pytest.raises(ValueError):
            ours.randint(5, 4)
        with pytest.raises(IndexError):
            ours.choice(())
        assert ours.getstate() == ref.getstate()


def test_handwritten_inits_of_the_world_config_match_their_fields():
    """``WorldConfig`` and ``ChatSpec`` (model/world_config.py) write their fields
    straight into the instance dict, as tests/test_core_records.py checks of the hot
    states: the same parameters, in order, with the fields' defaults, and the instance the
    generated ``__init__`` would build."""
    import dataclasses
    import inspect

    from toolcall_sim.model import system as msys

    for cls in (msys.WorldConfig, msys.ChatSpec):
        fields = dataclasses.fields(cls)
        params = list(inspect.signature(cls.__init__).parameters.values())[1:]
        assert [p.name for p in params] == [f.name for f in fields], cls.__name__
        for p, f in zip(params, fields):
            default = f.default if f.default is not dataclasses.MISSING else inspect.Parameter.empty
            assert p.default is default or p.default == default, (cls.__name__, f.name)
        values = [f"v{i}" for i in range(len(fields))]
        built = cls(*values)
        assert list(built.__dict__) == [f.name for f in fields]
        assert built == cls(*values) and hash(built) == hash(cls(*values))
        assert dataclasses.replace(built, **{fields[0].name: "w"}) == cls("w", *values[1:])
        with pytest.raises(dataclasses.FrozenInstanceError):
            setattr(built, fields[0].name, "other")
    assert msys.WorldConfig().agent_config is msys.WorldConfig.agent_config
