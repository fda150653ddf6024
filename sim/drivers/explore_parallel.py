"""The explorer on several cores: worker processes expand the frontier, one process
numbers the states, and the result is the one-process search's, state for state.

Theory of operation
-------------------
``toolcall_sim.model.explore.Search`` is a breadth-first search whose every decision is an event in a
fixed order: state ``n`` is expanded (its own verdict), then its children in the order of
its enabled actions (each one new, which gives it the next number, or known, which checks
that path's order of the history, Rule 5). This driver keeps that order and only moves the
work that does not decide anything to other processes.

Rule 1. Head start. The search runs in this process until its frontier holds enough
        states to share (``HEAD_START_PER_WORKER`` each), then forks the workers, which
        inherit the search as it stands (its interner, memo and frontier): nothing is
        pickled but each round's digests and verdicts.
Rule 2. Rounds. Each worker expands its share of the frontier (the states whose position
        in it is ``i % workers == w``): for every state its verdict, and for every child
        the 128-bit content digest of its key (model/interning.py Rule 4, the same in
        every process) and the verdict it would get as a known state. It keeps the
        children and sends the rest.
Rule 3. One numbering. This process merges the workers' rounds in state-number order and
        replays the events of ``Search.report`` and ``Search.offer`` (written out in
        ``_merge``; a child a worker already knows to be numbered is ``offer``'s known
        branch without the index lookup), exactly as the one-process
        search does them: the same states get the same numbers, the same
        merged paths are checked, the same first counterexample per property is kept,
        and ``max_states`` and ``stop_on`` cut at the same event. It answers each worker
        with the numbers of its children that are new (a known child is dropped), and a
        worker's next share is those children, still in number order.
Rule 4. Paths are rebuilt here, from the stored (parent, action index) choices, by
        replaying them from the initial state (``Search.path_to``).
Rule 5. No process waits idle while it could work ahead. A round ends at a barrier: this
        process numbers the round only when every worker has sent it, and a worker
        expands its next share only when the answer has come. Whichever finishes first
        lists the successors of its round's children meanwhile (``_Worker.ahead``), in the
        order they will be expanded, into the expansion memo (model/explore.py Rule 10),
        so the next round finds them there. It stops as soon as the data it waits for has
        come; a child the numbering finds known was listed for nothing. Only where the
        work is done moves: the same successors are listed, the same decisions made.
        (So with several workers the memo's hit and miss counts, ``Result.memo_hits``,
        depend on timing, which no output shows: measured on the default world, 2
        workers took 1.17-1.31 s with this against 1.24-1.32 s without, four runs each.)

So ``--workers`` changes the speed and never the result: the same states, transitions,
depth and counterexamples (tests/test_explore_parallel.py). Each worker's shares are
whatever its own past children were, so the load stays balanced only as far as subtrees
are alike. Measured with 2 workers (states expanded by this process and by the forked
one): 17,473 and 15,477 in the default world, 133,116 and 195,490 in the 1 s world
(measured when this process took 17 cards of 37, not 16 of 36). And every worker
fills its own memos: a step first met in two workers runs the model twice, and a state
whose system twin (model/explore.py Rule 10) went to the other worker is expanded again
(the default world lists the actions of 22,610 states with 2 workers, 19,419 with one),
which is most of why 2 workers gain far less than 2x (README, the bench). Splitting the
first frontier by ancestor instead (twins meet within a few levels of a common one) was
tried: it lists hardly more states than one process, but subtrees differ so much in size
(a state with budgets left has far more below it) that no static split kept the two
workers' loads within 30% in the default, 1 s and two-chats worlds alike; moving states
between workers costs more than expanding them (pickling a state and unpickling it, about
160 us against 60 us to expand one).
A worker takes its children from Rule 10's memo like the one-process search, sends each
verdict packed once, and digests a child from the text of its key's system part, which
the memo keeps (model/interning.py ``digest_extended``), not from the whole key.
"""

from __future__ import annotations

import heapq
import multiprocessing
import os
from collections import namedtuple
from typing import Callable

from toolcall_sim.model import explore as ex
from toolcall_sim.model import system as msys
from toolcall_sim.model.interning import digest_extended

HEAD_START_PER_WORKER = 200  # frontier states each worker gets before the workers start

_Violation = namedtuple("_Violation", "property residual_risk detail")


def _pack(violations: list, packed: dict) -> tuple:
    """The violations as plain tuples to send. A verdict is a list the verdict memo
    keeps for the whole search (``Context.verdict``), so it is packed once, by identity."""
    if not violations:
        return ()
    found = packed.get(id(violations))
    if found is None:
        found = packed[id(violations)] = (violations, tuple(_Violation(v.property, v.residual_risk, v.detail)
                                                            for v in violations))
    return found[1]


