"""What the permission rules say about one call (``core/permissions/call_rules.py``): rules that
name a pipeline or list, deny over ask among the paths a command names, globs expanded as bash
would within their budgets, the git check of rule-allowed git, and what the approval card and
"allow for session" get. The cases the mutation run of the module showed untested."""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from tiller.core.permissions.call_rules import (
    CLUSTER_LETTERS,
    GLOB_MATCH_BUDGET,
    GLOB_SCAN_BUDGET,
    Ruled,
    judge,
    judge_command,
    session_rules_for,
)
from tiller.core.permissions.rules import Place, RuleBook, parse_rule

SOURCE = "~/.claude/settings.json"
RUN_TIME = "may match a path decided at run time"
GIT_ASKED = "the git repository's configuration may run a program"


def book(**effects: list[str]) -> RuleBook:
    return RuleBook(
        tuple(
            parse_rule(text, effect, "user", SOURCE)  # type: ignore[arg-type]
            for effect, texts in effects.items()
            for text in texts
        )
    )


def by(text: str) -> str:
    """How a rule of ``book`` names itself as the decider."""
    return f"rule: {text} (user {SOURCE})"


def never(_text: str) -> bool:
    return False


def always(_text: str) -> bool:
    return True


@pytest.fixture
def place(tmp_path: Path) -> Place:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / ".env").write_text("SECRET=1\n")
    (ws / "a.txt").write_text("a\n")
    (ws / "secrets").mkdir()
    (ws / "secrets" / "key").write_text("k\n")
    (ws / "sub").mkdir()
    home = tmp_path / "home"
    home.mkdir()
    (home / "secret.txt").write_text("s\n")
    return Place(ws, str(home))


def paths(rules: RuleBook, line: str, place: Place) -> Ruled:
    return judge_command(line, rules, never, place)


# --- rules that name a pipeline or a list -----------------------------------------------------


def test_a_deny_rule_naming_a_list_denies_it_under_a_broad_allow() -> None:
    rules = book(allow=["Bash"], deny=["Bash(rm:*)", "Bash(make && make install)"])
    for line in ("make && make install", "make&&make install", " make  &&  make install "):
        ruled = judge_command(line, rules, never)
        assert (ruled.effect, ruled.by) == ("deny", by("Bash(make && make install)")), line
    for line in ("make && make test", "ls | wc", "make install"):
        assert judge_command(line, rules, never).effect == "allow", line


def test_an_ask_rule_naming_a_list_asks_and_never_denies() -> None:
    rules = book(allow=["Bash"], ask=["Bash(git add * && git commit *)"])
    ruled = judge_command("git add . && git commit -m x", rules, never)
    assert (ruled.effect, ruled.by) == ("ask", by("Bash(git add * && git commit *)"))


# --- a deny among the paths a command names wins over an ask ----------------------------------


def test_a_read_deny_on_one_path_wins_over_a_read_ask_on_another(place: Place) -> None:
    rules = book(ask=["Read(./a.txt)"], deny=["Read(./.env)"])
    assert paths(rules, "cat a.txt", place).effect == "ask"
    ruled = paths(rules, "cat a.txt .env", place)
    assert (ruled.effect, ruled.by) == ("deny", by("Read(./.env)"))


def test_a_read_deny_wins_over_a_read_ask_on_the_same_path(place: Place) -> None:
    rules = book(ask=["Read(./*.txt)"], deny=["Read(./a.txt)"])
    ruled = paths(rules, "cat a.txt", place)
    assert (ruled.effect, ruled.by) == ("deny", by("Read(./a.txt)"))


def test_a_read_deny_wins_over_an_ask_rule_for_the_command(place: Place) -> None:
    rules = book(ask=["Bash(cat:*)"], deny=["Read(./.env)"])
    assert paths(rules, "cat a.txt", place).effect == "ask"
    ruled = paths(rules, "cat .env", place)
    assert (ruled.effect, ruled.by) == ("deny", by("Read(./.env)"))


def test_a_path_decided_at_run_time_does_not_hide_a_denied_path_after_it(place: Place) -> None:
    ruled = paths(book(deny=["Read(./.env)"]), "cat $F .env", place)
    assert (ruled.effect, ruled.by) == ("deny", by("Read(./.env)"))


