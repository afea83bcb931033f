"""read_file, write_file and edit_file through an editor's buffers (``ToolContext.editor``),
and bash through an editor's terminal (``ToolContext.terminal``).

A fake editor holds buffers that differ from the disk (unsaved changes); a real temp
workspace holds the disk, and an ``outside`` directory what the tools must never touch.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path

import pytest

from disk import SECRET
from tiller.jsontypes import JSON
from tiller.tools.base import DiffStat, ReadLedger, Tool, ToolContext, ToolResult
from tiller.tools.files import EditFile, ReadFile, WriteFile
from tiller.tools.live_output import LiveOutput
from tiller.tools.shell import Bash, CommandRun
from tiller.workspace.roots import WorkspaceRoots
from tiller.workspace.sandbox import ShellPolicy


@dataclass
class FakeEditor:
    """Buffers by absolute path; no buffer: None (the tools read the disk)."""

    buffers: dict[Path, str] = field(default_factory=dict)
    accepts_writes: bool = True
    asked: list[Path] = field(default_factory=list)
    written: list[tuple[Path, str]] = field(default_factory=list)

    async def read_text(self, path: Path) -> str | None:
        self.asked.append(path)
        return self.buffers.get(path)

    async def write_text(self, path: Path, text: str) -> bool:
        self.asked.append(path)
        if not self.accepts_writes:
            return False
        self.written.append((path, text))
        self.buffers[path] = text
        return True


@pytest.fixture
def editor() -> FakeEditor:
    return FakeEditor()


@pytest.fixture
def ctx(ws: Path, editor: FakeEditor) -> ToolContext:
    return ToolContext(roots=WorkspaceRoots.of(ws), reads=ReadLedger(), editor=editor)


def open_in_editor(editor: FakeEditor, path: Path, disk: str, unsaved: str) -> Path:
    """A file on disk whose editor buffer holds unsaved changes."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(disk)
    editor.buffers[path] = unsaved
    return path


async def edit(ctx: ToolContext, path: str, old: str, new: str) -> ToolResult:
    return await EditFile().run({"path": path, "old_string": old, "new_string": new}, ctx)


# --- read_file ------------------------------------------------------------------------------


async def test_read_shows_the_unsaved_buffer_not_the_disk(
    ws: Path, ctx: ToolContext, editor: FakeEditor
) -> None:
    open_in_editor(editor, ws / "a.txt", "on disk\n", "unsaved one\nunsaved two\n")
    result = await ReadFile().run({"path": "a.txt"}, ctx)
    assert not result.is_error, result.output
    assert result.output == "     1\tunsaved one\n     2\tunsaved two"
    assert editor.asked == [ws / "a.txt"]


async def test_read_pages_and_cuts_the_buffer_as_it_would_the_disk(
    ws: Path, ctx: ToolContext, editor: FakeEditor
) -> None:
    lines = "".join(f"line {n}\n" for n in range(1, 11)) + "x" * 2500 + "\n"
    open_in_editor(editor, ws / "long.txt", "short\n", lines)
    page = await ReadFile().run({"path": "long.txt", "offset": 3, "limit": 2}, ctx)
    assert page.output == (
        "     3\tline 3\n     4\tline 4\n"
        "… [showing lines 3-4 of 11; call read_file with offset=5 to read more]"
    )
    cut = await ReadFile().run({"path": "long.txt", "offset": 11}, ctx)
    assert cut.output.endswith("… [line cut at 2000 characters]")


async def test_read_refuses_a_binary_buffer_like_a_binary_file(
    ws: Path, ctx: ToolContext, editor: FakeEditor
) -> None:
    open_in_editor(editor, ws / "b.txt", "text\n", "a\x00b")
    result = await ReadFile().run({"path": "b.txt"}, ctx)
    assert result.is_error and "binary" in result.output


async def test_read_uses_the_disk_when_the_editor_has_no_buffer(
    ws: Path, ctx: ToolContext, editor: FakeEditor
) -> None:
    (ws / "a.txt").write_text("from disk\n")
    result = await ReadFile().run({"path": "a.txt"}, ctx)
    assert result.output == "     1\tfrom disk"
    assert editor.asked == [ws / "a.txt"]


