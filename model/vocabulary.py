"""The world's vocabulary, declared once: what a scenario file may say and what it means.

Theory of operation
-------------------
A scenario file is the user's only handle on the world, so every word it may use is a
row here, with its fields, its meaning and an example that changes a run. Every reader
takes the words from this module and from nowhere else:

- the scenario loader (sim/world/scenario.py) accepts exactly these fault kinds with exactly
  these fields, these trigger events, routes, tools, result kinds and ``[world]`` keys;
- ``toolcall_sim.model.faults`` keeps one handler per model fault kind (``FAULT_HANDLERS``) and
  checks at import that the handlers and ``model_fault_kinds()`` are the same set;
- swarm draws its fault kinds from ``SWARM_FAULT_KINDS``, a subset of ``FAULTS``;
- ``toolcall-sim list`` prints these tables, and scenarios/README.md documents them
  (a test compares the README with the tables, and another walks every row through the
  loader and a run, so a word that is accepted and then ignored fails the suite).

Rule 1. A word is accepted only if a run uses it. A key or value that the run would not
        use is a one-line error (exit 2), never a silent default.
Rule 2. Fault kinds come in three shapes: *scheduled* faults fire ``at`` a time or
        ``when`` an event happens and become a model ``Fault`` action; *message* faults
        (``lose``, ``delay``, ``handler_panic``) name one message and take no time; the
        model turns ``handler_panic`` into a ``Fault`` itself when the named run's
        handler would finish. ``request`` is scheduled: the world's probe node sends a
        crafted HTTP request to the agent (US9, A5) and records the answer.
Rule 3. ``[world]`` timing keys name a ``Timing`` field (model/timing.py); the run builds
        the one ``Timing`` the replicas and their tool layer read from them, so a timing
        key changes chatd itself, not a copy of its constants.

This module is pure data: no I/O, no randomness, nothing that runs.
"""

from __future__ import annotations

from dataclasses import dataclass

from .chattool import EXECUTE_KINDS, FILE_KINDS, UNKNOWN_REASONS  # noqa: F401 (re-exported)


@dataclass(frozen=True)
class FaultKind:
    name: str
    required: tuple[str, ...]
    optional: tuple[str, ...]
    shape: str  # scheduled | message (Rule 2)
    meaning: str
    example: tuple[tuple[str, object], ...]  # fields (besides kind/at/when) of a fault that changes a run
    in_model: bool = True  # the model applies it as a Fault action (lose/delay are the world's)

    @property
    def fields(self) -> tuple[str, ...]:
        return self.required + self.optional


