"""Planted bugs: named small mistakes in the contract, selectable like variants.

Theory of operation
-------------------
A checker that never fires proves nothing. Each planted bug is a small, plausible mistake
in the contract's logic, expressed as changed knobs of the rule objects the model already
reads (``chatd.ChatdRules`` and ``agent.AgentRules``), never as a copy of the code. A
variant name is a base variant plus any number of bugs, each at most once:
``contract+no-age-margin``. Each
bug names the property that must catch it and the scenario in which it does; a test runs
every one under the bug (the property fails) and under the plain contract (it holds).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from . import agent, chatd, designs


@dataclass(frozen=True)
class PlantedBug:
    name: str
    summary: str
    caught_by: str  # the property that must catch it (others may fire too)
    scenario: str  # the scenario (file stem in scenarios/) where it is caught
    chatd: tuple[tuple[str, object], ...] = ()  # ChatdRules fields to change
    agent: tuple[tuple[str, object], ...] = ()  # AgentRules fields to change
    agent_hooks: tuple[type, ...] = ()  # AgentRules subclasses whose hook overrides apply (model/agent/planted.py)
    timing: tuple[tuple[str, object], ...] = ()  # chatd Timing fields to change


PLANTED_BUGS: tuple[PlantedBug, ...] = (
    PlantedBug("no-age-margin",
           "The agent drops the 2 s age margin: a request that was in flight across an agent restart runs again.",
           "at_most_once", "bug_delayed_retry_across_restart", agent=(("age_margin_ms", 0),)),
    PlantedBug("run-before-record",
           "The agent runs the handler before inserting the record (breaks A1): a request during a slow run runs again.",
           "at_most_once", "bug_slow_spawn_retry", agent_hooks=(agent.planted.RunBeforeRecord,)),
    PlantedBug("cancel-without-marker",
           "A cancel of a call the agent never received records nothing, so the late start still runs (breaks US10).",
           "canceled_before_received_never_runs", "us10_interrupt_before_start_arrives",
           agent_hooks=(agent.planted.CancelWithoutMarker,)),
    PlantedBug("cancel-without-marker-truth",
           "The same bug seen by the truth checker: the interrupt reports not_run for a command that then ran.",
           "truthful_result", "us10_interrupt_before_start_arrives", agent_hooks=(agent.planted.CancelWithoutMarker,)),
    PlantedBug("stop-rule-inclusive",
           "The stop rule kills at run age == threshold, so a foreground process exactly at its deadline is killed.",
           "background_survives", "bug_interrupt_at_deadline", agent_hooks=(agent.planted.StopRuleInclusive,)),
    PlantedBug("records-lost-on-new-message",
           "Inserting a record drops the other records of the same message, so a retried batch runs again.",
           "retry_changes_nothing", "us04_retry_changes_nothing", agent_hooks=(agent.planted.RecordsLostOnNewMessage,)),
    PlantedBug("pid-from-command",
           "The process ID comes from the command and is looked up without the chat: another chat's cancel kills it.",
           "chat_isolation", "us09_chat_isolation", agent_hooks=(agent.planted.PidFromCommand,)),
    PlantedBug("interrupt-without-cancel",
           "The interrupt commits the generic result and sends no cancel (today's interrupt inside the contract).",
           "interrupt_stops_foreground", "us02_interrupt_stops_foreground", chatd=(("interrupt_cancels", False),)),
    PlantedBug("commit-without-owner-fence",
           "Result commits check only the history version: a replica that just lost the chat commits before the new owner.",
           "fenced_commits", "bug_owner_change_near_exit", chatd=(("owner_fence", False), ("attempt_fence", False))),
    PlantedBug("commit-without-attempt-fence",
           "A timed-out attempt's calls go on and its batch commits, and result commits skip the generation "
           "attempt check: a replaced attempt commits after the retry began (with the check it is refused).",
           "fenced_commits", "bug_stale_attempt_commit",
           chatd=(("attempt_fence", False), ("attempt_timeout_stops_calls", False))),
    PlantedBug("commit-without-fences",
           "Result commits are not fenced at all: a replica that just lost the chat still commits.",
           "fenced_commits", "bug_owner_change_near_exit",
           chatd=(("history_fence", False), ("owner_fence", False), ("attempt_fence", False))),
    PlantedBug("interrupt-answers-resolved-calls",
           "The interrupt's commit answers every call of the last assistant message, resolved or not.",
           "one_result", "bug_interrupt_during_next_generation", chatd=(("interrupt_rereads_unresolved", False),)),
    PlantedBug("interrupt-drops-not-run",
           "The interrupt commits nothing for a call that never ran, leaving it without a result forever.",
           "one_result_eventually", "us10_interrupt_before_start_arrives", chatd=(("interrupt_commits_not_run", False),)),
    PlantedBug("background-stopped-on-interrupt",
           "The interrupt asks the agent to stop background processes too (breaks C5 and US6).",
           "background_survives", "us06_background_survives", chatd=(("interrupt_spares_background", False),)),
    PlantedBug("no-agent-answer-timeout",
           "chatd waits for the agent's answer with no bound (C6): an interrupt behind a partition never finishes.",
           "interrupt_finishes", "bug_lost_cancel", timing=(("agent_answer_timeout_ms", 10**12),)),
)


def by_name() -> dict[str, PlantedBug]:
    return {m.name: m for m in PLANTED_BUGS}


class UnknownVariant(ValueError):
    pass


def resolve(variant: str, agent_rules: "agent.AgentRules | None" = None, timing=None):
    """``"contract+no-age-margin"`` -> (ChatdRules, AgentRules). The base must be a chatd
    variant or a design (model/designs.py: its base chatd variant with its bookkeeping,
    and its agent hooks on ``agent_rules``); each ``+bug`` applies one planted bug's knobs
    on top, also on top of ``timing`` when a world runs on a clock of its own (the
    explorer's)."""
    base, *bugs = variant.split("+")
    design = designs.by_name().get(base)
    rules = chatd.VARIANTS.get(design.base if design is not None else base)
    if rules is None:
        known_bases = sorted(chatd.VARIANTS) + [d.name for d in designs.DESIGNS]
        raise UnknownVariant(f"unknown variant {base!r} (known: {', '.join(known_bases)})")
    if timing is not None:
        rules = replace(rules, timing=timing)
    agent_rules = agent_rules or agent.AgentRules()
    agent_bugs = []
    if design is not None:
        rules = replace(rules, name=design.name, bookkeeping=design.bookkeeping)
        if design.agent_hooks:
            agent_rules = agent.with_bugs(agent_rules, design.agent_hooks)
            agent_bugs.append(design.name)
    known = by_name()
    # Each bug once: a repeat changes nothing yet would name another variant (its own
    # counterexample files, its own row), so it is refused rather than accepted in silence.
    repeated = next((bug for i, bug in enumerate(bugs) if bug in bugs[:i]), None)
    if repeated is not None:
        raise UnknownVariant(f"planted bug {repeated!r} named twice in {variant!r}: name each bug once")
    for bug in bugs:
        mutant = known.get(bug)
        if mutant is None:
            raise UnknownVariant(f"unknown planted bug {bug!r} (known: {', '.join(sorted(known))})")
        rules = replace(rules, **dict(mutant.chatd))
        if mutant.timing:
            rules = replace(rules, timing=replace(rules.timing, **dict(mutant.timing)))
        if mutant.agent or mutant.agent_hooks:
            agent_rules = agent.with_bugs(replace(agent_rules, **dict(mutant.agent)), mutant.agent_hooks)
            agent_bugs.append(bug)
    if bugs:
        rules = replace(rules, name=variant)
    if agent_bugs:
        agent_rules = replace(agent_rules, name="+".join([agent_rules.name, *agent_bugs]))
    return rules, agent_rules


def variant_names() -> list[str]:
    return sorted(chatd.VARIANTS) + [d.name for d in designs.DESIGNS] + [f"contract+{m.name}" for m in PLANTED_BUGS]
