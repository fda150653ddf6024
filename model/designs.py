"""The designs the CODAGT-757 design rejected (docs/contract.md D3, D7), as variants over
the same model: each a small named object that says which chatd build it starts from and
which hooks it changes.

Theory of operation
-------------------
The design's D3 (the rejected designs) and D7 (residual risks) argue in prose why the contract
(design B) beats its alternatives. Here each alternative is a ``Design``: a
base chatd variant (``today`` or ``contract``, model/chatd/rules.py), the bookkeeping
chatd keeps per tool call (model/chatd/designs.py) and the agent hooks it overrides
(model/agent/designs.py). ``planted_bugs.resolve`` builds a design by name like any
variant, so ``--variant ledger`` works wherever a variant is taken (run, explore,
search, swarm, compare) and a planted bug composes with it (``fresh-start+no-age-margin``).
Nothing here is behaviour: a design is data pointing at hooks, and ``flaw`` names the
property and the world in which the explorer must find what the design section says
(tests/test_designs.py pins each); ``flaw_name`` says it in the section's words, the
heading ``toolcall-sim compare`` draws that flaw's shortest counterexample under, apart
from what the design inherits from today's chatd (sim/ci/compare.py, "The flaw and the
inherited").

What each models, and how it differs from the code facts it stands beside:

- ``ledger``: the Postgres execution table of #27100 and #27317-#27325 on today's chatd
  (no tool call headers; the agent picks process IDs). The start's answer writes the
  process ID; a later attempt that finds it waits on it. The flaw (D3): a crash or
  a lost answer between the start and the write runs the command again; the cost: one
  durable write per start. Claims, sweeps and reconciliation are left out. Interrupts are
  today's (the generic result, no cancel): #27100 did not change them.
- ``fresh-start``: the run-once reservation of #27369-#27372 (a key beside agent-picked
  process IDs) as the contract's agent without the age rule: no record means run. The
  model keeps the tool call UUID as the process ID, so chatd's wait is the contract's;
  what differs is only the proof the flaw is about: after an agent restart (or an
  eviction, which A7 says counts as one) a later attempt starts the command again. The
  60-minute retention of #27369 is not modelled (restarts show the same flaw).
- ``remember-all`` (an earlier revision): the agent keeps every record it ever inserted
  (no dropping on a newer message). At-most-once holds as in the contract; the cost is
  memory that grows with every tool call (``records_held``).
- ``first-attempt-only`` (the previous revision): a later generation attempt only looks
  up. The flaw: attempts that never reached the agent make a later one report unknown
  for a command that never ran (property ``unknown_only_when_unknowable``).
- ``incarnation-token`` (D7's fix): a durable write of the dialed agent
  incarnation per tool call before its first request; the agent refuses other
  incarnations and needs no clock. At-most-once holds with messages in flight past the
  2 s margin, for a durable write per tool call.
"""

from __future__ import annotations

from dataclasses import dataclass

from .agent import designs as agent_designs
from .chatd import designs as chatd_designs


@dataclass(frozen=True)
class Design:
    name: str
    summary: str
    models: str  # the design section and PRs it models
    base: str  # the chatd variant it starts from (model/chatd/rules.py VARIANTS)
    bookkeeping: chatd_designs.Bookkeeping = chatd_designs.NONE
    agent_hooks: tuple[type, ...] = ()  # AgentRules subclasses (model/agent/designs.py)
    # The property that shows the design's flaw (the section's argument) and the explorer
    # world where it shows, or "" when the design's flaw is a cost (remember-all) or it
    # has none the tools find (incarnation-token).
    flaw: str = ""
    flaw_world: str = ""
    # The flaw in a few of the design section's words (a heading of the comparison); for
    # a design whose flaw is a cost (``flaw`` ""), that cost.
    flaw_name: str = ""


DESIGNS: tuple[Design, ...] = (
    Design("ledger",
           "chatd records the agent-picked process ID after each start; later attempts look it up.",
           "docs/contract.md D3 (rejected: Postgres execution table), #27100, #27317-#27325", "today",
           bookkeeping=chatd_designs.Ledger(), flaw="at_most_once", flaw_world="default",
           flaw_name="the ledger's lost record"),
    Design("fresh-start",
           "The agent keeps a reservation per tool call and starts afresh whenever it has none.",
           "docs/contract.md D3 (rejected: key beside agent-picked process IDs), #27369-#27372", "contract",
           agent_hooks=(agent_designs.FreshStart,), flaw="at_most_once", flaw_world="default",
           flaw_name="the fresh start after a restart"),
    Design("remember-all",
           "The agent remembers every tool call it ever received.",
           "docs/contract.md D3 (rejected: the agent remembering every tool call, an earlier revision)", "contract",
           agent_hooks=(agent_designs.RememberAll,),
           flaw_name="records that grow with every tool call"),
    Design("first-attempt-only",
           "Only a batch's first attempt may start; later attempts only look the process up.",
           "docs/contract.md D3 (rejected: only the first attempt may start, previous revision)", "contract",
           bookkeeping=chatd_designs.FirstAttemptOnly(), flaw="unknown_only_when_unknowable", flaw_world="default",
           flaw_name="unknown for a command that never ran"),
    Design("incarnation-token",
           "chatd durably stores the agent incarnation per tool call before its first request; the agent refuses others.",
           "docs/contract.md D7 (the age check's residual risk and the fix it rejects for its cost)", "contract",
           bookkeeping=chatd_designs.IncarnationTokens(), agent_hooks=(agent_designs.IncarnationToken,),
           flaw_name="a durable write per tool call"),
)


def by_name() -> dict[str, Design]:
    return {d.name: d for d in DESIGNS}
