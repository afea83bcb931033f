"""Whether a shell command line provably only reads inside the workspace: bash's ``read_only``.

The command is parsed with bashlex for its structure; every simple command in it (across
pipes, ``&&``, ``||``, ``;``, subshells and brace groups) must be a known read-only program
used without its writing options, with no redirection to a file other than ``/dev/null``.
Each word is then scanned again from its source text, the way bash will expand it, because
bashlex leaves expansions in place that bash performs:

- unquoted brace expansion (``{a,b}``, ``{1..3}``): any unquoted ``{`` or ``}`` is refused
  (``sort {-o,out.txt} a.txt`` is ``sort -o out.txt a.txt`` to bash);
- command, process and arithmetic substitution, ``$'...'``, ``${...}`` beyond a plain name,
  ``~user``, and a tilde after ``=`` or ``:`` are refused;
- a parameter (``$X``) is allowed only in the arguments of programs that print (echo,
  printf): elsewhere it could expand to an option (``-o``) or a path outside the workspace;
- globs (``*`` and ``?`` only; ``[`` is refused) are expanded here, within a budget, as
  bash would expand them: a glob in option position or one that expands to an option-like
  name is refused, and the expanded names are what the option checks and path checks see.

git is read-only only where the repository it would use lies inside the workspace and its
configuration names no program (``git_config.py``): fsmonitor, filters, textconv, an external
diff or a pager would run code the repository chose.

Paths given to programs that read files must resolve (``..``, absolute paths, ``~`` and
symlinks followed) inside the workspace, never under ``/proc``. A workspace of several roots
(``workspace/roots.py``) counts as one: relative paths resolve against the primary root, where
the command runs, and a path inside any root is inside; environment dumps (``env``,
``printenv``, ``set``, ``declare -p``, ``/proc/*/environ``) are never read-only. Anything
unknown, unparsable, or too long to judge cheaply is not read-only: a wrong "no" only costs
a confirmation, a wrong "yes" could write or leak.
"""

from __future__ import annotations

import fnmatch
import importlib
import os
import re
import threading
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tiller.workspace.bash.git_config import repository_is_inert

__all__ = [
    "MAX_COMMAND_BYTES",
    "git_repository_inert",
    "is_read_only_command",
    "uses_writing_option",
]

MAX_COMMAND_BYTES = 16 * 1024  # longer command lines are never read-only (decided in O(n))
GLOB_SCAN_BUDGET = 5_000  # directory entries a command's globs may look at
GLOB_MATCH_BUDGET = 500  # names a command's globs may expand to

_PARSER_LOCK = threading.Lock()

# bashlex nodes are untyped objects with a ``kind`` tag.
Node = Any
ArgsCheck = Callable[[Sequence[str]], bool]

_WRITE_REDIRECTS = frozenset({">", ">>", ">|", "&>", "&>>", ">&"})
_LIST_OPERATORS = frozenset({";", "&&", "||", "\n"})
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_PLAIN_PARAMETER = re.compile(r"#?([A-Za-z_][A-Za-z0-9_]*|[0-9]|[@*#?$!-])")
_SPECIAL_PARAMETERS = frozenset("0123456789@*#?$!-")
_ESCAPED = re.compile(r"\[([*?\[])\]")  # a glob character that stands for itself
_ACTIVE_GLOB = re.compile(r"[*?]")


class _Refused(Exception):
    """Raised anywhere below: the command is not provably read-only."""


# --- words, as bash expands them ---------------------------------------------------------------


@dataclass(frozen=True)
class Word:
    """One word after bash's quote removal, with what expansion it still undergoes.

    ``value`` keeps parameters as written (``$HOME``); ``pattern`` is an fnmatch pattern when
    the word has active (unquoted) glob characters, else None; ``tilde``: starts with ``~``
    that bash replaces with $HOME.
    """

    value: str
    pattern: str | None
    expands: bool
    tilde: bool


def _escape(char: str) -> str:
    return f"[{char}]" if char in "*?[" else char


def _parameter(raw: str, i: int) -> int:
    """Index just past the parameter expansion at ``raw[i] == '$'``; refuse unsafe ones."""
    nxt = raw[i + 1] if i + 1 < len(raw) else ""
    if nxt == "{":
        end = raw.find("}", i + 2)
        if end < 0 or not _PLAIN_PARAMETER.fullmatch(raw[i + 2 : end]):
            raise _Refused  # ${X:-$(cmd)}, ${X:=y}, ${!x}, ...
        return end + 1
    if nxt in _SPECIAL_PARAMETERS:
        return i + 2
    match = _NAME.match(raw, i + 1)
    if match:
        return match.end()
    if nxt in ("(", "[", "'", '"'):
        raise _Refused  # $( ) $(( )) $[ ] $' ' $" "
    return -1  # a lone ``$``: literal


