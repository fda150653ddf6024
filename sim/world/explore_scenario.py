"""A scenario as the explorer's world: ``toolcall-sim explore SCENARIO.toml``.

Theory of operation
-------------------
A scenario describes one timed world (sim/world/build.py ``build``); the explorer searches
every interleaving of a small world on its own clock (model/explore.py, model/worlds.py).
``build(scenario, variant)`` turns the one into the other and says what it did (``lines``),
or refuses with one line (``ScenarioError``, exit 2) naming the part it cannot honour:
nothing a scenario says is accepted and then ignored.

Rule 1 (what is kept). Replicas, chats, turns, tool calls, files, the agent kind, the
        workspace, ``replica_variants`` and ``message_ids_per_chat`` are the timed world's,
        built by sim/world/build.py ``build`` itself from a copy of the scenario whose durations are
        already on the explorer's clock; only the rules (chatd's timing, the agent's
        durations, each replica's variant) are rebuilt on that clock, as model/worlds.py
        builds them (the planted bug's knobs on top: worlds.py Rule 1).
Rule 2 (one ratio). The explorer's clock is ``Timing.explorer()``: small integer ms that
        keep the orders the contract relies on. A scenario's durations are put on it with
        one ratio, ``R`` = the scenario's attempt timeout (15m unless it sets
        ``attempt_timeout``) / the explorer's attempt timeout (10): each duration the
        scenario writes (a timing key it sets, ``generation_time``, ``age_margin``,
        ``handler_time``, ``agent_boot_at``, ``chat_start``, ``chat_stagger``, a tool call's
        ``runs_for`` and ``timeout``, ``until``) becomes ``round(d / R)`` small ms. A key
        the scenario leaves at its default takes the explorer's value (which stands for
        that value times ``R``, not for the reference's real default: the explorer's
        clock is the reference compressed, with its worker loops switched off).
        A duration above 0 becomes at least 1 small ms (a command that runs can be
        interrupted while it runs).
Rule 3 (refusals of scaling). Rounding must not tell a lie about an order the contract
        relies on. For each pair it orders (a command's run against its deadline, its
        attempt and the horizon; a deadline (its ``timeout``, or chatd's default for a
        foreground call) against the attempt timeout, the answer timeout and the agent's
        output wait cap; the handler time against the answer timeout, the attempt and
        each deadline; the generation time against the age margin and the attempt; a
        ``chat_start`` against the agent's boot plus its margin), two durations that
        differ must stay in the same order and not collapse into one small value (a
        50 s command and a 1 m timeout both becoming 1 small ms). An explorer key the
        scenario did not set stands for its value times ``R``. And the clock built must
        break no ordering of ``timing.ORDERINGS`` that ``Timing.explorer()`` keeps. Either
        is refused, one line naming the two durations and the ratio.
Rule 4 (chats start late). A chat starts once the agent has been up longer than the age
        margin (worlds.py Rule 3): ``agent_boot_at`` + 4 age margins unless the scenario
        sets ``chat_start``; the horizon is ``until`` on the explorer's clock, moved by as
        much as the chats' start was.
Rule 5 (faults become budgets). Each fault kind the scenario names may happen as many
        times as it names it, at any point of any path (the explorer's budgets,
        model/explore_actions.py): ``agent_restart`` (with no ``downtime``: the
        explorer's restart boots at once) -> ``agent_restarts``; ``ownership_change`` and
        ``takeover`` -> ``ownership_changes`` (an immediate takeover by any live replica
        but the owner, which is what a stale heartbeat leads to; a ``to`` is honoured when
        it is the only other replica, else refused); ``interrupt`` -> ``interrupts``;
        ``lose`` of an agent's answer on a start, edit, write or cancel ->
        ``lost_responses``. Any chat the explorer's fault may strike is in the world, so a
        fault's ``chat`` is widened, like its time, and the lines say so. Attempt
        timeouts are no fault of the scenario: ``task_retries`` stays the explorer's 1
        unless ``--task-retries`` says otherwise. Every other kind (a clock step, a database outage,
        a workspace change, a partition, a crash, a crafted request, a delayed answer, a handler
        panic, a second user message, an edit) is refused; a delayed request is Rule 6.
        ``--faults at-trigger`` holds each fault to its trigger instead (Rule 8).
Rule 6 (the network). The explorer's messages take any order and at most
        ``max_in_flight`` small ms (model/explore.py Rule 1): the scenario's largest
        latency ``floor(max / R)``, or, when the scenario delays a request (a ``delay``
        fault of a start, edit, write or cancel: the messages the explorer holds while
        time passes), that delay plus the latency, rounded as any duration (Rule 2) and
        kept on the same side of the age margin and the answer timeout (Rule 3): every
        such request may then be that late, the named one among them. ``--max-in-flight``
        wins when given, and the lines say which. A latency shape, stalls, a loss rate, per-link settings and
        node clocks (offset, drift, steps) have no counterpart: refused.
Rule 7 (publishes). ``[world] pubsub`` decides whether database events are messages
        (``late``, the default, as in production and in the timed run) or reach every
        replica within the commit's step (``at_commit``, the explorer's small worlds).
Rule 8 (faults at their trigger). Under ``--faults at-trigger`` each budget above comes
        with one window per fault (``Bounds.fault_windows``, model/explore_actions.py),
        and the budget's fault is offered only in a state where one holds. A window reads
        the system state alone (model/explore.py Rule 10), so it can only say what the
        state shows: an ``at`` time (plus its offset) is ``after`` that time on the
        small clock moved by the chats' start (Rule 4), from then on, since the clock
        jumps from timer to timer and may never stop at the exact ms; a
        ``request_sent`` or ``response_sent`` event is ``message``: such a message in
        flight; ``process_started`` is ``process``: the tool call's process runs on the
        agent; ``result_committed`` and ``message_committed``: the result, or the
        assistant message carrying the call, is in the database. A ``lose`` drops only
        the answer its ``message`` names. A fault's ``chat`` restricts it to that chat,
        a takeover's ``to`` to that replica (so with any number of replicas). Refused,
        one line: an ``nth`` above 1 (the state counts no events: a window would open at
        every one), a delivered-message event (the state keeps no record of a delivery),
        a process or commit event of any tool call, an event's offset of half a small
        ms or more (the state does not record when the event happened; a smaller one
        is the event's own ms). The faults of one budget share its count.
"""

