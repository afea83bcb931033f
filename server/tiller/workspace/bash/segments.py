"""A command line split into every command bash will run: what permission rules judge.

The line is parsed with tree-sitter-bash. Every simple command is a segment, wherever it
stands: across pipes, ``&&``, ``||``, ``;`` and ``&``; inside subshells, groups, ``if``,
``for``, ``select``, ``while``, ``until`` and ``case`` bodies and function bodies; inside
command and process substitutions, parameter-expansion operands (``${x:-$(cmd)}``),
arithmetic, ``[[ ]]`` and ``(( ))``, here-document bodies whose delimiter is not quoted,
here-strings, redirection targets, assignment values and array subscripts. ``[[ ]]``, ``[ ]``,
``(( ))`` and a ``for (( ))`` header are segments too. The strings a command hands to a shell
as code (``sh -c``, ``eval``, ``trap``, ``su -c``, ``watch``, ..., also through wrappers:
``timeout 5 sh -c '…'``, ``find … -exec sh -c '…' \\;``) are split as command lines of their
own, and their segments join the line's; so is the here-document a shell reads as its script.

A segment keeps its source text (what the approval card shows), its words as bash passes them
(``words.py``: ``Word.value`` None for a word bash decides at run time, an expansion, an
unquoted glob, a brace expansion), its readings (``readings.py``) and ``exact_only``: why
only a rule naming the segment exactly may allow it (a redirection that writes a file, a
program that runs another, ``git -c``, a writing option of a reading program, arithmetic).

This module walks statements, compound commands and simple commands; its siblings read the
rest: ``word_nodes.py`` words and their expansions, ``redirections.py``
redirections and here-documents, ``code_strings.py`` the code strings a segment runs,
``hidden_code.py`` substitutions the parser left as plain text.

Strict, the way codex's shell-command crate is: a command is judged only when every word of it
is understood. A line is unreadable (``Unreadable``: it never runs unasked) when the parser
reports an error, a node is of a kind not handled here, text outside a substitution that was
walked still holds `` ` ``, ``$(``, ``$[``, ``<(`` or ``>(``, a code string is not static, a
quoted word names an array subscript holding a command (``test -v 'a[$(cmd)]'`` runs it), a
``${x@P}`` prompt expansion is used, or the line holds a NUL byte or is over 16 KB.
"""

from __future__ import annotations

import functools
import re
import threading
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field

import tree_sitter_bash
from tree_sitter import Language, Node, Parser

from tiller.workspace.bash.code_strings import segment_code
from tiller.workspace.bash.hidden_code import check_hidden_code
from tiller.workspace.bash.readings import (
    AllowReading,
    Reading,
    allow_readings,
    deny_readings,
    program_name,
)
from tiller.workspace.bash.redirections import (
    REDIRECT_NODES,
    Redirections,
    Stdin,
    read_redirection,
)
from tiller.workspace.bash.word_nodes import WORD_NODES, WordReader
from tiller.workspace.bash.words import CannotRead, Word

__all__ = [
    "MAX_SEGMENTED_BYTES",
    "Segment",
    "Unreadable",
    "rough_words",
    "split_command",
    "split_segments",
]

MAX_SEGMENTED_BYTES = 16 * 1024
MAX_CODE_DEPTH = 4  # code strings within code strings

_ARITHMETIC_TESTS = frozenset({"-eq", "-ne", "-lt", "-le", "-gt", "-ge", "-v"})
_RESERVED = frozenset(
    {"{", "}", "!", "case", "do", "done", "elif", "else", "esac", "fi", "for", "function",
     "if", "in", "select", "then", "until", "while", "[[", "]]"}
)  # fmt: skip
_CONTAINERS = frozenset(
    {"program", "list", "pipeline", "subshell", "do_group", "if_statement", "elif_clause",
     "else_clause", "while_statement", "negated_command"}
)  # fmt: skip


@dataclass(frozen=True)
class Unreadable:
    """A line that cannot be split, and why."""

    reason: str


@dataclass(frozen=True)
class Segment:
    """One command bash runs: its source text, its words, why only an exact rule may allow
    it (None: prefix and wildcard rules may), the files it reads and writes through
    redirections, and its readings for deny/ask rules and for allow rules."""

    text: str
    words: tuple[Word, ...]
    exact_only: str | None = None
    reads: tuple[Word, ...] = ()
    writes: tuple[Word, ...] = ()
    deny_readings: tuple[Reading, ...] = field(default=(), repr=False)
    allow_readings: tuple[AllowReading, ...] = field(default=(), repr=False)

    @property
    def program(self) -> str:
        """The program's name as written (after any assignment prefixes); "" if none or
        decided at run time."""
        word = next((w for w in self.words if not w.assignment), None)
        return (word.value or "") if word is not None else ""

    @property
    def operands(self) -> tuple[Word, ...]:
        """The words after the program."""
        rest = [w for w in self.words if not w.assignment]
        return tuple(rest[1:])


