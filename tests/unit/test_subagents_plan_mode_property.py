"""Property: in plan mode, no child ever writes, whatever it calls and whoever approves.

A real parent ``Session`` (built by ``Sessions``) in plan mode delegates to a child of any
kind; the child answers with generated tool calls (writes, edits, writing commands, reads,
read-only commands) and the user would allow anything asked. The workspace must be unchanged,
every tool_use answered, and no question asked on the child's behalf (plan mode denies before
asking).
"""

from __future__ import annotations

import asyncio
import hashlib
import itertools
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tiller.core.config import Config
from tiller.core.session import turns
from tiller.core.session.sessions import Seat, Sessions, Shape
from tiller.core.turn.approvals import AgentRef, PlanAnswer, ToolAnswer
from tiller.core.turn.events import Posted
from tiller.core.turn.scheduler import ToolCall
from tiller.jsontypes import JSON
from tiller.model import history, models
from tiller.model.history import text_block
from tiller.model.provider import CountUnsupported, ModelRequest, ModelResponse, StreamListener
from tiller.model.usage import Usage
from tiller.protocol import State, Thinking, Todo, TrailItem
from tiller.runtime import Runtime
from tiller.tools.base import Preview
from tiller.workspace.roots import WorkspaceRoots

MODEL = "claude-sonnet-4-5"
CHILD = "[child]"
IDS = itertools.count()

WRITES: list[JSON] = [
    {"name": "write_file", "input": {"path": "new.txt", "content": "x"}},
    {"name": "write_file", "input": {"path": "seed.txt", "content": "changed"}},
    {"name": "edit_file", "input": {"path": "seed.txt", "old_string": "seed", "new_string": "S"}},
    {"name": "bash", "input": {"command": "touch made"}},
    {"name": "bash", "input": {"command": "echo x > seed.txt"}},
    {"name": "bash", "input": {"command": "rm -f seed.txt"}},
    {"name": "bash", "input": {"command": "mkdir d && cp seed.txt d/"}},
    {"name": "bash", "input": {"command": "sed -i s/seed/x/ seed.txt"}},
    {"name": "todo_write", "input": {"todos": []}},
    {"name": "exit_plan_mode", "input": {"plan": "write everything"}},
    {"name": "task", "input": {"description": "nested", "prompt": "write"}},
]
READS: list[JSON] = [
    {"name": "read_file", "input": {"path": "seed.txt"}},
    {"name": "list_files", "input": {"path": "."}},
    {"name": "bash", "input": {"command": "cat seed.txt"}},
    {"name": "grep", "input": {"pattern": "seed"}},
]


def use(call: JSON) -> JSON:
    return {"type": "tool_use", "id": f"toolu_{next(IDS)}", **call}


def first_text(request: ModelRequest) -> str:
    return "".join(b.get("text", "") for b in request.messages[0].content)


@dataclass
class Routed:
    """A provider that plays one script to the parent and one to the child."""

    parent: list[list[JSON]]
    child: list[list[JSON]]
    requests: list[ModelRequest] = field(default_factory=list)

    async def stream(self, request: ModelRequest, listener: StreamListener) -> ModelResponse:
        assert history.problems(request.messages) == []
        self.requests.append(request)
        queue = self.child if CHILD in first_text(request) else self.parent
        content = queue.pop(0) if queue else [text_block("done")]
        for block in content:
            listener.block(block)
        stop = "tool_use" if any(b["type"] == "tool_use" for b in content) else "end_turn"
        return ModelResponse(tuple(content), stop, Usage(10, 5))

    async def count_tokens(self, request: ModelRequest) -> int:
        raise CountUnsupported("not counted here")

    async def list_models(self, refresh: bool = False) -> list[Any]:
        return []

    def spec(self, model_id: str) -> models.ModelSpec:
        return models.resolve(model_id)


