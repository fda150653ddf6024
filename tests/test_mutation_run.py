"""The mutation run's own machinery (sim/ci/mutation.py): which tests a mutant runs (the
coverage map), which binary operator replacements are run at all. A selection that drops
a test able to kill a mutant would count a survivor that is not one, so the rules are
pinned here on small sources."""

from toolcall_sim.ci.mutant_tests import _statement_lines, changed_lines, select_tests
from toolcall_sim.ci.mutation import deselected

SOURCE = [
    "def f(a, b):",            # 1
    "    x = g(a,",            # 2
    "          b + 1)",        # 3
    "    if x > 2:",           # 4
    "        return x",        # 5
    "    return 0",            # 6
]

ORDER = ["tests/t_a.py::one", "tests/t_a.py::two", "tests/t_b.py::three", "tests/t_b.py::four"]


def _entry(lines: dict) -> dict:
    return {"source": SOURCE, "order": ORDER, "seconds": 1.0, "lines": {str(k): v for k, v in lines.items()}}


def _mutant(row: int, text: str) -> str:
    lines = list(SOURCE)
    lines[row - 1] = text
    return "\n".join(lines) + "\n"


def test_changed_lines_are_the_originals_lines_the_mutant_touches():
    assert changed_lines(SOURCE, SOURCE) == set()
    assert changed_lines(SOURCE, _mutant(4, "    if x >= 2:").splitlines()) == {4}
    assert changed_lines(SOURCE, SOURCE[:4] + SOURCE[5:]) == {5}  # a deleted line


def test_a_line_widens_to_its_statement_and_a_headers_line_stays_the_header():
    assert _statement_lines(SOURCE, {3}) == {2, 3}  # coverage may record the call at line 2 only
    assert _statement_lines(SOURCE, {4}) == {4}  # the if's header, not its body


def test_only_the_tests_that_run_the_mutated_statement_are_chosen_in_collection_order():
    entry = _entry({2: ["tests/t_b.py::three|run", "tests/t_a.py::one|run"], 4: ["tests/t_a.py::two|run"]})
    assert select_tests(entry, _mutant(3, "          b - 1)")) == ["tests/t_a.py::one", "tests/t_b.py::three"]
    assert select_tests(entry, _mutant(4, "    if x >= 2:")) == ["tests/t_a.py::two"]


def test_a_line_no_test_runs_chooses_none_and_an_import_time_line_chooses_the_whole_list():
    entry = _entry({1: [""], 4: ["tests/t_a.py::two|run"]})
    assert select_tests(entry, _mutant(6, "    return 1")) == []  # nothing runs it: it cannot be killed
    assert select_tests(entry, _mutant(1, "def f(a, b=1):")) is None  # at import: every test


def test_a_line_run_while_setting_up_a_test_brings_its_whole_file():
    """A module-wide fixture computes once, in the first test's setup; its value reaches
    every test of the file, so a mutant there runs them all."""
    entry = _entry({5: ["tests/t_b.py::three|setup"]})
    assert select_tests(entry, _mutant(5, "        return -x")) == ["tests/t_b.py::three", "tests/t_b.py::four"]


def test_binary_operators_keep_their_sibling_and_nothing_else_is_deselected():
    assert not deselected("core/ReplaceBinaryOperator_Add_Sub")
    assert not deselected("core/ReplaceBinaryOperator_BitOr_BitAnd")
    assert deselected("core/ReplaceBinaryOperator_Add_Mul") and deselected("core/ReplaceBinaryOperator_Sub_Pow")
    for kept in ("core/ReplaceComparisonOperator_GtE_Gt", "core/NumberReplacer", "core/AddNot",
                 "core/ReplaceUnaryOperator_USub_Invert", "core/ZeroIterationForLoop"):
        assert not deselected(kept)


def test_the_cached_repr_class_holds_the_repr_flag_of_a_cached_repr_dataclass_only():
    from collections import namedtuple

    from toolcall_sim.ci.mutation import cached_repr_spans, member_of

    source = ["@dataclass(frozen=True, repr=False)", "class A(CachedRepr):", "    x: int = 0", "",
              "@dataclass(frozen=True, repr=False)", "class B:", "    y: int = 0"]
    spans = {"cached_repr": cached_repr_spans(source)}
    assert spans["cached_repr"] == [((1, 29), (1, 34))]
    spec = namedtuple("Spec", "operator_name occurrence start_pos")
    assert member_of(spec("core/ReplaceFalseWithTrue", 0, (1, 29)), spans) == "cached_repr"
    assert member_of(spec("core/ReplaceTrueWithFalse", 0, (1, 18)), spans) is None  # frozen: a test's
    assert member_of(spec("core/ReplaceFalseWithTrue", 1, (5, 29)), spans) is None  # no cached repr


def test_a_session_made_from_other_text_is_stale(tmp_path, monkeypatch):
    import toolcall_sim.ci.mutation as mutation

    db = tmp_path / "m.sqlite"
    monkeypatch.setattr(mutation, "source_lines", lambda module: ["x = 1"])
    assert not mutation.session_is_stale(db, "m.py")  # no text kept: an older session, trusted
    mutation._source_of(db).write_text("x = 1\n")
    assert not mutation.session_is_stale(db, "m.py")
    monkeypatch.setattr(mutation, "source_lines", lambda module: ["x = 2"])
    assert mutation.session_is_stale(db, "m.py")


def test_the_maps_run_forgets_every_memo_of_the_project_before_each_test(monkeypatch):
    """A memoized answer would hide the function's lines from the test that reuses it."""
    import json as _json

    import toolcall_sim.ci.mutant_tests as mutation
    from toolcall_sim.model.agent.wire import decode_start
    from toolcall_sim.model.chattool.args import parse_execute_args

    monkeypatch.setattr(mutation, "_MEMOS", None)
    parse_execute_args(_json.dumps({"command": "memo"}))
    decode_start(b'{"command": "memo"}')
    mutation._clear_memos()
    assert parse_execute_args.cache_info().currsize == 0 and decode_start.answers == {}


def test_the_equivalents_check_lists_a_copy_of_the_module_with_the_modules_own_tests():
    # --list mutates a throwaway copy of each module's text: the copy's path names no list,
    # the module it stands for does (a KeyError here once made --list crash)
    from toolcall_sim.ci.mutation import MODULE_TESTS, _config

    config = _config("/tmp/x/model_agent_cancel.py", "python", tests_of="model/agent/cancel.py")
    assert 'module-path = "/tmp/x/model_agent_cancel.py"' in config
    assert " ".join(MODULE_TESTS["model/agent/cancel.py"]) in config
