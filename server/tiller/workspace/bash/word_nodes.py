"""The word nodes of a parsed command line read as bash reads them: a word's value when bash's is
known (``words.py`` does the quoting), assignments (``NAME=value``, ``NAME[i]=``), and
what a word's expansions hold: the commands of its command and process substitutions (handed
back to the walk of ``segments.py``), arithmetic and ``${!x}`` (which make its command
exact-only), and ``${x@P}`` prompt expansions and node kinds not handled here (unreadable).
"""

from __future__ import annotations

from collections.abc import Callable

from tree_sitter import Node

from tiller.workspace.bash.hidden_code import MAX_NESTING
from tiller.workspace.bash.words import (
    CannotRead,
    Piece,
    Word,
    ansi_c,
    double_quoted,
    unquoted,
    word_of,
)

__all__ = ["WORD_NODES", "WordReader"]

WORD_NODES = frozenset(
    {"word", "string", "raw_string", "ansi_c_string", "concatenation", "number",
     "simple_expansion", "expansion", "command_substitution", "process_substitution",
     "arithmetic_expansion", "brace_expression", "translated_string"}
)  # fmt: skip
_EXPRESSIONS = frozenset(
    {"binary_expression", "unary_expression", "ternary_expression", "postfix_expression",
     "parenthesized_expression", "variable_name", "special_variable_name", "subscript",
     "test_operator", "regex", "extglob_pattern", "string_content", "array",
     "variable_assignment", "heredoc_content", "file_descriptor"}
)  # fmt: skip


class WordReader:
    """Reads the words and expressions of one parsed line; ``substitution`` walks the
    commands of a command or process substitution met in them."""

    def __init__(self, source: bytes, substitution: Callable[[Node], None]) -> None:
        self.source = source
        self.substitution = substitution

    def text(self, node: Node) -> str:
        return self.source[node.start_byte : node.end_byte].decode("utf-8", "surrogatepass")

    def word(self, node: Node, reasons: list[str] | None = None) -> Word:
        """One word: its substitutions walked, and its value when bash's is known."""
        found = reasons if reasons is not None else []
        self.expression(node, found)
        return word_of(self.text(node), self.pieces(node))

    def assignment(self, node: Node, reasons: list[str]) -> Word:
        """``NAME=value`` (``NAME+=``, ``NAME[i]=``): static when its value is."""
        text = self.text(node)
        value: Word | None = None
        for child in node.children:
            if child.type == "subscript":
                self.expression(child, reasons)
            elif child.type == "variable_name" or not child.is_named:
                continue
            elif child.type == "array":
                self.expression(child, reasons)
                return Word(text, None, assignment=True)
            elif child.type in WORD_NODES:
                value = self.word(child, reasons)
            else:
                raise CannotRead(f"{child.type!r} in an assignment is not understood")
        if value is None:
            return Word(text, text, assignment=True)
        if value.value is None:
            return Word(text, None, assignment=True)
        head = text[: len(text) - len(value.text)] if text.endswith(value.text) else None
        if head is None:
            return Word(text, None, assignment=True)
        return Word(text, head + value.value, assignment=True)

    def pieces(self, node: Node) -> list[Piece] | None:
        """The characters of a word node and whether bash still expands them; None when
        an expansion decides them at run time."""
        kind = node.type
        text = self.text(node)
        if kind in ("word", "number"):
            return unquoted(text)
        if kind == "raw_string":
            return [Piece(text[1:-1], False)]
        if kind == "ansi_c_string":
            value = ansi_c(text[2:-1])
            return None if value is None else [Piece(value, False)]
        if kind == "string":
            if any(c.is_named and c.type != "string_content" for c in node.children):
                return None
            return [Piece(double_quoted(text[1:-1]), False)]
        if kind == "concatenation":
            pieces: list[Piece] = []
            at = node.start_byte
            for child in node.children:
                if child.start_byte != at:
                    return None  # text between the parts: not read exactly
                part = self.pieces(child)
                if part is None:
                    return None
                pieces.extend(part)
                at = child.end_byte
            return pieces if at == node.end_byte else None
        return None  # expansions, substitutions, arithmetic, brace expressions

    def expression(self, node: Node, reasons: list[str], depth: int = 0) -> None:
        """Walk a word or expression for the commands it runs (substitutions) and what
        makes its command exact-only (arithmetic); refuse what is not understood."""
        if depth > MAX_NESTING:
            raise CannotRead("nested too deeply")
        kind = node.type
        if not node.is_named:
            return
        if kind in ("command_substitution", "process_substitution"):
            self.substitution(node)
            return
        if kind == "arithmetic_expansion":
            reasons.append("evaluates arithmetic")
        elif kind == "subscript":
            index = node.child_by_field_name("index")
            if index is not None and not (index.type == "number" or self.text(index) in ("@", "*")):
                reasons.append("evaluates arithmetic")
        elif kind == "expansion":
            operators = [self.text(c) for c in node.children_by_field_name("operator")]
            if "@" in operators and "P" in operators:
                raise CannotRead("a ${x@P} prompt expansion")
            if operators[:1] == ["!"]:
                reasons.append("expands a variable named at run time")
        elif kind not in WORD_NODES and kind not in _EXPRESSIONS:
            raise CannotRead(f"a {kind} is not understood in a word")
        for child in node.children:
            self.expression(child, reasons, depth + 1)