def split_segments(command: str) -> tuple[Segment, ...] | None:
    """The commands of ``command`` in source order; None when it cannot be read (or is
    empty, or too long to judge cheaply)."""
    split = split_command(command)
    return None if isinstance(split, Unreadable) else split


def split_command(command: str) -> tuple[Segment, ...] | Unreadable:
    """The commands of ``command`` in source order, or why it cannot be read."""
    if not command.strip():
        return Unreadable("an empty command")
    if "\x00" in command:
        return Unreadable("a NUL byte")
    if len(command) > MAX_SEGMENTED_BYTES:
        return Unreadable("longer than 16 KB")
    try:
        source = command.encode("utf-8", "surrogatepass")
        if len(source) > MAX_SEGMENTED_BYTES:
            return Unreadable("longer than 16 KB")
        segments = _split(source, 0)
    except CannotRead as e:
        return Unreadable(str(e))
    except RecursionError:
        return Unreadable("nested too deeply")
    except UnicodeDecodeError:  # a lone surrogate: never a word bash would see as written
        return Unreadable("not text")
    return segments or Unreadable("no command")


def rough_words(command: str) -> frozenset[str]:
    """Every word-like piece of a line, quotes and escapes removed, with program paths
    reduced to names: what a deny rule's program is looked for in a line that cannot be
    read (fail closed)."""
    flat = command.replace("\\\n", "").translate({ord(c): None for c in "'\"\\"})
    pieces = re.split(r"[\s;&|()<>{}`$=,]+", flat)
    return frozenset(p for piece in pieces if piece for p in (piece, program_name(piece)))


# --- parsing ---------------------------------------------------------------------------------


@functools.cache
def _language() -> Language:
    return Language(tree_sitter_bash.language())


_PARSERS = threading.local()


def _parser() -> Parser:
    parser: Parser | None = getattr(_PARSERS, "parser", None)
    if parser is None:
        parser = Parser(_language())
        _PARSERS.parser = parser
    return parser


def _split(source: bytes, depth: int) -> tuple[Segment, ...]:
    if depth > MAX_CODE_DEPTH:
        raise CannotRead("code strings nested too deeply")
    tree = _parser().parse(source)
    root = tree.root_node
    if root.has_error:
        raise CannotRead("the parser reports a syntax error")
    check_hidden_code(root, source)
    walker = _Walker(source, depth)
    walker.statement(root, Stdin())
    return tuple(walker.segments)


# --- the walk --------------------------------------------------------------------------------