# --- write_file -----------------------------------------------------------------------------


async def test_write_goes_to_the_editor_not_the_disk(
    ws: Path, ctx: ToolContext, editor: FakeEditor
) -> None:
    path = open_in_editor(editor, ws / "a.txt", "disk\n", "one\ntwo\n")
    await ReadFile().run({"path": "a.txt"}, ctx)
    result = await WriteFile().run({"path": "a.txt", "content": "one\n2\n3\n"}, ctx)
    assert not result.is_error, result.output
    assert result.output == "Overwrote a.txt: 8 bytes, 3 lines"
    assert result.diff == DiffStat(added=2, removed=1)  # against the buffer, not the disk
    assert editor.written == [(path, "one\n2\n3\n")]
    assert path.read_text() == "disk\n"


async def test_write_creates_a_new_file_through_the_editor(
    ws: Path, ctx: ToolContext, editor: FakeEditor
) -> None:
    result = await WriteFile().run({"path": "new.txt", "content": "hi\n"}, ctx)
    assert result.output == "Created new.txt: 3 bytes, 1 lines"
    assert result.diff == DiffStat(added=1, removed=0)
    assert editor.written == [(ws / "new.txt", "hi\n")]
    # Written through the editor, recorded: an edit right after needs no read.
    assert not (await edit(ctx, "new.txt", "hi", "ho")).is_error
    assert editor.buffers[ws / "new.txt"] == "ho\n"


async def test_write_into_a_new_directory_uses_the_disk_which_creates_it(
    ws: Path, ctx: ToolContext, editor: FakeEditor
) -> None:
    result = await WriteFile().run({"path": "a/b/c.txt", "content": "x"}, ctx)
    assert not result.is_error, result.output
    assert (ws / "a/b/c.txt").read_text() == "x"
    assert editor.written == []


async def test_write_of_an_unread_buffer_is_refused(
    ws: Path, ctx: ToolContext, editor: FakeEditor
) -> None:
    path = open_in_editor(editor, ws / "a.txt", "disk\n", "buffer\n")
    result = await WriteFile().run({"path": "a.txt", "content": "new\n"}, ctx)
    assert result.is_error
    assert "has not been read in this session" in result.output
    assert editor.written == [] and path.read_text() == "disk\n"


async def test_write_falls_back_to_the_disk_when_the_editor_declines(
    ws: Path, ctx: ToolContext, editor: FakeEditor
) -> None:
    editor.accepts_writes = False
    result = await WriteFile().run({"path": "new.txt", "content": "on disk\n"}, ctx)
    assert not result.is_error, result.output
    assert (ws / "new.txt").read_text() == "on disk\n"


# --- edit_file ------------------------------------------------------------------------------


async def test_edit_changes_the_buffer_and_writes_it_through_the_editor(
    ws: Path, ctx: ToolContext, editor: FakeEditor
) -> None:
    path = open_in_editor(editor, ws / "a.py", "x = 1\n", "x = 1\ny = 2  # unsaved\n")
    await ReadFile().run({"path": "a.py"}, ctx)
    result = await edit(ctx, "a.py", "y = 2", "y = 3")
    assert not result.is_error, result.output
    assert result.output == (
        "Edited a.py: replaced 1 occurrence.\n     1\tx = 1\n     2\ty = 3  # unsaved"
    )
    assert result.diff == DiffStat(added=1, removed=1)
    assert editor.written == [(path, "x = 1\ny = 3  # unsaved\n")]
    assert path.read_text() == "x = 1\n"
    # The ledger knows the new text: a second edit needs no new read.
    assert not (await edit(ctx, "a.py", "x = 1", "x = 0")).is_error
    assert editor.buffers[path] == "x = 0\ny = 3  # unsaved\n"