from __future__ import annotations

import dataclasses

from dataclasses import dataclass, replace
from fractions import Fraction

from toolcall_sim.model import agent, planted_bugs
from toolcall_sim.model import system as msys
from toolcall_sim.model.explore_actions import LOSABLE_ROUTES, REDUCTIONS, Bounds
from toolcall_sim.model.explore_context import BUDGETS
from toolcall_sim.model.timing import DEFAULT_TIMING, Timing
from toolcall_sim.model import vocabulary
from toolcall_sim.model.core import EMPTY, FMap
from toolcall_sim.world.scenario_spec import Scenario, ScenarioError, format_duration

EXPLORER = Timing.explorer()
# [world] timing keys the explorer takes on its clock, and the ones it cannot: its worker
# loops are switched off (ownership changes are the takeover budget).
LOOP_KEYS = ("heartbeat_interval", "heartbeat_stale", "acquisition_interval")
# Scenario fault kind -> the explorer's budget (model/explore_context.py BUDGETS).
BUDGET_OF_FAULT = {"agent_restart": "agent_restarts", "ownership_change": "ownership_changes",
                   "takeover": "ownership_changes", "interrupt": "interrupts", "lose": "lost_responses"}
FAULT_MODES = ("anywhere", "at-trigger")  # --faults: at any point, or only at the trigger (Rule 8)
# [world] durations besides the timing keys (Rule 2).
_WORLD_DURATIONS = ("generation_time", "age_margin", "handler_time", "agent_boot_at", "chat_start", "chat_stagger")