def explore(config: msys.WorldConfig, bounds: ex.Bounds = ex.Bounds(), max_states: int = 200_000,
            stop_on: Callable[[ex.Found], bool] | None = None,
            on_progress: Callable[[int], bool | None] | None = None, workers: int = 2,
            head_start: int | None = None) -> ex.Result:
    """``toolcall_sim.model.explore.explore`` on ``workers`` processes (1: in this one). ``head_start``:
    how many frontier states this process gathers before the workers start (Rule 1;
    default ``HEAD_START_PER_WORKER`` each)."""
    if workers <= 1 or "fork" not in multiprocessing.get_all_start_methods():
        return ex.explore(config, bounds, max_states, stop_on=stop_on, on_progress=on_progress)
    # No cycle collection here or in the workers, which inherit this setting with the
    # heap (model/explore.py ``without_cycle_collection`` says why that is safe).
    with ex.without_cycle_collection():
        return _explore(config, bounds, max_states, stop_on, on_progress, workers, head_start)


def _explore(config, bounds, max_states, stop_on, on_progress, workers, head_start) -> ex.Result:
    search = ex.Search(config, bounds, max_states, stop_on=stop_on, digests=True)
    search.run(on_progress, until_frontier=head_start or HEAD_START_PER_WORKER * workers)
    if not search.frontier or search.stopped or search.full:
        return search.finish()
    shares = _shares(list(search.frontier), workers)
    search.frontier.clear()
    fork = multiprocessing.get_context("fork")
    conns, procs = [], []
    # This process is worker 0 as well as the one that numbers: the others are forked.
    for w in range(1, workers):
        mine, theirs = fork.Pipe()
        proc = fork.Process(target=_serve, args=(theirs, _Worker(search, shares[w]), os.getpid()), daemon=True)
        proc.start()
        theirs.close()
        conns.append(mine)
        procs.append(proc)
    local = _Worker(search, shares[0])
    del shares
    before = (search.ctx.hits, search.ctx.misses)  # every worker's counters start from these
    left = True
    try:
        while True:
            mine = local.expand()
            local.ahead(lambda: all(conn.poll() for conn in conns))  # Rule 5, while the others finish
            rounds = [mine] + [conn.recv() for conn in conns]
            answers: list[list[int]] = [[] for _ in rounds]
            merged = heapq.merge(*([(entry, w) for entry in r] for w, r in enumerate(rounds)),
                                 key=lambda item: item[0][0])
            new_states = _merge(search, merged, answers)
            if on_progress is not None and on_progress(len(search.parents)):
                search.stopped = True
            if search.stopped or search.full or new_states == 0:
                left = new_states > 0 and not search.full
                break
            local.take(answers[0])
            for conn, answer in zip(conns, answers[1:]):
                conn.send(answer)
        hits, misses = local.ctx.hits - before[0], local.ctx.misses - before[1]
        for conn in conns:
            conn.send(None)
            worker_hits, worker_misses = conn.recv()
            hits += worker_hits - before[0]
            misses += worker_misses - before[1]
    finally:
        for proc in procs:
            proc.join(timeout=5)
            if proc.is_alive():
                proc.kill()  # it ignores SIGTERM (sim/io/interrupt.py Rule 4); it holds no file
                proc.join(timeout=5)
    result = search.finish(frontier_left=left)
    result.processes = workers  # forked: reported as the processes really used (issue 32)
    result.memo_hits = before[0] + hits
    result.memo_misses = before[1] + misses
    return result


def _merge(search: ex.Search, merged, answers: list[list[int]]) -> int:
    """Rule 3 for one round: the workers' states in number order, replayed as the events
    of ``Search.report`` and ``offer`` (written out here: this loop is the part of a
    round no worker shares). Returns how many states are new."""
    index, parents, moves, depths = search.index, search.parents, search.moves, search.depths
    result, reorder, report, path_to = search.result, search.reorder, search.report, search.path_to
    limit = search.max_states + 1
    new_states = 0
    for (number, own, children), w in merged:
        if own:
            report(own, lambda number=number: path_to(number), depths[number])
        if search.stopped:  # by this verdict, or by a path's own order in the state before
            break
        answer = answers[w]
        depth = depths[number] + 1
        for move, (key, as_known) in enumerate(children):
            result.transitions += 1
            if type(key) is int:
                known = key  # the worker knows this child's number already: a known state
            else:
                known = index.get(key)
                if known is None:
                    n = len(parents)
                    if n >= limit:
                        search.full = True
                        return new_states
                    index[key] = n
                    parents.append(number)
                    moves.append(move)
                    depths.append(depth)
                    if depth > result.depth:
                        result.depth = depth
                    answer.append(n)
                    new_states += 1
                    continue
            if reorder and as_known:
                # Rule 5: this path's own order of the history is checked too.
                report(as_known, lambda number=number, move=move: path_to(number, move), depth)
            answer.append(-1 - known)  # known: tell the worker which state it is
    return new_states


