"""The rule language: every Claude Code tool name understood, Tiller's own names with their
family's specifiers, a deny rule that cannot be read failing closed, path rules to the letter
(``?``, anchors, a trailing ``/**``, ``**`` inside a name, ``//``, ``~``, symlinks) and WebFetch
domains in one spelling. Each test guards a behaviour a mutation of the rules left untested."""

from __future__ import annotations

import json
import os
import pwd
from pathlib import Path

import pytest

from tiller.core.permissions.call_rules import Ruled, judge_command
from tiller.core.permissions.modes import Allow, Ask, Deny, Grants, McpRules, decide, judge_mcp
from tiller.core.permissions.rules import (
    EFFECTS,
    EVERY_TOOL,
    FAMILIES,
    VOCABULARY,
    Effect,
    Place,
    Rule,
    RuleBook,
    RuleError,
    matches_call,
    parse_rule,
    path_rule_matches,
    rules_of,
)
from tiller.jsontypes import JSON
from tiller.workspace.bash.segments import split_command

SOURCE = ".claude/settings.json"
PLACE = Place(Path("/ws"), "/home/u")


def rule(text: str, effect: Effect = "deny") -> Rule:
    return parse_rule(text, effect, "workspace", SOURCE)


def matches(
    text: str, tool: str, effect: Effect = "deny", place: Place = PLACE, **tool_input: object
) -> bool:
    return matches_call(rule(text, effect), tool, dict(tool_input), place)


def loaded(permissions: JSON) -> tuple[RuleBook, list[str]]:
    rules, problems = rules_of(permissions, "workspace", SOURCE)
    return RuleBook(tuple(rules), tuple(problems)), problems


def always(_text: str) -> bool:
    return True


# --- every tool name ---------------------------------------------------------------------------


CLAUDE_CODE_TOOLS = [
    "Agent", "AskUserQuestion", "Bash", "BashOutput", "CronCreate", "CronDelete", "CronList",
    "Edit", "EnterPlanMode", "EnterWorktree", "ExitPlanMode", "ExitWorktree", "Glob", "Grep",
    "KillBash", "KillShell", "LS", "ListMcpResourcesTool", "LSP", "Monitor", "MultiEdit",
    "NotebookEdit", "NotebookRead", "PowerShell", "Read", "ReadMcpResourceTool", "SendMessage",
    "Skill", "SlashCommand", "Task", "TaskCreate", "TaskGet", "TaskList", "TaskOutput",
    "TaskStop", "TaskUpdate", "TodoWrite", "ToolSearch", "WebFetch", "WebSearch", "Write",
]  # fmt: skip


@pytest.mark.parametrize("name", CLAUDE_CODE_TOOLS)
def test_every_claude_code_tool_name_is_understood_in_every_list(name: str) -> None:
    for effect in EFFECTS:
        assert rule(name, effect).tool == name
    assert name in FAMILIES


@pytest.mark.parametrize(
    ("text", "tool", "tool_input", "expected"),
    [
        ("Agent(Explore)", "task", {"subagent_type": "explore"}, True),
        ("Agent(Explore)", "task", {"subagent_type": "general-purpose"}, False),
        ("Agent(Explore)", "task", {}, False),  # no kind named: a general agent
        ("Task(explore)", "task", {"subagent_type": "explore"}, True),
        ("Task(general-purpose)", "task", {}, True),
        ("Agent", "task", {"subagent_type": "anything"}, True),
        ("Agent(Explore)", "read_file", {"path": "a"}, False),
        ("Skill(pdf-forms)", "skill", {"name": "pdf-forms"}, True),
        ("Skill(pdf-forms:*)", "skill", {"name": "pdf-forms"}, True),
        ("Skill(pdf-forms)", "skill", {"name": "lint"}, False),
        ("Skill", "skill", {"name": "lint"}, True),
        ("NotebookEdit", "edit_file", {"path": "nb/a.ipynb"}, True),
        ("NotebookEdit", "write_file", {"path": "nb/A.IPYNB"}, True),
        ("NotebookEdit", "edit_file", {"path": "nb/a.py"}, False),
        ("NotebookEdit(nb/**)", "edit_file", {"path": "nb/x/a.ipynb"}, True),
        ("NotebookEdit(nb/**)", "edit_file", {"path": "nb/a.py"}, False),
        ("NotebookEdit(nb/**)", "edit_file", {"path": "other/a.ipynb"}, False),
        ("NotebookEdit", "read_file", {"path": "a.ipynb"}, False),
        ("NotebookRead", "read_file", {"path": "a.ipynb"}, True),
        ("NotebookRead", "read_file", {"path": "a.txt"}, False),
        ("NotebookRead", "grep", {"path": "a.ipynb"}, False),
        ("TodoWrite", "todo_write", {}, True),
        ("ExitPlanMode", "exit_plan_mode", {}, True),
        ("EnterPlanMode", "enter_plan_mode", {}, True),
        ("WebSearch", "web_search", {}, True),
        ("ToolSearch", "tool_search", {}, True),
        ("Grep", "read_file", {"path": "a"}, False),
        ("LS", "list_files", {"path": "a"}, True),
        ("Glob", "grep", {"path": "a"}, False),
        ("MultiEdit(src/**)", "write_file", {"path": "src/a"}, True),
    ],
)
def test_claude_code_names_cover_the_tiller_tools_that_do_their_work(
    text: str, tool: str, tool_input: JSON, expected: bool
) -> None:
    assert matches_call(rule(text), tool, tool_input, PLACE) is expected