@dataclass(frozen=True)
class Explorable:
    """What ``build`` made: the world on the explorer's clock, the search's bounds, the
    ratio (real ms per small ms), and what it did, one line each."""

    config: msys.WorldConfig
    bounds: Bounds
    ratio: Fraction
    lines: tuple[str, ...]


def _refuse(scenario: Scenario, where: str, why: str):
    raise ScenarioError(f"{scenario.path}: {where}: {why} (toolcall-sim explore cannot honour it)")


def ratio_of(scenario: Scenario) -> Fraction:
    """Rule 2: real ms per small ms."""
    attempt_ms = scenario.world_value("attempt_timeout") or DEFAULT_TIMING.task_timeout_ms
    return Fraction(attempt_ms, EXPLORER.task_timeout_ms)


def small(real_ms: int, ratio: Fraction) -> int:
    """``real_ms`` on the explorer's clock: rounded to the nearest small ms (halves up),
    and a duration above 0 to at least 1 (something that takes time never becomes
    instantaneous: a command that runs is one an interrupt can strike)."""
    if real_ms <= 0:
        return 0
    return max(1, int(Fraction(real_ms) / ratio + Fraction(1, 2)))


def _check_unsupported(scenario: Scenario, faults_mode: str) -> None:
    """Rules 5, 6 and 8: every part the explorer has no counterpart for, refused by name."""
    if scenario.clocks:
        node = scenario.clocks[0][0]
        _refuse(scenario, f"clocks.{node}", "the explorer runs every node on true time (no offset, drift or steps)")
    if scenario.latency_shape:
        _refuse(scenario, "network.latency.shape", f"a {dict(scenario.latency_shape)['shape']} latency: the "
                "explorer's messages take any order within --max-in-flight, no distribution")
    if scenario.stalls:
        _refuse(scenario, "network.stalls", "the explorer's messages have no stalls beyond --max-in-flight")
    if scenario.loss:
        _refuse(scenario, "network.loss", "a loss rate: the explorer loses answers by its lost-responses budget "
                "(a `lose` fault), not by chance")
    if scenario.links:
        _refuse(scenario, f"network.links.{scenario.links[0][0]}", "per-link latency or loss")
    for key in LOOP_KEYS:
        if scenario.world_value(key) is not None:
            _refuse(scenario, f"world.{key}", "the explorer switches the worker loops off (ownership changes are "
                    "its takeover budget)")
    replicas = scenario.replicas()
    for i, fault in enumerate(scenario.faults):
        where = f"faults[{i}]"
        if fault.kind not in BUDGET_OF_FAULT and fault.kind != "delay":
            _refuse(scenario, where, f"a {fault.kind} fault: the explorer's faults are "
                    f"{', '.join(BUDGET_OF_FAULT)} and a delay of a request")
        if fault.kind == "agent_restart" and fault.get("downtime"):
            _refuse(scenario, f"{where}.downtime", "the explorer's agent restart boots again at once")
        if fault.kind in ("takeover", "ownership_change") and fault.get("to") is not None and len(replicas) > 2 \
                and faults_mode != "at-trigger":
            _refuse(scenario, f"{where}.to", f"the explorer's takeover goes to any live replica but the owner, "
                    f"not only {fault.get('to')} of {len(replicas)}")
        # A message fault the explorer has: the loss of an answer, a request held late.
        wanted = {"lose": ("response", "loses only the agent's answers"),
                  "delay": ("request", "holds only chatd's requests while time passes")}.get(fault.kind)
        m = fault.get("message")
        if wanted and (m.direction != wanted[0] or m.route not in LOSABLE_ROUTES):
            _refuse(scenario, f"{where}.message", f"the explorer {wanted[1]} (on {', '.join(LOSABLE_ROUTES)}), "
                    f"not a {m.direction} on {m.route}")
    if faults_mode == "at-trigger":
        for i, fault in enumerate(scenario.faults):
            if fault.kind != "delay":
                _window_of(scenario, i, fault, 0, ratio_of(scenario))  # refuses what has no window


