"""Go's ``time.Duration`` text in integer milliseconds: ``time.ParseDuration`` and ``String``.

Theory of operation
-------------------
Durations reach the model as Go text twice: an execute call's ``timeout`` argument
(chattool parses it as chatd does) and the ``[world]`` keys and fault fields of a
scenario file (sim/world/scenario.py), and the tool layer prints them back in its error texts
("command timed out after 10s"). Both directions are here so that neither the loader nor
the simulator has to import the tool layer to read a duration.

Rule 1. ``parse_duration_ms`` accepts exactly what ``time.ParseDuration`` accepts (signs,
        fractions, every unit ``ns`` to ``h``, ``0`` without a unit) and refuses the rest
        with Go's message in ``DurationError``; the value is truncated to whole
        milliseconds toward zero, and Go's int64 nanosecond overflow is an error.
Rule 2. ``format_duration_ms`` is ``Duration.String`` for a whole number of
        milliseconds ("1m0s", "1.5s", "0s").
"""

from __future__ import annotations

import functools

from .encoding import json_quote


_UNIT_NS = {
    "ns": 1,
    "us": 1_000,
    "\u00b5s": 1_000,  # micro sign
    "\u03bcs": 1_000,  # Greek mu
    "ms": 1_000_000,
    "s": 1_000_000_000,
    "m": 60 * 1_000_000_000,
    "h": 3600 * 1_000_000_000,
}
_MAX_DURATION_NS = 2**63 - 1


class DurationError(ValueError):
    """``time.ParseDuration`` rejected the text; the message is Go's."""


def _is_digit(ch: str) -> bool:
    return "0" <= ch <= "9"


def parse_duration_ms(text: str) -> int:
    """Go's ``time.ParseDuration`` ("1h30m", "10s", "250ms", "-1.5h"), in whole
    milliseconds truncated toward zero like ``Duration.Milliseconds()``."""
    if type(text) is str:
        # A pure function of a string, parsed character by character: a swarm reads the
        # same few durations (scenario fields, execute timeouts) in every seed, so the
        # answers are kept. An error is not kept: it is raised afresh every time.
        return _parse_duration_ms_cached(text)
    return _parse_duration_ms(text)


def _parse_duration_ms(text: str) -> int:
    quoted = json_quote(text)
    rest = text
    negative = False
    if rest[:1] in ("-", "+"):
        negative = rest[0] == "-"
        rest = rest[1:]
    if rest == "0":
        return 0
    if rest == "":
        raise DurationError(f"time: invalid duration {quoted}")
    total_ns = 0
    while rest:
        i = 0
        while i < len(rest) and _is_digit(rest[i]):
            i += 1
        whole, rest = rest[:i], rest[i:]
        fraction = ""
        had_dot = rest[:1] == "."
        if had_dot:
            rest = rest[1:]
            j = 0
            while j < len(rest) and _is_digit(rest[j]):
                j += 1
            fraction, rest = rest[:j], rest[j:]
        if not whole and not fraction:
            raise DurationError(f"time: invalid duration {quoted}")
        k = 0
        while k < len(rest) and rest[k] != "." and not _is_digit(rest[k]):
            k += 1
        unit, rest = rest[:k], rest[k:]
        if not unit:
            raise DurationError(f"time: missing unit in duration {quoted}")
        if unit not in _UNIT_NS:
            raise DurationError(f"time: unknown unit {json_quote(unit)} in duration {quoted}")
        scale = _UNIT_NS[unit]
        value_ns = int(whole or "0") * scale
        if fraction:
            value_ns += int(fraction) * scale // 10 ** len(fraction)
        total_ns += value_ns
        if total_ns > _MAX_DURATION_NS:
            raise DurationError(f"time: invalid duration {quoted}")
    whole_ms = total_ns // 1_000_000
    return -whole_ms if negative else whole_ms


def format_duration_ms(duration_ms: int) -> str:
    """Go's ``Duration.String`` for whole milliseconds: "10m0s", "1m0s", "2s", "1.5s",
    "250ms", "2h0m0s", "0s"."""
    if duration_ms == 0:
        return "0s"
    sign = "-" if duration_ms < 0 else ""
    ms = abs(duration_ms)
    if ms < 1000:
        return f"{sign}{ms}ms"
    hours, rem = divmod(ms, 3_600_000)
    minutes, rem = divmod(rem, 60_000)
    seconds, millis = divmod(rem, 1000)
    sec_text = str(seconds) + ("." + f"{millis:03d}".rstrip("0") if millis else "") + "s"
    if hours:
        return f"{sign}{hours}h{minutes}m{sec_text}"
    if minutes:
        return f"{sign}{minutes}m{sec_text}"
    return sign + sec_text


_parse_duration_ms_cached = functools.lru_cache(maxsize=4096)(_parse_duration_ms)
