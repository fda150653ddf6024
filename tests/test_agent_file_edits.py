"""The agent's edit_files handler against agentfiles' search/replace (issue 35): the
three-pass match of ``fuzzyReplace``, and ``HandleEditFiles``' two phases (every file
prepared before any is written; the failures joined, the highest status answered).

Facts from coder/coder agent/agentfiles/files.go (the version with ``prepareFileEdit``,
``fuzzyReplace`` and the ``ed_script`` entries, commit 07a37da683dfdc0e6bf03db440a646f213143e61;
the model has no ``ed_script``) and codersdk/workspacesdk/agentconn.go (``FileEdit``'s
``replace_all`` tag, commit 024c7d3f73a4ba92baffdd7f17c659a3e601e5af). docs/contract.md A4.6
says what is modelled and what is not."""

from __future__ import annotations

import pytest

from agent_harness import CHAT, AgentHarness
from toolcall_sim.model import agent
from toolcall_sim.model import chattool as ct
from toolcall_sim.model.agent.files import AMBIGUOUS, NOT_FOUND, fuzzy_replace
from toolcall_sim.model.core import FMap, Response, Send, json_body

TWICE = AMBIGUOUS.format(count=2)


def _edit(h: AgentHarness, *files: dict) -> str:
    return h.request("POST", agent.EDIT_PATH, body=json_body({"files": list(files)}))


def _file(path: str, *edits: tuple, replace_all: bool = False) -> dict:
    return {"path": path, "edits": [{"search": s, "replace": r, **({"replace_all": True} if replace_all else {})}
                                    for s, r in edits]}


def _answer(h: AgentHarness, rid: str) -> tuple[int, str]:
    return h.status(rid), h.json(rid).get("message")


# -- fuzzyReplace: one edit of one text ----------------------------------------------------------

@pytest.mark.parametrize("content,search,error,starts", [
    ("x = 1\nx = 1\n", "x = 1", TWICE, "search string matches 2 occurrences (expected exactly 1)."),
    ("one\n", "two", NOT_FOUND, "search string not found in file."),
])
def test_a_search_found_twice_or_by_no_pass_is_refused_and_the_file_is_unchanged(content, search, error, starts):
    h = AgentHarness(files=FMap({"/a.go": content}))
    rid = _edit(h, _file("/a.go", (search, "x = 2")))
    assert _answer(h, rid) == (400, f"edit /a.go: {error}") and error.startswith(starts)
    assert h.state.files["/a.go"] == content and h.edits() == 0


def test_replace_all_replaces_every_match():
    h = AgentHarness(files=FMap({"/a.go": "x = 1\nx = 1\n"}))
    rid = _edit(h, _file("/a.go", ("x = 1", "x = 2"), replace_all=True))
    assert (h.status(rid), h.state.files["/a.go"], h.edits()) == (200, "x = 2\nx = 2\n", 1)


def test_replace_all_is_the_go_tag_and_a_wrong_type_is_a_bad_body():
    h = AgentHarness(files=FMap({"/a.go": "x\nx\n"}))
    rid = h.request("POST", agent.EDIT_PATH, body=b'{"files":[{"path":"/a.go","edits":[{"search":"x",'
                                                   b'"replace":"y","replace_all":"yes"}]}]}')
    assert h.status(rid) == 400 and h.json(rid)["detail"] == (
        "json: cannot unmarshal string into Go struct field FileEditRequest.files.edits.replace_all of type bool")
    rid = h.request("POST", agent.EDIT_PATH, body=b'{"files":[{"path":"/a.go","edits":[{"search":"x",'
                                                   b'"replace":"y","Replace_All":true}]}]}')
    assert (h.status(rid), h.state.files["/a.go"]) == (200, "y\ny\n")  # keys fold case, as encoding/json's do


def test_pass_two_ignores_trailing_whitespace_and_splices_the_matched_lines():
    # The search's last line has no newline: the matched line's newline goes with it.
    assert fuzzy_replace("a\nb   \nc\n", "b\nc", "X\n", False) == "a\nX\n"
    assert fuzzy_replace("if x {\t\r\n  go()  \n}\n", "if x {\n  go()\n", "if y {\n", False) == "if y {\n}\n"
    # Trailing whitespace of the search's lines is ignored too, the replacement kept verbatim.
    assert fuzzy_replace("k = 1\nv = 2\n", "k = 1  \nv = 2\t\n", "kv\n", False) == "kv\n"


def test_pass_three_ignores_indentation_and_the_replacement_is_inserted_verbatim():
    content = "func f() {\n\tif x {\n\t\treturn\n\t}\n}\n"
    assert fuzzy_replace(content, "if x {\n    return\n}\n", "\tif y {\n\t\treturn\n\t}\n", False) == (
        "func f() {\n\tif y {\n\t\treturn\n\t}\n}\n")
    # Go's TrimSpace trims U+00A0 but not U+001C, which Python's str.strip() would.
    assert fuzzy_replace("\xa0foo \n", "foo\n", "bar\n", False) == "bar\n"
    with pytest.raises(ValueError, match="^search string not found"):
        fuzzy_replace("\x1cfoo \n", "foo\n", "bar\n", False)


