"""Agent kinds for the ``task`` tool: the built-in ones and the custom agents users keep.

Custom agents are Markdown files with YAML frontmatter, in Claude Code's layout plus Tiller's:
``.tiller/agents/*.md`` and ``.claude/agents/*.md`` in the workspace, then
``~/.config/tiller/agents/*.md`` and ``~/.claude/agents/*.md`` (the user dirs of
``settings_files``). The first file to define a name wins, workspace before user (Claude Code
loads project agents before user agents); a built-in kind is never replaced.

Frontmatter: ``name`` and ``description`` (required), ``tools`` (a comma list or a YAML list,
in Claude Code's names or Tiller's; omitted: the parent's tools), ``model`` (``inherit``,
``sonnet``, ``opus``, ``haiku`` or a model id; omitted: inherit). The body is added to the
child's system prompt. A broken file is named in a problem and hides no other.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tiller.extend import frontmatter
from tiller.extend.settings_files import claude_user_dir, tiller_user_dir
from tiller.jsontypes import JSON

MAX_AGENT_FILE_BYTES = 256 * 1024
NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")

# Claude Code's tool names -> Tiller's.
CLAUDE_TOOL_NAMES: Mapping[str, str] = {
    "Bash": "bash",
    "Read": "read_file",
    "Edit": "edit_file",
    "MultiEdit": "edit_file",
    "Write": "write_file",
    "Grep": "grep",
    "Glob": "list_files",
    "LS": "list_files",
    "TodoWrite": "todo_write",
}
# Model aliases -> ids (the catalog's current models of each family).
MODEL_ALIASES: Mapping[str, str] = {
    "sonnet": "claude-sonnet-5-5",
    "opus": "claude-opus-5-5",
    "haiku": "claude-haiku-5-5",
}
READ_ONLY_TOOLS = ("read_file", "list_files", "grep", "bash")

EXPLORE_PROMPT = (
    "You are an explorer agent: a child session started by another agent to find something "
    "out. You can only read: files, searches, and commands that provably only read (they run "
    "in a read-only sandbox; anything else is denied). Work until you can answer, then end "
    "with a short, complete report: what you found, with file paths and line numbers. Your "
    "final message is all the other agent sees."
)
GENERAL_PROMPT = (
    "You are a general agent: a child session started by another agent to do one job. You "
    "have the other agent's tools and permissions. Do the job, then end with a short report "
    "of what you did and what you found. Your final message is all the other agent sees."
)


@dataclass(frozen=True)
class AgentKind:
    """One kind of child the ``task`` tool can start."""

    name: str
    description: str
    tools: tuple[str, ...] | None  # Tiller tool names; None: every tool of the parent
    model: str | None  # None: the parent's model
    prompt: str  # added to the child's system prompt
    read_only: bool = False  # only reads: its task calls run concurrently
    source: str = "built-in"

    def to_json(self) -> JSON:
        return {
            "name": self.name,
            "description": self.description,
            "tools": None if self.tools is None else list(self.tools),
            "model": self.model,
            "prompt": self.prompt,
            "readOnly": self.read_only,
            "source": self.source,
        }

    @staticmethod
    def from_json(raw: JSON) -> AgentKind:
        tools = raw.get("tools")
        model = raw.get("model")
        return AgentKind(
            name=str(raw["name"]),
            description=str(raw["description"]),
            tools=None if tools is None else tuple(str(t) for t in tools),
            model=None if model is None else str(model),
            prompt=str(raw.get("prompt", "")),
            read_only=bool(raw.get("readOnly", False)),
            source=str(raw.get("source", "built-in")),
        )


EXPLORE = AgentKind(
    "explore",
    "Read-only explorer: searches and reads the workspace and runs read-only commands "
    "(sandboxed) to answer a question. Several run at the same time.",
    READ_ONLY_TOOLS,
    None,
    EXPLORE_PROMPT,
    read_only=True,
)
GENERAL = AgentKind(
    "general-purpose",
    "General agent with your tools and permissions, for a self-contained job (it may edit "
    "files and run commands, asking the user as you would). Runs alone.",
    None,
    None,
    GENERAL_PROMPT,
)
BUILT_IN: tuple[AgentKind, ...] = (EXPLORE, GENERAL)


@dataclass(frozen=True)
class AgentProblem:
    path: Path
    message: str

    def __str__(self) -> str:
        return f"{self.path}: {self.message}"


@dataclass(frozen=True)
class Agents:
    """The kinds a session offers, and what was wrong with the files that offered none."""

    kinds: tuple[AgentKind, ...]
    problems: tuple[AgentProblem, ...] = ()

    def get(self, name: str) -> AgentKind | None:
        return next((k for k in self.kinds if k.name == name), None)

    def to_json(self) -> str:
        return json.dumps([k.to_json() for k in self.kinds])

    @staticmethod
    def from_json(text: str) -> Agents:
        return Agents(tuple(AgentKind.from_json(raw) for raw in json.loads(text)))


def agent_dirs(workspace: Path, env: Mapping[str, str] | None = None) -> list[Path]:
    """Where custom agents are looked for, first found wins."""
    return [
        workspace / ".tiller" / "agents",
        workspace / ".claude" / "agents",
        tiller_user_dir(env) / "agents",
        claude_user_dir(env) / "agents",
    ]


def load_agents(workspace: Path, env: Mapping[str, str] | None = None) -> Agents:
    """The built-in kinds, then every custom agent found (read as they are now)."""
    kinds = list(BUILT_IN)
    problems: list[AgentProblem] = []
    for folder in agent_dirs(workspace, env):
        try:
            files = sorted(p for p in folder.glob("*.md") if p.is_file())
        except OSError:
            continue
        for path in files:
            found = read_agent_file(path)
            if isinstance(found, AgentProblem):
                problems.append(found)
            elif any(k.name == found.name for k in kinds):
                continue  # first found wins (built-ins first)
            else:
                kinds.append(found)
    return Agents(tuple(kinds), tuple(problems))


def read_agent_file(path: Path) -> AgentKind | AgentProblem:
    try:
        with path.open("rb") as f:
            raw = f.read(MAX_AGENT_FILE_BYTES + 1)
    except OSError as err:
        return AgentProblem(path, f"cannot be read ({err.strerror or err})")
    if len(raw) > MAX_AGENT_FILE_BYTES:
        return AgentProblem(path, f"larger than {MAX_AGENT_FILE_BYTES} bytes")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        return AgentProblem(path, "not UTF-8")
    return parse_agent(text, str(path), path)


def parse_agent(text: str, source: str, path: Path | None = None) -> AgentKind | AgentProblem:
    """One agent file's text as a kind, or what is wrong with it."""
    where = path or Path(source)
    if not text.removeprefix("\ufeff").startswith("---"):
        return AgentProblem(where, "no YAML frontmatter (a first line '---', then a closing '---')")
    document = frontmatter.parse(text)
    if document.problem is not None:
        return AgentProblem(where, document.problem)
    data, body = document.meta, document.body
    name, description = data.get("name"), data.get("description")
    if not isinstance(name, str) or not NAME.match(name):
        return AgentProblem(where, "'name' must be a word of letters, digits, '-', '_' or '.'")
    if not isinstance(description, str) or not description.strip():
        return AgentProblem(where, "'description' must be a non-empty string")
    tools = _tools(data.get("tools"))
    if isinstance(tools, str):
        return AgentProblem(where, tools)
    model = data.get("model")
    if model is not None and not isinstance(model, str):
        return AgentProblem(where, "'model' must be a string (inherit, sonnet, opus, haiku, an id)")
    return AgentKind(
        name=name,
        description=" ".join(description.split()),
        tools=tools,
        model=_model(model),
        prompt=body.strip(),
        read_only=tools is not None and set(tools) <= set(READ_ONLY_TOOLS),
        source=source,
    )


def _tools(value: Any) -> tuple[str, ...] | str | None:
    """Tiller tool names (Claude Code's mapped), None when omitted, or a problem."""
    if value is None:
        return None
    items: Sequence[Any]
    if isinstance(value, str):
        items = [v.strip() for v in value.split(",") if v.strip()]
    elif isinstance(value, list):
        items = value
    else:
        return "'tools' must be a comma list or a list of tool names"
    names: list[str] = []
    for item in items:
        if not isinstance(item, str):
            return "'tools' must name tools with strings"
        name = CLAUDE_TOOL_NAMES.get(item.strip(), item.strip())
        if name not in names:
            names.append(name)
    return tuple(names)


def _model(value: str | None) -> str | None:
    if value is None or value.strip() in ("", "inherit"):
        return None
    return MODEL_ALIASES.get(value.strip(), value.strip())