@pytest.mark.parametrize(
    "text", ["SlashCommand(/deploy)", "SlashCommand", "BashOutput", "KillShell", "KillBash"]
)
def test_tools_tiller_does_not_have_are_understood_and_match_no_call(text: str) -> None:
    understood = rule(text)
    tiller_tools = {t for family in VOCABULARY.values() for t in family.tools}
    assert not any(matches_call(understood, t, {"path": "a"}, PLACE) for t in tiller_tools)


def test_tiller_tool_names_take_their_familys_specifier() -> None:
    book = RuleBook((rule("bash(rm:*)"),))
    assert judge_command("rm -rf x", book, always).effect == "deny"
    assert judge_command("ls", book, always).effect is None
    assert matches("read_file(.env)", "read_file", path="deep/.env")
    assert not matches("read_file(.env)", "grep", path="deep/.env")  # that tool alone
    assert not matches("read_file(.env)", "read_file", path="env")
    assert matches("write_file(docs/**)", "write_file", path="docs/a.md")
    assert matches("task(Explore)", "task", subagent_type="explore")
    assert not matches("task(explore)", "task", subagent_type="general-purpose")
    assert matches("skill(lint)", "skill", name="lint")
    assert matches("web_fetch(domain:example.com)", "web_fetch", url="https://example.com/")
    assert not matches("web_fetch(domain:example.com)", "web_fetch", url="https://x.org/")


@pytest.mark.parametrize("text", ["read(.env)", "READ(.env)", "Read_File(x)", "bAsh", "Frob"])
def test_a_tool_name_in_the_wrong_case_or_unknown_is_not_read(text: str) -> None:
    with pytest.raises(RuleError) as raised:
        rule(text)
    assert "unknown tool" in raised.value.message


@pytest.mark.parametrize("text", ["WebSearch(rust)", "TodoWrite(x)", "todo_write(x)"])
def test_a_specifier_on_a_tool_that_takes_none_is_an_error(text: str) -> None:
    with pytest.raises(RuleError) as raised:
        rule(text)
    assert "takes no specifier" in raised.value.message


def test_an_unknown_tool_is_answered_with_claude_codes_first_tool_names() -> None:
    with pytest.raises(RuleError) as raised:
        rule("Frobnicate")
    assert raised.value.message == (
        "'Frobnicate': unknown tool 'Frobnicate' (known: Claude Code's tool names such as "
        "Bash, Read, Grep, Glob, LS, Edit, Write, MultiEdit, NotebookEdit, NotebookRead, "
        "WebFetch, WebSearch, ...; Tiller's, such as bash or read_file; or mcp__server__tool)"
    )


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("Bash(a:*:*)", "':*' may only end a Bash rule"),  # the last ':*' alone ends it
        ("Bash(echo \\:*)", "No escaped character"),  # its words end in a lone backslash
        ('Bash(echo "x)', "No closing quotation"),
        ('Bash(echo ":*)', "No closing quotation"),
    ],
)
def test_a_bash_rule_whose_words_cannot_be_read_is_an_error(text: str, problem: str) -> None:
    with pytest.raises(RuleError) as raised:
        rule(text)
    assert raised.value.message == f"{text!r}: {problem}"


