"""Hash-consing for the explorer: every distinct state component gets one small handle.

Theory of operation
-------------------
The explorer compares and stores hundreds of thousands of global states, and most of two
neighbouring states is the same objects (a step changes one node). Rendering whole states
as text to compare them (wave 1) costs time and memory in proportion to their size; here a
state component is named by a handle (``Id``) that stands for its *value*: two components
get the same handle exactly when they are equal, field by field, down to the primitives.

Rule 1. Structural keys. A component's key is its class and its fields, where a field
        that is itself a component contributes its handle and a primitive contributes
        itself (a bool or a float is tagged with its type, so ``True``, ``1`` and ``1.0``
        never share a key). Containers (tuples, ``FMap``) key their elements the same way.
        Keys hold no objects, only primitives and handles, so the table never keeps a
        dead state alive.
Rule 2. Each component remembers its handle (``_iid`` in its ``__dict__`` or slot), so a
        component that a step did not touch costs one attribute read, and a changed one
        costs one key of its own fields, not a walk of everything beneath it. A changed
        copy never inherits the memo: ``core.replace`` drops it (the model's one way
        to change a state), and nothing in the model shallow-copies an interned state.
Rule 3. Handles are process-local and ordered by first sight (``Id.n``), which the
        explorer's order is deterministic about; they compare by identity (one handle per
        value), which is exact: no digest, no collision. Nothing outside one search
        process ever sees a handle.
Rule 4. Where processes must agree on a state (the parallel explorer), an interner made
        with ``digests=True`` also gives each handle a 128-bit BLAKE2b digest of its key,
        with child handles standing in by their digests: the same value has the same
        digest in every process, and a state is compared by the digest of its key.

The table belongs to one ``Interner``; a search makes its own, so handles from two
searches never mix (a memo written by another interner is ignored).
"""

from __future__ import annotations

from dataclasses import fields, is_dataclass
from hashlib import blake2b
from enum import Enum
from typing import Any

from .core import FMap


class Id:
    """One value's handle. ``n`` orders handles by first sight (for canonical sorting of
    sets); ``value`` is what the interner was asked to keep with it (a ghost record's
    parsed form, say), or None; ``digest`` is its content digest when the interner
    makes them (Rule 4), else None."""

    __slots__ = ("n", "value", "digest")

    def __init__(self, n: int, value: Any = None, digest: bytes | None = None):
        self.n = n
        self.value = value
        self.digest = digest


_TRUE, _FALSE, _NONE = ("bool", True), ("bool", False), ("none",)
_PRIMITIVE = (str, int, bytes)


def digest_of(key) -> bytes:
    """Rule 4: a 128-bit BLAKE2b digest of a key, the same in every process (no
    ``hash``, no addresses): what parallel searches compare states by. A key is flat
    (Rule 1: containers are interned, so no nested tuple holds a handle): a handle
    stands in by its digest behind a NUL, a class by its qualified name, anything else
    by its repr, which never holds a NUL or the unit separator between parts."""
    return blake2b(digest_text(key), digest_size=16).digest()


def digest_text(key) -> bytes:
    """What ``digest_of`` digests. A key that extends another (``prefix + (handle,)``)
    has the text ``digest_text(prefix) + b"\x1f\x00" + handle.digest``, so a caller
    that keeps a prefix's text digests its extensions without rendering it again."""
    parts = []
    for part in key:
        t = type(part)
        if t is Id:
            parts.append(b"\x00" + part.digest)
        elif t is type:
            parts.append(f"{part.__module__}.{part.__qualname__}".encode())
        else:
            parts.append(repr(part).encode())
    return b"\x1f".join(parts)


def digest_text_of(key, texts: dict) -> bytes:
    """``digest_text`` of a flat key whose parts other than handles are few distinct
    small values (a state key's clock, budgets and partitions), each rendered once into
    the caller's ``texts``: the same bytes, for half the work. A part is looked up by
    its type and value, so ``1`` and ``True`` never share a text; the parts' elements
    must not mix such values either (a state key's tuples hold integers or strings)."""
    parts = []
    for part in key:
        t = type(part)
        if t is Id:
            parts.append(b"\x00" + part.digest)
        else:
            text = texts.get((t, part))
            if text is None:
                text = texts[(t, part)] = digest_text((part,))
            parts.append(text)
    return b"\x1f".join(parts)


