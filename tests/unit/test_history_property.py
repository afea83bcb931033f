"""Property: whatever happens in and between turns — steps, tool calls, faults, cut-offs,
refusals, interrupts, compactions — every request the loop sends is one the API accepts
(the validating fake, with text-after-tool_result refused too) and the stored history has
no problems."""

from __future__ import annotations

import asyncio

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from loop_harness import KINDS, MODEL, Host, Provider, check_request, run_turn
from tiller import compaction, history
from tiller.outcomes import Failed

turns = st.lists(
    st.tuples(st.booleans(), st.lists(st.sampled_from(KINDS), max_size=6)),
    min_size=1,
    max_size=5,
)


async def play(plan: list[tuple[bool, list[str]]]) -> None:
    host = Host()
    for n, (compact_first, script) in enumerate(plan):
        provider = Provider(list(script))  # type: ignore[arg-type]
        if compact_first:
            done = await compaction.compact(provider, MODEL, host.messages)
            if done is not None:
                host.rewrite_history(done.messages)
        _, outcome = await run_turn(host, provider, f"prompt {n}", turn_id=f"turn_{n}")
        assert not (isinstance(outcome, Failed) and outcome.kind == "internal"), outcome
        assert history.problems(host.messages) == []
        sent = history.for_request(host.messages)
        assert history.problems(sent) == []
    # The next prompt after whatever happened is a valid request too.
    provider = Provider(["text"])
    await run_turn(host, provider, "one more")
    assert provider.requests
    for request in provider.requests:
        check_request(request)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(turns)
def test_any_sequence_of_steps_faults_interrupts_and_compactions_keeps_requests_valid(
    plan: list[tuple[bool, list[str]]],
) -> None:
    asyncio.run(play(plan))