class _Walker:
    """Walks one parsed line, collecting its segments in source order: its statements and
    commands here, its words through a ``WordReader``, its redirections through
    ``read_redirection``."""

    def __init__(self, source: bytes, depth: int) -> None:
        self.source = source
        self.depth = depth
        self.segments: list[Segment] = []
        self.reader = WordReader(source, self.substitution)

    def text(self, node: Node) -> str:
        return self.reader.text(node)

    def substitution(self, node: Node) -> None:
        """The commands of a command or process substitution met in a word."""
        for child in node.named_children:
            self.statement(child, Stdin())

    # statements

    def statement(self, node: Node, stdin: Stdin, reads: tuple[Word, ...] = ()) -> None:
        kind = node.type
        if kind in _CONTAINERS:
            for child in node.named_children:
                self.statement(child, stdin, reads)
        elif kind == "command":
            self.command(node, [], stdin, reads)
        elif kind == "redirected_statement":
            self.redirected(node, stdin, reads)
        elif kind == "compound_statement":
            first = node.children[0].type if node.children else ""
            if first == "((":
                self.arithmetic(node, node, reads)
            else:
                for child in node.named_children:
                    self.statement(child, stdin, reads)
        elif kind == "for_statement":
            for child in node.children_by_field_name("value"):
                self.reader.word(child)
            for child in node.children_by_field_name("body"):
                self.statement(child, stdin, reads)
        elif kind == "c_style_for_statement":
            body = node.child_by_field_name("body")
            self.arithmetic(node, body, reads)
            if body is not None:
                self.statement(body, stdin, reads)
        elif kind == "case_statement":
            for child in node.named_children:
                if child.type == "case_item":
                    self.case_item(child, stdin, reads)
                else:
                    self.reader.word(child)
        elif kind == "function_definition":
            self.function(node, stdin, reads)
        elif kind == "test_command":
            self.test(node, reads)
        elif kind in ("declaration_command", "unset_command"):
            self.declaration(node, stdin, reads)
        elif kind == "variable_assignment":
            self.assignments(node, [node], reads)
        elif kind == "variable_assignments":
            self.assignments(node, node.named_children, reads)
        elif kind == "comment":
            return
        else:
            raise CannotRead(f"a {kind} is not understood here")

    def case_item(self, node: Node, stdin: Stdin, reads: tuple[Word, ...]) -> None:
        patterns = {c.id for c in node.children_by_field_name("value")}
        for child in node.named_children:
            if child.id in patterns:
                self.reader.word(child)
            else:
                self.statement(child, stdin, reads)

    def function(self, node: Node, stdin: Stdin, reads: tuple[Word, ...]) -> None:
        redirects = node.children_by_field_name("redirect")
        body = node.child_by_field_name("body")
        done = Redirections()
        for redirect in redirects:
            read_redirection(self.reader, redirect, done)
        inner = (*reads, *done.reads)
        if body is not None:
            self.statement(body, done.stdin if done.stdin.known else stdin, inner)
        self.compound_redirections(node, done)

    def redirected(self, node: Node, stdin: Stdin, reads: tuple[Word, ...]) -> None:
        body = node.child_by_field_name("body")
        redirects = node.children_by_field_name("redirect")
        if body is not None and body.type == "command":
            self.command(body, redirects, stdin, reads, whole=node)
            return
        done = Redirections()
        for redirect in redirects:
            read_redirection(self.reader, redirect, done)
        if done.extra:
            raise CannotRead("words after a compound command's redirection")
        if body is not None:
            self.statement(body, done.stdin if done.stdin.known else stdin, (*reads,
                           *done.reads))  # fmt: skip
        self.compound_redirections(node, done)

    def compound_redirections(self, node: Node, done: Redirections) -> None:
        """A compound command's redirections: the commands written after a here-document's
        start, and a segment for the whole compound when it writes a file (exact only)."""
        for nested in done.nested:
            self.statement(nested, Stdin())
        if done.writes:
            text = self.text(node).strip()
            why = ["writes a file through a redirection"]
            self.add(text, [], why, tuple(done.reads), tuple(done.writes), Stdin())

    # simple commands

    def command(
        self,
        node: Node,
        redirects: Iterable[Node],
        stdin: Stdin,
        reads: tuple[Word, ...],
        whole: Node | None = None,
    ) -> None:
        position = len(self.segments)
        words: list[tuple[int, Word]] = []
        reasons: list[str] = []
        done = Redirections()
        for child in node.children:
            kind = child.type
            if kind == "variable_assignment":
                words.append((child.start_byte, self.reader.assignment(child, reasons)))
            elif kind == "command_name":
                if child.named_child_count != 1:
                    raise CannotRead("a command name that is not one word")
                name = child.named_children[0]
                if name.type == "word" and self.text(name) in _RESERVED:
                    raise CannotRead(f"{self.text(name)!r} read as a command")
                words.append((child.start_byte, self.reader.word(name, reasons)))
            elif kind in WORD_NODES:
                words.append((child.start_byte, self.reader.word(child, reasons)))
            elif kind in REDIRECT_NODES:
                read_redirection(self.reader, child, done)
            else:
                raise CannotRead(f"{kind!r} in a command is not understood")
        for redirect in redirects:
            read_redirection(self.reader, redirect, done)
        ordered = [w for _, w in sorted([*words, *done.extra], key=lambda pair: pair[0])]
        text = self.command_text(whole or node, done.cuts)
        if done.writes:
            reasons.insert(0, "writes a file through a redirection")
        input_ = done.stdin if done.stdin.known else stdin
        reasons.extend(done.reasons)
        self.add(text, ordered, reasons, (*reads, *done.reads), tuple(done.writes), input_,
                 position)  # fmt: skip
        for nested in done.nested:
            self.statement(nested, Stdin())

    def command_text(self, node: Node, nested: list[Node]) -> str:
        """A command's source, without the commands written after its here-document's
        start (``cat <<EOF | sh``: those are segments of their own)."""
        pieces: list[str] = []
        at = node.start_byte
        for skip in sorted(nested, key=lambda n: n.start_byte):
            piece = self.source[at : skip.start_byte].decode("utf-8", "surrogatepass")
            pieces.append(piece.rstrip(" \t"))
            at = skip.end_byte
        pieces.append(self.source[at : node.end_byte].decode("utf-8", "surrogatepass"))
        return "".join(pieces).strip()

    def add(
        self,
        text: str,
        words: list[Word],
        reasons: list[str],
        reads: tuple[Word, ...],
        writes: tuple[Word, ...],
        stdin: Stdin,
        position: int | None = None,
    ) -> None:
        """Add one segment (at ``position``: before the substitutions its words held), and
        the segments of the code strings it runs after them. ``reasons``: why only an exact
        rule may allow it, whatever its readings say (the first is shown)."""
        values = tuple(w.reading for w in words)
        readings = deny_readings(values)
        code = segment_code(words, readings, stdin.text)
        if code.runs_input:
            readings = (*readings, (None,))  # a shell running its input may run anything
        why = reasons[0] if reasons else None
        allowed = tuple(AllowReading(r.words, why or r.exact_only) for r in allow_readings(values))
        segment = Segment(text, tuple(words), allowed[0].exact_only if allowed else why,
                          reads, writes, readings, allowed)  # fmt: skip
        if position is None:
            self.segments.append(segment)
        else:
            self.segments.insert(position, segment)
        for string in code.strings:
            self.segments.extend(_split(string.encode("utf-8", "surrogatepass"), self.depth + 1))

    def assignments(self, node: Node, parts: list[Node], reads: tuple[Word, ...]) -> None:
        position = len(self.segments)
        reasons: list[str] = []
        words = [self.reader.assignment(part, reasons) for part in parts]
        self.add(self.text(node).strip(), words, reasons, reads, (), Stdin(), position)

    def declaration(self, node: Node, stdin: Stdin, reads: tuple[Word, ...]) -> None:
        """``declare``/``local``/``export``/``readonly``/``typeset``/``unset``: a builtin
        whose arguments may be assignments."""
        position = len(self.segments)
        reasons: list[str] = []
        words: list[Word] = []
        for child in node.children:
            if not child.is_named:
                keyword = self.text(child)
                words.append(Word(keyword, keyword))
            elif child.type == "variable_assignment":
                assigned = self.reader.assignment(child, reasons)
                words.append(Word(assigned.text, assigned.value))
            elif child.type == "variable_name":
                words.append(Word(self.text(child), self.text(child)))
            elif child.type in WORD_NODES:
                words.append(self.reader.word(child, reasons))
            else:
                raise CannotRead(f"{child.type!r} in {node.type} is not understood")
        self.add(self.text(node).strip(), words, reasons, reads, (), stdin, position)

    # commands that are not simple commands

    def arithmetic(self, node: Node, body: Node | None, reads: tuple[Word, ...]) -> None:
        """``(( … ))`` or a ``for (( … ))`` header: a segment of its own, exact only."""
        position = len(self.segments)
        reasons = ["evaluates arithmetic"]
        end = body.start_byte if body is not None and body is not node else node.end_byte
        for child in node.children:
            if body is not None and child.start_byte >= end:
                break
            self.reader.expression(child, reasons)
        text = self.source[node.start_byte : end].decode("utf-8", "surrogatepass").strip()
        text = text.rstrip("; \t\n")
        self.add(text, [Word(text, text)], reasons, reads, (), Stdin(), position)

    def test(self, node: Node, reads: tuple[Word, ...]) -> None:
        """``[[ … ]]`` and ``[ … ]``: a command whose words are the test's."""
        position = len(self.segments)
        reasons: list[str] = []
        words = list(self.test_words(node, reasons))
        opener = words[0].value if words else None
        if opener == "[[" and any(w.value in _ARITHMETIC_TESTS for w in words):
            reasons.append("evaluates arithmetic")
        self.add(self.text(node).strip(), words, reasons, reads, (), Stdin(), position)

    def test_words(self, node: Node, reasons: list[str]) -> Iterator[Word]:
        for child in node.children:
            kind = child.type
            if not child.is_named:
                token = self.text(child)
                yield Word(token, token)
            elif kind in WORD_NODES:
                yield self.reader.word(child, reasons)
            elif kind in ("test_operator", "regex", "extglob_pattern", "variable_name"):
                self.reader.expression(child, reasons)
                token = self.text(child)
                yield Word(token, token)
            elif kind in ("binary_expression", "unary_expression", "parenthesized_expression",
                          "ternary_expression", "postfix_expression"):  # fmt: skip
                yield from self.test_words(child, reasons)
            else:
                raise CannotRead(f"a {kind} is not understood in a test")
