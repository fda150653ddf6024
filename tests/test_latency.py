"""Latency with real tails (issue 17): the ``[network]`` shapes and stalls are live,
deterministic, have the quantiles they promise, and are refused in one line when wrong.
A world without them draws exactly as before (the pinned trace hashes of the shipped
scenarios, tests/test_determinism.py and others, stay as they were)."""

from __future__ import annotations

import random
import textwrap

import pytest

from toolcall_sim.model import vocabulary
from toolcall_sim.world import latency
from toolcall_sim.cli.main import main
from toolcall_sim.world.run import run_scenario
from toolcall_sim.world.scenario import from_dict

BASE = """
name = "net"
until = "10m"
[[turns]]
chat = "chat-1"
tool_calls = [ { id = "toolu_01", tool = "execute", command = "true", runs_for = "1s" },
               { id = "toolu_02", tool = "write_file", path = "/a", content = "b" } ]
"""


def _hash(text: str) -> str:
    return run_scenario(from_dict(_toml(text)), "contract").trace_sha256


def _network(table: str) -> str:
    return BASE + "[network]\n" + table + "\n"


def test_lognormal_has_its_median_and_p99():
    shape = latency.LogNormal(median_ms=20, p99_ms=400)
    rng = random.Random("lognormal-test")
    draws = sorted(shape.draw_ms(rng) for _ in range(40_000))
    assert abs(draws[len(draws) // 2] - 20) <= 1
    assert 360 <= draws[int(len(draws) * 0.99)] <= 440
    assert shape.quantile_ms(0.5) == pytest.approx(20) and shape.quantile_ms(0.99) == pytest.approx(400)


def test_stalls_come_with_their_probability_and_range():
    stalls = latency.Stalls(probability=0.1, min_ms=1000, max_ms=3000)
    rng = random.Random("stalls-test")
    extras = [stalls.extra_ms(rng) for _ in range(20_000)]
    stalled = [e for e in extras if e]
    assert 0.09 < len(stalled) / len(extras) < 0.11
    assert min(stalled) >= 1000 and max(stalled) <= 3000


@pytest.mark.parametrize("name", sorted(vocabulary.LATENCY_SHAPES))
def test_every_latency_shape_changes_the_run_and_is_deterministic(name):
    example = vocabulary.LATENCY_SHAPES[name].example
    table = "latency = { " + ", ".join(f'{k} = "{v}"' for k, v in example.items()) + " }"
    shaped = _hash(_network(table))
    assert shaped != _hash(BASE)
    assert shaped == _hash(_network(table))


def test_stalls_change_the_run():
    ex = vocabulary.STALLS_EXAMPLE
    table = f'stalls = {{ probability = {ex["probability"]}, min = "{ex["min"]}", max = "{ex["max"]}" }}'
    assert set(ex) == set(vocabulary.STALL_FIELDS)
    assert _hash(_network(table)) != _hash(BASE)


def test_explicit_uniform_is_the_default_draw():
    """``shape = "uniform"`` with min and max is the world of a plain range, trace for trace."""
    assert _hash(_network('latency = { shape = "uniform", min = "2ms", max = "40ms" }')) == _hash(BASE)


def test_a_link_with_its_own_range_is_uniform_and_one_without_inherits_the_shape():
    shaped = from_dict({**_toml(_network('latency = { shape = "lognormal", median = "20ms", p99 = "1s" }')),
                        "network": {"latency": {"shape": "lognormal", "median": "20ms", "p99": "1s"},
                                    "links": {"agent->replica-1": {"latency": {"min": "5ms", "max": "5ms"}},
                                              "agent->replica-2": {"loss": 0.0}}}})
    from toolcall_sim.world.run import build

    _, options = build(shaped, "contract")
    assert options.links["agent->replica-1"].shape is None
    assert options.links["agent->replica-2"].shape == latency.LogNormal(20, 1000)


def _toml(text: str) -> dict:
    import tomllib

    return tomllib.loads(text)


BAD = [
    ('latency = { shape = "pareto", min = "1ms" }', "network.latency.shape: unknown shape 'pareto'"),
    ('latency = { shape = "lognormal", median = "20ms", p99 = "1s", min = "1ms" }',
     "network.latency.min: not used by a lognormal latency"),
    ('latency = { median = "20ms" }', "network.latency.median: not used by a uniform latency"),
    ('latency = { shape = "lognormal", median = "20ms" }', "network.latency.p99: required by a lognormal latency"),
    ('latency = { shape = "lognormal", median = "20ms", p99 = "10ms" }', "network.latency.p99: 10ms is below the median"),
    ('latency = { shape = "lognormal", median = "0s", p99 = "10ms" }', "network.latency.median: must be longer than 0s"),
    ('stalls = { probability = 0.0, min = "1s", max = "3s" }', "network.stalls.probability: must be above 0"),
    ('stalls = { probability = 0.1, min = "3s", max = "1s" }', "network.stalls: max 1s is below min 3s"),
    ('stalls = { probability = 0.1, min = "0s", max = "0s" }', "network.stalls.max: must be longer than 0s"),
    ('stalls = { probability = 0.1, max = "1s" }', "network.stalls.min: required"),
    ('stalls = { probability = 0.1, min = "1s", max = "2s", every = "1m" }', "network.stalls.every: unknown key"),
    ('[network.links."agent->replica-1"]\nlatency = { shape = "lognormal", median = "1ms", p99 = "2ms" }',
     "network.links.agent->replica-1.latency.shape: unknown key"),
]


@pytest.mark.parametrize("table,reason", BAD, ids=[r.split(":")[0] + str(i) for i, (_, r) in enumerate(BAD)])
def test_a_wrong_latency_is_one_line_exit_2(table, reason, tmp_path, capsys):
    path = tmp_path / "bad.toml"
    path.write_text(textwrap.dedent(_network(table)))
    assert main(["run", str(path)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "Traceback" not in err
    assert reason in err, err
