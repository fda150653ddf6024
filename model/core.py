"""Shared vocabulary of the pure model: wire messages, effects, and an immutable map.

Theory of operation
-------------------
Every node of the contract (the workspace agent, each chatd replica, the database) is a
pure state machine. A handler takes the node's current state, one input and the node's
own clock reading in integer milliseconds, and returns ``(new_state, effects)``. It never
asks for the time, never draws a random number and never performs I/O; the effects say
what it wants done and a driver (the simpy world, the exhaustive explorer, hypothesis)
decides when and whether it happens.

Rule 1. States are frozen dataclasses. Containers inside them are tuples or ``FMap``, so
        a state can be shared between explored branches and fingerprinted canonically.
Rule 2. Effects are a small closed set of frozen dataclasses (``Send``, ``Reply``,
        ``SetTimer``, ``CancelTimer``, ``TraceRecord``, ``Publish``, ``Probe``). Drivers interpret
        them; the model never does.
Rule 3. Ground truth (a process really started, an edit really applied) is a
        ``TraceRecord`` on the ``truth`` channel (``truth(...)``), kept apart from what any
        node believes, so checkers can compare the two; a note (``note(...)``) only says
        which branch of a rule ran.
Rule 4. Only durations cross nodes (guarantee A6). No message carries a clock reading.

The HTTP shapes are kept at the level the contract talks about: method, path, raw query,
header pairs (a header may repeat, which the parse rules care about) and body bytes.
"""

from __future__ import annotations

import json
from json.encoder import c_make_encoder, encode_basestring_ascii
from dataclasses import dataclass
from typing import Any, Iterable, Iterator, Mapping


# ---------------------------------------------------------------------------
# Copying frozen states
# ---------------------------------------------------------------------------


_EXPLORER_MEMOS = ("_iid", "_fp", "_what", "_link")
_new_object = object.__new__
_set_attribute = object.__setattr__


def replace(obj, /, **changes):
    """``dataclasses.replace`` for the model's frozen dataclasses, without running
    ``__init__``: a step copies states many times (the explorer's hot path), and none of
    these classes validates in ``__init__`` (no ``__post_init__``, no init-only fields).
    A cached repr (``CachedRepr``) or interning handle is dropped, never carried into the
    changed copy."""
    cls = type(obj)
    new = _new_object(cls)
    # The copy's dict is a copy of the original's, set as the instance dict (a frozen
    # class's own ``__setattr__`` refuses, ``object``'s does not): a dict copy is one
    # block copy, where filling the new instance's empty dict inserts field by field (a
    # third dearer for a state of thirty fields). Same keys, same order. (A dict display,
    # not ``.copy()`` and ``.update(changes)``: compiled, it is the same copy and update
    # without looking either method up, an eighth of a copy's cost.)
    fields_ = {**obj.__dict__, **changes}
    _set_attribute(new, "__dict__", fields_)
    # Every field is in the instance dict (no class here has an init=False field), so a
    # copy with exactly as many entries as fields has neither an unknown field in
    # ``changes`` nor a memo: the common case of a step's copies needs no check of the
    # names (a set comparison was a sixth of a copy's cost) and no pops.
    declared = cls.__dataclass_fields__
    if len(fields_) != len(declared):
        if not changes.keys() <= declared.keys():
            raise TypeError(f"{cls.__name__} has no field(s) {sorted(changes.keys() - declared.keys())}")
        fields_.pop("_repr", None)
        for memo in _EXPLORER_MEMOS:  # the explorer's memos of this value (model/interning.py, model/explore.py)
            fields_.pop(memo, None)
    return new


class CachedRepr:
    """A dataclass-style ``repr`` computed once per instance. States are immutable and
    shared between explored branches, so a state that a step did not touch keeps its repr
    and a fingerprint only re-renders what changed. Classes using it are declared with
    ``@dataclass(frozen=True, repr=False)``."""

    __slots__ = ()

    def __repr__(self) -> str:
        cached = self.__dict__.get("_repr")
        if cached is None:
            body = ", ".join(f"{name}={self.__dict__[name]!r}" for name in type(self).__dataclass_fields__)
            cached = f"{type(self).__name__}({body})"
            self.__dict__["_repr"] = cached
        return cached


# ---------------------------------------------------------------------------
# Immutable sorted map
# ---------------------------------------------------------------------------


