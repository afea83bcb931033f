"""One glob dialect on pathspec (``workspace/path_globs.py``): Claude Code's documented Read and
Edit rule paths, Tiller's rewrites of a rule's pattern (the folder itself, the wide reading of a
deny or ask rule), the globs that pick files, and .gitignore files."""

from __future__ import annotations

import functools
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from disk import write
from tiller.core.permissions.rules import EFFECTS, Place, parse_rule, path_rule_matches
from tiller.tools.base import ToolContext
from tiller.tools.files import GlobFilter, ListFiles
from tiller.workspace.path_globs import (
    EVERY_PATH,
    GlobError,
    IgnoreFile,
    file_glob,
    literal,
    rule_glob,
)

ALICE = Place(Path("/work/project"), "/Users/alice")


def ruled(text: str, path: str, effect: str = "deny", place: Place = ALICE) -> bool:
    return path_rule_matches(parse_rule(text, effect, "user", "x"), path, place)  # type: ignore[arg-type]


# --- Claude Code's documented examples (code.claude.com/docs/en/permissions) ------------------


@pytest.mark.parametrize(
    ("text", "path", "expected"),
    [
        # //path: an absolute path from the filesystem root
        ("Read(//Users/alice/secrets/**)", "/Users/alice/secrets/key.txt", True),
        ("Read(//Users/alice/secrets/**)", "/Users/alice/secrets/a/b/c", True),
        ("Read(//Users/alice/secrets/**)", "secrets/key.txt", False),
        # ~/path: from the home directory
        ("Read(~/Documents/*.pdf)", "/Users/alice/Documents/cv.pdf", True),
        ("Read(~/Documents/*.pdf)", "~/Documents/cv.pdf", True),
        ("Read(~/Documents/*.pdf)", "/Users/alice/Documents/old/cv.pdf", False),  # * stays in
        ("Read(~/Documents/*.pdf)", "Documents/cv.pdf", False),
        # /path: from the settings file's project, not the filesystem root
        ("Edit(/src/**/*.ts)", "src/a.ts", True),
        ("Edit(/src/**/*.ts)", "src/x/y/a.ts", True),  # ** spans folders
        ("Edit(/src/**/*.ts)", "/work/project/src/x/a.ts", True),
        ("Edit(/src/**/*.ts)", "lib/src/a.ts", False),
        ("Edit(/src/**/*.ts)", "src/a.js", False),
        ("Read(/Users/alice/file)", "/Users/alice/file", False),  # not absolute: use //
        ("Read(/Users/alice/file)", "Users/alice/file", True),
        # path or ./path: from the working directory
        ("Read(*.env)", ".env", True),
        ("Read(*.env)", "config/prod.env", True),  # no / at all: a name at any depth
        ("Read(*.env)", "config/env", False),
        ("Read(./.env)", ".env", True),
        ("Read(./.env)", "sub/.env", False),
        ("Read(src/**)", "src/a/b.py", True),
        ("Read(src/**)", "lib/src/a.py", False),
        ("Edit(docs/**)", "docs/guide/intro.md", True),
    ],
)
def test_claude_codes_documented_path_rules_match_alike_for_every_effect(
    text: str, path: str, expected: bool
) -> None:
    for effect in EFFECTS:
        assert ruled(text, path, effect) is expected, (text, path, effect)


# --- the edge cases the mutation run named ----------------------------------------------------


def test_a_question_mark_is_one_character_of_a_name() -> None:
    glob = rule_glob("a?c", folder="/ws", wide=False)
    assert glob.matches("/ws/abc")
    assert glob.matches("/ws/abc/inside")  # a matched folder covers what is in it
    assert not glob.matches("/ws/ac")
    assert not glob.matches("/ws/abbc")
    assert not glob.matches("/ws/a/c")


def test_a_dot_slash_anchors_a_rule_and_is_dropped_from_a_file_glob() -> None:
    assert ruled("Read(./x)", "x") and not ruled("Read(./x)", "d/x")
    assert ruled("Read(x)", "d/x")  # without it: a name at any depth
    assert file_glob("./src/*.py").matches("src/a.py")
    assert not file_glob("./src/*.py").matches("lib/src/a.py")


def test_a_trailing_double_star_names_the_folder_itself_in_a_rule_only() -> None:
    rule = rule_glob("build/**", folder="/ws", wide=False)
    assert rule.matches("/ws/build")  # listing the folder is covered
    assert rule.matches("/ws/build/a/b.o")
    assert not rule.matches("/ws/buildx")
    assert rule_glob("build/**/**", folder="/ws", wide=False).matches("/ws/build")
    picked = file_glob("build/**")  # a glob picking files reads it as gitignore does
    assert picked.matches("build/a.o") and not picked.matches("build")


