"""Property: whatever happens in and between turns — steps, tool calls, faults, cut-offs,
refusals, interrupts, compactions — every request a real ``Session`` sends is one the API
accepts (the validating fake, with text-after-tool_result refused too), and the history it
keeps, in memory and in its (in-memory) store, has no problems."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from loop_harness import KINDS, MODEL, AllowAll, Probe, Provider, check_request
from tiller.core.config import Config
from tiller.core.session.compact import compact
from tiller.core.session.session import Session, Started
from tiller.core.session.turns import prompt as start_prompt
from tiller.core.turn.events import Posted
from tiller.model import history
from tiller.protocol import State, Thinking, Todo
from tiller.workspace.roots import WorkspaceRoots
from tiller.workspace.store import SessionStore

turns = st.lists(
    st.tuples(st.booleans(), st.lists(st.sampled_from(KINDS), max_size=6)),
    min_size=1,
    max_size=5,
)


class Quiet:
    """A face that shows nothing."""

    def event(self, posted: Posted) -> None:
        return None

    def state(self, state: State) -> None:
        return None

    def todos(self, todos: tuple[Todo, ...]) -> None:
        return None


def session_in_memory(workspace: Path) -> Session:
    config = Config(
        model=MODEL,
        thinking=Thinking(True, 2048),
        max_tokens=4096,
        tool_budget=0,
        sandbox="off",
        step_retry_delays=(0.0, 0.0),
    )
    return Session(
        config=config,
        roots=WorkspaceRoots.of(workspace),
        provider=Provider([]),
        approver=AllowAll(),
        sink=Quiet(),
        tools=[Probe()],
        store=SessionStore(Path(":memory:")),
        thinking=config.thinking,
    )


async def prompt(session: Session, text: str) -> None:
    assert isinstance(await start_prompt(session, text), Started)
    await session.wait_idle()


async def play(plan: list[tuple[bool, list[str]]], workspace: Path) -> None:
    session = session_in_memory(workspace)
    for n, (compact_first, script) in enumerate(plan):
        session.provider = Provider(list(script))  # type: ignore[arg-type]
        if compact_first:
            await compact(session)
        await prompt(session, f"prompt {n}")
        assert history.problems(session.messages) == []
        stored = session.store.load(session.id)
        assert stored is not None and stored.messages == session.messages
        assert history.problems(history.for_request(session.messages)) == []
    # The next prompt after whatever happened is a valid request too.
    provider = Provider(["text"])
    session.provider = provider
    await prompt(session, "one more")
    assert provider.requests
    for request in provider.requests:
        check_request(request)


@pytest.fixture(scope="module")
def workspace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("property")


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(turns)
def test_any_sequence_of_steps_faults_interrupts_and_compactions_keeps_requests_valid(
    workspace: Path, plan: list[tuple[bool, list[str]]]
) -> None:
    asyncio.run(play(plan, workspace))
