"""Confinement by file descriptor: no path, symlink, hard link or race leads a file tool out.

Real files in a temp directory: a workspace ``ws`` and an ``outside`` directory next to it
holding what the tools must never read or write.
"""

from __future__ import annotations

import errno
import os
import secrets
import socket
import stat
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from disk import SECRET
from swap_race import Flipper
from tiller.errors import ToolInputError
from tiller.tools.base import FileStamp, ToolContext, ToolResult
from tiller.tools.files import EditFile, ListFiles, ReadFile, WriteFile
from tiller.tools.search import Grep
from tiller.workspace.confined import (
    Changed,
    MissingDirectory,
    Root,
    Spot,
    open_dir_at,
    open_regular,
    read_all,
    refuse_hard_links,
    replace_file,
)


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


# --- confined.py directly: what the mutation run showed untested (issue 34) -------------------


def _opens(path: Path) -> bool:
    """Whether the kernel opens ``path`` (following its links)."""
    try:
        os.close(os.open(path, os.O_RDONLY))
    except OSError:
        return False
    return True


def _locates(root: Root, raw: str) -> bool:
    try:
        with root.locate(raw) as spot, open_regular(spot):
            return True
    except ToolInputError:
        return False


def test_links_are_followed_as_far_as_the_kernel_follows_them(ws: Path) -> None:
    """40 links in a path, like the kernel (MAX_SYMLINKS); one more is refused."""
    (ws / "t.txt").write_text("t\n")
    previous = "t.txt"
    for n in range(1, 42):
        (ws / f"l{n}").symlink_to(previous)
        previous = f"l{n}"
    root = Root.of(ws)
    assert _opens(ws / "l40") and _locates(root, "l40")
    assert not _opens(ws / "l41") and not _locates(root, "l41")


def test_locate_leaves_no_descriptor_open(ws: Path) -> None:
    (ws / "a/b/c").mkdir(parents=True)
    (ws / "a/b/c/f.txt").write_text("f\n")
    (ws / "abs").symlink_to(ws / "a/b")
    before = sorted(os.listdir("/proc/self/fd"))
    for raw in ("a/b/c/f.txt", "abs/c/f.txt", "a/b/..", "missing.txt"):
        with Root.of(ws).locate(raw):
            pass
    with pytest.raises(MissingDirectory), Root.of(ws).locate("a/none/f.txt"):
        pass
    assert sorted(os.listdir("/proc/self/fd")) == before


def test_an_absolute_link_deep_in_the_tree_resolves_from_the_root(ws: Path) -> None:
    (ws / "sub/deep").mkdir(parents=True)
    (ws / "a.txt").write_text("top\n")
    (ws / "sub/a.txt").write_text("sub\n")
    (ws / "sub/deep/link").symlink_to(ws / "a.txt")
    with Root.of(ws).locate("sub/deep/link") as spot, open_regular(spot) as (fd, _):
        assert spot.parts == ("a.txt",)
        assert read_all(fd, 100) == b"top\n"


def test_a_path_ending_in_dot_dot_is_that_directory(ws: Path) -> None:
    (ws / "sub/deep").mkdir(parents=True)
    with Root.of(ws).locate("sub/deep/..") as spot:
        assert (spot.name, spot.parts) == (".", ("sub",))
        assert os.listdir(spot.dir_fd) == ["deep"]


@pytest.mark.parametrize(
    ("umask", "mode"), [(0o027, 0o750), (0o022, 0o755)], ids=["umask-027", "umask-022"]
)
def test_missing_directories_are_made_only_when_asked_with_the_umask_mode(
    ws: Path, umask: int, mode: int
) -> None:
    with pytest.raises(MissingDirectory), Root.of(ws).locate("new/dir/x.txt"):
        pass
    assert not (ws / "new").exists()
    old = os.umask(umask)
    try:
        with Root.of(ws).locate("new/dir/x.txt", make_parents=True) as spot:
            assert spot.parts == ("new", "dir", "x.txt")
    finally:
        os.umask(old)
    assert [(ws / p).stat().st_mode & 0o7777 for p in ("new", "new/dir")] == [mode, mode]


@pytest.mark.parametrize("kind", ["file", "fifo"])
def test_a_file_on_the_way_is_no_directory_and_is_never_opened(ws: Path, kind: str) -> None:
    """Not even a FIFO, whose opening would wait for a writer."""
    if kind == "fifo":
        os.mkfifo(ws / "p")
    else:
        (ws / "p").write_text("p\n")
    outcome: list[BaseException] = []

    def walk() -> None:
        try:
            with Root.of(ws).locate("p/x.txt"):
                pass
        except BaseException as error:  # kept for the assertion below
            outcome.append(error)

    _returns_without_a_writer(ws / "p", walk)
    assert len(outcome) == 1 and type(outcome[0]) is ToolInputError, outcome
    assert "is a file, not a directory" in str(outcome[0])


