"""The simulated world: a discrete-event agenda decides *when*, one seeded generator
decides *whether*, and the pure ``toolcall_sim.model.system`` decides *what*.

Theory of operation
-------------------
``Simulation`` owns the agenda (a heap of entries at integer milliseconds of true time),
the current ``toolcall_sim.model.system.System``, the trace, and the network's ``Random``, seeded from
the scenario seed and the component's name (``"<seed>:network"``; the network is the one
component that draws: faults come from the scenario), so a component that draws later
takes its own stream and never shifts the network's. Every change to the world is
``Simulation.step(action)``: it calls ``system.apply``, appends the step's records to the
trace, and schedules one agenda entry per new message in flight (its latency and fate are
drawn when it is sent, in arming order, so the draws are one stream; the entry delivers or
loses it) and per newly armed timer (the entry fires it if it is still the same arming).
Faults come from the scenario: at a time, or when a named event happens (plus an offset),
so narrow races can be hit on purpose.

The agenda keeps simpy's semantics exactly (the world ran on a simpy ``Environment``
until issue 14, and its traces are unchanged): entries are taken in (time, priority,
insertion) order, an entry is never scheduled before now, and ``run(until)`` stops at an
entry of priority 0 (simpy's URGENT) at ``until``, so nothing due then happens. An entry
is a plain tuple with its callback, not a simpy Event with a callback list: a swarm seed
schedules some 130 of them. A step tells the world what it armed (``Step.armed``; new
messages are the tail of ``in_flight``), so nothing scans every timer after every step.

The replicas' periodic loops (acquisition polls, heartbeats, runner syncs) are most of a
long world's firings and nearly all of them change nothing a reader sees. With
``WorldOptions.idle = "batched"`` (the default) they get no entry each: one agenda entry
waits for the first of them, and when it comes ``toolcall_sim.model.idle.advance`` fires every loop
timer due before the next other entry, in the world's order, through the loops' own
handlers, as long as each firing is idle (it records nothing but its own ``timer``
record; a heartbeat's rows are written as the stepwise run writes them, so the other
replica's staleness check reads the same values). Those firings become one ``Idle``
action with no records; a firing that is not idle is an ordinary ``Fire`` step at its
time, applied with the answer the batch computed for it (model/idle.py ``ASKED``). The
loop timers a step arms are noted for the next batch, which starts from the heap the last
one left instead of the whole timer table (model/idle.py ``HEAP``, ``ARMED``).
``"stepwise"`` fires each loop timer as its own step: the reference the batched run
is tested against (tests/test_world_idle.py: the same trace once ``without_idle_steps``
drops the idle steps, the same final system, the same verdicts). While a world runs the
collector's youngest generation is collected every 20,000 allocations, not every 700
(``rare_collections``): a run's objects are short-lived and acyclic.

Rule 1. Nothing here reads the wall clock or the global ``random``; ties at the same
        simulated time go by the arming order: a message's or timer's sequence number is
        its agenda priority; a fault at a time comes after everything armed at boot, an
        event-triggered fault after everything its trigger's step armed (priority
        ``seq + 0.5``), and faults of one priority in the scenario's order.
Rule 2. The list of applied actions *is* the run: replaying it through ``system.apply``
        with no agenda and no randomness gives the same trace, byte for byte.
Rule 3. A named message can be lost or delayed on purpose (``lose``/``delay`` faults);
        otherwise the network's loss probability and latency decide: a uniform range, or
        a shape with a tail plus rare stalls (sim/world/latency.py), drawn per message in the
        order latency, loss, stall (the stall only when the world has stalls).
Rule 4. Each fault counts the messages or events it matches, so ``nth`` is the nth one
        that fault names. Trigger events are the vocabulary's (model/vocabulary.py):
        requests sent and delivered, their answers sent and delivered, a process
        started, a result or an assistant message committed (``_events_of``). Each
        watched fault starts once, so when the last has started the world stops reading
        records for events (``_retire_one``).
Rule 5. ``fired`` maps the index of every fault that fired to the true time it fired: a
        scheduled fault when it is applied (at its time, or at its nth event plus its
        offset, before ``until``), a lose or delay when its nth message is sent, a
        handler panic when its nth request is delivered; ``skipped`` maps the index of a
        scheduled fault that fired and did nothing (its step recorded ``fault_skipped``)
        to the reason. A fault that never fired (its nth never came, or came too late)
        fails the scenario's expectations (sim/world/run.py), as one that fired and did
        nothing does; both are kept by index, beside the trace, so a failure names the
        fault (``faults[0]``), never only its kind. The trace is the same either way.
"""