FAULTS: dict[str, FaultKind] = {f.name: f for f in (
    FaultKind("agent_restart", (), ("downtime",), "scheduled",
              "the agent shuts down (kills processes, loses records) and boots again after `downtime`",
              (("downtime", "5s"),)),
    FaultKind("agent_shutdown", (), (), "scheduled", "the agent goes away for good", ()),
    FaultKind("workspace", ("state",), (), "scheduled",
              "the workspace moves to `state`: `stopped` (no running agent: its processes die and its records "
              "are lost as in an agent shutdown, the disk stays), `deleted` (the disk goes too) or `running` "
              "(a stopped workspace starts again: a new agent on the kept disk); chatd's dial then fails at once "
              "with that state's error (docs/contract.md C5.6)",
              (("state", "stopped"),)),
    FaultKind("replica_crash", ("replica",), ("downtime",), "scheduled",
              "the replica loses all state; it boots again after `downtime` with a new worker ID",
              (("replica", "replica-1"), ("downtime", "1s"))),
    FaultKind("ownership_change", (), ("chat", "to", "immediate"), "scheduled",
              "the owner's heartbeats stop; another replica takes the chat over once they are "
              "`heartbeat_stale` old. With `immediate = true` the replica `to` (default: the next "
              "replica after the owner) takes it over at once, like `takeover`; `to` needs `immediate`",
              (("chat", "chat-1"),)),
    FaultKind("takeover", ("to",), ("chat",), "scheduled",
              "replica `to` takes the chat over at once (the owner's heartbeat is made stale and "
              "`to` polls); the explorer's ownership change",
              (("to", "replica-2"), ("chat", "chat-1"))),
    FaultKind("interrupt", (), ("chat",), "scheduled", "the user interrupts (running -> interrupting)",
              (("chat", "chat-1"),)),
    FaultKind("user_message", (), ("chat",), "scheduled", "the user sends another message",
              (("chat", "chat-1"),)),
    FaultKind("message_edit", (), ("chat",), "scheduled",
              "the user edits the chat's current user message (chatstate EditMessage): it and every message "
              "after it are discarded, the queue is cleared and the chat runs again from the replacement, "
              "whose answer is the script's next unused turn; the discarded calls get no result and no "
              "cancel (design Q4), so a request of theirs still in flight can act",
              (("chat", "chat-1"),)),
    FaultKind("partition", ("between",), ("duration",), "scheduled",
              "messages between the two nodes are lost until healed (or for `duration`)",
              (("between", ["agent", "replica-1"]), ("duration", "2m"))),
    FaultKind("heal", (), ("between",), "scheduled",
              "ends a partition (all partitions without `between`)", (("between", ["agent", "replica-1"]),)),
    FaultKind("db_outage", (), ("duration",), "scheduled",
              "every database transaction fails until it ends (for good without `duration`)",
              (("duration", "1m"),)),
    FaultKind("request", ("name", "route"), ("tool_call", "as_chat", "headers", "body"), "scheduled",
              "the probe node sends a crafted request to the agent and records the answer "
              "(`[expect.<variant>.requests]` checks its status and what a user reads in it): `route` is start, "
              "edit, write, cancel, output, signal or list (the process output route, and process_signal with "
              "`{\"signal\":\"kill\"}`, both on the process whose ID is the tool call's UUID: the "
              "contract's process ID; an `execute` call's only; list is the agent's process list and names "
              "no tool call: with `as_chat` that chat's processes, without it every process); `tool_call` "
              "names the target (its UUID in a cancel path, its tool call headers; "
              "a start, edit or write carries chatd's own request for it: path, query and body "
              "bytes); `as_chat` the chat whose ID goes in `Coder-Chat-Id` (omitted: no such header); "
              "`headers` adds or replaces headers (an empty value removes one); `body` replaces the "
              "body",
              (("name", "forged"), ("route", "cancel"), ("tool_call", "toolu_01"), ("as_chat", "chat-2"))),
    FaultKind("lose", ("message",), (), "message",
              "that one request or response is lost (no `at`/`when`)",
              (("message", {"route": "start", "tool_call": "toolu_01", "direction": "response"}),), in_model=False),
    FaultKind("delay", ("message", "by"), (), "message", "that one message arrives `by` later (no `at`/`when`)",
              (("message", {"route": "start", "tool_call": "toolu_01"}), ("by", "30s")), in_model=False),
    FaultKind("handler_panic", ("message",), ("after_spawn",), "message",
              "the agent handler run that request creates panics (with `after_spawn = true` after it "
              "spawned the process, which then runs on): that request gets the recovery 500 \"An internal "
              "server error occurred.\", waiters and later requests the recorded 500 \"The tool call handler "
              "failed.\" (with or without tool call headers; nothing is recorded without them)",
              (("message", {"route": "start", "tool_call": "toolu_01"}),)),
)}

# What every fault field is, for the loader (chat and replica names are checked against
# the scenario's chats and replicas; nodes against its nodes).
FAULT_FIELD_TYPES = {
    "downtime": "duration", "duration": "duration", "by": "duration",
    "replica": "replica", "to": "replica", "chat": "chat", "as_chat": "chat",
    "between": "nodes", "message": "message", "immediate": "bool", "after_spawn": "bool",
    "state": "workspace_state",
    "name": "str", "route": "request_route", "tool_call": "tool_call", "headers": "headers", "body": "str",
}

