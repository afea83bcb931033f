"""Instruction material read beneath the workspace's roots (a symlink out refused, with a
notice; one inside followed), and a repository's command, skill or agent never shadowing the
user's own (issue 34, item 3)."""

from __future__ import annotations

import os
from pathlib import Path

from tiller.core.session.material_notices import material_notices
from tiller.core.turn.nested_instructions import nested_material
from tiller.extend.agents import AgentKind, AgentProblem, Agents, load_agents
from tiller.extend.commands_files import read_commands
from tiller.extend.confined_material import Confined, Refused
from tiller.extend.instructions import Loaded, load, root_file, root_notices
from tiller.extend.skills import read_skills
from tiller.workspace.roots import WorkspaceRoots

OUT = "is a symlink out of the workspace: not read"


def write(path: Path, body: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(body)
    return path


def link(path: Path, target: Path | str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.symlink_to(target)
    return path


def places(tmp_path: Path) -> tuple[Path, Path, dict[str, str]]:
    """A workspace, a folder outside it (with a secret), and an environment whose home is
    elsewhere again."""
    ws, outside, home = tmp_path / "ws", tmp_path / "outside", tmp_path / "home"
    ws.mkdir()
    write(outside / "notes.md", "OUTSIDE NOTES")
    home.mkdir()
    return ws, outside, {"HOME": str(home)}


# --- instruction files ---------------------------------------------------------------------


def test_a_root_agents_md_that_is_a_symlink_out_is_refused_and_claude_md_read(
    tmp_path: Path,
) -> None:
    ws, outside, env = places(tmp_path)
    link(ws / "AGENTS.md", outside / "notes.md")
    write(ws / "CLAUDE.md", "Claude rules.")
    found = root_file(ws, env)
    assert found is not None and found.name == "CLAUDE.md" and "OUTSIDE" not in found.text
    assert root_notices(ws, env) == [f"AGENTS.md {OUT}"]


def test_an_import_through_a_folder_that_links_out_is_refused_with_a_notice(
    tmp_path: Path,
) -> None:
    ws, outside, env = places(tmp_path)
    link(ws / "docs", outside)
    write(ws / "AGENTS.md", "Root.\n@docs/notes.md\n@../outside/notes.md\n")
    found = root_file(ws, env)
    assert found is not None and found.text == "Root.\n@docs/notes.md\n@../outside/notes.md\n"
    assert root_notices(ws, env) == [
        f"AGENTS.md imports @docs/notes.md: docs {OUT}",
        "AGENTS.md imports @../outside/notes.md, which is outside the workspace: not read",
    ]


def test_a_file_or_import_that_links_inside_the_workspace_is_read(tmp_path: Path) -> None:
    ws, _outside, env = places(tmp_path)
    write(ws / "docs" / "rules.md", "Shared rules.\n@style.md\n")
    write(ws / "docs" / "style.md", "Short functions.")
    link(ws / "AGENTS.md", "docs/rules.md")
    found = root_file(ws, env)
    assert found is not None and "Shared rules." in found.text
    assert "Short functions." not in found.text  # relative to the link's folder, as before
    assert root_notices(ws, env) == []


def test_a_hard_linked_instruction_file_is_refused(tmp_path: Path) -> None:
    ws, outside, env = places(tmp_path)
    os.link(outside / "notes.md", ws / "AGENTS.md")
    assert root_file(ws, env) is None
    assert root_notices(ws, env) == [
        "AGENTS.md has other names (hard links), which may be outside the workspace: not read"
    ]


def test_a_nested_agents_md_that_links_out_is_refused_once_and_one_inside_is_told(
    tmp_path: Path,
) -> None:
    ws, outside, _env = places(tmp_path)
    link(ws / "pkg2" / "AGENTS.md", outside / "notes.md")
    write(ws / "pkg2" / "a.py", "")
    write(ws / "shared" / "pkg3.md", "In pkg3, use tabs.")
    link(ws / "pkg3" / "AGENTS.md", "../shared/pkg3.md")
    write(ws / "pkg3" / "b.py", "")
    told: set[str] = set()
    first = nested_material(ws, "read_file", {"path": "pkg2/a.py"}, told)
    assert first.found == [] and first.refused == [f"pkg2/AGENTS.md {OUT}"]
    again = nested_material(ws, "read_file", {"path": "pkg2/a.py"}, told)
    assert again.found == [] and again.refused == []  # told once
    inside = nested_material(ws, "grep", {"path": "pkg3/b.py"}, told)
    assert [folder for folder, _ in inside.found] == ["pkg3"]
    assert "In pkg3, use tabs." in inside.found[0][1] and inside.refused == []


def test_the_users_own_instruction_file_keeps_its_rule(tmp_path: Path) -> None:
    home = tmp_path / "home"
    write(home / "dotfiles" / "CLAUDE.md", "My rules.\n@notes.md\n")
    write(home / "dotfiles" / "notes.md", "My notes.")
    link(home / ".claude" / "CLAUDE.md", home / "dotfiles" / "CLAUDE.md")
    loaded = load(home / ".claude" / "CLAUDE.md", "~/.claude/CLAUDE.md", home, home)
    assert isinstance(loaded, Loaded) and "My notes." not in loaded.text  # relative to the link
    assert "My rules." in loaded.text


# --- skills --------------------------------------------------------------------------------


def test_skills_that_link_out_are_refused_with_a_notice_and_the_rest_are_read(
    tmp_path: Path,
) -> None:
    ws, outside, env = places(tmp_path)
    write(outside / "x" / "SKILL.md", "---\ndescription: OUTSIDE SKILL\n---\nsecret body")
    write(ws / ".claude" / "skills" / "good" / "SKILL.md", "---\ndescription: Good\n---\nok")
    link(ws / ".claude" / "skills" / "file" / "SKILL.md", outside / "x" / "SKILL.md")
    link(ws / ".claude" / "skills" / "folder", outside / "x")
    found, told = read_skills(ws, env)
    assert list(found) == ["good"] and found["good"].scope == "project"
    assert sorted(told) == [f".claude/skills/file/SKILL.md {OUT}", f".claude/skills/folder {OUT}"]


def test_a_skills_folder_or_dot_claude_that_links_out_is_refused(tmp_path: Path) -> None:
    ws, outside, env = places(tmp_path)
    write(outside / "skills" / "x" / "SKILL.md", "---\ndescription: OUTSIDE\n---\n")
    link(ws / ".claude", outside)
    link(ws / ".tiller" / "skills", outside / "skills")
    found, told = read_skills(ws, env)
    assert found == {}
    assert told == [f".claude {OUT}", f".tiller/skills {OUT}"]


def test_a_skill_body_swapped_for_a_link_out_after_listing_is_refused(tmp_path: Path) -> None:
    ws, outside, env = places(tmp_path)
    path = write(ws / ".claude" / "skills" / "pdf" / "SKILL.md", "---\ndescription: P\n---\nok")
    skill = read_skills(ws, env)[0]["pdf"]
    assert skill.body() == "ok"
    path.unlink()
    link(path, outside / "notes.md")
    assert skill.body() == Refused(".claude/skills/pdf/SKILL.md", OUT)


# --- commands -------------------------------------------------------------------------------


def test_commands_that_link_out_are_refused_and_one_linking_inside_is_read(
    tmp_path: Path,
) -> None:
    ws, outside, env = places(tmp_path)
    write(outside / "git" / "undo.md", "OUTSIDE")
    write(outside / "commands" / "deploy.md", "OUTSIDE")
    commands = ws / ".claude" / "commands"
    write(commands / "ok.md", "Fine.")
    link(commands / "leak.md", outside / "notes.md")
    link(commands / "git", outside / "git")
    write(ws / "prompts" / "shared.md", "Shared prompt.")
    link(commands / "shared.md", "../../prompts/shared.md")
    link(ws / ".tiller", outside)
    found, told = read_commands(ws, env)
    assert sorted(found) == ["ok", "shared"] and found["shared"].body == "Shared prompt."
    assert sorted(told) == [
        f".claude/commands/git {OUT}",
        f".claude/commands/leak.md {OUT}",
        f".tiller {OUT}",
    ]


def test_the_users_command_wins_and_the_repositorys_is_project_name(tmp_path: Path) -> None:
    ws, _outside, env = places(tmp_path)
    home = Path(env["HOME"])
    write(home / ".claude" / "commands" / "review.md", "Mine.")
    write(ws / ".claude" / "commands" / "review.md", "---\nallowed-tools: Bash\n---\nTheirs.")
    found, told = read_commands(ws, env)
    assert found["review"].body == "Mine." and found["review"].scope == "user"
    theirs = found["project:review"]
    assert theirs.body == "Theirs." and theirs.scope == "project"
    assert theirs.renamed_from == "review" and theirs.allowed_tools == ("Bash",)
    assert told == [
        "/review is yours (~/.claude/commands/review.md); the repository's is /project:review"
    ]


def test_a_repositorys_own_project_command_keeps_its_name_and_the_shadowed_one_is_numbered(
    tmp_path: Path,
) -> None:
    ws, _outside, env = places(tmp_path)
    home = Path(env["HOME"])
    write(home / ".claude" / "commands" / "review.md", "Mine.")
    write(ws / ".claude" / "commands" / "review.md", "Theirs.")
    write(ws / ".claude" / "commands" / "project" / "review.md", "Their own project:review.")
    found, told = read_commands(ws, env)
    assert found["review"].body == "Mine."
    assert found["project:review"].body == "Their own project:review."
    assert found["project:review-2"].body == "Theirs."
    assert told == [
        "/review is yours (~/.claude/commands/review.md); the repository's is "
        "/project:review-2 (/project:review names another file)"
    ]


def test_a_workspace_that_is_the_home_folder_reads_its_commands_once_as_the_users(
    tmp_path: Path,
) -> None:
    home = tmp_path / "home"
    write(home / ".claude" / "commands" / "review.md", "Mine.")
    found, told = read_commands(home, {"HOME": str(home)})
    assert list(found) == ["review"] and found["review"].scope == "user" and told == []


# --- skills and agents shadowed -------------------------------------------------------------


def test_the_users_skill_wins_and_the_repositorys_is_project_name(tmp_path: Path) -> None:
    ws, _outside, env = places(tmp_path)
    home = Path(env["HOME"])
    write(home / ".claude" / "skills" / "pdf" / "SKILL.md", "---\ndescription: Mine\n---\n")
    write(ws / ".claude" / "skills" / "pdf" / "SKILL.md", "---\ndescription: Theirs\n---\n")
    found, told = read_skills(ws, env)
    assert found["pdf"].description == "Mine" and found["pdf"].scope == "user"
    assert found["project:pdf"].description == "Theirs"
    assert found["project:pdf"].scope == "project"
    assert told == ["Skill pdf is yours (~/.claude/skills/pdf); the repository's is project:pdf"]


def test_the_users_agent_wins_and_the_repositorys_is_project_name(tmp_path: Path) -> None:
    ws, outside, env = places(tmp_path)
    home = Path(env["HOME"])
    write(home / ".claude" / "agents" / "rev.md", "---\nname: rev\ndescription: Mine\n---\n")
    write(
        ws / ".claude" / "agents" / "rev.md",
        "---\nname: rev\ndescription: Theirs\ntools: Bash\n---\n",
    )
    link(ws / ".claude" / "agents" / "leak.md", outside / "notes.md")
    agents = load_agents(ws, env)
    mine, theirs = agents.get("rev"), agents.get("project:rev")
    assert mine is not None and mine.description == "Mine" and mine.scope == "user"
    assert theirs is not None and theirs.description == "Theirs" and theirs.scope == "project"
    assert theirs.tools == ("bash",)
    assert agents.notices == (
        "Agent rev is yours (~/.claude/agents/rev.md); the repository's is project:rev",
    )
    assert agents.problems == (AgentProblem(Path(".claude/agents/leak.md"), OUT),)
    assert Agents.from_json(agents.to_json()).kinds == agents.kinds


def test_a_stored_agent_without_a_scope_reads_as_the_repositorys_but_a_built_in() -> None:
    stored = {"name": "rev", "description": "d", "tools": ["bash"], "source": "/ws/rev.md"}
    assert AgentKind.from_json(stored).scope == "project"
    built_in = {"name": "explore", "description": "d", "tools": None, "source": "built-in"}
    assert AgentKind.from_json(built_in).scope == "built-in"


def test_material_notices_gather_every_kind_of_refusal_and_shadowing(tmp_path: Path) -> None:
    ws, outside, env = places(tmp_path)
    link(ws / "AGENTS.md", outside / "notes.md")
    link(ws / ".claude" / "skills" / "x", outside)
    link(ws / ".claude" / "commands" / "x.md", outside / "notes.md")
    old = os.environ.get("HOME")
    os.environ["HOME"] = env["HOME"]
    try:
        told = material_notices(ws)
    finally:
        if old is not None:
            os.environ["HOME"] = old
    assert told == [
        f"AGENTS.md {OUT}",
        f".claude/skills/x {OUT}",
        f".claude/commands/x.md {OUT}",
    ]


# --- several roots --------------------------------------------------------------------------


def test_a_link_into_another_workspace_folder_is_followed_there(tmp_path: Path) -> None:
    ws, _outside, _env = places(tmp_path)
    other = tmp_path / "other"
    write(other / "rules.md", "Other folder's rules.")
    link(ws / "AGENTS.md", other / "rules.md")
    confined = Confined.of(WorkspaceRoots.of(ws, other))
    assert confined.read(ws / "AGENTS.md", 100) == b"Other folder's rules."
    alone = Confined.of(ws)
    assert alone.read(ws / "AGENTS.md", 100) == Refused("AGENTS.md", OUT)
    assert confined.read(ws / "missing.md", 100) is None
