"""What ``toolcall-sim drift`` reads out of one Go file: its declarations, their digests,
and the things a rule could come to follow (issue 38).

Theory of operation
-------------------
A Go file is parsed with tree-sitter and the ``tree-sitter-go`` grammar: a real Go parser
(the grammar of the language, not a pattern over lines), in-process and without a Go
toolchain, that gives every token its kind and its line. A regular expression could not
tell a ``func`` in a comment or a string from a declaration, nor where a function's body
ends; ``go/ast`` would need Go installed on every machine that runs the model.

Rule 1. A file with a syntax error is refused: ``GoParseError`` names the file and the
        line of the first node the grammar could not place (an ``ERROR`` or a missing
        token). Nothing is guessed around it.
Rule 2. A declaration's *normalized text* is its leaf tokens in order, comments left out,
        joined by single spaces; a string, raw string or rune literal is one token as
        written. Identifiers and literals are kept, so renaming a variable or changing
        ``2 * time.Second`` to ``3 * time.Second`` changes it; reformatting, re-wrapping or
        editing a comment does not. Go's optional semicolons are left out (a newline and
        a ``;`` separate statements alike). The *digest* is the SHA-256 of that text.
Rule 3. The symbols of a file, each named as a rule cites it: a function by its name
        (``NewStore``), a method by its receiver's type and its name (``Store.lookup``),
        and each constant, variable and type of the package block by its own name (one
        spec of a grouped ``const ( ... )`` block is one symbol; a spec that declares
        several names is one symbol under each). ``init`` and ``_`` are not symbols (they
        can repeat).
Rule 4. The *items* of a file, what a new rule could follow: exported functions and
        methods (``func``, ``method``), every package-level constant (``const``; a name
        ending in ``Header`` is a ``header``, a constant of a type whose name ends in
        ``ErrorCode`` or ``Code`` an ``error code``), package-level error variables
        (``error``: a name starting ``err``/``Err``), and route registrations (``route``:
        a call ``X.Get/Post/Put/Patch/Delete/Head/Options/Connect/Trace/Handle/HandleFunc/
        Method/Route/Mount`` whose first string argument starts with ``/``, named
        ``Post /start``; the chi style of the agent and coderd). The heuristics are simple
        on purpose and documented in docs/pages/how-to/drift.md.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field

LITERALS = {"interpreted_string_literal", "raw_string_literal", "rune_literal"}
ROUTE_METHODS = {"Get", "Post", "Put", "Patch", "Delete", "Head", "Options", "Connect", "Trace", "Handle",
                 "HandleFunc", "Method", "Route", "Mount"}


class GoParseError(Exception):
    """A Go file the grammar cannot parse (Rule 1): ``file:line: why``."""

    def __init__(self, path: str, line: int, why: str):
        super().__init__(f"{path}:{line}: {why}")


@dataclass(frozen=True)
class Symbol:
    """One declaration (Rule 3): its kind, name, first line, normalized text and source."""

    kind: str  # func, method, const, var, type
    name: str
    line: int
    normalized: str
    source: str

    @property
    def digest(self) -> str:
        return digest_of(self.normalized)


@dataclass
class GoFile:
    """A parsed file: its symbols by name and its items (Rule 4) as "kind name" strings."""

    path: str
    symbols: dict[str, Symbol] = field(default_factory=dict)
    items: set[str] = field(default_factory=set)


def digest_of(normalized: str) -> str:
    return hashlib.sha256(normalized.encode("utf-8")).hexdigest()


_PARSER = None


def _parser():
    global _PARSER
    if _PARSER is None:
        import tree_sitter
        import tree_sitter_go

        _PARSER = tree_sitter.Parser(tree_sitter.Language(tree_sitter_go.language()))
    return _PARSER


def parse(path: str, source: bytes) -> GoFile:
    """Rule 1-4 for one file's bytes; ``path`` is only for messages and the result."""
    tree = _parser().parse(source)
    root = tree.root_node
    if root.has_error:
        bad = _first_error(root)
        line = bad.start_point[0] + 1 if bad is not None else 1
        why = f"missing {bad.type!r}" if bad is not None and bad.is_missing else "Go syntax error"
        raise GoParseError(path, line, why)
    out = GoFile(path)
    for node in root.named_children:
        if node.type == "function_declaration":
            _add(out, "func", _text(node.child_by_field_name("name")), node)
        elif node.type == "method_declaration":
            _add(out, "method", f"{_receiver_type(node)}.{_text(node.child_by_field_name('name'))}", node)
        elif node.type in ("const_declaration", "var_declaration", "type_declaration"):
            kind = node.type.split("_")[0]
            specs = [c for n in node.named_children for c in (n.named_children if n.type == "var_spec_list" else [n])]
            for spec in specs:
                if spec.type in ("const_spec", "var_spec", "type_spec", "type_alias"):
                    for name in _spec_names(spec):
                        _add(out, kind, name, spec)
                        _spec_item(out, kind, name, spec)
    for call in _calls(root):
        route = _route(call)
        if route is not None:
            out.items.add(f"route {route}")
    return out


