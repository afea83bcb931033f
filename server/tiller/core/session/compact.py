"""``/compact``: older turns summarized by the model on the user's word (the PreCompact hooks
told first); the session's history is rewritten with the summary, its cost recorded."""

from __future__ import annotations

from tiller.core.session.session import Session
from tiller.core.turn import compaction
from tiller.core.turn.events import Notice
from tiller.core.turn.hook_acts import hook_acts
from tiller.model import models
from tiller.model.provider import ProviderError


async def compact(session: Session) -> bool:
    """Summarize older turns with the model; True when the history got shorter."""
    fields = {"trigger": "manual", "custom_instructions": ""}
    verdict = await session.hooks().run("PreCompact", session.mode, fields)
    for act in hook_acts("PreCompact", verdict):
        session.emit(act)
    try:
        done = await compaction.compact(
            session.provider,
            session.model,
            session.messages,
            window=session.provider.spec(session.model).context_window,
        )
    except ProviderError as err:
        session.emit(Notice(f"Compaction failed ({err.kind}): {err.message}"))
        return False
    if done is None:
        session.emit(Notice("Nothing older to compact yet."))
        return False
    before = len(session.messages)
    session.record_usage(models.price(done.usage, session.provider.spec(session.model)), None)
    session.rewrite_history(done.messages)
    session.emit(Notice(f"Compacted {before} messages into {len(done.messages)}."))
    return True
