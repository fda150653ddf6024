"""What a trace says, read once for every picture: nodes, messages, processes, results
and faults, each tied to the indexes of the records it comes from.

Theory of operation
-------------------
A trace is the list of records ``toolcall-sim run --trace`` writes (and that
``toolcall_sim.drivers.counterexample.explore_trace`` and ``replay`` rebuild): ``send``/``reply`` put a
message in flight with a sequence number, ``deliver``/``lost`` end it; ``truth`` records
are what really happened on the workspace and in the database; ``note`` records are the
branches the rules took; ``fault`` records, ``agent_down``/``agent_up``, ``db_down``/
``db_up``, ``healed`` are the world's doings. ``read(trace)`` pairs them up:

- a message starts at its ``send`` or ``reply`` record and ends at the ``deliver`` or
  ``lost`` record with the same ``seq``. A reply names no destination: it goes to the
  node that sent the request (``req``). A database notification (``publish``) has no
  send record, and the explorer's immediate ones no ``seq``: it starts where it ends,
  from the node its ``what`` names (``... db -> replica-1``);
- a process runs from ``process_started`` to the ``process_exited`` or
  ``process_killed`` of its ``pid`` (the latest running process of that pid: a planted
  bug may give two processes one pid, and the kill then reaches the later one);
- a tool call is (chat, provider ID): a request's chat is its task's (``task_started``
  names both; a request ID begins with its task ID), a process's is its own ``chat_id``
  and its request is its ``cause``;
- a fault with a duration is a span from its start record to the record that ends it
  (``agent_up``, ``db_up``, ``replica_booted``, ``healed``, the ``resume_heartbeats``
  timer); a span never ended runs to the end of the trace (``end`` is None).

Records may lack fields (an explorer trace has no header, a hand-written one may have no
``clock_ms``): every read uses ``.get`` with a default, and a record that fits nothing
is only skipped. Nothing here draws.
"""

from __future__ import annotations

from dataclasses import dataclass, field

WORLD, DB, AGENT, PROBE = "world", "db", "agent", "probe"


@dataclass
class Message:
    src: str
    dst: str
    route: str
    tool_call: str | None
    start: int | None  # index of the send/reply record (None: a notification)
    end: int | None = None  # index of the deliver/lost record (None: still in flight)
    lost: bool = False
    why: str = ""
    answer: bool = False
    status: int | None = None
    what: str = ""


@dataclass
class Process:
    pid: str
    start: int
    chat_id: str | None
    tool_call: str | None
    command: str
    incarnation: int | None
    end: int | None = None
    how: str = ""


@dataclass
class Span:
    kind: str  # agent_down, db_down, replica_down, partition, heartbeats_paused
    start: int
    nodes: tuple[str, ...]
    label: str
    end: int | None = None


@dataclass
class Read:
    nodes: list[str]
    messages: list[Message]
    processes: list[Process]
    spans: list[Span]
    req_chat: dict[str, str | None]
    req_tool_call: dict[str, str | None]
    skew_ms: dict[str, tuple[int, int]] = field(default_factory=dict)  # node -> (min, max) clock - true


def t_of(rec: dict) -> int:
    t = rec.get("t_ms", 0)
    return t if isinstance(t, (int, float)) and not isinstance(t, bool) else 0


def task_of(req: str) -> str:
    """``replica-1-w1/t3/a1/c0:r1`` -> ``replica-1-w1/t3`` (the task that sent it)."""
    return "/".join(str(req).split("/")[:2])


def _ends_of(what: str) -> tuple[str, str]:
    """(source, destination) from a message's ``what`` (``... replica-1 -> agent``)."""
    left, sep, right = str(what).rpartition(" -> ")
    if not sep:
        return "?", "?"
    return (left.split()[-1] if left.split() else "?"), right.strip()


def _node_order(name: str) -> tuple:
    if name == WORLD:
        return (0, 0, "")
    if name == DB:
        return (1, 0, "")
    if name.startswith("replica-"):
        tail = name[len("replica-"):]
        return (2, int(tail) if tail.isdigit() else 10**6, name)
    if name == AGENT:
        return (4, 0, "")
    if name == PROBE:
        return (5, 0, "")
    return (3, 0, name)


def nodes_of(trace: list[dict]) -> list[str]:
    """Every node the trace names, in lane order: world, database, replicas, agent, probe."""
    names = {WORLD, DB, AGENT}
    for rec in trace:
        if rec.get("kind") == "world_start":
            names.update(str(r) for r in rec.get("replicas") or ())
        for key in ("node", "dst"):
            if isinstance(rec.get(key), str) and rec.get(key):
                names.add(rec[key])
    return sorted(names, key=_node_order)


