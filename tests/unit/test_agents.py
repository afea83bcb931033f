"""Agent kinds: custom agent files (Claude Code's frontmatter), where they are found, the rights
a child gets (never more than its parent), how task calls are scheduled, the report's cap."""

from __future__ import annotations

from pathlib import Path

import pytest

from tiller.core.config import Config
from tiller.core.session.session import Session
from tiller.core.session.subagents import (
    REPORT_CAP,
    Subagents,
    cap_report,
    child_mode,
    child_tools,
    report,
)
from tiller.core.turn.events import TurnEnded
from tiller.core.turn.outcomes import Completed, Failed, Interrupted
from tiller.core.turn.scheduler import ToolCall, partition
from tiller.extend.agents import (
    EXPLORE,
    GENERAL,
    AgentKind,
    AgentProblem,
    Agents,
    load_agents,
    parse_agent,
)
from tiller.model.usage import Usage
from tiller.tools.registry import default_tools
from tiller.tools.task import TaskTool
from tiller.workspace.store import SessionStore

REVIEWER = """---
name: reviewer
description: Reviews code.
  Use after changes.
tools: Read, Grep, Glob, Bash
model: haiku
---
You are a senior reviewer.
"""


def kind_of(text: str) -> AgentKind:
    found = parse_agent(text, "test.md")
    assert isinstance(found, AgentKind), found
    return found


def test_claude_code_frontmatter_maps_tool_names_and_model_aliases() -> None:
    kind = kind_of(REVIEWER)
    assert kind.name == "reviewer" and kind.description == "Reviews code. Use after changes."
    assert kind.tools == ("read_file", "grep", "list_files", "bash")
    assert kind.model == "claude-haiku-5-5"
    assert kind.prompt == "You are a senior reviewer."
    assert kind.read_only  # only reading tools: its task calls run concurrently


def test_omitted_tools_and_inherit_model_mean_the_parents() -> None:
    kind = kind_of("---\nname: helper\ndescription: Helps.\nmodel: inherit\n---\nBody")
    assert kind.tools is None and kind.model is None and not kind.read_only


def test_tools_as_a_yaml_list_and_tiller_names() -> None:
    kind = kind_of("---\nname: w\ndescription: d\ntools: [read_file, Write]\n---\n")
    assert kind.tools == ("read_file", "write_file") and not kind.read_only


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("no frontmatter", "no YAML frontmatter"),
        ("---\nname: [unclosed\n---\n", "not YAML"),
        ("---\n- a list\n---\n", "not a mapping"),
        ("---\nname: has space\ndescription: d\n---\n", "'name'"),
        ("---\nname: ok\n---\n", "'description'"),
        ("---\nname: ok\ndescription: d\ntools: 3\n---\n", "'tools'"),
        ("---\nname: ok\ndescription: d\nmodel: 4\n---\n", "'model'"),
    ],
)
def test_a_broken_agent_file_says_what_is_wrong(text: str, says: str) -> None:
    found = parse_agent(text, "bad.md")
    assert isinstance(found, AgentProblem) and says in found.message


def test_user_agents_come_before_workspace_agents_and_a_broken_file_hides_no_other(
    tmp_path: Path,
) -> None:
    ws, home = tmp_path / "ws", tmp_path / "home"
    (ws / ".tiller" / "agents").mkdir(parents=True)
    (ws / ".claude" / "agents").mkdir(parents=True)
    (home / ".claude" / "agents").mkdir(parents=True)
    (ws / ".tiller" / "agents" / "a.md").write_text("---\nname: a\ndescription: tiller's\n---\n")
    (ws / ".claude" / "agents" / "a.md").write_text("---\nname: a\ndescription: claude's\n---\n")
    (ws / ".claude" / "agents" / "broken.md").write_text("nothing")
    (ws / ".claude" / "agents" / "explore.md").write_text(
        "---\nname: explore\ndescription: not the built-in\n---\n"
    )
    (home / ".claude" / "agents" / "b.md").write_text("---\nname: b\ndescription: user's\n---\n")
    agents = load_agents(ws, {"HOME": str(home)})
    assert [k.name for k in agents.kinds] == ["explore", "general-purpose", "b", "a"]
    assert agents.get("a") is not None and agents.get("a").description == "tiller's"  # type: ignore[union-attr]
    assert [k.scope for k in agents.kinds] == ["built-in", "built-in", "user", "project"]
    assert agents.get("explore") == EXPLORE  # a built-in kind is never replaced
    assert [p.path.name for p in agents.problems] == ["broken.md"]
    assert Agents.from_json(agents.to_json()).kinds == agents.kinds


def test_a_child_has_only_its_kinds_tools_that_the_parent_has_and_never_the_parents_own() -> None:
    parent = default_tools()
    names = [t.name for t in child_tools(parent, EXPLORE)]
    assert names == ["read_file", "list_files", "grep", "bash"]
    general = [t.name for t in child_tools(parent, GENERAL)]
    assert set(general) == {"read_file", "list_files", "grep", "write_file", "edit_file", "bash"}
    custom = AgentKind("c", "d", ("read_file", "mcp__x__y", "exit_plan_mode"), None, "")
    assert [t.name for t in child_tools(parent[:1], custom)] == ["read_file"]


def test_an_explorer_runs_in_plan_mode_and_a_general_agent_in_its_parents_mode() -> None:
    assert child_mode("acceptEdits", EXPLORE) == "plan"
    assert child_mode("acceptEdits", GENERAL) == "acceptEdits"
    assert child_mode("plan", GENERAL) == "plan"


def test_explorer_task_calls_make_one_concurrent_batch_and_a_general_one_runs_alone(
    tmp_path: Path,
) -> None:
    store = SessionStore(tmp_path / "s.db")
    session = Session(Config(model="claude-sonnet-4-5"), tmp_path, None, None, None, [], store)  # type: ignore[arg-type]
    tool = TaskTool(Subagents(session), 3)

    def call(i: int, kind: str) -> ToolCall:
        return ToolCall(f"t{i}", "task", {"description": "d", "prompt": "p", "subagent_type": kind})

    calls = [call(1, "explore"), call(2, "explore"), call(3, "general-purpose"), call(4, "explore")]
    batches = partition(calls, lambda c: tool.is_read_only(c.input))
    assert [(len(b.calls), b.concurrent) for b in batches] == [(2, True), (1, False), (1, False)]
    assert not tool.is_read_only({"subagent_type": "no-such-kind"})
    kinds = tool.spec()["input_schema"]["properties"]["subagent_type"]["enum"]
    assert kinds == ["explore", "general-purpose"]
    store.close()


def test_the_report_is_the_childs_final_text_capped_or_an_error_that_says_why() -> None:
    usage = Usage(1, 2)
    done = report(EXPLORE, TurnEnded(Completed("found it"), (), usage))
    assert (done.output, done.is_error, done.usage) == ("found it", False, usage)
    cut = cap_report("x" * (REPORT_CAP * 2))
    assert len(cut.encode()) <= REPORT_CAP and "report cut" in cut
    stopped = report(EXPLORE, TurnEnded(Interrupted(), (), usage))
    assert stopped.is_error and stopped.output.startswith("Interrupted by user")
    failed = report(GENERAL, TurnEnded(Failed("overloaded", "busy", True), ()))
    assert failed.is_error and "overloaded" in failed.output