# The kinds swarm toggles per seed (sim/drivers/swarm.py): agent_shutdown ends every later story,
# user_message, heal and handler_panic need pairing with a fault swarm does not draw,
# takeover, request and message_edit are for hand-written races.
SWARM_FAULT_KINDS = (
    "agent_restart", "replica_crash", "ownership_change", "interrupt",
    "partition", "db_outage", "lose", "delay",
)


def model_fault_kinds() -> tuple[str, ...]:
    """The kinds the model applies as ``Fault`` actions (toolcall_sim.model.faults.FAULT_HANDLERS)."""
    return tuple(name for name, f in FAULTS.items() if f.in_model)


@dataclass(frozen=True)
class TriggerEvent:
    name: str
    direction: str  # request | response | none: which messages it counts
    meaning: str


TRIGGER_EVENTS: dict[str, TriggerEvent] = {e.name: e for e in (
    TriggerEvent("request_sent", "request", "a replica sends a request to the agent"),
    TriggerEvent("request_delivered", "request", "the request reaches the agent"),
    TriggerEvent("response_sent", "response", "the agent answers a request (also a refusal by a down agent)"),
    TriggerEvent("response_delivered", "response", "the answer reaches the replica"),
    TriggerEvent("process_started", "none", "the agent starts the tool call's process"),
    TriggerEvent("result_committed", "none", "chatd commits the tool call's result"),
    TriggerEvent("message_committed", "none", "chatd commits the assistant message that carries the tool call"),
)}

# Routes a message fault or a trigger may name: chatd's requests to the agent.
ROUTES = ("start", "edit", "write", "cancel", "output", "dial")
# Routes a crafted request may use ("list": the agent's process list, which names no
# tool call).
REQUEST_ROUTES = ("start", "edit", "write", "cancel", "output", "signal", "list")
TOOLS = ("execute", "edit_files", "write_file")
RESULT_KINDS = tuple(dict.fromkeys(EXECUTE_KINDS + FILE_KINDS))
# UNKNOWN_REASONS (imported above): the reasons an unknown result may carry (``result.reason``
# of an expectation), the tool layer's own list, which scenarios/README.md must name exactly
# (tests/test_vocabulary.py).


@dataclass(frozen=True)
class WorldKey:
    name: str
    type: str  # int | duration | str | table
    default: str
    meaning: str
    example: object  # a value that changes a run of the vocabulary test's base scenario
    timing_field: str | None = None  # the Timing field it sets (Rule 3)


