"""The redirections of one command or compound command, read: the files it reads and writes,
what it reads as its input (a here-document's or here-string's static text), the words
tree-sitter put among them, and the commands written after a here-document's start
(``cat <<EOF | sh``), which ``segments.py`` walks as commands of their own.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from tree_sitter import Node

from tiller.workspace.bash.word_nodes import WordReader
from tiller.workspace.bash.words import CannotRead, Word

__all__ = ["REDIRECT_NODES", "Redirections", "Stdin", "read_redirection"]

REDIRECT_NODES = frozenset({"file_redirect", "heredoc_redirect", "herestring_redirect"})
_HARMLESS_TARGETS = frozenset({"/dev/null", "/dev/stdout", "/dev/stderr"})
_WRITES = frozenset({">", ">>", ">|", "&>", "&>>", ">&"})
_DUPLICATES = frozenset({">&", "<&", ">&-", "<&-"})


@dataclass(frozen=True)
class Stdin:
    """What a command reads as its input, when the line says: a here-document or
    here-string's static text (``text``), or something else (``known`` False)."""

    text: str | None = None
    known: bool = False


@dataclass
class Redirections:
    """What the redirections of one command or compound add up to."""

    reads: list[Word] = field(default_factory=list)
    writes: list[Word] = field(default_factory=list)
    extra: list[tuple[int, Word]] = field(default_factory=list)  # words tree-sitter put there
    stdin: Stdin = field(default_factory=Stdin)
    nested: list[Node] = field(default_factory=list)  # commands written after a here-doc's start
    cuts: list[Node] = field(default_factory=list)  # those commands and their operators
    reasons: list[str] = field(default_factory=list)


def read_redirection(reader: WordReader, node: Node, done: Redirections) -> None:
    """Add one redirection node to ``done``; refuse a kind not handled here."""
    kind = node.type
    if kind == "file_redirect":
        _file_redirect(reader, node, done)
    elif kind == "herestring_redirect":
        parts = [c for c in node.named_children]
        if len(parts) != 1:
            raise CannotRead("a here-string that is not one word")
        word = reader.word(parts[0], done.reasons)
        done.stdin = Stdin(None if word.value is None else word.value + "\n", True)
    elif kind == "heredoc_redirect":
        _heredoc(reader, node, done)
    else:
        raise CannotRead(f"a {kind} is not understood")


def _file_redirect(reader: WordReader, node: Node, done: Redirections) -> None:
    operator = next((reader.text(c) for c in node.children if not c.is_named), "")
    targets = node.children_by_field_name("destination")
    if not targets:
        if operator in (">&-", "<&-"):
            return
        raise CannotRead(f"a {operator} redirection without a target")
    target_node, extra = targets[0], targets[1:]
    for node_of_word in extra:  # tree-sitter puts later words here: bash passes them on
        done.extra.append((node_of_word.start_byte, reader.word(node_of_word, done.reasons)))
    target = reader.word(target_node, done.reasons)
    if operator in _DUPLICATES and (target.value == "-" or (target.value or "").isdigit()):
        return  # 2>&1, >&2, <&0, >&-: descriptors, not files
    if operator == "<" or operator == "<&":
        done.reads.append(target)
        done.stdin = Stdin(None, True)
    elif operator in _WRITES:
        if target.value not in _HARMLESS_TARGETS:
            done.writes.append(target)
    else:
        raise CannotRead(f"a {operator!r} redirection is not understood")


def _heredoc(reader: WordReader, node: Node, done: Redirections) -> None:
    """A here-document: its body is the input (static text only when nothing in it
    expands), its substitutions are walked unless the delimiter is quoted, and the
    redirections and commands written after its start are gathered."""
    body: Node | None = None
    quoted = False
    for child in node.children:
        kind = child.type
        if kind == "heredoc_start":
            quoted = any(c in reader.text(child) for c in "'\"\\")
        elif kind == "heredoc_body":
            body = child
        elif kind in ("heredoc_end", "<<", "<<-"):
            continue
        elif kind in REDIRECT_NODES:
            read_redirection(reader, child, done)
        elif child.is_named:
            done.nested.append(child)
            done.cuts.append(child)
        else:  # the operator before those commands: &&, ||, |, ;
            done.cuts.append(child)
    if body is None:
        done.stdin = Stdin("", True)
        return
    if quoted:
        done.stdin = Stdin(reader.text(body), True)
        return
    for child in body.children:
        reader.expression(child, done.reasons)
    text = reader.text(body)
    static = not any(c.type not in ("heredoc_content",) for c in body.named_children)
    plain = static and not any(c in text for c in "$`\\")
    done.stdin = Stdin(text if plain else None, True)