class FMap(Mapping):
    """An immutable mapping whose iteration order is the sorted order of its keys.

    Iteration never depends on insertion history or on hashing, so two states built by
    different paths iterate, print and fingerprint identically. Updates return a new map
    (copy on write); maps in this model are small (records of one message, processes of
    one agent), so the copy is cheap and sharing between branches is safe. An update
    copies the dict only: the sorted pairs (``_items``) are sorted again when first read,
    which most maps a step makes never are.
    """

    # ``_iid``: the explorer's interning memo (model/interning.py), like ``_repr``.
    # ``_fp``: the explorer's key of a timer table (model/explore.py), sequence numbers left out.
    # ``_pairs``: the sorted pairs (``_items``), or None until first read.
    __slots__ = ("_pairs", "_index", "_repr", "_iid", "_fp")

    def __init__(self, items: Iterable[tuple[Any, Any]] | Mapping | None = None):
        if items is None:
            pairs: list[tuple[Any, Any]] = []
        elif isinstance(items, Mapping):
            pairs = list(items.items())
        else:
            pairs = list(items)
        index = dict(pairs)
        # By key: the keys of a dict are distinct, so comparing the pairs never reaches a
        # value (no key function called per pair).
        self._pairs = tuple(sorted(index.items()))
        self._index = index
        self._repr = None  # computed once: maps are immutable and fingerprints repr them often
        self._iid = None
        self._fp = None

    @property
    def _items(self) -> tuple:
        """The pairs in key order. ``set``, ``remove`` and ``edited`` leave them to the
        first reader (``_pairs`` None): a step edits its tables several times and the
        swarm's world reads their order rarely (the explorer's fingerprints read each
        map's once)."""
        pairs = self._pairs
        if pairs is None:
            pairs = self._pairs = tuple(sorted(self._index.items()))  # (by key: ``__init__``)
        return pairs

    def __getitem__(self, key):
        return self._index[key]

    # Mapping's generic get and `in` go through __getitem__ and an exception; a step
    # asks them hundreds of times.
    def get(self, key, default=None):
        return self._index.get(key, default)

    def __contains__(self, key) -> bool:
        return key in self._index

    def __iter__(self) -> Iterator:
        return (k for k, _ in self._items)

    def __len__(self) -> int:
        return len(self._index)

    def __hash__(self) -> int:
        return hash(self._items)

    def __eq__(self, other) -> bool:
        if isinstance(other, FMap):
            return self._items == other._items
        return NotImplemented

    def __repr__(self) -> str:
        if self._repr is None:
            self._repr = "FMap({" + ", ".join(f"{k!r}: {v!r}" for k, v in self._items) + "})"
        return self._repr

    def items(self):  # type: ignore[override]
        return self._items

    def values(self):  # type: ignore[override]
        return tuple([v for _, v in self._items])  # (a list first: no generator frame)

    @classmethod
    def _sorted(cls, items: tuple, index: dict) -> "FMap":
        new = object.__new__(cls)
        new._pairs, new._index, new._repr, new._iid, new._fp = items, index, None, None, None
        return new

    def set(self, key, value) -> "FMap":
        """One key changed: a copy of the dict, the sorted pairs left to the first reader
        (``_items``)."""
        index = self._index.copy()
        index[key] = value
        new = _new_object(FMap)
        new._pairs, new._index, new._repr, new._iid, new._fp = None, index, None, None, None
        return new

    def remove(self, key) -> "FMap":
        if key not in self._index:
            return self
        index = self._index.copy()
        del index[key]
        new = _new_object(FMap)  # (as ``set``)
        new._pairs, new._index, new._repr, new._iid, new._fp = None, index, None, None, None
        return new

    def edited(self, changes: dict) -> "FMap":
        """Many keys changed at once, one new map: ``changes`` maps a key to its new value,
        or to ``REMOVED`` for a key to drop (absent or not): the map that setting and
        removing them one at a time gives, where a key's last edit is the one in
        ``changes`` (a dict keeps one value per key). A step that re-arms a
        timer (cancel, then set) or arms several edits its table once instead of copying
        it per edit (model/system.py ``_Builder.set_timer``)."""
        index = self._index.copy()
        for key, value in changes.items():
            if value is REMOVED:
                index.pop(key, None)
            else:
                index[key] = value
        new = _new_object(FMap)  # (as ``set``)
        new._pairs, new._index, new._repr, new._iid, new._fp = None, index, None, None, None
        return new