def scan_word(raw: str) -> Word:
    """Quote removal and expansion facts for one word's source text; _Refused if unsafe."""
    if raw in ("[", "]"):  # the test command and its closing bracket
        return Word(raw, None, expands=False, tilde=False)
    value: list[str] = []
    pattern: list[str] = []
    globbing = expands = False
    tilde = raw.startswith("~")
    if tilde and not (len(raw) == 1 or raw[1] == "/"):
        raise _Refused  # ~user, ~+, ~-
    i, n = 0, len(raw)
    while i < n:
        c = raw[i]
        if c == "'":
            end = raw.find("'", i + 1)
            if end < 0:
                raise _Refused
            value.append(raw[i + 1 : end])
            pattern.extend(_escape(x) for x in raw[i + 1 : end])
            i = end + 1
        elif c == '"':
            i, quoted_expands = _double_quoted(raw, i + 1, value, pattern)
            expands = expands or quoted_expands
        elif c == "\\":
            if i + 1 >= n:
                raise _Refused
            value.append(raw[i + 1])
            pattern.append(_escape(raw[i + 1]))
            i += 2
        elif c == "$" and (end := _parameter(raw, i)) > 0:
            value.append(raw[i:end])
            pattern.append(raw[i:end])
            expands = True
            i = end
        elif c in "{}`[]()<>|;&\n":
            raise _Refused  # brace expansion, substitution, classes, anything odd
        elif c == "~" and i > 0 and raw[i - 1] in "=:":
            raise _Refused  # bash expands a tilde after = or : in assignment-like words
        elif c in "*?":
            value.append(c)
            pattern.append(c)
            globbing = True
            i += 1
        else:
            value.append(c)
            pattern.append(_escape(c))
            i += 1
    return Word("".join(value), "".join(pattern) if globbing else None, expands, tilde)


def _double_quoted(raw: str, i: int, value: list[str], pattern: list[str]) -> tuple[int, bool]:
    """The inside of a double-quoted part starting at ``i`` (after its ``"``), added to
    ``value`` and ``pattern``: the index after its closing quote, and whether it expands a
    parameter; _Refused for a backquote or a quote left open."""
    n, expands = len(raw), False
    while i < n and raw[i] != '"':
        d = raw[i]
        if d == "\\" and i + 1 < n and raw[i + 1] in '$`"\\\n':
            value.append(raw[i + 1])
            pattern.append(_escape(raw[i + 1]))
            i += 2
        elif d == "`":
            raise _Refused
        elif d == "$" and (end := _parameter(raw, i)) > 0:
            value.append(raw[i:end])
            pattern.append(raw[i:end])
            expands = True
            i = end
        else:
            value.append(d)
            pattern.append(_escape(d))
            i += 1
    if i >= n:
        raise _Refused
    return i + 1, expands


# --- the workspace: where paths must stay ----------------------------------------------------


