"""``toolcall-sim drift`` (issue 38): the manifest covers docs/contract.md, and drift tells
unchanged, changed, moved, gone and new Go code apart in small Go trees written here.

The trees are synthetic (a go.mod naming github.com/coder/coder and a few files of the
modelled packages, written for these tests); no coder/coder source is in the repository.
"""

from __future__ import annotations

import io
import json
import re
import subprocess
from contextlib import redirect_stderr, redirect_stdout

import pytest

from toolcall_sim.cli.main import main
from toolcall_sim.drift import manifest as mf
from toolcall_sim.drift.checkout import Checkout
from toolcall_sim.drift.compare import compare, update
from toolcall_sim.drift.goparse import GoParseError, parse

STORE = """\
package agenttoolcall

import "time"

// ageMargin covers request transit time.
const ageMargin = 2 * time.Second

// Store holds the records.
type Store struct{ chats map[string]int }

// lookup decides.
func (s *Store) lookup(key string, age time.Duration) (int, bool) {
\tif s.clock()-ageMargin <= max(age, 0) {
\t\treturn 0, false
\t}
\treturn s.chats[key], true
}
"""
API = """\
package agentproc

func (api *API) Routes() http.Handler {
\tr := chi.NewRouter()
\tr.Post("/start", api.handleStartProcess)
\treturn r
}
"""


def write_tree(root, files: dict[str, str]) -> None:
    (root / "go.mod").write_text("module github.com/coder/coder/v2\n\ngo 1.24\n")
    for path, text in files.items():
        p = root / path
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)


def git(root, *args) -> str:
    return subprocess.run(["git", "-C", str(root), "-c", "user.name=t", "-c", "user.email=t@t", *args],
                          check=True, capture_output=True, text=True).stdout.strip()


def small_manifest() -> mf.Manifest:
    """Two rules over the synthetic tree, digests empty until ``update`` fills them."""
    st, api = "agent/agenttoolcall/store.go", "agent/agentproc/api.go"
    return mf.Manifest(
        packages=["agent/agenttoolcall", "agent/agentproc"], complete_packages=[],
        rules={"A2.3": {"follows": [f"{st}:Store.lookup", f"{st}:ageMargin"]},
               "A4.1": {"follows": [f"{api}:API.Routes"]}, "D0": {"none": "design text"}},
        symbols={k: {"kind": "", "digest": ""} for k in
                 (f"{st}:Store.lookup", f"{st}:ageMargin", f"{api}:API.Routes")},
        files={st: {"commit": "", "items": []}, api: {"commit": "", "items": []}})


@pytest.fixture
def verified(tmp_path):
    """A git checkout of the synthetic tree and a manifest verified against its HEAD."""
    root = tmp_path / "coder"
    root.mkdir()
    write_tree(root, {"agent/agenttoolcall/store.go": STORE, "agent/agentproc/api.go": API})
    git(root, "init", "-q")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "verified")
    head = git(root, "rev-parse", "HEAD")
    m, gone = update(small_manifest(), Checkout(str(root)), head)
    assert not gone
    path = tmp_path / "drift-manifest.toml"
    path.write_text(mf.dump(m))
    return root, path, head


def run(*args) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        code = main(list(args))
    return code, out.getvalue(), err.getvalue()


def drift_json(root, manifest, *extra) -> tuple[int, dict]:
    code, out, _ = run("drift", "--coder", str(root), "--manifest", str(manifest), "--json", *extra)
    return code, json.loads(out)


# -- the manifest of this repository ----------------------------------------------------

def test_every_contract_heading_has_an_entry_and_every_entry_a_heading():
    m = mf.load(mf.DEFAULT_MANIFEST)
    headings = mf.contract_headings()
    assert len(headings) > 100
    assert [r for r in headings if r not in m.rules] == []
    assert [r for r in m.rules if r not in headings] == []


def test_rules_that_follow_no_go_code_say_why():
    m = mf.load(mf.DEFAULT_MANIFEST)
    for rule, entry in m.rules.items():
        why = entry.get("none") or entry.get("unmapped")
        assert "follows" in entry or len(why) > 15, rule
    assert all("none" in m.rules[r] for r in m.rules if r.startswith("D"))  # design text follows no Go


