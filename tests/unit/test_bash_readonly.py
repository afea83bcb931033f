"""The read-only check that lets bash calls run without asking: sound, bounded, confined."""

from __future__ import annotations

import importlib
import os
import subprocess
from pathlib import Path

import pytest

from tiller.workspace.bash import git_config
from tiller.workspace.bash.readonly import (
    GLOB_MATCH_BUDGET,
    GLOB_SCAN_BUDGET,
    MAX_COMMAND_BYTES,
    is_read_only_command,
    uses_writing_option,
)


@pytest.fixture
def ws(ws: Path, tmp_path: Path) -> Path:
    """The shared workspace with files named like options, a symlink out, and a sibling
    outside it."""
    (ws / "sub").mkdir()
    for name in ("a.txt", "b.txt", "sub/v.txt", "-o", "--pre=rm"):
        (ws / name).write_text("x\n")
    (ws / "sub" / "out-link").symlink_to("/etc/hostname")
    (ws / "inner-link").symlink_to(ws / "a.txt")
    (tmp_path / "x").write_text("outside\n")
    return ws


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


def test_a_home_glob_is_judged_by_the_names_it_expands_to(
    ws: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 34: the names of a ``~/`` glob are absolute already; HOME was joined to them
    again (``$HOME$HOME/a.txt``), so a read inside the workspace was asked."""
    monkeypatch.setenv("HOME", str(ws))
    assert ro("cat ~/*.txt", ws)
    assert ro("wc -l ~/sub/v*", ws)
    assert ro("cat ~/nothing*", ws)  # no match: bash passes $HOME/nothing* as it is
    assert not ro("cat ~/sub/*", ws)  # sub/out-link leads outside
    monkeypatch.setenv("HOME", str(ws / "sub"))
    assert not ro("cat ~/*", ws)


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


# --- issue 34: behaviours a mutation run showed untested (scripts/mutation.sh) ----------------


def test_a_tilde_naming_a_user_is_refused_even_where_home_then_the_word_is_inside(
    ws: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``~root`` is root's home, ``~+`` the working directory, ``~-`` the previous one: never
    $HOME followed by the rest of the word, which, with HOME the workspace spelled with a
    trailing slash, names files inside it."""
    monkeypatch.setenv("HOME", f"{ws}/")
    for name in ("root", "+", "-"):
        (ws / name).mkdir()
        (ws / name / "x").write_text("x\n")
    assert ro("ls ~", ws)
    assert ro("cat ~/root/x ~/+/x", ws)
    for command in ("cat ~root/x", "cat ~+/x", "cat ~-/x", "ls ~root", "ls ~+"):
        assert not ro(command, ws), command


def test_a_quoted_glob_prefix_still_expands_through_a_link_out(ws: Path, outside: Path) -> None:
    """Quotes make ``'secret'`` literal, not the ``*`` after it: bash expands ``'secret'*``
    to ``secret-link``, which points outside."""
    (ws / "secret-link").symlink_to(outside / "secret.txt")
    for command in ("cat 'secret'*", 'cat "secret"*', "cat secret*", "cat \\secret*"):
        assert not ro(command, ws), command
    assert ro("cat 'secret*'", ws)  # all quoted: the name secret* itself (there is none)


@pytest.mark.parametrize(
    ("command", "read_only"),
    [
        ('echo "\\\\$(rm x)"', False),  # \\ is one backslash: the $( ) after it still runs
        ('echo "\\\\`rm x`"', False),
        ('echo "\\"$(rm x)\\""', False),  # \" is a quote inside the quotes
        ('cat "\\$(rm x)"', True),  # \$ is a literal dollar: a file named $(rm x)
        ('cat "\\$HOME"', True),
        ('cat "a\\.txt"', True),  # before another character the backslash stays
        ('echo "\\\\"', True),
    ],
)
def test_backslashes_in_double_quotes_escape_only_what_bash_escapes(
    command: str, read_only: bool, ws: Path
) -> None:
    assert ro(command, ws) is read_only


@pytest.mark.parametrize(
    ("command", "read_only"),
    [
        ("cat a.txt <&3", True),  # fd duplication
        ("cat a.txt <&-", True),  # closing stdin
        ("cat <&a.txt", False),  # not a descriptor: bash refuses it, and so does the check
        ("cat <&$X", False),
    ],
)
def test_input_duplication_takes_only_a_descriptor_or_a_dash(
    command: str, read_only: bool, ws: Path
) -> None:
    assert ro(command, ws) is read_only


@pytest.mark.parametrize(
    "command",
    [
        "cat < $(rm x)",
        'cat < "$(rm x)"',
        "cat < `rm x`",
        "cat <<< $(rm x)",
        'cat <<< "$(rm x)"',
        "cat < $X",
        "cat < *.txt",
        "(cat) < $(rm x)",
    ],
)
def test_an_input_redirection_is_judged_like_a_word(command: str, ws: Path) -> None:
    """The redirection's word is expanded by bash like any other: a substitution runs."""
    assert not ro(command, ws)


@pytest.mark.parametrize(
    ("command", "read_only"),
    [
        ("(ls) > out.txt", False),
        ("(ls) >> a.txt", False),
        ("{ ls; } 2> err.txt", False),
        ("(ls; pwd) > /dev/null 2>&1", True),
        ("(cat) < a.txt", True),
        ("(cat) < /etc/hostname", False),
        ("{ cat; } < ../x", False),
    ],
)
def test_redirections_of_compound_commands_are_judged(
    command: str, read_only: bool, ws: Path
) -> None:
    assert ro(command, ws) is read_only


@pytest.mark.parametrize(
    ("command", "read_only"),
    [
        ("echo a$", True),  # a lone $ is a literal dollar
        ('echo "a$ b"', True),
        ("echo '' a", True),  # empty quotes
        ('echo "a$(rm x)"', False),  # a substitution after text inside double quotes
        ('echo "ab$(rm x)"', False),
        ('echo "${HOME}$(rm x)"', False),  # ... after a braced parameter
        ("cat s*/out-link", False),  # the / after a glob character: sub/out-link leads out
        ("cat s\\ub/*", False),  # \u is u: sub/*, and sub/out-link leads out
        ("sort \\-o out.txt a.txt", False),  # \- is -: the option -o
        ("cat -x*", False),  # a glob in option position, even matching nothing
        ("ls =~/x", False),  # a tilde after = or :, which bash expands in a=~/x
        ("ls :~/x", False),
        ("ls a:~/x", False),
        ("ls\x00rm -rf x", False),
        ("echo a\x00b", False),  # a NUL anywhere
        ("cat a.txt $1", False),  # special parameters at the end of a word
        ("sort a.txt $?", False),
        ('echo "${HOME}" "}${USER}"', True),  # a } before ${ is not its end
        ("echo ${1} ${X}", True),  # one-character names in braces
        ("echo $HOME/*", False),  # a glob after a parameter: it could list any folder
        ('cat "s\\u"b/*', True),  # a backslash before u stays: the folder s\ub (none)
        ("grep --file=a=/../../x y a.txt", False),  # the value is all after the first =
        ('cat "x\\$(rm x)"', True),  # \$ after text is a literal dollar
        ("< a.txt", False),  # redirections without a program
        ("2>/dev/null", False),
        ("echo x > >(rm y)", False),  # an output process substitution
        ("ls 2> >(cat)", False),
    ],
)
def test_words_are_read_the_way_bash_reads_them(command: str, read_only: bool, ws: Path) -> None:
    assert ro(command, ws) is read_only


def test_escaped_characters_in_quotes_name_the_files_bash_names(ws: Path, outside: Path) -> None:
    (ws / "$out").symlink_to(outside / "secret.txt")
    assert not ro('cat "\\$out"', ws)  # the file $out, which leads outside
    assert not ro('cat "\\$"*', ws)  # a glob matching $out
    assert ro('cat "\\$"x*', ws)  # nothing matches: the word itself, inside


def test_a_home_word_outside_the_workspace_is_refused_where_it_is_read(
    ws: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert not ro("cat ~/nothing*", ws)  # bash passes $HOME/nothing* as it is
    assert not ro("cat ~/x", ws)
    assert ro("echo ~/x ~", ws)  # printed, not read


@pytest.mark.parametrize(
    ("command", "read_only"),
    [
        ("grep --file=a.txt x a.txt", True),  # --opt=value: the value is a path
        ("grep --file=/etc/hostname x a.txt", False),
        ("grep --file= x a.txt", True),  # an empty value names nothing
        ("grep -- -o a.txt", True),  # after --, -o is an operand
        ("grep -- -f/etc/hostname a.txt", True),  # ... a file named so inside the workspace
        ("cat -- -x=/etc/hostname", True),
        ("cat -- ../x", False),
        ("echo /etc/hostname ../x", True),  # echo's words are printed, not read
        ("printf '%s' /etc/hostname", True),
        ("date -d yesterday -s 2020-01-01", False),  # the value of -d does not end the check
        ("date -d yesterday --set=2020-01-01", False),
        ("date +%s -s 2020-01-01", False),  # nor does a format
        ("date --date=yesterday 2020", False),
        ("date -r a.txt +%s", True),
    ],
)
def test_options_and_operands_are_told_apart(command: str, read_only: bool, ws: Path) -> None:
    assert ro(command, ws) is read_only


def test_a_glob_ending_in_a_slash_names_directories_and_follows_their_links(
    ws: Path, outside: Path
) -> None:
    assert ro("ls s*/", ws)
    assert ro("ls a*/", ws)  # a.txt is no directory: nothing matches
    (ws / "sx").symlink_to(outside)
    assert not ro("ls s*/", ws)  # sx/ is the directory outside


def test_a_glob_below_a_file_matches_nothing(ws: Path) -> None:
    assert ro("cat a.txt/*", ws)


def test_a_file_named_like_the_environment_is_refused_through_a_link(ws: Path) -> None:
    (ws / "environ.txt").write_text("x\n")
    (ws / "notes").symlink_to(ws / "environ.txt")
    assert not ro("cat notes", ws)
    assert ro("cat a.txt", ws)


def test_a_home_path_is_passed_to_git_as_bash_expands_it(
    ws: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HOME", str(ws))
    assert ro("git -C ~/sub status", ws)  # no repository: git reads no configuration
    assert ro("ls ~/a.txt=", ws)  # a = at the end is no tilde after =


def test_globs_expand_to_at_most_the_match_budget(ws: Path) -> None:
    many = ws / "many"
    many.mkdir()
    for i in range(GLOB_MATCH_BUDGET):
        (many / f"f{i}").touch()
    assert ro("cat many/*", ws)
    (many / "one-more").touch()
    assert not ro("cat many/*", ws)


def test_globs_look_at_most_at_the_scan_budget_of_names_even_matching_few(ws: Path) -> None:
    """``cat big/x*`` looks at every name in big/ to find those starting with x."""
    big = ws / "big"
    big.mkdir()
    for i in range(GLOB_SCAN_BUDGET):
        (big / f"f{i}").touch()
    assert ro("cat big/x*", ws)
    (big / "x").touch()
    assert not ro("cat big/x*", ws)


def test_a_command_line_of_exactly_the_byte_limit_is_judged(ws: Path) -> None:
    command = "echo " + "a" * (MAX_COMMAND_BYTES - len("echo "))
    assert len(command) == MAX_COMMAND_BYTES
    assert ro(command, ws)
    assert not ro(command + "a", ws)
    assert not ro(command[:-1] + "é", ws)  # the same length in characters, a byte more


@pytest.mark.parametrize(
    ("argv", "writes"),
    [
        (["sort", "a.txt", "-o", "out.txt"], True),
        (["sort", "a.txt"], False),
        (["git", "diff", "--output=x.patch"], True),
        (["git", "--no-pager", "diff", "--output=x.patch"], True),
        (["git", "-C", "sub", "log", "--ext-diff"], True),
        (["git", "-c", "core.pager=less", "log"], True),  # a global option the check refuses
        (["git", None, "status"], True),  # a word decided at run time, where options go
        (["git", "branch", "-a"], False),
        (["git", "diff", None], True),
        (["git", "status", None], False),  # status takes any argument
        (["git", "commit", "-m", "x"], False),  # not a reading subcommand: not this check's
        (["git"], False),
        (["grep", "-R", "x"], False),  # only follows links while it reads
        (["rm", "-rf", "x"], False),  # not a program the classifier knows
        ([], False),
    ],
)
def test_uses_writing_option_names_the_options_that_write_or_run_a_program(
    argv: list[str | None], writes: bool
) -> None:
    assert uses_writing_option(argv) is writes


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

    monkeypatch.setattr(importlib, "import_module", no_parsing)  # what bash_readonly calls
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


# --- security issue, item 8: read-only git ran programs the repository named -----------------


def git(cwd: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@t", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "GIT_CONFIG_NOSYSTEM": "1"},
    )
    return done.stdout


@pytest.fixture
def repo(ws: Path) -> Path:
    """The workspace as a fresh repository with one commit and default config."""
    git(ws, "init", "-q")
    git(ws, "add", "a.txt", "sub/v.txt")
    git(ws, "commit", "-qm", "init")
    return ws


GIT_READS = ["git status", "git diff", "git log -1", "git show HEAD", "git -C sub status"]

PROGRAM_KEYS = [
    ("core.fsmonitor", "touch marker; false"),
    ("core.fsmonitor", "true"),
    ("core.pager", "touch marker; cat"),
    ("pager.log", "touch marker; cat"),
    ("diff.external", "touch marker"),
    ("diff.evil.textconv", "touch marker; cat"),
    ("diff.evil.command", "touch marker"),
    ("filter.evil.clean", "touch marker; cat"),
    ("filter.evil.process", "touch marker"),
    ("core.hooksPath", "hooks"),
    ("include.path", "other.cfg"),
    ("includeIf.gitdir:/.path", "other.cfg"),
    ("alias.st", "!touch marker"),
    ("gpg.program", "touch marker"),
    ("log.showSignature", "true"),
    ("core.attributesFile", "attrs"),
    ("core.sshCommand", "touch marker"),
    ("credential.helper", "!touch marker"),
    ("core.askPass", "touch marker"),
    ("core.editor", "touch marker"),
    ("trace2.eventTarget", "/tmp/trace"),
    ("gc.recentObjectsHook", "touch marker"),
    ("core.worktree", "/tmp"),
    ("remote.origin.uploadpack", "touch marker"),
    ("remote.origin.promisor", "true"),
    ("extensions.partialClone", "origin"),
    ("made.up", "x"),
]


def test_git_in_a_plain_repository_is_read_only(repo: Path) -> None:
    for command in GIT_READS:
        assert ro(command, repo), command


@pytest.mark.parametrize(("key", "value"), PROGRAM_KEYS)
def test_git_is_not_read_only_where_the_repository_config_could_name_a_program(
    repo: Path, key: str, value: str
) -> None:
    """Item 8: core.fsmonitor, diff.external, textconv, filters, pagers... ran unasked."""
    git(repo, "config", key, value)
    for command in GIT_READS:
        assert not ro(command, repo), command
    assert ro("cat a.txt", repo)  # only git depends on the repository's config


def test_harmless_config_keeps_git_read_only(repo: Path) -> None:
    for key, value in [
        ("remote.origin.url", "https://example.com/x.git"),
        ("remote.origin.fetch", "+refs/heads/*:refs/remotes/origin/*"),
        ("branch.main.remote", "origin"),
        ("branch.main.merge", "refs/heads/main"),
        ("user.name", "Someone"),
        ("color.ui", "auto"),
        ("color.diff.meta", "blue"),
        ("diff.renames", "copies"),
        ("diff.py.xfuncname", "^def"),
        ("core.fsmonitor", "false"),
        ("log.decorate", "short"),
        ("status.showUntrackedFiles", "all"),
        ("submodule.lib.url", "../lib.git"),
        ("branch.main.vscode-merge-base", "origin/main"),  # VS Code's git writes it
        ("remote.origin.gh-resolved", "base"),  # gh writes it
        ("remote.pushDefault", "origin"),
        ("maintenance.auto", "false"),
    ]:
        git(repo, "config", key, value)
    assert ro("git status", repo)


@pytest.mark.parametrize("where", ["config.worktree", "config"])
def test_every_config_file_git_reads_is_checked(repo: Path, where: str) -> None:
    git(repo, "config", "extensions.worktreeConfig", "true")
    git(repo, "config", "--file", f".git/{where}", "core.pager", "touch marker")
    assert not ro("git log", repo)


def test_unparsable_config_is_not_read_only(repo: Path) -> None:
    with (repo / ".git" / "config").open("a") as config:
        config.write("[core\n")
    assert not ro("git status", repo)


def test_config_rewritten_after_a_cached_verdict_is_judged_again(
    repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(git_config, "RACY_SECONDS", -1e9)  # cache even brand-new files
    assert ro("git status", repo)
    git(repo, "config", "core.fsmonitor", "touch marker")
    assert not ro("git status", repo)


def test_repository_above_the_workspace_is_not_read_only(repo: Path) -> None:
    """git status in a subdirectory shows (and git show reads) files outside it."""
    assert not ro("git status", repo / "sub")
    assert ro("cat v.txt", repo / "sub")


def test_gitdir_file_pointing_outside_the_workspace_is_not_read_only(
    ws: Path, tmp_path: Path
) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    git(elsewhere, "init", "-q")
    (ws / ".git").write_text(f"gitdir: {elsewhere / '.git'}\n")
    assert not ro("git status", ws)


def test_gitdir_file_inside_the_workspace_is_followed(ws: Path) -> None:
    git(ws, "init", "-q", "--separate-git-dir", str(ws / "sub" / "store"))
    assert (ws / ".git").is_file()
    assert ro("git status", ws)
    git(ws, "config", "core.fsmonitor", "touch marker")
    assert not ro("git status", ws)


def test_bare_repository_in_the_workspace_is_checked(ws: Path) -> None:
    """git -C dir finds a bare repository in dir itself (an embedded bare repository)."""
    git(ws, "init", "-q", "--bare", "sub/bare")
    assert ro("git -C sub/bare log", ws)
    git(ws / "sub" / "bare", "config", "core.pager", "touch marker")
    assert not ro("git -C sub/bare log", ws)
    assert not ro("git -C sub/bare/refs log", ws)


def test_populated_submodule_config_is_checked(repo: Path) -> None:
    """git status and git diff run git inside submodules, with their own config."""
    inner = repo / "lib"
    inner.mkdir()
    git(inner, "init", "-q")
    (inner / "f").write_text("f\n")
    git(inner, "add", "f")
    git(inner, "commit", "-qm", "lib")
    git(
        repo,
        "update-index",
        "--add",
        "--cacheinfo",
        f"160000,{git(inner, 'rev-parse', 'HEAD').strip()},lib",
    )
    assert ro("git status", repo)
    git(inner, "config", "filter.evil.clean", "touch marker; cat")
    assert not ro("git status", repo)
    assert not ro("git diff", repo)
    (inner / ".git").rename(repo / "unpopulated")  # git does not look into an empty directory
    assert ro("git status", repo)


@pytest.mark.parametrize(
    "setup",
    [
        ["update-index", "--index-version", "2"],
        ["update-index", "--index-version", "3"],
        ["update-index", "--index-version", "4"],
        ["update-index", "--split-index"],
    ],
)
def test_gitlinks_are_found_in_every_index_format(repo: Path, setup: list[str]) -> None:
    for name in ("a", "deeply/nested/name/lib", "z" * 300):
        git(repo, "update-index", "--add", "--cacheinfo", f"160000,{'1' * 40},{name}")
    (repo / "c.txt").write_text("c\n")
    git(repo, "add", "-N", "c.txt")  # an extended flag (intent to add)
    git(repo, *setup)
    data = (repo / ".git" / "index").read_bytes()
    links, shared = git_config.parse_gitlinks(data, 20)
    if shared is not None:
        shared_index = repo / ".git" / f"sharedindex.{shared}"
        links += git_config.parse_gitlinks(shared_index.read_bytes(), 20)[0]
    assert sorted(links) == [b"a", b"deeply/nested/name/lib", b"z" * 300]


def test_unreadable_index_is_not_read_only(repo: Path) -> None:
    (repo / ".git" / "index").write_bytes(b"DIRC\x00\x00\x00\x09" + b"\x00" * 40)
    assert not ro("git status", repo)


def test_index_change_hook_is_not_read_only(repo: Path) -> None:
    hook = repo / ".git" / "hooks" / "post-index-change"
    hook.write_text("#!/bin/sh\ntouch marker\n")
    hook.chmod(0o755)
    assert not ro("git status", repo)


def test_git_location_variables_make_git_not_read_only(
    repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GIT_DIR", str(repo / ".git"))
    assert not ro("git status", repo)


def test_user_config_inside_the_workspace_is_checked(
    repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With the workspace as home, the model could write ~/.gitconfig (acceptEdits)."""
    monkeypatch.setenv("HOME", str(repo))
    monkeypatch.delenv("XDG_CONFIG_HOME", raising=False)
    monkeypatch.delenv("GIT_CONFIG_GLOBAL", raising=False)
    assert ro("git status", repo)
    (repo / ".gitconfig").write_text("[core]\n\tpager = touch marker\n")
    assert not ro("git status", repo)


def test_a_git_program_inside_the_workspace_is_never_run_to_read_config(
    repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake = repo / "bin" / "git"
    fake.parent.mkdir()
    fake.write_text(f"#!/bin/sh\ntouch {repo / 'marker'}\n")
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{fake.parent}:{os.environ['PATH']}")
    assert not ro("git status", repo)
    assert not (repo / "marker").exists()


def test_no_repository_at_all_is_read_only(ws: Path) -> None:
    assert ro("git status", ws)  # git only says: not a git repository


@pytest.mark.parametrize(("key", "value"), PROGRAM_KEYS)
def test_program_keys_are_not_harmless(key: str, value: str) -> None:
    assert not git_config.key_is_harmless(key.lower(), value)


# --- several roots (workspace/roots.py): another root is inside, the rest stays outside -------


@pytest.fixture
def api(tmp_path: Path) -> Path:
    """A second root beside the workspace, with a file and a subfolder."""
    root = tmp_path / "api"
    (root / "src").mkdir(parents=True)
    (root / "src" / "x.py").write_text("foo = 1\n")
    return root


def test_a_read_in_another_root_is_read_only_as_in_the_primary(ws: Path, api: Path) -> None:
    """Issue 22 item 5: reads of the second root were asked while the same reads of the
    primary root ran unasked (the classifier knew only the primary root)."""
    commands = [
        f"cat {api}/src/x.py",
        f"ls {api}",
        f"grep -rn foo {api}/src",
        "cat ../api/src/x.py",  # bash runs in the primary root: ``..`` reaches the sibling
        f"wc -l {api}/src/*.py",
        f"cat a.txt {api}/src/x.py | sort",
    ]
    for command in commands:
        assert not is_read_only_command(command, ws), command  # one root: outside
        assert is_read_only_command(command, ws, [api]), command


def test_with_several_roots_a_path_outside_every_root_is_still_outside(
    ws: Path, api: Path, tmp_path: Path
) -> None:
    (api / "out-link").symlink_to(tmp_path / "x")
    for command in [
        f"cat {tmp_path}/x",
        "cat ../x",
        f"cat {api}/out-link",  # a symlink in the second root pointing out of every root
        f"ls {api}/..",
        "cat /etc/hostname",
        f"sort -o {api}/src/x.py a.txt",  # writing into another root is writing
    ]:
        assert not is_read_only_command(command, ws, [api]), command


def test_git_in_another_root_is_judged_by_that_roots_repository(ws: Path, api: Path) -> None:
    git(api, "init", "-q")
    git(api, "add", "src/x.py")
    git(api, "commit", "-qm", "init")
    assert is_read_only_command(f"git -C {api} status", ws, [api])
    assert not is_read_only_command(f"git -C {api} status", ws)  # its repository is outside
    git(api, "config", "core.fsmonitor", "touch marker; false")
    assert not is_read_only_command(f"git -C {api} status", ws, [api])


def test_a_git_program_inside_another_root_makes_git_not_read_only(
    repo: Path, api: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake = api / "bin" / "git"
    fake.parent.mkdir()
    fake.write_text(f"#!/bin/sh\ntouch {repo / 'marker'}\n")
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{fake.parent}:{os.environ['PATH']}")
    assert not is_read_only_command("git status", repo, [api])
    assert not (repo / "marker").exists()  # never run to read the repository's config