from __future__ import annotations

import gc
import random
from contextlib import contextmanager
from dataclasses import dataclass, field
from heapq import heappop, heappush
from itertools import count
from typing import Any

from toolcall_sim.model import idle
from toolcall_sim.model import system as msys
from toolcall_sim.model.system import Deliver, Drop, Fault, Fire, Idle

from toolcall_sim.world.replay import trace_lines
from toolcall_sim.world.scenario import FaultSpec
from toolcall_sim.world.scenario import MessageMatch


@dataclass
class LinkSpec:
    latency_min_ms: int
    latency_max_ms: int
    loss: float
    shape: Any = None  # a sim/world/latency.py shape; None: uniform latency_min_ms..latency_max_ms


@dataclass
class WorldOptions:
    latency_min_ms: int = 2
    latency_max_ms: int = 40
    loss: float = 0.0
    links: dict[str, LinkSpec] = field(default_factory=dict)  # "src->dst" -> spec
    faults: tuple[FaultSpec, ...] = ()
    latency_shape: Any = None  # sim/world/latency.py shape of every link without its own range; None: uniform
    stalls: Any = None  # sim/world/latency.py Stalls on top of every message's latency; None: none
    # How the replicas' periodic loops run: "batched" fires their idle firings as one
    # ``Idle`` step without their records (model/idle.py); "stepwise" steps each firing
    # through ``apply``, the reference the batched run is tested against.
    idle: str = "batched"
    # False: the trace leaves out the action records (one per step: what was applied), for
    # a run whose only reader is the properties (the swarm's judge, sim/world/run.py
    # ``verdicts_only``): no property reads them, and they are a third of a trace. The
    # actions themselves are kept (``Simulation.actions``); such a trace is never written
    # or hashed.
    action_records: bool = True


IDLE_BATCHED = "batched"
IDLE_STEPWISE = "stepwise"
IDLE_MODES = (IDLE_BATCHED, IDLE_STEPWISE)