@pytest.mark.parametrize("char,space", [
    ("\u2000", True), ("\u200a", True),  # the ends of unicode.IsSpace's U+2000..U+200A run
    ("\u1fff", False), ("\u200b", False),  # just outside it: zero width space is no space to Go
])
def test_pass_three_trims_exactly_gos_unicode_spaces(char, space):
    # The trailing blank keeps pass 1 out; the leading character keeps pass 2 out.
    content = f"{char}foo \n"
    if space:
        assert fuzzy_replace(content, "foo\n", "bar\n", False) == "bar\n"
    else:
        with pytest.raises(ValueError, match="^search string not found"):
            fuzzy_replace(content, "foo\n", "bar\n", False)


def test_the_line_passes_compare_lines_for_equality_not_order():
    # Every line of the file sorts after the search's; none equals it, so no pass matches.
    with pytest.raises(ValueError, match="^search string not found"):
        fuzzy_replace("zeta \nomega\n", "  alpha\n", "X\n", False)


def test_the_text_after_the_last_newline_is_a_line_the_line_passes_match_once():
    # strings.SplitAfter leaves "b  " as the file's last line; seekLines reaches it (its
    # loop runs to len(contentLines)-len(searchLines) inclusive) and counts it once.
    assert fuzzy_replace("a\nb  ", "b\n", "X", False) == "a\nX"
    assert fuzzy_replace("a \nb  ", "a\nb\n", "X", False) == "X"
    assert fuzzy_replace("b\t\na\nb  ", "b\n", "X\n", True) == "X\na\nX\n"


def test_the_line_passes_count_matches_without_overlap_and_refuse_a_second():
    # "a\na" matches lines 0-1 and (overlapping) 1-2; Go counts the first only.
    assert fuzzy_replace("a \na \na \n", "a\na", "X\n", False) == "X\na \n"
    with pytest.raises(ValueError) as err:
        fuzzy_replace("x \ny\nx\t\n", "x\n", "z\n", False)
    assert str(err.value) == TWICE
    assert fuzzy_replace("x \ny\nx\t\n", "x\n", "z\n", True) == "z\ny\nz\n"
    # The exact pass counts as strings.Count does: without overlap too.
    assert fuzzy_replace("a\na\na\n", "a\na\n", "X", False) == "Xa\n"


def test_the_first_pass_that_matches_decides():
    # Exact text wins over a line match elsewhere, even inside a line.
    assert fuzzy_replace("ab \nab\n", "ab\n", "Z\n", False) == "ab \nZ\n"
    # Trailing-only match wins over a second, indentation-only match.
    assert fuzzy_replace("x \n  x \n", "x\n", "y\n", False) == "y\n  x \n"
    # The same with lines longer than one character (CPython caches one-character strings,
    # which two equal longer lines after a trim are not).
    assert fuzzy_replace("let x \n  let x \n", "let x\n", "y\n", False) == "y\n  let x \n"


def test_an_empty_search_matches_everywhere():
    assert fuzzy_replace("", "", "new\n", False) == "new\n"
    with pytest.raises(ValueError, match="^search string matches 3 occurrences"):
        fuzzy_replace("ab", "", "-", False)
    assert fuzzy_replace("ab", "", "-", True) == "-a-b-"


def test_the_edits_of_one_file_apply_in_order_each_to_the_last_ones_text():
    h = AgentHarness(files=FMap({"/a.go": "one\n"}))
    rid = _edit(h, _file("/a.go", ("one", "two"), ("two", "three")))
    assert (h.status(rid), h.state.files["/a.go"]) == (200, "three\n")
    rid = _edit(h, _file("/a.go", ("three", "four"), ("three", "five")))  # the second finds no "three"
    assert _answer(h, rid) == (400, f"edit /a.go: {NOT_FOUND}") and h.state.files["/a.go"] == "three\n"


# -- HandleEditFiles: every file prepared, then all written or none ------------------------------

def test_a_missing_second_file_writes_neither_file():
    h = AgentHarness(files=FMap({"/a.go": "one\n"}))
    rid = _edit(h, _file("/a.go", ("one", "two")), _file("/nope.go", ("x", "y")))
    assert _answer(h, rid) == (404, "open /nope.go: no such file or directory")
    assert h.state.files["/a.go"] == "one\n" and h.edits() == 0


def test_failures_of_several_files_are_joined_and_the_highest_status_answered():
    h = AgentHarness(files=FMap({"/a.go": "one\n", "/b.go": "two\n"}))
    rid = _edit(h, _file("/a.go", ("one", "1")), _file("/b.go", ("zzz", "2")), _file("/c.go", ("x", "y")))
    assert _answer(h, rid) == (404, f"edit /b.go: {NOT_FOUND}\nopen /c.go: no such file or directory")
    assert h.state.files == FMap({"/a.go": "one\n", "/b.go": "two\n"}) and h.edits() == 0
    # The highest, not the last: a 404 then a 400 is answered 404.
    rid = _edit(h, _file("/c.go", ("x", "y")), _file("/b.go", ("zzz", "2")))
    assert _answer(h, rid) == (404, f"open /c.go: no such file or directory\nedit /b.go: {NOT_FOUND}")