def test_the_manifest_is_written_sorted_and_stable():
    text = mf.DEFAULT_MANIFEST.read_text()
    assert mf.dump(mf.load(mf.DEFAULT_MANIFEST), mf.contract_headings()) == text
    # names, digests and commits; no Go source (no declaration line, no Go indentation)
    assert not re.search(r"^(func|package|type|const|var) ", text, re.M) and "\t" not in text


def test_a_malformed_manifest_is_bad_input(tmp_path):
    bad = tmp_path / "m.toml"
    bad.write_text('[rules."A1"]\nfollows = ["x.go:F"]\nnone = "both"\n')
    code, _, err = run("drift", "--coder", str(tmp_path), "--manifest", str(bad))
    assert code == 2 and err.count("\n") == 1  # the checkout is checked first: not one
    write_tree(tmp_path, {"agent/agentproc/api.go": API})
    code, _, err = run("drift", "--coder", str(tmp_path), "--manifest", str(bad))
    assert code == 2 and "exactly one of follows, none, unmapped" in err


@pytest.mark.parametrize("head,words", [
    ('packages = ["agent/agentproc"]', "this version models"),  # a manifest of other packages
    ('complete_packages = ["agent/elsewhere"]', "a list of the modelled packages"),
    ('package = []', "packages and complete_packages only"),  # a misspelt key is no silent default
])
def test_a_manifest_head_that_would_be_ignored_is_refused(tmp_path, head, words):
    bad = tmp_path / "m.toml"
    bad.write_text(f'[manifest]\n{head}\n\n[rules."A1"]\nnone = "design text"\n')
    write_tree(tmp_path, {"agent/agentproc/api.go": API})
    code, out, err = run("drift", "--coder", str(tmp_path), "--manifest", str(bad))
    assert code == 2 and out == "" and words in err and err.count("\n") == 1


# -- normalization -----------------------------------------------------------------------

def test_comments_and_layout_do_not_change_a_digest_and_literals_do():
    a = parse("a.go", STORE.encode()).symbols
    b = parse("a.go", STORE.replace("// lookup decides.", "// lookup, reworded.")
              .replace("\treturn s.chats[key], true", "\n\treturn s.chats[key],   true // the record").encode()).symbols
    assert a["Store.lookup"].digest == b["Store.lookup"].digest
    c = parse("a.go", STORE.replace("2 * time.Second", "3 * time.Second").encode()).symbols
    assert c["ageMargin"].digest != a["ageMargin"].digest
    assert c["Store.lookup"].digest == a["Store.lookup"].digest  # it names ageMargin, not its value
    assert a["ageMargin"].normalized == "ageMargin = 2 * time . Second"


def test_a_syntax_error_names_file_and_line():
    with pytest.raises(GoParseError, match=r"^x\.go:3: "):
        parse("x.go", b"package x\n\nfunc F( {\n}\n")


# -- the five cases ------------------------------------------------------------------------

def test_unchanged_exits_0_and_the_json_is_deterministic(verified):
    root, manifest, _ = verified
    code, first = drift_json(root, manifest)
    assert code == 0 and not first["changed"]
    assert first["counts"]["symbols"]["unchanged"] == 3
    assert [r["status"] for r in first["rules"]] == ["unchanged", "unchanged", "no code"]
    assert drift_json(root, manifest) == (code, first)
    code, text, _ = run("drift", "--coder", str(root), "--manifest", str(manifest))
    assert code == 0 and "nothing changed: exit 0" in text


def test_a_changed_constant_is_changed_with_its_diff_and_what_covers_its_rule(verified):
    root, manifest, head = verified
    store = root / "agent/agenttoolcall/store.go"
    store.write_text(STORE.replace("2 * time.Second", "3 * time.Second"))
    code, got = drift_json(root, manifest)
    assert code == 1
    sym = got["symbols"]["agent/agenttoolcall/store.go:ageMargin"]
    assert sym["status"] == "changed"
    assert "-ageMargin = 2 * time.Second" in sym["diff"] and "+ageMargin = 3 * time.Second" in sym["diff"]
    assert f"store.go@{head[:12]}" in sym["diff"]
    rule = got["rules"][0]
    assert rule["rule"] == "A2.3" and rule["status"] == "changed"
    assert "A2.3.not-provable" in rule["covered_by"]["probes"]
    assert "TestNegativeAgeCountsAsZero" in rule["covered_by"]["go_tests"]
    assert rule["covered_by"]["tests"]


