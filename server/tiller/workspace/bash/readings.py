"""The readings of one simple command: the command lines it may amount to once bash and the
programs that run other programs have had their say. Permission rules match readings.

A reading is the command's words (``None`` for a word bash decides at run time: an
expansion, a glob, a brace expansion), from the first word on.

- ``deny_readings``: every command the segment may run, an over-approximation for deny and
  ask rules (fail closed). The words as written; leading assignments removed; the program's
  path reduced to its name (``/bin/rm`` is ``rm``); each program that runs another
  (``sudo``, ``env``, ``timeout``, ``xargs``, ``nice``, ``command``, ``exec``, ...) stripped
  with its options, taking every later word that is not an option as a possible start, since
  how many words an option takes is not always clear; ``find -exec`` bodies; git's global
  options removed (``git -C x push`` is ``git push``). A shell that reads its script from its
  input (``curl … | bash``) may run anything: its reading is a dynamic word alone.
- ``allow_readings``: the words as written, and with the wrappers Claude Code's docs name
  (``timeout``, ``time``, ``nice``, ``nohup``, ``stdbuf``) stripped when their options are
  read exactly. Nothing else is stripped for an allow rule: ``FOO=1 rm x`` stays unmatched
  by ``Bash(rm:*)``. Each comes with ``why_exact``: why only a rule naming the segment exactly
  may allow it.
- ``code_strings``: the strings a reading hands to a shell as code (``sh -c``, ``eval``,
  ``trap``, ``su -c``, ``watch``, ...), parsed as command lines of their own.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

from tiller.workspace.bash.readonly import uses_writing_option

__all__ = [
    "PROGRAM_VARIABLES",
    "PROMPT_VARIABLES",
    "RUNNERS",
    "SHELLS",
    "Reading",
    "allow_readings",
    "code_strings",
    "deny_readings",
    "program_name",
    "strip_assignments",
    "variable_code",
    "why_exact",
]

Value = str | None
Reading = tuple[Value, ...]

MAX_READINGS = 64  # more, and the segment may be any command (a reading of one dynamic word)
MAX_WRAPPER_DEPTH = 8

ASSIGNMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(\[[^\]]*\])?\+?=")

SHELLS = frozenset({"sh", "bash", "dash", "zsh", "ksh", "mksh", "ash", "yash", "posh", "rbash"})
# Programs and builtins that run a program named in their arguments: stripped with their
# options for deny and ask rules, and never matched by a prefix for an allow rule.
WRAPPERS = frozenset(
    {
        *("sudo", "doas", "env", "xargs", "nohup", "timeout", "time", "nice", "ionice"),
        *("command", "builtin", "exec", "coproc", "chroot", "setsid", "stdbuf", "unbuffer"),
        *("flock", "chrt", "taskset", "strace", "ltrace", "fakeroot", "runuser", "nsenter"),
        *("unshare", "systemd-run", "busybox", "watch", "parallel", "catchsegv", "valgrind"),
        *("prlimit", "numactl", "cgexec", "firejail", "proot", "sg", "su", "script", "tsp"),
    }
)
# Programs whose arguments are code: never matched by a prefix for an allow rule either.
RUNNERS = frozenset(
    {*WRAPPERS, *SHELLS, "eval", "source", ".", "trap", "fish", "csh", "tcsh", "newgrp"}
    | {"alias", "hash", "mapfile", "readarray", "enable"}
)
# Variables whose value is a command some program runs (git, ssh, less, editors ...).
PROGRAM_VARIABLES = frozenset(
    {"GIT_SSH_COMMAND", "GIT_SSH", "GIT_EXTERNAL_DIFF", "GIT_PAGER", "PAGER", "MANPAGER",
     "EDITOR", "VISUAL", "GIT_EDITOR", "GIT_SEQUENCE_EDITOR", "GIT_ASKPASS", "SSH_ASKPASS",
     "GIT_PROXY_COMMAND", "LESSOPEN", "LESSCLOSE", "BROWSER", "PROMPT_COMMAND"}
)  # fmt: skip
# Prompt strings: bash expands command substitutions in them (PS4 under ``set -x``).
PROMPT_VARIABLES = frozenset({"PS0", "PS1", "PS2", "PS3", "PS4"})
# git configuration keys whose value is a command git runs (through a shell).
_GIT_PROGRAM_KEYS = re.compile(
    r"alias\..*|core\.(pager|sshcommand|editor|fsmonitor|askpass|gitproxy)|pager\..*"
    r"|sequence\.editor|diff\..*|merge\..*|filter\..*|credential\..*|gpg\..*|difftool\..*"
    r"|mergetool\..*|uploadpack\..*|web\.browser|browser\..*|man\..*|ssh\..*|remote\..*",
    re.IGNORECASE,
)
_FIND_BODIES = ("-exec", "-execdir", "-ok", "-okdir")
_FIND_RUNS = (*_FIND_BODIES, "-delete", "-fprint", "-fls")
# git's global options that take the next word as their value, and those that take none.
_GIT_VALUED = frozenset(
    {"-C", "-c", "--git-dir", "--work-tree", "--namespace", "--config-env", "--super-prefix",
     "--exec-path", "--attr-source", "--list-cmds"}
)  # fmt: skip
_GIT_HARMLESS = frozenset({"--no-pager", "-P"})
_SAME = {".": "source", "source": "."}  # one builtin, two names
_DURATION = re.compile(r"\d+(\.\d*)?[smhd]?|\.\d+[smhd]?")
_NICENESS = re.compile(r"[+-]?\d+")


def program_name(word: str) -> str:
    """A program as a rule names it: ``/usr/bin/rm`` is ``rm``."""
    return word.rstrip("/").rsplit("/", 1)[-1] if "/" in word.rstrip("/") else word


def strip_assignments(words: Reading) -> Reading:
    """``words`` without the ``NAME=value`` words that lead them."""
    start = 0
    while start < len(words):
        word = words[start]
        if word is None or not ASSIGNMENT.match(word):
            break
        start += 1
    return words[start:]


# --- deny and ask: every command it may run ---------------------------------------------------


def deny_readings(words: Reading) -> tuple[Reading, ...]:
    """Every reading of a simple command for deny and ask rules, in a stable order, as
    written first."""
    found: dict[Reading, None] = {}

    def add(reading: Reading) -> None:
        if reading:
            found.setdefault(reading, None)

    def visit(reading: Reading, depth: int) -> None:
        if len(found) > MAX_READINGS or depth > MAX_WRAPPER_DEPTH:
            add((None,))  # too many ways to read it: it may be any command
            return
        add(reading)
        rest = strip_assignments(reading)
        if not rest:
            return
        add(rest)
        program = rest[0]
        if program is None:
            return  # a dynamic program matches every deny rule already
        name = program_name(program)
        tail = rest[1:]
        add((name, *tail))
        if name in _SAME:
            add((_SAME[name], *tail))
        if name in WRAPPERS:
            if name == "xargs" and any(_replaces(w) for w in tail):
                add((None,))  # xargs -I X X ...: the program may come from its input
            for k, word in enumerate(tail):
                if len(found) > MAX_READINGS:
                    add((None,))
                    break
                if word is None or not word.startswith(("-", "+")):
                    visit(tail[k:], depth + 1)
        elif name == "find":
            for body in _find_bodies(tail):
                if body and (body[0] is None or "{}" in body[0]):
                    add((None,))  # find -exec {} runs what it finds
                visit(body, depth + 1)
        elif name == "git":
            for reading_of_git in _git_readings(tail):
                add(("git", *reading_of_git))

    visit(words, 0)
    return tuple(found)


def _replaces(word: Value) -> bool:
    """An xargs option that substitutes its input into the command (``-I X``, ``-i``)."""
    return word is None or word.startswith(("-I", "-i", "--replace"))


def _find_bodies(args: Reading) -> Iterator[Reading]:
    """The commands ``find`` runs: what follows each ``-exec``/``-execdir``/``-ok``/``-okdir``
    up to its ``;`` or ``+``."""
    for k, word in enumerate(args):
        if word is None or word in _FIND_BODIES:
            end = next((j for j in range(k + 1, len(args)) if args[j] in (";", "+")), len(args))
            yield args[k + 1 : end]


def _git_readings(args: Reading) -> Iterator[Reading]:
    """git's arguments without its global options: every possible start of the subcommand
    when an option is not understood."""
    k = 0
    while k < len(args):
        word = args[k]
        if word is None or not word.startswith("-"):
            yield args[k:]
            return
        if word in _GIT_VALUED:
            k += 2
        elif (word.startswith("--") and "=" in word) or word.startswith(("-c", "-C")):
            k += 1  # --git-dir=x, -ccore.x=y, -Cdir
        elif word in _GIT_HARMLESS or word.startswith("--"):
            k += 1
        else:  # an option whose value is not known: every later word may start the command
            for j in range(k + 1, len(args)):
                candidate = args[j]
                if candidate is None or not candidate.startswith("-"):
                    yield args[j:]
            return


# --- allow: as written, and through the wrappers Claude Code's docs name -------------------------


@dataclass(frozen=True)
class AllowReading:
    """A reading an allow rule may match, and why only an exact rule may (None: any may)."""

    words: Reading
    exact_only: str | None


def allow_readings(words: Reading) -> tuple[AllowReading, ...]:
    """The segment as written and with ``timeout``, ``time``, ``nice``, ``nohup`` and
    ``stdbuf`` stripped, each read exactly (``timeout 30 npm test`` is also ``npm test``)."""
    readings = [AllowReading(words, why_exact(words))]
    current: Reading | None = words
    while current and current[0] is not None and current[0] in _DOCS_WRAPPERS:
        current = _DOCS_WRAPPERS[current[0]](current[1:])
        if not current:
            break
        readings.append(AllowReading(current, why_exact(current)))
    return tuple(readings)


def _after_options(
    args: Reading, valued: frozenset[str], flags: frozenset[str] = frozenset()
) -> Reading | None:
    """The words after the options of a wrapper whose options are all known: ``valued`` ones
    take a value (``-s KILL``, ``-sKILL``, ``--signal=KILL``); None if anything else."""
    k = 0
    while k < len(args):
        word = args[k]
        if word is None:
            return None
        if word == "--":
            return args[k + 1 :]
        if not word.startswith("-") or word == "-":
            return args[k:]
        if word in flags:
            k += 1
        elif word in valued:
            if k + 1 >= len(args) or args[k + 1] is None:
                return None
            k += 2
        elif any(word.startswith(v + "=") for v in valued if v.startswith("--")) or any(
            word.startswith(v) and len(word) > 2 for v in valued if not v.startswith("--")
        ):
            k += 1
        else:
            return None
    return ()


def _timeout(args: Reading) -> Reading | None:
    rest = _after_options(
        args,
        frozenset({"-s", "--signal", "-k", "--kill-after"}),
        frozenset({"--preserve-status", "--foreground", "-v", "--verbose"}),
    )
    if not rest or rest[0] is None or not _DURATION.fullmatch(rest[0]):
        return None
    return rest[1:]


def _time(args: Reading) -> Reading | None:
    return args[1:] if args[:1] == ("-p",) else args


def _nice(args: Reading) -> Reading | None:
    k = 0
    while k < len(args):
        word = args[k]
        if word is None:
            return None
        if word in ("-n", "--adjustment"):
            if (
                k + 1 >= len(args)
                or args[k + 1] is None
                or not _NICENESS.fullmatch(str(args[k + 1]))
            ):
                return None
            k += 2
        elif (
            word.startswith("--adjustment=")
            or (word.startswith("-n") and _NICENESS.fullmatch(word[2:]))
            or (word.startswith("-") and word[1:].isdigit())
        ):
            k += 1
        elif word == "--":
            return args[k + 1 :]
        elif word.startswith("-"):
            return None
        else:
            return args[k:]
    return ()


def _nohup(args: Reading) -> Reading | None:
    return args[1:] if args[:1] == ("--",) else args


def _stdbuf(args: Reading) -> Reading | None:
    return _after_options(args, frozenset({"-i", "-o", "-e", "--input", "--output", "--error"}))


_DOCS_WRAPPERS = {
    "timeout": _timeout,
    "time": _time,
    "nice": _nice,
    "nohup": _nohup,
    "stdbuf": _stdbuf,
}


def why_exact(words: Reading) -> str | None:
    """Why only a rule naming this reading exactly may allow it: its program is decided at
    run time, runs another program or code, or is a reading program given an option that
    writes or runs (None: a prefix or wildcard rule may)."""
    rest = strip_assignments(words)
    if not rest:
        return None
    program = rest[0]
    if program is None:
        return "its program is decided at run time"
    name = program_name(program)
    args = rest[1:]
    if name in RUNNERS:
        return f"{name} runs another program"
    if name == "find" and any(w is None or w.startswith(_FIND_RUNS) for w in args):
        return "find runs a program or deletes"
    if name == "git":
        for word in args:
            if word is None or not word.startswith("-"):
                break
            if not (word in _GIT_HARMLESS or word == "-C" or word.startswith("-C")):
                return f"git {word} can name a program to run"
    if uses_writing_option((name, *args)):
        if any(w is None for w in args):
            return f"an expansion could be an option of {name} that writes or runs a program"
        return f"{name} is given an option that writes or runs a program"
    return None


# --- code given as strings --------------------------------------------------------------------


class _Input:
    """The script a shell reads from its input."""


_FROM_INPUT = _Input()
CodeString = str | None | _Input


def code_strings(reading: Reading) -> Iterator[CodeString]:
    """The strings this reading runs as shell code (None: one decided at run time, so the
    line cannot be read; ``FROM_INPUT``: a shell reading its script from its input)."""
    rest = strip_assignments(reading)
    if not rest or rest[0] is None:
        return
    name = program_name(rest[0])
    args = rest[1:]
    if name in SHELLS:
        script = _shell_script(args)
        if not isinstance(script, _NoScript):
            yield script
    elif name == "eval":
        body = args[1:] if args[:1] == ("--",) else args
        yield None if any(w is None for w in body) else " ".join(str(w) for w in body)
    elif name == "trap":
        body = args[1:] if args[:1] == ("--",) else args
        if body and body[0] != "-" and not (body[0] or "").startswith("-"):
            yield body[0]
    elif name in ("su", "runuser", "flock", "script", "sg"):
        yield from _command_option(args)
        if name == "sg":  # sg GROUP COMMAND
            operands = [w for w in args if w is None or not w.startswith("-")]
            yield from operands[1:2]
    elif name == "watch":
        starts = [k for k, w in enumerate(args) if w is None or not w.startswith("-")]
        for k in starts[:2]:  # the command, or the value of an option before it
            body = args[k:]
            yield None if any(w is None for w in body) else " ".join(str(w) for w in body)
    elif name == "parallel":
        for word in args:
            if word in (":::", "::::"):
                break
            if word is None or not word.startswith("-"):
                yield word
    elif name == "env":
        yield from _split_string(args)
    elif name == "alias":
        for word in args:
            if word is None:
                yield None
            elif "=" in word:
                yield word.partition("=")[2]
    elif name in ("mapfile", "readarray"):
        yield from _option_value(args, "-C")
    elif name == "hash" and any(w is None or w.startswith("-p") for w in args):
        yield None  # hash -p PATH NAME: NAME runs another program from now on
    elif name in (".", "source"):
        if args and (args[0] is None or args[0] in ("/dev/stdin", "-")):
            yield None  # a script from a substitution or the input: not shown
    elif name == "git":
        yield from _git_program_values(args)


def _option_value(args: Reading, option: str) -> Iterator[CodeString]:
    """The value of a short option (``-C CMD`` or ``-CCMD``)."""
    for k, word in enumerate(args):
        if word == option:
            yield args[k + 1] if k + 1 < len(args) else None
        elif word is not None and word.startswith(option) and len(word) > len(option):
            yield word[len(option) :]


def _git_program_values(args: Reading) -> Iterator[CodeString]:
    """The commands git's ``-c key=value`` options name (``alias.x=!cmd``, ``core.pager``,
    ``core.sshCommand``, ...): git runs them through a shell."""
    k = 0
    while k < len(args):
        word = args[k]
        if word is None or not word.startswith("-"):
            return
        setting: Value = ""
        if word == "-c":
            setting = args[k + 1] if k + 1 < len(args) else None
            k += 1
        elif word.startswith("-c"):
            setting = word[2:]
        elif word.startswith("--config-env"):
            setting = None  # a value taken from the environment: not shown
        k += 1
        if setting is None:
            yield None
            continue
        key, equals, value = setting.partition("=")
        if equals and _GIT_PROGRAM_KEYS.fullmatch(key):
            yield value.removeprefix("!")


def variable_code(word: str) -> CodeString:
    """The command a ``NAME=value`` word hands a program through a variable that names one
    (``GIT_SSH_COMMAND='cmd'``, ``PAGER=cmd``); "" when it names none."""
    name, equals, value = word.partition("=")
    name = name.removesuffix("+")
    if not equals or name not in PROGRAM_VARIABLES:
        return ""
    return value


def _command_option(args: Reading) -> Iterator[CodeString]:
    """The value of ``-c``/``--command`` (``-lc CMD``, ``--command=CMD``)."""
    for k, word in enumerate(args):
        if word is None:
            continue
        if word.startswith("--command="):
            yield word.removeprefix("--command=")
        elif word == "--command" or (
            word.startswith("-") and not word.startswith("--") and "c" in word[1:]
        ):
            yield args[k + 1] if k + 1 < len(args) else None


def _split_string(args: Reading) -> Iterator[CodeString]:
    """``env -S STRING`` splits STRING into a command: read it as a command line."""
    for k, word in enumerate(args):
        if word is None:
            continue
        if word.startswith("--split-string="):
            yield word.removeprefix("--split-string=")
        elif word in ("-S", "--split-string"):
            yield args[k + 1] if k + 1 < len(args) else None
        elif word.startswith("-S"):
            yield word[2:]
        elif not word.startswith("-"):
            return


class _NoScript:
    """A shell given a script file, or nothing it runs."""


_NO_SCRIPT = _NoScript()


def _shell_script(args: Reading) -> CodeString | _NoScript:
    """What a shell runs: the string after ``-c`` (None: decided at run time), its input
    (``FROM_INPUT``: no operand), or a script file (``_NO_SCRIPT``)."""
    command = False
    k = 0
    while k < len(args):
        word = args[k]
        if word is None:
            return None  # an option or a script decided at run time
        if word == "--" or word == "-":
            k += 1
            break
        if word in ("-o", "+o", "-O", "+O", "--rcfile", "--init-file"):
            k += 2
            continue
        if word.startswith("--"):
            k += 1
            continue
        if word.startswith(("-", "+")) and len(word) > 1:
            command = command or (word[0] == "-" and "c" in word[1:])
            reads_input = "s" in word[1:]
            if reads_input and not command:
                return _FROM_INPUT
            k += 1
            continue
        break
    if k >= len(args):
        return None if command else _FROM_INPUT
    return args[k] if command else _NO_SCRIPT


FROM_INPUT = _FROM_INPUT
