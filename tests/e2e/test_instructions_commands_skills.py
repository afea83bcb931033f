"""Instruction files, custom slash commands and skills as users keep them for Claude Code and
Codex, end to end over stdio (and ACP's available_commands_update)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from fakeapi import FakeMessagesAPI
from harness import Tiller
from test_scheduling_and_permissions import results_of
from test_turn_basics import text, tool_use


def write(path: Path, body: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(body)


def notices(tiller: Tiller) -> list[str]:
    return [e["text"] for e in tiller.events_of("notice")]


def without_cache_marks(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Messages as sent, but for the cache breakpoint that moves to the last message."""
    return [
        {
            **m,
            "content": [{k: v for k, v in b.items() if k != "cache_control"} for b in m["content"]],
        }
        for m in messages
    ]


async def test_a_nested_agents_md_reaches_the_model_once_when_a_file_under_it_is_read(
    tiller: Tiller, api: FakeMessagesAPI, workspace: Path
) -> None:
    write(workspace / "AGENTS.md", "Root rules.\n")
    write(workspace / "pkg" / "AGENTS.md", "In pkg, use tabs.\n")
    write(workspace / "pkg" / "a.py", "x = 1\n")
    write(workspace / "pkg" / "b.py", "y = 2\n")
    api.enqueue(
        {"content": [tool_use("read_file", "r1", path="pkg/a.py")]},
        {"content": [tool_use("read_file", "r2", path="pkg/b.py")]},
        {"content": [text("ok")]},
    )
    await tiller.run("look at pkg")
    system = str(api.message_requests()[0].body["system"])
    assert "Root rules." in system and "use tabs" not in system
    first, second = str(results_of(api, 1)[0]["content"]), str(results_of(api, 2)[0]["content"])
    assert "Instructions for pkg/ (from pkg/AGENTS.md)" in first and "In pkg, use tabs." in first
    assert "use tabs" not in second  # once per conversation
    assert any("Instructions for pkg/ apply" in n for n in notices(tiller))


async def test_an_import_is_expanded_and_a_long_file_is_cut_with_a_notice(
    tiller: Tiller, api: FakeMessagesAPI, workspace: Path
) -> None:
    write(workspace / "AGENTS.md", "Read these:\n@docs/style.md\n`@not/imported.md`\n")
    write(workspace / "docs" / "style.md", "Style: short functions.\n" + "z" * 30_000)
    write(workspace / "not" / "imported.md", "never")
    api.enqueue({"content": [text("ok")]})
    await tiller.run("hi")
    system = str(api.message_requests()[0].body["system"])
    assert "## @docs/style.md" in system and "Style: short functions." in system
    assert "never" not in system
    assert "[Tiller cut AGENTS.md here: it is longer than 20000 characters]" in system
    assert any("AGENTS.md is longer than 20000 characters" in n for n in notices(tiller))


async def test_an_import_never_reaches_outside_the_workspace(
    tiller: Tiller, api: FakeMessagesAPI, workspace: Path
) -> None:
    write(workspace.parent / "secret.txt", "TOPSECRET")
    write(workspace / "AGENTS.md", "@../secret.txt\n")
    api.enqueue({"content": [text("ok")]})
    await tiller.run("hi")
    assert "TOPSECRET" not in str(api.message_requests()[0].body["system"])


async def test_a_custom_command_expands_its_arguments_and_uses_its_model_for_that_turn(
    tiller: Tiller, api: FakeMessagesAPI, workspace: Path
) -> None:
    write(
        workspace / ".claude" / "commands" / "review.md",
        "---\ndescription: Review a file\nargument-hint: <file> [focus]\n"
        "model: claude-haiku-4-5\nallowed-tools: Bash(git add:*), Read\n---\n"
        "Review $1 with a focus on $2. All arguments: $ARGUMENTS\n",
    )
    write(workspace / ".tiller" / "commands" / "ops" / "deploy.md", "Deploy it.\n")
    listed = await tiller.request("tiller/listCommands")
    by_name = {c["name"]: c for c in listed["commands"]}
    assert by_name["review"]["description"] == "Review a file"
    assert by_name["review"]["argumentHint"] == "<file> [focus]"
    assert by_name["review"]["source"].startswith("project: ")
    assert by_name["help"]["source"] == "built-in"
    assert "ops:deploy" in by_name
    api.enqueue(
        {"content": [tool_use("bash", "b1", command="git add app.py")]},
        {"content": [text("looks fine")]},
        {"content": [text("plain turn")]},
    )
    ended = await tiller.run("/review app.py errors")
    assert ended["outcome"] == "completed"
    first = api.message_requests()[0].body
    assert first["model"] == "claude-haiku-4-5"
    assert first["messages"][-1]["content"][-1]["text"] == (
        "Review app.py with a focus on errors. All arguments: app.py errors"
    )
    assert not [m for m, _ in tiller.asked if m == "tiller/confirmTool"]  # allowed-tools
    assert tiller.events_of("toolStarted")[0]["permission"]["by"] == "/review allowed-tools"
    await tiller.run("and now?")
    assert api.message_requests()[-1].body["model"] == "claude-test-1"  # that turn only
    assert (await tiller.prompt("/help"))["status"] == "handled"
    assert "/review <file> [focus]" in tiller.events_of("command")[-1]["message"]


