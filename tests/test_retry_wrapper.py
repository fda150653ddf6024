"""The retry wrapper's decision is Go's ``runTaskWithRetry`` rule (issue 34, docs/contract.md
C1.4a and C2.4): a timed-out attempt is retried unless it ended on a pure expected exit."""

from __future__ import annotations

import pytest

from toolcall_sim.model.chatd import retry
from toolcall_sim.model.chatd.state import DONE, EXIT, PENDING, RETRY, TIMED_OUT


@pytest.mark.parametrize("timed_out, expected_exit, context_error, retried", [
    # Go: timedOut && err != nil && (!Is(err, errTaskExpectedExit) || Is(err, Canceled|DeadlineExceeded|errTaskTimeout))
    (True, True, False, False),   # a fence mismatch met by the timer: not retried (the point)
    (True, True, True, True),     # the timer canceled what the attempt waited on (test group 40)
    (True, False, False, True),   # any other error of a timed-out attempt
    (False, True, False, False),  # a fence mismatch (TestRetryWrapper_ExpectedExitsDoNotRetry)
    (False, True, True, False),   # a canceled context joined to the expected exit, no timeout
    (False, False, False, True),  # an unexpected error (_UnexpectedErrorsRetry)
])
def test_the_rule_is_gos(timed_out, expected_exit, context_error, retried):
    assert retry.go_retry_rule(timed_out, expected_exit, context_error) is retried


@pytest.mark.parametrize("outcome, retried", [
    (TIMED_OUT, True), (f"{RETRY}:db_down", True), (f"{EXIT}:fenced:owner", False),
    (f"{EXIT}:fenced:history", False), (DONE, False), (PENDING, False),
])
def test_each_model_outcome_is_one_go_error(outcome, retried):
    assert retry.go_retries(outcome) is retried
