"""Agent kinds for the ``task`` tool: the built-in ones and the custom agents users keep.

Custom agents are Markdown files with YAML frontmatter, in Claude Code's layout plus Tiller's:
the user's ``~/.config/tiller/agents/*.md`` and ``~/.claude/agents/*.md`` (the user dirs of
``settings_files``), and the workspace's ``.tiller/agents/*.md`` and ``.claude/agents/*.md``.
Within the user's, or within the workspace's, the first file to define a name wins; a built-in
kind is never replaced, and a repository's agent never replaces the user's own of the same
name (``shadowing.py``): it is ``project:NAME``, and the user is told so. Each kind keeps its
``scope`` (built-in, user, project), so a repository's grants can be told apart. The
workspace's files are read beneath its roots (``confined_material.py``): one that is a symlink
out (or in a folder that is) is not read, and named in a problem.

Frontmatter: ``name`` and ``description`` (required), ``tools`` (a comma list or a YAML list,
in Claude Code's names or Tiller's; omitted: the parent's tools), ``model`` (``inherit``,
``sonnet``, ``opus``, ``haiku`` or a model id; omitted: inherit). The body is added to the
child's system prompt. A broken file is named in a problem and hides no other.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Literal

from tiller.extend import frontmatter
from tiller.extend.confined_material import Confined, Refused
from tiller.extend.settings_files import claude_user_dir, tiller_user_dir
from tiller.extend.shadowing import merge, read_where, shown_user_path
from tiller.jsontypes import JSON
from tiller.model.aliases import model_named
from tiller.workspace.roots import WorkspaceRoots

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
    "Skill": "skill",
}
READ_ONLY_TOOLS = ("read_file", "list_files", "grep", "bash", "skill")
Scope = Literal["built-in", "user", "project"]

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
    scope: Scope = "built-in"  # where it came from: Tiller, the user's own, the repository's

    def to_json(self) -> JSON:
        return {
            "name": self.name,
            "description": self.description,
            "tools": None if self.tools is None else list(self.tools),
            "model": self.model,
            "prompt": self.prompt,
            "readOnly": self.read_only,
            "source": self.source,
            "scope": self.scope,
        }

    @staticmethod
    def from_json(raw: JSON) -> AgentKind:
        tools = raw.get("tools")
        model = raw.get("model")
        source = str(raw.get("source", "built-in"))
        return AgentKind(
            name=str(raw["name"]),
            description=str(raw["description"]),
            tools=None if tools is None else tuple(str(t) for t in tools),
            model=None if model is None else str(model),
            prompt=str(raw.get("prompt", "")),
            read_only=bool(raw.get("readOnly", False)),
            source=source,
            scope=_scope(raw.get("scope"), source),
        )


def _scope(value: object, source: str) -> Scope:
    """A stored kind's scope; one stored before kinds had one is a repository's (the safe
    side: its grants then wait for the folder's trust), but for the built-in ones."""
    match value:
        case "built-in" | "user" | "project":
            return value
        case _:
            return "built-in" if source == "built-in" else "project"


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
    notices: tuple[str, ...] = ()  # a repository's agent renamed: the user's has its name

    def get(self, name: str) -> AgentKind | None:
        return next((k for k in self.kinds if k.name == name), None)

    def to_json(self) -> str:
        return json.dumps([k.to_json() for k in self.kinds])

    @staticmethod
    def from_json(text: str) -> Agents:
        return Agents(tuple(AgentKind.from_json(raw) for raw in json.loads(text)))

    def untrusted(self) -> tuple[Agents, tuple[str, ...]]:
        """The kinds as an untrusted folder may offer them: a repository's agent keeps its
        prompt (instruction text) but its tool list grants nothing, so it only reads, as an
        explorer does (its commands sandboxed, plan mode's gate on the rest). Returns the
        names narrowed."""
        narrowed = tuple(k.name for k in self.kinds if k.scope == "project" and not k.read_only)
        kinds = tuple(_reader(k) if k.scope == "project" else k for k in self.kinds)
        return replace(self, kinds=kinds), narrowed


def _reader(kind: AgentKind) -> AgentKind:
    tools = tuple(t for t in (kind.tools or READ_ONLY_TOOLS) if t in READ_ONLY_TOOLS)
    return replace(kind, tools=tools or READ_ONLY_TOOLS, read_only=True)


def agent_dirs(
    workspace: Path, env: Mapping[str, str] | None = None
) -> list[tuple[Literal["user", "project"], Path]]:
    """Where custom agents are looked for; within a scope, the first found wins."""
    return [
        ("user", tiller_user_dir(env) / "agents"),
        ("user", claude_user_dir(env) / "agents"),
        ("project", workspace / ".tiller" / "agents"),
        ("project", workspace / ".claude" / "agents"),
    ]


def load_agents(where: Path | WorkspaceRoots, env: Mapping[str, str] | None = None) -> Agents:
    """The built-in kinds, then the user's agents, then the repository's (read as they are
    now; the workspace's beneath its roots)."""
    confined = Confined.of(where)
    found: dict[str, dict[str, AgentKind]] = {"user": {}, "project": {}}
    problems: list[AgentProblem] = []
    for scope, folder, within in read_where(agent_dirs(confined.primary, env), confined):
        for path in _agent_files(folder, within, problems):
            kind = read_agent_file(path, scope, within)
            if isinstance(kind, AgentProblem):
                problems.append(kind)
            elif kind is not None and not any(k.name == kind.name for k in BUILT_IN):
                found[scope].setdefault(kind.name, kind)  # first found wins
    merged, shadowed = merge(found["user"], found["project"], lambda k, new: replace(k, name=new))
    notices = tuple(
        f"Agent {s.was} is yours ({shown_user_path(Path(found['user'][s.was].source), env)}); "
        f"the repository's is {s.name}"
        for s in shadowed
    )
    return Agents((*BUILT_IN, *merged.values()), tuple(problems), notices)


def _agent_files(
    folder: Path, confined: Confined | None, problems: list[AgentProblem]
) -> list[Path]:
    """The ``*.md`` files of ``folder``, sorted; beneath the workspace's roots when
    ``confined`` (one that is a symlink out is a problem)."""
    if confined is None:
        try:
            return sorted(p for p in folder.glob("*.md") if p.is_file())
        except OSError:
            return []
    names = confined.names(folder)
    if isinstance(names, Refused):
        problems.append(AgentProblem(Path(names.shown), names.why))
        return []
    found = []
    for name in names or []:
        if not name.endswith(".md") or name.startswith("."):
            continue
        kind = confined.kind(folder / name)
        if isinstance(kind, Refused):
            problems.append(AgentProblem(Path(kind.shown), kind.why))
        elif kind == "file":
            found.append(folder / name)
    return found


def read_agent_file(
    path: Path, scope: Literal["user", "project"] = "project", confined: Confined | None = None
) -> AgentKind | AgentProblem | None:
    """The agent ``path`` defines, or what is wrong with it (None: the file is gone); a
    workspace file is read beneath the roots when ``confined``."""
    if confined is None:
        try:
            with path.open("rb") as f:
                raw = f.read(MAX_AGENT_FILE_BYTES + 1)
        except OSError as err:
            return AgentProblem(path, f"cannot be read ({err.strerror or err})")
    else:
        data = confined.read(path, MAX_AGENT_FILE_BYTES + 1)
        if isinstance(data, Refused):
            return AgentProblem(Path(data.shown), data.why)
        if data is None:
            return None
        raw = data
    if len(raw) > MAX_AGENT_FILE_BYTES:
        return AgentProblem(path, f"larger than {MAX_AGENT_FILE_BYTES} bytes")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        return AgentProblem(path, "not UTF-8")
    return parse_agent(text, str(path), path, scope)


def parse_agent(
    text: str,
    source: str,
    path: Path | None = None,
    scope: Literal["user", "project"] = "project",
) -> AgentKind | AgentProblem:
    """One agent file's text as a kind (of ``scope``), or what is wrong with it."""
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
        model=model_named(model),
        prompt=body.strip(),
        read_only=tools is not None and set(tools) <= set(READ_ONLY_TOOLS),
        source=source,
        scope=scope,
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