WORLD_KEYS: dict[str, WorldKey] = {k.name: k for k in (
    WorldKey("replicas", "integer", "2", "coderd replicas, named `replica-1`, `replica-2`, ...", 3),
    WorldKey("agent", "string", '"rev-c"',
             "`rev-c` (the contract's agent) or `old` (ignores tool call headers, has no cancel route: US8)", "old"),
    WorldKey("workspace", "string", '"running"',
             "the chat's workspace at the start: `running`, `none` (the chat has no workspace), `stopped` (no "
             "running agent, the disk kept) or `deleted`; only a running workspace boots its agent, and chatd's "
             "dial of any other fails at once with that state's error (docs/contract.md C5.6)", "stopped"),
    WorldKey("generation_time", "duration", '"2s"', "how long the scripted model takes per assistant message", "5s"),
    WorldKey("agent_boot_at", "duration", '"0s"', "when the agent first starts", "40s"),
    WorldKey("chat_start", "duration", '"0s"',
             "when each chat's first user message is sent: an agent booted long before the chats (production) "
             "does not refuse their first calls inside its age margin", "3s"),
    WorldKey("chat_stagger", "duration", '"0s"',
             "each chat starts this much later than the chat before it (in the order the turns name them): "
             "the second chat's first message comes while the first chat's command runs", "3s"),
    WorldKey("pubsub", "string", '"late"',
             "how database events reach the replicas: `late` (as messages with the network's latency, as in "
             "production) or `at_commit` (every replica handles each within the commit's step: the explorer's "
             "small worlds, fewer interleavings)", "at_commit"),
    WorldKey("age_margin", "duration", '"2s"',
             "the agent's age margin (and the mirror chatd's checkers read: explores the residual risk)", "0s"),
    WorldKey("handler_time", "duration", '"0s"',
             "how long every agent handler run (start, edit, write) takes before it answers, with or without "
             "tool call headers and on the old agent; a process counts its run age from the request's arrival "
             "(the record's instant), so a slow spawn is part of its run age", "3s"),
    WorldKey("files", "table", "{}", "the workspace disk: path = content", {"/src/a.go": "x = 1\n"}),
    WorldKey("replica_variants", "table", "{}",
             "a variant per replica, for a rollout of mixed versions: `{ \"replica-1\" = \"today\" }`",
             {"replica-1": "today"}),
    WorldKey("message_ids_per_chat", "boolean", "false",
             "each chat numbers its own messages, so two chats can carry the same message ID (with a tool "
             "call's `provider_id`, the same provider tool call ID too: US9); chatd has one sequence", True),
    WorldKey("attempt_timeout", "duration", '"15m"', "chatd's attempt timeout (defaultTaskTimeout)", "20s",
             "task_timeout_ms"),
    WorldKey("agent_answer_timeout", "duration", '"1m"',
             "how long chatd waits for the agent's answer to a start, edit, write or cancel (contract)", "5s",
             "agent_answer_timeout_ms"),
    WorldKey("dial_timeout", "duration", '"30s"', "how long chatd's dial of the agent waits", "5s",
             "dial_timeout_ms"),
    WorldKey("heartbeat_interval", "duration", '"9s"', "how often a worker upserts its runners' heartbeats", "3s",
             "heartbeat_interval_ms"),
    WorldKey("heartbeat_stale", "duration", '"30s"', "how old a heartbeat is before another worker may take over",
             "10s", "heartbeat_stale_ms"),
    WorldKey("acquisition_interval", "duration", '"30s"', "how often a worker polls for chats to acquire", "5s",
             "acquisition_interval_ms"),
)}

# ``[world] workspace`` and the ``workspace`` fault's ``state`` (model/builder.py
# ``WORKSPACE_DIAL_STATUS``, ``WORKSPACE_MOVES``): a chat never loses its workspace
# binding while a world runs, so ``none`` is a starting state only.
WORKSPACE_STATES = ("running", "none", "stopped", "deleted")
WORKSPACE_FAULT_STATES = ("running", "stopped", "deleted")
# ``[world] pubsub``: "late" (publishes are messages) or "at_commit" (``WorldConfig.pubsub_immediate``).
PUBSUB_DELIVERY = ("late", "at_commit")


@dataclass(frozen=True)
class LatencyShape:
    name: str
    fields: tuple[str, ...]  # duration fields of ``[network] latency = { shape = NAME, ... }``
    meaning: str
    example: dict  # a ``latency`` table that changes a run of the vocabulary test's base scenario


# ``[network] latency``: how long each message takes (sim/world/latency.py draws them).
LATENCY_SHAPES: dict[str, LatencyShape] = {s.name: s for s in (
    LatencyShape("uniform", ("min", "max"), "uniform from `min` to `max` (the default shape; `shape` may be omitted)",
                 {"min": "100ms", "max": "900ms"}),
    LatencyShape("lognormal", ("median", "p99"),
                 "lognormal: half the messages take less than `median`, 1% more than `p99` (a real tail)",
                 {"shape": "lognormal", "median": "20ms", "p99": "1500ms"}),
)}
# ``[network] stalls = { probability, min, max }``: each message, with `probability`,
# takes an extra `min`..`max` (a GC pause, a TCP retransmit), on top of its latency.
STALL_FIELDS = ("probability", "min", "max")
STALLS_EXAMPLE = {"probability": 0.05, "min": "1s", "max": "3s"}

