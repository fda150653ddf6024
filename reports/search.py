"""What ``toolcall-sim search`` prints: the plan, the shrunk failure as its story, and
how the search ended. Plain data in, text out (the command writes it)."""

from __future__ import annotations


def world_plan(variant: str, world: str, examples: int, steps: int, out_dir) -> str:
    return (f"search {variant} in world {world}: up to {examples} programs of up to {steps} actions "
            f"(hypothesis); a counterexample goes to {out_dir}\n")


def world_violation(message: str, doc: dict, file) -> str:
    lines = [f"  VIOLATION {message}\n  shrunk to {doc['steps']} actions:\n"]
    lines += [f"    {i:3}. {action['label']}\n" for i, action in enumerate(doc["actions"], 1)]
    lines.append(f"  counterexample: {file} (toolcall-sim replay {file})\n")
    return "".join(lines)


def world_interrupted(kept: int, out_dir) -> str:
    return "  interrupted (Ctrl-C): " + (
        f"{kept} counterexample(s) found so far kept in {out_dir}, maybe not fully shrunk\n" if kept
        else "no new finding so far\n")


def story_plan(variant: str, examples: int, seed: int, shrink_runs: int, out_dir) -> str:
    return (f"search {variant}: up to {examples} drawn race stories (hypothesis, seed {seed}), "
            f"shrinking with up to {shrink_runs} runs; a counterexample goes to {out_dir}\n")


def story_ran(programs: int, seconds: float) -> str:
    return f"  {programs} programs run in {seconds:.1f}s\n"


def story_violation(outcome, variant: str, toml_path, json_path) -> str:
    faults, calls, turns = outcome.length
    # Cut short while shrinking: the smallest failing story met so far is kept and said
    # to be that.
    shrunk = (f"shrinking cut short (Ctrl-C) after {outcome.shrink_runs} runs; the smallest failing story so "
              f"far, maybe not fully shrunk, has" if outcome.interrupted else
              f"shrunk with {outcome.shrink_runs} runs to")
    text = (f"  VIOLATION {outcome.violated}: {outcome.detail}\n"
            f"  first failure after {outcome.programs_to_failure} programs; {shrunk} "
            f"{faults} faults, {calls} tool calls, {turns} turns:\n"
            f"    {outcome.scenario['summary']}\n"
            f"  scenario: {toml_path} (toolcall-sim run {toml_path} --variant {variant})\n"
            f"  counterexample: {json_path} (toolcall-sim replay {json_path})\n")
    if outcome.interrupted:
        text += "  interrupted (Ctrl-C): the search and its shrinking were cut short\n"
    return text


def story_interrupted() -> str:
    return "  interrupted (Ctrl-C): no new finding so far\n"


def no_finding() -> str:
    return "  no new finding\n"
