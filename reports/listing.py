"""The output of ``toolcall-sim list``: everything a scenario file may say, then what runs.

Theory of operation
-------------------
The words a scenario file may use come from the one vocabulary (model/vocabulary.py); the
variants, properties, planted bugs, residual risks and known findings from the model's own tables. The
command hands over only what it read from disk: the shipped scenarios, each with its
summary or the one-line reason it does not load. Rendering reads the tables, never
changes them, so ``list`` cannot say a word the loader would refuse.
"""

from __future__ import annotations


def listing(scenarios: list[tuple[str, str | None, str | None]]) -> str:
    """The text of ``toolcall-sim list``; ``scenarios`` is (file stem, summary, or None
    and the error that kept it from loading), in the order to print."""
    from toolcall_sim.model import chatd, designs, planted_bugs, vocabulary
    from toolcall_sim.model import properties as props

    lines = ["scenarios:"]
    for stem, summary, error in scenarios:
        lines.append(f"  {stem:32} {summary}" if error is None else f"  {stem:32} (invalid: {error})")
    lines.append("variants:")
    lines.extend(f"  {name}" for name in sorted(chatd.VARIANTS))
    lines.append("design variants (rejected designs and fixes, model/designs.py; toolcall-sim compare):")
    lines.extend(f"  {d.name:20} {d.summary}" for d in designs.DESIGNS)
    lines.append("[world] keys:")
    for key in vocabulary.WORLD_KEYS.values():
        lines.append(f"  {key.name:22} {key.type:9} default {key.default:9} {key.meaning}")
    lines.append("fault kinds (fields; * required):")
    for f in vocabulary.FAULTS.values():
        fields = ", ".join([f"{n}*" for n in f.required] + list(f.optional))
        lines.append(f"  {f.name:18} {f.shape:9} {fields}")
    lines.append("trigger events (when = { event, route, tool_call, nth }):")
    lines.extend(f"  {e.name:18} {e.meaning}" for e in vocabulary.TRIGGER_EVENTS.values())
    lines.append("routes: " + ", ".join(vocabulary.ROUTES))
    lines.append("tools: " + ", ".join(vocabulary.TOOLS))
    lines.append("result kinds: " + ", ".join(vocabulary.RESULT_KINDS))
    lines.append("routes a crafted request may use: " + ", ".join(vocabulary.REQUEST_ROUTES))
    lines.append("expectations: per tool call " + ", ".join(vocabulary.EXPECT_CALL_KEYS)
                 + " (result = { " + ", ".join(vocabulary.EXPECT_RESULT_FIELDS) + " }); per variant "
                 + ", ".join(vocabulary.EXPECT_TOP_KEYS)
                 + " (requests.<name> = { " + ", ".join(vocabulary.EXPECT_ANSWER_FIELDS) + " })")
    lines.append("replay (one path of explore, step by step): " + ", ".join(vocabulary.REPLAY_KEYS) + "; steps: "
                 + "; ".join(f"do = {do}" + "".join(f", {f}" for f in fields) for do, fields in vocabulary.REPLAY_STEPS.items())
                 + " (faults: " + "; ".join(f"{k}" + "".join(f", {f}" for f in v) for k, v in vocabulary.REPLAY_FAULTS.items())
                 + ")")
    lines.append("properties:")
    lines.extend(f"  {p.name:36} {p.kind:10} {p.story:14} {p.statement}" for p in props.PROPERTIES)
    lines.append("planted bugs (use as --variant contract+<bug>):")
    for m in planted_bugs.PLANTED_BUGS:
        lines.append(f"  {m.name:36} caught by {m.caught_by} in {m.scenario}\n      {m.summary}")
    lines.append("residual risks (reported by name, not as new findings):")
    lines.extend(f"  {name:36} {text}" for name, text in props.RESIDUAL_RISKS.items())
    lines.append("known findings about the contract (violations, reported by name, not as new):")
    lines.extend(f"  {name:36} {text}" for name, text in props.KNOWN_FINDINGS.items())
    return "".join(line + "\n" for line in lines)