def test_a_function_in_another_file_is_moved_and_a_renamed_one_gone(verified):
    root, manifest, _ = verified
    store = root / "agent/agenttoolcall/store.go"
    text = store.read_text()
    start = text.index("// lookup decides.")
    store.write_text(text[:start])
    (root / "agent/agenttoolcall/lookup.go").write_text("package agenttoolcall\n\n" + text[start:])
    code, got = drift_json(root, manifest)
    sym = got["symbols"]["agent/agenttoolcall/store.go:Store.lookup"]
    assert code == 1 and sym["status"] == "moved" and sym["now"].startswith("agent/agenttoolcall/lookup.go:")
    (root / "agent/agenttoolcall/lookup.go").write_text(
        "package agenttoolcall\n\n" + text[start:].replace(") lookup(", ") find("))
    code, got = drift_json(root, manifest)
    sym = got["symbols"]["agent/agenttoolcall/store.go:Store.lookup"]
    assert sym["status"] == "gone" and sym["renamed_to"] == "agent/agenttoolcall/lookup.go:Store.find"
    assert got["rules"][0]["status"] == "gone"


def test_new_routes_constants_and_exported_functions_are_new(verified):
    root, manifest, _ = verified
    api = root / "agent/agentproc/api.go"
    api.write_text(API.replace('\treturn r\n', '\tr.Post("/{id}/restart", api.restart)\n\treturn r\n')
                   + '\nconst CoderRestartHeader = "Coder-Restart"\n\nfunc NewThing() {}\n')
    code, got = drift_json(root, manifest)
    assert code == 1
    assert [x["item"] for x in got["new"]] == ["func NewThing", "header CoderRestartHeader", "route Post /{id}/restart"]
    assert got["symbols"]["agent/agentproc/api.go:API.Routes"]["status"] == "changed"


def test_since_compares_with_the_checkout_at_a_commit(verified):
    root, manifest, head = verified
    (root / "agent/agenttoolcall/store.go").write_text(STORE.replace("2 * time.Second", "4 * time.Second"))
    git(root, "commit", "-qam", "four seconds")
    code, got = drift_json(root, manifest, "--since", head)
    assert code == 1 and got["since"] == head
    assert got["symbols"]["agent/agenttoolcall/store.go:ageMargin"]["status"] == "changed"
    code, got = drift_json(root, manifest, "--since", "HEAD")
    assert code == 0 and got["counts"]["symbols"]["unchanged"] == 3


def test_update_records_the_checkout_and_refuses_a_gone_declaration(verified):
    root, manifest, head = verified
    (root / "agent/agenttoolcall/store.go").write_text(STORE.replace("2 * time.Second", "3 * time.Second"))
    code, _, _ = run("drift", "--coder", str(root), "--manifest", str(manifest), "--update")
    assert code == 0
    assert drift_json(root, manifest)[0] == 0
    assert f'commit = "{head}"' in manifest.read_text()
    (root / "agent/agentproc/api.go").write_text("package agentproc\n")
    before = manifest.read_text()
    code, _, err = run("drift", "--coder", str(root), "--manifest", str(manifest), "--update")
    assert code == 2 and "API.Routes" in err and manifest.read_text() == before


# -- bad input: one line, exit 2 ---------------------------------------------------------------

@pytest.mark.parametrize("args,words", [
    (["--since", "HEAD"], "not a git work tree"),
    (["--commit", "0" * 40], "only with --update"),
    (["--partial"], "only with --update"),
    (["--update", "--since", "HEAD"], "not with --update"),
    (["--update", "--json", "--commit", "0" * 40], "--json: not with --update"),
    (["--update"], "give --commit SHA"),
    (["--update", "--commit", "abc"], "40 lowercase hex"),
])
def test_flags_that_mean_nothing_are_refused(tmp_path, args, words):
    write_tree(tmp_path, {"agent/agentproc/api.go": API})
    code, out, err = run("drift", "--coder", str(tmp_path), *args)
    assert code == 2 and out == "" and words in err and err.count("\n") == 1


def test_not_a_checkout_is_refused(tmp_path):
    code, _, err = run("drift", "--coder", str(tmp_path))
    assert code == 2 and "not a coder/coder checkout" in err
    (tmp_path / "go.mod").write_text("module example.com/other\n")
    assert run("drift", "--coder", str(tmp_path))[0] == 2
    code, _, err = run("drift", "--coder", str(tmp_path / "absent"))
    assert code == 2 and "not a folder" in err


