"""The read-only check that lets bash calls run without asking: sound, bounded, confined."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tiller.tools import bash_readonly
from tiller.tools.bash_readonly import MAX_COMMAND_BYTES, is_read_only_command


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    """A workspace with files named like options, a symlink out, and a sibling outside it."""
    root = tmp_path / "ws"
    (root / "sub").mkdir(parents=True)
    for name in ("a.txt", "b.txt", "sub/v.txt", "-o", "--pre=rm"):
        (root / name).write_text("x\n")
    (root / "sub" / "out-link").symlink_to("/etc/hostname")
    (root / "inner-link").symlink_to(root / "a.txt")
    (tmp_path / "x").write_text("outside\n")
    return root


def ro(command: str, ws: Path) -> bool:
    return is_read_only_command(command, ws)


READ_ONLY = [
    "ls",
    "ls -la src",
    "cat README.md",
    "head -n 20 a.txt",
    "tail -5 a.txt",
    "wc -l *.py",
    "grep -rn 'def main' server",
    "rg -n TODO",
    "egrep 'a|b' x",
    "fgrep x y",
    "find . -name '*.py' -type f",
    "git status",
    "git status --short",
    "git log --oneline -5",
    "git diff HEAD~1 -- server",
    "git show HEAD:README.md",
    "git blame -L 1,10 a.py",
    "git branch",
    "git branch -a",
    "git branch -r",
    "git branch --list",
    "git rev-parse HEAD",
    "git ls-files",
    "git --no-pager log -1",
    "git -C sub status",
    "pwd",
    "echo hello",
    "printf '%s\\n' a b",
    "true",
    "false",
    "sleep 0.2",
    "sleep 1",
    "stat a.txt",
    "file a.bin",
    "du -sh .",
    "df -h",
    "which python3",
    "tree -L 2",
    "sort a.txt",
    "sort -u -k2,2 a.txt",
    "uniq -c a.txt",
    "tr a-z A-Z < a.txt",
    "basename /a/b.txt",
    "dirname /a/b.txt",
    "realpath .",
    "date",
    "date +%Y-%m-%d",
    "date -u -d yesterday +%s",
    "nl a.txt",
    "diff a.txt b.txt",
    "cmp a b",
    "md5sum a",
    "sha256sum a",
    "test -f a.txt",
    "[ -d src ]",
    "ls | wc -l",
    "cat a.txt | grep x | sort | uniq -c | head",
    "ls && pwd",
    "ls || echo none",
    "ls; pwd; echo done",
    "ls\npwd",
    "ls 2>/dev/null",
    "ls > /dev/null 2>&1",
    "ls &>/dev/null",
    "grep x a.txt >>/dev/null",
    "echo oops >&2",
    "ls 2>&1 | head",
    "ls |& head",
    "cat < a.txt",
    "cat <<< 'some text'",
    "cat <<EOF\nplain text\nEOF\n",
    "(ls; pwd)",
    "{ ls; pwd; }",
    "(ls) 2>/dev/null",
    "! grep -q x a.txt",
    "echo $HOME ${USER} $1 $? $@ ${#PATH}",
    "echo '$(rm -rf /)'",
    "'ls' -l",
    "[ -f a ] && cat a",
    "ls # a comment; rm -rf x",
]

NOT_READ_ONLY = [
    "",
    "   ",
    "rm -rf build",
    "touch a",
    "mkdir x",
    "mv a b",
    "cp a b",
    "python3 -c 'print(1)'",
    "sh -c 'ls'",
    "bash -c ls",
    "sudo ls",
    "xargs rm",
    "ls | xargs rm",
    "eval ls",
    "exec ls",
    "echo hi > out.txt",
    "echo hi >> out.txt",
    "ls >| out.txt",
    "ls &> out.txt",
    "ls >& out.txt",
    "ls 2> err.txt",
    "cat <> a.txt",
    "(ls) > out.txt",
    "{ ls; } > out.txt",
    'ls > "$(rm x)"',
    "echo $(rm x)",
    'echo "$(rm x)"',
    "echo `rm x`",
    "cat <(rm x)",
    "echo ${X:-$(rm x)}",
    "echo ${X:=y}",
    "echo $((1+2))",
    "cat $'a\\nb'",
    "cat <<EOF\n$(rm x)\nEOF\n",
    "A=1 ls",
    "A=1",
    "PATH=/tmp ls",
    "f() { ls; }",
    "f() { rm x; }; f",
    "(rm x)",
    "{ rm x; }",
    "(ls; rm x)",
    "ls && rm x",
    "ls; rm x",
    "ls | tee out.txt",
    "ls &",
    "sleep 10 &",
    "if true; then ls; fi",
    "for f in *; do cat $f; done",
    "while true; do ls; done",
    "case x in a) ls;; esac",
    "time ls",
    "$CMD",
    "${CMD} a",
    "/bin/ls",
    "./ls",
    "find . -delete",
    "find . -name x -exec rm {} \\;",
    "find . -execdir rm {} +",
    "find . -ok rm {} \\;",
    "find . -okdir rm {} \\;",
    "find . -fprint out.txt",
    "find . -fprint0 out.txt",
    "find . -fprintf out.txt %p",
    "find . -fls out.txt",
    "find . '-delete'",
    "git commit -m x",
    "git push",
    "git checkout main",
    "git reset --hard",
    "git stash",
    "git branch new-feature",
    "git branch -d old",
    "git branch -D old",
    "git branch -m a b",
    "git -c core.pager=rm log",
    "git -c alias.x=!rm x",
    "git diff --output=patch.diff",
    "git log --output=log.txt",
    "git show --output out.txt",
    "git",
    "git --no-pager",
    "sort -o out.txt a.txt",
    "sort -uo out.txt a.txt",
    "sort --output=out.txt a.txt",
    "sort --compress-program=rm a.txt",
    "tree -o out.txt",
    "uniq a.txt out.txt",
    "env rm x",
    "env A=1 ls",
    "env -u HOME",
    "date -s 2020-01-01",
    "date --set=2020-01-01",
    "date 010100002020",
    "file -C -m magic",
    "rg --pre rm x",
    "rg --pre=./hook.sh x",
    "ls ||",
    "echo 'unterminated",
    "cd /tmp && ls",
    "nohup ls",
    "timeout 5 ls",
    "awk '{print}' a.txt",
    "sed -i s/a/b/ a.txt",
    "curl http://example.com",
    "cut -d: -f1 /etc/passwd",
    "env",
    "echo {a,b}.txt",
    "ls ~",
]


@pytest.mark.parametrize("command", READ_ONLY)
def test_known_read_only_commands_are_read_only(command: str, ws: Path) -> None:
    assert ro(command, ws) is True


@pytest.mark.parametrize("command", NOT_READ_ONLY)
def test_writing_unknown_or_doubtful_commands_are_not_read_only(command: str, ws: Path) -> None:
    assert ro(command, ws) is False


def test_sleep_used_by_benchmarks_is_read_only(ws: Path) -> None:
    assert ro("sleep 0.2", ws)


def test_parse_error_falls_back_to_not_read_only(ws: Path) -> None:
    assert ro("ls $(", ws) is False
    assert ro("(((", ws) is False


def test_redirect_to_dev_null_only_when_literal(ws: Path) -> None:
    assert ro("ls > /dev/null", ws)
    assert not ro("ls > /dev/nullx", ws)
    assert not ro("ls > $OUT", ws)


def test_one_writing_stage_in_a_long_pipeline_spoils_it(ws: Path) -> None:
    assert ro("cat a | grep b | sort | head -3", ws)
    assert not ro("cat a | grep b | sort -o c | head -3", ws)


# --- issue 7, bug 1: brace expansion bypassed the check -------------------------------------


@pytest.mark.parametrize(
    "command",
    [
        "rg {--pre=rm,zzz} sub",
        "sort {-o,out.txt} a.txt",
        "git diff {--output=x.txt,HEAD}",
        "find . -name v.txt {-delete,}",
        "uniq b.txt{,}",
        "cat {1..3}",
        "cat a{.txt,}",
        "cat x{a,b}y",
        "echo {a,b}",
    ],
)
def test_brace_expansion_bypass_is_refused(command: str, ws: Path) -> None:
    assert not ro(command, ws)


def test_quoted_braces_are_literal_and_allowed(ws: Path) -> None:
    assert ro("grep '{a,b}' a.txt", ws)
    assert ro('echo "{1..3}"', ws)
    assert ro("echo \\{a,b\\}", ws)


# --- issue 7, bug 2: reads outside the workspace ran without asking --------------------------


@pytest.mark.parametrize(
    "command",
    [
        "cat ../x",
        "cat /etc/hostname",
        "cat sub/../../x",
        "cat ~/.bashrc",
        "cat sub/out-link",
        "cat sub/*",  # expands to the symlink out
        "ls /",
        "head -n1 < /etc/hostname",
        "grep -f /etc/hostname a.txt",
        "grep -f/etc/hostname a.txt",
        "grep --file=/etc/hostname a.txt",
        "git -C .. status",
        "git diff --no-index /etc/hostname a.txt",
        "find / -name x",
        "find -L . -name x",
        "grep -R x .",
        "rg -L x",
        "rg --follow x",
        "diff -r sub .",
    ],
)
def test_reads_outside_the_workspace_are_refused(command: str, ws: Path) -> None:
    assert not ro(command, ws)


def test_paths_inside_the_workspace_are_allowed(ws: Path) -> None:
    assert ro("cat a.txt sub/v.txt ./b.txt sub/../a.txt", ws)
    assert ro(f"cat {ws / 'a.txt'}", ws)
    assert ro("cat inner-link", ws)
    assert ro("cat sub/v*", ws)
    assert ro("git -C sub status", ws)


# --- issue 7, bug 3: the environment leaked --------------------------------------------------


@pytest.mark.parametrize(
    "command",
    [
        "env",
        "env -0",
        "printenv",
        "printenv ANTHROPIC_API_KEY",
        "set",
        "declare -p",
        "export -p",
        "cat /proc/self/environ",
        "cat /proc/1/environ",
        "cat /proc/$$/environ",
        "tr '\\0' '\\n' < /proc/self/environ",
        "grep -a KEY /proc/self/environ",
    ],
)
def test_environment_dumps_are_never_read_only(command: str, ws: Path) -> None:
    assert not ro(command, ws)


def test_a_symlink_to_environ_inside_the_workspace_is_refused(ws: Path) -> None:
    (ws / "e").symlink_to("/proc/self/environ")
    assert not ro("cat e", ws)
    assert not ro("cat e*", ws)


# --- expansions bash performs that bashlex keeps as text -------------------------------------


@pytest.mark.parametrize(
    "command",
    [
        "sort * ",  # the workspace has a file named -o
        "rg x *",  # ... and one named --pre=rm
        "sort -* a.txt",
        "cat -?",
        "ls [ab].txt",
        "sort $X a.txt",
        "sort ${X} a.txt",
        'sort "$X" a.txt',
        "git diff $X",
        "find . $X",
        "cat $HOME/.bashrc",
        "$X a.txt",
        "${X}",
        "cat ~root/x",
        "cat ~+/a.txt",
        "ls a=~/x",
        "echo $((1+2))",
        "echo $[1+2]",
        "echo `ls`",
        "cat <(ls)",
        "echo $'\\x41'",
        "cat .*/x",
        "uniq *.txt",  # two operands: uniq a.txt b.txt writes b.txt
    ],
)
def test_expansions_that_could_write_or_escape_are_refused(command: str, ws: Path) -> None:
    assert not ro(command, ws)


def test_parameters_are_fine_where_they_are_only_printed(ws: Path) -> None:
    assert ro('echo "$HOME" $USER ${PATH}', ws)
    assert ro('printf "%s\\n" "$1"', ws)


def test_globs_that_stay_in_the_workspace_are_allowed(ws: Path) -> None:
    assert ro("wc -l *.txt", ws)
    assert ro("cat sub/*.txt", ws)
    assert ro("ls sub/", ws)
    assert ro("grep x 'a'*", ws)


def test_a_glob_over_a_huge_directory_is_refused_within_budget(ws: Path) -> None:
    big = ws / "big"
    big.mkdir()
    for i in range(6_000):
        (big / f"f{i}").touch()
    assert not ro("cat big/*", ws)


# --- cost bounds (issue 7, bug 7) ------------------------------------------------------------


def test_command_over_16_kb_is_not_read_only(ws: Path) -> None:
    command = "cat a.txt | " * (MAX_COMMAND_BYTES // 12) + "cat a.txt"
    assert len(command) > MAX_COMMAND_BYTES
    assert not ro(command, ws)


def test_126_kb_pipeline_is_refused_without_parsing(
    ws: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    command = "cat a.txt | " * (126 * 1024 // 12) + "wc -l"

    def no_parsing(name: str) -> None:
        raise AssertionError(f"imported {name}: the length alone decides")

    monkeypatch.setattr(bash_readonly.importlib, "import_module", no_parsing)
    assert not ro(command, ws)


def test_multibyte_command_is_measured_in_bytes(ws: Path) -> None:
    command = "echo " + "é" * (MAX_COMMAND_BYTES // 2)
    assert len(command) < MAX_COMMAND_BYTES < len(command.encode())
    assert not ro(command, ws)


def test_workspace_given_as_a_symlink_is_resolved(ws: Path, tmp_path: Path) -> None:
    alias = tmp_path / "alias"
    alias.symlink_to(ws)
    assert ro("cat a.txt", alias)
    assert not ro("cat ../x", alias)
    assert os.path.realpath(alias) == str(ws)