# Trigger events -> the window kind that holds from the event on (Rule 8); the message
# events are ("message", ...) windows, the delivered ones refused (the state keeps no
# record of a delivered message).
_STATE_WINDOWS = {"process_started": "process", "result_committed": "result", "message_committed": "message_committed"}
_MESSAGE_EVENTS = ("request_sent", "response_sent")


def _window_of(scenario: Scenario, i: int, fault, shift_ms: int, ratio: Fraction) -> tuple:
    """Rule 8: scenario fault ``i``'s window (model/explore_actions.py) on the explorer's
    clock, the story moved ``shift_ms`` later by the chats' start (Rule 4); refused in
    one line when the system state cannot say when its trigger holds."""
    where = f"--faults at-trigger: faults[{i}]"
    if fault.kind == "lose":
        m = fault.get("message")
        if m.nth != 1:
            _refuse(scenario, f"{where}.message.nth", f"nth {m.nth} of the matching answers: the explorer's state does "
                    "not count answers, so a window for it would open at every one")
        return ("message", "response", m.route or "", m.tool_call or "")
    t = fault.trigger
    if t.at_ms is not None:
        return ("after", small(t.at_ms + t.offset_ms, ratio) + shift_ms)
    if int(Fraction(t.offset_ms) / ratio + Fraction(1, 2)):  # an offset below half a small ms is the event's ms
        _refuse(scenario, f"{where}.offset", f"{format_duration(t.offset_ms)} after a {t.event} event "
                f"({format_duration(int(ratio))} a small ms): the explorer's state does not record when an event happened")
    m = t.match
    if m.nth != 1:
        _refuse(scenario, f"{where}.when.nth", f"nth {m.nth} of the {t.event} events: the explorer's state does not "
                "count events, so a window for it would open at every one")
    if t.event in _MESSAGE_EVENTS:
        return ("message", m.direction, m.route or "", m.tool_call or "")
    if t.event in _STATE_WINDOWS and m.tool_call is not None:
        return (_STATE_WINDOWS[t.event], m.tool_call)
    _refuse(scenario, f"{where}.when", f"a {t.event} event" + (" of any tool call" if t.event in _STATE_WINDOWS else
            ": the explorer's state keeps no record of a delivered message"))


def _window_words(window: tuple) -> str:
    """A window for the budgets line."""
    kind = window[0]
    if kind == "after":
        return f"from {window[1]} small ms on"
    if kind == "message":
        return f"while a {window[2] or 'any'} {window[1]}" + (f" of {window[3]}" if window[3] else "") + " is in flight"
    return {"process": "while a process of {} runs", "result": "once the result of {} is committed",
            "message_committed": "once the message carrying {} is committed"}[kind].format(window[1])


def _durations(scenario: Scenario, ratio: Fraction) -> list[tuple[str, int, int]]:
    """Every duration the scenario writes: (name, real ms, small ms) (Rule 2)."""
    out = []
    world = scenario.world_values()
    for key in list(vocabulary.TIMING_KEYS) + list(_WORLD_DURATIONS):
        if world.get(key) is not None:
            out.append((f"world.{key}", world[key], small(world[key], ratio)))
    for turn in scenario.turns:
        for tc in turn.tool_calls:
            if tc.tool == "execute":
                out.append((f"{tc.id}.runs_for", tc.runs_for_ms, small(tc.runs_for_ms, ratio)))
                if tc.timeout_ms is not None:
                    out.append((f"{tc.id}.timeout", tc.timeout_ms, small(tc.timeout_ms, ratio)))
    for i, fault in enumerate(scenario.faults):
        if fault.kind == "delay":
            by = fault.get("by") + scenario.latency_max_ms
            out.append((f"faults[{i}].by", by, small(by, ratio)))
    out.append(("until", scenario.until_ms, small(scenario.until_ms, ratio)))
    return out