def test_double_star_inside_a_name_is_a_star_to_gitignore_and_spans_folders_for_a_deny() -> None:
    allow = rule_glob("src/**x", folder="/ws", wide=False)
    deny = rule_glob("src/**x", folder="/ws", wide=True)
    assert allow.matches("/ws/src/ax") and deny.matches("/ws/src/ax")
    assert not allow.matches("/ws/src/a/bx")
    assert deny.matches("/ws/src/a/bx")
    assert not deny.matches("/ws/src/a/b")
    assert not deny.matches("/ws/lib/ax")
    named = rule_glob("**x", folder=None, wide=True)  # a name pattern: any name ending in x
    assert named.matches("a/b/box") and named.matches("a/box/y.txt")  # the folder box, too
    assert not named.matches("a/bin/y.txt")


def test_each_double_star_inside_names_keeps_the_text_around_it() -> None:
    deny = rule_glob("src/**secret**", folder="/ws", wide=True)
    assert deny.matches("/ws/src/a/top-secret/b.txt")
    assert deny.matches("/ws/src/secret")
    assert not deny.matches("/ws/src/a/public.txt")  # every reading still needs "secret"


def test_past_four_double_stars_inside_names_a_deny_matches_more_never_less() -> None:
    deny = rule_glob("a**b**c**d**e**f", folder="/ws", wide=True)
    assert deny.matches("/ws/a/b/c/d/e/f")
    assert deny.matches("/ws/a-b-c-d-f")  # the text between the fourth and the last: any
    assert not deny.matches("/ws/a-b-c-e-f")


# --- gitignore's own syntax --------------------------------------------------------------------


def test_brackets_are_a_class_and_a_deny_also_matches_them_plainly() -> None:
    allow = rule_glob("key[0-9].pem", folder=None, wide=False)
    deny = rule_glob("key[0-9].pem", folder=None, wide=True)
    assert allow.matches("a/key1.pem") and deny.matches("a/key1.pem")
    assert not allow.matches("a/key[0-9].pem")
    assert deny.matches("a/key[0-9].pem")  # as Tiller read it before: never less


def test_a_backslash_quotes_for_gitignore_and_a_deny_also_reads_it_plainly() -> None:
    allow = rule_glob(r"a\*b", folder="/ws", wide=False)
    deny = rule_glob(r"a\*b", folder="/ws", wide=True)
    assert allow.matches("/ws/a*b") and not allow.matches("/ws/axb")
    assert deny.matches("/ws/a*b") and deny.matches("/ws/a\\xb")
    unreadable = rule_glob("a\\", folder="/ws", wide=False)  # a trailing \ quotes nothing
    assert not unreadable.matches("/ws/a") and not unreadable.matches("/ws/a\\")
    assert rule_glob("a\\", folder="/ws", wide=True).matches("/ws/a\\")


def test_a_rule_neither_negates_nor_comments() -> None:
    assert rule_glob("!secret", folder=None, wide=False).matches("a/!secret")
    assert not rule_glob("!secret", folder=None, wide=False).matches("a/public")
    assert rule_glob("#notes", folder=None, wide=True).matches("#notes")


def test_a_folder_is_taken_literally_whatever_its_characters() -> None:
    glob = rule_glob("*.txt", folder="/home/u/my[proj]*", wide=True)
    assert glob.matches("/home/u/my[proj]*/a.txt")
    assert not glob.matches("/home/u/myp/a.txt")
    assert not glob.matches("/home/u/my[proj]x/a.txt")
    assert literal("trailing ") == "trailing\\ "
    assert rule_glob("", folder="/home/u/ends with ", wide=False).matches("/home/u/ends with /a")


def test_the_filesystem_root_covers_every_path_itself_included() -> None:
    assert rule_glob("", folder="/", wide=False) is EVERY_PATH
    assert rule_glob("**", folder="/", wide=True) is EVERY_PATH
    assert ruled("Read(//)", "/") and ruled("Read(//**)", "/etc/passwd", "allow")
    assert not ruled("Read(//etc/**)", "/")


def test_repeated_slashes_in_a_rule_are_one() -> None:
    assert ruled("Read(.//secret/**)", "secret/key")
    assert ruled("Read(//etc//ssh/*)", "/etc/ssh/key")
    assert not ruled("Read(.//secret/**)", "/secret/key")


# --- the wide reading never matches less: a property ------------------------------------------