class _Workspace:
    """Resolves paths the way the command will see them, and expands globs within a budget.
    ``root``: the primary root, where the command runs; ``others``: the workspace's other
    roots, inside like it."""

    def __init__(self, root: Path, others: Sequence[Path] = ()) -> None:
        self.root = os.path.realpath(root)
        self.roots = (self.root, *(os.path.realpath(p) for p in others))
        self.scanned = 0
        self.matched = 0

    def absolute(self, value: str, tilde: bool) -> str:
        if tilde:
            home = os.environ.get("HOME")
            if not home:
                raise _Refused
            return home + value[1:]
        return value if value.startswith("/") else os.path.join(self.root, value)

    def inside(self, value: str, tilde: bool = False) -> bool:
        if "environ" in value:
            return False
        resolved = os.path.realpath(self.absolute(value, tilde))
        if resolved.startswith("/proc/") or "environ" in resolved:
            return False
        return self.root_of(resolved) is not None

    def root_of(self, resolved: str) -> str | None:
        """The innermost root that holds the resolved path ``resolved``, if any."""
        holders = [
            r for r in self.roots if resolved == r or resolved.startswith(r.rstrip("/") + "/")
        ]
        return max(holders, key=len) if holders else None

    def expand(self, word: Word) -> list[str]:
        """The names bash gives a glob word (the word itself when nothing matches), a
        ``~/`` word's as absolute paths."""
        assert word.pattern is not None
        if word.expands or word.value.startswith("-"):
            raise _Refused  # a parameter inside a glob, or a glob in option position
        pattern = word.pattern
        if word.tilde:
            pattern = "".join(map(_escape, self.absolute("~", True))) + pattern[1:]
        found = ["/"] if pattern.startswith("/") else [""]
        for part in pattern.split("/"):
            if not part:
                continue
            if not _ACTIVE_GLOB.search(_ESCAPED.sub("", part)):
                found = [os.path.join(f, _ESCAPED.sub(r"\1", part)) for f in found]
            elif part.startswith("."):
                raise _Refused  # .* matches .. in some shells
            else:
                found = [os.path.join(f, n) for f in found for n in self._matches(f, part)]
        if pattern.endswith("/"):
            found = [f + "/" for f in found if os.path.isdir(self.absolute(f, False))]
        names = [f for f in found if os.path.lexists(self.absolute(f, False))]
        self.matched += len(names)
        if self.matched > GLOB_MATCH_BUDGET:
            raise _Refused
        if not names:
            return [self.absolute(word.value, True) if word.tilde else word.value]
        return sorted(names)

    def _matches(self, directory: str, part: str) -> list[str]:
        where = self.absolute(directory, False) if directory else self.root
        names: list[str] = []
        try:
            with os.scandir(where) as entries:
                for entry in entries:
                    self.scanned += 1
                    if self.scanned > GLOB_SCAN_BUDGET:
                        raise _Refused
                    if not entry.name.startswith(".") and fnmatch.fnmatchcase(entry.name, part):
                        names.append(entry.name)
        except OSError:
            return []
        return names


# --- programs and their writing options ------------------------------------------------------


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
            if _short_cluster_has(arg, letters) or (
                long_prefixes and arg.startswith(long_prefixes)
            ):
                return False
        return True

    return check


_FIND_WRITERS = ("-exec", "-execdir", "-ok", "-okdir", "-delete", "-fprint", "-fls")
_FIND_FOLLOWERS = ("-L", "-follow")


def _find_ok(args: Sequence[str]) -> bool:
    return not any(arg.startswith(_FIND_WRITERS) or arg in _FIND_FOLLOWERS for arg in args)


def _uniq_ok(args: Sequence[str]) -> bool:
    # ``uniq INPUT OUTPUT`` writes OUTPUT: allow at most one operand.
    operands = [a for a in args if not a.startswith("-") or a == "-"]
    return len(operands) <= 1 and _no_options("", ("--o",))(args)


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
    # ``--output=<file>`` (and its abbreviations) makes diff/log/show write a file;
    # ``--ext-diff`` and ``--textconv`` run programs named in a config file.
    return not any(arg.startswith(("--ou", "--ext", "--textc")) for arg in args)


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


def _git_directory(args: Sequence[str], root: str) -> str:
    """Where git starts looking for its repository: the workspace root, moved by ``-C``."""
    where = root
    rest = list(args)
    while rest and rest[0].startswith("-"):
        match rest:
            case ["-C", directory, *tail]:
                where = os.path.join(where, directory) if directory else where
                rest = tail
            case [_, *tail]:
                rest = tail
    return where


def _git_repository_inert(args: Sequence[str], workspace: _Workspace) -> bool:
    # The repository's config can name programs that even ``git status`` runs (fsmonitor,
    # filters, textconv, an external diff, a pager): only harmless configs are read-only.
    # Git started in another root (``git -C ../api status``) must find its repository there.
    directory = _git_directory(args, workspace.root)
    root = workspace.root_of(os.path.realpath(directory)) or workspace.root
    return repository_is_inert(directory, root, workspace.roots)


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


def _anywhere(_args: Sequence[str], _workspace: _Workspace) -> bool:
    return True


@dataclass(frozen=True)
class Program:
    """A read-only program: its option check; ``paths``: its operands name files it reads;
    ``prints``: it only prints its arguments, so parameters may appear in them;
    ``workspace_ok``: a last check of its arguments against the workspace's files."""

    args_ok: ArgsCheck = _any_args
    paths: bool = True
    prints: bool = False
    workspace_ok: Callable[[Sequence[str], _Workspace], bool] = _anywhere


def _no_variable_names(args: Sequence[str]) -> bool:
    # ``test -v NAME`` and ``printf -v NAME`` take a variable name, and bash evaluates an array
    # subscript in it as arithmetic, command substitutions included: ``test -v 'a[$(rm x)]'``
    # runs rm, quotes and all.
    return "-v" not in args