async def test_edit_is_refused_after_the_buffer_changed_since_the_read(
    ws: Path, ctx: ToolContext, editor: FakeEditor
) -> None:
    path = open_in_editor(editor, ws / "a.txt", "disk\n", "typed\n")
    await ReadFile().run({"path": "a.txt"}, ctx)
    editor.buffers[path] = "typed more\n"  # the user keeps typing; the disk is untouched
    result = await edit(ctx, "a.txt", "typed", "changed")
    assert result.is_error
    assert result.output == (
        "a.txt changed in the editor since it was last read: read it again before editing."
    )
    assert editor.written == []
    await ReadFile().run({"path": "a.txt"}, ctx)
    assert not (await edit(ctx, "a.txt", "typed more", "changed")).is_error


async def test_edit_of_an_unread_file_is_refused(
    ws: Path, ctx: ToolContext, editor: FakeEditor
) -> None:
    open_in_editor(editor, ws / "a.txt", "disk\n", "buffer\n")
    result = await edit(ctx, "a.txt", "buffer", "changed")
    assert result.is_error and "has not been read" in result.output
    assert editor.written == []


async def test_edit_falls_back_to_the_disk_when_the_editor_declines_the_write(
    ws: Path, ctx: ToolContext, editor: FakeEditor
) -> None:
    """An editor that reads but does not write: the disk is edited, checked by its own stamp
    (recorded with the buffer's digest when the editor served the read)."""
    path = open_in_editor(editor, ws / "a.txt", "same\n", "same\n")
    editor.accepts_writes = False
    await ReadFile().run({"path": "a.txt"}, ctx)
    result = await edit(ctx, "a.txt", "same", "edited")
    assert not result.is_error, result.output
    assert path.read_text() == "edited\n"


async def test_edit_falls_back_to_the_disk_when_the_editor_has_no_buffer(
    ws: Path, ctx: ToolContext, editor: FakeEditor
) -> None:
    path = ws / "a.txt"
    path.write_text("plain\n")
    await ReadFile().run({"path": "a.txt"}, ctx)
    result = await edit(ctx, "a.txt", "plain", "edited")
    assert not result.is_error, result.output
    assert path.read_text() == "edited\n"
    assert editor.written == []


async def test_edit_preview_diffs_the_buffer(
    ws: Path, ctx: ToolContext, editor: FakeEditor
) -> None:
    open_in_editor(editor, ws / "a.txt", "disk\n", "buffer text\n")
    preview = await EditFile().preview(
        {"path": "a.txt", "old_string": "buffer", "new_string": "edited"}, ctx
    )
    assert preview.to_wire() == {
        "kind": "diff",
        "path": "a.txt",
        "before": "buffer text\n",
        "after": "edited text\n",
    }
    write = await WriteFile().preview({"path": "a.txt", "content": "all new\n"}, ctx)
    assert write.fields["before"] == "buffer text\n"


async def test_a_file_only_in_the_editor_is_served_by_it_else_the_disk_answers(
    ws: Path, ctx: ToolContext, editor: FakeEditor
) -> None:
    """An editor that has not saved a new buffer yet: read and edit see it."""
    editor.buffers[ws / "draft.txt"] = "not saved yet\n"
    assert (await ReadFile().run({"path": "draft.txt"}, ctx)).output == "     1\tnot saved yet"
    assert not (await edit(ctx, "draft.txt", "not", "now")).is_error
    assert editor.buffers[ws / "draft.txt"] == "now saved yet\n"
    assert not (ws / "draft.txt").exists()

    missing = await ReadFile().run({"path": "missing.txt"}, ctx)
    assert missing.is_error and missing.output == "missing.txt does not exist"
    not_there = await edit(ctx, "missing.txt", "a", "b")
    assert not_there.output == "missing.txt does not exist: use write_file to create a new file"


# --- confinement: the same answers as without an editor, and the editor is never asked -----


def make_cases(ws: Path, outside: Path) -> None:
    (ws / "link").symlink_to(outside / "secret.txt")
    (ws / "dirlink").symlink_to(outside)
    os.link(outside / "secret.txt", ws / "hardlink.txt")
    (ws / "sub").mkdir()
    os.mkfifo(ws / "fifo")


