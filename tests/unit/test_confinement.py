"""Confinement by file descriptor: no path, symlink, hard link or race leads a file tool out.

Real files in a temp directory: a workspace ``ws`` and an ``outside`` directory next to it
holding what the tools must never read or write.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from disk import SECRET
from swap_race import Flipper
from tiller.workspace.tools.base import FileStamp, ToolContext, ToolResult
from tiller.workspace.tools.confined import Root
from tiller.workspace.tools.files import EditFile, ListFiles, ReadFile, WriteFile
from tiller.workspace.tools.search import Grep


def files_under(path: Path) -> set[str]:
    return {str(p.relative_to(path)) for p in path.rglob("*")}


def refused(result: ToolResult, *words: str) -> bool:
    return (
        result.is_error and all(w in result.output for w in words) and SECRET not in result.output
    )


# --- hard links -----------------------------------------------------------------------------


async def test_hard_link_to_an_outside_file_is_not_read(
    ws: Path, outside: Path, ctx: ToolContext
) -> None:
    os.link(outside / "secret.txt", ws / "innocent.txt")
    result = await ReadFile().run({"path": "innocent.txt"}, ctx)
    assert refused(result, "hard link", "confirm")
    assert not ctx.reads.stamps  # nothing recorded: a later edit is refused too


async def test_hard_link_to_an_outside_file_is_not_edited_or_overwritten(
    ws: Path, outside: Path, ctx: ToolContext
) -> None:
    os.link(outside / "secret.txt", ws / "innocent.txt")
    stat_before = (outside / "secret.txt").stat()
    # Even a stale read of the file (recorded before it was linked) does not open the way.
    ctx.reads.record((ws / "innocent.txt").resolve(), FileStamp.of(stat_before))
    edited = await EditFile().run(
        {"path": "innocent.txt", "old_string": "TOPSECRET", "new_string": "pwned"}, ctx
    )
    written = await WriteFile().run({"path": "innocent.txt", "content": "pwned\n"}, ctx)
    assert refused(edited, "hard link") and refused(written, "hard link")
    assert (outside / "secret.txt").read_text() == f"{SECRET}\n"
    assert (ws / "innocent.txt").stat().st_ino == stat_before.st_ino  # not replaced either


async def test_grep_skips_hard_linked_files_and_says_so(
    ws: Path, outside: Path, ctx: ToolContext
) -> None:
    os.link(outside / "secret.txt", ws / "innocent.txt")
    (ws / "plain.txt").write_text("TOPSECRET is a word here too\n")
    result = await Grep().run({"pattern": "TOPSECRET"}, ctx)
    assert not result.is_error
    assert "plain.txt:1:" in result.output and SECRET not in result.output
    assert "skipped 1 file(s) with other hard links" in result.output
    direct = await Grep().run({"pattern": "TOPSECRET", "path": "innocent.txt"}, ctx)
    assert refused(direct, "hard link")


# --- paths and symbolic links ---------------------------------------------------------------


async def test_dot_dot_and_absolute_paths_outside_are_refused(
    ws: Path, outside: Path, ctx: ToolContext
) -> None:
    for raw in ("../outside/secret.txt", str(outside / "secret.txt"), "a/../../outside/secret.txt"):
        (ws / "a").mkdir(exist_ok=True)
        assert refused(await ReadFile().run({"path": raw}, ctx), "outside the workspace"), raw
    write = await WriteFile().run({"path": "../outside/new.txt", "content": "x"}, ctx)
    assert refused(write, "outside the workspace")
    assert files_under(outside) == {"secret.txt"}


async def test_nul_byte_in_a_path_is_a_clear_error(ctx: ToolContext) -> None:
    result = await ReadFile().run({"path": "a\x00b"}, ctx)
    assert refused(result, "NUL byte")


async def test_absolute_path_inside_the_workspace_works(ws: Path, ctx: ToolContext) -> None:
    (ws / "a.txt").write_text("hello\n")
    result = await ReadFile().run({"path": str(ws / "a.txt")}, ctx)
    assert not result.is_error and "hello" in result.output


async def test_symlinks_that_stay_inside_are_followed(ws: Path, ctx: ToolContext) -> None:
    (ws / "real").mkdir()
    (ws / "real/target.txt").write_text("inside\n")
    (ws / "rel.txt").symlink_to("real/target.txt")
    (ws / "abs.txt").symlink_to(ws / "real/target.txt")
    (ws / "dirlink").symlink_to("real")
    (ws / "real/up.txt").symlink_to("../real/target.txt")
    for raw in ("rel.txt", "abs.txt", "dirlink/target.txt", "real/up.txt", "dirlink/../rel.txt"):
        result = await ReadFile().run({"path": raw}, ctx)
        assert not result.is_error and "inside" in result.output, (raw, result.output)
    # A write through a link changes the target and keeps the link.
    write = await WriteFile().run({"path": "rel.txt", "content": "changed\n"}, ctx)
    assert not write.is_error, write.output
    assert (ws / "rel.txt").is_symlink()
    assert (ws / "real/target.txt").read_text() == "changed\n"
    assert "real/target.txt" in write.output  # shown by where it really is


async def test_symlinks_leading_outside_are_refused_everywhere(
    ws: Path, outside: Path, ctx: ToolContext
) -> None:
    (ws / "file_link.txt").symlink_to(outside / "secret.txt")
    (ws / "dir_link").symlink_to(outside)
    (ws / "rel_link").symlink_to("../outside")
    (ws / "dangling.txt").symlink_to(outside / "new.txt")
    for raw in ("file_link.txt", "dir_link/secret.txt", "rel_link/secret.txt"):
        assert refused(await ReadFile().run({"path": raw}, ctx), "outside the workspace"), raw
    for raw in ("dir_link/new.txt", "rel_link/new.txt", "dangling.txt", "dir_link/deep/new.txt"):
        result = await WriteFile().run({"path": raw, "content": "x"}, ctx)
        assert refused(result, "outside the workspace"), raw
    assert refused(await ListFiles().run({"path": "dir_link"}, ctx), "outside the workspace")
    assert refused(await Grep().run({"pattern": "T", "path": "rel_link"}, ctx), "outside")
    listing = await ListFiles().run({}, ctx)  # links are listed, never followed
    assert "dir_link" in listing.output and "secret.txt" not in listing.output
    assert SECRET not in (await Grep().run({"pattern": "TOPSECRET"}, ctx)).output
    assert files_under(outside) == {"secret.txt"}


async def test_symlink_loop_is_an_error_not_a_hang(ws: Path, ctx: ToolContext) -> None:
    (ws / "a").symlink_to("b")
    (ws / "b").symlink_to("a")
    result = await ReadFile().run({"path": "a"}, ctx)
    assert refused(result, "too many symbolic links")


def test_root_locates_by_descriptor_and_reports_real_parts(ws: Path) -> None:
    (ws / "x/y").mkdir(parents=True)
    (ws / "link").symlink_to("x/y")
    with Root.of(ws).locate("link/../y/f.txt") as spot:
        assert spot.parts == ("x", "y", "f.txt")  # `..` after a link walks the real tree
        assert spot.lstat() is None


# --- special files and big files --------------------------------------------------------------


async def test_fifo_is_refused_by_every_tool_without_blocking(ws: Path, ctx: ToolContext) -> None:
    os.mkfifo(ws / "pipe")
    assert refused(await ReadFile().run({"path": "pipe"}, ctx), "not a regular file")
    assert refused(await WriteFile().run({"path": "pipe", "content": "x"}, ctx), "regular file")
    edit = await EditFile().run({"path": "pipe", "old_string": "a", "new_string": "b"}, ctx)
    assert refused(edit, "regular file")
    assert refused(await Grep().run({"pattern": "x", "path": "pipe"}, ctx), "regular file")
    searched = await Grep().run({"pattern": "x"}, ctx)  # the walk skips it
    assert not searched.is_error
    preview = await WriteFile().preview({"path": "pipe", "content": "x"}, ctx)
    assert preview.fields["before"] == ""


async def test_character_device_is_refused(ws: Path, ctx: ToolContext) -> None:
    try:
        os.mknod(ws / "null", 0o666 | 0o020000, os.makedev(1, 3))
    except (PermissionError, OSError):
        pytest.skip("cannot create a device node here")
    assert refused(await ReadFile().run({"path": "null"}, ctx), "not a regular file")


async def test_write_is_atomic_keeps_mode_and_leaves_no_temp_file(
    ws: Path, ctx: ToolContext
) -> None:
    path = ws / "run.sh"
    path.write_text("echo 1\n")
    path.chmod(0o750)
    await ReadFile().run({"path": "run.sh"}, ctx)
    result = await WriteFile().run({"path": "run.sh", "content": "echo 2\n"}, ctx)
    assert not result.is_error, result.output
    assert path.read_text() == "echo 2\n" and (path.stat().st_mode & 0o777) == 0o750
    assert sorted(os.listdir(ws)) == ["run.sh"]


async def test_read_only_file_is_not_replaced(ws: Path, ctx: ToolContext) -> None:
    if os.geteuid() == 0:
        pytest.skip("root may write any file")
    path = ws / "locked.txt"
    path.write_text("keep\n")
    path.chmod(0o444)
    await ReadFile().run({"path": "locked.txt"}, ctx)
    result = await WriteFile().run({"path": "locked.txt", "content": "x\n"}, ctx)
    assert refused(result, "read-only")
    assert path.read_text() == "keep\n"


async def test_refused_write_creates_no_directories(
    ws: Path, outside: Path, ctx: ToolContext
) -> None:
    (ws / "d").mkdir()
    (ws / "d/f.txt").write_text("x\n")
    result = await WriteFile().run({"path": "d/f.txt", "content": "y\n"}, ctx)  # not read
    assert result.is_error
    created = await WriteFile().run({"path": "n1/n2/f.txt", "content": "y\n"}, ctx)
    assert not created.is_error and (ws / "n1/n2/f.txt").read_text() == "y\n"


# --- races: a directory swapped for a symbolic link while the tools run -----------------------


@pytest.fixture
def flipping(ws: Path, outside: Path) -> Iterator[Flipper]:
    (ws / "sub").mkdir()
    (ws / "sub/secret.txt").write_text("harmless copy inside\n")
    with Flipper(ws, outside) as flipper:
        yield flipper


async def test_writes_never_escape_while_a_directory_flips_to_a_symlink(
    ws: Path, outside: Path, ctx: ToolContext, flipping: Flipper
) -> None:
    results = [
        await WriteFile().run({"path": f"sub/f{n}.txt", "content": f"{n}\n"}, ctx)
        for n in range(200)
    ]
    flipping.halt()
    assert files_under(outside) == {"secret.txt"}
    assert (outside / "secret.txt").read_text() == f"{SECRET}\n"
    written = [n for n, r in enumerate(results) if not r.is_error]
    landed = {name for name in files_under(ws) if name.rpartition("/")[2].startswith("f")}
    landed = {name.rpartition("/")[2] for name in landed}
    assert landed == {f"f{n}.txt" for n in written}  # every success is inside, nowhere else
    assert written and flipping.as_link > 0
    for result in results:
        assert not result.is_error or "outside" in result.output or "try again" in result.output


async def test_reads_never_escape_while_a_directory_flips_to_a_symlink(
    ws: Path, ctx: ToolContext, flipping: Flipper
) -> None:
    reads = [await ReadFile().run({"path": "sub/secret.txt"}, ctx) for _ in range(200)]
    greps = [(await Grep().run({"pattern": "TOPSECRET"}, ctx)).output for _ in range(50)]
    lists = [(await ListFiles().run({"path": "sub"}, ctx)).output for _ in range(50)]
    flipping.halt()
    assert flipping.as_link > 0
    for read in reads:  # the copy inside, or an error; never the file outside
        assert ("harmless copy inside" in read.output) != read.is_error, read.output
    assert not any(SECRET in out for out in [r.output for r in reads] + greps)
    assert not any("secret.txt" in out and "sub/" not in out for out in lists)


async def test_edits_never_escape_while_a_directory_flips_to_a_symlink(
    ws: Path, outside: Path, ctx: ToolContext, flipping: Flipper
) -> None:
    for n in range(100):
        await ReadFile().run({"path": "sub/secret.txt"}, ctx)
        await EditFile().run(
            {"path": "sub/secret.txt", "old_string": "copy", "new_string": f"copy{n}"}, ctx
        )
    flipping.halt()
    assert (outside / "secret.txt").read_text() == f"{SECRET}\n"
    assert files_under(outside) == {"secret.txt"}