class _Removed:
    """The value ``FMap.edited`` reads as "drop this key" (one instance, ``REMOVED``)."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "REMOVED"


REMOVED = _Removed()
EMPTY = FMap()


# ---------------------------------------------------------------------------
# Wire messages
# ---------------------------------------------------------------------------

Headers = tuple[tuple[str, str], ...]


def header_values(headers: Headers, name: str) -> list[str]:
    """All values of one header, case-insensitively, in the order they were sent."""
    lname = name.lower()
    return [v for k, v in headers if k.lower() == lname]


def header_value(headers: Headers, name: str) -> str | None:
    """The first value of a header, or None when absent. (The first match ends the
    search, and a name spelled as asked needs no lowering: a step asks a few of these.)"""
    lname = name.lower()
    for k, v in headers:
        if k == name or k.lower() == lname:
            return v
    return None


def with_header(headers: Headers, name: str, value: str) -> Headers:
    """Set a header, replacing every existing value of that name (Go's Header.Set)."""
    lname = name.lower()
    for k, _ in headers:
        if k.lower() == lname:
            return tuple((k, v) for k, v in headers if k.lower() != lname) + ((name, value),)
    # No value to replace: appended, without rebuilding the pairs (a call's requests set
    # their three tool call headers on headers that hold only the chat ID: chattool's
    # ``_headers``, through identity.py's ``set_tool_call_headers``).
    return headers + ((name, value),)


@dataclass(frozen=True, repr=False)
class Request(CachedRepr):
    """One HTTP request from a chatd replica to the workspace agent.

    ``req_id`` and ``src`` are envelope fields (who sent it, which answer belongs to it);
    they are not part of the HTTP request and not part of the input hash.
    """

    req_id: str
    src: str
    method: str
    path: str
    query: str = ""
    headers: Headers = ()
    body: bytes = b""

    def __init__(self, req_id, src, method, path, query="", headers=(), body=b""):
        # (as ``SetTimer.__init__``: each field straight into the instance dict)
        d = self.__dict__
        d["req_id"] = req_id
        d["src"] = src
        d["method"] = method
        d["path"] = path
        d["query"] = query
        d["headers"] = headers
        d["body"] = body

    def json(self) -> Any:
        return json.loads(self.body.decode("utf-8"))


@dataclass(frozen=True, repr=False)
class Response(CachedRepr):
    """An HTTP answer to the request ``req_id``."""

    req_id: str
    status: int
    content_type: str = ""
    body: bytes = b""
    headers: Headers = ()

    def __init__(self, req_id, status, content_type="", body=b"", headers=()):
        # (as ``SetTimer.__init__``: each field straight into the instance dict)
        d = self.__dict__
        d["req_id"] = req_id
        d["status"] = status
        d["content_type"] = content_type
        d["body"] = body
        d["headers"] = headers

    def json(self) -> Any:
        return json.loads(self.body.decode("utf-8"))


@dataclass(frozen=True)
class TransportError:
    """The request ``req_id`` failed without an HTTP answer (Go's ``*url.Error``).

    The connection was refused or broke, for example because the agent restarted while
    the request was in flight or waiting. chatd classifies it as Unreachable.
    """

    req_id: str
    reason: str


def json_body(value: Any) -> bytes:
    """Canonical JSON bytes: sorted keys and no spaces, so equal values hash equally."""
    if _CANONICAL_C is None or type(value) is str:
        return _CANONICAL_JSON.encode(value).encode("utf-8")
    return "".join(_CANONICAL_C(value, 0)).encode("utf-8")


# ``json.dumps(value, sort_keys=True, separators=(",", ":"))`` builds this encoder on every
# call (its keyword arguments are not the defaults); one instance gives the same text.
_CANONICAL_JSON = json.JSONEncoder(sort_keys=True, separators=(",", ":"))
# What its ``encode`` builds on every call (``iterencode``: the C encoder and a float
# formatter), built once: the same text. Without the circular-reference markers: the
# model's bodies are fresh literals, never a cycle (one would end in a RecursionError
# instead of "Circular reference detected").
_CANONICAL_C = (c_make_encoder(None, _CANONICAL_JSON.default, encode_basestring_ascii, None, ":", ",", True, False, True)
                if c_make_encoder is not None else None)


# ---------------------------------------------------------------------------
# Effects
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Send:
    """Put a request on the network from ``request.src`` to node ``dst``."""

    dst: str
    request: Request

    def __init__(self, dst, request):  # (as ``SetTimer.__init__``)
        d = self.__dict__
        d["dst"] = dst
        d["request"] = request


@dataclass(frozen=True)
class Reply:
    """Answer a request; the driver routes it back to ``dst`` (the request's sender).

    ``answer`` is a ``Response`` or a ``TransportError``.
    """

    dst: str
    answer: Response | TransportError

    def __init__(self, dst, answer):  # (as ``SetTimer.__init__``)
        d = self.__dict__
        d["dst"] = dst
        d["answer"] = answer


@dataclass(frozen=True)
class SetTimer:
    """Ask to be woken with ``name`` after ``after_ms`` on this node's own clock.

    Setting a timer whose name is already set replaces it.
    """

    name: str
    after_ms: int

    def __init__(self, name, after_ms):
        # The dataclass's own ``__init__`` with the fields written straight into the
        # instance dict (a frozen dataclass's goes through ``object.__setattr__`` per
        # field, a third dearer): every step builds effects. ``dataclass`` keeps an
        # ``__init__`` the class defines; tests/test_core_records.py checks it matches.
        d = self.__dict__
        d["name"], d["after_ms"] = name, after_ms


@dataclass(frozen=True)
class CancelTimer:
    name: str

    def __init__(self, name):  # (as ``SetTimer.__init__``)
        self.__dict__["name"] = name


TRUTH = "truth"  # the channel of ground truth: what really happened
NOTE = "note"  # the channel of notes: which branch of a rule ran


@dataclass(frozen=True)
class TraceRecord:
    """An effect whose only consequence is a trace record, on one of two channels.

    ``channel`` TRUTH is ground truth (Rule 3): something that really happened on the
    workspace or in the database; ``kind`` is one of ``process_started``,
    ``process_exited``, ``process_killed``, ``edit_applied``, ``result_committed`` ...
    ``channel`` NOTE is a decision worth a record (a "mark"): e.g. ``replayed``,
    ``refused``; notes change nothing, they let tests and reports see which branch of a
    rule ran. The two were once two identical classes; one class with a channel says
    that the only difference is where the driver files the record. ``fields`` holds the
    ids involved as sorted ``(name, value)`` pairs so the record serialises
    deterministically. Build one with ``truth(...)`` or ``note(...)``.
    """

    channel: str  # TRUTH | NOTE
    kind: str
    fields: tuple[tuple[str, Any], ...] = ()

    def __init__(self, channel, kind, fields=()):  # (as ``SetTimer.__init__``)
        d = self.__dict__
        d["channel"], d["kind"], d["fields"] = channel, kind, fields

    def get(self, name: str, default: Any = None) -> Any:
        for k, v in self.fields:
            if k == name:
                return v
        return default


def truth(kind: str, /, **fields: Any) -> TraceRecord:
    # (``TraceRecord(TRUTH, kind, ...)`` with its ``__init__`` written out: a seed makes
    # some ninety notes and truths)
    rec = _new_object(TraceRecord)
    d = rec.__dict__
    d["channel"], d["kind"], d["fields"] = TRUTH, kind, tuple(sorted(fields.items()))
    return rec


def note(kind: str, /, **fields: Any) -> TraceRecord:
    rec = _new_object(TraceRecord)  # (as ``truth``)
    d = rec.__dict__
    d["channel"], d["kind"], d["fields"] = NOTE, kind, tuple(sorted(fields.items()))
    return rec


class _ChannelView(type):
    """``isinstance(effect, Truth)`` asks for a ``TraceRecord`` on that channel: ``Truth``
    and ``Note`` are names for the two channels (drivers and tests sort effects by them),
    not classes of their own, and calling one builds the record."""

    def __instancecheck__(cls, obj) -> bool:
        return isinstance(obj, TraceRecord) and obj.channel == cls.channel

    def __call__(cls, kind: str, fields: tuple[tuple[str, Any], ...] = ()) -> TraceRecord:
        return TraceRecord(cls.channel, kind, tuple(fields))


class Truth(metaclass=_ChannelView):
    """A ``TraceRecord`` on the TRUTH channel (ground truth)."""

    channel = TRUTH


class Note(metaclass=_ChannelView):
    """A ``TraceRecord`` on the NOTE channel (a mark)."""

    channel = NOTE


@dataclass(frozen=True)
class Publish:
    """A database commit announces a change of ``chat_id`` on a pubsub ``channel``
    (``chat:update`` or ``chat:ownership``); the driver delivers it to every replica."""

    channel: str
    chat_id: str

    def __init__(self, channel, chat_id):  # (as ``SetTimer.__init__``)
        d = self.__dict__
        d["channel"] = channel
        d["chat_id"] = chat_id


@dataclass(frozen=True)
class Probe:
    """A rule's branch was taken (issue 35's rule coverage): ``rule`` is a probe ID
    declared in model/probes.py ``PROBES``. A probe is no record: the interpreter counts
    it beside the step (``Step.probes``) and the trace, hence every pinned hash and every
    explored state, is what it was without it. Build one with ``probe(...)``."""

    rule: str

    def __init__(self, rule):  # (as ``SetTimer.__init__``)
        self.__dict__["rule"] = rule


def probe(rule: str) -> Probe:
    """The probe effect of one declared branch (tests/test_probes.py checks that every
    call site's ID is declared in model/probes.py and every declared ID has a call site)."""
    return Probe(rule)


Effect = Send | Reply | SetTimer | CancelTimer | TraceRecord | Publish | Probe
