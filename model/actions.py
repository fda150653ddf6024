"""Actions: the one vocabulary every driver speaks to ``toolcall_sim.model.system.apply``.

Theory of operation
-------------------
An action is one thing the world lets happen: a message is delivered (``Deliver``) or
lost (``Drop``), a timer fires (``Fire``), a fault strikes (``Fault``), or time passes
with nothing else happening (``Tick``), or a run of the replicas' periodic loops fires
without doing anything that leaves a record (``Idle``, model/idle.py). The simpy world, the exhaustive explorer and
hypothesis each choose actions; a list of them replays the same run anywhere, which is why
they are plain frozen values with a JSON form (``action_to_json``/``action_from_json``,
what counterexample files hold) and a label saying what they are (rule 2 of
``toolcall_sim.model.system``: a replay that stops matching says at which step and why,
``ReplayMismatch``). Every action carries ``at_ms``, the true time it happens (rule 1).
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any


@dataclass(frozen=True)
class Deliver:
    at_ms: int
    seq: int
    what: str

    def __init__(self, at_ms, seq, what):
        # (model/core.py ``SetTimer.__init__``: the fields written straight into the instance
        # dict; the simulated world builds one action per step)
        d = self.__dict__
        d["at_ms"], d["seq"], d["what"] = at_ms, seq, what

    def label(self) -> str:
        return f"deliver #{self.seq} {self.what}"


@dataclass(frozen=True)
class Drop:
    at_ms: int
    seq: int
    what: str

    def __init__(self, at_ms, seq, what):  # (as ``Deliver.__init__``)
        d = self.__dict__
        d["at_ms"], d["seq"], d["what"] = at_ms, seq, what

    def label(self) -> str:
        return f"lose #{self.seq} {self.what}"


@dataclass(frozen=True)
class Fire:
    at_ms: int
    node: str
    name: str

    def __init__(self, at_ms, node, name):  # (as ``Deliver.__init__``)
        d = self.__dict__
        d["at_ms"], d["node"], d["name"] = at_ms, node, name

    def label(self) -> str:
        return f"timer {self.node} {self.name}"


@dataclass(frozen=True)
class Fault:
    at_ms: int
    kind: str
    params: tuple[tuple[str, Any], ...] = ()

    def get(self, name: str, default: Any = None) -> Any:
        return dict(self.params).get(name, default)

    def label(self) -> str:
        args = " ".join(f"{k}={v}" for k, v in self.params)
        return f"fault {self.kind}" + (f" {args}" if args else "")


@dataclass(frozen=True)
class Tick:
    """Time passes with nothing else happening (the explorer's way to let messages stay
    in flight; the simpy world never needs it)."""

    at_ms: int

    def label(self) -> str:
        return f"tick to {self.at_ms} ms"


@dataclass(frozen=True)
class Idle:
    """The next ``fires`` firings of the replicas' periodic timers (acquisition polls,
    heartbeats, runner syncs), taken in (due, arming) order, the last at ``at_ms``, each
    of which records nothing but its own firing (model/idle.py says which and why). The
    simpy world writes one instead of a ``Fire`` step per idle firing; ``apply`` checks
    each firing is idle again, so a replay still proves the run."""

    at_ms: int
    fires: int

    def __init__(self, at_ms, fires):  # (as ``Deliver.__init__``)
        d = self.__dict__
        d["at_ms"], d["fires"] = at_ms, fires

    def label(self) -> str:
        return f"idle {self.fires} periodic timer fires to {self.at_ms} ms"


Action = Deliver | Drop | Fire | Fault | Tick | Idle

ACTION_TYPES = {"deliver": Deliver, "lose": Drop, "timer": Fire, "fault": Fault, "tick": Tick, "idle": Idle}


def action_to_json(action: Action) -> dict:
    kind = {Deliver: "deliver", Drop: "lose", Fire: "timer", Fault: "fault", Tick: "tick", Idle: "idle"}[type(action)]
    out: dict[str, Any] = {"action": kind, "at_ms": action.at_ms}
    names = _FIELD_NAMES.get(type(action))
    if names is None:
        names = _FIELD_NAMES[type(action)] = tuple(f.name for f in fields(action) if f.name != "at_ms")
    for name in names:
        value = getattr(action, name)
        # A fault's kind goes under "fault": "kind" is what a trace record is.
        out["fault" if name == "kind" else name] = [list(p) for p in value] if name == "params" else value
    return out


_FIELD_NAMES: dict[type, tuple[str, ...]] = {}  # action class -> its fields but at_ms, in order


def action_from_json(value: dict) -> Action:
    kind = value["action"]
    cls = ACTION_TYPES[kind]
    args = {k: v for k, v in value.items() if k != "action"}
    if cls is Fault:
        args["kind"] = args.pop("fault")
        args["params"] = tuple((k, _frozen(v)) for k, v in args.get("params", ()))
    return cls(**args)


def _frozen(value: Any) -> Any:
    """JSON lists back to the tuples a fault's params hold (a request's headers are
    pairs inside a tuple), so a replayed fault labels and records like the original."""
    return tuple(_frozen(v) for v in value) if isinstance(value, list) else value


class ReplayMismatch(Exception):
    """An action does not fit the system it is applied to (the code or the run changed)."""
