"""Skills: folders with a ``SKILL.md`` that users keep for Claude Code and Tiller.

Where: the user's ``$CLAUDE_CONFIG_DIR`` (else ``~/.claude``) ``/skills/*/SKILL.md`` and
Tiller's user dir ``/skills/*/SKILL.md``, then the workspace's ``.claude/skills/*/SKILL.md``
and ``.tiller/skills/*/SKILL.md`` (within the user's, or within the workspace's, a later place
wins a name clash). The frontmatter's ``name`` (else the folder's name) and ``description``
are all the prefix carries; the model loads the body with the ``skill`` tool, with the
folder's path so it can read the files bundled there.

A repository's skill never replaces the user's own of the same name (``shadowing.py``): it is
``project:NAME``. The workspace's skills are read beneath its roots (``confined_material.py``),
their bodies too when the model loads them: a ``SKILL.md``, a skill's folder, the ``skills``
folder or ``.claude`` that is a symlink out is not read, and a notice says so.

Append-only: the list is written into the system prompt at a session's first turn (stored
with the session); a skill added, changed or removed later reaches the model as a message
before the next prompt (``skills_update``), never by changing the prefix.

A subagent whose kind has no ``skill`` tool (its ``tools`` list leaves it out) is not told of
skills it could not load: its prompt's section says so instead (``without_skills``), and no
update is sent to it.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from tiller.extend.confined_material import Confined, Refused
from tiller.extend.frontmatter import parse
from tiller.extend.settings_files import claude_user_dir, tiller_user_dir
from tiller.extend.shadowing import Scope, merge, read_where, shown_user_path
from tiller.model.history import Message
from tiller.workspace.roots import WorkspaceRoots

MAX_SKILL_BYTES = 512_000
MAX_SKILLS = 200
MAX_DESCRIPTION = 1024
SECTION = "\n\n# Skills\n"
INTRO = (
    "Skills are instructions for particular tasks. When a task matches a skill's description, "
    "load it with the skill tool (its name) and follow it.\n"
)
UPDATE = "The skills available changed. Skills now (load one with the skill tool):\n"
NO_SKILL_TOOL = f"{SECTION}This agent has no skill tool: skills are not available to it.\n"
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.:\-]*")


@dataclass(frozen=True)
class Skill:
    name: str
    description: str
    folder: Path
    scope: Scope  # where it came from: the user's own, or the repository's
    confined: Confined | None = None  # a workspace skill: read beneath these roots

    @property
    def path(self) -> Path:
        return self.folder / "SKILL.md"

    def body(self) -> str | Refused:
        """The instructions (read when the model loads the skill: a workspace skill beneath
        the roots again, since its file may have become a link since it was listed).
        Raises OSError when a user's skill cannot be read."""
        if self.confined is None:
            return _body(self.path.read_bytes()[:MAX_SKILL_BYTES])
        data = self.confined.read(self.path, MAX_SKILL_BYTES)
        if data is None:
            return Refused(self.confined.shown(self.path), "no longer exists")
        return data if isinstance(data, Refused) else _body(data)


def _body(data: bytes) -> str:
    return parse(data.decode("utf-8", errors="replace")).body


def skill_dirs(workspace: Path, env: Mapping[str, str] | None = None) -> list[tuple[Scope, Path]]:
    return [
        ("user", claude_user_dir(env) / "skills"),
        ("user", tiller_user_dir(env) / "skills"),
        ("project", workspace / ".claude" / "skills"),
        ("project", workspace / ".tiller" / "skills"),
    ]


