"""Custom slash commands: markdown files users keep for Claude Code and Tiller.

Where: the user's ``$CLAUDE_CONFIG_DIR`` (else ``~/.claude``) ``/commands`` and Tiller's user
dir ``/commands``, then the workspace's ``.claude/commands`` and ``.tiller/commands`` (within
the user's, or within the workspace's, a later place wins a name clash). ``review.md`` is
``/review``; a subfolder is a namespace: ``frontend/component.md`` is ``/frontend:component``.
The frontmatter may give ``description``, ``argument-hint``, ``allowed-tools`` and ``model``
(an id, or Claude Code's alias ``sonnet``, ``opus``, ``haiku``, mapped as an agent's is by
``model.aliases``; nothing or ``inherit``: the session's); the body is the prompt, with
``$ARGUMENTS`` (everything after the name) and ``$1`` … ``$9`` (its words) substituted.

A repository's command never shadows the user's own (``shadowing.py``): the user's keeps the
name, the repository's is ``/project:NAME``, and the user is told so. The workspace's files are
read beneath its roots (``confined_material.py``): one that is a symlink out, or sits in a
folder that is, is not read, and a notice says so.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path

from tiller.extend.confined_material import Confined, Refused
from tiller.extend.frontmatter import parse
from tiller.extend.settings_files import claude_user_dir, tiller_user_dir
from tiller.extend.shadowing import Scope, merge, read_where, shown_user_path
from tiller.model.aliases import model_named
from tiller.workspace.roots import WorkspaceRoots

MAX_COMMAND_BYTES = 256_000
MAX_COMMANDS = 500
MAX_DEPTH = 8  # subfolders of a commands folder (namespaces), links inside followed
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.\-]*(:[A-Za-z0-9][A-Za-z0-9_.\-]*)*")


@dataclass(frozen=True)
class CustomCommand:
    name: str  # without the slash
    description: str
    argument_hint: str | None
    allowed_tools: tuple[str, ...]
    model: str | None
    body: str
    path: Path
    scope: Scope  # where it came from: the user's own, or the repository's
    renamed_from: str | None = None  # a repository's command the user's own shadows

    @property
    def source(self) -> str:
        return f"{self.scope}: {self.path}"

    def expand(self, arguments: str) -> str:
        """The prompt: ``$ARGUMENTS`` and ``$1``…``$9`` substituted (arguments appended
        when the body names neither, as Claude Code does)."""
        try:
            words = shlex.split(arguments)
        except ValueError:
            words = arguments.split()
        uses = "$ARGUMENTS" in self.body or re.search(r"\$[1-9]", self.body) is not None
        text = self.body.replace("$ARGUMENTS", arguments)
        text = re.sub(
            r"\$([1-9])", lambda m: words[int(m[1]) - 1] if int(m[1]) <= len(words) else "", text
        )
        if not uses and arguments.strip():
            text = f"{text.rstrip()}\n\nARGUMENTS: {arguments}"
        return text.strip()


def command_dirs(workspace: Path, env: Mapping[str, str] | None = None) -> list[tuple[Scope, Path]]:
    """Where commands are, lowest precedence first within each scope."""
    return [
        ("user", claude_user_dir(env) / "commands"),
        ("user", tiller_user_dir(env) / "commands"),
        ("project", workspace / ".claude" / "commands"),
        ("project", workspace / ".tiller" / "commands"),
    ]


def _tools(value: object) -> tuple[str, ...]:
    """``allowed-tools``: a list, or a comma-separated string (``Bash(git add:*), Read``)."""
    if isinstance(value, list):
        return tuple(str(v).strip() for v in value if str(v).strip())
    if isinstance(value, str):
        return tuple(t.strip() for t in re.split(r",(?![^()]*\))", value) if t.strip())
    return ()


def read_command(
    path: Path, name: str, scope: Scope, confined: Confined | None = None
) -> tuple[CustomCommand | None, str | None]:
    """The command in ``path`` (read beneath the workspace's roots when ``confined``), and a
    problem to tell."""
    if confined is None:
        try:
            data: bytes | Refused | None = path.read_bytes()[:MAX_COMMAND_BYTES]
        except OSError as err:
            return None, f"{path}: cannot be read ({err.strerror or err})"
    else:
        data = confined.read(path, MAX_COMMAND_BYTES)
    if isinstance(data, Refused):
        return None, data.notice
    if data is None:
        return None, None
    doc = parse(data.decode("utf-8", errors="replace"))
    problem = f"{path}: {doc.problem}" if doc.problem else None
    first_line = next((ln.strip() for ln in doc.body.splitlines() if ln.strip()), "")
    description = doc.text("description") or first_line[:100] or f"/{name}"
    command = CustomCommand(
        name=name,
        description=description,
        argument_hint=doc.text("argument-hint"),
        allowed_tools=_tools(doc.meta.get("allowed-tools")),
        model=model_named(doc.text("model")),
        body=doc.body,
        path=path,
        scope=scope,
    )
    return command, problem


def read_commands(
    where: Path | WorkspaceRoots, env: Mapping[str, str] | None = None
) -> tuple[dict[str, CustomCommand], list[str]]:
    """Every custom command by name, and what to tell the user (problems, files not read, a
    repository's command renamed because the user's has its name)."""
    confined = Confined.of(where)
    found: dict[Scope, dict[str, CustomCommand]] = {"user": {}, "project": {}}
    problems: list[str] = []
    for scope, folder, within in read_where(command_dirs(confined.primary, env), confined):
        files = _files(folder, within, problems)
        for path in files[:MAX_COMMANDS]:
            parts = path.relative_to(folder).with_suffix("").parts
            name = ":".join(parts)
            if not _NAME.fullmatch(name):
                problems.append(f"{path}: not a command name (letters, digits, . _ -)")
                continue
            command, problem = read_command(
                path, name, scope, None if scope == "user" else confined
            )
            if problem:
                problems.append(problem)
            if command is not None:
                found[scope][name] = command
    merged, shadowed = merge(
        found["user"], found["project"], lambda c, new: replace(c, name=new, renamed_from=c.name)
    )
    for s in shadowed:
        mine = shown_user_path(found["user"][s.was].path, env)
        own = "" if s.name == f"project:{s.was}" else f" (/project:{s.was} names another file)"
        problems.append(f"/{s.was} is yours ({mine}); the repository's is /{s.name}{own}")
    return merged, problems


def _files(folder: Path, confined: Confined | None, problems: list[str]) -> list[Path]:
    """The ``.md`` files under ``folder`` (subfolders too), sorted; beneath the workspace's
    roots when ``confined`` (a folder that is a symlink out is named in ``problems``)."""
    if confined is None:
        return sorted(folder.rglob("*.md")) if folder.is_dir() else []
    found: list[Path] = []
    pending = [(folder, 0)]
    while pending and len(found) <= MAX_COMMANDS:
        here, depth = pending.pop()
        names = confined.names(here)
        if isinstance(names, Refused):
            problems.append(names.notice)
            continue
        for name in names or []:
            path = here / name
            if name.startswith("."):
                continue
            kind = confined.kind(path)
            if isinstance(kind, Refused):
                problems.append(kind.notice)
            elif kind == "dir" and depth < MAX_DEPTH:
                pending.append((path, depth + 1))
            elif kind == "file" and name.endswith(".md"):
                found.append(path)
    return sorted(found)