def test_a_bash_rule_names_no_call_as_a_whole_its_command_is_judged_per_segment() -> None:
    prefix = rule("Bash(ls:*)", "allow")
    assert not matches_call(prefix, "bash", {"command": "ls"}, PLACE)
    assert not matches_call(prefix, "bash", {"command": "ls; rm -rf /"}, PLACE)
    assert RuleBook((prefix,)).for_call("bash", {"command": "ls"}, PLACE) is None


def test_a_rule_of_another_tool_never_decides_a_command_segment() -> None:
    segments = split_command("cat notes.txt")
    assert isinstance(segments, tuple)
    others = RuleBook(tuple(rule(t) for t in ("Read", "Read(notes.txt)", "WebFetch", "mcp__x")))
    assert others.for_segment(segments[0]) is None


# --- a deny that cannot be read fails closed -----------------------------------------------------


def test_a_broken_deny_makes_every_call_of_its_tool_ask_whatever_proofs_modes_and_allows_say() -> (
    None
):
    book, problems = loaded({"allow": ["Bash"], "deny": ["Bash(rm:*", "Bash(make deploy)"]})
    assert problems == [
        f"{SOURCE}: permissions.deny[0]: 'Bash(rm:*': no closing parenthesis; until it is "
        "fixed, every Bash call is asked"
    ]
    ls = judge_command("ls", book, always)
    by = f"unreadable deny rule: Bash(rm:* (workspace {SOURCE})"
    assert (ls.effect, ls.by) == ("ask", by)
    for mode in ("default", "acceptEdits", "plan"):
        assert decide(mode, "bash", read_only=True, ruled=ls, grants=Grants()) == Ask(by)
    writes = judge_command("touch x", book, lambda _: False)
    assert isinstance(decide("plan", "bash", read_only=False, ruled=writes, grants=Grants()), Deny)
    assert judge_command("make deploy", book, always).effect == "deny"  # the others still hold
    assert book.for_call("read_file", {"path": "a"}, PLACE) is None  # other tools: untouched


def test_a_broken_deny_whose_tool_cannot_be_read_makes_every_tool_ask() -> None:
    book, problems = loaded({"deny": ["Frobnicate(x)"]})
    assert problems[0].endswith("; until it is fixed, every tool call is asked")
    (stand_in,) = book.rules
    assert (stand_in.effect, stand_in.tool, stand_in.unreadable) == ("ask", EVERY_TOOL, True)
    found = book.for_call("read_file", {"path": "a.txt"}, PLACE)
    assert found is stand_in
    ruled = Ruled("ask", stand_in.describe())
    assert decide("default", "read", read_only=True, ruled=ruled, grants=Grants()) == Ask(
        f"unreadable deny rule: Frobnicate(x) (workspace {SOURCE})"
    )
    assert decide("default", "agent", read_only=False, ruled=ruled, grants=Grants()) == Ask(
        ruled.by or ""
    )
    assert judge_command("ls", book, always).effect == "ask"
    assert path_rule_matches(stand_in, "/anywhere", PLACE)


def test_a_broken_deny_naming_a_tool_asks_for_that_family_only() -> None:
    book, _ = loaded({"deny": ["Read(./.env", "Agent(Explore", "mcp__github(x)"]})
    assert [(r.tool, r.effect) for r in book.rules] == [
        ("Read", "ask"), ("Agent", "ask"), ("mcp__github", "ask"),
    ]  # fmt: skip
    assert book.for_call("grep", {"path": "src"}, PLACE) is not None
    assert book.for_call("task", {"subagent_type": "general-purpose"}, PLACE) is not None
    assert book.for_call("mcp__github__list", {}, PLACE) is not None
    assert book.for_call("write_file", {"path": ".env"}, PLACE) is None
    assert judge_command("ls", book, always).effect is None


def test_an_mcp_ask_rule_asks_even_for_a_tool_allowed_as_read_only() -> None:
    name = "mcp__time__now"
    asked = Ruled("ask", "unreadable deny rule: X( (workspace x)")
    read_only = McpRules(read_only=(name,))
    assert judge_mcp(name, "default", Grants(), read_only, asked) == Ask(str(asked.by))
    assert judge_mcp(name, "plan", Grants(), read_only, asked) == Ask(str(asked.by))
    assert isinstance(judge_mcp(name, "plan", Grants(), McpRules(), asked), Deny)
    assert judge_mcp(name, "plan", Grants(), read_only) == Allow("mcpReadOnly")