TIMING_KEYS = {k.name: k.timing_field for k in WORLD_KEYS.values() if k.timing_field}

# ``[replay]``: a scenario that replays one path of the explorer step by step (a
# counterexample ``toolcall-sim explore`` writes; sim/world/scenario_replay.py). ``world``
# names one of the explorer's small worlds (model/worlds.py; absent: the file's own
# ``[world]`` and ``[[turns]]`` on the explorer's clock, sim/world/explore_scenario.py),
# ``second`` the default world's second call, ``steps`` the actions in order.
REPLAY_KEYS = ("world", "second", "steps")
# What one step does (``do``) -> its fields besides ``at_ms`` and ``do``: the explorer's
# actions (model/actions.py; an ``Idle`` batch is the timed world's, never the explorer's).
REPLAY_STEPS = {"deliver": ("seq", "msg"), "lose": ("seq", "msg"), "timer": ("node", "name"), "fault": ("fault",),
                "tick": ()}
# A ``do = "fault"`` step's kinds -> their fields, in the order the model's ``Fault``
# carries them: the explorer's faults (model/explore_actions.py ``enabled``).
REPLAY_FAULTS = {"agent_restart": (), "interrupt": ("chat",), "takeover": ("chat", "to")}
# The default world's second parallel call (model/worlds.py ``default``): ``replay.second``
# and ``explore --second``.
REPLAY_SECONDS = ("background", "edit")

# Longest simulated run (a cap, not a default): a run this long takes minutes of real
# time; longer asks are refused with exit 2 rather than left to run silently.
MAX_UNTIL_MS = 7 * 24 * 3_600_000

# Expectation vocabulary ([expect.<variant>]).
EXPECT_COUNTS = ("process_starts", "edits_applied", "processes_killed", "processes_running_at_end")
EXPECT_CALL_KEYS = EXPECT_COUNTS + ("results", "result")
# Fields of ``result = { ... }``: the first committed result of the tool call.
EXPECT_RESULT_FIELDS = {
    "kind": "result kind", "reason": "string", "process_id": "string", "exit_code": "integer",
    "replica": "replica", "attempt": "integer", "generation_attempt": "integer", "task": "string",
    "committed_before": "duration", "committed_after": "duration",
}
EXPECT_TOP_KEYS = ("violations", "residual_risks", "sometimes", "interrupt_finished_within", "requests", "seeds",
                   "faults_never_fired", "records_at_end")
# ``records_at_end = { chat-1 = 1 }``: how many tool call records the agent holds for each
# named chat when the run ends (its latest message's records; 0 when it holds none or is
# down), as ``run --json``'s ``agent.chats`` counts them.


@dataclass(frozen=True)
class AnswerField:
    """A field of ``[expect.<variant>.requests] name = { ... }``: what a user reads in a
    crafted request's answer. ``routes``: the request routes whose answer has it (the
    loader refuses it on another route's request)."""

    name: str
    type: str
    routes: tuple[str, ...]
    meaning: str


# What a probe's answer may be checked for, beyond its status: the smallest set with which
# a story says what a user would see of the agent's processes (which are listed, which
# run, how one ended, what it printed). A process is named by the execute tool call that
# started it (its scenario ``id``), whatever ID the agent gave it.
EXPECT_ANSWER_FIELDS: dict[str, AnswerField] = {f.name: f for f in (
    AnswerField("status", "HTTP status", REQUEST_ROUTES,
                "the answer's HTTP status (100 to 599); `name = 404` is short for `name = { status = 404 }`"),
    AnswerField("processes", "tool calls", ("list",),
                "the processes the list names, exactly, each by its execute tool call (in any order; a list "
                "names at most 10)"),
    AnswerField("exited", "tool call = exit code", ("list",),
                "the listed processes that have exited, exactly, each with its exit code (-1: killed); the "
                "other listed processes run"),
    AnswerField("running", "boolean", ("output",), "whether the output answer says the process runs"),
    AnswerField("exit_code", "integer", ("output",),
                "the output answer's exit code (-1 to 255; a running process has none, so it fails)"),
    AnswerField("output", "text", ("output",), "a text the output answer's `output` contains"),
)}
# ``seeds`` of an ``[expect.<variant>]``: at which seeds its expectations hold. "any" (the
# default): at every seed, so ``pytest --toolcall-seeds 1-20`` runs them at each. "pinned":
# only at the file's own ``seed`` (a race its seed's latencies decide, e.g. a swarm find),
# so the pytest plugin runs them at that seed alone and names the item so.
EXPECT_SEEDS = ("any", "pinned")
# ``faults_never_fired``: the faults (by index in ``[[faults]]``) that never fire under
# that variant (a lost cancel request today never sends): any other fault that never
# fires fails the run's expectations, as one that fires and does nothing does.