async def test_a_commands_model_alias_is_the_catalogs_model_shaped_like_any_turn(
    start: Any, api: FakeMessagesAPI, workspace: Path
) -> None:
    """``model: haiku`` was sent as the id ``haiku`` with ``budget_tokens`` 8191 against
    ``max_tokens`` 8192 (an unknown id's guess); agents mapped the alias, commands did not."""
    write(workspace / ".claude" / "commands" / "quick.md", "---\nmodel: haiku\n---\nBe quick.\n")
    tiller: Tiller = await start(model="claude-sonnet-5-5")  # thinking on: adaptive
    api.enqueue({"content": [text("quick")]}, {"content": [text("plain")]})
    ended = await tiller.run("/quick")
    assert ended["outcome"] == "completed"
    sent = api.message_requests()[0].body
    assert sent["model"] == "claude-haiku-5-5"
    assert sent["thinking"]["type"] == "adaptive" and "budget_tokens" not in sent["thinking"]
    assert sent["max_tokens"] == 128_000  # the model's own output limit, not a guess's 8192
    await tiller.run("and now?")
    assert api.message_requests()[-1].body["model"] == "claude-sonnet-5-5"  # that turn only


async def test_allowed_tools_never_cover_a_compound_command(
    tiller: Tiller, api: FakeMessagesAPI, workspace: Path
) -> None:
    write(
        workspace / ".claude" / "commands" / "st.md",
        "---\nallowed-tools: Bash(git status:*)\n---\nstatus\n",
    )
    api.enqueue(
        {"content": [tool_use("bash", "b1", command="git status && touch pwned")]},
        {"content": [text("ok")]},
    )
    await tiller.run("/st")
    assert [m for m, _ in tiller.asked if m == "tiller/confirmTool"]  # asked, then denied
    assert not (workspace / "pwned").exists()


async def test_a_builtin_command_wins_a_name_clash_and_says_so(
    tiller: Tiller, workspace: Path
) -> None:
    write(workspace / ".claude" / "commands" / "plan.md", "Make a plan.\n")
    result = await tiller.prompt("/plan")
    assert result["status"] == "handled"
    assert any("custom /plan" in n for n in notices(tiller))
    listed = await tiller.request("tiller/listCommands")
    assert [c["source"] for c in listed["commands"] if c["name"] == "plan"] == ["built-in"]


async def test_a_skill_is_listed_in_the_prefix_and_loaded_by_the_model(
    tiller: Tiller, api: FakeMessagesAPI, workspace: Path
) -> None:
    write(
        workspace / ".claude" / "skills" / "pdf" / "SKILL.md",
        "---\nname: pdf-forms\ndescription: Fill PDF forms\n---\nUse scripts/fill.py to fill.\n",
    )
    api.enqueue(
        {
            "content": [
                {"type": "tool_use", "id": "s1", "name": "skill", "input": {"name": "pdf-forms"}}
            ]
        },
        {"content": [text("done")]},
    )
    await tiller.run("fill the form")
    system = str(api.message_requests()[0].body["system"])
    assert "- pdf-forms: Fill PDF forms" in system
    assert "scripts/fill.py" not in system  # only the name and description sit in the prefix
    loaded = str(results_of(api, 1)[0]["content"])
    assert "Use scripts/fill.py to fill." in loaded
    assert str(workspace / ".claude" / "skills" / "pdf") in loaded


async def test_a_skill_added_mid_session_reaches_the_model_as_a_message_and_the_prefix_stays(
    tiller: Tiller, api: FakeMessagesAPI, workspace: Path
) -> None:
    api.enqueue({"content": [text("one")]}, {"content": [text("two")]})
    await tiller.run("first")
    write(
        workspace / ".tiller" / "skills" / "lint" / "SKILL.md",
        "---\ndescription: Lint the code\n---\nRun ruff.\n",
    )
    await tiller.run("second")
    first, second = (r.body for r in api.message_requests())
    assert second["system"] == first["system"]  # the prefix, byte for byte
    kept = without_cache_marks(second["messages"][: len(first["messages"])])
    assert kept == without_cache_marks(first["messages"])
    told = second["messages"][-1]["content"]
    assert (
        "The skills available changed" in told[0]["text"]
        and "- lint: Lint the code" in told[0]["text"]
    )
    assert any("skills changed" in n for n in notices(tiller))