def test_a_non_string_entry_never_drops_the_rest_of_its_list() -> None:
    book, problems = loaded(
        {
            "allow": [3, "Bash(ls:*)", "Bash(cat:*)"],
            "ask": [None, "Bash(git push:*)"],
            "deny": [{}, "Read(x)", "Bash(rm:*", "Edit(y)"],
        }
    )
    written = [(r.effect, r.text) for r in book.rules if not r.unreadable]
    assert written == [
        ("deny", "Read(x)"), ("deny", "Edit(y)"), ("ask", "Bash(git push:*)"),
        ("allow", "Bash(ls:*)"), ("allow", "Bash(cat:*)"),
    ]  # fmt: skip
    stand_ins = [(r.text, r.tool) for r in book.rules if r.unreadable]
    assert stand_ins == [("{}", EVERY_TOOL), ("Bash(rm:*", "Bash")]
    assert problems == [
        f"{SOURCE}: permissions.deny[0] is not a string; until it is fixed, every tool call "
        "is asked",
        f"{SOURCE}: permissions.deny[2]: 'Bash(rm:*': no closing parenthesis; until it is "
        "fixed, every Bash call is asked",
        f"{SOURCE}: permissions.ask[0] is not a string",
        f"{SOURCE}: permissions.allow[0] is not a string",
    ]


def test_an_unreadable_ask_or_allow_rule_is_only_a_notice() -> None:
    book, problems = loaded({"allow": ["Bash(ls"], "ask": ["Frobnicate"]})
    assert book.rules == () and len(problems) == 2


def test_a_deny_list_that_is_not_a_list_fails_closed_and_an_empty_entry_denies_nothing() -> None:
    book, problems = loaded({"deny": "Bash(rm:*)"})
    assert [(r.tool, r.effect) for r in book.rules] == [(EVERY_TOOL, "ask")]
    assert problems == [
        f"{SOURCE}: permissions.deny is not a list; until it is fixed, every tool call is asked"
    ]
    empty, said = loaded({"deny": ["  ", "Bash(rm:*)"]})
    assert [r.text for r in empty.rules] == ["Bash(rm:*)"]
    assert said == [f"{SOURCE}: permissions.deny[0]: an empty rule"]


def test_a_list_that_is_not_a_list_never_drops_the_lists_after_it() -> None:
    book, problems = loaded({"deny": "Bash(rm:*)", "ask": 3, "allow": ["Bash(ls)"]})
    assert [(r.effect, r.text) for r in book.rules] == [
        ("ask", 'permissions.deny: "Bash(rm:*)"'),
        ("allow", "Bash(ls)"),
    ]
    assert problems == [
        f"{SOURCE}: permissions.deny is not a list; until it is fixed, every tool call is asked",
        f"{SOURCE}: permissions.ask is not a list",
    ]


def test_a_deny_entry_that_is_not_a_string_is_shown_as_written_in_60_characters_at_most() -> None:
    def shown(entry: object) -> str:
        book, _ = loaded({"deny": [entry]})
        return book.rules[0].describe()

    def described(text: str) -> str:
        return f"unreadable deny rule: {text} (workspace {SOURCE})"

    assert shown({"path": "café"}) == described('{"path": "café"}')
    fits = ["x" * 56]  # 60 characters of JSON
    assert shown(fits) == described(json.dumps(fits))
    longer = ["x" * 57]  # 61: cut to 59 and an ellipsis
    assert shown(longer) == described(json.dumps(longer)[:59] + "…")