_PRINTERS = ("echo", "true", "false")
_NO_FILES = ("pwd", "sleep", "basename", "dirname", "which")
_READERS = (
    *("cat", "head", "tail", "wc", "cut", "tr", "nl", "cmp", "md5sum", "sha256sum"),
    *("stat", "df", "realpath"),
)

_PROGRAMS: dict[str, Program] = {
    **dict.fromkeys(_PRINTERS, Program(paths=False, prints=True)),
    **dict.fromkeys(_NO_FILES, Program(paths=False)),
    **dict.fromkeys(_READERS, Program()),
    "printf": Program(_no_variable_names, paths=False, prints=True),
    **dict.fromkeys(("test", "["), Program(_no_variable_names)),
    # -R / --dereference-recursive follow symlinks out of the workspace.
    **dict.fromkeys(("grep", "egrep", "fgrep"), Program(_no_options("R", ("--der",)))),
    "rg": Program(_no_options("L", ("--pre", "--hostname-bin", "--follow"))),
    "ls": Program(_no_options("L", ("--der",))),
    "du": Program(_no_options("L", ("--der",))),
    "diff": Program(_no_options("r", ("--r",))),
    "find": Program(_find_ok),
    "git": Program(_git_ok, workspace_ok=_git_repository_inert),
    "sort": Program(_no_options("oT", ("--o", "--c", "--t"))),
    "tree": Program(_no_options("olR", ("--o",))),
    "file": Program(_no_options("C", ("--c",))),
    "uniq": Program(_uniq_ok),
    "date": Program(_date_ok),
}


# --- the check ---------------------------------------------------------------------------------


def is_read_only_command(command: str, workspace: Path, others: Sequence[Path] = ()) -> bool:
    """True only if ``command``, run in ``workspace``, provably reads inside it or the
    workspace's other roots ``others`` and never writes."""
    if len(command) > MAX_COMMAND_BYTES or len(command.encode()) > MAX_COMMAND_BYTES:
        return False
    if not command.strip() or "\x00" in command:
        return False
    try:
        # bashlex builds its parser tables on import (~0.1 s): load it on first use. Its
        # parser object keeps state while parsing: one parse at a time (calls come from
        # worker threads, and several sessions may judge commands at once).
        with _PARSER_LOCK:
            trees = importlib.import_module("bashlex").parse(command)
        checker = _Checker(command, _Workspace(workspace, others))
        return bool(trees) and all(checker.node_ok(tree) for tree in trees)
    except _Refused:
        return False
    except Exception:  # bashlex raises many kinds (ParsingError, NotImplementedError, ...)
        return False


