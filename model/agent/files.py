"""The agent's file handlers: edit and write (docs/contract.md A4.6, agentfiles).

Theory of operation
-------------------
Both run under the tool call middleware, so a tool call's edit or write happens once and
its answer is recorded. The files are the workspace disk (``AgentState.files``), which
survives a restart; a directory is implied by the files under it.

An edit is two phases, as agentfiles' ``HandleEditFiles`` has them. Phase 1 prepares
every file of the request and writes none: the path is checked, the file read, and each
of its edits applied in order to the text in memory by ``fuzzy_replace``. Every file's
failure is collected; a path a request names twice is a failure of the second entry. If
any file failed, the answer is the highest of the failures' statuses with their messages
joined one per line, and the disk is as it was. Phase 2 writes every prepared file; a
write cannot fail on the model's disk, so an edit applies to all its files or to none.
Each written file leaves an ``edit_applied`` truth for the checkers: a refused edit leaves
none.

``fuzzy_replace`` is Go's cascade of three passes over one search/replace pair: the exact
text, then whole lines equal once trailing whitespace is ignored, then whole lines equal
once leading and trailing whitespace are ignored. The first pass that matches decides;
a match that is not unique is refused unless the edit says ``replace_all``.
"""

from __future__ import annotations

from ..core import Probe, Request, probe, replace, truth
from ..gocompat.decode import GoJSONError, go_quote
from ..identity import Key
from .state import AgentState, Effects
from .wire import _bad_json, _query, _rec, decode_edit

# The texts fuzzyReplace answers with (agentfiles files.go), each prefixed "edit PATH: ".
NOT_FOUND = ("search string not found in file. Verify the search string matches the file content "
             "exactly, including whitespace and indentation")
AMBIGUOUS = ("search string matches {count} occurrences (expected exactly 1). Include more surrounding "
             "context to make the match unique, or set replace_all to true")

# Go's strings.TrimSpace trims what unicode.IsSpace calls space. Python's str.strip()
# would also trim U+001C..U+001F, which Go keeps, so the set is spelled out.
_GO_SPACE = "\t\n\v\f\r \x85\xa0\u1680" + "".join(map(chr, range(0x2000, 0x200B))) + "\u2028\u2029\u202f\u205f\u3000"


class EditError(Exception):
    """One file's refusal in phase 1: its HTTP status and the probe of its branch."""

    def __init__(self, status: int, message: str, branch: Probe):
        super().__init__(message)
        self.status = status
        self.branch = branch


def _lines(text: str) -> list[str]:
    """``strings.SplitAfter(text, "\\n")``: each line keeps its newline, and the text after
    the last newline is the last element, empty when the text ends with one."""
    parts = text.split("\n")
    return [part + "\n" for part in parts[:-1]] + [parts[-1]]


def _trailing_blind(a: str, b: str) -> bool:
    return a.rstrip(" \t\r\n") == b.rstrip(" \t\r\n")


def _indent_blind(a: str, b: str) -> bool:
    return a.strip(_GO_SPACE) == b.strip(_GO_SPACE)


def _line_matches(lines: list[str], wanted: list[str], same) -> list[int]:
    """Where ``wanted`` (one or more lines) starts in ``lines`` under ``same``, first to
    last, each match resuming after the previous one's last line (non-overlapping)."""
    starts = []
    i, last = 0, len(lines) - len(wanted)
    while i <= last:
        if all(same(lines[i + j], line) for j, line in enumerate(wanted)):
            starts.append(i)
            i += len(wanted)
        else:
            i += 1
    return starts


def fuzzy_replace(content: str, search: str, replacement: str, replace_all: bool) -> str:
    """The content after one edit; ``ValueError`` with Go's text when the search is not
    found or not unique. The line passes splice ``replacement`` verbatim in place of the
    matched lines (their newlines included): indentation and line ends are the caller's."""
    # Pass 1: the exact text (an empty search is found everywhere, as strings.Contains has it).
    if search in content:
        if replace_all:
            return content.replace(search, replacement)
        count = content.count(search)
        if count > 1:
            raise ValueError(AMBIGUOUS.format(count=count))
        return content.replace(search, replacement, 1)
    lines = _lines(content)
    wanted = _lines(search)
    if wanted[-1] == "":
        wanted.pop()  # a search ending in a newline: its empty last piece is no line
    # Passes 2 and 3. A search that reaches here is not empty (pass 1 takes ""), so it has
    # at least one line.
    for same in (_trailing_blind, _indent_blind):
        starts = _line_matches(lines, wanted, same)
        if not starts:
            continue
        if len(starts) > 1 and not replace_all:
            raise ValueError(AMBIGUOUS.format(count=len(starts)))
        out, done = [], 0
        for start in starts if replace_all else starts[:1]:
            out += lines[done:start]
            out.append(replacement)
            done = start + len(wanted)
        return "".join(out + lines[done:])
    raise ValueError(NOT_FOUND)