@dataclass
class Face:
    """A sink and an approver that would allow anything (and remembers what was asked)."""

    asked: list[AgentRef | None] = field(default_factory=list)
    events: list[Posted] = field(default_factory=list)

    def event(self, posted: Posted) -> None:
        self.events.append(posted)

    def state(self, state: State) -> None:
        return None

    def todos(self, todos: tuple[Todo, ...]) -> None:
        return None

    async def confirm_tool(
        self, turn_id: str, call: ToolCall, preview: Preview, agent: AgentRef | None = None
    ) -> ToolAnswer:
        self.asked.append(agent)
        return ToolAnswer("allow")

    async def approve_plan(self, turn_id: str, plan: str) -> PlanAnswer:
        return PlanAnswer(False)  # the parent's own plan: not approved, the turn ends

    async def checkpoint(self, turn_id: str, tools_used: int, trail: Sequence[TrailItem]) -> bool:
        return True


def digest(root: Path) -> str:
    h = hashlib.sha256()
    for path in sorted(root.rglob("*")):
        h.update(str(path.relative_to(root)).encode())
        if path.is_file():
            h.update(path.read_bytes())
    return h.hexdigest()


async def run_parent(workspace: Path, data: Path, kind: str, calls: list[list[JSON]]) -> Face:
    face = Face()
    runtime = Runtime(Config(model=MODEL, data_dir=data, tool_budget=0, sandbox="off"))
    task = {"description": "job", "prompt": f"{CHILD} do it", "subagent_type": kind}
    provider = Routed([[use({"name": "task", "input": task})]], [*calls, [text_block("ok")]])
    runtime.provider = provider
    sessions = Sessions(runtime)
    parent = sessions.create(
        WorkspaceRoots.of(workspace), Seat(face, face), Shape("plan", MODEL, Thinking())
    )
    await turns.prompt(parent, "plan it")
    await parent.wait_idle()
    for request in provider.requests:  # every tool_use answered, in every conversation
        assert history.problems(request.messages) == []
    children = runtime.store.children(parent.id)
    assert len(children) == 1
    loaded = runtime.store.load(children[0].id)
    assert loaded is not None and history.problems(loaded.messages) == []
    runtime.store.close()
    return face


CALL = st.sampled_from([*WRITES, *READS])


@settings(
    max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    kind=st.sampled_from(["explore", "general-purpose"]),
    steps=st.lists(st.lists(CALL, min_size=1, max_size=4), min_size=1, max_size=3),
)
def test_no_child_ever_writes_in_plan_mode(
    tmp_path: Path, kind: str, steps: list[list[JSON]]
) -> None:
    workspace = tmp_path / f"ws{next(IDS)}"
    workspace.mkdir()
    (workspace / "seed.txt").write_text("seed\n")
    before = digest(workspace)
    calls = [[use(call) for call in step] for step in steps]
    face = asyncio.run(run_parent(workspace, tmp_path / f"data{next(IDS)}", kind, calls))
    assert digest(workspace) == before
    assert face.asked == []  # denied before anyone is asked


def test_a_child_gets_the_workspace_instructions_in_its_prompt_and_no_update_message(
    tmp_path: Path,
) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "AGENTS.md").write_text("Use tabs.\n")
    runtime = Runtime(Config(model=MODEL, data_dir=tmp_path / "data", tool_budget=0))
    task = {"description": "job", "prompt": f"{CHILD} look", "subagent_type": "explore"}
    provider = Routed([[use({"name": "task", "input": task})]], [[text_block("found")]])
    runtime.provider = provider
    face = Face()

    async def run() -> None:
        parent = Sessions(runtime).create(WorkspaceRoots.of(workspace), Seat(face, face))
        await turns.prompt(parent, "delegate")
        await parent.wait_idle()

    asyncio.run(run())
    [child] = [r for r in provider.requests if CHILD in first_text(r)]
    assert "Use tabs." in child.system and "explorer agent" in child.system
    assert [b["text"] for b in child.messages[0].content] == [f"{CHILD} look"]
    runtime.store.close()