class Simulation:
    """One scenario's run on the agenda: the pure system as it steps, its trace, and the
    messages and timers in flight."""

    def __init__(self, config: msys.WorldConfig, seed: int, options: WorldOptions | None = None,
                 header: dict | None = None):
        self.options = options or WorldOptions()
        if self.options.idle not in IDLE_MODES:
            raise ValueError(f"idle: expected one of {', '.join(IDLE_MODES)}, got {self.options.idle!r}")
        self.batch_idle = self.options.idle == IDLE_BATCHED
        self._action_records = self.options.action_records  # (read by every step)
        self._stalls = self.options.stalls  # (read for every message: ``_carry``)
        self.seed = seed
        # The agenda: a heap of (time ms, priority, insertion number, callback, argument),
        # popped in that order, which is the order simpy's queue keeps its events in (Rule 1);
        # one tuple per message or timer instead of a simpy Event, its callback list and a
        # ``partial`` (a swarm seed schedules some 130 of them). ``now_ms`` is the time of
        # the entry being handled, as simpy's ``env.now``.
        self._queue: list[tuple] = []
        self._inserted = count()
        self.now_ms = 0
        self.rng_network = random.Random(f"{seed}:network")
        self.trace: list[dict] = []
        self.actions: list[Any] = []
        self.sent_counts: dict[int, int] = {}  # message fault index -> messages it matched
        self.event_counts: dict[int, int] = {}  # fault index -> events it matched, up to its nth (``_retire_one``)
        self.fired: dict[int, int] = {}  # index of each fault that fired -> true time it fired (Rule 5)
        self.skipped: dict[int, str] = {}  # index of each fault that fired and did nothing -> why (Rule 5)
        self.panic_runs: dict[str, bool] = {}  # run ID -> the handler panics after its spawn
        self.req_tool_call: dict[str, str | None] = {}  # request ID -> tool call, from send records
        self.req_of_seq: dict[int, str] = {}  # message sequence number -> request ID
        self._agenda: tuple[int, int] | None = None  # (due, seq) the periodic wake-up is set for
        self._agenda_timer: msys.Timer | None = None  # the timer it is set for
        self._agenda_key: tuple | None = None  # its (node, name): its key in the timer table
        self._loops_armed = True  # a step armed a loop timer since the wake-up was set
        # One pass over the faults reads what the run watches (Rule 4):
        # - only event-triggered faults and handler panics read the records of each step;
        #   each such fault starts once, on its nth event: when the last of them has, no
        #   record can start anything more and the watch retires (``_watch``);
        # - the record kinds that can be a watched event (``_events_of``), and ``send``,
        #   whose request the ``process_started`` and ``handler_panic`` triggers look up:
        #   the other records of a step are skipped without asking what event they are;
        # - for each trigger event, the faults that count it, as (index, spec) in the
        #   scenario's order (a handler panic counts delivered requests, any other fault
        #   its trigger's event, a fault at a time none): ``_watch`` asks only those (a
        #   seed's faults are mostly timed: asking each about each event was most of the
        #   watch's cost);
        # - the faults that name messages (``_named_fate``): (index, kind, its
        #   MessageMatch, a delay's ``by``).
        self._watch_left = 0
        watched = set()
        self._faults_by_event: dict[str, list[tuple[int, FaultSpec]]] = {}
        self._message_faults: list[tuple[int, str, MessageMatch, Any]] = []
        for i, spec in enumerate(self.options.faults):
            kind, event = spec.kind, spec.trigger.event
            if event is not None:
                watched.add(event)
            if kind == "handler_panic":
                watched.add("request_delivered")
            counted = "request_delivered" if kind == "handler_panic" else event
            if counted is not None:
                self._faults_by_event.setdefault(counted, []).append((i, spec))
            if kind == "handler_panic" or event is not None:
                self._watch_left += 1
            if kind == "lose" or kind == "delay":
                params = dict(spec.params)  # (``FaultSpec.get`` twice, one dict)
                self._message_faults.append((i, kind, params.get("message"), params.get("by", 0)))
        self._watching = self._watch_left > 0
        self._watched_kinds = frozenset(["send"] + [kind for kind, events in _EVENT_KINDS.items()
                                                    if not watched.isdisjoint(events)])
        self._links: dict = {}  # (src, dst) -> LinkSpec (``_link``)
        self._loop_keys: dict = {}  # (node, name) -> a replica's periodic loop timer (``idle.is_periodic``, remembered)
        # Loop verdicts and the heap carried between batches (model/idle.py advance); the
        # loop timers the steps arm are noted in it (``idle.ARMED``, ``_schedule_new``).
        self._idle_memo: dict = {idle.ARMED: []}
        # Rule coverage (issue 35): probe ID (model/probes.py) -> the times a step took it.
        self.probes: dict[str, int] = {}
        step = msys.initial(config)
        self.system = step.system
        if header is not None:
            # Names the run so a recorded trace can be replayed on its own.
            self.trace.append({"kind": "header", "t_ms": 0, **header})
        self._record_step(None, step)
        self._schedule_new(step.system, 0, step.armed)
        # Faults at a time come after everything armed at boot and before anything armed
        # later (Rule 1's order); among themselves, in the scenario's order.
        priority = self.system.seq + 0.5
        for i, spec in enumerate(self.options.faults):
            if spec.trigger.at_ms is not None:
                self._at(spec.trigger.at_ms + spec.trigger.offset_ms, priority, Simulation._fault_now, i)
        self._plan_periodic()

    # -- the one entry point -----------------------------------------------------
    def step(self, action, asked: tuple | None = None) -> msys.Step:
        """Apply ``action``; ``asked`` is a handler answer computed for it already
        (``toolcall_sim.model.system.apply``)."""
        before_seq = self.system.seq
        step = msys.apply(self.system, action, None, asked)
        s = self.system = step.system
        self.actions.append(action)
        if step.probes:  # (rule coverage: counted beside the trace, never in it)
            probes = self.probes
            for rule in step.probes:
                probes[rule] = probes.get(rule, 0) + 1
        if self._action_records:
            self._record_step(action, step)
        else:
            self.trace.extend(step.records)  # (``_record_step`` without an action record)
        self._schedule_new(s, before_seq, step.armed)
        if self._watching:
            self._watch(step.records, action.at_ms)
        # ``_plan_periodic``'s first answer inline (most steps arm no loop timer, and the
        # first loop timer still stands): the call is left for when it has work.
        if self.batch_idle and (self._loops_armed or self._agenda is None
                                or s.timers._index.get(self._agenda_key) is not self._agenda_timer):
            self._plan_periodic()
        return step

    def run(self, until_ms: int):
        """Handle the agenda's entries in order until true time ``until_ms``: as simpy's
        ``env.run(until=...)``, a stop entry at that time with priority 0 (simpy's URGENT)
        comes before anything else due then, so nothing at ``until_ms`` happens."""
        if until_ms <= self.now_ms:
            raise ValueError(f"until ({until_ms}) must be greater than the current simulation time")
        self._at(until_ms, 0, None, None)
        queue = self._queue
        with rare_collections():
            while queue:
                at_ms, _, _, fn, arg = heappop(queue)
                self.now_ms = at_ms
                if fn is None:
                    return
                fn(self, arg)

    # -- trace -------------------------------------------------------------------
    def _record_step(self, action, step: msys.Step):
        if action is not None and self.options.action_records:
            kind = type(action)
            # The world's most frequent actions, written out: the record
            # ``action_to_json`` and ``label`` would make, with the same keys.
            if kind is Deliver:
                rec = {"kind": "action", "t_ms": action.at_ms, "label": f"deliver #{action.seq} {action.what}",
                       "action": "deliver", "seq": action.seq, "what": action.what}
            elif kind is Fire:
                rec = {"kind": "action", "t_ms": action.at_ms, "label": f"timer {action.node} {action.name}",
                       "action": "timer", "node": action.node, "name": action.name}
            elif kind is Idle:
                rec = {"kind": "action", "t_ms": action.at_ms,
                       "label": f"idle {action.fires} periodic timer fires to {action.at_ms} ms",
                       "action": "idle", "fires": action.fires}
            else:
                rec = {"kind": "action", "t_ms": action.at_ms, "label": action.label(), **_action_fields(action)}
            self.trace.append(rec)
        self.trace.extend(step.records)

    # -- scheduling ----------------------------------------------------------------
    def _at(self, at_ms: int, priority, fn, arg):
        """One agenda entry at true time ``at_ms`` (never before now) that calls
        ``fn(self, arg)``. Ties at the same time go by ``priority`` (Rule 1), then by
        insertion. ``fn`` is a plain function of the class, never a bound method: an entry
        that held the world would make the world a cycle, which only the collector frees
        (the whole trace and every state with it, some 3% of a swarm seed)."""
        now_ms = self.now_ms
        heappush(self._queue, (at_ms if at_ms > now_ms else now_ms, priority, next(self._inserted), fn, arg))

    def _schedule_new(self, s: msys.System, known_seq: int, armed):
        """Each message or timer armed by the last step: the network draws each message's
        fate now (in arming order, so the draws are one stream), and each happens at its
        time with its sequence number as the priority (Rule 1)."""
        # Messages are only ever appended to ``in_flight`` (and removed), so the new ones
        # are its tail; the timers still armed that the step armed are those of
        # ``Step.armed`` that the table still holds (a timer re-armed or canceled within
        # the step is not), the same as every armed timer with a newer sequence number.
        # The timers are scheduled first and the messages after them: only the messages
        # draw (in arming order, which ``in_flight`` keeps), and an entry's place among
        # entries at its time goes by its priority, its sequence number, which no other
        # entry has, so which is pushed first changes nothing.
        if armed:
            table = s.timers._index  # (FMap's dict: one lookup per armed timer, no method call)
            queue, inserted, now_ms = self._queue, self._inserted, self.now_ms
            loop_keys = self._loop_keys if self.batch_idle else None
            for t in armed:
                key = (t.node, t.name)
                if table.get(key) is not t:
                    continue  # re-armed or canceled within the step
                if loop_keys is not None:
                    known = loop_keys.get(key)
                    if known is None:
                        known = loop_keys[key] = idle.is_periodic(s, t.node, t.name)  # (the replicas are the world's: asked once per key)
                    if known:
                        # A periodic loop's: the wake-up's business (the next batch's heap:
                        # model/idle.py ``HEAP``; ``note_armed`` inline).
                        self._loops_armed = True  # the periodic wake-up may have to move
                        self._idle_memo[idle.ARMED].append(t)
                        continue
                # (``_at`` inline: one entry per timer)
                due_ms = t.due_ms
                heappush(queue, (due_ms if due_ms > now_ms else now_ms, t.seq, next(inserted), Simulation._wake, t))
        in_flight = s.in_flight
        first = len(in_flight)
        while first and in_flight[first - 1].seq > known_seq:
            first -= 1
        if first < len(in_flight):
            for envelope in in_flight[first:]:
                self._carry(envelope)

    def _link(self, src: str, dst: str) -> LinkSpec:
        """The link's spec, looked up once per (src, dst): the options do not change."""
        spec = self._links.get((src, dst))
        if spec is None:
            spec = self.options.links.get(f"{src}->{dst}")
            if spec is None:
                spec = LinkSpec(self.options.latency_min_ms, self.options.latency_max_ms, self.options.loss,
                                self.options.latency_shape)
            self._links[src, dst] = spec
        return spec

    def _carry(self, envelope: msys.Envelope):
        link = self._links.get((envelope.src, envelope.dst))  # (``_link``'s lookup inline; it fills it once)
        if link is None:
            link = self._link(envelope.src, envelope.dst)
        rng = self.rng_network
        if link.shape is None:
            # ``randint(a, b)`` is ``a + _randbelow(b - a + 1)`` when b >= a (random.py's
            # randrange): the same draw from the same stream, two calls fewer per message.
            low_ms, high_ms = link.latency_min_ms, link.latency_max_ms
            if high_ms >= low_ms:
                delay_ms = low_ms + rng._randbelow(high_ms - low_ms + 1)
            else:
                delay_ms = rng.randint(low_ms, high_ms)  # its ValueError, as before
        else:
            delay_ms = link.shape.draw_ms(rng)
        lost = link.loss > 0 and rng.random() < link.loss
        stalls = self._stalls
        if stalls is not None:  # drawn last, and only when set: worlds without keep their draws
            delay_ms += stalls.extra_ms(rng)
        if self._message_faults:
            named = self._named_fate(envelope)
            if named is not None:
                kind, extra_ms = named
                lost = kind == "lose"
                delay_ms += extra_ms
        # (``_at`` inline: one entry per message)
        at_ms = envelope.sent_at_ms + delay_ms
        now_ms = self.now_ms
        heappush(self._queue, (at_ms if at_ms > now_ms else now_ms, envelope.seq, next(self._inserted),
                               Simulation._arrive, (envelope, lost)))

    def _arrive(self, carried, _event=None):
        envelope, lost = carried
        seq = envelope.seq
        for held in self.system.in_flight:  # (``msys._find``, inline: every message asks)
            if held.seq == seq:
                break
        else:
            return  # taken out of flight since it was sent: nothing to deliver
        cls = Drop if lost else Deliver
        self.step(cls(self.now_ms, envelope.seq, envelope.what))

    def _wake(self, timer: msys.Timer, _event=None):
        current = self.system.timers._index.get((timer.node, timer.name))  # (FMap.get without the call)
        if current is None or current.seq != timer.seq:
            return  # replaced or canceled since it was armed
        if self.panic_runs and timer.node == msys.AGENT and timer.name.startswith("handler:") \
                and timer.name[8:] in self.panic_runs:
            after = (("after_spawn", True),) if self.panic_runs[timer.name[8:]] else ()
            self.step(Fault(self.now_ms, "handler_panic", (("run", timer.name[8:]),) + after))
            return
        self.step(Fire(self.now_ms, timer.node, timer.name))

    # -- idle periodic loops (``idle = "batched"``) -----------------------------------
    def _plan_periodic(self):
        """Keep one agenda wake-up at the first periodic timer, (due, seq); a wake-up set
        for a timer that has since moved is stale and does nothing."""
        if not self.batch_idle:
            return
        if not self._loops_armed and self._agenda is not None \
                and self.system.timers._index.get(self._agenda_key) is self._agenda_timer:
            return  # no loop timer armed and the first one still stands: it stays first
        self._loops_armed = False
        first = idle.next_periodic(self.system, self._idle_memo)  # (after a batch: its heap's head)
        self._agenda_timer = first
        self._agenda_key = None if first is None else (first.node, first.name)
        key = None if first is None else (first.due_ms, first.seq)
        if key != self._agenda:
            self._agenda = key
            if key is not None:
                self._at(key[0], key[1], Simulation._periodic, key)

    def _periodic(self, key, _event=None):
        """Fire every periodic timer due before the next other event, in (due, seq) order:
        the idle ones as one ``Idle`` step without their records (model/idle.py), a firing
        that is not idle as its own ``Fire`` step at its time."""
        if key != self._agenda:
            return
        self._agenda = None
        now_ms = self.now_ms
        while True:
            queue = self._queue  # the agenda's (time, priority, ...) heap: the next other event
            if queue and self._agenda is not None and queue[0][4] is self._agenda:
                # Next is the wake-up a step just set, at or before the first periodic
                # timer: ``advance`` would fire nothing (and block on nothing) before it.
                break
            before = queue[0][:2] if queue else None
            system, fires, last_ms, blocked = idle.advance(self.system, before, memo=self._idle_memo)
            if fires:
                action = Idle(last_ms, fires)
                self.system = system
                self.actions.append(action)
                if self._action_records:
                    self._record_step(action, _NO_RECORDS)  # an Idle step records nothing but itself
            if blocked is None or blocked.due_ms != now_ms or fires:
                break
            # The first periodic firing, due now, does something: an ordinary step (with
            # the answer the batch computed for it: model/idle.py ``ASKED``).
            self.step(Fire(now_ms, blocked.node, blocked.name), asked=self._idle_memo.get(idle.ASKED))
        self._plan_periodic()

    # -- faults --------------------------------------------------------------------
    def _named_fate(self, envelope: msys.Envelope):
        """A lose/delay fault naming this message (route, tool call, direction, nth): each
        fault counts the messages it matches, so ``nth`` is the nth one it names."""
        direction = "request" if envelope.src != msys.AGENT else "response"
        if envelope.route == "publish" or envelope.src == msys.PROBE or envelope.dst == msys.PROBE:
            return None
        fate = None
        for i, kind, m, by_ms in self._message_faults:
            if not _matches(m, envelope.route, envelope.tool_call, direction):
                continue
            self.sent_counts[i] = self.sent_counts.get(i, 0) + 1
            if self.sent_counts[i] == m.nth and fate is None:
                fate = (kind, by_ms if kind == "delay" else 0)
                self.fired[i] = self.now_ms
        return fate

    def _fault_now(self, index: int, _event=None):
        """Fault ``index`` of the scenario fires now (Rule 5)."""
        self.fired[index] = self.now_ms
        names = {c.name: c.chat_id for c in self.system.config.chats}
        step = self.step(_fault_action(self.options.faults[index], self.now_ms, names))
        for rec in step.records:  # (a fault's handler records its skip in the fault's own step)
            if rec.get("kind") == "fault_skipped":
                self.skipped[index] = rec.get("why", "")

    def _watch(self, records, at_ms: int):
        """Event triggers: each fault counts the events it matches and starts on the nth."""
        kinds = self._watched_kinds
        by_event = self._faults_by_event  # (``__init__``: only the faults that count each event)
        for rec in records:
            if rec["kind"] not in kinds:
                continue
            if rec["kind"] == "send":
                self.req_tool_call[rec.get("req")] = rec.get("tool_call")
                self.req_of_seq[rec.get("seq")] = rec.get("req")
            for name, route, tool_call, direction in _events_of(rec, self.req_tool_call, self.system):
                for i, spec in by_event.get(name, ()):
                    t = spec.trigger
                    if spec.kind == "handler_panic":
                        m = spec.get("message")
                        if name == "request_delivered" and route in ("start", "edit", "write") \
                                and _matches(m, route, tool_call, "request"):
                            self.event_counts[i] = self.event_counts.get(i, 0) + 1
                            if self.event_counts[i] == m.nth:
                                self.fired[i] = at_ms  # (the named run panics when its handler finishes)
                                self.panic_runs[self.req_of_seq.get(rec.get("seq"), "")] = bool(spec.get("after_spawn", False))
                                self._retire_one()
                        continue
                    if t.event != name or t.match is None or not _matches(t.match, route, tool_call, direction):
                        continue
                    self.event_counts[i] = self.event_counts.get(i, 0) + 1
                    if self.event_counts[i] == t.match.nth:
                        # After everything this step armed, before anything armed later.
                        self._at(at_ms + t.offset_ms, self.system.seq + 0.5, Simulation._fault_now, i)
                        self._retire_one()

    def _retire_one(self):
        """One watched fault has started (its count reached its nth, which no later event
        reaches again): when it was the last, records are no longer read for events (the
        steps after it would only count events no fault waits for). The rest of the step's
        records are still counted as before: the counts are the watch's own."""
        self._watch_left -= 1
        if not self._watch_left:
            self._watching = False

    # -- output --------------------------------------------------------------------
    def trace_lines(self) -> list[str]:
        return trace_lines(self.trace)


