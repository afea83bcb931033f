"""grep over a real temp workspace."""

from __future__ import annotations

import os
from pathlib import Path

from disk import write
from tiller.tools.base import OUTPUT_CAP, ToolContext, ToolResult
from tiller.tools.search import Grep
from tiller.tools.validation import validate_input


async def grep(ctx: ToolContext, **tool_input: object) -> ToolResult:
    return await Grep().run(dict(tool_input), ctx)


async def test_grep_finds_matches_as_path_line_text(ws: Path, ctx: ToolContext) -> None:
    write(ws / "src/a.py", "import os\ndef main():\n    pass\n")
    write(ws / "b.py", "def helper(): ...\n")
    result = await grep(ctx, pattern=r"def \w+")
    assert not result.is_error
    assert result.output.splitlines() == ["b.py:1:def helper(): ...", "src/a.py:2:def main():"]


async def test_grep_case_insensitive_with_inline_flag(ws: Path, ctx: ToolContext) -> None:
    write(ws / "a.txt", "Hello\nhello\nHELLO\n")
    result = await grep(ctx, pattern="(?i)hello")
    assert len(result.output.splitlines()) == 3


async def test_grep_invalid_regex_is_error_result(ctx: ToolContext) -> None:
    result = await grep(ctx, pattern="foo(")
    assert result.is_error and "invalid regular expression" in result.output


def test_grep_empty_or_missing_pattern_is_refused_by_its_schema() -> None:
    assert validate_input(Grep(), {"pattern": ""}) is not None
    assert validate_input(Grep(), {}) is not None
    assert validate_input(Grep(), {"pattern": 3}) is not None
    assert validate_input(Grep(), {"pattern": "x", "glob": ""}) is not None


async def test_grep_skips_binary_files(ws: Path, ctx: ToolContext) -> None:
    write(ws / "blob.bin", b"needle\x00\x01")
    write(ws / "text.txt", "needle\n")
    result = await grep(ctx, pattern="needle")
    assert result.output == "text.txt:1:needle"


async def test_grep_respects_gitignore_and_skips_git(ws: Path, ctx: ToolContext) -> None:
    write(ws / ".gitignore", "dist/\n")
    write(ws / "dist/bundle.js", "needle\n")
    write(ws / ".git/HEAD", "needle\n")
    write(ws / "src/app.js", "needle\n")
    result = await grep(ctx, pattern="needle")
    assert result.output == "src/app.js:1:needle"


async def test_grep_glob_filters_files(ws: Path, ctx: ToolContext) -> None:
    write(ws / "a.py", "needle\n")
    write(ws / "sub/b.py", "needle\n")
    write(ws / "sub/c.txt", "needle\n")
    by_name = await grep(ctx, pattern="needle", glob="*.py")
    assert by_name.output.splitlines() == ["a.py:1:needle", "sub/b.py:1:needle"]
    anchored = await grep(ctx, pattern="needle", glob="sub/*.{py,txt}")
    assert anchored.output.splitlines() == ["sub/b.py:1:needle", "sub/c.txt:1:needle"]
    relative = await grep(ctx, pattern="needle", path="sub", glob="*.txt")
    assert relative.output == "sub/c.txt:1:needle"


async def test_grep_single_file_path(ws: Path, ctx: ToolContext) -> None:
    write(ws / "a.txt", "one\ntwo needle\n")
    write(ws / "b.txt", "needle\n")
    result = await grep(ctx, pattern="needle", path="a.txt")
    assert result.output == "a.txt:2:two needle"


async def test_grep_binary_single_file_is_error(ws: Path, ctx: ToolContext) -> None:
    write(ws / "blob.bin", b"\x00needle")
    result = await grep(ctx, pattern="needle", path="blob.bin")
    assert result.is_error and "binary" in result.output


async def test_grep_truncates_at_max_matches_with_marker(ws: Path, ctx: ToolContext) -> None:
    write(ws / "many.txt", "hit\n" * 50)
    result = await Grep(max_matches=5).run({"pattern": "hit"}, ctx)
    lines = result.output.splitlines()
    assert lines[:5] == [f"many.txt:{n}:hit" for n in range(1, 6)]
    assert len(lines) == 6 and "truncated" in lines[5]


async def test_grep_cuts_long_lines(ws: Path, ctx: ToolContext) -> None:
    write(ws / "min.js", "a" * 10_000 + "needle\n")
    result = await Grep(max_line_chars=100).run({"pattern": "needle"}, ctx)
    assert len(result.output) < 200 and result.output.endswith("[cut]")


async def test_grep_no_matches_is_not_an_error(ws: Path, ctx: ToolContext) -> None:
    write(ws / "a.txt", "nothing here\n")
    result = await grep(ctx, pattern="needle")
    assert not result.is_error and "No matches" in result.output


async def test_grep_path_outside_workspace_is_refused(ctx: ToolContext) -> None:
    result = await grep(ctx, pattern="root", path="/etc")
    assert result.is_error and "outside the workspace" in result.output


async def test_grep_does_not_follow_symlink_out_of_workspace(
    ws: Path, tmp_path: Path, ctx: ToolContext
) -> None:
    write(tmp_path / "secret.txt", "needle\n")
    (ws / "link.txt").symlink_to(tmp_path / "secret.txt")
    (ws / "linkdir").symlink_to(tmp_path)
    result = await grep(ctx, pattern="needle")
    assert "No matches" in result.output


async def test_grep_skips_fifo_instead_of_hanging(ws: Path, ctx: ToolContext) -> None:
    os.mkfifo(ws / "pipe")
    write(ws / "a.txt", "needle\n")
    result = await grep(ctx, pattern="needle")
    assert result.output == "a.txt:1:needle"


async def test_grep_output_stays_under_cap_in_whole_lines(ws: Path, ctx: ToolContext) -> None:
    write(ws / "wide.txt", ("needle " + "w" * 400 + "\n") * 400)
    result = await grep(ctx, pattern="needle")
    lines = result.output.splitlines()
    assert len(result.output) <= OUTPUT_CAP
    assert all(line.startswith("wide.txt:") for line in lines[:-1])
    assert "truncated" in lines[-1]


async def test_grep_line_numbers_match_read_file(ws: Path, ctx: ToolContext) -> None:
    write(ws / "odd.txt", "a\x0cb\r\nneedle\n")  # form feed is not a line break for cat -n
    result = await grep(ctx, pattern="needle|^$")
    assert result.output == "odd.txt:2:needle"
