"""A counterexample written as a ``[replay]`` scenario file that ``toolcall-sim run``
replays: Rule 4 of sim/world/scenario_replay.py. It runs the file it writes (to record
what the run shows), so it imports the runner, which no module it imports imports back.
"""

from __future__ import annotations

import json
import re
import tomllib

from toolcall_sim.model import system as msys
from toolcall_sim.model import vocabulary
from toolcall_sim.world.scenario_replay import MARKER
from toolcall_sim.world.scenario_spec import ScenarioError, format_duration

_BARE = re.compile(r"[^A-Za-z0-9_-]")  # a character a TOML key must be quoted for


class NotWritten(Exception):
    """One line: why a counterexample has no scenario file."""


def step_line(action) -> dict:
    """One action as a step's table (Rule 2's words); NotWritten for an action the
    explorer never takes (an ``Idle`` batch, a fault the explorer has not got)."""
    as_json = msys.action_to_json(action)
    do = as_json.pop("action")
    if do not in vocabulary.REPLAY_STEPS:
        raise NotWritten(f"a {do} step is the timed world's, not the explorer's")
    out = {"at_ms": as_json.pop("at_ms"), "do": do}
    if do in ("deliver", "lose"):
        return out | {"seq": action.seq, "msg": action.what}
    if do == "fault":
        if action.kind not in vocabulary.REPLAY_FAULTS or \
                tuple(k for k, _ in action.params) != vocabulary.REPLAY_FAULTS[action.kind]:
            raise NotWritten(f"a {action.kind} fault with {dict(action.params)} is not one of the explorer's")
        return out | {"fault": action.kind, **dict(action.params)}
    return out | as_json


def document(world: dict, prop: str, residual_risk: str | None, detail: str, actions) -> str:
    """The counterexample in ``world`` (a counterexample file's world: ``explore`` or
    ``explore-scenario``) as a scenario file's text (Rule 4); NotWritten, one line, when
    it cannot be one or its replay does not show ``prop``."""
    from toolcall_sim.model import properties as props
    from toolcall_sim.model import worlds
    from toolcall_sim.world import explore_scenario as es
    from toolcall_sim.world.run import run_scenario
    from toolcall_sim.world.scenario import from_dict
    from toolcall_sim.world.scenario_toml import to_toml

    variant = world["variant"]
    bounds = world["bounds"]
    found = prop + (f"-{residual_risk}" if residual_risk else "")
    steps = [step_line(a) for a in actions]
    if not steps:
        raise NotWritten("the violation holds in the initial state: there is no step to replay")
    comment = [f"{MARKER}: the shortest path the search found to {found}"]
    if world["kind"] == "explore":
        name = world["name"]
        head = {"name": f"{name}-{variant}-{found}", "summary": "", "variant": variant,
                "until": format_duration(bounds["horizon_ms"] * bounds["scale"])}
        table = {"world": name} | ({"second": world["second"]} if world["second"] != "background" else {})
        chats = ", ".join(f"{c.name} is chat {c.chat_id}" for c in worlds.build(name, variant, world["second"]).chats)
        comment += [f"# in the explorer's {name} world (model/worlds.py) under {variant}, as a scenario",
                    "# `toolcall-sim run` replays step by step (scenarios/README.md, [replay]). The steps are on the",
                    f"# explorer's clock, 1 small ms for 1 s; until is the search's horizon. {chats}."]
        body = {}
    else:
        raw = world["scenario"]
        scenario = from_dict(raw, "world.scenario")
        ratio = es.ratio_of(scenario)
        own = es.build(scenario, variant, world.get("faults", "anywhere"))  # the horizon of until, no --horizon
        until = raw.get("until")
        if own.bounds.horizon_ms != bounds["horizon_ms"]:
            shift = own.bounds.horizon_ms - es.small(scenario.until_ms, ratio)
            if bounds["horizon_ms"] <= shift:
                raise NotWritten(f"the horizon ({bounds['horizon_ms']} small ms) ends before the chats start")
            until = format_duration(int((bounds["horizon_ms"] - shift) * ratio))
        head = {"name": f"{scenario.name}-{variant}-{found}", "summary": "", "variant": variant}
        if until is not None:
            head["until"] = until
        table = {}
        body = {k: raw[k] for k in ("world", "turns") if k in raw}
        chats = ", ".join(f"{c.name} is chat {c.chat_id}" for c in own.config.chats)
        comment += [f"# in {scenario.name} under {variant}, as a scenario `toolcall-sim run` replays step by step",
                    "# (scenarios/README.md, [replay]): its world and turns, on the explorer's clock as",
                    f"# `toolcall-sim explore` builds them (1 small ms = {format_duration(int(ratio))}); until gives the",
                    f"# search's horizon. {chats}."]
    head["summary"] = (f"explore's counterexample: {found} in {len(steps)} steps ({detail})" if detail else
                       f"explore's counterexample: {found} in {len(steps)} steps")
    replay_part = {"replay": table | {"steps": steps}}

    def text(expect: dict) -> str:
        out = "\n".join(comment) + "\n" + to_toml(head | body) + to_toml(replay_part)
        for key, wanted in expect.items():  # ([expect.<variant>] as a section: to_toml would inline it)
            out += f"\n[expect.{json.dumps(key) if _BARE.search(key) else key}]\n" \
                + "".join(f"{k} = {json.dumps(v)}\n" for k, v in wanted.items())
        if tomllib.loads(out) != head | body | replay_part | ({"expect": expect} if expect else {}):
            raise NotWritten("the TOML writer lost information")
        return out

    try:
        result = run_scenario(from_dict(tomllib.loads(text({})), "counterexample"), variant)
    except ScenarioError as err:
        raise NotWritten(f"its replay was refused: {str(err).split(': ', 1)[1]}") from None
    violated, risks = result.found()
    shown = prop in violated if residual_risk is None or residual_risk in props.KNOWN_FINDINGS else residual_risk in risks
    if not shown:
        raise NotWritten(f"its replay shows {', '.join(violated + risks) or 'no violation'}, not {found}")
    return text({variant: {"violations": violated, "residual_risks": risks}})