def _is_directory(files, path: str) -> bool:
    prefix = path.rstrip("/") + "/"
    return any(name.startswith(prefix) for name in files)


def _prepare_file_edit(files, path: str, edits: list) -> str:
    """Phase 1 for one file (``prepareFileEdit``): its new content, or ``EditError``."""
    if not path:
        raise EditError(400, '"path" is required', probe("A4.6.edit-no-path"))
    if not path.startswith("/"):
        raise EditError(400, f"file path must be absolute: {go_quote(path)}", probe("A4.6.edit-not-absolute"))
    if not edits:
        raise EditError(400, "must specify at least one edit", probe("A4.6.edit-no-edits"))
    content = files.get(path)
    if content is None:
        if _is_directory(files, path):
            raise EditError(400, f"open {path}: not a file", probe("A4.6.edit-directory"))
        # os.Open's *PathError on the agent's disk (afero.NewOsFs): ENOENT, which is
        # os.ErrNotExist, answered 404.
        raise EditError(404, f"open {path}: no such file or directory", probe("A4.6.edit-missing-file"))
    for edit in edits:
        try:
            content = fuzzy_replace(content, edit["search"], edit["replace"], edit["replace_all"])
        except ValueError as err:
            branch = probe("A4.6.edit-not-found") if str(err) == NOT_FOUND else probe("A4.6.edit-ambiguous")
            raise EditError(400, f"edit {path}: {err}", branch) from None
    return content


def _edit_files(state: AgentState, req: Request, key: Key | None):
    """agentfiles ``HandleEditFiles``: ``httpapi.Read`` into FileEditRequest, at least one
    file, then phase 1 for every file and phase 2 only if none failed."""
    try:
        files = decode_edit(req.body)["files"] or []
    except GoJSONError as err:
        return state, _rec(400, _bad_json(err)), [probe("A4.6.edit-bad-body")]
    if not files:
        return state, _rec(400, {"message": "must specify at least one file"}), [probe("A4.6.edit-no-files")]
    effects: Effects = []
    prepared: dict[str, str] = {}  # path -> new content, in the request's order
    failures: list[tuple[int, str]] = []  # (status, message) of each refused entry
    for entry in files:
        path = entry["path"]
        try:
            content = _prepare_file_edit(state.files, path, entry["edits"] or [])
        except EditError as err:
            effects.append(err.branch)
            failures.append((err.status, str(err)))
            continue
        if path in prepared:
            # Two entries for one file would both read the original and the later write
            # would drop the earlier's edits, so Go refuses the later entry.
            effects.append(probe("A4.6.edit-duplicate"))
            failures.append((400, f"{path}: duplicate file path in request"))
            continue
        prepared[path] = content
    if failures:
        if prepared:
            effects.append(probe("A4.6.edit-none-written"))  # files that prepared well stay as they were
        status = max(status for status, _ in failures)  # errors.Join of the messages, the highest status
        return state, _rec(status, {"message": "\n".join(message for _, message in failures)}), effects
    state = replace(state, files=state.files.edited(prepared))
    for path in prepared:
        effects.append(truth("edit_applied", path=path, uuid=key.uuid if key else None, tool="edit_files",
                             incarnation=state.incarnation))
    effects.append(probe("A4.6.edit-applied"))
    return state, _rec(200, {"files": list(prepared), "ok": True}), effects


def _write_file(state: AgentState, req: Request, key: Key | None):
    path = _query(req).get("path", "")
    if not path:
        return state, _rec(400, {"message": "path is required"}), [probe("A4.6.write-no-path")]
    state = replace(state, files=state.files.set(path, req.body.decode("utf-8", errors="replace")))
    effect = truth("edit_applied", path=path, uuid=key.uuid if key else None, tool="write_file",
                   incarnation=state.incarnation)
    return state, _rec(200, {"ok": True}), [probe("A4.6.write-applied"), effect]
