"""What the user is told of the instruction material: files of the workspace that were not read
(a symlink out of it), problems in command and skill files, and a repository's command, skill or
agent renamed because the user's own has its name. ``session_commands.prompt`` tells them with
each prompt, each once per session (``Session.say_once``): so at the first turn, and when
something new turns up later. Broken agent files are told when the agents are fixed at the
first turn (``turn_start.fix_agents``); nested instruction files when a call reaches them."""

from __future__ import annotations

from pathlib import Path

from tiller.extend.agents import load_agents
from tiller.extend.commands_files import read_commands
from tiller.extend.instructions import root_notices
from tiller.extend.skills import read_skills
from tiller.workspace.roots import WorkspaceRoots


def material_notices(workspace: Path | WorkspaceRoots) -> list[str]:
    """Every notice the workspace's instruction material gives now (read, not cached)."""
    return [
        *root_notices(workspace),
        *read_skills(workspace)[1],
        *read_commands(workspace)[1],
        *load_agents(workspace).notices,
    ]
