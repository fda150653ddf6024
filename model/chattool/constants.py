"""The tool layer's constants: reference durations, tool names and paths, layers, dial errors.

Theory of operation
-------------------
Names shared by every part of the tool layer (model/chattool/__init__.py has the rules):
the reference durations (aliases of model/timing.py's defaults, for readers and tests;
the code reads the call's own ``timing``), the three tools and their agent paths, the two
tool layers a replica may run (``ToolLayer``: a real difference between chatd versions,
not a planted bug), and the dial failures the task layer reports with their texts.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..core import CachedRepr
from ..timing import DEFAULT_TIMING


# The reference durations, for readers and tests: the code reads the call's ``timing``
# (model/timing.py), whose defaults these are.
AGENT_ANSWER_TIMEOUT_MS = DEFAULT_TIMING.agent_answer_timeout_ms  # 1 min
EXECUTE_DEFAULT_TIMEOUT_MS = DEFAULT_TIMING.execute_default_timeout_ms  # 10 s
SNAPSHOT_TIMEOUT_MS = DEFAULT_TIMING.snapshot_timeout_ms  # 30 s
# Enforced by the agent, not here: why one blocking read can return "running" early.
AGENT_OUTPUT_WAIT_CAP_MS = DEFAULT_TIMING.agent_output_wait_cap_ms  # 5 min
MAX_OUTPUT_TO_MODEL_BYTES = 32 * 1024

AGENT_NODE = "agent"
# Only used inside error texts, where Go prints the request URL.
AGENT_URL = "http://agent"

EXECUTE = "execute"
EDIT_FILES = "edit_files"
WRITE_FILE = "write_file"
FILE_TOOLS = (EDIT_FILES, WRITE_FILE)

START_PATH = "/api/v0/processes/start"
EDIT_PATH = "/api/v0/edit-files"
WRITE_PATH = "/api/v0/write-file"

GENERIC_INTERRUPTED_TEXT = "tool call was interrupted before it produced a result"


@dataclass(frozen=True, repr=False)
class ToolLayer(CachedRepr):
    """Which chattool a replica runs: the two behaviours of the CODAGT-757 stack that
    do not follow from sending an identity (docs/contract.md D9, Q9).

    ``agent_answer_timeout``: PR 4 #29965 (starts, Q9b: "replaced by the agent answer
    timeout"), PR 6 #29978 (edits and writes), PR 5 #29976 (cancels, which only design B
    sends). Without it a start, edit or write waits on its own context: the execute
    timeout for a foreground start (``cmdCtx``), the attempt for the rest.
    ``snapshot_failure_unknown``: PR 4 (Q9c, C6): a snapshot that fails past the execute
    deadline reports unknown "not received"; before, "command timed out after <timeout>;
    failed to get output: <err>" with ``background_process_id`` (Go's legacy
    ``waitForProcess``).
    """

    name: str
    agent_answer_timeout: bool
    snapshot_failure_unknown: bool


# Go's tools that opt into serial execution (``SerialToolCalls() bool { return true }``):
# the box tools and find_tools (coder/coder ``coderd/x/chatd/chattool``). The model runs
# none of them against the agent; chatd's rules name the serial tools (model/chatd/).
SERIAL_TOOLS: tuple[str, ...] = ("box_attach_file", "box_read_file", "box_run", "box_write_file", "find_tools")

DESIGN_B = ToolLayer("design-b", agent_answer_timeout=True, snapshot_failure_unknown=True)
BEFORE_STACK = ToolLayer("before-stack", agent_answer_timeout=False, snapshot_failure_unknown=False)

# Dial failures the task layer reports to ``unreachable_result`` / ``dial_failed_result``:
# Go's three workspace connection errors, which mean that no workspace agent exists to
# run a tool call (docs/contract.md C5.6).
DIAL_NO_WORKSPACE = "no_workspace"
DIAL_DELETED = "deleted"
DIAL_NO_AGENT = "no_agent"
# The texts of chatd's dial errors: Go's sentinels ``ErrChatHasNoWorkspace``,
# ``ErrWorkspaceDeleted`` and ``ErrWorkspaceHasNoAgent`` (coder/coder
# coderd/x/chatd/chattool/toolcall.go; their messages are shown to the model), wrapped as
# the Go tests wrap them ("get workspace connection: %w"). No agent mentions
# start_workspace (5.4: a stopped workspace keeps its disk, so the model is told how to
# bring it back).
DIAL_ERROR_TEXTS = {
    DIAL_NO_WORKSPACE: "get workspace connection: this tool requires a workspace and this chat does not have one. "
                       "Use the create_workspace tool to create one",
    DIAL_DELETED: "get workspace connection: the chat's workspace was deleted (for example by dormancy cleanup) and "
                  "cannot execute tools. Use the create_workspace tool to create a new one",
    DIAL_NO_AGENT: "get workspace connection: workspace has no running agent: the workspace is likely stopped. "
                   "Use the start_workspace tool to start it",
    "timeout": "dial workspace agent: context deadline exceeded",
    "refused": "dial workspace agent: connection refused",
}
# Processes do not outlive the agent: none of these can leave a command running.
_NO_AGENT_DIAL_ERRORS = (DIAL_NO_WORKSPACE, DIAL_DELETED, DIAL_NO_AGENT)
# A stopped workspace keeps its disk, so only these settle a file change (5.4).
_FILE_CHANGE_LOST_DIAL_ERRORS = (DIAL_NO_WORKSPACE, DIAL_DELETED)


def dial_error_text(kind: str) -> str:
    return DIAL_ERROR_TEXTS.get(kind, f"dial workspace agent: {kind}")
