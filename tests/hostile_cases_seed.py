"""Seed rows of the hostile-input table (tests/hostile.py): the first cases of issue 32."""

from hostile import Case

GOOD = b"""name = "ok"
until = "1m"
[[turns]]
chat = "chat-1"
tool_calls = [ { id = "toolu_01", tool = "execute", command = "true", runs_for = "1s" } ]
"""

CASES = [
    Case("a good scenario runs", ("run", "{tmp}/s.toml"), "silent", expect=0, files={"s.toml": GOOD}),
    Case("unknown top key", ("run", "{tmp}/s.toml"), "silent", files={"s.toml": GOOD + b'colour = "x"\n'},
         needle="colour"),
]