def test_a_path_decided_at_run_time_is_asked_naming_the_deny_rule_first(place: Place) -> None:
    rules = book(ask=["Read(./a.txt)"], deny=["Read(./.env)"])
    ruled = paths(rules, "cat $F", place)
    assert (ruled.effect, ruled.by) == ("ask", f"{by('Read(./.env)')} {RUN_TIME}")


# --- why a deny or ask rule matched -----------------------------------------------------------


def test_a_rule_matched_through_a_word_decided_at_run_time_says_so() -> None:
    through = "; a word decided at run time may make it match"
    ruled = judge_command("$R -rf t", book(deny=["Bash(rm:*)"]), never)
    assert (ruled.effect, ruled.by) == ("deny", by("Bash(rm:*)") + through)
    ruled = judge_command("$R -rf t", book(ask=["Bash(rm:*)"]), never)
    assert (ruled.effect, ruled.by) == ("ask", by("Bash(rm:*)") + through)
    # a rule for the whole tool matches whatever the words: no maybe about it
    ruled = judge_command("$R -rf t", book(deny=["Bash"]), never)
    assert (ruled.effect, ruled.by) == ("deny", by("Bash"))


# --- globs expand as bash would ---------------------------------------------------------------


def test_a_glob_under_home_expands_in_the_home_directory(place: Place) -> None:
    rules = book(deny=["Read(~/secret.txt)"])
    ruled = paths(rules, "cat ~/sec*", place)
    assert (ruled.effect, ruled.by) == ("deny", by("Read(~/secret.txt)"))
    assert paths(rules, "cat ~/other*", place).effect is None


def test_an_absolute_glob_expands_from_the_root(place: Place) -> None:
    rules = book(deny=["Read(./.env)"])
    assert paths(rules, f"cat {place.workspace}/.e*", place).effect == "deny"
    assert paths(rules, f"cat {place.workspace}//.e*", place).effect == "deny"


def test_a_glob_below_a_folder_expands_in_that_folder(place: Place) -> None:
    rules = book(deny=["Read(./secrets/key)"])
    assert paths(rules, "cat secrets/k*", place).effect == "deny"
    assert paths(rules, "cat secrets/x*", place).effect is None


def test_after_a_cd_an_absolute_glob_is_still_expanded(place: Place) -> None:
    rules = book(deny=["Read(./.env)"])
    ruled = paths(rules, f"cd sub && cat {place.workspace}/.e*", place)
    assert (ruled.effect, ruled.by) == ("deny", by("Read(./.env)"))


def test_a_glob_over_a_file_and_a_folder_finds_what_the_folder_holds(place: Place) -> None:
    """``p/*/k*`` lists p/'s entries: one is a file, which holds nothing, and the folder
    after or before it is still looked into. Each of p/ and q/ holds a file and a folder,
    named and made in opposite orders, so that in one of them the file is listed first
    whatever order the file system lists in."""
    ws = place.workspace
    for parent, file, folder in (("p", "x", "y"), ("q", "y", "x")):
        (ws / parent).mkdir()
        if parent == "p":
            (ws / parent / file).write_text("f\n")
        (ws / parent / folder).mkdir()
        (ws / parent / folder / "key").write_text("k\n")
        if parent == "q":
            (ws / parent / file).write_text("f\n")
    rules = book(deny=["Read(./p/y/key)", "Read(./q/x/key)"])
    assert paths(rules, "cat p/*/k*", place).effect == "deny"
    assert paths(rules, "cat q/*/k*", place).effect == "deny"


def test_a_glob_in_a_folder_that_is_not_there_expands_to_nothing(place: Place) -> None:
    rules = book(deny=["Read(./.env)"])
    assert paths(rules, "cat missing/*.txt a.txt/*", place).effect is None


def test_globs_expand_to_at_most_the_match_budget(place: Place) -> None:
    many = place.workspace / "many"
    many.mkdir()
    for i in range(GLOB_MATCH_BUDGET):
        (many / f"f{i}").touch()
    rules = book(deny=["Read(./.env)"])
    assert paths(rules, "cat many/*", place).effect is None
    (many / "one-more").touch()
    ruled = paths(rules, "cat many/*", place)
    assert (ruled.effect, ruled.by) == ("ask", f"{by('Read(./.env)')} {RUN_TIME}")