CALLS = [
    ("read_file", {"path": "../outside/secret.txt"}),
    ("read_file", {"path": "link"}),
    ("read_file", {"path": "dirlink/secret.txt"}),
    ("read_file", {"path": "hardlink.txt"}),
    ("read_file", {"path": "sub"}),
    ("read_file", {"path": "fifo"}),
    ("write_file", {"path": "../outside/secret.txt", "content": "x"}),
    ("write_file", {"path": "link", "content": "x"}),
    ("write_file", {"path": "dirlink/new.txt", "content": "x"}),
    ("write_file", {"path": "hardlink.txt", "content": "x"}),
    ("write_file", {"path": "sub", "content": "x"}),
    ("edit_file", {"path": "../outside/secret.txt", "old_string": "TOP", "new_string": "x"}),
    ("edit_file", {"path": "link", "old_string": "TOP", "new_string": "x"}),
    ("edit_file", {"path": "hardlink.txt", "old_string": "TOP", "new_string": "x"}),
]
TOOLS: dict[str, Tool] = {
    "read_file": ReadFile(),
    "write_file": WriteFile(),
    "edit_file": EditFile(),
}


@pytest.mark.parametrize(("tool", "tool_input"), CALLS, ids=[f"{t}:{i['path']}" for t, i in CALLS])
async def test_refusals_are_the_same_as_without_an_editor_and_never_reach_it(
    ws: Path, outside: Path, ctx: ToolContext, editor: FakeEditor, tool: str, tool_input: JSON
) -> None:
    make_cases(ws, outside)
    for name in ("secret.txt", "new.txt"):
        editor.buffers[outside / name] = f"{SECRET} in a buffer\n"
    with_editor = await TOOLS[tool].run(tool_input, ctx)
    without = await TOOLS[tool].run(tool_input, replace(ctx, editor=None, reads=ReadLedger()))
    assert with_editor.is_error, with_editor.output
    assert with_editor == without
    assert SECRET not in with_editor.output
    assert editor.asked == []
    assert (outside / "secret.txt").read_text() == f"{SECRET}\n"
    assert not (outside / "new.txt").exists()


# --- the editor's terminal (ToolContext.terminal): approved, unconfined commands only --------


@dataclass
class FakeTerminal:
    """Records the commands it is given; ``starts``: False answers None (not started)."""

    starts: bool = True
    ran: list[str] = field(default_factory=list)

    async def run(
        self,
        command: str,
        cwd: Path,
        env: Mapping[str, str],
        time_limit: float,
        output_cap: int,
        live: LiveOutput | None,
    ) -> CommandRun | None:
        self.ran.append(command)
        return CommandRun("from the editor's terminal\n", 0) if self.starts else None


@pytest.fixture
def terminal() -> FakeTerminal:
    return FakeTerminal()


async def test_an_approved_command_runs_in_the_editors_terminal(
    ws: Path, ctx: ToolContext, terminal: FakeTerminal
) -> None:
    result = await Bash().run({"command": "touch x"}, replace(ctx, terminal=terminal))
    assert result.output == "from the editor's terminal\n"
    assert terminal.ran == ["touch x"]
    assert not (ws / "x").exists()  # Tiller's runner did not run it too


async def test_a_command_run_unasked_never_reaches_the_editors_terminal(
    ctx: ToolContext, terminal: FakeTerminal
) -> None:
    unasked = replace(ctx, terminal=terminal, sandboxed=True)
    result = await Bash().run({"command": "echo here"}, unasked)
    assert result.output == "here\n"
    assert terminal.ran == []


async def test_a_command_the_settings_confine_stays_in_the_sandbox(
    ctx: ToolContext, terminal: FakeTerminal
) -> None:
    always = ShellPolicy(setting="always", backend="bwrap")
    await Bash().run({"command": "echo here"}, replace(ctx, terminal=terminal, shell=always))
    assert terminal.ran == []


async def test_a_terminal_that_does_not_start_leaves_the_command_to_tillers_runner(
    ws: Path, ctx: ToolContext
) -> None:
    terminal = FakeTerminal(starts=False)
    result = await Bash().run({"command": "echo here"}, replace(ctx, terminal=terminal))
    assert result.output == "here\n"
    assert terminal.ran == ["echo here"]