@dataclass
class _Checker:
    source: str
    workspace: _Workspace

    def word(self, node: Node) -> Word:
        start, end = node.pos
        return scan_word(self.source[start:end])

    def all_ok(self, nodes: Iterable[Node]) -> bool:
        return all(self.node_ok(node) for node in nodes)

    def node_ok(self, node: Node) -> bool:
        match node.kind:
            case "list":
                return self.all_ok(node.parts)
            case "operator":
                return node.op in _LIST_OPERATORS  # a trailing ``&`` backgrounds: refused
            case "pipeline":
                return self.all_ok(node.parts)
            case "pipe":
                return True
            case "reservedword":
                return node.word in ("!", "(", ")", "{", "}")
            case "compound":
                # Subshell ``( ... )`` or group ``{ ...; }``; if/for/while arrive as nested
                # kinds that this method does not accept.
                redirects = getattr(node, "redirects", None) or []
                return self.all_ok(node.list) and self.all_ok(redirects)
            case "command":
                return self.command_ok(node)
            case "redirect":
                return self.redirect_ok(node)
            case _:
                return False

    def command_ok(self, node: Node) -> bool:
        words: list[Word] = []
        for part in node.parts:
            match part.kind:
                case "word":
                    words.append(self.word(part))
                case "redirect":
                    if not self.redirect_ok(part):
                        return False
                case _:  # assignment prefixes and anything else
                    return False
        if not words:
            return False
        name = words[0]
        if name.expands or name.pattern is not None or name.tilde or "/" in name.value:
            return False  # the program itself must be a literal name from PATH
        program = _PROGRAMS.get(name.value)
        if program is None:
            return False
        args = self.arguments(words[1:], program)
        return (
            program.args_ok(args)
            and (not program.paths or self.paths_ok(args))
            and program.workspace_ok(args, self.workspace)
        )

    def arguments(self, words: Sequence[Word], program: Program) -> list[str]:
        """The argv bash will pass, globs expanded; refuse parameters where they could hurt."""
        args: list[str] = []
        for word in words:
            if word.expands and not program.prints:
                raise _Refused  # $X may be -o, --pre=rm, or a path outside the workspace
            if word.pattern is not None:
                names = self.workspace.expand(word)
                if any(n.startswith("-") for n in names):
                    raise _Refused
                if not all(self.workspace.inside(n) for n in names):  # ``~`` expanded
                    raise _Refused
                args.extend(names)
            elif word.tilde:
                if program.paths and not self.workspace.inside(word.value, tilde=True):
                    raise _Refused
                args.append(self.workspace.absolute(word.value, tilde=True))
            else:
                args.append(word.value)
        return args

    def paths_ok(self, args: Sequence[str]) -> bool:
        """Every operand, and every ``--opt=value``, names something inside the workspace."""
        options_end = False
        for arg in args:
            if options_end or not arg.startswith("-") or arg == "-":
                if arg != "-" and not self.workspace.inside(arg):
                    return False
            elif arg == "--":
                options_end = True
            elif "=" in arg:
                value = arg.split("=", 1)[1]
                if value and not self.workspace.inside(value):
                    return False
            elif "/" in arg or "environ" in arg:
                return False  # an attached value such as -f/etc/passwd
        return True

    def redirect_ok(self, node: Node) -> bool:
        target = node.output
        if node.type in ("<", "<<<"):
            if not hasattr(target, "kind") or target.kind != "word":
                return False
            word = self.word(target)
            if word.pattern is not None:
                return False
            if node.type == "<<<":
                return True  # a here-string: its text, not a file
            return not word.expands and self.workspace.inside(word.value, word.tilde)
        if node.type in ("<<", "<<-"):
            heredoc = getattr(node, "heredoc", None)
            # an unquoted here-document expands substitutions
            return heredoc is None or not any(c in heredoc.value for c in "$`")
        if node.type == "<&":
            return isinstance(target, int) or target == "-"
        if node.type in _WRITE_REDIRECTS:
            if isinstance(target, int) or target == "-":
                return True  # fd duplication or closing: ``2>&1``, ``>&2``, ``>&-``
            if not hasattr(target, "kind") or target.kind != "word":
                return False
            word = self.word(target)
            return word.pattern is None and not word.expands and word.value == "/dev/null"
        return False  # ``<>`` opens for writing; anything else is unknown


# --- what the permission rules ask of the classifier ------------------------------------------


# Programs whose refused options only follow symlinks while they read: never a write.
_FOLLOW_ONLY = frozenset({"ls", "du", "grep", "egrep", "fgrep", "diff"})


def uses_writing_option(argv: Sequence[str | None]) -> bool:
    """Whether ``argv`` runs a reading program the classifier knows (``argv[0]``, a bare name)
    with an option its read-only check refuses because it writes a file or runs a program
    (``git diff --output=F``, ``--ext-diff``, ``--textconv``, ``sort -o``, ``find -exec``,
    ``rg --pre``). For git, the subcommand's check (a subcommand the classifier does not know:
    False). ``None`` stands for a word bash decides at run time: it could be any option, so
    it counts as one wherever the program has such options. False for a program the
    classifier does not know, and for those whose refused options only follow symlinks
    (``grep -R``, ``ls -L``)."""
    name = argv[0] if argv else None
    program = _PROGRAMS.get(name) if name is not None else None
    if program is None or name in _FOLLOW_ONLY:
        return False
    args = list(argv[1:])
    if name == "git":
        while args and (args[0] is None or args[0].startswith("-")):
            match args:
                case ["--no-pager", *tail] | ["-C", str(), *tail]:
                    args = tail
                case _:
                    return True  # a global option the check refuses, or a word unknown yet
        sub = args[0] if args else None
        check = _GIT_SUBCOMMANDS.get(sub) if sub is not None else None
        if check is None:
            return False
        args = args[1:]
    else:
        check = program.args_ok
    if check is _any_args:
        return False
    known = [a for a in args if a is not None]
    return len(known) < len(args) or not check(known)


def git_repository_inert(args: Sequence[str], workspace: Path, others: Sequence[Path] = ()) -> bool:
    """Whether ``git ARGS`` run in ``workspace`` (``-C`` followed) finds only repositories
    inside the workspace (or its ``others`` roots) whose configuration names no program: the
    classifier's git check, for a git that runs because a permission rule allowed it."""
    return _git_repository_inert(args, _Workspace(workspace, others))
