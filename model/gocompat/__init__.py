"""Go compatibility: the few pieces of Go's standard library the model must match byte for byte.

Theory of operation
-------------------
The model twins Go code, and some of its answers are Go's standard library at work:
``time.ParseDuration`` / ``Duration.String`` (duration.py) for execute timeouts, scenario
durations and error texts, and ``encoding/json``'s text (encoding.py) for what chatd
writes and reads. They live here, below every layer, so the loader and the simulator
(sim/) read durations without importing chatd's tool layer, and the tool layer
(model/chattool/) keeps only chatd's own logic. The agent's typed struct decoding stays in
model/gojson.py and the SDK's error reading in model/sdk.py: each is read by one side only.
Everything here is a pure function of its arguments.
"""
