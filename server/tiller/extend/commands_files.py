"""Custom slash commands: markdown files users keep for Claude Code and Tiller.

Where (a later place wins a name clash): ``$CLAUDE_CONFIG_DIR`` (else ``~/.claude``)
``/commands``, Tiller's user dir ``/commands``, then the workspace's ``.claude/commands`` and
``.tiller/commands``. ``review.md`` is ``/review``; a subfolder is a namespace:
``frontend/component.md`` is ``/frontend:component``. The frontmatter may give
``description``, ``argument-hint``, ``allowed-tools`` and ``model``; the body is the prompt,
with ``$ARGUMENTS`` (everything after the name) and ``$1`` … ``$9`` (its words) substituted.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from tiller.extend.frontmatter import parse
from tiller.extend.settings_files import claude_user_dir, tiller_user_dir

MAX_COMMAND_BYTES = 256_000
MAX_COMMANDS = 500
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
    scope: str  # "user" or "project"

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


def command_dirs(workspace: Path, env: Mapping[str, str] | None = None) -> list[tuple[str, Path]]:
    """Where commands are, lowest precedence first."""
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


def read_command(path: Path, name: str, scope: str) -> tuple[CustomCommand | None, str | None]:
    try:
        raw = path.read_bytes()[:MAX_COMMAND_BYTES].decode("utf-8", errors="replace")
    except OSError as err:
        return None, f"{path}: cannot be read ({err.strerror or err})"
    doc = parse(raw)
    problem = f"{path}: {doc.problem}" if doc.problem else None
    first_line = next((ln.strip() for ln in doc.body.splitlines() if ln.strip()), "")
    description = doc.text("description") or first_line[:100] or f"/{name}"
    command = CustomCommand(
        name=name,
        description=description,
        argument_hint=doc.text("argument-hint"),
        allowed_tools=_tools(doc.meta.get("allowed-tools")),
        model=doc.text("model"),
        body=doc.body,
        path=path,
        scope=scope,
    )
    return command, problem


def read_commands(
    workspace: Path, env: Mapping[str, str] | None = None
) -> tuple[dict[str, CustomCommand], list[str]]:
    """Every custom command by name (a later place wins), and problems to tell."""
    found: dict[str, CustomCommand] = {}
    problems: list[str] = []
    for scope, folder in command_dirs(workspace, env):
        if not folder.is_dir():
            continue
        for path in sorted(folder.rglob("*.md"))[:MAX_COMMANDS]:
            parts = path.relative_to(folder).with_suffix("").parts
            name = ":".join(parts)
            if not _NAME.fullmatch(name):
                problems.append(f"{path}: not a command name (letters, digits, . _ -)")
                continue
            command, problem = read_command(path, name, scope)
            if problem:
                problems.append(problem)
            if command is not None:
                found[name] = command
    return found, problems
