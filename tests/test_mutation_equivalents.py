"""The equivalent-mutant entries of the mutation run (sim/ci/mutation.py) follow their
line's text, not its number: a probe call added above a handler's line must not unhook
an argued entry, nor hook it onto another mutant."""

from collections import namedtuple

from toolcall_sim.ci.mutation import Equivalent, _matches, load_equivalents, mutant_keys

Spec = namedtuple("Spec", "operator_name occurrence start_pos")

SOURCE = ["def f(a, b):", "    if a == 1:", "        return b == 2 == a", "    return a == 1"]


def _keys(lines: list[str], specs: list[Spec]) -> list[tuple]:
    keys = mutant_keys(specs, lines)
    return [keys[(s.operator_name, s.occurrence, s.start_pos)] for s in specs]


def test_a_mutant_is_named_by_its_lines_text_and_rank_there():
    eq = "core/ReplaceComparisonOperator_Eq_Is"
    specs = [Spec(eq, 0, (2, 7)), Spec(eq, 1, (3, 15)), Spec(eq, 2, (3, 20)), Spec(eq, 3, (4, 11))]
    assert _keys(SOURCE, specs) == [(eq, "if a == 1:", 0), (eq, "return b == 2 == a", 0),
                                    (eq, "return b == 2 == a", 1), (eq, "return a == 1", 0)]


def test_lines_added_above_change_no_key():
    eq = "core/ReplaceComparisonOperator_Eq_Is"
    before = [Spec(eq, 0, (2, 7)), Spec(eq, 1, (4, 11))]
    shifted = ["def f(a, b):", "    probe('X')", "    ok = b == 0", *SOURCE[1:]]
    after = [Spec(eq, 0, (3, 9)), Spec(eq, 1, (4, 7)), Spec(eq, 2, (6, 11))]
    assert _keys(SOURCE, before) == _keys(shifted, after)[1:]


def test_an_entry_matches_its_mutant_and_a_family_entry_every_operator_of_the_family():
    one = Equivalent("m.py", "core/ReplaceComparisonOperator_Eq_Is", "return b == 2 == a", 1, 3, "why")
    assert _matches(("core/ReplaceComparisonOperator_Eq_Is", "return b == 2 == a", 1), one)
    assert not _matches(("core/ReplaceComparisonOperator_Eq_Is", "return b == 2 == a", 0), one)
    assert not _matches(("core/ReplaceComparisonOperator_Eq_Is", "return a == 1", 1), one)
    family = Equivalent("m.py", "core/ReplaceBinaryOperator_BitOr_*", "x: int | None = None", -1, 9, "why")
    assert _matches(("core/ReplaceBinaryOperator_BitOr_Add", "x: int | None = None", 0), family)
    assert not _matches(("core/ReplaceBinaryOperator_BitOr_Add", "y: int | None = None", 0), family)


def test_every_entry_argues_why_and_names_its_line():
    for e in load_equivalents():
        assert e.why.strip() and e.code.strip() and e.line > 0, e


def test_the_annotation_class_holds_a_deferred_modules_annotations_only():
    from toolcall_sim.ci.mutation import annotation_spans, in_class, load_classes

    deferred = ["from __future__ import annotations", "X = int | None",
                "def f(a: int | None, b=1 | 2) -> str | None:", "    y: int | None = a | b", "    return y"]
    spans = annotation_spans(deferred)
    inside = [Spec("core/ReplaceBinaryOperator_BitOr_Add", 0, pos) for pos in ((3, 10), (3, 35), (4, 7))]
    outside = [Spec("core/ReplaceBinaryOperator_BitOr_Add", 0, pos) for pos in ((2, 4), (3, 24), (4, 21))]
    assert all(in_class(s, spans) for s in inside)
    assert not any(in_class(s, spans) for s in outside)  # a type alias, a default, a value: evaluated
    assert annotation_spans(deferred[1:]) == []  # annotations evaluated at definition: not the class
    assert "annotation" in load_classes()
