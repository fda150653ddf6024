"""Go compatibility: the few pieces of Go's standard library the model must match byte for byte.

Theory of operation
-------------------
The model twins Go code, and some of its answers are Go's standard library at work:
``time.ParseDuration`` / ``Duration.String`` (duration.py) for execute timeouts, scenario
durations and error texts; ``encoding/json``'s text (encoding.py) for what chatd writes
and reads; and ``encoding/json``'s decoding into typed structs plus ``strconv.Quote``
(decode.py) for the bodies the agent reads. They live here, below every layer, so the
loader and the simulator (sim/) read durations without importing chatd's tool layer, and
the tool layer (model/chattool/) and the agent (model/agent/) keep only their own logic.
The SDK's reading of error answers stays in model/sdk.py: it is codersdk's behaviour, not
the standard library's. Everything here is a pure function of its arguments.
"""