def test_globs_look_at_most_at_the_scan_budget_of_names_even_matching_none(place: Place) -> None:
    """``cat big/x*`` looks at every name in big/ to find those starting with x."""
    big = place.workspace / "big"
    big.mkdir()
    for i in range(GLOB_SCAN_BUDGET):
        (big / f"f{i}").touch()
    rules = book(deny=["Read(./.env)"])
    assert paths(rules, "cat big/x*", place).effect is None
    (big / "y").touch()
    ruled = paths(rules, "cat big/x*", place)
    assert (ruled.effect, ruled.by) == ("ask", f"{by('Read(./.env)')} {RUN_TIME}")


# --- the words of a segment that name files ---------------------------------------------------


@pytest.mark.parametrize(
    "line",
    ["grep --file=.env a.txt", "grep -f.env a.txt", "grep -rf.env .", "grep -f=.env a.txt"],
)
def test_a_read_deny_rule_denies_a_file_named_by_an_options_value(line: str, place: Place) -> None:
    """Which letter of ``-rf.env`` takes ``.env``, only grep knows: every tail is a path; and
    a proof that the segment only reads does not stop a ``Read`` rule."""
    ruled = judge_command(line, book(deny=["Read(./.env)"]), always, place)
    assert (ruled.effect, ruled.by) == ("deny", by("Read(./.env)"))


@pytest.mark.parametrize(
    "line",
    [
        "sort -o.env a.txt",
        "sort -ro.env a.txt",
        "sort --output=.env a.txt",
        "go test -coverprofile=.env ./...",
    ],
)
def test_an_edit_deny_rule_denies_writing_a_file_named_by_an_options_value(
    line: str, place: Place
) -> None:
    rules = book(allow=["Bash", "Bash(go test:*)"], deny=["Edit(./.env)"])
    ruled = paths(rules, line, place)
    assert (ruled.effect, ruled.by) == ("deny", by("Edit(./.env)"))


def test_option_letters_alone_name_no_file(place: Place) -> None:
    rules = book(allow=["Bash"], deny=["Read(./.env)", "Edit(./.env)"])
    for line in ("ls -la", "make -j4", "grep -e env a.txt", "grep -", "ls --", "sort --env=a.txt"):
        assert paths(rules, line, place).effect == "allow", line
    named = book(allow=["Bash"], deny=["Read(./v)", "Read(./env)"])
    for line in ("ls -v", "grep -f.env a.txt"):  # nothing attached; . is no option letter
        assert paths(named, line, place).effect == "allow", line
    for line in ("ls -lv", "grep -fenv a.txt"):
        assert paths(named, line, place).effect == "deny", line


def test_a_short_option_cluster_too_long_to_try_is_a_path_decided_at_run_time(
    place: Place,
) -> None:
    rules = book(allow=["Bash"], deny=["Read(./.env)", "Edit(./.env)"])
    longest = "-" + "v" * CLUSTER_LETTERS + ".env"
    assert paths(rules, f"cmd {longest}", place).effect == "deny"
    ruled = paths(rules, f"cmd -v{longest[1:]}", place)
    assert (ruled.effect, ruled.by) == ("ask", f"{by('Read(./.env)')} {RUN_TIME}")


def test_a_long_option_without_a_value_names_no_file_even_after_a_cd(place: Place) -> None:
    rules = book(allow=["Bash(cd:*)", "Bash(ls:*)"], deny=["Read(./.env)"])
    assert paths(rules, "cd / && ls --all --color=", place).effect == "allow"
    assert paths(rules, "cd / && ls --all x", place).effect == "ask"  # x: relative after cd


# --- what the approval card and "allow for session" get ---------------------------------------


def test_the_card_shows_each_segments_decision_its_rule_and_why_only_an_exact_rule_fits() -> None:
    ruled = judge_command("env make && ls", book(allow=["Bash(ls:*)"]), never)
    assert ruled.segments_to_wire() == [
        {"text": "env make", "decision": "mode", "exactOnly": "env runs another program"},
        {"text": "ls", "decision": "allow", "rule": by("Bash(ls:*)")},
    ]


