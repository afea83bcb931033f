"""docs/protocol.md is the contract: its tables name every method, setting, event type and
slash command the code has, one row each, and nothing the code lacks; every file and section
it points to exists."""

from __future__ import annotations

import inspect
import re
from pathlib import Path
from typing import get_args, get_type_hints

from tiller import protocol
from tiller.core import config
from tiller.core.session import commands
from tiller.core.turn import events

REPO = Path(__file__).parents[2]
DOC = REPO / "docs" / "protocol.md"
TEXT = DOC.read_text(encoding="utf-8")


def section(title: str) -> str:
    """The text of the ``## title`` section, up to the next ``## `` heading."""
    start = TEXT.index(f"\n## {title}\n")
    end = TEXT.find("\n## ", start + 1)
    return TEXT[start : end if end != -1 else None]


def first_column(text: str) -> list[str]:
    """The names in backticks in the first cell of each table row (header rows left out)."""
    lines = text.splitlines()
    cells = [
        re.split(r"(?<!\\)\|", line)[1]
        for line, below in zip(lines, [*lines[1:], ""], strict=True)
        if line.startswith("| ") and not below.startswith("|---")
    ]
    return [name for cell in cells for name in re.findall(r"`([^`]+)`", cell)]


def one_row_each(text: str) -> set[str]:
    names = first_column(text)
    assert len(names) == len(set(names)), sorted(n for n in names if names.count(n) > 1)
    return set(names)


def test_protocol_doc_names_every_method() -> None:
    assert one_row_each(section("Client → server requests")) == set(protocol.CLIENT_REQUESTS)
    notifications = one_row_each(section("Server → client notifications"))
    assert notifications == set(protocol.SERVER_NOTIFICATIONS)
    asked = one_row_each(section("Server → client requests"))
    assert asked == set(protocol.SERVER_REQUESTS)


def test_protocol_doc_names_no_method_the_server_lacks() -> None:
    methods = {*protocol.CLIENT_REQUESTS, *protocol.SERVER_NOTIFICATIONS, *protocol.SERVER_REQUESTS}
    named = set(re.findall(r"(?<![\w/.~-])tiller/[A-Za-z]+(?:/[A-Za-z]+)*(?![\w/.-])", TEXT))
    assert named - methods == set()
    assert methods <= named


def test_protocol_doc_has_one_row_per_setting() -> None:
    assert one_row_each(section("Settings (`initializationOptions`)")) == config.KNOWN_KEYS


def event_types() -> set[str]:
    """Every ``type`` the server sends (protocol.py's event shapes) or journals (events.py)."""
    described = {
        get_args(get_type_hints(shape)["type"])[0] for shape in get_args(protocol.TillerEvent)
    }
    built = set(re.findall(r'"type": "(\w+)"', inspect.getsource(events)))
    return described | built


def test_protocol_doc_has_one_row_per_event_type() -> None:
    types = event_types()
    assert {"turnStarted", "sliced", "agentStarted", "turnEnded"} <= types
    assert one_row_each(section("Events")) == types


def test_protocol_doc_lists_every_slash_command() -> None:
    listed = {name.split()[0].removeprefix("/") for name in first_column(section("Slash commands"))}
    assert listed == commands.BUILTIN_NAMES


def slug(heading: str) -> str:
    """A heading's anchor as GitHub makes it."""
    kept = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return kept.replace(" ", "-")


def test_protocol_doc_points_only_to_files_and_sections_that_exist() -> None:
    anchors = {slug(h) for h in re.findall(r"^#+ (.+)$", TEXT, re.MULTILINE)}
    for target in re.findall(r"\]\(([^)\s]+)\)", TEXT):
        if target.startswith(("http://", "https://")):
            continue
        path, _, anchor = target.partition("#")
        if path:
            assert (DOC.parent / path).exists(), target
        else:
            assert anchor in anchors, target
    paths = re.findall(r"\b((?:docs|server|bench|tests|vscode-extension)/[\w./-]+\.\w+)", TEXT)
    assert paths
    for path in paths:
        assert (REPO / path).exists(), path
    for quoted in re.findall(r'\b[Ss]ee "([^"]+)"', TEXT):
        assert slug(" ".join(quoted.split())) in anchors, quoted
