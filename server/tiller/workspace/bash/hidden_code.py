"""Code hidden from the parse of a command line: text tree-sitter-bash left as plain text that
bash would still run as a substitution (``"${x:-`cmd`}"``, a ``<<-`` body), and lines nested
too deeply to walk. ``segments.py`` refuses both before it walks a line (``Unreadable``).
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from tree_sitter import Node

from tiller.workspace.bash.words import CannotRead

__all__ = ["MAX_NESTING", "check_hidden_code"]

MAX_NESTING = 150  # nodes within nodes; deeper lines are unreadable (and cheap to refuse)

_SUSPICIOUS = ("`", "$(", "$[", "<(", ">(")
_SUSPICIOUS_IN_HEREDOC = ("`", "$(", "$[")
_ESCAPE = re.compile(r"\\.", re.DOTALL)
_LITERALS = frozenset({"raw_string", "ansi_c_string", "comment"})


def check_hidden_code(root: Node, source: bytes) -> None:
    """Refuse text the parser left as plain text that bash would still run: a substitution
    it did not recognize (``"${x:-`cmd`}"``, a ``<<-`` body), anywhere outside literals."""
    stack: list[tuple[Node, int, bool]] = [(root, 0, False)]
    while stack:
        node, depth, in_heredoc = stack.pop()
        if depth > MAX_NESTING:
            raise CannotRead("nested too deeply")
        if node.type in _LITERALS:
            continue
        if node.type == "heredoc_body" and _quoted_heredoc(node, source):
            continue
        heredoc = in_heredoc or node.type == "heredoc_body"
        if node.is_named or node.child_count:
            for gap in _gaps(node, source):
                _refuse_hidden(gap, heredoc)
        for child in node.children:
            stack.append((child, depth + 1, heredoc))


def _gaps(node: Node, source: bytes) -> Iterator[str]:
    """The text of ``node`` that none of its children covers (all of it for a leaf)."""
    at = node.start_byte
    for child in node.children:
        if child.start_byte > at:
            yield source[at : child.start_byte].decode("utf-8", "surrogatepass")
        at = max(at, child.end_byte)
    if node.end_byte > at:
        yield source[at : node.end_byte].decode("utf-8", "surrogatepass")


def _refuse_hidden(text: str, heredoc: bool) -> None:
    bare = _ESCAPE.sub("", text)
    marks = _SUSPICIOUS_IN_HEREDOC if heredoc else _SUSPICIOUS
    found = next((m for m in marks if m in bare), None)
    if found is not None:
        raise CannotRead(f"{found!r} in text the parser did not read as a substitution")


def _quoted_heredoc(body: Node, source: bytes) -> bool:
    """Whether the here-document ``body`` belongs to has a quoted delimiter (``<<'EOF'``,
    ``<<"EOF"``, ``<<\\EOF``): bash then expands nothing in it."""
    redirect = body.parent
    start = (
        next((c for c in redirect.children if c.type == "heredoc_start"), None)
        if (redirect is not None)
        else None
    )
    if start is None:
        return False
    return any(c in source[start.start_byte : start.end_byte] for c in b"'\"\\")