def read_skills(
    where: Path | WorkspaceRoots, env: Mapping[str, str] | None = None
) -> tuple[dict[str, Skill], list[str]]:
    """Every skill by name, and what to tell the user (problems, files not read, a
    repository's skill renamed because the user's has its name)."""
    confined = Confined.of(where)
    found: dict[Scope, dict[str, Skill]] = {"user": {}, "project": {}}
    problems: list[str] = []
    for scope, folder, within in read_where(skill_dirs(confined.primary, env), confined):
        for path in _skill_files(folder, within, problems)[:MAX_SKILLS]:
            if within is None:
                try:
                    data: bytes | Refused | None = path.read_bytes()[:MAX_SKILL_BYTES]
                except OSError as err:
                    problems.append(f"{path}: cannot be read ({err.strerror or err})")
                    continue
            else:
                data = within.read(path, MAX_SKILL_BYTES)
            if isinstance(data, Refused):
                problems.append(data.notice)
                continue
            if data is None:
                continue
            doc = parse(data.decode("utf-8", errors="replace"))
            if doc.problem:
                problems.append(f"{path}: {doc.problem}")
            name = doc.text("name") or path.parent.name
            description = doc.text("description")
            if not _NAME.fullmatch(name) or description is None:
                problems.append(f"{path}: a skill needs a name and a description")
                continue
            skill = Skill(name, description[:MAX_DESCRIPTION], path.parent, scope, within)
            found[scope][name] = skill
    merged, shadowed = merge(found["user"], found["project"], lambda k, new: replace(k, name=new))
    for s in shadowed:
        mine = shown_user_path(found["user"][s.was].folder, env)
        own = "" if s.name == f"project:{s.was}" else f" (project:{s.was} names another skill)"
        problems.append(f"Skill {s.was} is yours ({mine}); the repository's is {s.name}{own}")
    return merged, problems


def _skill_files(folder: Path, confined: Confined | None, problems: list[str]) -> list[Path]:
    """The ``*/SKILL.md`` of ``folder``, sorted; beneath the workspace's roots when
    ``confined`` (the folder, or a skill's folder, that is a symlink out is named in
    ``problems``, its file then never looked at)."""
    if confined is None:
        return sorted(folder.glob("*/SKILL.md")) if folder.is_dir() else []
    names = confined.names(folder)
    if isinstance(names, Refused):
        problems.append(names.notice)
        return []
    found = []
    for name in names or []:
        if name.startswith("."):
            continue
        kind = confined.kind(folder / name)
        if isinstance(kind, Refused):
            problems.append(kind.notice)
        elif kind == "dir":
            found.append(folder / name / "SKILL.md")
    return found


def listing(skills: Sequence[Skill]) -> str:
    return "".join(f"- {s.name}: {s.description}\n" for s in sorted(skills, key=lambda s: s.name))


def skills_section(skills: Sequence[Skill]) -> str:
    """What the system prompt says of the skills (nothing when there are none)."""
    return f"{SECTION}{INTRO}{listing(skills)}" if skills else ""


def seen_listing(system: str, messages: Sequence[Message]) -> str:
    """The list of skills the model was last told of: the last update, else the prompt's."""
    for message in reversed(messages):
        if message.role != "user":
            continue
        for block in reversed(message.content):
            text = str(block.get("text", "")) if block.get("type") == "text" else ""
            if text.startswith(UPDATE):
                return text[len(UPDATE) :]
    at = system.find(SECTION + INTRO)
    if at < 0:
        return ""
    rest = system[at + len(SECTION + INTRO) :]
    end = rest.find("\n\n#")  # the next section (the project's instructions)
    return rest if end < 0 else rest[:end]


def without_skills(system: str) -> str:
    """``system`` for an agent that has no skill tool: its skills section (``skills_section``)
    replaced by one saying it has none (nothing added when it lists none)."""
    at = system.find(SECTION + INTRO)
    if at < 0:
        return system
    section = SECTION + INTRO + seen_listing(system, [])
    return system[:at] + NO_SKILL_TOOL + system[at + len(section) :]


def skills_update(
    system: str, messages: Sequence[Message], workspace: Path | WorkspaceRoots
) -> str | None:
    """The message telling the model the skills changed since it was last told (None: same,
    or the model has no skill tool to load them with)."""
    if NO_SKILL_TOOL in system:
        return None
    now = listing(list(read_skills(workspace)[0].values()))
    if now == seen_listing(system, messages):
        return None
    return UPDATE + (now or "(none)\n")
