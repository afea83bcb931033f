"""The loop with the real Turn in process: stop reasons, faults, compaction, the ledger."""

from __future__ import annotations

from loop_harness import MODEL, SPEC, Host, Provider, run_turn
from tiller.core.turn import compaction
from tiller.core.turn.events import Notice, StepRestarted, ToolFinished
from tiller.core.turn.outcomes import Completed, Failed, Refused
from tiller.model import history
from tiller.model.history import Message, text_block
from tiller.model.usage import Usage


def notices(host: Host) -> list[str]:
    return [e.text for e in host.events if isinstance(e, Notice)]


def results(messages: tuple[Message, ...]) -> dict[str, list[dict[str, object]]]:
    found: dict[str, list[dict[str, object]]] = {}
    for m in messages:
        for b in m.content:
            if b.get("type") == "tool_result":
                found.setdefault(b["tool_use_id"], []).append(b)
    return found


async def test_threshold_compaction_runs_between_steps_and_never_answers_a_tool_use_twice() -> None:
    """Regression: compaction after the assistant's tool_use was committed invented an
    "Interrupted" result, then the real one was appended too (two results: a 400)."""
    host = Host()
    for n in range(3):
        await run_turn(host, Provider(["text"]), f"earlier question {n}")
    provider = Provider(["tools", "big", "tools", "text"])
    _, outcome = await run_turn(host, provider, "now a long task")
    assert isinstance(outcome, Completed)
    assert any(n.startswith("Compacting the conversation") for n in notices(host))
    assert all(len(r) == 1 for r in results(host.messages).values())
    assert all(
        r[0]["content"] != history.INTERRUPTED_RESULT for r in results(host.messages).values()
    )
    assert history.problems(host.messages) == []
    first = host.messages[0].content[0]["text"]
    assert first.startswith(compaction.IN_TURN_PREFIX) or first.startswith(
        compaction.SUMMARY_PREFIX
    )


async def test_one_huge_turn_is_compacted_keeping_the_prompt_and_the_last_steps() -> None:
    host = Host()
    provider = Provider(["tools", "tools", "tools", "big", "tools", "text"])
    _, outcome = await run_turn(host, provider, "the only prompt")
    assert isinstance(outcome, Completed)
    after = next(
        r for r in provider.requests if r.system != compaction.SUMMARY_SYSTEM and r.messages
        and r.messages[0].content[0]["text"].startswith(compaction.IN_TURN_PREFIX)
    )  # fmt: skip
    first = after.messages[0].content
    assert first[-1] == text_block("the only prompt")
    assert after.messages[1].role == "assistant"
    assert len(after.messages) <= 2 * compaction.KEEP_STEPS + 1


async def test_compaction_triggers_on_total_input_including_cache_reads() -> None:
    host = Host()
    await run_turn(host, Provider(["text"]), "before")
    provider = Provider(["big", "text"])  # 90% of the window, nearly all of it cache reads
    await run_turn(host, provider, "go")
    assert host.rewrites == 1


async def test_refused_turn_is_dropped_from_what_is_sent_next() -> None:
    host = Host()
    await run_turn(host, Provider(["text"]), "first")
    before = host.messages
    _, outcome = await run_turn(host, Provider(["tools", "refusal"]), "something bad")
    assert outcome == Refused("cyber", "no")
    assert host.messages == before
    provider = Provider(["text"])
    await run_turn(host, provider, "something else")
    sent = provider.requests[0].messages
    assert "something bad" not in str(sent) and sent[-1].content == (text_block("something else"),)


async def test_failed_prompt_is_not_kept_so_the_next_prompt_is_its_own_message() -> None:
    host = Host()
    await run_turn(host, Provider(["text"]), "first")
    before = host.messages
    _, outcome = await run_turn(host, Provider(["fatal_silent"]), "huge prompt")
    assert isinstance(outcome, Failed) and outcome.kind == "invalid_request"
    assert host.messages == before
    provider = Provider(["text"])
    await run_turn(host, provider, "short prompt")
    assert provider.requests[0].messages[-1] == Message("user", (text_block("short prompt"),))


