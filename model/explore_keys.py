"""The explorer's state keys: a state's identity as a tuple of handles (explore.py Rule 4).

Theory of operation
-------------------
Two explored states are one when their systems are equal (sequence numbers and labels
aside), their budgets are, and their ghost histories are (as multisets, explore.py Rule
5). ``Keys.key`` is that identity: ``system_key``'s first part, the system's components
as interned handles (model/interning.py) plus the clock, the partitions and the budgets,
and the ghost's handle. ``system_key`` also gives the expansion key of explore.py Rule
10: the same with what the key leaves out but a step or ``enabled`` reads (the messages
in their sending order, the open requests, the replicas' boots).

Most of a child's components are its parent's objects (a step changes one or two), so
``system_key`` takes their handles from the parent's key by identity and keys only the
changed ones. A message's handle leaves out its sequence number (``envelope``, kept on the
message), and so does the timer table's (``timers_key``, kept on the table); a set of
messages is keyed once per sending order (``msgs_of``).

``Keys`` is a part of model/explore_context.py's ``Context`` (its base class), as
``Verdicts`` (model/explore_verdicts.py) is: it uses the context's interner, token and
canonical ``sort_key``, and keeps its own table (``key_tables``).
"""

from __future__ import annotations

from . import system as msys
from .core import FMap
from .interning import Id, Interner


def timers_handle(interner: Interner, timers: FMap) -> Id:
    """The handle of an armed timer table without sequence numbers, keyed afresh (what
    ``Keys.timers_key`` caches on the table; ``CHECK_MEMO`` compares the two)."""
    return interner.key_of(("timers", *[(k, t.due_ms) for k, t in timers._items]))


class Keys:
    """The state keys of a search's ``Context`` (theory of operation above)."""

    def key_tables(self) -> None:
        """The keys' table, made by the context's ``__init__``."""
        self.msgs_of: dict = {}  # messages' handles in sending order -> the handle of their set

    def timers_key(self, timers: FMap) -> Id:
        """The handle of the armed timers without their sequence numbers (cached on the map)."""
        memo = timers._fp
        if memo is not None and memo[0] is self.token:
            return memo[1]
        found = timers_handle(self.interner, timers)
        timers._fp = (self.token, found)
        return found

    def envelope(self, env: msys.Envelope, with_sent_at: bool = True) -> Id:
        """A message's handle without its sequence number (which only says in which order
        messages were created); its sending time counts for the state, not for a step."""
        slot = "_fp" if with_sent_at else "_what"
        memo = getattr(env, slot, None)
        if memo is not None and memo[0] is self.token:
            return memo[1]
        key = (env.src, env.dst, self.interner.iid(env.payload), env.what)
        if with_sent_at:
            key += (env.sent_at_ms,)
        handle = self.interner.key_of(key)
        env.__dict__[slot] = (self.token, handle)
        return handle

    def key(self, node, reorder: bool = True) -> tuple:
        """The state's identity in this search: a tuple of handles and small values. Two
        nodes have equal keys exactly when their system states are equal (sequence
        numbers and labels aside), their budgets are, and their ghost histories are (as
        multisets with ``reorder``, Rule 5). It is ``system_key``'s first part and the
        ghost's handle."""
        return self.system_key(node.system, node.used)[0] + (node.bag if reorder else node.order,)

    def system_key(self, s: msys.System, used: tuple, parent: msys.System | None = None,
                   parent_key: tuple | None = None) -> tuple[tuple, tuple]:
        """The part of a state's key that is not its ghost history, and the expansion
        memo's key (explore.py Rule 10): the same with what the key leaves out but a step
        or ``enabled`` may read, sequence numbers aside: the messages in flight and
        waiting for a dial in their sending order (which orders the deliveries
        ``enabled`` lists), the open requests (which a step's guards read) and the
        replicas' boots. Given the ``parent`` system and its expansion key, a component
        the step left as it was (the same object) takes its handle from there: a step
        changes one or two."""
        iid = self.interner.handle
        key_of = self.interner.key_of
        token = self.token
        envelope = self.envelope
        msgs_of = self.msgs_of
        # The fields read from the instance dicts, once each: an attribute read first
        # looks the name up in the class (a listing keys every child, reading 22 fields
        # of the child and its parent; 0.25k fewer instructions a state, by callgrind).
        f = s.__dict__
        if parent is None:
            p, parent_key = _NO_FIELDS, _NO_KEY
        else:
            p = parent.__dict__
        in_flight = f["in_flight"]
        if in_flight is p["in_flight"]:
            msgs, in_order = parent_key[6], parent_key[11]
        else:
            # (a comprehension, not a loop of appends: a listing keys every child's messages)
            handles = [memo[1] if (memo := getattr(e, "_fp", None)) is not None and memo[0] is token else envelope(e)
                       for e in in_flight]
            in_order = tuple(handles)
            # The set's handle by the messages in sending order: a step's children
            # reach the same few sets in the same orders again and again.
            msgs = msgs_of.get(in_order)
            if msgs is None:
                if len(handles) > 1:
                    handles.sort(key=self.sort_key)
                msgs = msgs_of[in_order] = key_of(("msgs", *handles))
        timers = f["timers"]
        if timers is p["timers"]:
            timers = parent_key[7]
        else:
            memo = timers._fp
            timers = memo[1] if memo is not None and memo[0] is token else self.timers_key(timers)
        dials_waiting = f["dials_waiting"]
        if dials_waiting is p["dials_waiting"]:
            dials, waiting = parent_key[9], parent_key[12]
        elif dials_waiting:
            waiting = tuple([envelope(e) for e in dials_waiting])
            dials = key_of(tuple(sorted(waiting, key=self.sort_key)))
        else:
            waiting = dials = ()
        agent, agent_files, replicas, db = f["agent"], f["agent_files"], f["replicas"], f["db"]
        sk = (f["now_ms"],
              parent_key[1] if agent is p["agent"] else iid(agent),
              f["agent_incarnation"],
              parent_key[3] if agent_files is p["agent_files"] else iid(agent_files),
              parent_key[4] if replicas is p["replicas"] else iid(replicas),
              parent_key[5] if db is p["db"] else iid(db),
              msgs, timers, f["partitions"], dials, used)
        # The open requests map request IDs to (route, tool call): strings, compared as
        # they are (a new map per request is cheaper hashed than interned).
        boots = f["replica_boots"]
        return sk, sk + (in_order, waiting, f["open_requests"]._items,
                         parent_key[14] if boots is p["replica_boots"] else iid(boots))


# ``system_key``'s parent's fields when there is none: no component is the same object.
_NO_FIELDS = dict.fromkeys(("in_flight", "timers", "dials_waiting", "agent", "agent_files", "replicas", "db",
                            "replica_boots"), object())
_NO_KEY = (None,) * 15