def tiller_plain(pattern: str, path: str) -> bool:
    """The oracle for Tiller's plain reading, as its hand-written matcher had it: ``**`` as a
    whole name any folders, elsewhere any text; ``*`` any text within a name; ``?`` one
    character but ``/``; a trailing ``/**`` the folder too; a matched folder covers its
    contents."""
    while pattern.endswith("/**"):
        pattern = pattern[:-3]

    @functools.cache
    def at(i: int, j: int) -> bool:
        if i == len(pattern):
            return j == len(path) or path[j] == "/"
        ends = range(j, len(path) + 1)
        if pattern.startswith("**/", i) and (i == 0 or pattern[i - 1] == "/"):
            return any(at(i + 3, k) for k in ends if k == j or path[k - 1] == "/")
        if pattern.startswith("**", i):
            return any(at(i + 2, k) for k in ends)
        if pattern[i] == "*":
            return any(at(i + 1, k) for k in ends if "/" not in path[j:k])
        if j == len(path):
            return False
        if pattern[i] == "?":
            return path[j] != "/" and at(i + 1, j + 1)
        return pattern[i] == path[j] and at(i + 1, j + 1)

    return at(0, 0)


NAMES = st.sampled_from(["a", "b", "ab", "x.py", ".env", "*", "**", "?", "a*", "*b", "**x", "a**",
                         "a**b**", "***", "?b"])  # fmt: skip
FOLDERS = st.sampled_from(["a", "b", "ab", "x.py", ".env", "bx", "aab"])


@settings(max_examples=400, deadline=None)
@given(
    st.lists(NAMES, min_size=1, max_size=5),
    st.lists(FOLDERS, max_size=6),
    st.sampled_from(["/ws", "/other"]),
)
def test_a_deny_matches_whatever_gitignore_or_tillers_plain_reading_matches(
    names: list[str], folders: list[str], top: str
) -> None:
    rest = "/".join(names)
    path = "/".join([top, *folders])
    wide = rule_glob(rest, folder="/ws", wide=True).matches(path)
    gitignore = rule_glob(rest, folder="/ws", wide=False).matches(path)
    plain = tiller_plain("/ws/" + rest, path)
    assert wide == (gitignore or plain), (rest, path, wide, gitignore, plain)


# --- globs that pick files, and .gitignore files ----------------------------------------------


def test_a_file_glob_reads_gitignore_as_documented() -> None:
    assert file_glob("src/*").matches("src/a.py")
    assert not file_glob("src/*").matches("src/pkg/a.py")  # what lies directly in src
    assert file_glob("*.{ts,tsx}").patterns == ("*.ts", "*.tsx")
    assert file_glob("**/test_*.py").matches("tests/unit/test_x.py")
    assert file_glob("*.py").matches("deep/down/a.py")  # no /: a name at any depth


@pytest.mark.parametrize("pattern", ["", "  ", "{,}"])
def test_a_blank_file_glob_is_an_error(pattern: str) -> None:
    with pytest.raises(GlobError, match="blank"):
        file_glob(pattern)


async def test_a_glob_pathspec_cannot_read_is_an_error_result(ws: Path, ctx: ToolContext) -> None:
    with pytest.raises(GlobError, match="not a glob"):
        file_glob("foo\\")
    write(ws / "a.txt", "x")
    result = await ListFiles().run({"pattern": "foo\\"}, ctx)
    assert result.is_error and "not a glob" in result.output
    assert GlobFilter.of("*.txt").matches("a.txt")


def test_a_gitignore_file_is_read_as_git_applies_it() -> None:
    rules = IgnoreFile.of("build/\n*.log\n!keep.log\n# a comment\n")
    assert rules.verdict("build/") is True
    assert rules.verdict("build/a.o") is True  # a matched folder covers its contents
    assert rules.verdict("a.log") is True
    assert rules.verdict("keep.log") is False  # included again: the last rule decides
    assert rules.verdict("src/main.py") is None


async def test_a_gitignore_line_git_cannot_read_leaves_the_others_in_force(
    ws: Path, ctx: ToolContext
) -> None:
    """A trailing backslash in a .gitignore made pathspec raise and list_files and grep fail."""
    write(ws / ".gitignore", "*.log\nweird\\\n")
    write(ws / "a.log", "x")
    write(ws / "b.txt", "x")
    assert IgnoreFile.of("*.log\nweird\\\n").verdict("a.log") is True
    result = await ListFiles().run({}, ctx)
    assert not result.is_error, result.output
    assert result.output.splitlines() == [".gitignore", "b.txt"]