def _returns_without_a_writer(fifo: Path, call: Callable[[], object]) -> None:
    """Run ``call`` in a thread: it must return on its own. If it waits on the FIFO, a writer
    opened after 10 s lets it go, and the test fails."""
    done = threading.Event()

    def run() -> None:
        call()
        done.set()

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    returned = done.wait(10)
    if not returned and stat.S_ISFIFO(os.lstat(fifo).st_mode):
        os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))  # release the waiting open
    thread.join(10)
    assert returned, "it waited for a writer on the FIFO"


def test_a_root_that_is_no_directory_is_refused(ws: Path) -> None:
    (ws / "f").write_text("f\n")
    with pytest.raises(NotADirectoryError), Root.of(ws / "f").locate("."):
        pass


def test_paths_are_split_relative_to_the_root(ws: Path) -> None:
    root = Root.of(ws)
    assert root.parts_of(f"{ws}/sub/a.txt") == ["sub", "a.txt"]
    assert root.parts_of(str(ws)) == []
    assert root.parts_of("sub/../a.txt") == ["sub", "..", "a.txt"]
    named = Root(root.path, root.given, strip="api")
    assert named.parts_of("api/src/x.py") == ["src", "x.py"]
    assert named.parts_of("src/x.py") == ["src", "x.py"]


def test_a_spots_status_is_the_names_own_even_when_it_became_a_link(
    ws: Path, outside: Path
) -> None:
    (ws / "a.txt").write_text("a\n")
    with Root.of(ws).locate("a.txt") as spot:
        (ws / "a.txt").unlink()
        (ws / "a.txt").symlink_to(outside / "secret.txt")
        st = spot.lstat()
        assert st is not None and stat.S_ISLNK(st.st_mode)
        with pytest.raises(Changed), open_regular(spot):
            pass


@pytest.mark.parametrize("kind", ["fifo", "socket"])
def test_a_file_swapped_after_its_status_was_taken_is_refused_without_blocking(
    ws: Path, monkeypatch: pytest.MonkeyPatch, kind: str
) -> None:
    """Between the status check and the opening, a.txt became a FIFO or a socket."""
    (ws / "a.txt").write_text("a\n")
    regular = os.lstat(ws / "a.txt")
    monkeypatch.setattr(Spot, "lstat", lambda self: regular)
    (ws / "a.txt").unlink()
    if kind == "fifo":
        os.mkfifo(ws / "a.txt")
    else:
        listener = socket.socket(socket.AF_UNIX)
        listener.bind(str(ws / "a.txt"))
    outcome: list[BaseException] = []

    def read() -> None:
        try:
            with Root.of(ws).locate("a.txt") as spot, open_regular(spot):
                pass
        except BaseException as error:  # kept for the assertion below
            outcome.append(error)

    _returns_without_a_writer(ws / "a.txt", read)
    assert len(outcome) == 1 and type(outcome[0]) is ToolInputError, outcome
    assert "not a regular file" in str(outcome[0])


