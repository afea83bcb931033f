"""Property: whatever command line the classifier accepts changes nothing when bash runs it.

Command lines are generated from a grammar of the read-only programs and the writing ones,
their options (the dangerous ones included), paths in and out of the workspace, files named
like options, brace expansions, globs, quotes, parameters set to options, redirections, pipes
and lists. Every accepted line runs UNSANDBOXED with real bash in a throwaway copy of a
fixture workspace (a git repository with a sibling directory outside it), in the
environment the server gives a command that runs unasked; the tree, the contents and the
modes of both must be unchanged afterwards.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import subprocess
from pathlib import Path

import pytest
from hypothesis import HealthCheck, event, example, given, settings
from hypothesis import strategies as st

from tiller.workspace.bash.readonly import is_read_only_command
from tiller.workspace.tool_env import tool_env, unasked_env

PROGRAMS: dict[str, list[str]] = {
    "cat": ["-n", "-A"],
    "head": ["-n 1", "-c 3"],
    "tail": ["-n 1"],
    "wc": ["-l", "-c"],
    "grep": ["-r", "-n", "-R", "-f a.txt", "-l"],
    "rg": ["--pre=rm", "--pre rm", "-L", "-n", "--files"],
    "find": ["-delete", "-name v.txt", "-type f", "-fprint out.txt", "-exec rm {} ;", "-L"],
    "sort": ["-o out.txt", "-o a.txt", "--output=x.txt", "-u", "-T .", "-r"],
    "uniq": ["-c", "out.txt"],
    "git": ["status", "log --oneline", "diff HEAD", "show HEAD", "diff --output=x.txt HEAD"],
    "ls": ["-la", "-R", "-L"],
    "diff": ["-r", "-u"],
    "file": ["-C", "-b"],
    "date": ["-s 2020-01-01", "+%s", "-r a.txt"],
    "echo": ["-n", "-e"],
    "cut": ["-c1", "-d: -f1"],
    "du": ["-s", "-L"],
    "nl": [],
    "stat": ["-c %s"],
    "tee": ["out.txt", "-a a.txt"],
    "touch": ["new.txt"],
    "rm": ["-f", "-rf"],
    "cp": ["a.txt b2.txt"],
    "mv": ["b.txt c.txt"],
    "truncate": ["-s 0"],
}

PATHS = [
    *("a.txt", "b.txt", "sub", "sub/v.txt", ".", "sub/..", "./a.txt"),
    *("../outside/o.txt", "../outside", "/etc/hostname", "~", "-o", "--pre=rm", "-delete"),
    *("link-out", "link-in", "*", "*.txt", "sub/*", "?.txt", "-*", "s*/v*"),
]

PARAMETERS = ["$O", "${P}", "$D", '"$O"', "$HOME", "$X"]
PARAMETER_VALUES = {"O": "-o", "P": "--pre=rm", "D": "-delete", "X": "out.txt"}


def _braced(words: list[str]) -> st.SearchStrategy[str]:
    pick = st.sampled_from(words)
    return st.one_of(
        st.builds(lambda a, b: f"{{{a},{b}}}", pick, pick),
        st.builds(lambda a: f"{a}{{,}}", pick),
        st.builds(lambda a: f"{{{a},}}", pick),
        st.just("{1..2}"),
    )


def _quoted(word: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
    return st.one_of(word, word.map(lambda w: f"'{w}'"), word.map(lambda w: f'"{w}"'))


@st.composite
def simple_command(draw: st.DrawFn) -> str:
    program = draw(st.sampled_from(sorted(PROGRAMS)))
    options = PROGRAMS[program]
    option_words = [w for opt in options for w in opt.split()]
    atoms: list[st.SearchStrategy[str]] = [
        _quoted(st.sampled_from(PATHS)),
        st.sampled_from(PARAMETERS),
        _braced([*option_words, *PATHS[:8], "zzz", "out.txt"]),
    ]
    if options:
        atoms.append(_quoted(st.sampled_from(options)))
    words = draw(st.lists(st.one_of(*atoms), max_size=4))
    redirect = draw(
        st.sampled_from(
            ["", "", "", " 2>/dev/null", " > /dev/null", " < a.txt", " > out.txt", " >> a.txt"]
        )
    )
    return " ".join([program, *words]) + redirect


command_lines = st.lists(simple_command(), min_size=1, max_size=3).flatmap(
    lambda parts: st.lists(
        st.sampled_from([" | ", " && ", " ; ", " || "]),
        min_size=len(parts) - 1,
        max_size=len(parts) - 1,
    ).map(lambda ops: parts[0] + "".join(op + p for op, p in zip(ops, parts[1:], strict=True)))
)


def _git(ws: Path, *args: str) -> None:
    subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@t", *args],
        cwd=ws,
        check=True,
        capture_output=True,
    )


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    base = tmp_path_factory.mktemp("property")
    ws, outside = base / "ws", base / "outside"
    (ws / "sub").mkdir(parents=True)
    outside.mkdir()
    (outside / "o.txt").write_text("outside\n")
    for name, text in {
        "a.txt": "b\na\na\n",
        "b.txt": "x\ny\n",
        "sub/v.txt": "v\n",
        "-o": "opt\n",
        "--pre=rm": "pre\n",
        "-delete": "del\n",
    }.items():
        (ws / name).write_text(text)
    (ws / "link-out").symlink_to(outside / "o.txt")
    (ws / "link-in").symlink_to(ws / "a.txt")
    _git(ws, "init", "-q")
    _git(ws, "add", "-A")
    _git(ws, "commit", "-qm", "fixture")
    (ws / "a.txt").write_text("b\na\na\nchanged\n")  # so that git diff has something to show
    return base


def snapshot(base: Path) -> dict[str, tuple[int, str]]:
    """Every path under ``base``: its mode and its content digest or link target."""
    seen: dict[str, tuple[int, str]] = {}
    for root, dirs, files in os.walk(base):
        for name in dirs + files:
            path = Path(root) / name
            st_ = path.lstat()
            if path.is_symlink():
                what = "->" + os.readlink(path)
            elif path.is_file():
                what = hashlib.sha256(path.read_bytes()).hexdigest()
            else:
                what = "dir"
            seen[str(path.relative_to(base))] = (st_.st_mode, what)
    return seen


@settings(
    max_examples=200,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(command=command_lines)
@example(command="git diff HEAD")  # rewrote .git/index in the copy (the index's refresh)
def test_accepted_commands_change_nothing(
    command: str, template: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    # Judged against the template (judging only reads), run in a copy.
    accepted = is_read_only_command(command, template / "ws")
    event("accepted" if accepted else "refused")
    if not accepted:
        return
    copy = tmp_path_factory.mktemp("run") / "case"
    shutil.copytree(template, copy, symlinks=True)
    before = snapshot(copy)
    env = {**unasked_env(tool_env()), **PARAMETER_VALUES}  # as the server runs it unasked
    with contextlib.suppress(subprocess.TimeoutExpired):  # a slow reader is not a writer
        subprocess.run(
            ["bash", "-c", command],
            cwd=copy / "ws",
            env=env,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            timeout=10,
            check=False,
        )
    assert snapshot(copy) == before, f"accepted command changed the workspace: {command!r}"
    shutil.rmtree(copy)


def test_the_grammar_reaches_accepted_and_refused_lines(template: Path) -> None:
    """The property is not vacuous: the grammar produces lines of both kinds."""
    ws = template / "ws"
    assert is_read_only_command("cat a.txt | sort -r", ws)
    assert not is_read_only_command("sort {-o,out.txt} a.txt", ws)