def test_a_file_named_twice_is_refused_and_nothing_is_written():
    h = AgentHarness(files=FMap({"/a.go": "one\n"}))
    rid = _edit(h, _file("/a.go", ("one", "two")), _file("/a.go", ("one", "three")))
    assert _answer(h, rid) == (400, "/a.go: duplicate file path in request")
    assert h.state.files["/a.go"] == "one\n" and h.edits() == 0
    # Only an entry that prepared well counts as seen: a failed first entry leaves the
    # second the only one, and only the failure is answered.
    rid = _edit(h, _file("/a.go", ("zzz", "x")), _file("/a.go", ("one", "two")))
    assert _answer(h, rid) == (400, f"edit /a.go: {NOT_FOUND}")
    # The duplicate refuses its own entry only: the entries after it are still prepared
    # (HandleEditFiles goes on with the next entry), and their failures join the answer.
    rid = _edit(h, _file("/a.go", ("one", "two")), _file("/a.go", ("one", "3")), _file("/c.go", ("x", "y")))
    assert _answer(h, rid) == (404, "/a.go: duplicate file path in request\nopen /c.go: no such file or directory")
    assert h.state.files["/a.go"] == "one\n" and h.edits() == 0


@pytest.mark.parametrize("entry,status,message", [
    ({"path": "", "edits": [{"search": "a", "replace": "b"}]}, 400, '"path" is required'),
    ({"edits": [{"search": "a", "replace": "b"}]}, 400, '"path" is required'),
    ({"path": "src/a.go", "edits": [{"search": "a", "replace": "b"}]}, 400, 'file path must be absolute: "src/a.go"'),
    ({"path": "/src/a.go", "edits": []}, 400, "must specify at least one edit"),
    ({"path": "/src/a.go"}, 400, "must specify at least one edit"),
    ({"path": "/src", "edits": [{"search": "a", "replace": "b"}]}, 400, "open /src: not a file"),
    ({"path": "/src/", "edits": [{"search": "a", "replace": "b"}]}, 400, "open /src/: not a file"),
    ({"path": "/sr", "edits": [{"search": "a", "replace": "b"}]}, 404, "open /sr: no such file or directory"),
])
def test_a_file_entry_is_checked_in_gos_order_before_its_file_is_read(entry, status, message):
    h = AgentHarness(files=FMap({"/src/a.go": "a\n"}))
    rid = _edit(h, entry)
    assert _answer(h, rid) == (status, message) and h.edits() == 0


def test_edit_applied_truths_are_emitted_for_the_written_files_only():
    h = AgentHarness(files=FMap({"/a.go": "one\n", "/b.go": "two\n"}))
    rid = _edit(h, _file("/b.go", ("two", "2")), _file("/a.go", ("one", "1")))
    assert (h.status(rid), h.json(rid)) == (200, {"files": ["/b.go", "/a.go"], "ok": True})
    assert [dict(t.fields)["path"] for t in h.truths if t.kind == "edit_applied"] == ["/b.go", "/a.go"]
    assert h.state.files == FMap({"/a.go": "1\n", "/b.go": "2\n"})
    rid = _edit(h, _file("/a.go", ("1", "one")), _file("/b.go", ("two", "x")))
    assert h.status(rid) == 400 and h.edits() == 2 and h.state.files["/a.go"] == "1\n"


def test_chatd_reports_a_refused_edit_as_failed_with_the_agents_message():
    """chatd's own edit request reaches the agent; its 400 becomes a failed result that
    carries the agent's message (codersdk.ReadBodyAsError's text), so the model is told
    which search to widen."""
    call = ct.ToolCall("call_e", "edit_files", json_body(
        {"files": [{"path": "/a.txt", "edits": [{"search": "a", "replace": "b"}]}]}).decode())
    identity = ct.Identity(CHAT, 42, "call_e", ct.ToolCallAge(30_000, 0))
    cs, effects = ct.begin_call(call, identity, "replica-1", "replica-1/g1/c1", CHAT, 0, True)
    sent = next(e.request for e in effects if isinstance(e, Send))
    h = AgentHarness(files=FMap({"/a.txt": "a\na\n"}))
    answer = h.answer(h.send(sent))
    assert answer.status == 400 and h.state.files["/a.txt"] == "a\na\n"
    cs, _ = ct.on_answer(cs, Response(sent.req_id, answer.status, answer.content_type, answer.body), 0)
    assert (cs.result.kind, cs.result.is_error) == ("failed", True)
    assert f"unexpected status code 400: edit /a.txt: {TWICE}" in cs.result.content