def read(trace: list[dict]) -> Read:
    nodes = nodes_of(trace)
    messages: list[Message] = []
    open_by_seq: dict[int, Message] = {}
    req_src: dict[str, str] = {}
    req_chat: dict[str, str | None] = {}
    req_tool_call: dict[str, str | None] = {}
    task_chat: dict[str, str] = {}
    processes: list[Process] = []
    running: dict[str, list[Process]] = {}
    spans: list[Span] = []
    open_spans: list[Span] = []
    skew: dict[str, tuple[int, int]] = {}
    for i, rec in enumerate(trace):
        kind = rec.get("kind")
        node = str(rec.get("node", WORLD))
        clock = rec.get("clock_ms")
        if isinstance(clock, int) and kind != "action":
            off = clock - t_of(rec)
            lo, hi = skew.get(node, (off, off))
            skew[node] = (min(lo, off), max(hi, off))
        if kind == "note" and rec.get("task") and rec.get("chat_id"):
            task_chat.setdefault(str(rec["task"]), rec["chat_id"])
        if kind == "send":
            req = str(rec.get("req", ""))
            req_src[req] = node
            req_tool_call[req] = rec.get("tool_call")
            req_chat[req] = task_chat.get(task_of(req))
            m = Message(node, str(rec.get("dst", "?")), str(rec.get("route", "?")), rec.get("tool_call"), i)
            messages.append(m)
            if isinstance(rec.get("seq"), int):
                open_by_seq[rec["seq"]] = m
        elif kind == "reply":
            req = str(rec.get("req", ""))
            m = Message(node, req_src.get(req, "?"), str(rec.get("route", "?")), rec.get("tool_call"), i,
                        answer=True, status=rec.get("status"))
            messages.append(m)
            if isinstance(rec.get("seq"), int):
                open_by_seq[rec["seq"]] = m
        elif kind in ("deliver", "lost"):
            m = open_by_seq.pop(rec.get("seq"), None) if isinstance(rec.get("seq"), int) else None
            if m is None:
                src, dst = _ends_of(rec.get("what", ""))
                m = Message(src, node or dst, str(rec.get("route", "?")), rec.get("tool_call"), None)
                messages.append(m)
            m.end, m.dst, m.what = i, node, str(rec.get("what", ""))
            m.lost, m.why = kind == "lost", str(rec.get("why", "") or "")
        elif kind == "truth":
            _truth(rec, i, processes, running, req_tool_call)
        _spans(rec, i, spans, open_spans)
    for s in spans:
        if not s.nodes:  # a pause never resumed: whose it was is not recorded
            s.nodes = (WORLD,)
    return Read(nodes, messages, processes, spans, req_chat, req_tool_call, skew)


def _truth(rec: dict, i: int, processes: list, running: dict, req_tool_call: dict):
    what = rec.get("truth")
    pid = str(rec.get("pid", ""))
    if what == "process_started":
        p = Process(pid, i, rec.get("chat_id"), req_tool_call.get(str(rec.get("cause", ""))),
                    str(rec.get("command", "")), rec.get("incarnation"))
        processes.append(p)
        running.setdefault(pid, []).append(p)
    elif what in ("process_exited", "process_killed") and running.get(pid):
        p = running[pid].pop()
        p.end = i
        p.how = f"exit {rec.get('exit_code')}" if what == "process_exited" else f"killed ({rec.get('by', '?')})"


def _close(open_spans: list, kind: str, i: int, nodes=None) -> None:
    for s in open_spans:
        if s.kind == kind and (nodes is None or set(s.nodes) == set(nodes)):
            s.end = i
            open_spans.remove(s)
            return


def _spans(rec: dict, i: int, spans: list, open_spans: list) -> None:
    kind = rec.get("kind")

    def begin(s: Span):
        spans.append(s)
        open_spans.append(s)
    if kind == "agent_down":
        begin(Span("agent_down", i, (AGENT,), f"agent down ({rec.get('why', '?')})"))
    elif kind == "agent_up":
        _close(open_spans, "agent_down", i)
    elif kind == "db_down" and not any(s.kind == "db_down" for s in open_spans):
        begin(Span("db_down", i, (DB,), "database down"))
    elif kind == "db_up":
        _close(open_spans, "db_down", i)
    elif kind == "note" and rec.get("note") == "replica_booted":
        _close(open_spans, "replica_down", i, (str(rec.get("replica", rec.get("node"))),))
    elif kind == "timer" and str(rec.get("name", "")).startswith("resume_heartbeats:"):
        owner = str(rec["name"]).partition(":")[2]
        for s in open_spans:
            if s.kind == "heartbeats_paused":
                s.nodes, s.end, s.label = (owner,), i, f"{owner} heartbeats paused"
                open_spans.remove(s)
                break
    elif kind == "healed":
        _close(open_spans, "partition", i, tuple(rec.get("between") or ()))
    elif kind == "fault":
        fault = rec.get("fault")
        if fault == "replica_crash" and rec.get("replica"):
            begin(Span("replica_down", i, (str(rec["replica"]),), f"{rec['replica']} down"))
        elif fault == "partition" and len(rec.get("between") or ()) == 2:
            a, b = (str(x) for x in rec["between"])
            begin(Span("partition", i, (a, b), f"partition {a} | {b}"))
        elif fault == "heal":
            between = tuple(rec.get("between") or ())
            for s in [s for s in open_spans if s.kind == "partition" and (not between or set(s.nodes) == set(between))]:
                s.end = i
                open_spans.remove(s)
        elif fault == "ownership_change" and not rec.get("immediate"):
            # Whose heartbeats pause is known when they resume (the timer names it).
            begin(Span("heartbeats_paused", i, (), "heartbeats paused"))