# Allocations between two collections of the youngest generation while a world runs.
RARE_COLLECTIONS_GEN0 = 20_000


@contextmanager
def rare_collections():
    """Collect cyclic garbage less often while a world runs, then as before. A run makes
    some hundred thousand short-lived objects (states, records, tuples), nearly none of
    them in a cycle, so a collection of the youngest generation every 700 allocations
    (Python's default) finds nothing and costs a swarm seed 5-8% of its time; every
    20,000 it costs next to nothing. No run reads the collector: only time changes.
    Nested uses keep the outermost setting; the thresholds are restored on the way out."""
    old = gc.get_threshold()
    gc.set_threshold(max(old[0], RARE_COLLECTIONS_GEN0), *old[1:])
    try:
        yield
    finally:
        gc.set_threshold(*old)


def without_idle_steps(trace: list[dict], replicas) -> list[dict]:
    """The trace less the steps that only the idle firings of periodic loops make, so a
    batched run and a stepwise run of the same world compare record for record:

    - an ``Idle`` step (one action record, no other record): the batched run's firings;
    - a ``Fire`` step of a replica's periodic timer (acquire, heartbeat, sync/<chat>)
      whose only record is its ``timer`` record: the stepwise run's idle firing (and the
      rare firing that changes state but records nothing else, dropped from both runs
      alike: the final systems are compared separately).

    Every other step, and every record of a firing that records anything more (a
    takeover, a ``db_down`` note, a runner's read of a change), is kept."""
    out: list[dict] = []
    i = 0
    while i < len(trace):
        j = i + 1
        if trace[i].get("kind") == "action":
            while j < len(trace) and trace[j].get("kind") != "action":
                j += 1
            rec = trace[i]
            if rec.get("action") == "idle":
                i = j
                continue
            if rec.get("action") == "timer" and rec.get("node") in replicas and j == i + 2 \
                    and trace[i + 1].get("kind") == "timer" and _is_loop(rec.get("name", "")):
                i = j
                continue
        out.extend(trace[i:j])
        i = j
    return out