def digest_extended(prefix_text: bytes, handle: Id) -> bytes:
    """``digest_of(prefix + (handle,))`` from ``digest_text(prefix)`` (a non-empty prefix)."""
    return blake2b(prefix_text + b"\x1f\x00" + handle.digest, digest_size=16).digest()


class Interner:
    """The table of one search: key -> handle."""

    def __init__(self, digests: bool = False):
        self.table: dict[Any, Id] = {}
        self._fields: dict[type, tuple[str, ...]] = {}
        self.digests = digests  # give every handle a content digest (parallel searches)
        # What a component's memo names its interner by: a bare token, never the
        # interner, so memos make no reference cycles (the explorer runs without the
        # cycle collector: model/explore.py ``explore``).
        self.token = object()
        self._empty = None  # the empty tuple's handle, once made (``iid``)

    def __len__(self) -> int:
        return len(self.table)

    def key_of(self, key, value: Any = None) -> Id:
        """The handle of a key built by the caller (a tuple of primitives and handles)."""
        found = self.table.get(key)
        if found is None:
            found = self.table[key] = Id(len(self.table), value, digest_of(key) if self.digests else None)
        return found

    def handle(self, x) -> Any:
        """``iid`` for a component that is a dataclass instance, an ``FMap`` or None: the
        hot path reads the memo straight away."""
        if x is None:
            return _NONE
        memo = getattr(x, "_iid", None)
        if memo is not None and memo[0] is self.token:
            return memo[1]
        return self.iid(x)

    def iid(self, x) -> Any:
        """The handle of ``x`` (or, for a primitive, the primitive itself, tagged where
        Python would equate it with another type's value)."""
        t = type(x)
        if t in _PRIMITIVE:
            return x if t is not bool else (_TRUE if x else _FALSE)
        if x is None:
            return _NONE
        if t is bool:
            return _TRUE if x else _FALSE
        if t is tuple:
            if not x:
                # A third of the tuples a search keys are empty: their handle is kept.
                found = self._empty
                if found is None:
                    found = self._empty = self.key_of(("tuple",))
                return found
            return self.key_of(("tuple",) + self._parts(x))
        if t is float:
            return ("float", x)
        if t is FMap:
            memo = x._iid
            if memo is not None and memo[0] is self.token:
                return memo[1]
            found = self.key_of(("map",) + self._parts([i for pair in x._items for i in pair]))
            x._iid = (self.token, found)
            return found
        names = self._fields.get(t)
        if names is None:
            if isinstance(x, Enum):
                return self.key_of((t, x.name))
            if t is frozenset:
                return self.key_of(("frozenset",) + tuple(sorted(x)))
            if not is_dataclass(x) or not hasattr(x, "__dict__"):
                raise TypeError(f"cannot intern a {t.__name__}")
            names = self._fields[t] = tuple(f.name for f in fields(t))
        d = x.__dict__
        memo = d.get("_iid")
        if memo is not None and memo[0] is self.token:
            return memo[1]
        found = self.key_of((t,) + self._parts([d[name] for name in names]))
        d["_iid"] = (self.token, found)
        return found

    def _parts(self, values) -> tuple:
        """``iid`` of each of a container's elements, in order (so handles are made in
        the same order as one ``iid`` per element would): a string, an integer, None or
        a bool is read here and a map or a component whose handle is memoized is one
        attribute read, without a call each. A new state's fields are mostly such
        values; the explorer keys one per step it runs for real."""
        out = []
        token = self.token
        for v in values:
            tv = type(v)
            if tv is str or tv is int:
                out.append(v)
            elif v is None:
                out.append(_NONE)
            elif tv is bool:
                out.append(_TRUE if v else _FALSE)
            elif tv is FMap and v._iid is not None and v._iid[0] is token:
                out.append(v._iid[1])
            elif tv is tuple:
                out.append(self.iid(v))
            else:
                # ``handle`` inline: a component whose handle is memoized (Rule 2) is one
                # attribute read, not a call: a new state's fields are mostly shared ones.
                memo = getattr(v, "_iid", None)
                out.append(memo[1] if memo is not None and memo[0] is token else self.iid(v))
        return tuple(out)
