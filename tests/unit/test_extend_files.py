"""Frontmatter, custom command expansion, allowed-tools, instruction imports and budget,
skills: the pure parts of extend/."""

from __future__ import annotations

from pathlib import Path

from tiller.core.permissions.command_grants import grant_rules, grants
from tiller.extend.commands_files import read_commands
from tiller.extend.frontmatter import parse
from tiller.extend.instructions import Loaded, cut_notices, imports_in, load, nested_files
from tiller.extend.skills import read_skills


def write(path: Path, body: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(body)
    return path


def test_frontmatter_is_yaml_between_dashes_and_a_broken_one_is_named() -> None:
    doc = parse("---\ndescription: Hi\nargument-hint: <x>\n---\nBody $ARGUMENTS\n")
    assert doc.text("description") == "Hi" and doc.body == "Body $ARGUMENTS\n"
    assert parse("no frontmatter").body == "no frontmatter"
    assert parse("---\n: [\n---\nbody").problem is not None
    assert parse("---\nunclosed").problem == "the frontmatter has no closing '---'"
    assert parse("---\n- a list\n---\n").problem == "the frontmatter is not a mapping"


def test_commands_expand_arguments_and_positions_and_namespace_subfolders(
    tmp_path: Path,
) -> None:
    ws, home = tmp_path / "ws", tmp_path / "home"
    write(ws / ".claude/commands/fix.md", "Fix issue $1 in $2 ($ARGUMENTS)")
    write(ws / ".tiller/commands/fix.md", "---\nmodel: m\n---\nTiller's fix: $ARGUMENTS")
    write(ws / ".claude/commands/git/undo.md", "Undo the last commit.")
    write(home / ".claude/commands/plain.md", "Say hi.")
    found, problems = read_commands(ws, {"HOME": str(home)})
    assert problems == []
    assert found["fix"].model == "m" and found["fix"].scope == "project"  # .tiller wins
    assert found["fix"].expand('a "b c"') == 'Tiller\'s fix: a "b c"'
    claude_fix = found["git:undo"]
    assert claude_fix.description == "Undo the last commit."
    assert found["plain"].expand("now") == "Say hi.\n\nARGUMENTS: now"
    assert found["plain"].scope == "user"


def test_positional_arguments(tmp_path: Path) -> None:
    write(tmp_path / ".claude/commands/fix.md", "Fix issue $1 in $2 ($ARGUMENTS)")
    found, _ = read_commands(tmp_path, {"HOME": str(tmp_path / "none")})
    assert found["fix"].expand('12 "src/a b.py"') == 'Fix issue 12 in src/a b.py (12 "src/a b.py")'


def test_allowed_tools_grant_as_rules_do_and_never_more(tmp_path: Path) -> None:
    rules = grant_rules(("Read", "Bash(git add:*)", "Bash(git diff:*)", "Bash(npm test)"), "/c")

    def allowed(tool: str, kind: str, **tool_input: str) -> bool:
        return grants(rules, tool, kind, tool_input, tmp_path, lambda _line: False)

    assert allowed("read_file", "read", path="a")
    assert allowed("bash", "bash", command="git add src")
    assert allowed("bash", "bash", command="npm test")
    assert allowed("bash", "bash", command="timeout 30 npm test")  # a wrapper Claude Code names
    assert not allowed("bash", "bash", command="npm test --watch")
    assert not allowed("bash", "bash", command="git add . && rm -rf x")
    assert not allowed("bash", "bash", command="git add $(evil)")
    assert not allowed("bash", "bash", command="git addx")
    assert not allowed("bash", "bash", command="git diff --output=F")  # a writing option
    assert not allowed("bash", "bash", command="git diff --ext-diff")  # runs a program
    assert not allowed("write_file", "edit", path="a")
    assert grant_rules(("Bash(", "Read"), "/c") == grant_rules(("Read",), "/c")


def test_imports_skip_code_and_emails() -> None:
    text = (
        "See @docs/a.md and @~/x.md.\n`@in/span.md` mail me@example.com\n```\n@in/block.md\n```\n"
    )
    assert imports_in(text) == ["docs/a.md", "~/x.md"]


def test_imports_nest_up_to_five_levels_once_each_and_never_outside(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    for n in range(7):
        write(ws / f"f{n}.md", f"level {n}\n@f{n + 1}.md\n@f0.md\n")
    write(tmp_path / "outside.md", "OUTSIDE")
    write(ws / "AGENTS.md", "@f0.md\n@../outside.md\n")
    loaded = load(ws / "AGENTS.md", "AGENTS.md", ws, tmp_path)
    assert isinstance(loaded, Loaded)
    assert "level 4" in loaded.text and "level 5" not in loaded.text
    assert loaded.text.count("level 0") == 1
    assert "OUTSIDE" not in loaded.text


def test_a_file_over_its_budget_is_cut_and_named(tmp_path: Path) -> None:
    write(tmp_path / "AGENTS.md", "x" * 50)
    loaded = load(tmp_path / "AGENTS.md", "AGENTS.md", tmp_path, tmp_path, budget=20)
    assert isinstance(loaded, Loaded)
    assert loaded.text.startswith("x" * 20 + "\n[Tiller cut AGENTS.md")
    assert cut_notices(loaded.text) == [
        "AGENTS.md is longer than 20 characters: the model sees it cut"
    ]


def test_nested_files_apply_under_their_folder_outermost_first(tmp_path: Path) -> None:
    write(tmp_path / "AGENTS.md", "root")
    write(tmp_path / "a/CLAUDE.md", "a")
    write(tmp_path / "a/b/AGENTS.md", "b")
    write(tmp_path / "a/b/CLAUDE.md", "b claude")
    write(tmp_path / "a/b/c.py", "")
    found = nested_files(tmp_path, tmp_path / "a/b/c.py")
    assert [(f.as_posix(), p.name) for f, p in found] == [("a", "CLAUDE.md"), ("a/b", "AGENTS.md")]
    assert nested_files(tmp_path, tmp_path / "x.py") == []


def test_skills_need_a_description_and_take_the_folder_name_by_default(tmp_path: Path) -> None:
    write(tmp_path / ".claude/skills/pdf/SKILL.md", "---\ndescription: PDFs\n---\nbody")
    write(tmp_path / ".claude/skills/bad/SKILL.md", "no frontmatter")
    found, problems = read_skills(tmp_path, {"HOME": str(tmp_path / "none")})
    assert list(found) == ["pdf"] and found["pdf"].body() == "body"
    assert any("bad/SKILL.md: a skill needs a name and a description" in p for p in problems)
