"""The seam where a session's turn is set up: what is fixed at the first turn (system prompt,
agent kinds, web_fetch), the turn's ``TurnSetup``, the checkpoint before it, and the user
message (with whatever changed since the model was last told: instruction file, skills,
workspace folders). ``turns.start`` runs the turn this builds."""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import replace

from tiller.core.permissions.modes import McpRules
from tiller.core.permissions.rule_files import book_of
from tiller.core.permissions.web_fetch_rules import RULES_CHANGED, FoldedWebFetch, fold
from tiller.core.session.session import Session, new_id
from tiller.core.turn import attachments
from tiller.core.turn.approvals import PostingApprover
from tiller.core.turn.attachments import Attachment
from tiller.core.turn.checkpoints import snapshot_before
from tiller.core.turn.events import TurnStarted
from tiller.core.turn.loop import Turn, TurnSetup
from tiller.core.turn.roots_prompt import roots_update
from tiller.core.turn.setup import TurnOptions
from tiller.core.turn.system_prompt import instructions_update, system_prompt
from tiller.extend.agents import load_agents
from tiller.extend.instructions import cut_notices
from tiller.extend.skills import skills_update
from tiller.jsontypes import JSON
from tiller.model import history
from tiller.tools.registry import Toolset
from tiller.workspace.edit_history import EditHistory
from tiller.workspace.store import SessionRow


def start_turn(
    session: Session, text: str, options: TurnOptions, attached: tuple[Attachment, ...]
) -> Turn:
    """The turn for ``text``, its setup fixed and the session stored with it (not running)."""
    turn_id = new_id("turn")
    if not session.system:
        session.system = system_prompt(session.roots)
        for cut in cut_notices(session.system):
            session.say(cut)
    fix_agents(session)
    web_fetch = fix_web_fetch(session)
    setup = TurnSetup(
        turn_id=turn_id,
        model=options.model or session.model,
        thinking=session.thinking,
        max_tokens=session.config.max_tokens,
        system=session.system,
        tools=Toolset(session.tools, session.mcp, lambda: session.messages),
        context=session.tool_context(),
        provider=session.provider,
        approver=PostingApprover(session.approver, session, turn_id),
        tool_budget=session.config.tool_budget,
        retry_delays=session.config.step_retry_delays,
        session_id=session.id,
        stop_hook=session.config.stop_hook if session.agent is None else None,  # the user's
        hooks=session.hooks(),
        session_start=(
            None
            if session.last_turn is not None or session.agent is not None
            else "resume"
            if session.messages
            else "startup"
        ),
        user_prompt=session.agent is None,  # a subagent's task is no prompt for the hooks
        server_tools=web_fetch.applied_to(session.config.server_tools),
        web_fetch_by=web_fetch.describe(),
        mcp_rules=McpRules(session.config.mcp.allow, session.config.mcp.read_only),
        options=options,
        context_before=(
            None if session.ledger.context is None else session.ledger.context.used_tokens
        ),
        diagnostics=session.diagnostics,
        edits=EditHistory(session.store.db),
    )
    snapshot = snapshot_before(session.checkpoints, session.id, turn_id, text, session.say)
    turn = Turn(session, replace(setup, snapshot=snapshot))
    _store_turn(session, options.typed or text)  # a custom command's title: what was typed
    return turn


def _store_turn(session: Session, text: str) -> None:
    """The session stored with what its turns are fixed on (system prompt, roots, agents,
    web_fetch) before its turn runs."""
    now = time.time()
    session.store.create(
        SessionRow(
            session.id, str(session.workspace), text.strip()[:80], None, now, now,
            session.model, session.mode, session.thinking, session.todos, 0,
        )
    )  # fmt: skip
    session.store.set_system(session.id, session.system)
    session.store.set_roots(session.id, session.roots)
    if session.agents is not None:
        session.store.set_agents(session.id, session.agents.to_json())
    if session.web_fetch is not None:
        session.store.set_web_fetch(session.id, session.web_fetch.to_json())


def announce_turn(
    session: Session, turn: Turn, text: str, attached: tuple[Attachment, ...]
) -> None:
    """``turnStarted``, then the user message: the prompt with what changed since the model
    was last told before it (instruction file, skills, workspace folders)."""
    update = instructions_update(session.system, session.messages, session.workspace)
    skills = skills_update(session.system, session.messages, session.workspace)
    folders = roots_update(session.system, session.messages, session.roots)
    session.emit(TurnStarted(text, tuple(attachments.summary(a) for a in attached)))
    blocks, notice = prompt_blocks(text, update, attached)
    if notice is not None:
        session.say(notice)
    if skills is not None:
        blocks.insert(0, history.text_block(skills))
        session.say("The skills changed: the model is told so with this prompt.")
    if folders is not None:
        blocks.insert(0, history.text_block(folders))
        session.say("The workspace folders changed: the model is told so with this prompt.")
    session.append("user", history.after_unanswered(session.messages, blocks))
    session.publish()


UNTRUSTED_AGENTS = (
    "The repository's agents {names} only read here: the folder is not trusted, so their tool "
    "lists grant nothing (/trust yes gives them from the next session)"
)


def fix_agents(session: Session) -> None:
    """Fix the agent kinds the task tool offers at the first turn (a file broken then is
    named); a file added later is for the next session (append-only)."""
    if session.agents is None and session.agent is None:
        agents = load_agents(session.workspace)
        if not session.trust.trusted:
            agents, narrowed = agents.untrusted()
            if narrowed:
                session.say(UNTRUSTED_AGENTS.format(names=", ".join(narrowed)))
        session.agents = agents
        for problem in session.agents.problems:
            session.say(f"Agent file skipped: {problem}")


def fix_web_fetch(session: Session) -> FoldedWebFetch:
    """The ``webFetch`` setting narrowed by the WebFetch rules (and web_search left out by a
    WebSearch deny or ask rule), fixed at the first turn: a later rules change is told once
    and counts from the next session (the API runs fetches and searches itself, so only the
    tools list can carry the rules, and it stays put)."""
    tools = session.config.server_tools
    if not tools.web_fetch.enabled and not tools.web_search.enabled:
        return FoldedWebFetch(tools.web_fetch)
    now = fold(tools.web_fetch, book_of(session.settings()))
    if session.web_fetch is None:
        session.web_fetch = now
    elif now.shape() != session.web_fetch.shape():
        session.say_once(RULES_CHANGED, key=f"{RULES_CHANGED} ({now.shape()})")  # per change
    return session.web_fetch


def prompt_blocks(
    text: str, update: tuple[str, str] | None, attached: Sequence[Attachment] = ()
) -> tuple[list[JSON], str | None]:
    """A turn's user message, and what the user is told. Append-only: the system prompt stays
    as it was, so an edited AGENTS.md / CLAUDE.md (``update``: its name and what the model is
    told) goes in this message, before the user's words; so do the mentions and images
    (``attached``); the prompt is the last block, where the loop finds it."""
    prompt = [*(attachments.to_block(a) for a in attached), history.text_block(text)]
    if update is None:
        return prompt, None
    name, told = update
    what = "was removed" if told.startswith(f"{name} was removed") else "changed"
    return [
        history.text_block(told),
        *prompt,
    ], f"{name} {what}: the model is told so with this prompt."