def test_open_dir_at_tells_what_stands_in_the_way(
    ws: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (ws / "d").mkdir()
    (ws / "f").write_text("f\n")
    (ws / "l").symlink_to("d")
    root_fd = os.open(ws, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.close(open_dir_at(root_fd, "d", "d"))
        for name, error, words in [
            ("missing", ToolInputError, "does not exist"),
            ("f", ToolInputError, "is a file, not a directory"),
            ("l", Changed, "became a symbolic link"),
        ]:
            with pytest.raises(error) as raised:
                open_dir_at(root_fd, name, name)
            assert type(raised.value) is error and words in str(raised.value), name
        real_open = os.open

        def not_a_directory_once(path: str, flags: int, *args: object, **kwargs: object) -> int:
            monkeypatch.setattr(os, "open", real_open)
            raise OSError(errno.ENOTDIR, "swapped meanwhile")

        monkeypatch.setattr(os, "open", not_a_directory_once)  # d was a file for a moment
        with pytest.raises(Changed, match="changed while it was opened"):
            open_dir_at(root_fd, "d", "d")
    finally:
        os.close(root_fd)


def test_a_directory_that_changes_back_while_it_is_entered_is_tried_again(
    ws: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (ws / "sub").mkdir()
    (ws / "sub/a.txt").write_text("a\n")
    real_open = os.open

    def a_link_for_a_moment(path: str, flags: int, *args: object, **kwargs: object) -> int:
        if path == "sub":
            monkeypatch.setattr(os, "open", real_open)
            raise OSError(errno.ELOOP, "a link for a moment")
        return real_open(path, flags, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(os, "open", a_link_for_a_moment)
    with Root.of(ws).locate("sub/a.txt") as spot:
        assert spot.parts == ("sub", "a.txt")


@pytest.mark.parametrize(
    ("error", "changed"),
    [
        (FileNotFoundError(errno.ENOENT, "gone"), True),
        (OSError(errno.EINVAL, "no longer a link"), True),
        (PermissionError(errno.EACCES, "denied"), False),
    ],
)
def test_a_link_that_changes_while_it_is_read_is_a_change_not_a_failure(
    ws: Path, monkeypatch: pytest.MonkeyPatch, error: OSError, changed: bool
) -> None:
    (ws / "a.txt").write_text("a\n")
    (ws / "l").symlink_to("a.txt")

    def readlink(path: str, *, dir_fd: int | None = None) -> str:
        raise error

    monkeypatch.setattr(os, "readlink", readlink)
    with pytest.raises(Changed if changed else PermissionError), Root.of(ws).locate("l"):
        pass


def test_a_parent_removed_while_a_directory_is_made_is_a_change(
    ws: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def mkdir(path: str, mode: int = 0o777, *, dir_fd: int | None = None) -> None:
        raise FileNotFoundError(errno.ENOENT, "the parent was removed")

    monkeypatch.setattr(os, "mkdir", mkdir)
    with pytest.raises(Changed), Root.of(ws).locate("new/x.txt", make_parents=True):
        pass


def test_hard_links_are_refused_with_how_many_other_names(ws: Path) -> None:
    (ws / "a.txt").write_text("a\n")
    refuse_hard_links(os.stat(ws / "a.txt"), "a.txt", "read_file")  # one name: fine
    os.link(ws / "a.txt", ws / "b.txt")
    with pytest.raises(ToolInputError, match="has another name"):
        refuse_hard_links(os.stat(ws / "a.txt"), "a.txt", "read_file")
    os.link(ws / "a.txt", ws / "c.txt")
    with pytest.raises(ToolInputError, match="has 2 other names"):
        refuse_hard_links(os.stat(ws / "a.txt"), "a.txt", "read_file")


def test_read_all_reads_at_most_the_limit(ws: Path) -> None:
    (ws / "a.txt").write_text("abcdef")
    fd = os.open(ws / "a.txt", os.O_RDONLY)
    try:
        assert [read_all(fd, 1), read_all(fd, 2), read_all(fd, 100), read_all(fd, 1)] == [
            b"a",
            b"bc",
            b"def",
            b"",
        ]
    finally:
        os.close(fd)


def test_a_new_file_gets_the_default_mode_less_the_umask(ws: Path) -> None:
    old = os.umask(0o022)
    try:
        with Root.of(ws).locate("new.txt") as spot:
            written = replace_file(spot, b"new\n", None)
    finally:
        os.umask(old)
    assert stat.S_IMODE(written.st_mode) == stat.S_IMODE((ws / "new.txt").stat().st_mode) == 0o644


def test_the_temporary_file_is_always_a_new_name_never_a_planted_link(
    ws: Path, outside: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (ws / "a.txt").write_text("a\n")
    monkeypatch.setattr(secrets, "token_hex", lambda n: "feedfacecafe")
    (ws / ".a.txt.feedfacecafe.tiller-tmp").symlink_to(outside / "secret.txt")
    with Root.of(ws).locate("a.txt") as spot, pytest.raises(FileExistsError):
        replace_file(spot, b"new\n", None)
    assert (outside / "secret.txt").read_text() == f"{SECRET}\n"
    assert (ws / "a.txt").read_text() == "a\n"


@pytest.mark.parametrize(
    ("error", "raised"),
    [(PermissionError(errno.EACCES, "denied"), PermissionError), (FileNotFoundError(), Changed)],
)
def test_a_replace_that_fails_leaves_no_temporary_file(
    ws: Path, monkeypatch: pytest.MonkeyPatch, error: OSError, raised: type[Exception]
) -> None:
    """A directory removed meanwhile (FileNotFoundError) says so; any failure cleans up."""
    (ws / "a.txt").write_text("a\n")

    def replace(*args: object, **kwargs: object) -> None:
        raise error

    monkeypatch.setattr(os, "replace", replace)
    with Root.of(ws).locate("a.txt") as spot, pytest.raises(raised):
        replace_file(spot, b"new\n", None)
    assert os.listdir(ws) == ["a.txt"] and (ws / "a.txt").read_text() == "a\n"