# --- path rules, to the letter ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("pattern", "path", "expected"),
    [
        ("/a?c", "abc", True),
        ("/a?c", "ac", False),
        ("/a?c", "a/c", False),  # ? never matches a slash
        ("/a?c", "abbc", False),
        ("./x", "x", True),
        ("./x", "d/x", False),  # ./ anchors at the workspace
        ("/x", "x", True),
        ("/x", "d/x", False),  # / anchors at the workspace
        ("x/y", "x/y", True),
        ("x/y", "a/x/y", False),  # an inner / anchors too
        ("x", "a/b/x", True),  # no / at all: a name at any depth
        ("x", "a/x/b", True),  # ... a folder of that name covers what is in it
        ("x", "a/xx", False),
        ("x/", "a/x/b", True),  # a trailing / only: still a name at any depth
        ("build/**", "build", True),  # a trailing /** covers the folder itself
        ("build/**", "build/a/b.o", True),  # ... and everything under it
        ("build/**", "buildx/a", False),
        ("build/**", "src/build/a", False),
        ("a/**/b", "a/b", True),
        ("a/**/b", "a/x/y/b", True),
        ("a/**/b", "a/xb", False),
        ("//etc/**", "/etc/passwd", True),
        ("//etc/**", "etc/passwd", False),  # // is the filesystem root, not the workspace
        ("~/notes/**", "/home/u/notes/a", True),
        ("~/notes/**", "~/notes/a", True),  # the path's ~ is the same home
        ("~/notes/**", "notes/a", False),
    ],
)
def test_path_patterns_follow_gitignore_from_the_workspace(
    pattern: str, path: str, expected: bool
) -> None:
    for effect in EFFECTS:
        found = path_rule_matches(rule(f"Read({pattern})", effect), path, PLACE)
        assert found is expected, (pattern, path, effect)


def test_double_star_inside_a_name_never_allows_more_than_gitignore_nor_denies_less() -> None:
    allow, deny = rule("Edit(src/**.py)", "allow"), rule("Edit(src/**.py)", "deny")
    assert path_rule_matches(allow, "src/a.py", PLACE)
    assert not path_rule_matches(allow, "src/a/b.py", PLACE)  # gitignore: ** inside a name is *
    assert path_rule_matches(deny, "src/a.py", PLACE)
    assert path_rule_matches(deny, "src/a/b.py", PLACE)  # a deny reads it across folders
    assert not path_rule_matches(deny, "lib/a.py", PLACE)
    named = rule("Read(**secret*)", "deny")
    assert path_rule_matches(named, "a/b/top-secret.txt", PLACE)
    assert not path_rule_matches(named, "a/b/public.txt", PLACE)


def test_a_name_pattern_never_matches_the_workspaces_own_folders() -> None:
    inside = Place(Path("/home/u/secret-project"), "/home/u")
    assert not path_rule_matches(rule("Read(secret*)"), "a.txt", inside)
    assert path_rule_matches(rule("Read(secret*)"), "secret.txt", inside)
    src = Place(Path("/x/src/proj"), "/home/u")
    assert not path_rule_matches(rule("Edit(src)", "allow"), "a.txt", src)


def test_a_name_pattern_outside_the_workspace_denies_but_never_allows() -> None:
    assert path_rule_matches(rule("Read(*.env)"), "/etc/app/.prod.env", PLACE)
    assert not path_rule_matches(rule("Read(*.env)", "allow"), "/etc/app/.prod.env", PLACE)


