"""Replay a list of labelled actions through the pure model, with no simpy and no chance.

The simpy world records every action it applies; feeding them back through
``toolcall_sim.model.system.apply`` rebuilds the same trace, record for record. A replay that no longer
fits (the code changed) stops at the first action that does not apply and says why.

``replay_actions`` replays actions already in hand; ``toolcall_sim.drivers.counterexample.replay`` reads a
counterexample or trace file, replays its actions with this, and judges the properties.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass

from toolcall_sim.model import system as msys


@dataclass
class ReplayResult:
    trace: list[dict]
    final: msys.System
    applied: int
    mismatch: str | None = None


def replay_actions(config: msys.WorldConfig, actions, header: dict | None = None) -> ReplayResult:
    """The trace the simpy world would have written for these actions (with ``header``
    first, as ``toolcall_sim.world.run`` writes it), and where the actions stopped fitting, if they did."""
    step = msys.initial(config)
    s = step.system
    trace = ([{"kind": "header", "t_ms": 0, **{k: v for k, v in header.items() if k not in ("kind", "t_ms")}}]
             if header else [])
    trace.extend(step.records)
    for i, action in enumerate(actions):
        try:
            step = msys.apply(s, action)
        except msys.ReplayMismatch as err:
            return ReplayResult(trace, s, i, f"step {i + 1} ({action.label()}): {err}")
        except (KeyError, ValueError, TypeError, AttributeError, IndexError) as err:
            # An action read from a file that names what this world does not have (a
            # replica, a timer, a malformed parameter) does not fit it either.
            return ReplayResult(trace, s, i, f"step {i + 1} ({action.label()}): does not apply "
                                             f"({type(err).__name__}: {err})")
        s = step.system
        trace.append({"kind": "action", "t_ms": action.at_ms, "label": action.label(), **_fields(action)})
        trace.extend(step.records)
    return ReplayResult(trace, s, len(actions))


def _fields(action) -> dict:
    out = msys.action_to_json(action)
    out.pop("at_ms", None)
    return out


def trace_lines(trace: list[dict]) -> list[str]:
    """The trace as JSON lines: sorted keys, no spaces, so equal runs give equal bytes."""
    return [json.dumps(rec, sort_keys=True, separators=(",", ":"), default=str) for rec in trace]


def trace_sha256(trace: list[dict]) -> str:
    """A run's identity: the SHA-256 of its trace file (JSON lines, newline-terminated)."""
    return hashlib.sha256(("\n".join(trace_lines(trace)) + "\n").encode()).hexdigest()
