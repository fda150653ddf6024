"""The agent's file handlers: edit and write (docs/contract.md A4.6, agentfiles).

Theory of operation
-------------------
Both run under the tool call middleware, so a tool call's edit or write happens once and
its answer is recorded. The files are the workspace disk (``AgentState.files``), which
survives a restart. An edit is the model's search/replace, applied file by file: files
written before a failing one stay written (design section 7, last item). Each change
leaves an ``edit_applied`` truth for the checkers.
"""

from __future__ import annotations

from ..core import Request, probe, replace, truth
from ..gocompat.decode import GoJSONError
from ..identity import Key
from .state import AgentState, Effects
from .wire import _bad_json, _query, _rec, decode_edit


def _apply_edit(content: str, edits: list) -> str:
    for edit in edits:
        content = content.replace(edit["search"], edit["replace"], 1)
    return content


def _edit_files(state: AgentState, req: Request, key: Key | None):
    """agentfiles ``HandleEditFiles``: ``httpapi.Read`` into FileEditRequest, then at least
    one file. The edit itself is the model's search/replace (section 4.6)."""
    try:
        files = decode_edit(req.body)["files"] or []
    except GoJSONError as err:
        return state, _rec(400, _bad_json(err)), [probe("A4.6.edit-bad-body")]
    if not files:
        return state, _rec(400, {"message": "must specify at least one file"}), [probe("A4.6.edit-no-files")]
    effects: Effects = []
    paths = []
    for entry in files:
        path = entry["path"]
        if path not in state.files:
            # Files written before the failure stay written (design section 7, last item).
            effects.append(probe("A4.6.edit-missing-file"))
            return state, _rec(404, {"message": f"open {path}: file does not exist"}), effects
        state = replace(state, files=state.files.set(path, _apply_edit(state.files[path], entry["edits"] or [])))
        effects.append(truth("edit_applied", path=path, uuid=key.uuid if key else None, tool="edit_files",
                             incarnation=state.incarnation))
        paths.append(path)
    effects.append(probe("A4.6.edit-applied"))
    return state, _rec(200, {"files": paths, "ok": True}), effects


def _write_file(state: AgentState, req: Request, key: Key | None):
    path = _query(req).get("path", "")
    if not path:
        return state, _rec(400, {"message": "path is required"}), [probe("A4.6.write-no-path")]
    state = replace(state, files=state.files.set(path, req.body.decode("utf-8", errors="replace")))
    effect = truth("edit_applied", path=path, uuid=key.uuid if key else None, tool="write_file",
                   incarnation=state.incarnation)
    return state, _rec(200, {"ok": True}), [probe("A4.6.write-applied"), effect]