def _is_loop(name: str) -> bool:
    return name in ("acquire", "heartbeat") or name.startswith("sync/")


def _action_fields(action) -> dict:
    out = msys.action_to_json(action)
    out.pop("at_ms", None)
    return out


def _matches(m: MessageMatch, route, tool_call, direction) -> bool:
    if m is None or m.direction != direction or (m.route is not None and m.route != route):
        return False
    return m.tool_call is None or m.tool_call == tool_call


_NO_RECORDS = msys.Step(None)  # what an ``Idle`` step adds to the trace besides its action
_Timer = msys.Timer



# Which trigger events a record of each kind can be (``_events_of``).
_EVENT_KINDS = {
    "send": ("request_sent",),
    "deliver": ("request_delivered", "response_delivered"),
    "reply": ("response_sent",),
    "truth": ("process_started", "result_committed"),
    "note": ("message_committed",),
}


def _events_of(rec: dict, req_tool_call: dict, system: msys.System) -> list[tuple]:
    """The trigger events (model/vocabulary.py) a trace record is: (event, route, tool
    call, direction). The probe's crafted requests are no events: they are the fault."""
    kind = rec.get("kind")
    if kind in ("send", "deliver", "reply") and msys.PROBE in (rec.get("node"), rec.get("dst")):
        return []
    if kind == "send":
        return [("request_sent", rec.get("route"), rec.get("tool_call"), "request")]
    if kind == "deliver" and rec.get("node") == msys.AGENT:
        return [("request_delivered", rec.get("route"), rec.get("tool_call"), "request")]
    if kind == "deliver" and rec.get("route") != "publish" and rec.get("node") != msys.PROBE:
        return [("response_delivered", rec.get("route"), rec.get("tool_call"), "response")]
    if kind == "reply" and rec.get("node") == msys.AGENT and not str(rec.get("req", "")).startswith(msys.PROBE + "/"):
        return [("response_sent", rec.get("route"), rec.get("tool_call"), "response")]
    if kind == "truth" and rec.get("truth") == "process_started":
        return [("process_started", "start", req_tool_call.get(rec.get("cause")), "none")]
    if kind == "truth" and rec.get("truth") == "result_committed":
        return [("result_committed", None, rec.get("provider_id"), "none")]
    if kind == "note" and rec.get("note") == "assistant_committed":
        chat = system.db.chats.get(rec.get("chat_id"))
        msg = next((m for m in chat.messages if m.id == rec.get("message_id")), None) if chat else None
        return [("message_committed", None, tc.provider_id, "none") for tc in (msg.tool_calls if msg else ())]
    return []


def _fault_action(spec: FaultSpec, at_ms: int, chat_ids: dict[str, str]) -> Fault:
    """The model's Fault action for a scheduled scenario fault; chat names become the
    chats' UUIDs."""
    params = []
    for key, value in spec.params:
        if key == "between":
            value = tuple(value)
        elif key in ("chat", "as_chat", "owner_chat"):
            value = chat_ids.get(value, value)
        params.append((key, value))
    kind = spec.kind
    if kind in ("lose", "delay", "handler_panic"):
        raise ValueError("message faults are applied to messages, not scheduled")
    return Fault(at_ms, kind, tuple(params))