def test_a_call_that_is_no_command_has_no_segments_and_no_session_rules(tmp_path: Path) -> None:
    ruled = judge("write_file", "edit", {"path": "a.txt"}, book(allow=["Edit"]), tmp_path, never)
    assert ruled == Ruled("allow", by("Edit"))
    assert ruled.segments_to_wire() is None
    assert session_rules_for(ruled) == ()


def test_only_an_edit_of_a_rules_file_is_protected(tmp_path: Path) -> None:
    def protected(tool: str, kind: str, path: object) -> bool:
        return judge(tool, kind, {"path": path}, RuleBook(), tmp_path, never).protected

    assert protected("write_file", "edit", ".claude/settings.json")
    assert not protected("write_file", "edit", "a.txt")
    assert not protected("write_file", "edit", None)
    assert not protected("read_file", "read", ".claude/settings.json")


# --- rule-allowed git gets the classifier's git-config check ----------------------------------


def git(where: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=where, check=True, capture_output=True)


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A workspace that is an inert git repository."""
    ws = tmp_path / "ws"
    ws.mkdir()
    git(ws, "init", "-q")
    (ws / "a.txt").write_text("a\n")
    return ws


def in_repo(
    rules: RuleBook, line: str, ws: Path, read_only: Callable[[str], bool] = never
) -> Ruled:
    return judge("bash", "bash", {"command": line}, rules, ws, read_only)


def test_rule_allowed_git_is_asked_in_its_own_place_on_the_card(repo: Path) -> None:
    git(repo, "config", "diff.external", "./evil.sh")
    ruled = in_repo(book(allow=["Bash(ls:*)", "Bash(git diff:*)"]), "ls && git diff && ls -a", repo)
    assert ruled.effect == "ask"
    assert ruled.segments is not None
    assert [(j.segment.text, j.decision) for j in ruled.segments] == [
        ("ls", "allow"),
        ("git diff", "ask"),
        ("ls -a", "allow"),
    ]


def test_a_read_only_segment_before_rule_allowed_git_does_not_skip_its_check(repo: Path) -> None:
    git(repo, "config", "diff.external", "./evil.sh")
    ruled = in_repo(book(allow=["Bash(git diff:*)"]), "cat a.txt && git diff", repo,
                    lambda text: text == "cat a.txt")  # fmt: skip
    assert ruled.effect == "ask"
    assert GIT_ASKED in str(ruled.by)


def test_rule_allowed_git_with_a_word_decided_at_run_time_is_asked(repo: Path) -> None:
    rules = book(allow=["Bash"])
    assert in_repo(rules, "git diff", repo).effect == "allow"
    for line in ("git $X", "git diff $X", "git $X diff"):
        ruled = in_repo(rules, line, repo)
        assert ruled.effect == "ask", line
        assert GIT_ASKED in str(ruled.by), line


def test_rule_allowed_git_is_checked_in_the_repository_dash_c_names(repo: Path) -> None:
    sub = repo / "sub"
    sub.mkdir()
    git(sub, "init", "-q")
    git(sub, "config", "diff.external", "./evil.sh")
    rules = book(allow=["Bash"])
    assert in_repo(rules, "git diff", repo).effect == "allow"
    assert in_repo(rules, "git -C sub diff", repo).effect == "ask"


def test_the_git_check_leaves_other_programs_alone(repo: Path) -> None:
    for rules, line in (
        (book(allow=["Bash"]), "$CMD x"),  # a program decided at run time is not git
        (book(allow=["Bash"]), "FOO=1"),  # no program at all
        (book(allow=["Bash(ls:*)"]), "ls $X"),
    ):
        assert in_repo(rules, line, repo).effect == "allow", line


def test_the_git_check_never_turns_a_deny_or_the_modes_say_into_an_ask(repo: Path) -> None:
    ruled = in_repo(book(deny=["Bash(rm:*)"]), "git status $X; rm t", repo)
    assert (ruled.effect, ruled.by) == ("deny", by("Bash(rm:*)"))
    assert in_repo(RuleBook(), "git status $X", repo).effect is None