def _shares(frontier: list, workers: int) -> list[list]:
    """Rule 2's split, dealt like cards in number order. This process also numbers every
    state (Rule 3), so it takes a smaller first hand: 16 cards to each other worker's
    20 (the default world's states then split 17,473 here to 15,477 in the other
    worker, and the two processes execute 8.34 and 8.34 billion instructions, measured
    with cachegrind; at 17 cards the split was 17,867 to 15,083, at 15 13,541 to
    19,409 with 7.08 against 9.69 billion). After
    the first round each keeps its own children, so this only decides where the shares
    start (see the theory of operation for how they end)."""
    shares: list[list] = [[] for _ in range(workers)]
    hands = [(0, 16)] + [(w, 20) for w in range(1, workers)]
    # One round of the deal, each worker's cards spread evenly through it.
    deal = [w for _, w in sorted((i / n, w) for w, n in hands for i in range(n))]
    for i, item in enumerate(frontier):
        shares[deal[i % len(deal)]].append(item)
    return shares


class _Worker:
    """Rule 2: one share of the frontier. ``known`` maps the keys of states this worker
    has seen to their numbers, so a child it has met before goes by its number and
    needs no digest (digests cost about a fifth of a step)."""

    def __init__(self, search: ex.Search, frontier: list):
        self.search, self.ctx, self.frontier = search, search.ctx, frontier
        self.known: dict = {}
        self.kept: list = []
        self.ahead_at = 0  # how far ``ahead`` went through ``kept``
        self.packed: dict = {}  # id of a verdict -> (the verdict, kept alive; its packed form)

    def expand(self) -> list:
        search, ctx, known = self.search, self.ctx, self.known
        reorder, successors, grow, verdict = search.reorder, search.successors, ctx.grow, ctx.verdict
        packed, verdicts, Node, chats_of = self.packed, ctx.verdicts, ex.Node, ctx.chats_of
        entries, kept = [], []
        for number, node in self.frontier:
            terminal, found = successors(node)  # Rule 10's memo, as the one-process search
            facts = chats_of.get(node.xkey[5]) if node.xkey is not None else None
            own = _pack(verdict(node, ex.TERMINAL if terminal else ex.ALWAYS, facts[1] if facts is not None else None),
                        packed)
            children = []
            for _, system, new_ghost, used, sk, xk, kinds, chats, text in found:
                if new_ghost:
                    ghost, order, bag = grow(node, new_ghost)
                else:
                    ghost, order, bag = node.ghost, node.order, node.bag
                child = Node(system, used, ghost, order, bag, True, xk)
                last = bag if reorder else order
                local = sk + (last,)
                if reorder:
                    # The verdict memo read here first, as ``Context.verdict`` keys it.
                    as_known = verdicts.get((kinds, order, chats))
                    if as_known is None:
                        as_known = verdict(child, kinds, chats)
                    as_known = _pack(as_known, packed) if as_known else ()
                else:
                    as_known = ()
                seen = known.get(local)
                # The key's digest from its system part's text, kept in the memo (Rule 10).
                children.append((seen if seen is not None else digest_extended(text, last), as_known))
                kept.append((local, child))
            entries.append((number, own, children))
        self.kept, self.ahead_at = kept, 0
        return entries

    def ahead(self, ready: Callable[[], bool]) -> None:
        """Rule 5: until ``ready()``, the successors of this round's children in the order
        they will be expanded, each a child this worker does not know yet (the numbering
        may still find it known: the other workers' children are not seen here)."""
        successors, known, kept = self.search.successors, self.known, self.kept
        i = self.ahead_at
        while i < len(kept) and not ready():
            local, child = kept[i]
            i += 1
            if local not in known:
                successors(child)
        self.ahead_at = i

    def take(self, answer: list) -> None:
        """Rule 3's answer: each child's number (new, >= 0) or ``-1 - number`` (known)."""
        frontier = []
        for n, (local, child) in zip(answer, self.kept):
            if n >= 0:
                frontier.append((n, child))
                self.known[local] = n
            else:
                self.known[local] = -1 - n
        self.frontier, self.kept = frontier, []


def _serve(conn, worker: _Worker, parent_pid: int) -> None:
    from toolcall_sim.io.interrupt import worker_signals

    worker_signals(parent_pid)  # the numbering process stops us, or its end does (Rule 4 there)
    try:
        while True:
            conn.send(worker.expand())
            worker.ahead(conn.poll)  # Rule 5, while this process numbers the round
            answer = conn.recv()
            if answer is None:
                conn.send((worker.ctx.hits, worker.ctx.misses))
                return
            worker.take(answer)
    except (EOFError, KeyboardInterrupt, BrokenPipeError):
        return
