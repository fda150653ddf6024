"""A scenario at every size cap of model/vocabulary.py at once, for the figure
scenarios/README.md "Sizes and text" gives (what the largest accepted scenario costs):

    python tests/caps_scenario.py > caps.toml
    /usr/bin/time -f "%e s %M KB" toolcall-sim run caps.toml

The most replicas, chats, turns, tool calls and agent restarts a file may hold, over the longest
``until``; tests/test_caps_scenario.py checks that the loader accepts it (so the figure is
for a scenario the caps allow) and that one more of each is refused.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from toolcall_sim.model import vocabulary as voc  # noqa: E402


def caps_scenario(replicas: int = voc.MAX_REPLICAS, chats: int = voc.MAX_CHATS, turns: int = voc.MAX_TURNS,
                  tool_calls: int = voc.MAX_TOOL_CALLS, restarts: int = voc.MAX_FAULTS) -> str:
    turns_per_chat = max(1, turns // chats)
    per_turn = max(1, tool_calls // (chats * turns_per_chat))
    until_s = voc.MAX_UNTIL_MS // 1000
    lines = ['name = "every cap at once"', f'until = "{until_s}s"', "[world]", f"replicas = {replicas}"]
    n = 0
    for chat in range(chats):
        for _ in range(turns_per_chat):
            calls = []
            for _ in range(per_turn):
                n += 1
                calls.append(f'{{ id = "toolu_{n:05d}", tool = "execute", command = "true", runs_for = "1s" }}')
            lines += ["[[turns]]", f'chat = "chat-{chat}"', "tool_calls = [ " + ", ".join(calls) + " ]"]
    step_s = until_s // (restarts + 1)
    for i in range(restarts):
        lines += ["[[faults]]", f'at = "{(i + 1) * step_s}s"', 'kind = "agent_restart"']
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    sys.stdout.write(caps_scenario())
