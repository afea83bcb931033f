"""Skills: folders with a ``SKILL.md`` that users keep for Claude Code and Tiller.

Where (a later place wins a name clash): ``$CLAUDE_CONFIG_DIR`` (else ``~/.claude``)
``/skills/*/SKILL.md``, Tiller's user dir ``/skills/*/SKILL.md``, the workspace's
``.claude/skills/*/SKILL.md`` and ``.tiller/skills/*/SKILL.md``. The frontmatter's ``name``
(else the folder's name) and ``description`` are all the prefix carries; the model loads the
body with the ``skill`` tool, with the folder's path so it can read the files bundled there.

Append-only: the list is written into the system prompt at a session's first turn (stored
with the session); a skill added, changed or removed later reaches the model as a message
before the next prompt (``skills_update``), never by changing the prefix.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from tiller.core.history import Message
from tiller.extend.frontmatter import parse
from tiller.extend.settings_files import claude_user_dir, tiller_user_dir

MAX_SKILL_BYTES = 512_000
MAX_SKILLS = 200
MAX_DESCRIPTION = 1024
SECTION = "\n\n# Skills\n"
INTRO = (
    "Skills are instructions for particular tasks. When a task matches a skill's description, "
    "load it with the skill tool (its name) and follow it.\n"
)
UPDATE = "The skills available changed. Skills now (load one with the skill tool):\n"
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.:\-]*")


@dataclass(frozen=True)
class Skill:
    name: str
    description: str
    folder: Path
    scope: str  # "user" or "project"

    @property
    def path(self) -> Path:
        return self.folder / "SKILL.md"

    def body(self) -> str:
        """The instructions (read when the model loads the skill)."""
        raw = self.path.read_bytes()[:MAX_SKILL_BYTES].decode("utf-8", errors="replace")
        return parse(raw).body


def skill_dirs(workspace: Path, env: Mapping[str, str] | None = None) -> list[tuple[str, Path]]:
    return [
        ("user", claude_user_dir(env) / "skills"),
        ("user", tiller_user_dir(env) / "skills"),
        ("project", workspace / ".claude" / "skills"),
        ("project", workspace / ".tiller" / "skills"),
    ]


def read_skills(
    workspace: Path, env: Mapping[str, str] | None = None
) -> tuple[dict[str, Skill], list[str]]:
    """Every skill by name (a later place wins), and problems to tell."""
    found: dict[str, Skill] = {}
    problems: list[str] = []
    for scope, folder in skill_dirs(workspace, env):
        if not folder.is_dir():
            continue
        for path in sorted(folder.glob("*/SKILL.md"))[:MAX_SKILLS]:
            try:
                raw = path.read_bytes()[:MAX_SKILL_BYTES].decode("utf-8", errors="replace")
            except OSError as err:
                problems.append(f"{path}: cannot be read ({err.strerror or err})")
                continue
            doc = parse(raw)
            if doc.problem:
                problems.append(f"{path}: {doc.problem}")
            name = doc.text("name") or path.parent.name
            description = doc.text("description")
            if not _NAME.fullmatch(name) or description is None:
                problems.append(f"{path}: a skill needs a name and a description")
                continue
            found[name] = Skill(name, description[:MAX_DESCRIPTION], path.parent, scope)
    return found, problems


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
    end = rest.find("\n\n#")
    return rest if end < 0 else rest[: end + 1]


def skills_update(system: str, messages: Sequence[Message], workspace: Path) -> str | None:
    """The message telling the model the skills changed since it was last told (None: same)."""
    now = listing(list(read_skills(workspace)[0].values()))
    if now == seen_listing(system, messages):
        return None
    return UPDATE + (now or "(none)\n")