def test_a_go_file_that_does_not_parse_is_refused_with_file_and_line(verified):
    root, manifest, _ = verified
    (root / "agent/agentproc/broken.go").write_text("package agentproc\n\nfunc F() {\n\tx :=\n}\n")
    code, out, err = run("drift", "--coder", str(root), "--manifest", str(manifest))
    assert code == 2 and out == ""
    assert re.search(r"agent/agentproc/broken\.go:\d+: ", err) and err.count("\n") == 1


def test_since_needs_a_commit_of_the_checkout(verified):
    root, manifest, _ = verified
    code, _, err = run("drift", "--coder", str(root), "--manifest", str(manifest), "--since", "no-such-commit")
    assert code == 2 and "not a commit of" in err


# -- toolcall-sim check --coder PATH -------------------------------------------------------

ONE_SCENARIO = """
name = "one"
summary = "one scenario, to carry the drift table"

[[scenarios]]
files = ["us02_interrupt_stops_foreground"]
variants = ["contract"]
"""


def test_check_shows_the_drift_table_and_keeps_its_own_verdict(verified, tmp_path, monkeypatch):
    root, manifest, _ = verified
    monkeypatch.setattr(mf, "DEFAULT_MANIFEST", manifest)
    (root / "agent/agenttoolcall/store.go").write_text(STORE.replace("2 * time.Second", "3 * time.Second"))
    suite = tmp_path / "one.toml"
    suite.write_text(ONE_SCENARIO)
    out_dir = tmp_path / "report"
    code, out, _ = run("check", str(suite), "--out", str(out_dir), "--baseline", str(tmp_path / "b.json"),
                       "--update-baseline", "--quiet", "--coder", str(root))
    assert code == 0  # the suite's verdict: drift is informational here
    assert "go drift (informational): rules: 1 unchanged, 1 changed" in out
    summary = (out_dir / "summary.md").read_text()
    assert "## Go drift" in summary and "| A2.3 | changed |" in summary
    assert json.loads((out_dir / "report.json").read_text())["drift"]["rules"][0]["rule"] == "A2.3"


def test_check_refuses_a_bad_checkout_before_running(tmp_path):
    code, out, err = run("check", "--coder", str(tmp_path), "--out", str(tmp_path / "r"))
    assert code == 2 and out == "" and "not a coder/coder checkout" in err
    assert not (tmp_path / "r").exists()


def test_a_new_file_is_new_in_a_package_inventoried_whole_and_counted_otherwise(verified):
    root, manifest, _ = verified
    (root / "agent/agentproc/restart.go").write_text("package agentproc\n\nconst restartGrace = 5\n")
    code, got = drift_json(root, manifest)
    assert code == 1 and got["new"] == [{"file": "agent/agentproc/restart.go", "item": "const restartGrace"}]
    m = mf.load(manifest)
    m.complete_packages = []
    manifest.write_text(mf.dump(m))
    code, got = drift_json(root, manifest)
    assert code == 0 and got["new"] == [] and got["not_inventoried"] == ["agent/agentproc/restart.go"]


def test_a_partial_update_keeps_what_the_tree_lacks(verified):
    root, manifest, head = verified
    m = small_manifest()
    m.rules["A2.4"] = {"follows": ["agent/agenttoolcall/middleware.go:Store.Middleware"]}
    m.symbols["agent/agenttoolcall/middleware.go:Store.Middleware"] = {"kind": "method", "digest": ""}
    m.files["agent/agenttoolcall/middleware.go"] = {"commit": "", "items": [], "note": "left out of this tree"}
    new, gone = update(m, Checkout(str(root)), head, partial=True)
    assert gone == [] and new.symbols["agent/agenttoolcall/middleware.go:Store.Middleware"]["digest"] == ""
    assert new.complete_packages == []
    assert update(m, Checkout(str(root)), head)[1] == ["agent/agenttoolcall/middleware.go:Store.Middleware"]
    manifest.write_text(mf.dump(new))
    code, got = drift_json(root, manifest)
    sym = got["symbols"]["agent/agenttoolcall/middleware.go:Store.Middleware"]
    assert code == 0 and sym["status"] == "unverified" and sym["reason"] == "left out of this tree"
