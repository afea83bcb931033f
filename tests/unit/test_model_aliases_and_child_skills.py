"""Claude Code's model aliases name catalog models (one function for agents and commands), and a
subagent without the ``skill`` tool is not told of skills it could not load."""

from __future__ import annotations

from pathlib import Path

import pytest

from tiller.core.turn.system_prompt import system_prompt
from tiller.extend.agents import parse_agent
from tiller.extend.commands_files import read_command
from tiller.extend.skills import (
    NO_SKILL_TOOL,
    read_skills,
    skills_section,
    skills_update,
    without_skills,
)
from tiller.model.aliases import MODEL_ALIASES, model_named
from tiller.model.models import resolve
from tiller.workspace.roots import WorkspaceRoots


@pytest.mark.parametrize("alias", sorted(MODEL_ALIASES))
def test_each_alias_names_a_model_the_catalog_lists_with_adaptive_thinking(alias: str) -> None:
    spec = resolve(model_named(alias) or "")
    assert spec.source == "catalog" and spec.thinking == "adaptive"


def test_a_command_and_an_agent_map_the_same_alias_to_the_same_id(tmp_path: Path) -> None:
    path = tmp_path / "quick.md"
    path.write_text("---\nmodel: Haiku\n---\nBe quick.\n")
    command, problem = read_command(path, "quick", "project")
    assert problem is None and command is not None
    agent = parse_agent("---\nname: a\ndescription: d\nmodel: haiku\n---\n", "a.md")
    assert command.model == agent.model == "claude-haiku-5-5"  # type: ignore[union-attr]


@pytest.mark.parametrize(("written", "model"), [
    ("inherit", None), ("", None), ("claude-opus-4-8", "claude-opus-4-8"),
])  # fmt: skip
def test_inherit_or_nothing_is_the_sessions_model_and_an_id_stays_as_written(
    written: str, model: str | None
) -> None:
    assert model_named(written) == model


def test_without_skills_replaces_the_listing_and_the_model_is_never_told_of_changes(
    tmp_path: Path,
) -> None:
    ws = tmp_path / "ws"
    skill = ws / ".tiller" / "skills" / "deploy" / "SKILL.md"
    skill.parent.mkdir(parents=True)
    skill.write_text("---\nname: deploy\ndescription: How we deploy\n---\nRun make ship.\n")
    env = {"HOME": str(tmp_path / "home")}
    skills = list(read_skills(ws, env)[0].values())
    system = "Base prompt." + skills_section(skills) + "\n\n# Instructions (AGENTS.md)\n\nBe nice."
    child = without_skills(system)
    assert child == "Base prompt." + NO_SKILL_TOOL + "\n\n# Instructions (AGENTS.md)\n\nBe nice."
    assert skills_update(child, [], ws) is None
    assert without_skills("Base prompt.") == "Base prompt."  # no skills: nothing said


def test_a_prompt_with_skills_then_project_instructions_needs_no_skills_update(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The listing was read with the next section's first newline: every session with skills
    and an AGENTS.md was told at its first prompt that the skills had changed."""
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.delenv("CLAUDE_CONFIG_DIR", raising=False)
    monkeypatch.delenv("TILLER_CONFIG_DIR", raising=False)
    ws = tmp_path / "ws"
    skill = ws / ".tiller" / "skills" / "deploy" / "SKILL.md"
    skill.parent.mkdir(parents=True)
    skill.write_text("---\nname: deploy\ndescription: How we deploy\n---\nRun make ship.\n")
    (ws / "AGENTS.md").write_text("Be nice.\n")
    system = system_prompt(WorkspaceRoots.of(ws))
    assert "- deploy: How we deploy" in system and "Be nice." in system
    assert skills_update(system, [], ws) is None
