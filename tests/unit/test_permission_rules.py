"""Permission rules: Claude Code's syntax read, matched per tool and per command segment, with
deny > ask > allow, from every scope's settings file; the mode has the last word in plan."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from tiller.core.permissions.call_rules import Ruled, judge, judge_command, session_rules_for
from tiller.core.permissions.modes import RULES_FILE, Allow, Ask, Deny, Grants, decide
from tiller.core.permissions.rule_files import (
    add_rule,
    is_rules_file,
    keep_rules,
    load_rule_book,
    remove_rule,
)
from tiller.core.permissions.rules import Place, RuleBook, RuleError, matches_call, parse_rule
from tiller.extend.trust import Trust


def book(**effects: list[str]) -> RuleBook:
    return RuleBook(
        tuple(
            parse_rule(text, effect, "workspace", ".claude/settings.json")  # type: ignore[arg-type]
            for effect, texts in effects.items()
            for text in texts
        )
    )


def never_read_only(_text: str) -> bool:
    return False


def command(rules: RuleBook, line: str) -> Ruled:
    return judge_command(line, rules, never_read_only)


def test_prefix_rule_matches_words_at_a_word_boundary() -> None:
    rules = book(allow=["Bash(git diff:*)"])
    assert command(rules, "git diff").effect == "allow"
    assert command(rules, "git  diff --stat src").effect == "allow"
    assert command(rules, "git diffx").effect is None
    assert command(rules, "git status").effect is None


def test_exact_and_wildcard_rules_follow_claude_code() -> None:
    rules = book(allow=["Bash(npm install)", "Bash(ls *)", "Bash(git * main)"])
    assert command(rules, "npm install").effect == "allow"
    assert command(rules, "npm install left-pad").effect is None
    assert command(rules, "ls").effect == "allow"  # a trailing " *" may match nothing
    assert command(rules, "ls -la").effect == "allow"
    assert command(rules, "git push origin main").effect == "allow"
    assert command(rules, "git push origin dev").effect is None


def test_compound_command_runs_only_when_every_segment_is_allowed() -> None:
    rules = book(allow=["Bash(git status:*)"])
    ruled = command(rules, "git status && rm -rf ./tmp")
    assert ruled.effect is None  # the mode decides: asked in default mode
    assert ruled.segments is not None
    assert [(s.segment.text, s.decision) for s in ruled.segments] == [
        ("git status", "allow"),
        ("rm -rf ./tmp", None),
    ]
    assert decide("default", "bash", read_only=False, ruled=ruled, grants=Grants()) == Ask(
        "mode default"
    )


def test_a_denied_segment_denies_the_command_and_names_the_rule() -> None:
    rules = book(allow=["Bash"], deny=["Bash(rm:*)"])
    ruled = command(rules, "echo hi; (cd x && rm -rf y)")
    assert ruled.effect == "deny"
    decision = decide("acceptEdits", "bash", read_only=False, ruled=ruled, grants=Grants())
    assert isinstance(decision, Deny)
    assert decision.by == "rule: Bash(rm:*) (workspace .claude/settings.json)"


def test_deny_beats_ask_beats_allow_whatever_the_specificity() -> None:
    rules = book(allow=["Bash(aws s3 ls)"], ask=["Bash(aws s3:*)"], deny=["Bash(aws iam:*)"])
    assert command(rules, "aws s3 ls").effect == "ask"
    assert command(rules, "aws iam list-users").effect == "deny"
    read = book(allow=["Read(src/**)"], deny=["Read(src/secret/**)"])
    place = Place(Path("/ws"), "/home/u")
    deciding = read.for_call("read_file", {"path": "src/secret/key"}, place)
    assert deciding is not None and deciding.effect == "deny"


def test_an_ask_rule_asks_even_for_a_read_only_call() -> None:
    ruled = judge_command("cat notes.txt", book(ask=["Bash(cat:*)"]), lambda _: True)
    assert decide("default", "bash", read_only=True, ruled=ruled, grants=Grants()) == Ask(
        "rule: Bash(cat:*) (workspace .claude/settings.json)"
    )


def test_plan_mode_denies_writes_whatever_an_allow_rule_says() -> None:
    ruled = command(book(allow=["Bash(make:*)"]), "make build")
    assert isinstance(decide("plan", "bash", read_only=False, ruled=ruled, grants=Grants()), Deny)
    assert decide("default", "bash", read_only=False, ruled=ruled, grants=Grants()) == Allow(
        "rule: Bash(make:*) (workspace .claude/settings.json)"
    )


def test_wrappers_redirections_and_assignments_only_match_exactly() -> None:
    rules = book(allow=["Bash(find:*)", "Bash(git diff:*)", "Bash(rm:*)", "Bash(sudo:*)"])
    for line in [
        "find . -exec rm {} +",
        "git diff > /etc/motd",
        "FOO=1 rm x",
        "sudo rm -rf /",
        "git -c core.pager=evil diff",
    ]:
        assert command(rules, line).effect is None, line
    assert command(book(allow=["Bash(git diff > out.txt)"]), "git diff > out.txt").effect == (
        "allow"
    )


def test_substitutions_are_segments_of_their_own() -> None:
    rules = book(allow=["Bash(echo:*)"])
    ruled = command(rules, "echo $(rm -rf x) `touch y` <(curl z)")
    assert ruled.segments is not None
    assert [s.segment.text for s in ruled.segments] == [
        "echo $(rm -rf x) `touch y` <(curl z)",
        "rm -rf x",
        "touch y",
        "curl z",
    ]
    assert ruled.effect is None


def test_an_unreadable_line_is_never_allowed_by_a_rule_and_deny_rules_still_decide() -> None:
    # The old behaviour let a bare Bash allow rule (or an exact one) run a line the parser
    # could not read: such a line now always asks, unless a deny rule names its program.
    line = 'echo "${x:-`rm -rf t`}"'
    assert command(book(allow=["Bash"]), line) == Ruled(unparsed=line)
    assert command(book(allow=["Bash(echo:*)", f"Bash({line})"]), line).effect is None
    assert session_rules_for(command(RuleBook(), line)) == ()  # nothing could allow it
    assert command(book(allow=["Bash"], deny=["Bash(rm:*)"]), line).effect == "deny"
    assert command(book(deny=["Bash"]), line).effect == "deny"
    assert command(book(ask=["Bash(/bin/rm -rf:*)"]), line).effect == "ask"
    assert command(book(deny=["Bash(curl:*)"]), line).effect is None


def test_allow_for_session_adds_exactly_the_segments_shown() -> None:
    ruled = command(book(allow=["Bash(git status:*)"]), "git status && rm -rf ./tmp")
    rules = session_rules_for(ruled)
    assert [r.text for r in rules] == ["Bash(rm -rf ./tmp)"]
    granted = RuleBook(rules)
    assert command(granted, "rm -rf ./tmp").effect == "allow"
    assert command(granted, "rm -rf ./tmp2").effect is None
    assert command(granted, "rm -rf /").effect is None
    starry = session_rules_for(command(RuleBook(), "rm *.o"))
    assert command(RuleBook(starry), "rm -rf / x.o").effect is None


def test_paths_are_gitignore_style_from_the_workspace() -> None:
    place = Place(Path("/ws"), "/home/u")
    cases = [
        ("Edit(docs/**)", "docs/a/b.md", True),
        ("Edit(docs/**)", "src/docs/a.md", False),
        ("Edit(/docs/*.md)", "docs/a.md", True),
        ("Edit(/docs/*.md)", "docs/x/a.md", False),
        ("Read(*.env)", "deep/down/.prod.env", True),
        ("Read(//etc/**)", "/etc/passwd", True),
        ("Read(~/notes/**)", "/home/u/notes/x", True),
    ]
    for text, path, expected in cases:
        rule = parse_rule(text, "deny", "user", "~/.claude/settings.json")
        name = "edit_file" if text.startswith("Edit") else "read_file"
        assert matches_call(rule, name, {"path": path}, place) is expected, (text, path)


def test_mcp_and_web_fetch_rules_match_by_name_and_domain() -> None:
    place = Place(Path("/ws"), "/home/u")
    server = parse_rule("mcp__github", "allow", "user", "x")
    starred = parse_rule("mcp__github__*", "allow", "user", "x")
    one = parse_rule("mcp__github__create_issue", "deny", "user", "x")
    for rule in (server, starred):
        assert matches_call(rule, "mcp__github__list", {}, place)
        assert not matches_call(rule, "mcp__githubx__list", {}, place)
    assert matches_call(one, "mcp__github__create_issue", {}, place)
    assert not matches_call(one, "mcp__github__create_issue2", {}, place)
    fetch = parse_rule("WebFetch(domain:example.com)", "allow", "user", "x")
    assert matches_call(fetch, "web_fetch", {"url": "https://example.com/a"}, place)
    assert not matches_call(fetch, "web_fetch", {"url": "https://evil-example.com/"}, place)


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("Bash(git", "no closing parenthesis"),
        ("Frobnicate(x)", "unknown tool"),
        ("WebFetch(example.com)", "WebFetch(domain:example.com)"),
        ("Bash(a:* b)", "':*' may only end"),
        ("mcp__x(y)", "without parentheses"),
    ],
)
def test_a_bad_rule_says_what_is_wrong(text: str, problem: str) -> None:
    with pytest.raises(RuleError) as raised:
        parse_rule(text, "allow", "user", "x")
    assert problem in raised.value.message and repr(text) in raised.value.message


def write(path: Path, data: object) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data))


def test_rules_are_read_from_every_scope_and_problems_name_file_and_rule(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home, ws = tmp_path / "home", tmp_path / "ws"
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("CLAUDE_CONFIG_DIR", raising=False)
    monkeypatch.delenv("TILLER_CONFIG_DIR", raising=False)
    monkeypatch.delenv("XDG_CONFIG_HOME", raising=False)
    write(home / ".claude" / "settings.json", {"permissions": {"allow": ["Bash(make:*)"]}})
    write(ws / ".claude" / "settings.json", {"permissions": {"deny": ["Bash(make deploy)"]}})
    write(ws / ".tiller" / "settings.local.json", {"permissions": {"ask": ["Bash(git", 3]}})
    loaded = load_rule_book(ws, Trust(True, "the test"))
    assert [(r.scope, r.source, r.text) for r in loaded.rules] == [
        ("user", "~/.claude/settings.json", "Bash(make:*)"),
        ("workspace", ".claude/settings.json", "Bash(make deploy)"),
    ]
    assert loaded.problems == (
        ".tiller/settings.local.json: permissions.ask[0]: 'Bash(git': no closing parenthesis",
        ".tiller/settings.local.json: permissions.ask[1] is not a string",
    )
    assert command(loaded, "make deploy").effect == "deny"
    assert command(loaded, "make test").by == "rule: Bash(make:*) (user ~/.claude/settings.json)"


def test_permissions_add_writes_tillers_local_file_and_remove_never_rewrites_claude_files(
    tmp_path: Path, home: Path
) -> None:
    ws = tmp_path / "ws"
    write(ws / ".claude" / "settings.local.json", {"permissions": {"allow": ["Bash(ls:*)"]}})
    rule = add_rule(ws, "allow", "Bash(ls:*)")
    assert rule.source == ".tiller/settings.local.json"
    stored = json.loads((ws / ".tiller" / "settings.local.json").read_text())
    assert stored == {"permissions": {"allow": ["Bash(ls:*)"]}}
    changed, elsewhere = remove_rule(ws, "Bash(ls:*)")
    assert changed == [".tiller/settings.local.json"]
    assert elsewhere == [".claude/settings.local.json"]
    assert "Bash(ls:*)" in (ws / ".claude" / "settings.local.json").read_text()


def test_writing_a_rules_file_is_always_asked(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    assert is_rules_file(".claude/settings.local.json", ws)
    assert is_rules_file("./.tiller/../.tiller/settings.json", ws)
    assert not is_rules_file("src/settings.json", ws)
    ruled = judge("write_file", "edit", {"path": ".claude/settings.json"}, RuleBook(), ws,
                  never_read_only)  # fmt: skip
    grants = Grants().allow_edits()
    decision = decide("acceptEdits", "edit", read_only=False, ruled=ruled, grants=grants)
    assert decision == Ask(RULES_FILE)
    assert isinstance(decide("plan", "edit", read_only=False, ruled=ruled, grants=grants), Deny)


def test_a_command_that_may_write_a_rules_file_is_asked_whatever_the_rules(tmp_path: Path) -> None:
    allow_all = book(allow=["Bash"])
    line = 'echo \'{"permissions": {"allow": ["Bash"]}}\' > .claude/settings.local.json'
    ruled = judge("bash", "bash", {"command": line}, allow_all, tmp_path, never_read_only)
    assert ruled.protected
    assert decide("acceptEdits", "bash", read_only=False, ruled=ruled, grants=Grants()) == Ask(
        RULES_FILE
    )
    reading = judge("bash", "bash", {"command": "cat .claude/settings.json"}, allow_all,
                    tmp_path, lambda _: True)  # fmt: skip
    assert not reading.protected


def test_a_path_that_changes_while_it_is_resolved_is_asked_as_a_rules_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A folder swapped for a symlink mid-resolve made realpath raise and crashed the turn."""

    def racing(path: str) -> str:
        raise FileNotFoundError(2, "No such file or directory", path)

    monkeypatch.setattr(os.path, "realpath", racing)
    assert is_rules_file("sub/f1.txt", tmp_path, {"HOME": str(tmp_path)})


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A home of the test's own (the user's settings and git's global excludes out of play);
    its Tiller folder lies two folders deep, none of them made yet."""
    home = tmp_path / "home"
    monkeypatch.setenv("HOME", str(home))
    for name in ("CLAUDE_CONFIG_DIR", "TILLER_CONFIG_DIR", "XDG_CONFIG_HOME"):
        monkeypatch.delenv(name, raising=False)
    return home


def test_permissions_add_writes_the_scope_asked_for_and_keeps_only_the_local_file_out_of_git(
    tmp_path: Path, home: Path
) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    subprocess.run(["git", "init", "-q"], cwd=ws, check=True)
    assert add_rule(ws, "allow", "Read(docs/**)", "workspace").source == ".tiller/settings.json"
    assert add_rule(ws, "deny", "Bash(rm:*)", "user").source == "~/.config/tiller/settings.json"
    assert add_rule(ws, "ask", "Bash(git push:*)").source == ".tiller/settings.local.json"
    stored = json.loads((home / ".config" / "tiller" / "settings.json").read_text())
    assert stored == {"permissions": {"deny": ["Bash(rm:*)"]}}
    excluded = (ws / ".git" / "info" / "exclude").read_text().splitlines()
    assert "/.tiller/settings.local.json" in excluded  # the user's own
    assert "/.tiller/settings.json" not in excluded  # the team's: for git to keep


def test_adding_a_rule_to_a_file_written_as_people_write_it_changes_only_the_rules_lines(
    tmp_path: Path, home: Path
) -> None:
    ws = tmp_path / "ws"
    (ws / ".tiller").mkdir(parents=True)
    (ws / ".tiller" / "settings.json").write_text(
        '{\n  "env": {\n    "A": "1"\n  },\n  "permissions": {\n    "allow": [\n'
        '      "Read"\n    ]\n  }\n}\n'
    )
    add_rule(ws, "allow", "Bash(make:*)", "workspace")
    add_rule(ws, "allow", "Bash(make:*)", "workspace")  # a rule the file holds is not repeated
    assert (ws / ".tiller" / "settings.json").read_text() == (
        '{\n  "env": {\n    "A": "1"\n  },\n  "permissions": {\n    "allow": [\n'
        '      "Read",\n      "Bash(make:*)"\n    ]\n  }\n}\n'
    )


def test_a_rule_is_never_added_to_a_file_that_cannot_be_read(tmp_path: Path, home: Path) -> None:
    ws = tmp_path / "ws"
    local = ws / ".tiller" / "settings.local.json"
    local.parent.mkdir(parents=True)
    local.write_text('{"permissions": {"deny": ["Bash(rm:*)"]')
    with pytest.raises(RuleError) as raised:
        add_rule(ws, "allow", "Bash(make:*)")
    assert raised.value.message.endswith("; fix it before adding rules")
    assert local.read_text() == '{"permissions": {"deny": ["Bash(rm:*)"]'


def test_always_allow_keeps_each_exact_segment_in_the_local_file_and_a_starred_one_for_the_session(
    tmp_path: Path, home: Path
) -> None:
    ws = tmp_path / "ws"
    rules = session_rules_for(command(RuleBook(), "make test && rm *.o && ls -la"))
    kept, said = keep_rules(ws, rules)
    assert kept == ["Bash(make test)", "Bash(ls -la)"]
    assert said == [
        "Bash(rm *.o) is allowed for this session only: in a rules file its * would be a "
        "wildcard and allow more than was shown"
    ]
    stored = json.loads((ws / ".tiller" / "settings.local.json").read_text())
    assert stored == {"permissions": {"allow": ["Bash(make test)", "Bash(ls -la)"]}}


def test_always_allow_with_a_broken_local_file_keeps_the_rules_for_the_session_and_says_why(
    tmp_path: Path, home: Path
) -> None:
    ws = tmp_path / "ws"
    local = ws / ".tiller" / "settings.local.json"
    local.parent.mkdir(parents=True)
    local.write_text("[]")
    rules = session_rules_for(command(RuleBook(), "make test"))
    assert keep_rules(ws, rules) == (
        [],
        [f"Bash(make test) is allowed for this session only: {local}: not a JSON object; fix it "
         "before adding rules"],
    )  # fmt: skip
    assert local.read_text() == "[]"


def test_removing_a_rule_takes_it_out_of_every_list_of_the_tiller_files_holding_it_only(
    tmp_path: Path, home: Path
) -> None:
    ws = tmp_path / "ws"
    write(ws / ".claude" / "settings.json", {"permissions": ["Bash(ls:*)"]})  # not an object
    write(ws / ".tiller" / "settings.json", {"permissions": {"allow": ["Read"]}})
    write(ws / ".tiller" / "settings.local.json", {"permissions": {
        "allow": ["Bash(ls:*)", "Read"], "ask": ["Bash(ls:*)"], "defaultMode": "acceptEdits",
    }})  # fmt: skip
    assert remove_rule(ws, " Bash(ls:*) ") == ([".tiller/settings.local.json"], [])
    assert json.loads((ws / ".tiller" / "settings.local.json").read_text()) == {
        "permissions": {"allow": ["Read"], "ask": [], "defaultMode": "acceptEdits"}
    }
    assert json.loads((ws / ".tiller" / "settings.json").read_text()) == {
        "permissions": {"allow": ["Read"]}
    }