def test_a_symlink_into_a_denied_folder_is_denied_by_either_spelling(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    (ws / "secret").mkdir(parents=True)
    (ws / "secret" / "key").write_text("k")
    (ws / "pub").symlink_to(ws / "secret")
    place = Place(ws, str(tmp_path / "home"))
    denied = rule("Read(./secret/**)")
    assert path_rule_matches(denied, "pub/key", place)  # reached through the link
    assert path_rule_matches(denied, "secret/key", place)
    link_named = rule("Read(./pub/**)")  # the rule names the link: the folder is covered too
    assert path_rule_matches(link_named, "secret/key", place)
    assert path_rule_matches(link_named, f"{ws}/secret/key", place)
    assert not path_rule_matches(rule("Read(./other/**)"), "pub/key", place)


def test_a_symlink_is_never_allowed_by_the_name_it_was_reached_through_alone(
    tmp_path: Path,
) -> None:
    ws = tmp_path / "ws"
    (ws / "secret").mkdir(parents=True)
    (ws / "pub").symlink_to(ws / "secret")
    place = Place(ws, str(tmp_path / "home"))
    assert not path_rule_matches(rule("Read(./pub/**)", "allow"), "pub/key", place)
    assert not path_rule_matches(rule("Read(./secret/**)", "allow"), "pub/key", place)
    assert path_rule_matches(rule("Read(./secret/**)", "allow"), "secret/key", place)


def test_a_path_that_cannot_be_resolved_matches_a_deny_and_never_an_allow() -> None:
    assert path_rule_matches(rule("Read(./other)"), "a\0b", PLACE)
    assert not path_rule_matches(rule("Read(**)", "allow"), "a\0b", PLACE)
    assert path_rule_matches(rule("Read", "allow"), "a\0b", PLACE)  # a bare rule: every path


def test_path_rule_matches_answers_for_path_rules_only() -> None:
    assert path_rule_matches(rule("Read"), "anything/at/all", PLACE)
    assert not path_rule_matches(rule("Bash(cat:*)"), "a", PLACE)
    assert not path_rule_matches(rule("WebFetch(domain:a.com)"), "a.com", PLACE)
    assert path_rule_matches(rule("NotebookEdit"), "a.ipynb", PLACE)
    assert not path_rule_matches(rule("NotebookEdit"), "a.py", PLACE)


def test_a_call_without_a_path_is_the_whole_workspace() -> None:
    assert matches("Read(./.env)", "grep") is False
    assert matches("Read(/)", "grep") is True


def test_matching_follows_links_relative_to_the_workspace(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    os.symlink("/etc", ws / "etc-link")
    place = Place(ws, str(tmp_path))
    assert matches("Read(//etc/**)", "read_file", place=place, path="etc-link/passwd")


def test_a_call_whose_path_is_not_a_string_is_the_whole_workspace() -> None:
    for raw in (7, ["secret"], None, ""):
        assert matches("Read(/)", "read_file", path=raw), raw
        assert not matches("Read(./.env)", "read_file", path=raw), raw


def test_a_bare_rule_of_another_tool_or_an_mcp_rule_matches_no_path() -> None:
    for text in ("Bash", "WebFetch", "mcp__files", "mcp__files__read"):
        assert not path_rule_matches(rule(text), "a.txt", PLACE), text


def test_a_name_pattern_never_matches_the_workspace_itself_nor_the_root() -> None:
    for path in (".", "/ws", "/"):
        assert not path_rule_matches(rule("Read(ws)"), path, PLACE), path
    assert path_rule_matches(rule("Read(ws)"), "/elsewhere/ws", PLACE)


def test_a_path_whose_links_cannot_be_resolved_is_denied_and_never_allowed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def racing(path: str) -> str:  # a folder swapped for a link while it is resolved
        raise FileNotFoundError(2, "No such file or directory", path)

    monkeypatch.setattr(os.path, "realpath", racing)
    assert path_rule_matches(rule("Read(./other)"), "a", PLACE)
    assert not path_rule_matches(rule("Read(**)", "allow"), "a", PLACE)


def test_a_rule_whose_folder_cannot_be_resolved_still_matches_by_the_name_it_writes(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    real = os.path.realpath

    def looping_in_the_rules_folder(path: str) -> str:
        if path == "/ws/secret":
            raise OSError(40, "Too many levels of symbolic links", path)
        return real(path)

    monkeypatch.setattr(os.path, "realpath", looping_in_the_rules_folder)
    assert not path_rule_matches(rule("Read(/secret/**)"), "other/a", PLACE)
    assert path_rule_matches(rule("Read(/secret/**)"), "/ws/secret/a", PLACE)


def test_a_rule_naming_a_nul_byte_never_breaks_matching() -> None:
    denied = rule("Read(/a\0b/**)")  # "\u0000" in a settings file
    assert not path_rule_matches(denied, "other/a", PLACE)
    assert path_rule_matches(denied, "a\0b/c", PLACE)  # that path cannot be resolved: denied


def test_without_home_in_the_environment_paths_resolve_from_the_users_own_home(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("HOME", raising=False)
    assert Place.of(Path("/ws")).home == pwd.getpwuid(os.getuid()).pw_dir
    monkeypatch.setenv("HOME", "/home/someone")
    assert Place.of(Path("/ws")).home == "/home/someone"


# --- WebFetch domains ----------------------------------------------------------------------------


def test_a_subdomain_wildcard_matches_subdomains_of_a_call_but_not_the_apex() -> None:
    star = "WebFetch(domain:*.example.com)"
    assert matches(star, "web_fetch", url="https://docs.example.com/a")
    assert matches(star, "web_fetch", url="https://a.b.example.com/")
    assert not matches(star, "web_fetch", url="https://example.com/")
    assert not matches(star, "web_fetch", url="https://badexample.com/")
    exact = "WebFetch(domain:example.com)"
    assert matches(exact, "web_fetch", url="https://example.com/")
    assert not matches(exact, "web_fetch", url="https://docs.example.com/")


@pytest.mark.parametrize(
    ("written", "specifier"),
    [
        ("bücher.example", "domain:xn--bcher-kva.example"),
        ("BÜCHER.Example.", "domain:xn--bcher-kva.example"),
        ("evil.example:443", "domain:evil.example"),
        ("https://evil.example/path", "domain:evil.example"),
        ("*.Bücher.example", "domain:*.xn--bcher-kva.example"),
        ("*", None),
    ],
)
def test_webfetch_rule_domains_are_read_in_one_spelling(written: str, specifier: str) -> None:
    assert rule(f"WebFetch(domain:{written})").specifier == specifier


def test_a_webfetch_rule_matches_a_call_in_any_spelling_of_its_host() -> None:
    text = "WebFetch(domain:bücher.example)"
    for url in (
        "https://xn--bcher-kva.example/",
        "https://BÜCHER.example:8443/x",
        "bücher.example",
    ):
        assert matches(text, "web_fetch", url=url), url
    punycode = "WebFetch(domain:xn--bcher-kva.example)"
    assert matches(punycode, "web_fetch", url="https://bücher.example")
    assert matches("WebFetch(domain:x.example)", "web_fetch", url="::not a url::")
    assert not matches("WebFetch(domain:x.example)", "web_fetch", "allow", url="::not a url::")


@pytest.mark.parametrize("written", ["a b.example", "evil.example:x", "", "*.", "-x.example"])
def test_a_webfetch_rule_that_names_no_host_is_an_error(written: str) -> None:
    with pytest.raises(RuleError):
        rule(f"WebFetch(domain:{written})")


# --- deny rules against words decided at run time ----------------------------------------------


@pytest.mark.parametrize(
    ("text", "line", "denied"),
    [
        ("Bash(rm:*)", "rm $x", True),
        ("Bash(rm:*)", "ls $x", False),
        ("Bash(rm -rf:*)", "$x -rf /", True),  # $x may be rm
        ("Bash(rm -rf /)", "$x -rf /", True),
        ("Bash(git push:*)", "git $x", True),  # $x may be push
        ("Bash(git push:*)", "git status $x", False),
        ("Bash(git push:*)", "rm $x", False),
        ("Bash(git push --force)", "git $x", True),  # ... or "push --force"
        ("Bash(git push)", "git $x --force", False),
        ('Bash(echo "a b":*)', 'echo "a b" $x', True),  # the rule's words, quotes read
        ("Bash(git * main)", "git $x main", True),
        ("Bash(git * main)", "git $x main --force", False),
        ("Bash(rm -rf *)", "rm $x", True),
        ("Bash(rm -rf *)", "$x -rf", True),
        ("Bash(rm -rf *)", "$x -rf /", True),
        ("Bash(rm -rf *)", "rm -rf / $x", True),
        ("Bash(rm -rf *)", "rm -r $x", False),
        ("Bash(rm -rf *)", "rm -v $x", False),
        ("Bash(chmod *77)", "chmod -R $x 0777", True),  # a * may end in what follows it
        ("Bash(git push **)", "git push $x main", True),  # ** is two wildcards, one run
    ],
)
def test_a_deny_rule_matches_a_word_decided_at_run_time_as_any_words_it_may_be(
    text: str, line: str, denied: bool
) -> None:
    effect = judge_command(line, RuleBook((rule(text),)), lambda _: False).effect
    assert effect == ("deny" if denied else None)


def test_an_unreadable_line_is_denied_by_a_rule_whose_program_it_names_however_written() -> None:
    line = 'echo "${x:-`rm -r t`}"'  # the parser cannot read it: its words, roughly

    def effect(text: str) -> str | None:
        return judge_command(line, RuleBook((rule(text),)), always).effect

    assert effect("Bash(rm -rf:*)") == "deny"  # the program named, whatever its arguments
    assert effect('Bash("/opt/my tools/rm":*)') == "deny"
    assert effect("Bash(r*:*)") == "deny"
    assert effect("Bash(* -rf:*)") == "deny"
    assert effect("Bash(cu*:*)") is None