async def test_prompt_too_long_with_nothing_to_compact_fails_and_is_not_kept() -> None:
    host = Host()
    _, outcome = await run_turn(host, Provider(["too_long"]), "x" * 1000)
    assert isinstance(outcome, Failed) and outcome.kind == "context_too_long"
    assert "not kept" in outcome.message
    assert host.messages == ()


async def test_cut_off_tool_call_is_retried_with_max_output_then_fails_without_running() -> None:
    host = Host()
    provider = Provider(["cut_tool", "cut_tool"])
    _, outcome = await run_turn(host, provider, "write a big file")
    assert isinstance(outcome, Failed) and outcome.kind == "output_limit"
    assert [r.max_tokens for r in provider.requests] == [4096, SPEC.max_output]
    assert [e.reason for e in host.events if isinstance(e, StepRestarted)] == ["output_limit"]
    finished = [e for e in host.events if isinstance(e, ToolFinished)]
    assert [e.status for e in finished] == ["error"] and "output limit" in finished[0].output
    assert history.problems(host.messages) == []


async def test_cut_off_text_continues_once_then_ends_with_a_truncated_notice() -> None:
    host = Host()
    provider = Provider(["cut_text", "cut_text"])
    _, outcome = await run_turn(host, provider, "tell me everything")
    assert isinstance(outcome, Completed)
    assert "Continue exactly where you stopped" in str(provider.requests[1].messages[-1])
    assert any("truncated" in n for n in notices(host))


async def test_pause_turn_sends_the_content_back_and_continues() -> None:
    host = Host()
    provider = Provider(["pause", "text"])
    _, outcome = await run_turn(host, provider, "search")
    assert outcome == Completed("answer")
    assert provider.requests[1].messages[-1].content[-1] == text_block("searching")


async def test_unknown_stop_reason_completes_with_a_notice_naming_it() -> None:
    host = Host()
    _, outcome = await run_turn(host, Provider(["unknown"]), "hi")
    assert outcome == Completed("hm")
    assert any("brand_new_reason" in n for n in notices(host))


async def test_mid_stream_overload_restarts_the_step() -> None:
    host = Host()
    provider = Provider(["overloaded", "text"])
    _, outcome = await run_turn(host, provider, "hi")
    assert outcome == Completed("answer")
    assert [e.reason for e in host.events if isinstance(e, StepRestarted)] == ["overloaded"]
    assert host.messages[-1] == Message("assistant", (text_block("answer"),))


async def test_oversized_tool_input_is_answered_with_the_error_and_not_kept() -> None:
    host = Host()
    provider = Provider(["bad_input", "text"])
    await run_turn(host, provider, "hi")
    assistant = provider.requests[1].messages[1]
    first = next(b for b in assistant.content if b.get("type") == "tool_use")
    assert first["input"] == {}
    answer = results(host.messages)[first["id"]][0]
    assert answer["is_error"] is True and answer["content"] == "input too large"


async def test_turn_usage_adds_up_every_call_and_the_context_is_reported_per_step() -> None:
    host = Host()
    turn, _ = await run_turn(host, Provider(["tools", "text"]), "hi")
    step = Usage(100, 10, 50, 5)
    assert (turn.usage.input_tokens, turn.usage.output_tokens) == (200, 20)
    assert (turn.usage.cache_read_tokens, turn.usage.cache_write_tokens) == (100, 10)
    assert turn.usage.cost_usd is not None and turn.usage.cost_usd > 0
    contexts = [c for _, c in host.usage]
    assert all(c is not None and c.used_tokens == step.total_input + step.output_tokens
               and c.window_tokens == SPEC.context_window for c in contexts)  # fmt: skip


async def test_compact_command_keeps_the_last_turns_verbatim() -> None:
    host = Host()
    for n in range(4):
        await run_turn(host, Provider(["tools", "text"]), f"question {n}")
    done = await compaction.compact(Provider([]), MODEL, host.messages)
    assert done is not None
    assert "question 1" not in str(done.messages) and "question 2" in str(done.messages)
    assert history.problems(done.messages) == []
