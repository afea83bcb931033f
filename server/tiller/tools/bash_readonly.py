"""Whether a shell command line provably only reads: the bash tool's ``read_only`` test.

The command is parsed with bashlex; every simple command in it (across pipes, ``&&``, ``||``,
``;``, subshells and brace groups) must be a known read-only program used without its writing
options, with no redirection to a file other than ``/dev/null``, no command or process
substitution, no variable assignment and no control structure. Anything unknown or unparsable
is not read-only: a wrong "no" only costs a confirmation, a wrong "yes" could write.
"""

from __future__ import annotations

import importlib
import re
from collections.abc import Callable, Iterable, Sequence
from typing import Any

__all__ = ["is_read_only_command"]

# bashlex nodes are untyped objects with a ``kind`` tag.
Node = Any
ArgsCheck = Callable[[Sequence[str]], bool]

_WRITE_REDIRECTS = frozenset({">", ">>", ">|", "&>", "&>>", ">&"})
_READ_REDIRECTS = frozenset({"<", "<<", "<<-", "<<<", "<&"})
_LIST_OPERATORS = frozenset({";", "&&", "||", "\n"})
_PLAIN_PARAMETER = re.compile(r"#?([A-Za-z_][A-Za-z0-9_]*|[0-9]|[@*#?$!-])")


def _any_args(_args: Sequence[str]) -> bool:
    return True


def _short_cluster_has(arg: str, letters: str) -> bool:
    """``-xyz`` style cluster containing any of ``letters`` (long options excluded)."""
    return arg.startswith("-") and not arg.startswith("--") and any(c in arg[1:] for c in letters)


def _no_options(letters: str, long_prefixes: tuple[str, ...]) -> ArgsCheck:
    """Refuse short options containing any of ``letters`` and long options by prefix."""

    def check(args: Sequence[str]) -> bool:
        for arg in args:
            if arg == "--":
                return True
            if _short_cluster_has(arg, letters) or arg.startswith(long_prefixes):
                return False
        return True

    return check


_FIND_WRITERS = ("-exec", "-execdir", "-ok", "-okdir", "-delete", "-fprint", "-fls")


def _find_ok(args: Sequence[str]) -> bool:
    return not any(arg.startswith(_FIND_WRITERS) for arg in args)


def _uniq_ok(args: Sequence[str]) -> bool:
    # ``uniq INPUT OUTPUT`` writes OUTPUT: allow at most one operand.
    operands = [a for a in args if not a.startswith("-") or a == "-"]
    return len(operands) <= 1


def _env_ok(args: Sequence[str]) -> bool:
    # Only printing the environment; any operand would run a command.
    return all(arg in ("-0", "--null") for arg in args)


def _date_ok(args: Sequence[str]) -> bool:
    # Formatting and ``-d``/``--date`` are fine; ``-s``/``--set`` or a bare operand sets the clock.
    takes_value = False
    for arg in args:
        if takes_value:
            takes_value = False
            continue
        if arg in ("-d", "--date", "-r", "--reference", "-f", "--file"):
            takes_value = True
        elif arg.startswith("+") or arg.startswith(("--date=", "--reference=", "--file=")):
            continue
        elif not arg.startswith("-") or arg.startswith("--s") or _short_cluster_has(arg, "s"):
            return False
    return True


_GIT_BRANCH_FLAGS = frozenset(
    {"-a", "-r", "--all", "--remotes", "--list", "-v", "-vv", "--verbose", "--show-current"}
)


def _git_branch_ok(args: Sequence[str]) -> bool:
    return all(arg in _GIT_BRANCH_FLAGS for arg in args)


def _git_no_output_file(args: Sequence[str]) -> bool:
    # ``--output=<file>`` (and its abbreviations) makes diff/log/show write a file.
    return not any(arg.startswith("--ou") for arg in args)


_GIT_SUBCOMMANDS: dict[str, ArgsCheck] = {
    "status": _any_args,
    "log": _git_no_output_file,
    "diff": _git_no_output_file,
    "show": _git_no_output_file,
    "blame": _any_args,
    "branch": _git_branch_ok,
    "rev-parse": _any_args,
    "ls-files": _any_args,
}