def _check_orders(scenario: Scenario, ratio: Fraction, durations: list[tuple[str, int, int]]) -> None:
    """Rule 3: no two durations the contract orders collapse or swap (``ORDERED``); an
    explorer key the scenario left unset stands for its small value times the ratio."""
    sm = {name: (Fraction(real), value) for name, real, value in durations}

    def key(field: str, world_key: str | None = None):
        if world_key is not None and f"world.{world_key}" in sm:
            return f"world.{world_key}", sm[f"world.{world_key}"]
        value = getattr(EXPLORER, field)
        return f"the explorer's {field} ({value})", (value * ratio, value)

    attempt = key("task_timeout_ms", "attempt_timeout")
    answer = key("agent_answer_timeout_ms", "agent_answer_timeout")
    margin = key("agent_age_margin_ms", "age_margin")
    pairs = [(key("default_gen_time_ms", "generation_time"), margin), (key("default_gen_time_ms", "generation_time"), attempt)]
    boot = sm.get("world.agent_boot_at", (Fraction(0), 0))
    if "world.chat_start" in sm:
        pairs.append((("world.chat_start", sm["world.chat_start"]),
                      ("agent_boot_at + age margin", (boot[0] + margin[1][0], boot[1] + margin[1][1]))))
    handler = ("world.handler_time", sm["world.handler_time"]) if "world.handler_time" in sm else None
    if handler:
        pairs += [(handler, answer), (handler, attempt)]
    until = ("until", sm["until"])
    for name in sm:
        if name.startswith("faults["):  # a delayed request against the age rule's transit allowance
            pairs += [((name, sm[name]), margin), ((name, sm[name]), answer)]
    for turn in scenario.turns:
        for tc in turn.tool_calls:
            if tc.tool != "execute":
                continue
            runs = (f"{tc.id}.runs_for", sm[f"{tc.id}.runs_for"])
            if tc.timeout_ms is not None:
                deadline = (f"{tc.id}.timeout", sm[f"{tc.id}.timeout"])
            else:
                deadline = key("execute_default_timeout_ms")
            pairs += [(runs, attempt), (runs, until), (deadline, attempt), (deadline, answer),
                      (deadline, key("agent_output_wait_cap_ms"))]
            if not tc.background:
                pairs.append((runs, deadline))
            if handler:
                pairs.append((handler, deadline))
    for (a, (ra, sa)), (b, (rb, sb)) in pairs:
        if (ra < rb) != (sa < sb) or (ra > rb) != (sa > sb):
            how = "both become" if sa == sb else "swap order as"
            _refuse(scenario, "timing", f"at 1 small ms = {format_duration(int(ratio))}, {a} "
                    f"({format_duration(int(ra))}) and {b} ({format_duration(int(rb))}) {how} {sa} and {sb} small ms")


def _timing(scenario: Scenario, ratio: Fraction) -> Timing:
    """The explorer's clock with the scenario's own timing keys on it (Rule 2); refused
    when it breaks an ordering ``Timing.explorer()`` keeps (Rule 3)."""
    world = scenario.world_values()
    changes = {field: small(world[key], ratio) for key, field in vocabulary.TIMING_KEYS.items()
               if world.get(key) is not None}
    if world.get("age_margin") is not None:
        changes["agent_age_margin_ms"] = small(world["age_margin"], ratio)
    if world.get("generation_time") is not None:
        changes["default_gen_time_ms"] = small(world["generation_time"], ratio)
    timing = replace(EXPLORER, **changes)
    broken = [v for v in timing.violations() if v not in set(EXPLORER.violations())]
    if broken:
        _refuse(scenario, "timing", f"at 1 small ms = {format_duration(int(ratio))}: {broken[0]}")
    return timing


