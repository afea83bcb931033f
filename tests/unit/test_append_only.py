"""Append-only: what was sent once is sent again byte for byte (issue 18, item 1).

Current models bind each thinking block to its prefix (system, tools, every earlier message)
and refuse a request whose prefix changed (400 "bound to a different conversation"). These
tests drive real ``Session``s through ``Sessions`` (in-memory store) against a provider that
signs thinking blocks and checks every request exactly as the fake Messages API does
(``fakeapi.bind_thinking`` / ``check_thinking_binding``): turns, mode and model changes,
AGENTS.md edits, compaction, slices, forks, rewinds and resumes must never draw that 400.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import sqlite3
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fakeapi import (
    bind_thinking,
    check_thinking_binding,
    checks_prefix,
    validate_messages_request,
)
from loop_harness import AllowAll
from tiller.core.config import Config
from tiller.core.session import rewind as rewinding
from tiller.core.session import turns
from tiller.core.session.compact import compact
from tiller.core.session.session import Session, Started
from tiller.core.session.sessions import Seat, Sessions
from tiller.core.turn import compaction
from tiller.core.turn.events import Notice, Posted, TurnEnded
from tiller.core.turn.outcomes import Failed
from tiller.core.turn.system_prompt import instructions_in, system_prompt
from tiller.extend.settings_layer import Settings
from tiller.extend.trust import Trust
from tiller.jsontypes import JSON
from tiller.model import history, models
from tiller.model.history import Message, text_block
from tiller.model.provider import (
    CountUnsupported,
    ModelRequest,
    ModelResponse,
    ProviderError,
    StreamListener,
    api_params,
)
from tiller.model.usage import Usage
from tiller.protocol import State, Thinking, Todo
from tiller.workspace.roots import WorkspaceRoots
from tiller.workspace.sandbox import ShellPolicy
from tiller.workspace.store import SessionStore

MODELS = ("claude-sonnet-5-5", "claude-opus-5-5", "claude-haiku-5-5")
TOOL_IDS = itertools.count()


# --- the kit: a signing, checking provider and a runtime in memory ----------------------------


@dataclass
class SigningProvider:
    """Answers like the API: thinking blocks signed to their prefix (the fake's binding),
    every request checked as the fake checks it; a refusal is recorded and raised as the
    SDK would raise the 400. ``script`` picks each step's answer (default: text)."""

    script: list[str] = field(default_factory=list)
    bodies: list[JSON] = field(default_factory=list)
    refused: list[str] = field(default_factory=list)
    window: int | None = None  # a smaller context window, to make compaction happen

    def spec(self, model_id: str) -> models.ModelSpec:
        spec = models.resolve(model_id)
        if self.window is not None:
            return replace(spec, context_window=self.window)
        return spec

    async def list_models(self, refresh: bool = False) -> list[Any]:
        return []

    async def count_tokens(self, request: ModelRequest) -> int:
        raise CountUnsupported("not counted here")

    async def stream(self, request: ModelRequest, listener: StreamListener) -> ModelResponse:
        body = json.loads(json.dumps(api_params(request, models.resolve(request.model))))
        problem = validate_messages_request(
            body,
            reject_text_after_tool_result=True,
            text_after_results_led_by=history.UNANSWERED_RESULTS,
        )
        if problem is not None:
            self.refused.append(problem)
            raise ProviderError("invalid_request", f"{problem} (HTTP 400)", retryable=False)
        self.bodies.append(body)
        small = Usage(100, 10, 50, 5)
        if request.system == compaction.SUMMARY_SYSTEM:
            listener.text("the summary")
            return ModelResponse((text_block("the summary"),), "end_turn", small)
        kind = self.script.pop(0) if self.script else "text"
        thought: JSON = {"type": "thinking", "thinking": f"thinking ({kind})", "signature": "s"}
        if kind == "redacted":
            thought = {"type": "redacted_thinking", "data": "opaque"}
        match kind:
            case "tools" | "big":
                call = {"type": "tool_use", "id": f"toolu_{next(TOOL_IDS)}", "name": "read_file",
                        "input": {"path": "notes.txt"}}  # fmt: skip
                content, stop = [thought, text_block("let me look"), call], "tool_use"
            case _:
                content, stop = [thought, text_block("answer")], "end_turn"
        blocks = bind_thinking(body, content)
        for block in blocks:
            if block["type"] == "text":
                listener.text(str(block["text"]))
            listener.block(block)
        window = self.spec(request.model).context_window
        usage = Usage(10, 10, int(window * 0.9), 0) if kind == "big" else small
        return ModelResponse(tuple(blocks), stop, usage)


class Quiet:
    def __init__(self) -> None:
        self.events: list[Posted] = []

    def event(self, posted: Posted) -> None:
        self.events.append(posted)

    def state(self, state: State) -> None:
        return None

    def todos(self, todos: tuple[Todo, ...]) -> None:
        return None


@dataclass
class MemoryRuntime:
    """What ``Sessions`` needs of a Runtime, in memory, without checkpoints."""

    config: Config
    provider: SigningProvider
    store: SessionStore
    shell: ShellPolicy = field(default_factory=ShellPolicy)

    def checkpoints(self, roots: WorkspaceRoots) -> None:
        return None

    def trust(self, workspace: Path) -> Trust:
        return Trust(True, "the test")

    def settings(self, workspace: Path) -> Settings:
        return Settings(workspace, self.trust(workspace))  # no settings files

    async def set_trust(self, workspace: Path, trust: Trust) -> None:
        return None

    def mcp(self, workspace: Path) -> None:  # no MCP servers
        return None

    def language_servers(self, workspace: Path) -> None:  # no language servers
        return None

    def notices(self, roots: WorkspaceRoots) -> tuple[str, ...]:
        return ()


def runtime(provider: SigningProvider, store: SessionStore | None = None) -> MemoryRuntime:
    config = Config(
        model=MODELS[0], thinking=Thinking(True), tool_budget=0, sandbox="off",
        step_retry_delays=(0.0, 0.0),
    )  # fmt: skip
    return MemoryRuntime(config, provider, store or SessionStore(Path(":memory:")))


def populate(root: Path) -> Path:
    """A workspace with a file and project instructions, in ``root``."""
    (root / "notes.txt").write_text("notes\n")
    (root / "AGENTS.md").write_text("Use tabs.\n")
    return root


@pytest.fixture
def ws(ws: Path) -> Path:
    return populate(ws)


def open_session(rt: MemoryRuntime, ws: Path) -> tuple[Sessions[MemoryRuntime], Session, Quiet]:
    sessions = Sessions(rt)
    sink = Quiet()
    return sessions, sessions.create(WorkspaceRoots.of(ws), Seat(sink, AllowAll())), sink


async def run(session: Session, text: str) -> None:
    assert isinstance(await turns.prompt(session, text), Started)
    await session.wait_idle()


def failures(sink: Quiet) -> list[str]:
    return [
        p.event.outcome.message
        for p in sink.events
        if isinstance(p.event, TurnEnded) and isinstance(p.event.outcome, Failed)
    ]


def thinking_sent(bodies: Sequence[JSON]) -> int:
    """How many thinking blocks were sent back (the prefix check had something to check)."""
    return sum(
        1
        for body in bodies
        for message in body["messages"]
        for block in message["content"]
        if block["type"] in ("thinking", "redacted_thinking")
    )


# --- the system prompt is fixed; an edited AGENTS.md is a message -----------------------------


async def test_an_agents_md_edit_reaches_the_model_as_a_message_and_the_system_stays(
    ws: Path,
) -> None:
    provider = SigningProvider(["tools", "text", "text"])
    rt = runtime(provider)
    _, session, sink = open_session(rt, ws)
    await run(session, "first")
    (ws / "AGENTS.md").write_text("Use spaces.\n")
    await run(session, "second")
    await run(session, "third")
    assert provider.refused == [] and failures(sink) == []
    systems = {json.dumps(b["system"]) for b in provider.bodies}
    assert len(systems) == 1 and "Use tabs." in next(iter(systems))
    second = provider.bodies[2]["messages"][-1]["content"]
    assert second[0]["text"].startswith("AGENTS.md changed.") and "Use spaces." in second[0]["text"]
    assert second[-1]["text"] == "second"
    told = [p.event.text for p in sink.events if isinstance(p.event, Notice)]
    assert any(t.startswith("AGENTS.md changed") for t in told)
    third = provider.bodies[3]["messages"][-1]["content"]
    assert [b["text"] for b in third] == ["third"]  # told once, not at every turn
    assert thinking_sent(provider.bodies) > 0


async def test_a_removed_agents_md_is_said_once(ws: Path) -> None:
    provider = SigningProvider()
    _, session, _ = open_session(runtime(provider), ws)
    await run(session, "first")
    (ws / "AGENTS.md").unlink()
    await run(session, "second")
    await run(session, "third")
    texts = [b["text"] for b in provider.bodies[1]["messages"][-1]["content"]]
    assert texts == ["AGENTS.md was removed: its project instructions no longer apply.", "second"]
    assert [b["text"] for b in provider.bodies[2]["messages"][-1]["content"]] == ["third"]


async def test_the_system_prompt_is_kept_with_the_session_and_sent_again_after_a_restart(
    ws: Path,
) -> None:
    provider = SigningProvider(["tools"])
    rt = runtime(provider)
    _, session, _ = open_session(rt, ws)
    await run(session, "first")
    (ws / "AGENTS.md").write_text("Use spaces.\n")
    row = rt.store.row(session.id)
    assert row is not None and row.system == provider.bodies[0]["system"][0]["text"]
    restarted = Sessions(rt)
    resumed = restarted.resume(session.id, WorkspaceRoots.of(ws), Seat(Quiet(), AllowAll()))
    assert resumed.system == row.system
    await run(resumed, "second")
    assert provider.refused == []
    assert provider.bodies[-1]["system"] == provider.bodies[0]["system"]
    assert thinking_sent(provider.bodies[-1:]) > 0  # the old thinking is still valid


async def test_a_session_stored_before_has_its_prompt_fixed_at_first_load(
    ws: Path, tmp_path: Path
) -> None:
    path = tmp_path / "sessions.sqlite3"
    store = SessionStore(path)
    provider = SigningProvider(["tools"])
    rt = runtime(provider, store)
    _, session, _ = open_session(rt, ws)
    await run(session, "first")
    with sqlite3.connect(path) as db:  # as a store written before kept no system prompt
        db.execute("UPDATE sessions SET system = NULL")
    (ws / "AGENTS.md").write_text("Use spaces.\n")  # what the old turns saw is unknown now
    resumed = Sessions(rt).resume(session.id, WorkspaceRoots.of(ws), Seat(Quiet(), AllowAll()))
    instructions = instructions_in(resumed.system)
    assert instructions is not None and instructions.text == "Use spaces.\n"
    row = store.row(session.id)
    assert row is not None and row.system == resumed.system
    assert not any(
        b["type"] == "thinking" for m in resumed.messages for b in m.content
    )  # bound to requests that cannot be rebuilt: left out once
    await run(resumed, "second")
    assert provider.refused == []


async def test_a_session_stored_before_the_task_tool_drops_its_thinking_once_and_keeps_its_prompt(
    ws: Path,
    tmp_path: Path,
) -> None:
    path = tmp_path / "sessions.sqlite3"
    store = SessionStore(path)
    provider = SigningProvider(["tools"])
    rt = runtime(provider, store)
    _, session, _ = open_session(rt, ws)
    await run(session, "first")
    with sqlite3.connect(path) as db:  # as a store written before the task tool kept no kinds
        db.execute("UPDATE sessions SET agents = NULL")
    resumed = Sessions(rt).resume(session.id, WorkspaceRoots.of(ws), Seat(Quiet(), AllowAll()))
    assert resumed.system == session.system  # the prompt was fixed: it stays
    assert not any(
        b["type"] == "thinking" for m in resumed.messages for b in m.content
    )  # bound to requests with other tools: left out once
    await run(resumed, "second")
    assert provider.refused == []
    row = store.row(session.id)
    assert row is not None and row.agents is not None  # fixed at that turn


def test_the_system_prompt_names_no_mode_and_the_tools_do_not_depend_on_it(ws: Path) -> None:
    """Mode changes are enforced by the server: neither system nor tools change with them."""
    text = system_prompt(WorkspaceRoots.of(ws))
    assert "default mode" not in text and "acceptEdits" not in text
    provider = SigningProvider()
    _, session, _ = open_session(runtime(provider), ws)
    specs = [json.dumps(t.spec(), sort_keys=True) for t in session.tools]
    session.set_mode("plan")
    assert [json.dumps(t.spec(), sort_keys=True) for t in session.tools] == specs


# --- compaction, slices, rewinds --------------------------------------------------------------


def test_compaction_drops_the_thinking_it_invalidates_and_keeps_an_open_loops_when_asked() -> None:
    thought = {"type": "thinking", "thinking": "t", "signature": "s"}
    call = {"type": "tool_use", "id": "toolu_x", "name": "read_file", "input": {}}
    result = history.tool_result_block("toolu_x", "ok", is_error=False)
    cut = compaction.Cut(
        (Message("user", (text_block("old"),)),),
        (),
        (
            Message("user", (text_block("p"),)),
            Message("assistant", (thought, call)),
            Message("user", (result,)),
        ),
    )
    rebuilt = cut.rebuild("sum")
    assert not any(b["type"] == "thinking" for m in rebuilt for b in m.content)
    kept = cut.rebuild("sum", keep_open_loop=True)
    assert kept[-2].content[0] == thought  # budget-form models need it; they check no prefix


def test_the_fake_refuses_a_changed_prefix_and_a_forged_signature_and_ignores_breakpoints() -> None:
    body: JSON = {
        "model": "claude-sonnet-5-5",
        "system": "S",
        "tools": [],
        "messages": [{"role": "user", "content": [{"type": "text", "text": "hi"}]}],
    }
    thought = bind_thinking(body, [{"type": "thinking", "thinking": "t", "signature": "x"}])[0]
    reply = {"role": "assistant", "content": [thought, {"type": "text", "text": "a"}]}
    sent = {**body, "messages": [*body["messages"], reply, {"role": "user", "content": "more"}]}
    assert check_thinking_binding(sent) is None
    cached = json.loads(json.dumps(sent))
    cached["messages"][0]["content"][0]["cache_control"] = {"type": "ephemeral"}
    assert check_thinking_binding(cached) is None
    changed = {**sent, "system": "S2"}
    problem = check_thinking_binding(changed)
    assert problem is not None and "bound to a different conversation" in problem
    assert problem.startswith("messages.1.content.0: Invalid `signature` in `thinking` block.")
    forged = json.loads(json.dumps(sent))
    forged["messages"][1]["content"][0]["signature"] = "sig"
    assert "Invalid `signature`" in str(check_thinking_binding(forged))
    assert checks_prefix("claude-fable-5-1") and not checks_prefix("claude-sonnet-4-5")


async def test_compaction_then_more_turns_draws_no_400(ws: Path) -> None:
    provider = SigningProvider(["tools", "text", "tools", "text", "tools"])
    _, session, sink = open_session(runtime(provider), ws)
    for n in range(3):
        await run(session, f"prompt {n}")
    assert await compact(session)
    await run(session, "after")
    await run(session, "and after")
    assert provider.refused == [] and failures(sink) == []
    assert thinking_sent(provider.bodies[-1:]) > 0  # new thinking is kept again


async def test_a_rewind_keeps_a_true_prefix_and_drops_nothing(ws: Path) -> None:
    provider = SigningProvider(["tools", "text", "tools", "text"])
    rt = runtime(provider)
    _, session, _ = open_session(rt, ws)
    await run(session, "one")
    await run(session, "two")
    loaded = rt.store.load(session.id)
    assert loaded is not None
    second = next(t for t in loaded.turn_ids if t is not None and t != loaded.turn_ids[0])
    before = session.messages
    rewinding.cut_conversation(session, second)
    assert session.messages == before[: len(session.messages)]  # a true prefix
    sent_before = thinking_sent([{"messages": [m.to_api() for m in session.messages]}])
    await run(session, "two again")
    assert provider.refused == []
    assert thinking_sent(provider.bodies[-1:]) == sent_before > 0


# --- the property ----------------------------------------------------------------------------

Op = tuple[str, Any]
ops = st.lists(
    st.one_of(
        st.tuples(
            st.just("turn"),
            st.lists(st.sampled_from(["text", "tools", "redacted", "big"]), max_size=3),
        ),
        st.tuples(st.just("mode"), st.sampled_from(["default", "acceptEdits", "plan"])),
        st.tuples(st.just("model"), st.sampled_from(MODELS)),
        st.tuples(st.just("agents"), st.sampled_from(["edit", "remove", "claude", "same"])),
        st.tuples(st.just("compact"), st.none()),
        st.tuples(
            st.just("slice"),
            st.sampled_from(
                ["50%:", "summarize::50%, 50%:", "inject:'go on', 0:", "compact::50%, 50%:"]
            ),
        ),
        st.tuples(st.just("fork"), st.booleans()),
        st.tuples(st.just("rewind"), st.integers(0, 5)),
        st.tuples(st.just("resume"), st.none()),
    ),
    min_size=1,
    max_size=10,
)


async def play(plan: list[Op], ws: Path) -> None:
    provider = SigningProvider(window=400_000)
    rt = runtime(provider)
    sessions, session, sink = open_session(rt, ws)
    edits = itertools.count()
    seat = Seat(sink, AllowAll())
    for name, arg in plan:
        match name:
            case "turn":
                provider.script = list(arg)
                await run(session, f"prompt {len(provider.bodies)}")
            case "mode":
                session.set_mode(arg)
            case "model":
                session.set_model(arg)
            case "agents":
                if arg == "edit":
                    (ws / "AGENTS.md").write_text(f"Edit {next(edits)}.\n")
                elif arg == "remove":
                    (ws / "AGENTS.md").unlink(missing_ok=True)
                elif arg == "claude":
                    (ws / "CLAUDE.md").write_text(f"Claude {next(edits)}.\n")
            case "compact":
                await compact(session)
            case "slice" if rt.store.load(session.id) is not None and session.messages:
                child = await sessions.slice(session, None, arg)
                await sessions.switch(session, child)
                session = child
            case "fork" if rt.store.load(session.id) is not None and session.messages:
                loaded = rt.store.load(session.id)
                assert loaded is not None
                turns = [t for t in dict.fromkeys(loaded.turn_ids) if t is not None]
                turn = turns[len(turns) // 2] if arg and turns else None
                child = sessions.fork(session, None, turn)
                await sessions.switch(session, child)
                session = child
            case "rewind":
                loaded = rt.store.load(session.id)
                turns = [t for t in dict.fromkeys(loaded.turn_ids) if t] if loaded else []
                if turns:
                    rewinding.cut_conversation(session, turns[arg % len(turns)])
            case "resume" if rt.store.load(session.id) is not None:
                await sessions.close(session)
                sessions = Sessions(rt)  # a restarted server
                session = sessions.resume(session.id, WorkspaceRoots.of(ws), seat)
            case _:
                pass
    provider.script = ["tools"]
    await run(session, "one more")
    assert provider.refused == [], provider.refused
    assert failures(sink) == []


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(ops)
def test_any_sequence_of_operations_never_draws_a_prefix_mismatch(plan: list[Op]) -> None:
    with tempfile.TemporaryDirectory(prefix="tiller-append-only-") as root:
        asyncio.run(play(plan, populate(Path(root))))


@pytest.mark.parametrize("model", MODELS)
def test_the_models_tiller_uses_by_default_run_the_prefix_check(model: str) -> None:
    assert checks_prefix(model)
