"""Over ACP as through the Tiller protocol: a prompt sent after a turn cancelled between its
tool results and the model's answer (the step waiting to retry a 529) reaches the model as
the user's own text after the results, not inside them (issue 36, "check ACP too")."""

from __future__ import annotations

import asyncio
from typing import Any

from fakeapi import FakeMessagesAPI
from processes import until
from test_acp import Editor, allow_once, assert_valid_history
from test_acp import start as start  # the fixture
from test_prompt_after_unanswered_results import answers, sent_to_model
from test_turn_basics import text, tool_use

OVERLOADED = {"error": {"status": 529, "type": "overloaded_error", "retryAfter": "5"}}


async def test_a_prompt_after_a_cancelled_retry_wait_is_the_users_text_after_the_results(
    start: Any, api: FakeMessagesAPI
) -> None:
    api.enqueue(
        {"content": [text("Looking."), tool_use("list_files", "t1")]},
        *[answers(OVERLOADED)] * 12,
    )
    editor = Editor(choose=allow_once)
    async with start(editor) as agent:
        session_id = await agent.new()
        prompt = asyncio.create_task(agent.say(session_id, "old task"))
        await until(lambda: any(r.status == 529 for r in api.requests), 30)
        await agent.conn.cancel(session_id=session_id)
        assert await asyncio.wait_for(prompt, 10) == "cancelled"
        sent_before = sent_to_model(api)[-1]
        assert await agent.say(session_id, "NEW QUESTION") == "end_turn"

    assert_valid_history(api)
    first = next(m for m in sent_to_model(api) if "NEW QUESTION" in str(m))
    assert len(first) == len(sent_before) and first[:-1] == sent_before[:-1]
    [result, *after] = first[-1]["content"]
    assert [result] == sent_before[-1]["content"]
    assert after and after[-1] == {"type": "text", "text": "NEW QUESTION"}