def build(scenario: Scenario, variant: str, faults_mode: str = "anywhere", max_in_flight_ms: int | None = None,
          horizon_ms: int | None = None, budgets: dict | None = None, reduction: str = "all") -> Explorable:
    """The scenario under ``variant`` as the explorer's world and bounds (Rules 1-8).
    ``max_in_flight_ms`` and ``horizon_ms`` (small ms) and ``budgets`` (budget -> count)
    are flags given on the command line: they win over what the scenario implies;
    ``reduction`` is ``--reduction``'s choice (model/explore_actions.py ``REDUCTIONS``)."""
    from toolcall_sim.world import build as timed

    if faults_mode not in FAULT_MODES:
        raise ScenarioError(f"{scenario.path}: faults: unknown mode {faults_mode!r} (known: {', '.join(FAULT_MODES)})")
    _check_unsupported(scenario, faults_mode)
    ratio = ratio_of(scenario)
    durations = _durations(scenario, ratio)
    _check_orders(scenario, ratio, durations)
    timing = _timing(scenario, ratio)
    sm = {name: value for name, _, value in durations}
    world = dict(scenario.world_values())
    margin = timing.agent_age_margin_ms
    boot = sm.get("world.agent_boot_at", 0)
    # The copy build reads (sim/world/build.py): every duration already small; the timing keys left out
    # (the clock is rebuilt below), the start of the chats per Rule 4.
    for key in vocabulary.TIMING_KEYS:
        world.pop(key, None)
    for key in ("handler_time", "agent_boot_at", "chat_stagger", "age_margin"):
        if key in world:
            world[key] = sm[f"world.{key}"]
    world["generation_time"] = timing.default_gen_time_ms
    world["chat_start"] = sm.get("world.chat_start", boot + 4 * margin)
    # Rule 4 moves the story later by this much; the horizon follows it.
    shift = world["chat_start"] - sm.get("world.chat_start", 0)
    turns = tuple(replace(t, tool_calls=tuple(
        replace(tc, runs_for_ms=sm[f"{tc.id}.runs_for"],
                timeout_ms=None if tc.timeout_ms is None else sm[f"{tc.id}.timeout"])
        if tc.tool == "execute" else tc for tc in t.tool_calls)) for t in scenario.turns)
    shrunk = replace(scenario, world=tuple(world.items()), turns=turns, faults=())
    config, _ = timed.build(shrunk, variant)
    # Rule 1: the rules on the explorer's clock, as model/worlds.py builds them.
    base = agent.AGENT_VARIANTS[world.get("agent", "rev-c")]
    if world.get("handler_time") is not None:
        base = replace(base, handler_ms=world["handler_time"])
    base = timing.agent_rules(base)
    chatd_rules, agent_rules = planted_bugs.resolve(variant, base, timing)
    replica_rules = {name: planted_bugs.resolve(v, base, timing)[0] for name, v in world.get("replica_variants", ())}
    config = replace(config, chatd_rules=chatd_rules, agent_config=replace(config.agent_config, rules=agent_rules),
                     replica_rules=FMap(replica_rules) if replica_rules else EMPTY, reference_timing=timing)
    lines = [f"clock: 1 small ms = {format_duration(int(ratio))} (attempt timeout "
             f"{format_duration(int(ratio * EXPLORER.task_timeout_ms))} -> {timing.task_timeout_ms} small ms); "
             + ", ".join(f"{name} {format_duration(real)} -> {value}" for name, real, value in durations)]
    lines.append(f"world: {len(config.replicas)} replicas, {len(config.chats)} chat(s), "
                 f"{sum(len(turn) for c in config.chats for turn in c.turns)} tool call(s), chats start at "
                 f"{config.chats[0].start_at_ms if config.chats else 0} small ms, publishes "
                 + ("within the commit's step" if config.pubsub_immediate else "as messages"))
    counts = dict.fromkeys(BUDGETS, 0)
    counts["task_retries"] = 1
    widened = []
    delays = []
    windows = []
    words = []
    chat_ids = {c.name: c.chat_id for c in config.chats}
    for i, fault in enumerate(scenario.faults):
        if fault.kind == "delay":
            delays.append((sm[f"faults[{i}].by"], i))
            continue
        budget = BUDGET_OF_FAULT[fault.kind]
        counts[budget] += 1
        if faults_mode == "at-trigger":
            chat, to = fault.get("chat"), fault.get("to") or ""
            window = _window_of(scenario, i, fault, shift, ratio)
            windows.append((budget, window, "" if chat is None else chat_ids.get(chat, chat), to))
            words.append(f"{budget} {_window_words(window)}" + (f" (chat {chat})" if chat else "")
                         + (f" (to {to})" if to else "") + f" (faults[{i}])")
        elif fault.get("chat") is not None and len(config.chats) > 1:
            widened.append(f"faults[{i}].chat")
    given = {b: n for b, n in (budgets or {}).items() if n is not None}
    counts.update(given)
    if windows:
        where = "; each only at its trigger: " + "; ".join(words)
    else:
        where = ("; each at any point" + (f" (and any chat: {', '.join(widened)})" if widened else "")
                 + ("; a lost answer: any answer to a start, edit, write or cancel" if counts["lost_responses"] else ""))
    lines.append("budgets: " + ", ".join(f"{b} {n}" + (" (flag)" if b in given else "") for b, n in counts.items())
                 + where)
    latency_small = int(Fraction(scenario.latency_max_ms) / ratio)
    implied, why = latency_small, f"the scenario's latency up to {format_duration(scenario.latency_max_ms)}"
    if delays and max(delays)[0] > latency_small:
        implied, i = max(delays)
        why = f"faults[{i}] delays a request by {format_duration(scenario.faults[i].get('by'))}, latency included"
    in_flight = implied if max_in_flight_ms is None else max_in_flight_ms
    horizon = sm["until"] + shift if horizon_ms is None else horizon_ms
    lines.append(f"in flight: at most {in_flight} small ms ("
                 + (f"--max-in-flight; the scenario gives {implied})" if max_in_flight_ms is not None else why + ")")
                 + f", horizon {horizon} small ms (" + ("--horizon)" if horizon_ms is not None else
                                                     f"until, after the chats' start {shift} small ms later)"))
    named = named_replicas(scenario, config.replicas)
    if named:
        lines.append(f"symmetry: {', '.join(named)} named by the scenario, never folded with another replica")
    symmetry, partial_order = REDUCTIONS[reduction]
    bounds = Bounds(max_in_flight_ms=in_flight, horizon_ms=horizon, scale=max(int(ratio), 1),
                    pinned_replicas=named, symmetry=symmetry, partial_order=partial_order, fault_windows=tuple(windows),
                    **counts)
    return Explorable(config, bounds, ratio, tuple(lines))


def named_replicas(scenario: Scenario, replicas: tuple[str, ...]) -> tuple[str, ...]:
    """The replicas the scenario's faults or expectations name (a takeover ``to``, a result
    expected from one): the search keeps each apart from the others (model/explore_symmetry.py
    Rule 1), so a story about replica-3 is never told as one about replica-2."""
    found: set[str] = set()

    def walk(value) -> None:
        if isinstance(value, str):
            if value in replicas:
                found.add(value)
        elif isinstance(value, (tuple, list)):
            for v in value:
                walk(v)
        elif isinstance(value, dict):
            for v in value.values():
                walk(v)
        elif dataclasses.is_dataclass(value) and not isinstance(value, type):
            for f in dataclasses.fields(value):
                walk(getattr(value, f.name))
    walk(scenario.faults)
    walk(scenario.expect)
    return tuple(r for r in replicas if r in found)