# Seeds, one rule everywhere (issue 32): a scenario's ``seed``, ``run --seed``, ``swarm
# --first-seed`` and the last seed of ``--seeds`` all lie in this range; anything else is
# one line, exit 2. 2**63 - 1 keeps every seed a signed 64-bit integer, as a seed printed
# by one tool and pasted into another (Go's int64, JSON readers) survives.
SEED_MIN, SEED_MAX = 0, 2**63 - 1

# Sizes, one cap each (issue 32: nothing unbounded). Every cap is far above what a story
# needs (the shipped scenarios use at most 3 replicas, 6 tool calls and 8 faults) and low
# enough that the largest scenario the loader accepts still runs in seconds to a minute,
# not for hours: a larger value is one line, exit 2, before anything runs
# (tests/hostile_cases_scenario.py; scenarios/README.md "Sizes" gives the run at the caps).
# - the file itself: read at most this many bytes (a scenario is a page of TOML; a file
#   over 10 MB is a mistake, /dev/zero or a log, and is refused before it is read);
MAX_SCENARIO_BYTES = 10 * 1024 * 1024
# - nesting of arrays and tables: a story nests 4 deep (``[expect.contract]`` ``toolu_01
#   = { result = { ... } }``); the TOML reader recurses once a level, so 5,000 levels
#   ended as a RecursionError: the bytes are scanned for depth before they are parsed;
MAX_NESTING = 32
# - ``[world] replicas``: each replica's loops wake the world and each takes part in every
#   chat's ownership; 1,000 idle replicas ran an hour in about 4 s, and 1,000 beside the
#   other caps for over ten minutes (100,000 alone ran for minutes). 100 keeps a scenario
#   at every cap at once (tests/caps_scenario.py) to about a minute and a half;
MAX_REPLICAS = 100
# - assistant turns, tool calls in one turn and in all, chats (each chat is a chat of its
#   own turns), faults (with clock steps): each is some messages and steps of the run;
MAX_TURNS = 1_000
MAX_TOOL_CALLS_PER_TURN = 100
MAX_TOOL_CALLS = 1_000
MAX_CHATS = 100
MAX_FAULTS = 1_000
MAX_CLOCK_STEPS = 1_000
# - anything else a list or table of the file may hold (``[world] files``, a call's
#   ``edits``, a request's ``headers``, an expectation's ``results``) and the length of
#   one string (a command, a file's content): the file's own size bounds them, and these
#   keep each far below it.
MAX_ITEMS = 10_000
MAX_TEXT_CHARS = 1_000_000

# A tool call's ``exit_code`` is what its process exits with: a POSIX exit status, 0 to
# 255 (Go's os.ProcessState.ExitCode() gives -1 only for a process a signal killed, which
# the agent records itself when it kills one; no script can exit with it). An expected
# result's ``exit_code`` may be that -1 too.
EXIT_CODE_MIN, EXIT_CODE_MAX = 0, 255
RESULT_EXIT_CODE_MIN = -1
# A crafted request's expected answer is an HTTP status (``[expect.<variant>.requests]``).
HTTP_STATUS_MIN, HTTP_STATUS_MAX = 100, 599