def _git_ok(args: Sequence[str]) -> bool:
    rest = list(args)
    # Global options: only ones that cannot run anything (``-c`` could set a pager or hook).
    while rest and rest[0].startswith("-"):
        match rest:
            case ["--no-pager", *tail]:
                rest = tail
            case ["-C", _, *tail]:
                rest = tail
            case _:
                return False
    if not rest:
        return False
    check = _GIT_SUBCOMMANDS.get(rest[0])
    return check is not None and check(rest[1:])


# Programs with no option that writes files or runs other programs.
_PLAIN_READERS = (
    *("ls", "cat", "head", "tail", "wc", "grep", "egrep", "fgrep", "pwd", "echo", "printf"),
    *("true", "false", "sleep", "stat", "du", "df", "which", "cut", "tr", "basename"),
    *("dirname", "realpath", "nl", "diff", "cmp", "md5sum", "sha256sum", "test", "["),
)

_PROGRAMS: dict[str, ArgsCheck] = {
    **dict.fromkeys(_PLAIN_READERS, _any_args),
    "rg": _no_options("", ("--pre",)),
    "find": _find_ok,
    "git": _git_ok,
    "sort": _no_options("o", ("--o", "--c")),
    "tree": _no_options("o", ("--o",)),
    "file": _no_options("C", ("--c",)),
    "uniq": _uniq_ok,
    "env": _env_ok,
    "date": _date_ok,
}


def is_read_only_command(command: str) -> bool:
    """True only if ``command`` provably reads and never writes; False when in doubt."""
    if not command.strip():
        return False
    try:
        # bashlex builds its parser tables on import (~0.1 s): load it on first use.
        trees = importlib.import_module("bashlex").parse(command)
        return bool(trees) and all(_node_ok(tree) for tree in trees)
    except Exception:  # bashlex raises many kinds (ParsingError, NotImplementedError, ...)
        return False


def _all_ok(nodes: Iterable[Node]) -> bool:
    return all(_node_ok(node) for node in nodes)


def _node_ok(node: Node) -> bool:
    match node.kind:
        case "list":
            return _all_ok(node.parts)
        case "operator":
            return node.op in _LIST_OPERATORS  # a trailing ``&`` backgrounds: refused
        case "pipeline":
            return _all_ok(node.parts)
        case "pipe":
            return True
        case "reservedword":
            return node.word in ("!", "(", ")", "{", "}")
        case "compound":
            # Subshell ``( ... )`` or group ``{ ...; }``; if/for/while arrive as nested kinds
            # that this function does not accept.
            redirects = getattr(node, "redirects", None) or []
            return _all_ok(node.list) and _all_ok(redirects)
        case "command":
            return _command_ok(node)
        case "redirect":
            return _redirect_ok(node)
        case _:
            return False


def _command_ok(node: Node) -> bool:
    words: list[str] = []
    for part in node.parts:
        match part.kind:
            case "word":
                if not _word_ok(part):
                    return False
                words.append(part.word)
            case "redirect":
                if not _redirect_ok(part):
                    return False
            case _:  # assignment prefixes and anything else
                return False
    if not words:
        return False
    name_node = next(p for p in node.parts if p.kind == "word")
    if getattr(name_node, "parts", None):  # the program name itself must be literal
        return False
    check = _PROGRAMS.get(words[0])
    return check is not None and check(words[1:])


def _word_ok(word: Node) -> bool:
    """A word whose expansions cannot run anything: plain parameters and ``~`` only."""
    for part in getattr(word, "parts", None) or []:
        match part.kind:
            case "tilde":
                continue
            case "parameter":
                value = getattr(part, "value", None)
                if not isinstance(value, str) or not _PLAIN_PARAMETER.fullmatch(value):
                    return False
            case _:  # command/process substitution, anything unknown
                return False
    return True


def _redirect_ok(node: Node) -> bool:
    target = node.output
    if node.type in _READ_REDIRECTS:
        heredoc = getattr(node, "heredoc", None)
        if heredoc is not None and any(c in heredoc.value for c in "$`"):
            return False  # an unquoted here-document expands substitutions
        return not hasattr(target, "kind") or _word_ok(target)
    if node.type in _WRITE_REDIRECTS:
        if isinstance(target, int) or target == "-":
            return True  # fd duplication or closing: ``2>&1``, ``>&2``, ``>&-``
        return hasattr(target, "kind") and target.kind == "word" and target.word == "/dev/null"
    return False  # ``<>`` opens for writing; anything else is unknown
