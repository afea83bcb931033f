"""read_file, write_file, edit_file, list_files and the registry, against a real temp workspace."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from disk import write
from tiller.tools import files
from tiller.tools.base import OUTPUT_CAP, DiffStat, FileStamp, ToolContext
from tiller.tools.files import (
    EditFile,
    GlobFilter,
    ListFiles,
    ReadFile,
    WriteFile,
)
from tiller.tools.registry import default_tools, tools_by_name
from tiller.workspace.path_globs import expand_braces


def touch_later(path: Path) -> None:
    """Change the mtime without changing the size."""
    st = path.stat()
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 5_000_000_000))


# --- read_file ------------------------------------------------------------------------------


async def test_read_shows_numbered_lines_like_cat_n(ws: Path, ctx: ToolContext) -> None:
    write(ws / "a.txt", "alpha\nbeta\n\tgamma\n")
    result = await ReadFile().run({"path": "a.txt"}, ctx)
    assert not result.is_error
    assert result.output == "     1\talpha\n     2\tbeta\n     3\t\tgamma"


async def test_read_records_file_for_edit_check(ws: Path, ctx: ToolContext) -> None:
    path = write(ws / "a.txt", "x\n")
    await ReadFile().run({"path": "a.txt"}, ctx)
    assert path.resolve() in ctx.reads.stamps
    ctx.reads.check_fresh(path.resolve(), "a.txt", FileStamp.of(path.stat()))  # does not raise


async def test_read_offset_and_limit_page_through_file(ws: Path, ctx: ToolContext) -> None:
    write(ws / "a.txt", "".join(f"line {n}\n" for n in range(1, 11)))
    result = await ReadFile().run({"path": "a.txt", "offset": 3, "limit": 2}, ctx)
    lines = result.output.splitlines()
    assert lines[:2] == ["     3\tline 3", "     4\tline 4"]
    assert "lines 3-4 of 10" in result.output
    assert "offset=5" in result.output


async def test_read_default_limit_says_how_to_continue(ws: Path, ctx: ToolContext) -> None:
    write(ws / "a.txt", "".join(f"{n}\n" for n in range(1, 8)))
    result = await ReadFile(max_lines=5).run({"path": "a.txt"}, ctx)
    assert "     5\t5" in result.output
    assert "     6\t6" not in result.output
    assert "lines 1-5 of 7" in result.output and "offset=6" in result.output


async def test_read_whole_file_has_no_footer(ws: Path, ctx: ToolContext) -> None:
    write(ws / "a.txt", "one\ntwo")  # no final newline
    result = await ReadFile().run({"path": "a.txt"}, ctx)
    assert result.output == "     1\tone\n     2\ttwo"


async def test_read_cuts_long_lines(ws: Path, ctx: ToolContext) -> None:
    write(ws / "a.txt", "x" * 5000 + "\nshort\n")
    result = await ReadFile().run({"path": "a.txt"}, ctx)
    first, second = result.output.splitlines()[:2]
    assert first.startswith("     1\t" + "x" * files.MAX_LINE_CHARS)
    assert "x" * (files.MAX_LINE_CHARS + 1) not in first
    assert "cut at" in first
    assert second == "     2\tshort"


async def test_read_output_stops_at_char_cap_with_continue_hint(ws: Path, ctx: ToolContext) -> None:
    write(ws / "a.txt", "".join(f"{'y' * 40}\n" for _ in range(100)))
    result = await ReadFile(char_cap=500).run({"path": "a.txt"}, ctx)
    assert len(result.output) < 700
    assert "output size limit" in result.output
    assert "of 100" in result.output


async def test_read_crlf_lines_shown_without_carriage_returns(ws: Path, ctx: ToolContext) -> None:
    write(ws / "a.txt", b"one\r\ntwo\r\n")
    result = await ReadFile().run({"path": "a.txt"}, ctx)
    assert result.output == "     1\tone\n     2\ttwo"


async def test_read_refuses_directory_and_points_to_list_files(ws: Path, ctx: ToolContext) -> None:
    (ws / "sub").mkdir()
    result = await ReadFile().run({"path": "sub"}, ctx)
    assert result.is_error and "list_files" in result.output


async def test_read_refuses_binary_file(ws: Path, ctx: ToolContext) -> None:
    write(ws / "img.bin", b"\x89PNG\x00\x01\x02")
    result = await ReadFile().run({"path": "img.bin"}, ctx)
    assert result.is_error and "binary" in result.output


async def test_read_refuses_whole_read_of_huge_file_but_allows_a_slice(
    ws: Path, ctx: ToolContext, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(files, "WHOLE_READ_MAX_BYTES", 100)
    write(ws / "big.txt", "".join(f"row {n}\n" for n in range(1, 101)))
    refused = await ReadFile().run({"path": "big.txt"}, ctx)
    assert refused.is_error and "offset" in refused.output and "limit" in refused.output
    sliced = await ReadFile().run({"path": "big.txt", "offset": 50, "limit": 2}, ctx)
    assert not sliced.is_error
    assert sliced.output.splitlines()[:2] == ["    50\trow 50", "    51\trow 51"]
    assert "offset=52" in sliced.output


async def test_read_missing_file_is_error_result(ctx: ToolContext) -> None:
    result = await ReadFile().run({"path": "nope.txt"}, ctx)
    assert result.is_error and "does not exist" in result.output


async def test_read_offset_past_end_is_error(ws: Path, ctx: ToolContext) -> None:
    write(ws / "a.txt", "1\n2\n")
    result = await ReadFile().run({"path": "a.txt", "offset": 9}, ctx)
    assert result.is_error and "has 2 lines" in result.output


async def test_read_empty_file_is_recorded(ws: Path, ctx: ToolContext) -> None:
    path = write(ws / "empty.txt", "")
    result = await ReadFile().run({"path": "empty.txt"}, ctx)
    assert not result.is_error and "empty" in result.output
    assert path.resolve() in ctx.reads.stamps


async def test_path_outside_workspace_is_refused(
    ws: Path, tmp_path: Path, ctx: ToolContext
) -> None:
    write(tmp_path / "secret.txt", "s3cret\n")
    for raw in ("../secret.txt", str(tmp_path / "secret.txt")):
        result = await ReadFile().run({"path": raw}, ctx)
        assert result.is_error and "outside the workspace" in result.output


async def test_symlink_escaping_workspace_is_refused(
    ws: Path, tmp_path: Path, ctx: ToolContext
) -> None:
    write(tmp_path / "secret.txt", "s3cret\n")
    (ws / "link.txt").symlink_to(tmp_path / "secret.txt")
    (ws / "linkdir").symlink_to(tmp_path)
    for raw in ("link.txt", "linkdir/secret.txt"):
        result = await ReadFile().run({"path": raw}, ctx)
        assert result.is_error and "outside the workspace" in result.output
    written = await WriteFile().run({"path": "linkdir/new.txt", "content": "x"}, ctx)
    assert written.is_error and not (tmp_path / "new.txt").exists()


# --- write_file -----------------------------------------------------------------------------


async def test_write_creates_new_file_and_parent_dirs(ws: Path, ctx: ToolContext) -> None:
    result = await WriteFile().run({"path": "a/b/c.txt", "content": "one\ntwo\n"}, ctx)
    assert not result.is_error
    assert (ws / "a/b/c.txt").read_text() == "one\ntwo\n"
    assert "8 bytes" in result.output and "2 lines" in result.output
    assert (ws / "a/b/c.txt").resolve() in ctx.reads.stamps


async def test_write_refused_for_existing_file_not_read(ws: Path, ctx: ToolContext) -> None:
    write(ws / "a.txt", "old\n")
    result = await WriteFile().run({"path": "a.txt", "content": "new\n"}, ctx)
    assert result.is_error and "read_file" in result.output
    assert (ws / "a.txt").read_text() == "old\n"


async def test_write_refused_when_file_changed_on_disk_since_read(
    ws: Path, ctx: ToolContext
) -> None:
    path = write(ws / "a.txt", "old\n")
    await ReadFile().run({"path": "a.txt"}, ctx)
    touch_later(path)
    result = await WriteFile().run({"path": "a.txt", "content": "new\n"}, ctx)
    assert result.is_error and "changed on disk" in result.output
    assert path.read_text() == "old\n"


async def test_write_after_read_overwrites_and_records_new_stamp(
    ws: Path, ctx: ToolContext
) -> None:
    path = write(ws / "a.txt", "old\n")
    await ReadFile().run({"path": "a.txt"}, ctx)
    first = await WriteFile().run({"path": "a.txt", "content": "new\n"}, ctx)
    second = await WriteFile().run({"path": "a.txt", "content": "newer content\n"}, ctx)
    assert not first.is_error and "Overwrote" in first.output
    assert not second.is_error
    assert path.read_text() == "newer content\n"


async def test_write_refuses_directory(ws: Path, ctx: ToolContext) -> None:
    (ws / "sub").mkdir()
    result = await WriteFile().run({"path": "sub", "content": "x"}, ctx)
    assert result.is_error and "directory" in result.output


async def test_write_preview_shows_before_and_after(ws: Path, ctx: ToolContext) -> None:
    write(ws / "a.txt", "old\n")
    preview = await WriteFile().preview({"path": "a.txt", "content": "new\n"}, ctx)
    assert preview.to_wire() == {
        "kind": "diff",
        "path": "a.txt",
        "before": "old\n",
        "after": "new\n",
    }
    fresh = await WriteFile().preview({"path": "n.txt", "content": "hi"}, ctx)
    assert fresh.fields["before"] == "" and fresh.fields["after"] == "hi"


async def test_write_preview_of_binary_or_huge_file_is_bounded(
    ws: Path, ctx: ToolContext, monkeypatch: pytest.MonkeyPatch
) -> None:
    write(ws / "b.bin", b"\x00" * 100)
    preview = await WriteFile().preview({"path": "b.bin", "content": "x"}, ctx)
    assert "not shown" in preview.fields["before"]
    monkeypatch.setattr(files, "PREVIEW_MAX_BYTES", 10)
    write(ws / "big.txt", "z" * 50)
    big = await WriteFile().preview({"path": "big.txt", "content": "q" * 50}, ctx)
    assert "not shown" in big.fields["before"]
    assert len(big.fields["after"]) < 80 and "preview cut" in big.fields["after"]


async def test_write_preview_never_raises_on_bad_input(ctx: ToolContext) -> None:
    preview = await WriteFile().preview({"path": "../../etc/passwd", "content": 5}, ctx)
    assert preview.kind == "diff" and preview.fields["after"] == ""


# --- edit_file ------------------------------------------------------------------------------


async def read_then_edit(ctx: ToolContext, path: str, **edit: object) -> str:
    await ReadFile().run({"path": path}, ctx)
    result = await EditFile().run({"path": path, **edit}, ctx)
    assert not result.is_error, result.output
    return result.output


async def test_edit_replaces_unique_match_and_shows_snippet(ws: Path, ctx: ToolContext) -> None:
    path = write(ws / "m.py", "def f():\n    return 1\n\nprint(f())\n")
    output = await read_then_edit(ctx, "m.py", old_string="return 1", new_string="return 2")
    assert path.read_text() == "def f():\n    return 2\n\nprint(f())\n"
    assert "replaced 1 occurrence" in output
    assert "     2\t    return 2" in output


async def test_edit_refused_when_file_not_read(ws: Path, ctx: ToolContext) -> None:
    path = write(ws / "m.py", "a = 1\n")
    result = await EditFile().run({"path": "m.py", "old_string": "1", "new_string": "2"}, ctx)
    assert result.is_error and "read_file" in result.output
    assert path.read_text() == "a = 1\n"


async def test_edit_refused_when_file_changed_on_disk_since_read(
    ws: Path, ctx: ToolContext
) -> None:
    path = write(ws / "m.py", "a = 1\n")
    await ReadFile().run({"path": "m.py"}, ctx)
    path.write_text("a = 1\nb = 2\n")
    result = await EditFile().run({"path": "m.py", "old_string": "1", "new_string": "3"}, ctx)
    assert result.is_error and "changed on disk" in result.output
    assert path.read_text() == "a = 1\nb = 2\n"


async def test_edit_ambiguous_match_says_count_and_suggests_replace_all(
    ws: Path, ctx: ToolContext
) -> None:
    path = write(ws / "m.py", "x = 1\ny = 1\nz = 1\n")
    await ReadFile().run({"path": "m.py"}, ctx)
    result = await EditFile().run({"path": "m.py", "old_string": "= 1", "new_string": "= 2"}, ctx)
    assert result.is_error
    assert "3 times" in result.output and "replace_all" in result.output
    assert path.read_text() == "x = 1\ny = 1\nz = 1\n"


async def test_edit_replace_all_replaces_every_match(ws: Path, ctx: ToolContext) -> None:
    path = write(ws / "m.py", "x = 1\ny = 1\n")
    output = await read_then_edit(ctx, "m.py", old_string="= 1", new_string="= 2", replace_all=True)
    assert path.read_text() == "x = 2\ny = 2\n"
    assert "replaced 2 occurrences" in output


async def test_edit_not_found_asks_for_exact_text(ws: Path, ctx: ToolContext) -> None:
    write(ws / "m.py", "x = 1\n")
    await ReadFile().run({"path": "m.py"}, ctx)
    result = await EditFile().run({"path": "m.py", "old_string": "y = 1", "new_string": "y"}, ctx)
    assert result.is_error and "not found" in result.output


async def test_edit_rejects_empty_or_identical_strings(ws: Path, ctx: ToolContext) -> None:
    write(ws / "m.py", "x = 1\n")
    await ReadFile().run({"path": "m.py"}, ctx)
    empty = await EditFile().run({"path": "m.py", "old_string": "", "new_string": "y"}, ctx)
    same = await EditFile().run({"path": "m.py", "old_string": "x", "new_string": "x"}, ctx)
    assert empty.is_error and "must not be empty" in empty.output
    assert same.is_error and "same" in same.output


async def test_edit_twice_without_rereading_works(ws: Path, ctx: ToolContext) -> None:
    path = write(ws / "m.py", "a\nb\n")
    await read_then_edit(ctx, "m.py", old_string="a", new_string="A")
    second = await EditFile().run({"path": "m.py", "old_string": "b", "new_string": "B"}, ctx)
    assert not second.is_error
    assert path.read_text() == "A\nB\n"


async def test_edit_missing_file_points_to_write_file(ctx: ToolContext) -> None:
    result = await EditFile().run({"path": "new.py", "old_string": "a", "new_string": "b"}, ctx)
    assert result.is_error and "write_file" in result.output


async def test_edit_crlf_file_matches_lf_old_string(ws: Path, ctx: ToolContext) -> None:
    path = write(ws / "w.txt", b"one\r\ntwo\r\nthree\r\n")
    await read_then_edit(ctx, "w.txt", old_string="one\ntwo", new_string="1\n2")
    assert path.read_bytes() == b"1\r\n2\r\nthree\r\n"


async def test_edit_preserves_bytes_that_are_not_utf8(ws: Path, ctx: ToolContext) -> None:
    path = write(ws / "l1.txt", b"caf\xe9 = 1\nx = 2\n")
    await read_then_edit(ctx, "l1.txt", old_string="x = 2", new_string="x = 3")
    assert path.read_bytes() == b"caf\xe9 = 1\nx = 3\n"


async def test_edit_refuses_binary_file(ws: Path, ctx: ToolContext) -> None:
    write(ws / "b.bin", b"ab\x00cd")
    ctx.reads.record((ws / "b.bin").resolve(), FileStamp.of((ws / "b.bin").stat()))
    result = await EditFile().run({"path": "b.bin", "old_string": "ab", "new_string": "x"}, ctx)
    assert result.is_error and "binary" in result.output


async def test_edit_preview_shows_content_after_the_edit(ws: Path, ctx: ToolContext) -> None:
    write(ws / "m.py", "x = 1\n")
    preview = await EditFile().preview({"path": "m.py", "old_string": "1", "new_string": "2"}, ctx)
    assert preview.to_wire() == {
        "kind": "diff",
        "path": "m.py",
        "before": "x = 1\n",
        "after": "x = 2\n",
    }


async def test_edit_preview_of_failing_edit_shows_unchanged_text(
    ws: Path, ctx: ToolContext
) -> None:
    write(ws / "m.py", "x = 1\nx = 1\n")
    preview = await EditFile().preview(
        {"path": "m.py", "old_string": "x = 1", "new_string": "y"}, ctx
    )
    assert preview.fields["before"] == preview.fields["after"] == "x = 1\nx = 1\n"


async def test_edit_preview_of_huge_file_shows_the_replaced_text_only(
    ws: Path, ctx: ToolContext, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(files, "PREVIEW_MAX_BYTES", 10)
    write(ws / "big.txt", "k" * 100 + "needle")
    preview = await EditFile().preview(
        {"path": "big.txt", "old_string": "needle", "new_string": "pin"}, ctx
    )
    assert preview.fields["before"] == "needle" and preview.fields["after"] == "pin"


# --- list_files -----------------------------------------------------------------------------


async def listing(ctx: ToolContext, **tool_input: object) -> list[str]:
    result = await ListFiles().run(dict(tool_input), ctx)
    assert not result.is_error, result.output
    return result.output.splitlines()


async def test_list_files_sorted_recursive_and_skips_git_dir(ws: Path, ctx: ToolContext) -> None:
    for name in ("b.txt", "a/z.py", "a/b/c.md", ".git/config", ".github/ci.yml"):
        write(ws / name, "x")
    assert await listing(ctx) == [".github/ci.yml", "a/b/c.md", "a/z.py", "b.txt"]


async def test_list_files_respects_root_gitignore(ws: Path, ctx: ToolContext) -> None:
    write(ws / ".gitignore", "build/\n*.log\n!keep.log\n")
    for name in ("src/main.py", "build/out.js", "src/build/deep.js", "x.log", "keep.log"):
        write(ws / name, "x")
    assert await listing(ctx) == [".gitignore", "keep.log", "src/main.py"]


async def test_list_files_respects_nested_gitignore_with_precedence(
    ws: Path, ctx: ToolContext
) -> None:
    write(ws / ".gitignore", "*.tmp\n")
    write(ws / "pkg/.gitignore", "generated.py\n!wanted.tmp\n")
    for name in (
        "top.tmp",
        "pkg/generated.py",
        "pkg/real.py",
        "pkg/wanted.tmp",
        "gen/generated.py",
    ):
        write(ws / name, "x")
    assert await listing(ctx) == [
        ".gitignore",
        "gen/generated.py",
        "pkg/.gitignore",
        "pkg/real.py",
        "pkg/wanted.tmp",
    ]


async def test_list_files_of_subdirectory_applies_root_gitignore(
    ws: Path, ctx: ToolContext
) -> None:
    write(ws / ".gitignore", "*.pyc\n")
    write(ws / "src/a.py", "x")
    write(ws / "src/a.pyc", "x")
    assert await listing(ctx, path="src") == ["src/a.py"]


async def test_list_files_inside_ignored_dir_shows_its_contents(ws: Path, ctx: ToolContext) -> None:
    write(ws / ".gitignore", "node_modules/\n")
    write(ws / "node_modules/lib/index.js", "x")
    assert "node_modules/lib/index.js" not in await listing(ctx)
    assert await listing(ctx, path="node_modules") == ["node_modules/lib/index.js"]


async def test_list_files_pattern_filters(ws: Path, ctx: ToolContext) -> None:
    for name in ("a.py", "src/b.py", "src/deep/c.py", "src/d.ts", "src/e.tsx", "README.md"):
        write(ws / name, "x")
    assert await listing(ctx, pattern="**/*.py") == ["a.py", "src/b.py", "src/deep/c.py"]
    assert await listing(ctx, pattern="*.py") == ["a.py", "src/b.py", "src/deep/c.py"]
    assert await listing(ctx, pattern="src/*.py") == ["src/b.py"]
    assert await listing(ctx, pattern="*.{ts,tsx}") == ["src/d.ts", "src/e.tsx"]
    assert await listing(ctx, path="src", pattern="deep/*.py") == ["src/deep/c.py"]


async def test_list_files_truncated_marker(ws: Path, ctx: ToolContext) -> None:
    for n in range(10):
        write(ws / f"f{n}.txt", "x")
    result = await ListFiles(max_entries=3).run({}, ctx)
    lines = result.output.splitlines()
    assert lines[:3] == ["f0.txt", "f1.txt", "f2.txt"]
    assert "truncated" in lines[3]


async def test_list_files_scan_limit_is_visible(ws: Path, ctx: ToolContext) -> None:
    for n in range(10):
        write(ws / f"f{n}.txt", "x")
    result = await ListFiles(max_scanned=4).run({}, ctx)
    assert "stopped after scanning 4 entries" in result.output


async def test_list_files_no_match_and_errors(ws: Path, ctx: ToolContext) -> None:
    write(ws / "a.txt", "x")
    none = await ListFiles().run({"pattern": "*.rs"}, ctx)
    assert not none.is_error and "No files matching" in none.output
    on_file = await ListFiles().run({"path": "a.txt"}, ctx)
    assert on_file.is_error and "read_file" in on_file.output
    missing = await ListFiles().run({"path": "nope"}, ctx)
    assert missing.is_error and "does not exist" in missing.output
    outside = await ListFiles().run({"path": ".."}, ctx)
    assert outside.is_error and "outside the workspace" in outside.output


def test_braces_expand_to_alternatives() -> None:
    assert expand_braces("*.{ts,tsx}") == ["*.ts", "*.tsx"]
    assert expand_braces("{a,b}/{c,d}") == ["a/c", "a/d", "b/c", "b/d"]
    assert expand_braces("plain") == ["plain"]
    assert GlobFilter.of("**/test_*.py").matches("tests/unit/test_x.py")


# --- the Tool protocol and the registry -----------------------------------------------------


def test_default_tools_order_kinds_and_read_only() -> None:
    tools = default_tools()
    assert [t.name for t in tools] == [
        "read_file",
        "list_files",
        "grep",
        "write_file",
        "edit_file",
        "bash",
        "todo_write",
        "enter_plan_mode",
        "exit_plan_mode",
    ]
    kinds = {t.name: t.kind for t in tools}
    assert kinds == {
        "read_file": "read",
        "list_files": "read",
        "grep": "read",
        "write_file": "edit",
        "edit_file": "edit",
        "bash": "bash",
        "todo_write": "state",
        "enter_plan_mode": "state",
        "exit_plan_mode": "plan_exit",
    }
    by_name = tools_by_name(tools)
    assert by_name["read_file"].is_read_only({"path": "a"})
    assert not by_name["edit_file"].is_read_only({})


def test_every_spec_has_name_description_and_object_schema() -> None:
    for tool in default_tools():
        spec = tool.spec()
        assert spec["name"] == tool.name
        assert len(spec["description"]) > 40
        schema = spec["input_schema"]
        assert schema["type"] == "object"
        assert set(schema.get("required", [])) <= set(schema["properties"])


def test_tools_by_name_refuses_duplicates() -> None:
    with pytest.raises(ValueError, match="read_file"):
        tools_by_name([ReadFile(), ReadFile()])


async def test_preview_never_raises_on_malformed_input(ctx: ToolContext) -> None:
    bad = {"path": 1, "pattern": 2, "command": 3, "content": None}
    for tool in default_tools():
        await tool.preview(bad, ctx)


async def test_read_refuses_fifo_instead_of_hanging(ws: Path, ctx: ToolContext) -> None:
    os.mkfifo(ws / "pipe")
    result = await ReadFile().run({"path": "pipe"}, ctx)
    assert result.is_error and "not a regular file" in result.output


# --- diff stats of write_file / edit_file ----------------------------------------------------


async def test_write_of_new_file_counts_every_line_as_added(ctx: ToolContext) -> None:
    result = await WriteFile().run({"path": "n.txt", "content": "a\nb\nc\n"}, ctx)
    assert result.diff == DiffStat(added=3, removed=0)
    empty = await WriteFile().run({"path": "e.txt", "content": ""}, ctx)
    assert empty.diff == DiffStat(added=0, removed=0)


async def test_overwrite_counts_changed_lines_both_ways(ws: Path, ctx: ToolContext) -> None:
    write(ws / "a.txt", "keep\nold 1\nold 2\nkeep too\n")
    await ReadFile().run({"path": "a.txt"}, ctx)
    result = await WriteFile().run({"path": "a.txt", "content": "keep\nnew\nkeep too\nmore\n"}, ctx)
    assert result.diff == DiffStat(added=2, removed=2)


async def test_edit_counts_the_replaced_lines(ws: Path, ctx: ToolContext) -> None:
    write(ws / "m.py", "def f():\n    return 1\n\nprint(f())\n")
    await ReadFile().run({"path": "m.py"}, ctx)
    result = await EditFile().run(
        {"path": "m.py", "old_string": "    return 1\n", "new_string": "    x = 1\n    return x\n"},
        ctx,
    )
    assert result.diff == DiffStat(added=2, removed=1)


async def test_failed_write_or_edit_has_no_diff(ws: Path, ctx: ToolContext) -> None:
    write(ws / "a.txt", "x\n")
    refused = await WriteFile().run({"path": "a.txt", "content": "y\n"}, ctx)
    assert refused.is_error and refused.diff is None
    await ReadFile().run({"path": "a.txt"}, ctx)
    missing = await EditFile().run({"path": "a.txt", "old_string": "zz", "new_string": "q"}, ctx)
    assert missing.is_error and missing.diff is None


async def test_overwriting_a_binary_file_has_no_line_diff(ws: Path, ctx: ToolContext) -> None:
    path = write(ws / "b.bin", b"\x00\x01")
    ctx.reads.record(path.resolve(), FileStamp.of(path.stat()))
    result = await WriteFile().run({"path": "b.bin", "content": "text\n"}, ctx)
    assert not result.is_error and result.diff is None


def test_diff_stat_counts_a_missing_final_newline_as_a_changed_line() -> None:
    assert files.diff_stat("a\nb", "a\nb\n") == DiffStat(added=1, removed=1)
    assert files.diff_stat(None, "one line, no newline") == DiffStat(added=1, removed=0)
    assert files.diff_stat("x\n" * 5, "x\n" * 5) == DiffStat(added=0, removed=0)


async def test_list_files_pattern_may_start_with_dot_slash(ws: Path, ctx: ToolContext) -> None:
    write(ws / "src/a.py", "x")
    assert await listing(ctx, pattern="./src/*.py") == ["src/a.py"]


async def test_read_default_output_fits_the_tool_output_cap(ws: Path, ctx: ToolContext) -> None:
    write(ws / "wide.txt", ("v" * 200 + "\n") * 1000)
    result = await ReadFile().run({"path": "wide.txt"}, ctx)
    assert len(result.output) <= OUTPUT_CAP
    assert "call read_file with offset=" in result.output.splitlines()[-1]


async def test_list_files_output_stays_under_cap_in_whole_lines(ws: Path, ctx: ToolContext) -> None:
    deep = ws / ("d" * 100) / ("e" * 100)
    for n in range(300):
        write(deep / f"file_{n:03}.txt", "x")
    result = await ListFiles().run({}, ctx)
    lines = result.output.splitlines()
    assert len(result.output) <= OUTPUT_CAP
    assert all(line.endswith(".txt") for line in lines[:-1])
    assert "truncated" in lines[-1]