def _add(out: GoFile, kind: str, name: str, node) -> None:
    if name in ("init", "_") or name.endswith("._"):
        return
    out.symbols[name] = Symbol(kind, name, node.start_point[0] + 1, normalize(node),
                               node.text.decode("utf-8", "replace"))
    if kind in ("func", "method") and name.rsplit(".", 1)[-1][:1].isupper():
        out.items.add(f"{kind} {name}")


def _spec_item(out: GoFile, kind: str, name: str, spec) -> None:
    if kind == "const":
        type_node = spec.child_by_field_name("type")
        type_name = _text(type_node) if type_node is not None else ""
        if name.endswith("Header"):
            out.items.add(f"header {name}")
        elif type_name.endswith("Code"):  # (ErrorCode too)
            out.items.add(f"error code {name}")
        else:
            out.items.add(f"const {name}")
    elif kind == "var" and (name.startswith("err") or name.startswith("Err")):
        out.items.add(f"error {name}")


def normalize(node) -> str:
    """Rule 2: the leaf tokens of ``node`` without comments and semicolons, one space apart."""
    tokens: list[str] = []
    stack = [node]
    while stack:
        n = stack.pop()
        if n.type == "comment":
            continue
        if n.type in LITERALS or n.child_count == 0:
            text = n.text.decode("utf-8", "replace")
            if text.strip() and text != ";":
                tokens.append(text)
            continue
        stack.extend(reversed(n.children))
    return " ".join(tokens)


def _text(node) -> str:
    return node.text.decode("utf-8", "replace") if node is not None else ""


def _receiver_type(method) -> str:
    """``(s *Store)`` -> ``Store``; ``(c Box[T])`` -> ``Box``."""
    receiver = method.child_by_field_name("receiver")
    for n in _walk(receiver):
        if n.type == "type_identifier":
            return _text(n)
    return "?"


def _spec_names(spec) -> list[str]:
    if spec.type in ("type_spec", "type_alias"):
        return [_text(spec.child_by_field_name("name"))]
    return [_text(c) for c in spec.children_by_field_name("name")]


def _walk(node):
    stack = [node] if node is not None else []
    while stack:
        n = stack.pop()
        yield n
        stack.extend(reversed(n.children))


def _calls(root):
    return (n for n in _walk(root) if n.type == "call_expression")


def _route(call) -> str | None:
    """Rule 4's route heuristic: ``r.Post("/x", h)`` -> ``Post /x``."""
    fn = call.child_by_field_name("function")
    if fn is None or fn.type != "selector_expression":
        return None
    method = _text(fn.child_by_field_name("field"))
    if method not in ROUTE_METHODS:
        return None
    args = call.child_by_field_name("arguments")
    if args is None:
        return None
    strings = [a for a in args.named_children if a.type in ("interpreted_string_literal", "raw_string_literal")]
    if method == "Method" and len(strings) >= 2:  # r.Method("GET", "/x", h)
        verb, path = _text(strings[0])[1:-1], _text(strings[1])[1:-1]
        return f"{verb} {path}" if path.startswith("/") else None
    if not strings or args.named_children[0] != strings[0]:
        return None
    path = _text(strings[0])[1:-1]
    return f"{method} {path}" if path.startswith("/") else None


def _first_error(root):
    for n in _walk(root):
        if n.type == "ERROR" or n.is_missing:
            return n
    return None
