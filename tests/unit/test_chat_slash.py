"""tiller chat: Tab completes slash commands (built-in and custom) and hints list them."""

from __future__ import annotations

from pathlib import Path

import pytest
from prompt_toolkit.completion import CompleteEvent
from prompt_toolkit.document import Document

from tiller.faces.chat.shell import resume_command
from tiller.faces.chat.slash import SlashCommands

LISTED = [
    {"name": "help", "description": "this list", "source": "built-in"},
    {"name": "review", "description": "Review a file", "argumentHint": "<file>",
     "source": "project: /ws/.claude/commands/review.md"},
    {"name": "resume", "description": "resume a session", "argumentHint": "<id>",
     "source": "built-in"},
]  # fmt: skip


def test_tab_completes_the_commands_that_start_with_what_is_typed() -> None:
    slash = SlashCommands()
    slash.commands = LISTED
    completions = list(slash.get_completions(Document("/re"), CompleteEvent()))
    assert [c.text for c in completions] == ["/review", "/resume"]
    assert all(c.start_position == -3 for c in completions)
    assert list(slash.get_completions(Document("/review x"), CompleteEvent())) == []


def test_hints_name_arguments_descriptions_and_custom_commands() -> None:
    slash = SlashCommands()
    slash.commands = LISTED
    assert [text for _, text in slash.hints("/rev")] == ["/review <file> — Review a file (custom)"]
    assert slash.hints("hello /re") == []


def test_the_chats_own_exit_and_quit_complete_beside_the_servers_commands() -> None:
    slash = SlashCommands()
    slash.commands = LISTED
    assert [text for _, text in slash.hints("/ex")] == [
        "/exit — leave the chat (says how to resume)"
    ]
    completions = list(slash.get_completions(Document("/q"), CompleteEvent()))
    assert [c.text for c in completions] == ["/quit"]


def test_the_resume_command_names_the_workspace_when_it_is_not_the_current_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    other = tmp_path / "my project"
    other.mkdir()
    monkeypatch.chdir(tmp_path)
    assert resume_command("ses_1", tmp_path) == "tiller chat --resume ses_1"
    assert resume_command("ses_1", other) == (
        f"tiller chat --resume ses_1 --workspace '{tmp_path}/my project'"
    )
